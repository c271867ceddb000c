"""The theory pages' figures draw what they are given: panels, titles, axis labels, legends and cell texts, with
labels read from data drawn literally (dollar signs escaped, so never parsed as mathtext); the axioms page's HTML
links each failing cell to its counterexample and keeps the table's strings as text."""

from __future__ import annotations

import json
from io import StringIO

import matplotlib
import numpy as np
import pandas as pd
import pytest

from shapley.companion import theory_plots
from shapley.companion.claim_model import VERDICT_KINDS
from shapley.companion.htmltable import show
from shapley.core.entropy import HALF_LOG_2PIE
from shapley.theory import axioms as ax
from shapley.theory import worstcase as wc
from shapley.theory.properties import StepCheck

matplotlib.use("Agg")


def _drawn(fig):
    """``fig`` drawn (mathtext parsed: an unbalanced or unknown one raises), after checking that pyplot no longer
    holds it (a notebook would redraw an open figure at the cell's end, and show it a second time)."""
    import matplotlib.pyplot as plt

    assert fig.number not in plt.get_fignums()
    return fig


def _legend(axis) -> list[str]:
    return [t.get_text() for t in axis.get_legend().get_texts()]


def _ticks(labels) -> list[str]:
    return [t.get_text() for t in labels]


def test_beta_threshold_figure():
    ns = np.arange(2, 6)
    fig = _drawn(theory_plots.beta_threshold_figure(range(2, 6), default_beta=0.4))
    (axis,) = fig.axes
    assert _legend(axis) == [r"exact $\beta^*(n)$", r"Gershgorin $1/(n-1)$", r"paper $1/(n+1)$"]
    assert axis.get_yscale() == "log" and axis.get_title() == "Worst-case PSD threshold of the kernel matrix"
    assert (axis.get_xlabel(), axis.get_ylabel()) == ("number of answers n", r"largest safe $\beta$")
    lines = {ln.get_label(): ln for ln in axis.get_lines()}
    assert list(lines[r"paper $1/(n+1)$"].get_ydata()) == pytest.approx(1 / (ns + 1))
    assert list(lines[r"Gershgorin $1/(n-1)$"].get_ydata()) == pytest.approx(1 / (ns - 1))
    assert list(lines[r"exact $\beta^*(n)$"].get_ydata()) == [wc.beta_star(n) for n in ns]
    assert [tuple(ln.get_ydata()) for ln in axis.get_lines() if ln.get_label().startswith("_")] == [(0.4, 0.4)]
    assert _ticks(axis.texts) == [r"default $\beta = 0.4$"]


def _step(old: list[float], new: list[float], replaced: int, wrong_way: tuple[int, ...]) -> StepCheck:
    return StepCheck(np.array(old), np.array(new), replaced, wrong_way, "down")


def test_appendix_steps_figure():
    s1 = _step([1.4, 1.3, 1.2], [-0.5, 1.35, -3.0], replaced=2, wrong_way=(1,))
    s3 = _step([1.3, 1.4, 1.35], [1.25, 1.42, 1.38], replaced=1, wrong_way=(0,))
    fig = _drawn(theory_plots.appendix_steps_figure(s1, s3, property3_ylim=(1.0, 1.5)))
    left, right = fig.axes
    assert left.get_title() == "Property 1 step (claim: no phi_k rises)"
    assert right.get_title() == "Property 3 step (claim: no phi_k falls)"
    assert _ticks(left.get_xticklabels()) == ["s0", "s1", "s2 (then g)"]
    assert _ticks(right.get_xticklabels()) == ["s0", "s1 (then g)", "s2"]
    assert [a.get_text() for a in left.texts] == ["wrong way"] and left.texts[0].xy == (1, 1.35)
    assert all(_legend(a) == ["before", "after"] and a.get_ylabel() == "Shapley value (nats)" for a in fig.axes)
    assert left.get_ylim() == pytest.approx((1.3 * -3.0, 1.8)) and right.get_ylim() == pytest.approx((1.0, 1.5))
    assert left.get_lines()[0].get_ydata()[0] == pytest.approx(HALF_LOG_2PIE)


