"""How well an uncertainty score predicts correctness: AUROC, AUARC, PRR, bootstrap intervals, and paired tests.

Conventions: ``uncertainty`` is higher for answers the method trusts less; ``correct`` is boolean.
A metric that needs both classes returns NaN with a ``RuntimeWarning`` when only one is present.

Two methods on the same m questions: :func:`paired_interval` (any metric), :func:`delong_test` and :func:`holm`
(from :mod:`shapley.core.paired`). :func:`bootstrap_interval` and
:func:`paired_interval` draw resamples until each end's Monte-Carlo error (:func:`quantile_mcse`) meets a target.
Every function here rounds the scores once (:func:`round_scores`, which says why) before ranking them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import validate
from shapley.core.paired import DeLongResult as DeLongResult
from shapley.core.paired import delong_test as delong_test
from shapley.core.paired import holm as holm
from shapley.core.ranks import checked_inputs as _inputs
from shapley.core.ranks import checked_scores as _scores
from shapley.core.ranks import midranks_checked as _midranks
from shapley.core.ranks import one_class as _one_class
from shapley.core.ranks import round_scores as round_scores

Metric = Callable[[ArrayLike, ArrayLike], float]


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
    ranks = _midranks(u)
    n_wrong = int((~c).sum())
    n_right = int(c.sum())
    u_stat = ranks[~c].sum() - n_wrong * (n_wrong + 1) / 2.0
    return float(u_stat / (n_wrong * n_right))


def _arc(u: NDArray[np.float64], c: NDArray[np.bool_]) -> NDArray[np.float64]:
    """The accuracy-rejection curve of checked inputs: (m,) accuracies of the k most certain answers, k = 1..m
    (entry k-1 rejects the ``m - k`` most uncertain), in expectation over random tie orders."""
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
    return float(np.mean(_arc(*_inputs(uncertainty, correct))))


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
    oracle = float(np.mean(_arc((~c).astype(np.float64), c)))
    return float((float(np.mean(_arc(u, c))) - acc) / (oracle - acc))


_CHUNK = 4096
"""Resamples handled at once (bounds the memory of the vectorised AUROC to a few (4096, m) arrays)."""


def _per_chunk(
    rows: NDArray[np.int64], m: int, stat: Callable[[NDArray[np.int64]], NDArray[np.float64]]
) -> NDArray[np.float64]:
    """``stat(counts)`` for chunks of at most :data:`_CHUNK` resamples, concatenated; ``counts[r, j]`` is how often
    resample r draws question j (of m)."""
    out = []
    for i in range(0, rows.shape[0], _CHUNK):
        chunk = rows[i : i + _CHUNK]
        k = chunk.shape[0]
        flat = (chunk + m * np.arange(k, dtype=np.int64)[:, None]).ravel()
        out.append(stat(np.bincount(flat, minlength=k * m).reshape(k, m)))
    return np.concatenate(out)


def _auroc_rows(u: NDArray[np.float64], c: NDArray[np.bool_], rows: NDArray[np.int64]) -> NDArray[np.float64]:
    """:func:`auroc` of ``u[idx], c[idx]`` for every row idx of ``rows``, vectorised, bit for bit the same.

    A resample weighs each question by how often it is drawn; the Mann-Whitney count (ties 1/2) is then a sum of
    products of integers and halves, exact in float64 like :func:`auroc`'s midrank sum, and divided by the same
    product of class sizes. NaN where a resample holds one class only.
    """
    order = np.argsort(u, kind="stable")
    us, cs = u[order], c[order]
    starts = np.flatnonzero(np.r_[True, us[1:] != us[:-1]])

    def stat(counts: NDArray[np.int64]) -> NDArray[np.float64]:
        w = counts[:, order].astype(np.float64)
        wrong = np.add.reduceat(np.where(cs, 0.0, w), starts, axis=1)
        right = np.add.reduceat(np.where(cs, w, 0.0), starts, axis=1)
        below = np.cumsum(right, axis=1) - right
        u_stat = (wrong * (below + 0.5 * right)).sum(axis=1)
        n_wrong, n_right = wrong.sum(axis=1), right.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            a = u_stat / (n_wrong * n_right)
        a[(n_wrong == 0) | (n_right == 0)] = np.nan
        return a

    return _per_chunk(rows, u.size, stat)


def accuracy(uncertainty: ArrayLike, correct: ArrayLike) -> float:
    """Share of correct answers; ``uncertainty`` is ignored (a metric for bootstrapping an accuracy).

    Examples:
        >>> accuracy([0.0, 0.0, 0.0, 0.0], [True, False, True, True])
        0.75
    """
    _, c = _inputs(uncertainty, correct)
    return float(np.mean(c))


def _resampled(
    metric: Metric, u: NDArray[np.float64], c: NDArray[np.bool_], rows: NDArray[np.int64]
) -> NDArray[np.float64]:
    """``metric(u[idx], c[idx])`` for every row idx of the (B, m) ``rows`` (NaN where undefined); :func:`auroc` and
    :func:`accuracy` vectorised (the accuracy as the same integer sum divided by m)."""
    if metric is auroc:
        return _auroc_rows(u, c, rows)
    if metric is accuracy:
        hits = c.astype(np.int64)
        return _per_chunk(rows, u.size, lambda w: (w @ hits) / u.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.array([metric(u[idx], c[idx]) for idx in rows], dtype=np.float64)


def quantile_mcse(samples: ArrayLike, q: float) -> float:
    """Maritz-Jarrett estimate of the standard error of the sample ``q``-quantile of ``samples``.

    With the B samples sorted, ``M = floor(q B + 1/2)`` and weights ``W_i = I(i/B) - I((i-1)/B)`` of the
    regularised incomplete beta function with parameters ``(M - 1, B - M)``, the error is
    ``sqrt(sum W_i (x_(i) - x_(M))**2 - (sum W_i (x_(i) - x_(M)))**2)`` (Wilcox, *Introduction to Robust
    Estimation*, 3.5.3). Used here as the Monte-Carlo standard error of a bootstrap interval's end.

    Args:
        samples: (B,) finite values, B >= 2. q: in (0, 1).

    Examples:
        >>> x = np.random.default_rng(0).normal(size=20000)  # sd of the 2.5 % quantile: about 0.019
        >>> round(quantile_mcse(x, 0.025), 3)
        0.019
        >>> quantile_mcse(np.ones(100), 0.5)
        0.0
    """
    return _mcse(np.sort(validate.vector(samples, "samples", min_len=2)), validate.number(q, "q", 0.0, 1.0))


def _mcse(x: NDArray[np.float64], q: float) -> float:
    """:func:`quantile_mcse` of checked, sorted samples ``x`` (at least 2) and ``0 < q < 1``."""
    n = x.size
    mm = min(max(int(math.floor(q * n + 0.5)), 2), n - 1)
    # The weights vanish (below 1e-30) beyond 12 binomial standard deviations of the order statistic M.
    half = int(math.ceil(12.0 * math.sqrt(q * (1.0 - q) * n))) + 2
    lo, hi = max(mm - half, 0), min(mm + half, n)
    from scipy.stats import beta as beta_distribution

    w = np.diff(beta_distribution.cdf(np.arange(lo, hi + 1) / n, mm - 1, n - mm))
    d = x[lo:hi] - x[mm - 1]
    c1, c2 = float(w @ d), float(w @ (d * d))
    return math.sqrt(max(c2 - c1 * c1, 0.0))


MCSE_TARGET = 0.002
"""Largest Monte-Carlo standard error of an interval end that :func:`bootstrap_interval` aims for."""

MAX_BOOT = 2**16
"""Most resamples :func:`bootstrap_interval` and :func:`paired_interval` draw (then the error is recorded as is)."""

BOOT_MEMORY_BYTES = 16 * 2**30
"""Largest ``max_boot * n * 8`` bytes (the resampled question positions, n questions) that
:func:`bootstrap_interval` and :func:`paired_interval` accept; larger requests are refused before anything is
drawn (``MAX_BOOT`` resamples of 10,000 questions need about 5 GiB)."""

MIN_BOOT = 100
"""Fewest resamples an interval may start from."""


class BootstrapInterval(NamedTuple):
    """A percentile interval ``[lo, hi]``, the Monte-Carlo standard errors of its ends and the resamples used."""

    lo: float
    hi: float
    lo_mcse: float
    hi_mcse: float
    n_boot: int


_Resampling = tuple[int, float, int | None, float, int]
"""The checked settings of :func:`bootstrap_interval` and :func:`paired_interval`: (n_boot, alpha, seed, mcse,
max_boot)."""


def _check_boot(metric: Metric, n_boot: int, alpha: float, seed: int | None, mcse: float, max_boot: int) -> _Resampling:
    validate.function(metric, "metric")
    validate.integer(n_boot, "n_boot", minimum=MIN_BOOT)
    if seed is not None:  # a random seed: None or an integer >= 0
        validate.integer(seed, "seed", minimum=0)
    alpha = validate.number(alpha, "alpha", 0.0, 1.0)
    validate.integer(max_boot, "max_boot", minimum=MIN_BOOT)
    if max_boot < n_boot:
        raise ValueError(f"max_boot must be >= n_boot; got {max_boot} < {n_boot}")
    return int(n_boot), alpha, seed, validate.number(mcse, "mcse", 0.0), int(max_boot)


def _adaptive(stats: Callable[[NDArray[np.int64]], NDArray[np.float64]], m: int, b: _Resampling) -> BootstrapInterval:
    """Draw resamples (one seeded stream), doubling their number until both ends' MC errors are <= ``mcse``."""
    n_boot, alpha, seed, mcse, max_boot = b
    need = max_boot * max(m, 1) * 8  # bytes of max_boot resamples' question positions
    if need > BOOT_MEMORY_BYTES:
        raise ValueError(
            f"max_boot = {max_boot} resamples of {m} questions could need {need / 2**30:.3g} GiB of resampled "
            f"positions, more than BOOT_MEMORY_BYTES = {BOOT_MEMORY_BYTES / 2**30:g} GiB; lower max_boot "
            f"(default MAX_BOOT = {MAX_BOOT}) or raise mcse"
        )
    rng = np.random.default_rng(seed)
    values: list[NDArray[np.float64]] = []
    total, target = 0, n_boot
    while True:
        values.append(stats(rng.integers(0, m, (target - total, m))))
        total = target
        s = np.concatenate(values)
        s = s[np.isfinite(s)]
        if s.size < 2:
            return BootstrapInterval(math.nan, math.nan, math.nan, math.nan, total)
        x = np.sort(s)
        e_lo, e_hi = _mcse(x, alpha / 2.0), _mcse(x, 1.0 - alpha / 2.0)
        if max(e_lo, e_hi) <= mcse or total >= max_boot:
            lo, hi = np.quantile(s, [alpha / 2.0, 1.0 - alpha / 2.0])
            return BootstrapInterval(float(lo), float(hi), e_lo, e_hi, total)
        # the error falls as 1/sqrt(resamples) (the rule in bootstrap_interval's docstring)
        want = 1.2 * total * (max(e_lo, e_hi) / mcse) ** 2
        target = min(max(2 * total, int(math.ceil(want / n_boot)) * n_boot), max_boot)


