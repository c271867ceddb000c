"""Gaussian differential entropy of R and its Shapley decomposition over the answers (paper eq. 6-8).

The game: the players are the n answers, and a coalition S is worth ``v(S) = h(N(0, R_S))``, the
differential entropy (nats) of the Gaussian whose covariance is the principal submatrix ``R_S``,
with ``v(empty) = 0``. The Shapley value of answer i is its weighted average marginal contribution.

Efficiency (a defining axiom of the Shapley value) gives ``sum_i phi_i = v(N) - v(empty) = h(N(0, R))``,
so the paper's total needs one log-det: :func:`shapley_uncertainty`. The per-answer values need every
subset's entropy; :func:`subset_entropies` computes all ``2**n`` of them with the recursive Schur
complement ("all principal minors") algorithm: pivoting on answer 0 splits the subsets into those
without it (minors of ``R[1:, 1:]``) and those with it (``R[0, 0]`` times minors of the Schur
complement). Level by level this is vectorised in numpy and costs O(2**n) arithmetic in total.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core.kernel import correlation_matrix, kernel_matrix
from shapley.core.psd import DEFAULT_EPS, ensure_psd, psd_tolerance

HALF_LOG_2PIE = 0.5 * math.log(2.0 * math.pi * math.e)
"""Entropy (nats) of a standard normal variable: 0.5 ln(2 pi e) ~= 1.4189."""

EXACT_MAX_N = 22
"""Largest n for ``method="exact"`` (memory grows as 2**n); use ``"monte_carlo"`` beyond."""

_PIVOT_FLOOR = 1e-13

Method = Literal["exact", "naive", "monte_carlo"]


def gaussian_entropy(R: ArrayLike, *, psd_policy: str = "raise", eps: float = DEFAULT_EPS) -> float:
    """Differential entropy of N(0, R) in nats: ``n/2 ln(2 pi e) + 1/2 ln det R``.

    Args:
        R: (n, n) symmetric covariance (for the paper, the kernel matrix), n >= 1.
        psd_policy: what to do if R is not PSD (see :mod:`shapley.core.psd`); default raises.
        eps: eigenvalue floor for the repairing policies.

    Returns:
        The entropy; ``-inf`` for a singular PSD R (a degenerate Gaussian: smallest eigenvalue at or
        below the round-off tolerance :func:`shapley.core.psd.psd_tolerance`), never NaN.
    """
    A, report = ensure_psd(R, psd_policy, eps)
    n = A.shape[0]
    # Singular to working precision: slogdet's sign is round-off there, so decide on the eigenvalue.
    if not report.repaired and report.min_eigenvalue <= psd_tolerance(A):
        return -math.inf
    sign, logdet = np.linalg.slogdet(A)
    if sign <= 0:
        return -math.inf
    return float(n * HALF_LOG_2PIE + 0.5 * logdet)


def log_principal_minors(R: ArrayLike) -> NDArray[np.float64]:
    """``ln det R_S`` for every subset S, indexed by bitmask (bit j set iff answer j is in S).

    R must be PSD (validated by the callers); ``ln det R_empty = 0``, and singular minors give -inf.

    Returns:
        (2**n,) array.
    """
    A = np.asarray(R, dtype=np.float64)
    stack = A[None, :, :].copy()
    logdet = np.zeros(1)
    for _ in range(A.shape[0]):
        piv = stack[:, 0, 0]
        rest = stack[:, 1:, 1:]
        col = stack[:, 1:, 0]
        ok = piv > _PIVOT_FLOOR
        safe = np.where(ok, piv, 1.0)
        schur = rest - col[:, :, None] * col[:, None, :] / safe[:, None, None]
        if not ok.all():
            # Zero pivot of a PSD matrix: its row is zero, every minor containing it is 0 (-inf log).
            schur[~ok] = rest[~ok]
        logpiv = np.where(ok, np.log(safe), -np.inf)
        stack = np.concatenate([rest, schur], axis=0)
        logdet = np.concatenate([logdet, logdet + logpiv])
    return logdet


def _popcount(masks: NDArray[np.int64], n: int) -> NDArray[np.int64]:
    pc = np.zeros_like(masks)
    for j in range(n):
        pc += (masks >> j) & 1
    return pc


def subset_entropies(R: ArrayLike, *, psd_policy: str = "raise", eps: float = DEFAULT_EPS) -> NDArray[np.float64]:
    """``h(N(0, R_S))`` in nats for all ``2**n`` subsets S, indexed by bitmask; entry 0 (empty set) is 0.

    Raises:
        ValueError: bad R, non-PSD R under ``psd_policy="raise"``, or n > ``EXACT_MAX_N``.
    """
    A, _ = ensure_psd(R, psd_policy, eps)
    n = A.shape[0]
    if n > EXACT_MAX_N:
        raise ValueError(
            f"exact subset entropies need 2**n values; n = {n} > {EXACT_MAX_N} is too large. "
            "Use shapley_values(R, method='monte_carlo') instead."
        )
    masks = np.arange(2**n, dtype=np.int64)
    return _popcount(masks, n) * HALF_LOG_2PIE + 0.5 * log_principal_minors(A)


def _shapley_weights(n: int) -> NDArray[np.float64]:
    """w[s] = s! (n - s - 1)! / n! for a coalition of size s not containing the player."""
    return np.array([1.0 / (n * math.comb(n - 1, s)) for s in range(n)])


def game_shapley_values(v: ArrayLike) -> NDArray[np.float64]:
    """Exact Shapley values of any cooperative game given by its worth on every coalition.

    Args:
        v: (2**n,) worth of each coalition, indexed by bitmask (bit j set iff player j is in it); ``v[0]``
            is the empty coalition's worth. Entries may be ``-inf`` (a singular Gaussian sub-game).

    Returns:
        (n,) Shapley values ``phi_i = sum_S |S|! (n-|S|-1)! / n! (v(S + i) - v(S))``; their sum is
        ``v[-1] - v[0]`` (efficiency).

    Raises:
        ValueError: ``v`` is not of length ``2**n`` for some n >= 1, or a marginal is ``(-inf) - (-inf)``.

    Examples:
        >>> game_shapley_values([0.0, 1.0, 1.0, 3.0])  # a symmetric two-player game shares v(N) equally
        array([1.5, 1.5])
        >>> game_shapley_values([0.0, 1.0, 0.0, 1.0])  # player 1 adds nothing
        array([1., 0.])
    """
    vals = np.asarray(v, dtype=np.float64)
    n = int(vals.size).bit_length() - 1
    if vals.ndim != 1 or n < 1 or vals.size != 2**n:
        raise ValueError(f"v must be a 1-D array of 2**n coalition worths (n >= 1); got shape {vals.shape}")
    return _shapley_from_values(vals, n)


def _shapley_from_values(v: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    masks = np.arange(2**n, dtype=np.int64)
    w = _shapley_weights(n)[_popcount(masks, n).clip(max=n - 1)]
    phi = np.empty(n)
    for i in range(n):
        without = masks[((masks >> i) & 1) == 0]
        with np.errstate(invalid="ignore"):
            diff = v[without | (1 << i)] - v[without]
        if np.isnan(diff).any():
            raise ValueError(
                "R is singular in a way that makes some marginal entropies (-inf) - (-inf): the Shapley "
                "values are undefined. Handle the rho -> 1 limit explicitly, or repair R with a "
                "positive eigenvalue floor (psd_policy='clip', eps > 0)."
            )
        phi[i] = float(np.sum(w[without] * diff))
    return phi


def _entropy_of_subset(A: NDArray[np.float64], idx: tuple[int, ...]) -> float:
    if not idx:
        return 0.0
    sign, logdet = np.linalg.slogdet(A[np.ix_(idx, idx)])
    return -math.inf if sign <= 0 else len(idx) * HALF_LOG_2PIE + 0.5 * float(logdet)


def _shapley_naive(A: NDArray[np.float64]) -> NDArray[np.float64]:
    """The literal formula (eq. 7): two log-dets per (player, coalition). Reference only; O(n 2**n n**3)."""
    n = A.shape[0]
    phi = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for size in range(n):
            weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n)
            for X in combinations(others, size):
                phi[i] += weight * (_entropy_of_subset(A, tuple(sorted(X + (i,)))) - _entropy_of_subset(A, X))
    return phi


def shapley_values_mc(
    R: ArrayLike,
    *,
    n_permutations: int = 2000,
    seed: int | None = 0,
    psd_policy: str = "raise",
    eps: float = DEFAULT_EPS,
    chunk: int = 1024,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Monte-Carlo Shapley values by permutation sampling, with standard errors.

    For each random order, one Cholesky factor of the permuted R gives every prefix's log-det at once:
    the marginal contribution of the k-th answer is ``0.5 ln(2 pi e) + ln L[k, k]``. Each sampled order's
    contributions sum exactly to ``h(N(0, R))``, so efficiency holds for the estimate too.

    Returns:
        (phi, stderr), both (n,) in nats. ``stderr`` is the standard error of the mean over orders.

    Raises:
        ValueError: bad input, ``n_permutations < 2``, or a singular R (Cholesky needs R > 0).
    """
    if int(n_permutations) != n_permutations or n_permutations < 2:
        raise ValueError(f"n_permutations must be an integer >= 2; got {n_permutations!r}")
    A, _ = ensure_psd(R, psd_policy, eps)
    n = A.shape[0]
    rng = np.random.default_rng(seed)
    total = np.zeros(n)
    total_sq = np.zeros(n)
    done = 0
    while done < n_permutations:
        m = min(chunk, n_permutations - done)
        perms = np.argsort(rng.random((m, n)), axis=1)
        stack = A[perms[:, :, None], perms[:, None, :]]
        try:
            L = np.linalg.cholesky(stack)
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                "monte_carlo Shapley values need a positive definite R (this one is singular); "
                "use method='exact' or repair R with an eigenvalue floor"
            ) from exc
        marg = HALF_LOG_2PIE + np.log(np.diagonal(L, axis1=1, axis2=2))
        contrib = np.empty_like(marg)
        np.put_along_axis(contrib, perms, marg, axis=1)
        total += contrib.sum(axis=0)
        total_sq += (contrib**2).sum(axis=0)
        done += m
    mean = total / done
    var = np.maximum(total_sq / done - mean**2, 0.0) * done / (done - 1)
    return mean, np.sqrt(var / done)


