"""How large can beta be? Worst-case positive semi-definiteness of the kernel matrix R.

Notation. ``C`` is a symmetric (n, n) matrix with entries in [0, 1] (symmetrised entailment), ``K`` the
beta = 1 kernel matrix (unit diagonal, ``K[i, j] = exp(-(1 - C[i, j])**2 / 2)`` in ``[A, 1]`` with
``A = exp(-1/2)``), and ``R_beta = I + beta (K - I)`` the matrix the paper uses. Because R_beta and K share
eigenvectors, ``lambda_min(R_beta) = 1 + beta (lambda_min(K) - 1)``, so the largest beta that keeps R_beta
PSD for *every* C of size n is::

    beta*(n) = min(1, 1 / (1 - m(n))),   m(n) = min over C of lambda_min(K).

Main result (proved in ``notebooks/psd.md``; checked here by exhaustive search): ``m(n)`` is attained when
the answers split into two groups, C = 0 inside each group and C = 1 across groups, with group sizes as
equal as possible, which gives the closed form :func:`min_kernel_eigenvalue`::

    m(n) = 1 - A + A n / 2 - sqrt(n**2 - (1 - A**2) (n mod 2)) / 2.

The module offers the closed form, two exact numerical checks of it (all vertices, all two-group
partitions), the worst-case witness for a given beta (:func:`beta_caveat`) and the illustrative matrix of the
paper's Figure 3. numpy in, numpy out; it imports only numpy, scipy and :mod:`shapley.core`. The sympy
derivations live in :mod:`shapley.theory.symbolic` (``theory`` extra).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import validate
from shapley.core.kernel import kernel_matrix
from shapley.core.psd import min_eigenvalue

A_FLOOR = math.exp(-0.5)
"""Smallest off-diagonal entry of the beta = 1 kernel, reached at C = 0: exp(-1/2) ~= 0.6065."""

EXHAUSTIVE_MAX_N = 7
"""Largest n for :func:`exhaustive_vertex_search` (7 needs 7 * 2**15 eigenvalue problems, about a second)."""


# ---------------------------------------------------------------------------------------------------
# Closed form and its building blocks
# ---------------------------------------------------------------------------------------------------


def _split_C(side: NDArray[Any], within: float = 0.0, across: float = 1.0) -> NDArray[np.float64]:
    """C = ``within`` between answers on the same side of the split ``side`` (n,), ``across`` between sides."""
    C = np.where(side[:, None] == side[None, :], within, across)
    np.fill_diagonal(C, 1.0)
    return C


def two_group_C(p: int, q: int, within: float = 0.0, across: float = 1.0) -> NDArray[np.float64]:
    """The worst-case pattern: answers 0..p-1 form group 1, p..p+q-1 group 2.

    ``C = 0`` between two answers of the same group, ``C = 1`` between groups (diagonal 1). In words:
    every answer of one group is judged equivalent to every answer of the other group, while answers of
    the same group are judged unrelated, an entailment pattern that no consistent notion of meaning
    produces but that an NLI model is free to output. Other ``within`` and ``across`` values give the
    two-group splits that :func:`shapley.theory.search.sentence_families` checks.

    Returns:
        (p + q, p + q) matrix.
    """
    return _split_C(np.r_[np.zeros(p), np.ones(q)], within, across)


def min_kernel_eigenvalue(n: int) -> float:
    """m(n): the smallest eigenvalue any beta = 1 kernel matrix of size n can have (exact, closed form).

    ``1 - a + a n / 2 - sqrt(n**2 - (1 - a**2) (n mod 2)) / 2`` with ``a =`` :data:`A_FLOOR`; it equals
    ``(1 - a)(1 - n/2)`` for even n. For n = 1 it is 1 (a single answer). It is lambda_min of the kernel of the
    balanced :func:`two_group_C` ``(p, q)``: inside a group the kernel is ``(1 - a) I + a J`` and across groups it
    is all ones, so on vectors that sum to zero inside each group it acts as ``(1 - a) I``, and on the span of the
    two group indicators as the 2x2 matrix ``[[1 - a + a p, sqrt(pq)], [sqrt(pq), 1 - a + a q]]``.
    """
    a = A_FLOOR
    if n == 1:
        return 1.0
    p, q = n // 2, n - n // 2
    lam2 = (1 - a) + a * (p + q) / 2 - 0.5 * math.sqrt(a**2 * (p - q) ** 2 + 4 * p * q)
    return float(min(lam2, 1 - a)) if max(p, q) > 1 else float(lam2)


def beta_star(n: int) -> float:
    """Largest beta in (0, 1] such that R_beta is PSD for every symmetric C in [0, 1]^(n x n) (exact)."""
    m = min_kernel_eigenvalue(n)
    return 1.0 if m >= 0 else 1.0 / (1.0 - m)


def smallest_failing_n(beta: float) -> int | None:
    """Smallest n at which some C makes R_beta non-PSD (from the closed form); None if none up to n = 10,000."""
    for n in range(1, 10_001):
        if beta_star(n) < beta:
            return n
    return None


# ---------------------------------------------------------------------------------------------------
# Numerical checks of the closed form
# ---------------------------------------------------------------------------------------------------


def _batch(n: int, upper: NDArray[np.float64]) -> NDArray[np.float64]:
    """(m, n, n) symmetric matrices with unit diagonal whose strict upper triangles are the rows of ``upper``."""
    iu = np.triu_indices(n, 1)
    M = np.zeros((upper.shape[0], n, n))
    M[:, iu[0], iu[1]] = upper
    M[:, iu[1], iu[0]] = upper
    M[:, np.arange(n), np.arange(n)] = 1.0
    return M


def symmetric_from_upper(n: int, values: ArrayLike) -> NDArray[np.float64]:
    """Symmetric (n, n) matrix with unit diagonal whose strict upper triangle, row by row, is ``values``.

    Examples:
        >>> symmetric_from_upper(3, [0.1, 0.2, 0.3])
        array([[1. , 0.1, 0.2],
               [0.1, 1. , 0.3],
               [0.2, 0.3, 1. ]])
    """
    return _batch(n, np.asarray(values, dtype=np.float64)[None, :])[0]


def _vertex_min_eigenvalues(n: int, bits: NDArray[np.int64]) -> NDArray[np.floating[Any]]:
    """lambda_min(K) of each vertex matrix of size n whose upper triangle is a row of the 0/1 ``bits`` (m, n(n-1)/2)."""
    return np.linalg.eigvalsh(_batch(n, np.where(bits == 1, 1.0, A_FLOOR)))[:, 0]


def exhaustive_vertex_search(n: int) -> float:
    """Minimum of lambda_min(K) over ALL vertex matrices of size n (exact, n <= ``EXHAUSTIVE_MAX_N``).

    Relabelling the answers does not change eigenvalues, so the answers linked to answer 0 by C = 1 can be
    taken to be 1..d for some d in 0..n-1: this checks ``n * 2**((n-1)(n-2)/2)`` matrices instead of
    ``2**(n(n-1)/2)`` and still covers every vertex up to relabelling.
    """
    n = validate.integer(n, "n", minimum=1, maximum=EXHAUSTIVE_MAX_N)
    m_rest, chunk = (n - 1) * (n - 2) // 2, 1 << 15
    best = math.inf
    for d in range(n):
        first = np.r_[np.ones(d, dtype=np.int64), np.zeros(n - 1 - d, dtype=np.int64)]
        for start in range(0, 2**m_rest, chunk):
            idx = np.arange(start, min(2**m_rest, start + chunk), dtype=np.int64)
            rest = (idx[:, None] >> np.arange(m_rest)) & 1
            bits = np.concatenate([np.broadcast_to(first, (idx.size, n - 1)), rest], axis=1)
            best = min(best, float(_vertex_min_eigenvalues(n, bits).min()))
    return best


def partition_search(n: int) -> float:
    """Minimum of lambda_min(K) over all two-group patterns (every split of the n answers; exact by the
    sign-pattern argument of the notebook). Checks ``2**(n-1)`` splits."""
    splits = (_split_C((mask >> np.arange(n)) & 1) for mask in range(2 ** (n - 1)))
    return float(min(min_eigenvalue(kernel_matrix(C, 1.0)) for C in splits))


def beta_caveat(beta: float = 0.5) -> dict[str, Any]:
    """The worst-case caveat to a fixed beta: the smallest n at which some entailment matrix makes R_beta
    indefinite (the balanced two-group pattern of that size does) and the exact threshold there.

    Returns:
        dict with ``n_fail`` (None if beta <= beta*(n) for every n tried) and ``beta_star_at`` (beta*(n_fail)).

    Examples:
        >>> c = beta_caveat(0.5)
        >>> c["n_fail"], c["beta_star_at"] < 0.5
        (8, True)
    """
    n_fail = smallest_failing_n(beta)
    return {"n_fail": n_fail, "beta_star_at": None if n_fail is None else beta_star(n_fail)}


# ---------------------------------------------------------------------------------------------------
# The paper's Figure 3 (its quadratic forms are drawn by shapley.companion.theory_plots)
# ---------------------------------------------------------------------------------------------------


def illustrative_entailment() -> NDArray[np.float64]:
    """A hand-made 3x3 entailment matrix P of the kind an NLI model can output (NOT measured data).

    Answers to "Where is the Eiffel Tower?": s1 = "Paris", s2 = "Paris, France", s3 = "France". The
    model judges s1 and s2 equivalent, s2 and s3 largely equivalent, but s1 and s3 unrelated, a
    non-transitive judgement. Its symmetrisation C is indefinite.
    """
    return np.array([[1.0, 0.97, 0.05], [0.95, 1.0, 0.92], [0.03, 0.90, 1.0]])