def bootstrap_interval(
    metric: Metric,
    uncertainty: ArrayLike,
    correct: ArrayLike,
    *,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
    mcse: float = MCSE_TARGET,
    max_boot: int = MAX_BOOT,
) -> BootstrapInterval:
    """Percentile bootstrap interval of ``metric(uncertainty, correct)`` with enough resamples for its ends.

    Questions are resampled with replacement. Starts from ``n_boot`` resamples and draws more, continuing the
    same seeded stream, until the Maritz-Jarrett standard error (:func:`quantile_mcse`) of both
    ends is at most ``mcse``, or ``max_boot`` resamples are drawn; the errors reached are returned either way.
    Each round at least doubles the count, to what the error's 1/sqrt(B) decay predicts for the target with
    20 % to spare (a multiple of ``n_boot``), so the count is a deterministic function of the inputs and seed.
    Resamples where the metric is NaN are dropped; all NaN (and n_boot as drawn) when fewer than 2 remain.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> correct = rng.random(300) < 0.5
        >>> u = rng.normal(size=300) - correct
        >>> r = bootstrap_interval(auroc, u, correct)
        >>> bool(r.lo < auroc(u, correct) < r.hi), r.n_boot >= 1000, max(r.lo_mcse, r.hi_mcse) <= 0.002
        (True, True, True)
    """
    b = _check_boot(metric, n_boot, alpha, seed, mcse, max_boot)
    u, c = _inputs(uncertainty, correct)
    return _adaptive(lambda rows: _resampled(metric, u, c, rows), u.size, b)


