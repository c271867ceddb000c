"""Figures for the theory pages (psd, properties, axioms), and the axioms page's estimator table.

As in :mod:`shapley.companion.plots`: each figure takes tidy data that the page computes with the package and
returns a matplotlib Figure; a label read from data is drawn literally (:func:`plots.plain`). Titles and legend
labels a page writes itself (mathtext included) are drawn as written. Values are in nats.

As there too, a figure comes back closed in pyplot (:func:`plots.closed`): a page shows it with ``display(fig)``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from shapley.companion.claim_model import CONTRADICTED, DEPENDS, REPRODUCED
from shapley.companion.htmltable import esc, titled
from shapley.companion.plots import closed, pyplot
from shapley.core.entropy import HALF_LOG_2PIE
from shapley.core.psd import gershgorin_beta_bound, paper_beta_bound
from shapley.theory import axioms, worstcase

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from shapley.theory.properties import StepCheck

# ---------------------------------------------------------------------------------------------------
# notebooks/psd.md
# ---------------------------------------------------------------------------------------------------


def beta_threshold_figure(ns: Sequence[int], *, default_beta: float = 0.5) -> Figure:
    """Log-scale largest safe beta against the numbers of answers ``ns``: the exact beta*(n)
    (:func:`shapley.theory.worstcase.beta_star`) and the Gershgorin and paper bounds, with the default beta as a grey
    line."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ns = list(ns)
    ax.plot(ns, [worstcase.beta_star(n) for n in ns], "o-", ms=3, label=r"exact $\beta^*(n)$")
    ax.plot(ns, [gershgorin_beta_bound(n) for n in ns], "s--", ms=3, label=r"Gershgorin $1/(n-1)$")
    ax.plot(ns, [paper_beta_bound(n) for n in ns], "^:", ms=3, label=r"paper $1/(n+1)$")
    ax.axhline(default_beta, color="grey", lw=1)
    # x at 71.5% of the axis (n = 30 for n = 2..40), y just above the line
    ax.text(0.715, default_beta * 1.04, rf"default $\beta = {default_beta:g}$", color="grey",
            transform=ax.get_yaxis_transform())  # fmt: skip
    ax.set_yscale("log")
    ax.set_xlabel("number of answers n")
    ax.set_ylabel(r"largest safe $\beta$")
    ax.legend()
    ax.set_title(r"Worst-case PSD threshold of the kernel matrix")
    return closed(fig)


# ---------------------------------------------------------------------------------------------------
# notebooks/properties.md
# ---------------------------------------------------------------------------------------------------


def _step_panel(ax: Axes, step: StepCheck, title: str) -> None:
    """Before/after bars of one replacement's per-answer values, the wrong-way answers marked."""
    k = np.arange(step.phi_old.size)
    ax.bar(k - 0.2, step.phi_old, 0.4, label="before")
    ax.bar(k + 0.2, step.phi_new, 0.4, label="after")
    for w in step.wrong_way:
        ax.annotate("wrong way", (w, max(step.phi_old[w], step.phi_new[w])), ha="center", va="bottom", color="C3")
    ax.axhline(HALF_LOG_2PIE, color="grey", lw=0.8, ls=":")
    ax.set_xticks(k, [f"s{i} (then g)" if i == step.replaced else f"s{i}" for i in k])
    ax.set_ylabel("Shapley value (nats)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)


def appendix_steps_figure(
    property1: StepCheck, property3: StepCheck, *, property3_ylim: tuple[float, float] = (1.1, 1.45)
) -> Figure:
    """Step (b) of Appendix A's proofs of Properties 1 and 3, side by side: every answer's Shapley value (nats)
    before and after the replacement, the answers that move the way the proof forbids marked "wrong way", and
    1/2 ln(2 pi e) dotted.

    Args:
        property1, property3: the checks (:class:`shapley.theory.properties.StepCheck`: phi_old and phi_new
            (n,), replaced, wrong_way).
        property3_ylim: the right panel's y range (a zoom on the values near 1/2 ln(2 pi e)); the left panel
            reaches down to 1.3 times the lowest new value (at least to -2.5).
    """
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), layout="constrained")
    _step_panel(axes[0], property1, "Property 1 step (claim: no phi_k rises)")
    _step_panel(axes[1], property3, "Property 3 step (claim: no phi_k falls)")
    axes[0].set_ylim(min(-2.5, 1.3 * float(property1.phi_new.min())), 1.8)
    axes[1].set_ylim(*property3_ylim)
    return closed(fig)