def shapley_values(
    R: ArrayLike,
    method: Method = "exact",
    *,
    n_permutations: int = 2000,
    seed: int | None = 0,
    psd_policy: str = "raise",
    eps: float = DEFAULT_EPS,
) -> NDArray[np.float64]:
    """Per-answer Shapley values (nats) of the game ``v(S) = h(N(0, R_S))``, ``v(empty) = 0``.

    Args:
        R: (n, n) symmetric PSD matrix (the kernel matrix).
        method: ``"exact"`` (all subset entropies once, then combine; n <= ``EXACT_MAX_N``),
            ``"naive"`` (the literal formula; test reference, small n only) or ``"monte_carlo"``
            (permutation sampling; for the standard error call :func:`shapley_values_mc`).
        n_permutations, seed: Monte-Carlo settings.
        psd_policy, eps: non-PSD handling (:mod:`shapley.core.psd`).

    Returns:
        (n,) array ``phi`` with ``phi.sum() == gaussian_entropy(R)`` (efficiency) up to round-off.
        Entries can be ``-inf`` when R is singular (an answer duplicated exactly).
    """
    if method == "exact":
        A, _ = ensure_psd(R, psd_policy, eps)
        return _shapley_from_values(subset_entropies(A), A.shape[0])
    if method == "naive":
        A, _ = ensure_psd(R, psd_policy, eps)
        return _shapley_naive(A)
    if method == "monte_carlo":
        return shapley_values_mc(R, n_permutations=n_permutations, seed=seed, psd_policy=psd_policy, eps=eps)[0]
    raise ValueError(f"method must be 'exact', 'naive' or 'monte_carlo'; got {method!r}")


def shapley_uncertainty(
    P: ArrayLike, beta: float = 0.5, *, psd_policy: str = "raise", eps: float = DEFAULT_EPS
) -> float:
    """The paper's total Shapley uncertainty (nats) from entailment probabilities.

    ``sum_i phi_i`` equals ``h(N(0, R))`` by efficiency, so this is one log-det:
    ``gaussian_entropy(kernel_matrix(correlation_matrix(P), beta))``.

    Args:
        P: (n, n) array, ``P[i, j] = P(s_i => s_j | x)`` in [0, 1].
        beta: kernel scale in (0, 1].
    """
    R = kernel_matrix(correlation_matrix(P), beta)
    return gaussian_entropy(R, psd_policy=psd_policy, eps=eps)
