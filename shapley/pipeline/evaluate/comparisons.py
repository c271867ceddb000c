"""``comparisons.csv``: each method against the reference (``Shap``) on the questions both scored.

Significance is DeLong's paired test of the two AUROCs (:func:`shapley.core.metrics.delong_test`), Holm-adjusted
across the run's methods (``delong_p_holm``): a deterministic function of the scores, whatever the bootstrap
seed. The paired bootstrap gives the interval of the difference only (``lo``/``hi``), with enough resamples
that each end's Monte-Carlo standard error (``lo_mcse``/``hi_mcse``, Maritz-Jarrett) is at most
:data:`shapley.core.metrics.MCSE_TARGET` (:func:`shapley.core.metrics.paired_interval`; ``n_boot`` records how
many were drawn, starting from the run's ``n_boot`` and doubling, at most
:data:`shapley.core.metrics.MAX_BOOT`; a ``note`` says when the target was not reached).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from shapley.core import metrics

COMPARISON_COLUMNS: tuple[str, ...] = (
    "method",
    "reference",
    "delta_auroc",
    "lo",
    "hi",
    "lo_mcse",
    "hi_mcse",
    "n_boot",
    "delong_z",
    "delong_p",
    "delong_p_holm",
    "outcome",
    "n",
    "note",
)
"""Columns of ``comparisons.csv`` (see :func:`compare_methods`)."""

OUTCOMES: tuple[str, ...] = ("win", "tie", "loss", "undefined")
"""Values of ``outcome``, from the method's side against the reference."""

REFERENCE_METHOD = "Shap"
SIGNIFICANCE = 0.05
"""A method wins or loses against the reference when its Holm-adjusted DeLong p-value is below this."""


def rankable(u: np.ndarray) -> tuple[np.ndarray, int]:
    """Scores rounded (:func:`shapley.core.metrics.round_scores`), +-inf replaced by max+1 / min-1 of the finite
    values (max + 1e-6 |max| / min - 1e-6 |min| beyond 1e6: strictly beyond them even after rounding,
    rank-preserving); returns (array, number of infinite scores)."""
    u = metrics.round_scores(u)  # a float64 copy
    inf = np.isinf(u)
    if inf.any():
        fin = u[~inf]
        lo, hi = (float(fin.min()), float(fin.max())) if fin.size else (0.0, 0.0)
        # strictly beyond the finite values after 12-digit rounding, also where x - 1 == x (|x| >= 2**53)
        u[np.isneginf(u)] = lo - max(1.0, abs(lo) * 1e-6)
        u[np.isposinf(u)] = hi + max(1.0, abs(hi) * 1e-6)
    return u, int(inf.sum())


def _comparison(u: np.ndarray, u_ref: np.ndarray, correct: np.ndarray, *, n_boot: int, seed: int) -> dict[str, Any]:
    """Paired interval, DeLong's test and note of one method against the reference on the questions both
    scored."""
    ok = ~np.isnan(u) & ~np.isnan(u_ref)
    measured = ("delta_auroc", "lo", "hi", "lo_mcse", "hi_mcse", "delong_z", "delong_p")  # NaN where undefined
    row: dict[str, Any] = {**dict.fromkeys(measured, math.nan), "n_boot": 0, "n": int(ok.sum())}
    c = correct[ok]
    if not ok.any():
        return {**row, "note": "no question scored by both"}
    if c.all() or not c.any():
        return {**row, "note": "one correctness class only on the shared questions: AUROC undefined"}
    a, b = rankable(u[ok])[0], rankable(u_ref[ok])[0]
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        r = metrics.paired_interval(metrics.auroc, a, b, c, n_boot=max(int(n_boot), metrics.MIN_BOOT), seed=seed)
        d = metrics.delong_test(a, b, c)
    row.update(r._asdict(), delta_auroc=r.delta, delong_z=d.z, delong_p=d.p_value)
    del row["delta"]
    undefined = "DeLong's test needs two correct and two incorrect answers: significance undefined"
    notes = (undefined if math.isnan(d.p_value) else "", mcse_note(r))
    return {**row, "note": "; ".join(n for n in notes if n)}


def mcse_note(interval: metrics.BootstrapInterval | metrics.PairedInterval) -> str:
    """The note for an interval whose ends' Monte-Carlo standard error is above
    :data:`shapley.core.metrics.MCSE_TARGET` after the most resamples allowed ("" for any other)."""
    if max(interval.lo_mcse, interval.hi_mcse) <= metrics.MCSE_TARGET:
        return ""
    return f"interval ends' Monte-Carlo error above {metrics.MCSE_TARGET:g} after {interval.n_boot} resamples"


def outcomes(delta: np.ndarray, p_holm: np.ndarray) -> np.ndarray:
    """``win`` / ``loss`` where ``p_holm`` < :data:`SIGNIFICANCE` and ``delta`` is positive / negative,
    ``undefined`` where either is NaN, else ``tie`` (float arrays of one length, e.g. columns of
    ``comparisons.csv``)."""
    significant = p_holm < SIGNIFICANCE
    out = np.where(significant & (delta > 0), "win", np.where(significant & (delta < 0), "loss", "tie"))
    return np.where(np.isnan(delta) | np.isnan(p_holm), "undefined", out)


def compare_methods(
    scores: pd.DataFrame,
    *,
    methods: Sequence[str],
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """``comparisons.csv``: each method of ``methods`` (a column of ``scores`` each, as :func:`scores_frame
    <shapley.pipeline.evaluate.metrics.scores_frame>` writes them) against :data:`REFERENCE_METHOD` on the questions
    both scored.

    For each method, on the questions where both it and the reference have a score: ``delta_auroc`` =
    AUROC(method) - AUROC(reference); its paired percentile bootstrap interval ``lo``/``hi`` with the
    Monte-Carlo standard errors of its ends ``lo_mcse``/``hi_mcse`` and the resamples drawn ``n_boot`` (at least
    ``n_boot`` and :data:`shapley.core.metrics.MIN_BOOT`, seeded with ``seed``); DeLong's ``delong_z`` and
    two-sided ``delong_p``; ``delong_p_holm``, Holm's adjustment of ``delong_p`` across the methods of the run;
    ``outcome`` (:func:`outcomes`; ``undefined`` where the difference or the test is undefined, e.g. one
    correctness class); ``n`` shared questions and a ``note``. Only the interval depends on ``seed``. Without
    reference scores the table is empty.
    """
    rows: list[dict[str, Any]] = []
    if REFERENCE_METHOD in scores and not scores[REFERENCE_METHOD].isna().all():
        u_ref = scores[REFERENCE_METHOD].to_numpy(dtype=np.float64)
        correct = scores["correct"].to_numpy(dtype=bool)
        for m in methods:
            if m == REFERENCE_METHOD or scores[m].isna().all():
                continue
            row = _comparison(scores[m].to_numpy(dtype=np.float64), u_ref, correct, n_boot=n_boot, seed=seed)
            rows.append({"method": m, "reference": REFERENCE_METHOD, **row})
    out = pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
    if rows:
        out["delong_p_holm"] = metrics.holm(out["delong_p"].to_numpy(dtype=np.float64))
        out["outcome"] = outcomes(out["delta_auroc"].to_numpy(), out["delong_p_holm"].to_numpy())
    return out
