"""How well an uncertainty score predicts correctness: AUROC, AUARC, PRR and bootstrap intervals.

Conventions: ``uncertainty`` is higher for answers the method trusts less; ``correct`` is boolean.
A metric that needs both classes returns NaN with a ``RuntimeWarning`` when only one is present.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import rankdata

from shapley.core import validate

Metric = Callable[[ArrayLike, ArrayLike], float]


def _inputs(uncertainty: ArrayLike, correct: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    u = validate.score_vector(uncertainty, "uncertainty")
    c = validate.label_vector(correct, "correct")
    if u.shape != c.shape:
        raise ValueError(f"uncertainty and correct must have the same length; got {u.shape[0]} and {c.shape[0]}")
    if u.size == 0:
        raise ValueError("uncertainty is empty: no questions to evaluate")
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
    """Area under the accuracy-rejection curve: mean accuracy over all rejection levels (higher is better)."""
    return float(np.mean(accuracy_rejection_curve(uncertainty, correct)))


def prr(uncertainty: ArrayLike, correct: ArrayLike) -> float:
    """Prediction-rejection ratio (Malinin et al.): share of the oracle's AUARC gain over random rejection.

    ``(AUARC(u) - acc) / (AUARC(oracle) - acc)`` where the oracle rejects incorrect answers first and
    random rejection has AUARC equal to the accuracy. 1 is oracle, 0 random, negative worse than random.
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
    """
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
