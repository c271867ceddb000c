"""Paired comparisons: each run's ``comparisons.csv``, counted and shown for readers.

Significance is DeLong's paired test for correlated AUROCs, Holm-adjusted within each run (the deterministic
test: it cannot depend on a bootstrap seed). The run decides each comparison's outcome once
(:func:`shapley.pipeline.evaluate.comparisons.compare_methods`: ``delong_p_holm`` and ``outcome``) and the book
reads it as written. The bootstrap gives the intervals only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from shapley.companion.htmltable import titled
from shapley.companion.provenance import relative_path
from shapley.pipeline.evaluate.comparisons import OUTCOMES, SIGNIFICANCE

COMPARISON_COLUMNS = ("method", "reference", "delta_auroc", "lo", "hi", "delong_p_holm", "outcome")
"""Columns the book needs in every ``comparisons.csv`` (other columns are kept as read): ``delong_p_holm``, the
Holm-adjusted DeLong p-value, and the ``outcome`` it decides (:data:`OUTCOMES`)."""

TEST_WORDS = f"DeLong's paired test, Holm-adjusted within each run, p below {SIGNIFICANCE:g}"
"""How the outcomes are decided, for captions."""


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


def comparison_summary(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Wins, ties and losses of each method against its reference, counted over runs.

    Outcomes are the runs' (DeLong's paired test, Holm-adjusted within each run; a difference that is undefined,
    one correctness class, counts as ``undefined``, not as a tie). Columns: method, reference, runs, win, tie,
    loss, undefined; sorted by wins minus losses, best first.
    """
    cols = ["method", "reference", "runs", *OUTCOMES]
    if comparisons.empty:
        return pd.DataFrame(columns=cols)
    counts = pd.crosstab([comparisons["method"], comparisons["reference"]], comparisons["outcome"])
    counts = counts.reindex(columns=list(OUTCOMES), fill_value=0).reset_index()
    counts.insert(2, "runs", counts[list(OUTCOMES)].sum(axis=1))
    order = (counts["win"] - counts["loss"]).sort_values(ascending=False, kind="stable").index
    return counts.loc[order, cols].reset_index(drop=True)


def comparison_summary_frame(comparisons: pd.DataFrame) -> pd.DataFrame:
    """:func:`comparison_summary` for readers."""
    frame = comparison_summary(comparisons).rename(
        columns={
            "method": "Method",
            "reference": "Against",
            "runs": "Runs",
            "win": "Better",
            "tie": "No significant difference",
            "loss": "Worse",
            "undefined": "Undefined",
        }
    )
    caption = (
        "Paired comparisons on the same questions, counted over the runs (each run's "
        f"`comparisons.csv`): *better* or *worse* only where {TEST_WORDS}; "
        "*undefined*: the run's answers are all correct or all wrong, so no AUROC exists."
    )
    return titled(frame, caption, formats=dict.fromkeys(frame.columns[2:], ".0f"))


def outcome_counts(comparisons: pd.DataFrame) -> dict[str, int]:
    """How many comparisons of ``comparisons.csv`` rows are ``win``, ``tie``, ``loss`` and ``undefined`` (no
    AUROC difference: one correctness class), over all runs; keys in that order."""
    return {k: int((comparisons["outcome"] == k).sum()) for k in OUTCOMES}


def sample_size_tests(run_dirs: Mapping[int, str | os.PathLike[str]]) -> pd.DataFrame:
    """Does a method's AUROC change with the number of samples? Runs on the same questions at several sample
    sizes (``run_dirs``: n -> run directory), each method against itself at every pair of sizes.

    On the questions both runs scored, with the same correctness in both (the rows compared are paired), the
    change is DeLong's paired test (:func:`shapley.core.metrics.delong_test`) of the method's scores at the
    larger n against those at the smaller n, made rankable as in the runs' comparisons
    (:func:`shapley.pipeline.evaluate.comparisons.rankable`); the p-values are Holm-adjusted
    (:func:`shapley.core.metrics.holm`) across all the tests of the table (every method and pair of sizes).

    Returns:
        one row per (method, n_a < n_b) where both runs scored the method: method, n_a, n_b, n (questions),
        delta (AUROC at n_b minus at n_a), delong_p, delong_p_holm, significant (Holm-adjusted p below
        :data:`~shapley.pipeline.evaluate.comparisons.SIGNIFICANCE`).
    """
    import warnings
    from itertools import combinations

    import numpy as np

    from shapley.core import metrics
    from shapley.pipeline.evaluate.comparisons import rankable
    from shapley.pipeline.evaluate.metrics import load_scores
    from shapley.pipeline.score.scores import METHODS

    scores = {n: load_scores(d).set_index("id") for n, d in run_dirs.items()}
    rows = []
    for na, nb in combinations(sorted(scores), 2):
        a, b = scores[na], scores[nb]
        ids = a.index.intersection(b.index)
        a, b = a.loc[ids], b.loc[ids]
        same = a["correct"].to_numpy(dtype=bool) == b["correct"].to_numpy(dtype=bool)
        for m in [m for m in METHODS if m in a.columns and m in b.columns]:
            ua, ub = a[m].to_numpy(dtype=np.float64), b[m].to_numpy(dtype=np.float64)
            ok = same & ~np.isnan(ua) & ~np.isnan(ub)
            if not ok.any():
                continue
            c = a["correct"].to_numpy(dtype=bool)[ok]
            with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
                d = metrics.delong_test(rankable(ub[ok])[0], rankable(ua[ok])[0], c)
            rows.append(
                {"method": m, "n_a": na, "n_b": nb, "n": int(ok.sum()), "delta": d.delta, "delong_p": d.p_value}
            )
    out = pd.DataFrame(rows, columns=["method", "n_a", "n_b", "n", "delta", "delong_p"])
    out["delong_p_holm"] = metrics.holm(out["delong_p"].to_numpy(dtype=np.float64)) if rows else []
    out["significant"] = out["delong_p_holm"] < SIGNIFICANCE
    return out