# ---------------------------------------------------------------------------------------------------
# notebooks/axioms.md
# ---------------------------------------------------------------------------------------------------


def _anchor(estimator: str, prop: str, reading: str) -> str:
    """The HTML anchor of a cell's counterexample, e.g. ``cex-shap-3-rv`` (escaped)."""
    return esc(f"cex-{estimator.lower()}-{prop}-{reading}")


READER_VERDICTS: dict[str, str] = {axioms.FAILS: CONTRADICTED, axioms.UNDEFINED: DEPENDS}
"""The book's verdict on "the estimator has this property in this reading" for each verdict of the axioms
table: a counterexample contradicts it; Shapley values undefined on every input of the premise (Shap's Property 1
with an exact copy, n >= 3) make it depend on reading, since the joint entropy, their total wherever they exist,
satisfies it (as on the claims page, prop-3.6). A proof gives :data:`PROVED` and a random search without a
counterexample :data:`UNSETTLED`: neither is a verdict."""

PROVED = "proved"
"""A cell the axioms table proves (Deg's): a label, not one of the five verdicts, which judge the paper's claims,
and the paper makes no claim about that estimator. A proof for the paper's estimator is passed to
:func:`axiom_grid_frame` as ``proofs`` and reads *reproduced*."""

UNSETTLED = "no verdict"
"""A cell of the axioms table whose random search found no counterexample: the absence of a verdict, since a
search that finds nothing neither proves the property nor needs anything this environment lacks."""

_UNDEFINED_WHY = "Shapley values undefined (n ≥ 3); the joint entropy satisfies it"


def cell_word(verdict: str, proof: str | None = None, reading: str | None = None) -> str | None:
    """The word :func:`axiom_grid_frame` shows for a cell: None where the estimator cannot take the input;
    *reproduced* where ``proof`` is given and the table holds no failure; :data:`DEPENDS` where ``reading`` (why
    the verdict depends on reading) is given; else a verdict (:data:`READER_VERDICTS`), :data:`PROVED` or
    :data:`UNSETTLED`.

    Examples:
        >>> cell_word("fails"), cell_word("proved"), cell_word("no counterexample in 2000 examples")
        ('contradicted', 'proved', 'no verdict')
        >>> cell_word("no counterexample in 9 examples", proof="p"), cell_word("fails", reading="why")
        ('reproduced', 'depends on reading')
    """
    if verdict == axioms.NOT_APPLICABLE:
        return None
    if proof is not None and verdict not in (axioms.FAILS, axioms.UNDEFINED):
        return REPRODUCED
    if reading is not None:
        return DEPENDS
    return PROVED if verdict == axioms.PROVED else READER_VERDICTS.get(verdict, UNSETTLED)


def _grid_cell(verdict: str, examples: int, anchor: str, proof: str | None = None, reading: str | None = None) -> str:
    """One cell of :func:`axiom_grid_frame`: the book's word (:func:`cell_word`), then its evidence in small type
    ("—" where the estimator cannot take the input). ``proof``: where a proof of the property for this cell is
    given (used only where the search found no counterexample); ``reading``: why the verdict depends on reading."""
    word = cell_word(verdict, proof, reading)
    if word is None:
        return "—"
    if word == REPRODUCED:
        return f"reproduced<br><small>{esc(proof)}</small>"
    if verdict == axioms.FAILS:
        how = "hand-built witness" if examples == 0 else f"counterexample, draw {examples}"
        why = f"; {reading}" if reading is not None else ""
        return f'<a href="#{anchor}">{word}</a><br><small>{esc(how + why)}</small>'
    how = {axioms.PROVED: "proof; no paper claim", axioms.UNDEFINED: _UNDEFINED_WHY}.get(
        verdict, verdict.replace(" examples", " draws")
    )
    if reading is not None and verdict != axioms.UNDEFINED:
        how = f"{how}; {reading}"
    return f"{word}<br><small>{esc(how)}</small>"


