"""Paired comparisons and answer selection: each run's ``comparisons.csv`` and ``selection.csv``, counted and
shown for readers.

Significance is DeLong's paired test for correlated AUROCs, Holm-adjusted within each run (the deterministic
test: it cannot depend on a bootstrap seed). The run decides each comparison's outcome once
(:func:`shapley.pipeline.evaluate.comparisons.compare_methods`: ``delong_p_holm`` and ``outcome``) and the book
reads it as written. The bootstrap gives the intervals only.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from shapley.companion.htmltable import Html, code, esc, titled, with_interval
from shapley.companion.provenance import relative_path
from shapley.pipeline.evaluate.comparisons import OUTCOMES

COMPARISON_COLUMNS = ("method", "reference", "delta_auroc", "lo", "hi", "delong_p_holm", "outcome")
"""Columns the book needs in every ``comparisons.csv`` (other columns are kept as read): ``delong_p_holm``, the
Holm-adjusted DeLong p-value, and the ``outcome`` it decides (:data:`OUTCOMES`)."""

SELECTION_COLUMNS = ("strategy", "accuracy", "n", "lo", "hi")


def _read_csvs(run_dirs: Sequence[str | os.PathLike[str]], name: str, columns: Sequence[str]) -> pd.DataFrame:
    frames = []
    for d in run_dirs:
        path = Path(d) / name
        if path.exists():
            f = pd.read_csv(path)
            missing = [c for c in columns if c not in f.columns]
            if missing:
                raise ValueError(f"{path}: missing columns {missing} (expected {list(columns)})")
            frames.append(f.assign(run=relative_path(d)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*columns, "run"])


def load_comparisons(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """The ``comparisons.csv`` of every run that has one, stacked, with a ``run`` column (empty if none)."""
    return _read_csvs(run_dirs, "comparisons.csv", COMPARISON_COLUMNS)


def load_selection(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """The ``selection.csv`` of every run that has one, stacked, with a ``run`` column (empty if none)."""
    return _read_csvs(run_dirs, "selection.csv", SELECTION_COLUMNS)


def outcome_counts(comparisons: pd.DataFrame) -> dict[str, int]:
    """How many comparisons of ``comparisons.csv`` rows are ``win``, ``tie``, ``loss`` and ``undefined`` (no
    AUROC difference: one correctness class), over all runs; keys in that order."""
    return {k: int((comparisons["outcome"] == k).sum()) for k in OUTCOMES}


def selection_frame(selection: pd.DataFrame, labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The accuracy of each strategy's answer for readers: one row per run (``labels``: short run names), one
    column per strategy, accuracy to 2 decimals with its bootstrap interval below."""
    labels = labels or {}
    strategies = list(dict.fromkeys(selection["strategy"]))
    rows = []
    for run, group in selection.groupby("run", sort=False):
        row: dict[str, Any] = {"Run": labels.get(str(run), str(run))}
        for r in group.to_dict("records"):
            row[r["strategy"]] = (
                "–" if math.isnan(r["accuracy"]) else with_interval(r["accuracy"], r["lo"], r["hi"], decimals=2)
            )
        rows.append(row)
    caption = (
        "Accuracy of the one answer each strategy returns per question, with its 95% bootstrap interval (each "
        "run's `selection.csv`). – : the strategy does not apply to that run (the file's note says why)."
    )
    frame = pd.DataFrame(rows, columns=["Run", *strategies])
    return titled(frame, caption, formats=dict.fromkeys(strategies, ".2f"), html=strategies)


