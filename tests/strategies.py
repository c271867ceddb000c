"""Hypothesis strategies shared by the test-suite."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays


@st.composite
def correlation_matrices(draw, min_n: int = 1, max_n: int = 7):
    """Random positive-definite correlation matrices, from a seeded Gaussian factor model."""
    n = draw(st.integers(min_n, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    k = draw(st.integers(1, n + 3))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k)) * rng.uniform(0.2, 2.0, size=(n, 1))
    S = X @ X.T + draw(st.floats(0.05, 1.0)) * np.eye(n)
    d = np.sqrt(np.diag(S))
    R = S / np.outer(d, d)
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
