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

Singularity, one rule for every function here. A PSD matrix R is singular when its smallest eigenvalue is at
most ``psd_tolerance(R) = 10 n eps_machine max|R|``, relative to R's scale (:func:`shapley.core.psd.is_singular`).
Then:

* :func:`gaussian_entropy` is ``-inf`` when R is singular; otherwise it is the log-det of the elimination below,
  the arithmetic that gives ``v(N)`` in :func:`subset_entropies`, so ``sum(phi) == h(R)`` up to the round-off
  of the Shapley weights (about 1e-12) whenever both are finite.
* :func:`subset_entropies`: ``v(N) = -inf`` when R is singular. The other
  subsets are decided by their elimination pivots (Schur complements, answers in index order): a pivot at or
  below the threshold makes every subset containing that prefix singular (``-inf``). The threshold is 0 when R
  is nonsingular (every principal submatrix is then positive definite, its eigenvalues at least
  ``lambda_min(R)``, so no subset is set to ``-inf``) and ``psd_tolerance(R)`` when R is singular.
* :func:`shapley_values` combines those subset entropies. So the values are finite exactly when ``h(R)`` is; for
  a singular R they are ``-inf`` or undefined (``ValueError``: some marginal is ``(-inf) - (-inf)``), never a
  finite sum next to ``h(R) = -inf``.

