"""From entailment probabilities to the kernel matrix R (eqs. 4-5 of the paper).

``P[i, j]`` is the NLI probability that answer i entails answer j. The paper symmetrises it to
``C = (P + P.T) / 2`` and applies a scaled Gaussian kernel to the distance ``1 - C``::

    R[i, i] = 1,    R[i, j] = beta * exp(-(1 - C[i, j])**2 / 2)   (i != j)

R plays the role of a correlation matrix (:mod:`shapley.core.psd` on whether it is one).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import validate


def correlation_matrix(P: ArrayLike) -> NDArray[np.float64]:
    """Symmetrised entailment ``C = (P + P.T) / 2`` (paper eq. 4).

    Args:
        P: (n, n) array, ``P[i, j] = P(s_i => s_j | x)`` in [0, 1].

    Returns:
        (n, n) symmetric array with entries in [0, 1].

    Examples:
        >>> correlation_matrix([[1.0, 0.2], [0.6, 1.0]]).tolist()
        [[1.0, 0.4], [0.4, 1.0]]
    """
    A = validate.probability_matrix(P, "P")
    return (A + A.T) / 2.0


def kernel_matrix(C: ArrayLike, beta: float = 0.5) -> NDArray[np.float64]:
    """Kernel matrix R of paper eq. 5 (Gaussian kernel on ``1 - C``, scaled by ``beta``).

    Args:
        C: (n, n) symmetric array with entries in [0, 1] (the output of :func:`correlation_matrix`).
        beta: scale of the off-diagonal entries, in (0, 1]; the paper's default is 0.5.

    Returns:
        (n, n) symmetric array with unit diagonal and off-diagonal entries in
        ``[beta * exp(-1/2), beta]``. It is *not* guaranteed to be PSD: see :mod:`shapley.core.psd`.

    Examples:
        >>> R = kernel_matrix([[1.0, 0.4], [0.4, 1.0]], beta=0.5)  # 0.5 * exp(-0.6**2 / 2)
        >>> np.round(R, 4).tolist()
        [[1.0, 0.4176], [0.4176, 1.0]]
        >>> kernel_matrix([[1.0, 1.0], [1.0, 1.0]], beta=0.5).tolist()  # full entailment: beta
        [[1.0, 0.5], [0.5, 1.0]]
    """
    return kernel_matrix_checked(validate.similarity_matrix(C, "C"), validate.beta_value(beta))


def kernel_matrix_checked(A: NDArray[np.float64], b: float) -> NDArray[np.float64]:
    """:func:`kernel_matrix` of a checked C (symmetric (n, n) float array, entries in [0, 1]) and beta (no checks)."""
    R = b * np.exp(-((1.0 - A) ** 2) / 2.0)
    np.fill_diagonal(R, 1.0)
    return R
