"""Paired tests of two methods on the same questions: DeLong's test of two correlated AUROCs
(:func:`delong_test`) and Holm's adjustment of several p-values (:func:`holm`). Both are deterministic."""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import validate
from shapley.core.ranks import checked_inputs as _inputs
from shapley.core.ranks import checked_scores as _scores
from shapley.core.ranks import midranks_checked as _midranks


def holm(p_values: ArrayLike) -> NDArray[np.float64]:
    """Holm-Bonferroni adjusted p-values (step-down, family-wise error), in the input order.

    With the k non-NaN p-values sorted ascending, ``p_(i)`` becomes ``max_{j <= i} min(1, (k - j + 1) p_(j))``
    (1-based), so the adjusted values are monotone in the raw ones and at most 1. NaN entries (tests that could
    not be run) pass through and do not count in k. Rejecting where the adjusted value is below ``alpha``
    controls the family-wise error rate at ``alpha``.

    Args:
        p_values: (k,) p-values in [0, 1], NaN allowed.

    Returns:
        (k,) adjusted p-values.

    Examples:
        >>> holm([0.01, 0.04, 0.03, 0.005]).tolist()
        [0.03, 0.06, 0.06, 0.02]
        >>> holm([0.2, float("nan"), 0.6]).tolist()
        [0.4, nan, 0.6]
    """
    p = validate.real_array(p_values, "p_values", "a 1-D sequence of numbers", ndim=1)
    ok = ~np.isnan(p)
    if np.any((p[ok] < 0.0) | (p[ok] > 1.0)):
        raise ValueError(f"p_values must lie in [0, 1] (or be NaN); got {p[ok & ((p < 0) | (p > 1))].tolist()}")
    out = np.full(p.shape, np.nan)
    order = np.flatnonzero(ok)[np.argsort(p[ok], kind="stable")]
    k = order.size
    out[order] = np.minimum(1.0, np.maximum.accumulate((k - np.arange(k)) * p[order]))
    return out


class DeLongResult(NamedTuple):
    """DeLong's test of two correlated AUROCs: ``delta = AUROC(a) - AUROC(b)``, its z statistic, two-sided p."""

    delta: float
    z: float
    p_value: float


def _placements(u: NDArray[np.float64], c: NDArray[np.bool_]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """DeLong's structural components from midranks (Sun & Xu 2014): (V10 per incorrect, V01 per correct) answer.

    ``V10[i]`` is the share of correct answers that incorrect answer i is more uncertain than (ties 1/2);
    ``V01[j]`` the share of incorrect answers more uncertain than correct answer j. Both average to the AUROC.
    """
    wrong, right = u[~c], u[c]
    all_ranks = _midranks(u)
    v10 = (all_ranks[~c] - _midranks(wrong)) / right.size
    v01 = 1.0 - (all_ranks[c] - _midranks(right)) / wrong.size
    return v10, v01


def delong_test(u_a: ArrayLike, u_b: ArrayLike, correct: ArrayLike) -> DeLongResult:
    """DeLong, DeLong & Clarke-Pearson (1988) two-sided test for the AUROCs of two methods on the same questions.

    With ``V10``/``V01`` the structural components of each method (:func:`auroc`'s orientation: an incorrect
    answer is the "positive"), ``S10`` and ``S01`` their 2 x 2 sample covariance matrices over incorrect and
    over correct answers, the difference has variance ``var = w' (S10 / n_incorrect + S01 / n_correct) w`` with
    ``w = (1, -1)``; ``z = delta / sqrt(var)`` and ``p = 2 (1 - Phi(|z|))``. A zero variance (e.g. both
    rankings perfect) gives ``z = 0, p = 1`` when the AUROCs agree and ``z = +-inf, p = 0`` when they differ.
    Needs at least two answers in each class; otherwise all three fields are NaN, with a ``RuntimeWarning``.

    Args:
        u_a, u_b: (m,) finite uncertainty scores of methods a and b. correct: (m,) booleans.

    Examples:
        >>> correct = [True, True, True, False, False, False]
        >>> r = delong_test([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [0.1, 0.8, 0.3, 0.7, 0.2, 0.9], correct)
        >>> round(r.delta, 4), round(r.z, 4), round(r.p_value, 4)
        (0.3333, 1.2247, 0.2207)
    """
    ua, c = _inputs(u_a, correct, "u_a")
    ub = _scores(u_b, c, "u_b")
    n_right, n_wrong = int(c.sum()), int((~c).sum())
    if min(n_right, n_wrong) < 2:
        warnings.warn(
            f"DeLong's test needs at least two correct and two incorrect answers; got {n_right} and {n_wrong}. "
            "Returning NaN",
            RuntimeWarning,
            stacklevel=2,
        )
        return DeLongResult(math.nan, math.nan, math.nan)
    (v10a, v01a), (v10b, v01b) = _placements(ua, c), _placements(ub, c)
    delta = float(np.mean(v10a) - np.mean(v10b))
    S = np.cov(np.vstack([v10a, v10b])) / n_wrong + np.cov(np.vstack([v01a, v01b])) / n_right
    var = float(S[0, 0] + S[1, 1] - 2.0 * S[0, 1])
    if var <= 0.0 and delta == 0.0:
        return DeLongResult(delta, 0.0, 1.0)
    z = delta / math.sqrt(var) if var > 0.0 else math.copysign(math.inf, delta)  # p = 0 at z = +-inf
    from scipy.special import ndtr  # what scipy.stats.norm.sf calls, without scipy.stats' second-long import

    return DeLongResult(delta, z, float(2.0 * ndtr(-abs(z))))