Size limit, checked before any O(n**3) work and named in the refusal: :data:`EXACT_MAX_N` (the Shapley values and
every computation over all 2**n subsets). :func:`gaussian_entropy` has none (:func:`_chain_logdet`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import validate
from shapley.core.kernel import correlation_matrix, kernel_matrix_checked
from shapley.core.psd import DEFAULT_EPS, PSD_POLICIES, ensure_psd_checked, psd_tolerance_checked, singularity_checked

HALF_LOG_2PIE = 0.5 * math.log(2.0 * math.pi * math.e)
"""Entropy (nats) of a standard normal variable: 0.5 ln(2 pi e) ~= 1.4189."""

EXACT_MAX_N = 22
"""Largest n for the Shapley values (memory grows as 2**n); the total (:func:`shapley_uncertainty`) has no limit."""


def _psd_settings(psd_policy: str, eps: float) -> tuple[str, float]:
    """The checked ``psd_policy`` and ``eps`` of this module's public functions."""
    return validate.choice(psd_policy, PSD_POLICIES, "psd_policy"), validate.open_fraction(eps, "eps")


def _psd(A: NDArray[np.float64], policy: str, eps: float) -> tuple[NDArray[np.float64], float | None]:
    """A made PSD under ``policy`` (:func:`~shapley.core.psd.ensure_psd`) and its lambda_min where already known."""
    out, report = ensure_psd_checked(A, policy, eps)
    return out, (report.min_eigenvalue if report.was_psd else None)


def _scaled(A: NDArray[np.float64], floor: float = 0.0) -> tuple[NDArray[np.float64], float, float]:
    """``(A / 2**k, floor / 2**k, k ln 2)`` with ``2**k`` just above ``max|A|``.

    Dividing by a power of two is exact, and it keeps the elimination clear of overflow and underflow.
    """
    k = math.frexp(float(np.max(np.abs(A))))[1]
    return np.ldexp(A, -k), math.ldexp(floor, -k), k * math.log(2.0)


def _chain_logdet(A: NDArray[np.float64], floor: float) -> float:
    """``ln det A`` by Schur complements in index order (one branch of :func:`_subset_entropies`).

    Beyond ``EXACT_MAX_N`` answers (no subset entropies to agree with) a nonsingular A is factored by LAPACK's
    Cholesky, the same pivots computed in one call: O(n**3 / 3) without n Python-level steps (n = 2000: well under
    a second instead of about 40 s).
    """
    M, floor, log_scale = _scaled(A, floor)
    if A.shape[0] > EXACT_MAX_N and floor == 0.0:
        try:
            L = np.linalg.cholesky(M)
        except np.linalg.LinAlgError:
            pass  # a pivot at or below 0: the elimination below finds it and returns -inf
        else:
            return float(np.sum(np.log(np.diagonal(L))) * 2.0 + A.shape[0] * log_scale)
    logdet = 0.0
    for _ in range(A.shape[0]):
        piv = M[0, 0]
        rest = M[1:, 1:]
        if not piv > floor:
            return -math.inf
        col = M[1:, 0]
        M = rest - col[:, None] * (col[None, :] / piv)
        logdet = logdet + (float(np.log(piv)) + log_scale)
    return logdet


def gaussian_entropy(R: ArrayLike, *, psd_policy: str = "raise", eps: float = DEFAULT_EPS) -> float:
    """Differential entropy of N(0, R) in nats: ``n/2 ln(2 pi e) + 1/2 ln det R``.

    Args:
        R: (n, n) symmetric covariance (for the paper, the kernel matrix), n >= 1.
        psd_policy, eps: non-PSD handling (:mod:`shapley.core.psd`; default raises), ``0 < eps < 1``.

    Returns:
        The entropy; ``-inf`` for a singular PSD R (smallest eigenvalue at most
        :func:`shapley.core.psd.psd_tolerance`, relative to R's scale: the module's rule), never NaN.

    Examples:
        >>> round(gaussian_entropy(np.eye(2)), 6)  # two independent standard normals: 2 * 0.5 ln(2 pi e)
        2.837877
        >>> round(gaussian_entropy([[1.0, 0.5], [0.5, 1.0]]), 6)  # correlation lowers it by -0.5 ln(1 - 0.25)
        2.694036
        >>> gaussian_entropy([[1.0, 1.0], [1.0, 1.0]])  # an answer duplicated: singular
        -inf
    """
    return _gaussian_entropy(validate.symmetric_matrix(R, "R"), *_psd_settings(psd_policy, eps))


def _gaussian_entropy(A: NDArray[np.float64], policy: str, eps: float) -> float:
    """:func:`gaussian_entropy` of checked arguments.

    Beyond ``EXACT_MAX_N`` a Cholesky factor of ``A - 2 psd_tolerance(A) I`` shows that A is PSD and not singular
    under the module's rule, with a margin of one tolerance for the factor's round-off; that replaces the
    eigenvalue decomposition (several times slower), and undecided matrices take the general path.
    """
    n = A.shape[0]
    if n > EXACT_MAX_N:
        M, shift, _ = _scaled(A, 2.0 * psd_tolerance_checked(A))
        try:
            np.linalg.cholesky(M - shift * np.eye(n))
        except np.linalg.LinAlgError:
            pass
        else:
            return float(n * HALF_LOG_2PIE + 0.5 * _chain_logdet(A, 0.0))
    A, lam = _psd(A, policy, eps)
    singular, floor = singularity_checked(A, lam)
    if singular:
        return -math.inf
    return float(n * HALF_LOG_2PIE + 0.5 * _chain_logdet(A, floor))


def _check_exact_size(n: int, what: str) -> None:
    """Refuse, before any O(n**3) work, an n beyond :data:`EXACT_MAX_N` for a computation over all 2**n subsets."""
    if n > EXACT_MAX_N:
        raise ValueError(
            f"{what} need all 2**n subsets; n = {n} > EXACT_MAX_N = {EXACT_MAX_N} is too large (memory and time "
            "grow as 2**n). The total needs no subsets: shapley_uncertainty and gaussian_entropy take any n."
        )


def _subset_entropies(A: NDArray[np.float64], lam: float | None) -> NDArray[np.float64]:
    """:func:`subset_entropies` of a checked PSD A whose lambda_min is ``lam`` where already known: ``ln det A_S``
    of every subset by the recursive Schur complement (module docstring), ``ln det A_empty = 0``, singular minors
    ``-inf`` by the module's rule (``A_N`` exactly when :func:`shapley.core.psd.is_singular`, the others by their
    pivots), then the entropies."""
    singular, floor = singularity_checked(A, lam)
    scaled, floor, log_scale = _scaled(A, floor)
    stack = scaled[None, :, :].copy()
    logdet = np.zeros(1)
    for _ in range(A.shape[0]):
        piv = stack[:, 0, 0]
        rest = stack[:, 1:, 1:]
        col = stack[:, 1:, 0]
        ok = piv > floor
        safe = np.where(ok, piv, 1.0)
        schur = rest - col[:, :, None] * (col[:, None, :] / safe[:, None, None])
        if not ok.all():
            # A pivot at the threshold: every minor containing this prefix is singular (-inf); its branch is
            # not eliminated further (dividing by a round-off-sized pivot would only blow up the rest).
            schur[~ok] = rest[~ok]
        logpiv = np.where(ok, np.log(safe) + log_scale, -np.inf)
        stack = np.concatenate([rest, schur], axis=0)
        logdet = np.concatenate([logdet, logdet + logpiv])
    if singular:
        logdet[-1] = -np.inf
    n = A.shape[0]
    return _popcount(np.arange(2**n, dtype=np.int64), n) * HALF_LOG_2PIE + 0.5 * logdet


def _popcount(masks: NDArray[np.int64], n: int) -> NDArray[np.int64]:
    pc = np.zeros_like(masks)
    for j in range(n):
        pc += (masks >> j) & 1
    return pc


def subset_entropies(R: ArrayLike, *, psd_policy: str = "raise", eps: float = DEFAULT_EPS) -> NDArray[np.float64]:
    """``h(N(0, R_S))`` in nats for all ``2**n`` subsets S, indexed by bitmask (bit j set iff answer j is in S).

    Entry 0 (the empty set) is 0; singular subsets give ``-inf`` (the module's rule).

    Raises:
        ValueError: bad R or ``eps``, non-PSD R under ``psd_policy="raise"``, or n > ``EXACT_MAX_N``.

    Examples:
        >>> np.round(subset_entropies(np.eye(2)), 4).tolist()  # {}, {0}, {1}, {0, 1}
        [0.0, 1.4189, 1.4189, 2.8379]
        >>> np.round(subset_entropies([[1.0, 1.0], [1.0, 1.0]]), 4).tolist()  # a duplicated answer: singular
        [0.0, 1.4189, 1.4189, -inf]
    """
    A = validate.symmetric_matrix(R, "R")
    _check_exact_size(A.shape[0], "exact subset entropies")
    A, lam = _psd(A, *_psd_settings(psd_policy, eps))
    return _subset_entropies(A, lam)


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
        >>> game_shapley_values([0.0, 1.0, 1.0, 3.0]).tolist()  # a symmetric two-player game shares v(N) equally
        [1.5, 1.5]
        >>> game_shapley_values([0.0, 1.0, 0.0, 1.0]).tolist()  # player 1 adds nothing
        [1.0, 0.0]
    """
    vals = validate.real_array(v, "v", "a 1-D array of 2**n real coalition worths")
    n = int(vals.size).bit_length() - 1
    if vals.ndim != 1 or n < 1 or vals.size != 2**n:
        raise ValueError(f"v must be a 1-D array of 2**n coalition worths (n >= 1); got shape {vals.shape}")
    if np.isnan(vals).any() or (vals == np.inf).any():
        raise ValueError("v must hold real worths or -inf (a singular sub-game); got NaN or +inf")
    if n > EXACT_MAX_N:
        raise ValueError(
            f"v describes n = {n} players; exact Shapley values are limited to n <= EXACT_MAX_N = {EXACT_MAX_N}"
        )
    return _shapley_from_values(vals, n)


_UNDEFINED = (
    "R is singular in a way that makes some marginal entropies (-inf) - (-inf): the Shapley "
    "values are undefined. Handle the rho -> 1 limit explicitly, or lift R's eigenvalues to a "
    "positive floor first (shapley.core.psd.nearest_correlation(R, eps))."
)


def _shapley_from_values(v: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    masks = np.arange(2**n, dtype=np.int64)
    weights = np.array([1.0 / (n * math.comb(n - 1, s)) for s in range(n)])  # s! (n - s - 1)! / n!, |S| = s
    w = weights[_popcount(masks, n).clip(max=n - 1)]  # the weight of each coalition S not containing i
    phi = np.empty(n)
    for i in range(n):
        without = masks[((masks >> i) & 1) == 0]
        with np.errstate(invalid="ignore"):
            diff = v[without | (1 << i)] - v[without]
        if np.isnan(diff).any():
            raise ValueError(_UNDEFINED)
        phi[i] = float(np.sum(w[without] * diff))
    return phi


def shapley_values(R: ArrayLike, *, psd_policy: str = "raise", eps: float = DEFAULT_EPS) -> NDArray[np.float64]:
    """Per-answer Shapley values (nats) of the game ``v(S) = h(N(0, R_S))``, ``v(empty) = 0``.

    Args:
        R: (n, n) symmetric PSD matrix (the kernel matrix), n <= ``EXACT_MAX_N``.
        psd_policy, eps: non-PSD handling (:mod:`shapley.core.psd`), ``0 < eps < 1``.

    Returns:
        (n,) array ``phi`` with ``phi.sum() == gaussian_entropy(R)`` (efficiency) up to round-off whenever
        the entropy is finite; for a singular R, ``-inf`` entries or a ``ValueError`` (the module's rule).

    Raises:
        ValueError: bad input, n above ``EXACT_MAX_N``, undefined values.

    Examples:
        >>> R = [[1.0, 0.5], [0.5, 1.0]]
        >>> phi = shapley_values(R)  # two exchangeable answers share h(R) equally
        >>> np.round(phi, 6).tolist(), round(float(phi.sum()) - gaussian_entropy(R), 12)
        ([1.347018, 1.347018], 0.0)
    """
    A = validate.symmetric_matrix(R, "R")
    policy, e = _psd_settings(psd_policy, eps)
    _check_exact_size(A.shape[0], "exact Shapley values")
    A, lam = _psd(A, policy, e)
    return _shapley_from_values(_subset_entropies(A, lam), A.shape[0])


def shapley_uncertainty(
    P: ArrayLike, beta: float = 0.5, *, psd_policy: str = "raise", eps: float = DEFAULT_EPS
) -> float:
    """The paper's total Shapley uncertainty (nats) from entailment probabilities.

    ``sum_i phi_i`` equals ``h(N(0, R))`` by efficiency, so this is one log-det:
    ``gaussian_entropy(kernel_matrix(correlation_matrix(P), beta))``.

    Args:
        P: (n, n) array, ``P[i, j] = P(s_i => s_j | x)`` in [0, 1].
        beta: kernel scale in (0, 1].

    Examples:
        >>> P = [[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [0.5, 0.5, 1.0]]  # the paper's Mozart matrix (Table 1)
        >>> round(shapley_uncertainty(P, 0.5), 4)
        3.9627
    """
    R = kernel_matrix_checked(correlation_matrix(P), validate.beta_value(beta))  # checks P once; R is valid
    return _gaussian_entropy(R, *_psd_settings(psd_policy, eps))
