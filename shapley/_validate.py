"""Input validation shared by the maths core. Every failure is a ``ValueError`` that names the problem."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

SYMMETRY_TOL = 1e-10


def square_matrix(M: ArrayLike, name: str) -> NDArray[np.float64]:
    """Return ``M`` as a finite float (n, n) array with n >= 1, or raise ``ValueError``."""
    try:
        A = np.asarray(M, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric (n, n) array: {exc}") from exc
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n, n); got an array with {A.ndim} dimension(s), shape {A.shape}")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be square; got shape {A.shape}")
    if A.shape[0] == 0:
        raise ValueError(f"{name} is empty (n = 0): at least one answer is needed")
    if not np.all(np.isfinite(A)):
        bad = np.argwhere(~np.isfinite(A))[0]
        raise ValueError(f"{name} contains NaN or inf (first at index {tuple(int(i) for i in bad)})")
    return A


def probability_matrix(M: ArrayLike, name: str) -> NDArray[np.float64]:
    """Square matrix whose entries are probabilities in [0, 1]."""
    A = square_matrix(M, name)
    if A.min() < 0.0 or A.max() > 1.0:
        raise ValueError(
            f"{name} must hold probabilities in [0, 1]; got values in [{A.min():.4g}, {A.max():.4g}]"
        )
    return A


def symmetric_matrix(M: ArrayLike, name: str, tol: float = SYMMETRY_TOL) -> NDArray[np.float64]:
    """Square matrix that is symmetric to within ``tol`` (absolute); returned exactly symmetrised."""
    A = square_matrix(M, name)
    asym = float(np.max(np.abs(A - A.T)))
    if asym > tol:
        raise ValueError(
            f"{name} must be symmetric; max |{name} - {name}.T| = {asym:.3g} > {tol:g}. "
            "Symmetrise entailment probabilities first with shapley.correlation_matrix(P)."
        )
    return (A + A.T) / 2.0


def beta_value(beta: float) -> float:
    """The kernel scale beta, a finite number in (0, 1]."""
    try:
        b = float(beta)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"beta must be a number in (0, 1]; got {beta!r}") from exc
    if not np.isfinite(b) or not 0.0 < b <= 1.0:
        raise ValueError(f"beta must be in (0, 1]; got {beta!r}")
    return b


def score_vector(x: ArrayLike, name: str) -> NDArray[np.float64]:
    """1-D finite float array (may be empty)."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf; drop or impute those questions first")
    return a


def label_vector(y: ArrayLike, name: str) -> NDArray[np.bool_]:
    """1-D boolean array from bools or 0/1 values."""
    a = np.asarray(y)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {a.shape}")
    if a.dtype != np.bool_:
        af = a.astype(np.float64)
        if not np.all(np.isin(af, (0.0, 1.0))):
            raise ValueError(f"{name} must be boolean or 0/1; got values {np.unique(af)[:5]}")
        a = af.astype(bool)
    return a
