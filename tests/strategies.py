"""Hypothesis strategies shared by the test-suite.

Every strategy draws the matrix entries themselves (never a seed), so a failing example shrinks to a
small, readable matrix. Some strategies aim at the boundaries where wrong bounds show up: two-group
splits (the worst case of the kernel's smallest eigenvalue, notebooks/psd.md) and near-singular matrices.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from shapley.theory.properties import corr_from_partials
from shapley.theory.worstcase import two_group_C


@st.composite
def correlation_matrices(draw, min_n: int = 1, max_n: int = 7):
    """Positive-definite correlation matrices from a drawn Gaussian factor model: S = X X^T + ridge I with
    the entries of the (n, k) loading matrix X and the ridge drawn directly (shrinks towards X = 0, R = I)."""
    n = draw(st.integers(min_n, max_n))
    k = draw(st.integers(1, n + 3))
    X = draw(arrays(np.float64, (n, k), elements=st.floats(-3.0, 3.0)))
    S = X @ X.T + draw(st.floats(0.05, 1.0)) * np.eye(n)
    d = np.sqrt(np.diag(S))
    R = S / np.outer(d, d)
    return (R + R.T) / 2


@st.composite
def vine_correlations(draw, min_n: int = 2, max_n: int = 7, max_partial: float = 0.95):
    """Positive-definite correlation matrices from drawn C-vine partial correlations in
    [-max_partial, max_partial] (any such values give a valid PD matrix; all zeros give the identity)."""
    n = draw(st.integers(min_n, max_n))
    m = n * (n - 1) // 2
    vals = draw(st.lists(st.floats(-max_partial, max_partial), min_size=m, max_size=m))
    P = np.zeros((n, n))
    P[np.triu_indices(n, 1)] = vals
    R = corr_from_partials(P)
    return (R + R.T) / 2


@st.composite
def entailment_matrices(draw, min_n: int = 1, max_n: int = 8, binary: bool = False):
    """(n, n) entailment probability matrices P in [0, 1] with unit diagonal."""
    n = draw(st.integers(min_n, max_n))
    if binary:
        P = draw(arrays(np.float64, (n, n), elements=st.sampled_from([0.0, 1.0])))
    else:
        P = draw(arrays(np.float64, (n, n), elements=st.floats(0.0, 1.0)))
    np.fill_diagonal(P, 1.0)
    return P


@st.composite
def near_worst_C(draw, min_n: int = 2, max_n: int = 12):
    """Symmetric C in [0, 1] aimed at the worst case of lambda_min(kernel): a two-group split (drawn sizes,
    possibly unbalanced) with C near 0 inside the groups and near 1 across, plus a drawn perturbation
    (half the time exactly the vertex). Permuted, so the groups are not always contiguous."""
    n = draw(st.integers(min_n, max_n))
    p = draw(st.integers(0, n // 2))
    C = two_group_C(p, n - p)
    if draw(st.booleans()):
        m = n * (n - 1) // 2
        eps = draw(st.lists(st.floats(0.0, 0.2), min_size=m, max_size=m))
        iu = np.triu_indices(n, 1)
        C[iu] = np.abs(C[iu] - np.asarray(eps))  # towards the middle of [0, 1]
        C[iu[1], iu[0]] = C[iu]
    perm = np.asarray(draw(st.permutations(list(range(n)))))
    return C[np.ix_(perm, perm)]