def axiom_grid_frame(
    table: pd.DataFrame,
    proofs: Mapping[tuple[str, str, str], str] | None = None,
    readings: Mapping[tuple[str, str, str], str] | None = None,
) -> pd.DataFrame:
    """Estimator (rows, in table order) x (reading, property) grid of the book's words (:func:`cell_word`)
    with their evidence, for readers; each counterexample links to its :func:`counterexample_html`.
    ``table``: columns estimator, property, reading, verdict, examples, every cell of every reading.
    ``proofs``: (estimator, property, reading) -> where a proof made outside the table is given; such a cell
    reads *reproduced* unless the table holds a counterexample for it. ``readings``: (estimator, property,
    reading) -> why that cell's verdict depends on reading; it reads *depends on reading*, with its evidence."""
    proofs = dict(proofs or {})
    readings = dict(readings or {})
    names = {"sentence": "Sentences", "rv": "Random variables"}
    labels = [
        _grid_cell(v, int(k), _anchor(e, p, r), proofs.get((e, p, r)), readings.get((e, p, r)))
        for e, p, r, v, k in zip(
            table["estimator"], table["property"], table["reading"], table["verdict"], table["examples"], strict=True
        )
    ]
    grid = table.assign(label=labels).pivot(index="estimator", columns=["reading", "property"], values="label")
    grid = grid.reindex(list(dict.fromkeys(table["estimator"])))
    grid = grid[[(r, p) for r in axioms.READINGS for p in axioms.PROPERTIES]]
    grid.columns = pd.MultiIndex.from_tuples([(names[str(c[0])], f"Property {c[1]}") for c in grid.columns.to_list()])
    grid = grid.reset_index(names=[("Reading", "Estimator")])
    return titled(grid, "", html=list(grid.columns[1:]))


def counterexample_html(row: Any) -> str:
    """One failing cell (a row of the table: estimator, property, reading, examples, and counterexample, the JSON
    of :func:`shapley.theory.axioms.describe`) as an HTML block anchored for :func:`axiom_grid_frame`: the input,
    the replacement that breaks the property and the totals before and after."""
    ce = json.loads(row.counterexample)
    how = f"hand-built witness, {ce['witness']}" if row.examples == 0 else f"found after {row.examples} examples"
    name = "C" if "C" in ce else "R"
    M = np.asarray(ce[name], dtype=np.float64)
    lines = [f"{name} ({M.shape[0]} x {M.shape[0]}) ="]
    lines += ["  " + " ".join(f"{x:7.4g}" for x in r) for r in M]
    if "p" in ce:
        lines.append("likelihoods p = " + ", ".join(f"{q:g}" for q in ce["p"]))
    if "argmin" in ce:
        lines.append(f"answer with the smallest Shapley value: m = {ce['argmin']}")
    if "g" in ce:
        lines.append(f"g is answer {ce['g']}; premise holds (smallest margin {ce['premise_margin']:g})")
    lines.append(f"replaced answer {ce['replaced']}: required {ce['required']}")
    lines.append(f"old = {ce['old']}, new = {ce['new']}, change = {ce['change']}")
    title = esc(f"{row.estimator}, Property {row.property}, {row.reading} reading ({how})")
    body = esc("\n".join(lines))
    return f'<div id="{_anchor(row.estimator, row.property, row.reading)}"><p><b>{title}</b></p><pre>{body}</pre></div>'