class PairedInterval(NamedTuple):
    """``delta = metric(a) - metric(b)`` and its paired percentile interval (see :func:`paired_interval`)."""

    delta: float
    lo: float
    hi: float
    lo_mcse: float
    hi_mcse: float
    n_boot: int


def paired_interval(
    metric: Metric,
    u_a: ArrayLike,
    u_b: ArrayLike,
    correct: ArrayLike,
    *,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
    mcse: float = MCSE_TARGET,
    max_boot: int = MAX_BOOT,
) -> PairedInterval:
    """Paired percentile interval of ``delta = metric(u_a) - metric(u_b)``, with :func:`bootstrap_interval`'s
    resample rule: each resample draws the m questions with replacement and evaluates *both* methods on it.

    Intervals only: no p-value (significance is DeLong's test, :func:`delong_test`). Everything but ``delta`` is
    NaN when ``delta`` is.

    Examples:
        >>> rng = np.random.default_rng(1)
        >>> correct = rng.random(400) < 0.5
        >>> good, poor = rng.normal(size=400) - correct, rng.normal(size=400) - 0.3 * correct
        >>> r = paired_interval(auroc, good, poor, correct)
        >>> bool(r.lo < r.delta < r.hi), max(r.lo_mcse, r.hi_mcse) <= 0.002
        (True, True)
    """
    b = _check_boot(metric, n_boot, alpha, seed, mcse, max_boot)
    ua, c = _inputs(u_a, correct, "u_a")
    ub = _scores(u_b, c, "u_b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        delta = float(metric(ua, c) - metric(ub, c))
    if math.isnan(delta):
        return PairedInterval(delta, math.nan, math.nan, math.nan, math.nan, 0)
    r = _adaptive(lambda rows: _resampled(metric, ua, c, rows) - _resampled(metric, ub, c, rows), c.size, b)
    return PairedInterval(delta, *r)
