"""How well an uncertainty score predicts correctness: AUROC, AUARC, PRR, bootstrap intervals, and paired tests.

Conventions: ``uncertainty`` is higher for answers the method trusts less; ``correct`` is boolean.
A metric that needs both classes returns NaN with a ``RuntimeWarning`` when only one is present.

Comparing two methods on the same m questions: :func:`paired_bootstrap` (any metric; one set of resampled
questions for both methods, a percentile interval of the difference and a two-sided p-value),
:func:`delong_test` (AUROC only, DeLong et al. 1988's asymptotic test for correlated AUROCs) and :func:`holm`
(Holm's step-down adjustment of several p-values, e.g. every method against one reference).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm, rankdata

from shapley.core import validate

Metric = Callable[[ArrayLike, ArrayLike], float]


def _inputs(
    uncertainty: ArrayLike, correct: ArrayLike, name: str = "uncertainty"
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    u = validate.score_vector(uncertainty, name)
    c = validate.label_vector(correct, "correct")
    if u.shape != c.shape:
        raise ValueError(f"{name} and correct must have the same length; got {u.shape[0]} and {c.shape[0]}")
    if u.size == 0:
        raise ValueError(f"{name} is empty: no questions to evaluate")
    return u, c


def _one_class(c: NDArray[np.bool_], name: str) -> bool:
    if c.all() or not c.any():
        warnings.warn(
            f"{name} is undefined: all {c.size} answers are {'correct' if c.all() else 'incorrect'}; returning NaN",
            RuntimeWarning,
            stacklevel=3,
        )
        return True
    return False


def auroc(uncertainty: ArrayLike, correct: ArrayLike) -> float:
    """P(an incorrect answer is more uncertain than a correct one), ties counting 1/2.

    This is the area under the ROC curve for detecting *incorrect* answers with the uncertainty score
    (Mann-Whitney U / (n_incorrect * n_correct)). 1 is perfect, 0.5 is chance.

    Args:
        uncertainty: (m,) finite scores. correct: (m,) booleans.

    Examples:
        >>> auroc([0.1, 0.2, 0.8, 0.9], [True, True, False, False])  # a perfect ranking
        1.0
        >>> auroc([0.5, 0.5, 0.5, 0.5], [True, False, True, False])  # no information: chance
        0.5
    """
    u, c = _inputs(uncertainty, correct)
    if _one_class(c, "AUROC"):
        return float("nan")
    ranks = rankdata(u)
    n_wrong = int((~c).sum())
    n_right = int(c.sum())
    u_stat = ranks[~c].sum() - n_wrong * (n_wrong + 1) / 2.0
    return float(u_stat / (n_wrong * n_right))


def accuracy_rejection_curve(uncertainty: ArrayLike, correct: ArrayLike) -> NDArray[np.float64]:
    """Accuracy of the k most certain answers, k = 1..m, in expectation over random tie orders.

    Returns:
        (m,) array; entry k-1 is the accuracy when the ``m - k`` most uncertain answers are rejected.

    Examples:
        >>> np.round(accuracy_rejection_curve([0.1, 0.2, 0.8, 0.9], [True, True, False, False]), 4).tolist()
        [1.0, 1.0, 0.6667, 0.5]
    """
    u, c = _inputs(uncertainty, correct)
    order = np.argsort(u, kind="stable")
    us, cs = u[order], c[order].astype(np.float64)
    # Replace each tie group by its mean: the expected cumulative sum under a random order within ties.
    _, start, counts = np.unique(us, return_index=True, return_counts=True)
    group_mean = np.add.reduceat(cs, start) / counts
    cs = np.repeat(group_mean, counts)
    return np.cumsum(cs) / np.arange(1, u.size + 1)


def auarc(uncertainty: ArrayLike, correct: ArrayLike) -> float:
    """Area under the accuracy-rejection curve: mean accuracy over all rejection levels (higher is better).

    Examples:
        >>> round(auarc([0.1, 0.2, 0.8, 0.9], [True, True, False, False]), 4)  # mean of 1, 1, 2/3, 1/2
        0.7917
    """
    return float(np.mean(accuracy_rejection_curve(uncertainty, correct)))


def prr(uncertainty: ArrayLike, correct: ArrayLike) -> float:
    """Prediction-rejection ratio (Malinin et al.): share of the oracle's AUARC gain over random rejection.

    ``(AUARC(u) - acc) / (AUARC(oracle) - acc)`` where the oracle rejects incorrect answers first and
    random rejection has AUARC equal to the accuracy. 1 is oracle, 0 random, negative worse than random.

    Examples:
        >>> round(prr([0.1, 0.2, 0.8, 0.9], [True, True, False, False]), 12)  # rejects wrong answers first: oracle
        1.0
        >>> round(prr([0.9, 0.8, 0.2, 0.1], [True, True, False, False]), 12)  # the worst order
        -1.0
    """
    u, c = _inputs(uncertainty, correct)
    if _one_class(c, "PRR"):
        return float("nan")
    acc = float(c.mean())
    oracle = auarc((~c).astype(np.float64), c)
    return float((auarc(u, c) - acc) / (oracle - acc))


def bootstrap_ci(
    metric: Metric,
    uncertainty: ArrayLike,
    correct: ArrayLike,
    *,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of ``metric(uncertainty, correct)``.

    Questions are resampled with replacement; resamples where the metric is NaN (one class only) are
    dropped. Returns (lo, hi) at level ``1 - alpha``; (NaN, NaN) if no resample is defined.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> correct = rng.random(200) < 0.5
        >>> u = rng.normal(size=200) - correct  # wrong answers a little more uncertain
        >>> lo, hi = bootstrap_ci(auroc, u, correct, n_boot=200)
        >>> bool(lo < auroc(u, correct) < hi), bool(0.5 < lo)
        (True, True)
    """
    validate.resampling_kinds(metric, n_boot, alpha, seed)
    if int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer; got {n_boot!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")
    u, c = _inputs(uncertainty, correct)
    rng = np.random.default_rng(seed)
    stats = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(int(n_boot)):
            idx = rng.integers(0, u.size, u.size)
            stats.append(metric(u[idx], c[idx]))
    s = np.asarray(stats)
    s = s[np.isfinite(s)]
    if s.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(s, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


class PairedComparison(NamedTuple):
    """Method a against method b on the same questions (see :func:`paired_bootstrap`).

    ``delta = metric(a) - metric(b)`` on all questions; ``(lo, hi)`` its percentile bootstrap interval;
    ``p_value`` two-sided, for "no difference".
    """

    delta: float
    lo: float
    hi: float
    p_value: float


def _resamples(
    indices: ArrayLike | None, m: int, n_boot: int, seed: int | None
) -> list[NDArray[np.int64]] | NDArray[np.int64]:
    """Explicit (B, m) resample indices, validated, or ``n_boot`` draws as :func:`bootstrap_ci` makes them."""
    if indices is None:
        rng = np.random.default_rng(seed)
        return [rng.integers(0, m, m) for _ in range(n_boot)]
    idx = np.asarray(indices)
    if idx.ndim != 2 or idx.shape[0] < 1 or idx.shape[1] != m:
        raise ValueError(f"indices must be a (B, m) array with B >= 1 and m = {m} questions; got shape {idx.shape}")
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices must hold integers (question positions); got dtype {idx.dtype}")
    if idx.min() < 0 or idx.max() >= m:
        raise ValueError(f"indices must lie in [0, {m - 1}]; got values in [{idx.min()}, {idx.max()}]")
    return idx.astype(np.int64)


def _two_sided_p(delta: float, d: NDArray[np.float64]) -> float:
    """Twice the share of resampled differences on the far side of zero (ties at 0 count), capped at 1."""
    if delta == 0.0:
        return 1.0
    far = np.count_nonzero(d <= 0.0) if delta > 0.0 else np.count_nonzero(d >= 0.0)
    return float(min(1.0, 2.0 * far / d.size))


def paired_bootstrap(
    metric: Metric,
    u_a: ArrayLike,
    u_b: ArrayLike,
    correct: ArrayLike,
    *,
    n_boot: int = 1000,
    seed: int | None = 0,
    alpha: float = 0.05,
    indices: ArrayLike | None = None,
) -> PairedComparison:
    """Paired bootstrap comparison of two methods' uncertainty scores on the same m questions.

    Each resample draws m questions with replacement and evaluates *both* methods on the same questions;
    resamples where either metric is NaN (one class only) are dropped. The interval is the percentile interval
    of the resampled differences at level ``1 - alpha``; the p-value is twice the share of resampled
    differences on the far side of zero (the side opposite the observed ``delta``, ties at exactly 0
    included), capped at 1, and 1 when ``delta == 0``. With the same ``seed`` the resamples are those of
    :func:`bootstrap_ci`.

    Args:
        metric: e.g. :func:`auroc`; called as ``metric(uncertainty, correct)``.
        u_a, u_b: (m,) finite uncertainty scores of methods a and b. correct: (m,) booleans.
        n_boot: number of resamples (>= 1); seed: for ``numpy.random.default_rng``.
        alpha: in (0, 1).
        indices: optional (B, m) integer array of explicit resamples (rows of question positions); then
            ``n_boot`` and ``seed`` are not used.

    Returns:
        :class:`PairedComparison` ``(delta, lo, hi, p_value)``; ``lo``, ``hi`` and ``p_value`` are NaN when
        ``delta`` is NaN or no resample is defined.

    Examples:
        Four questions, method a ranks them perfectly (AUROC 1), method b does not (AUROC 0.25). Of the
        4**4 = 256 possible resamples, 224 hold both classes, and in 14 of them (only questions 0 and 3 drawn)
        b ties a, so p = 2 * 14 / 224:

        >>> from itertools import product
        >>> u_a, u_b, correct = [0.1, 0.2, 0.8, 0.9], [0.3, 0.9, 0.2, 0.8], [True, True, False, False]
        >>> r = paired_bootstrap(auroc, u_a, u_b, correct, indices=list(product(range(4), repeat=4)))
        >>> r.delta, r.p_value
        (0.75, 0.125)
    """
    validate.resampling_kinds(metric, n_boot, alpha, seed)
    if isinstance(n_boot, bool) or int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be a positive integer; got {n_boot!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")
    ua, c = _inputs(u_a, correct, "u_a")
    ub, _ = _inputs(u_b, correct, "u_b")
    rows = _resamples(indices, c.size, int(n_boot), seed)
    delta = float(metric(ua, c) - metric(ub, c))
    if math.isnan(delta):
        return PairedComparison(delta, math.nan, math.nan, math.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = np.array([metric(ua[idx], c[idx]) - metric(ub[idx], c[idx]) for idx in rows], dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return PairedComparison(delta, math.nan, math.nan, math.nan)
    lo, hi = np.quantile(d, [alpha / 2.0, 1.0 - alpha / 2.0])
    return PairedComparison(delta, float(lo), float(hi), _two_sided_p(delta, d))


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
    p = validate.real_array(p_values, "p_values", "a 1-D sequence of numbers")
    if p.ndim != 1:
        raise ValueError(f"p_values must be 1-D; got shape {p.shape}")
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
    all_ranks = rankdata(u)
    v10 = (all_ranks[~c] - rankdata(wrong)) / right.size
    v01 = 1.0 - (all_ranks[c] - rankdata(right)) / wrong.size
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
    ub, _ = _inputs(u_b, correct, "u_b")
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
    if var <= 0.0:
        return (
            DeLongResult(delta, 0.0, 1.0) if delta == 0.0 else DeLongResult(delta, math.copysign(math.inf, delta), 0.0)
        )
    z = delta / math.sqrt(var)
    return DeLongResult(delta, z, float(2.0 * norm.sf(abs(z))))