def _axiom_table() -> pd.DataFrame:
    verdicts = {
        ("$Shap", "1"): (ax.FAILS, 0),
        ("$Shap", "2"): (ax.PROVED, 100),
        ("$Shap", "3"): (ax.FAILS, 10),
        ("SE", "1"): (ax.UNDEFINED, 0),
        ("SE", "2"): ("no counterexample in 100 examples", 100),
        ("SE", "3"): (ax.NOT_APPLICABLE, 0),
    }
    rows = [
        {"estimator": e, "property": p, "reading": r, "verdict": v, "examples": k}
        for r in ax.READINGS
        for (e, p), (v, k) in verdicts.items()
    ]
    return pd.DataFrame(rows)


def test_axiom_grid_verdicts_evidence_and_links():
    table = _axiom_table().assign(estimator=lambda t: t["estimator"].replace("$Shap", "<b>Shap"))
    html = show(theory_plots.axiom_grid_frame(table))
    grid = pd.read_html(StringIO(html), keep_default_na=False)[0]
    assert [c[1] for c in grid.columns[1:]] == ["Property 1", "Property 2", "Property 3"] * 2
    assert [c[0] for c in grid.columns[1:]] == ["Sentences"] * 3 + ["Random variables"] * 3
    assert grid.iloc[:, 0].tolist() == ["<b>Shap", "SE"]  # in the table's order, kept as text
    assert grid.iloc[0, 1:4].tolist() == [
        "contradicted hand-built witness",
        "proved proof; no paper claim",  # a proof in the table is a label, not a verdict on a paper claim
        "contradicted counterexample, draw 10",
    ]
    assert grid.iloc[1, 1:4].tolist() == [
        "depends on reading Shapley values undefined (n ≥ 3); the joint entropy satisfies it",
        "no verdict no counterexample in 100 draws",
        "—",
    ]
    assert '<a href="#cex-&lt;b&gt;shap-1-rv">contradicted</a>' in html and "<b>" not in html
    proved = show(theory_plots.axiom_grid_frame(table, {("SE", "2", "rv"): "proof: elsewhere", ("SE", "1", "rv"): "x"}))
    row = pd.read_html(StringIO(proved), keep_default_na=False)[0].iloc[1, 4:].tolist()
    # a proof never hides a failure
    assert row[:2] == [
        "depends on reading Shapley values undefined (n ≥ 3); the joint entropy satisfies it",
        "reproduced proof: elsewhere",
    ]
    why = {("<b>Shap", "1", "sentence"): "kernel", ("SE", "2", "sentence"): "kernel", ("SE", "3", "rv"): "x"}
    read = pd.read_html(StringIO(show(theory_plots.axiom_grid_frame(table, readings=why))), keep_default_na=False)[0]
    assert read.iloc[0, 1] == "depends on reading hand-built witness; kernel"
    assert read.iloc[1, 2] == "depends on reading no counterexample in 100 draws; kernel"
    assert read.iloc[1, 6] == "—"  # the estimator cannot take the input: no verdict to qualify
    assert '<a href="#cex-&lt;b&gt;shap-1-sentence">depends on reading</a>' in show(
        theory_plots.axiom_grid_frame(table, readings=why)
    )
    assert theory_plots.cell_word(ax.NOT_APPLICABLE, reading="x") is None
    assert set(theory_plots.READER_VERDICTS.values()) | {theory_plots.DEPENDS} <= set(VERDICT_KINDS)
    # a search that finds nothing gives no verdict, and a proof without a paper claim is no verdict either
    assert {theory_plots.UNSETTLED, theory_plots.PROVED}.isdisjoint(VERDICT_KINDS)


def test_counterexample_html_block():
    ce = {"C": [[1.0, 0.5], [0.5, 1.0]], "p": [0.2, 0.8], "argmin": 0, "replaced": 1, "required": "new < old"}
    ce |= {"old": 1.5, "new": 1.75, "change": 0.25}
    cell = {"estimator": "SE", "property": "1", "reading": "sentence", "examples": 7, "counterexample": json.dumps(ce)}
    block = theory_plots.counterexample_html(next(pd.DataFrame([cell]).itertuples()))
    assert block.startswith(
        '<div id="cex-se-1-sentence"><p><b>SE, Property 1, sentence reading (found after 7 examples)'
    )
    assert "C (2 x 2) =\n        1     0.5\n      0.5       1\nlikelihoods p = 0.2, 0.8\n" in block
    assert "answer with the smallest Shapley value: m = 0\nreplaced answer 1: required new &lt; old\n" in block
    assert block.endswith("old = 1.5, new = 1.75, change = 0.25</pre></div>")