def strategy_descriptions() -> dict[str, str]:
    """Each answer-selection strategy of :data:`shapley.pipeline.score.choice.STRATEGIES` -> a short description
    for readers, derived from its declaration (the bullet the choice module's docstring gives it): the bullet's
    first sentence without parenthetical remarks (four words or more), up to its first colon or semicolon, the
    reST code marks dropped.

    Raises ValueError naming a strategy the docstring does not describe.
    """
    import re

    from shapley.pipeline.score import choice

    bullets = dict(re.findall(r"^\* ``(\w+)``: (.*?)(?=^\* ``|^\S|\Z)", choice.__doc__ or "", re.M | re.S))
    missing = [s for s in choice.STRATEGIES if s not in bullets]
    if missing:
        raise ValueError(f"no description declared for strategies {missing}")
    out = {}
    for name in choice.STRATEGIES:
        text = " ".join(bullets[name].split())
        text = re.split(r"\.\s+(?=[A-Z])|\.$", text)[0]  # the first sentence ("i.e. the" does not end one)
        text = re.sub(r"\s\((?=[a-z])(?:[^() ]* ){3,}[^()]*\)", "", text)  # remarks; not "(most likely)", "(P + P^T)"
        text = re.split(r"[:;]\s", text)[0]
        out[name] = text.replace("``", "").rstrip(".,")
    return out


def strategies_html() -> Html:
    """The strategies of :func:`strategy_descriptions` as a list for readers, each name in code."""
    items = "".join(f"<li>{code(name)}: {esc(text)}.</li>" for name, text in strategy_descriptions().items())
    return Html(f'<ul class="strategies">{items}</ul>')


SELECTION_TEST_COLUMNS = ("strategy_a", "strategy_b", "accuracy_a", "accuracy_b", "p_holm", "outcome")
"""Columns of ``selection_tests.csv`` (:func:`shapley.pipeline.evaluate.selection.selection_tests`) read here:
McNemar's exact paired test between two strategies on the same questions, Holm-adjusted within the run, and
the outcome it decides."""


def load_selection_tests(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """The ``selection_tests.csv`` of every run that has one, stacked, with a ``run`` column; empty if none (runs
    written before the test existed)."""
    return _read_csvs(run_dirs, "selection_tests.csv", SELECTION_TEST_COLUMNS)


#: A written ``outcome`` of ``selection_tests.csv`` read from each side: (``strategy_a``'s, ``strategy_b``'s).
_SIDES = {"a better": ("higher", "lower"), "b better": ("lower", "higher")}


def selection_outcomes(
    tests: pd.DataFrame, runs: Sequence[str], strategy: str = "min_phi", against: str = "first"
) -> list[tuple[str, str]]:
    """Each exact paired test (``tests``, :func:`load_selection_tests`) of ``strategy`` against ``against`` in
    ``runs``, as (run, outcome from ``strategy``'s side: ``higher``, ``lower``, ``no significant difference`` or
    ``undefined``)."""
    t = tests[tests["run"].isin(runs)]
    return [
        (run, _SIDES.get(outcome, (outcome, outcome))[side])
        for side, (a, b) in enumerate([(strategy, against), (against, strategy)])
        for run, outcome in zip(
            t.loc[(t["strategy_a"] == a) & (t["strategy_b"] == b), "run"],
            t.loc[(t["strategy_a"] == a) & (t["strategy_b"] == b), "outcome"],
            strict=True,
        )
    ]


def selection_counts(
    selection: pd.DataFrame,
    tests: pd.DataFrame,
    question_sets: Mapping[str, str],
    strategy: str = "min_phi",
    against: str = "first",
) -> dict[str, int]:
    """How the exact paired tests (``tests``, :func:`load_selection_tests`) compare ``strategy`` with ``against``
    over the runs that apply both: ``runs``, ``sets`` (distinct question sets among them, ``question_sets``:
    run -> key, :func:`shapley.companion.provenance.question_sets`), ``tested`` (tests found), and of those
    ``higher``, ``lower`` (``strategy`` significantly more / less accurate, Holm-adjusted within each run),
    ``tie`` and ``undefined``."""
    both = selection.dropna(subset=["accuracy"])
    runs = [r for r in dict.fromkeys(both["run"]) if {strategy, against} <= set(both.loc[both["run"] == r, "strategy"])]
    found = [word for _, word in selection_outcomes(tests, runs, strategy, against)]
    counts = pd.Series(found, dtype=object).value_counts()
    return {
        "runs": len(runs),
        "sets": len({question_sets.get(r, r) for r in runs}),
        "tested": len(found),
        "higher": int(counts.get("higher", 0)),
        "lower": int(counts.get("lower", 0)),
        "tie": int(counts.get("no significant difference", 0)),
        "undefined": int(counts.get("undefined", 0)),
    }
