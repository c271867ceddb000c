"""The one validation layer of the maths core. Every failure is a ``ValueError`` that names the problem.

Tolerances, defined here once and used everywhere in the package:

* :data:`SYMMETRY_TOL` (``1e-8``, absolute): a matrix that must be symmetric may differ from its transpose
  by at most this much (float32 model outputs averaged in float64 stay well inside it); it is then
  symmetrised exactly.
* :data:`PROB_TOL` (``1e-9``): a probability may overshoot [0, 1] by this much before it is refused; the
  accepted value is clipped into [0, 1].
* :data:`LOGP_TOL` (``1e-6``): a log-probability may exceed 0 by this much (float32 rounding); it is then
  clipped to 0. Entropies may fall below 0 by the same amount.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

SYMMETRY_TOL = 1e-8
PROB_TOL = 1e-9
LOGP_TOL = 1e-6


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
    """Square matrix whose entries are probabilities in [0, 1] (within :data:`PROB_TOL`, then clipped)."""
    A = square_matrix(M, name)
    if A.min() < -PROB_TOL or A.max() > 1.0 + PROB_TOL:
        raise ValueError(f"{name} must hold probabilities in [0, 1]; got values in [{A.min():.4g}, {A.max():.4g}]")
    return np.clip(A, 0.0, 1.0)


def symmetric_matrix(M: ArrayLike, name: str) -> NDArray[np.float64]:
    """Square matrix that is symmetric to within :data:`SYMMETRY_TOL`; returned exactly symmetrised."""
    A = square_matrix(M, name)
    asym = float(np.max(np.abs(A - A.T)))
    if asym > SYMMETRY_TOL:
        raise ValueError(
            f"{name} must be symmetric; max |{name} - {name}.T| = {asym:.3g} > {SYMMETRY_TOL:g}. "
            "Symmetrise entailment probabilities first, e.g. with shapley.correlation_matrix(P) = (P + P.T) / 2."
        )
    return (A + A.T) / 2.0


def similarity_matrix(M: ArrayLike, name: str) -> NDArray[np.float64]:
    """Symmetric (n, n) matrix with entries in [0, 1] (a similarity graph's weights)."""
    return symmetric_matrix(probability_matrix(M, name), name)


def beta_value(beta: float) -> float:
    """The kernel scale beta, a finite number in (0, 1]."""
    try:
        b = float(beta)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"beta must be a number in (0, 1]; got {beta!r}") from exc
    if not np.isfinite(b) or not 0.0 < b <= 1.0:
        raise ValueError(f"beta must be in (0, 1]; got {beta!r}")
    return b


def real_number(x: Any, name: str) -> float:
    """A real number (bools and non-numbers refused); may be inf or NaN, callers check ranges."""
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a real number; got {type(x).__name__}")
    return float(x)


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


def vector(x: Any, name: str, *, min_len: int = 1) -> NDArray[np.float64]:
    """1-D finite float array with at least ``min_len`` entries."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a sequence of numbers; got {type(x).__name__}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {arr.shape}")
    if arr.size < min_len:
        raise ValueError(f"{name} must have at least {min_len} value(s); got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf: {arr.tolist()}")
    return arr


def log_probs(x: Any, name: str) -> NDArray[np.float64]:
    """1-D finite array of log-probabilities (each <= 0 within :data:`LOGP_TOL`, then clipped to 0)."""
    arr = vector(x, name)
    if np.any(arr > LOGP_TOL):
        raise ValueError(
            f"{name} are log-probabilities and must be <= 0; got max {arr.max():.6g} "
            "(did you pass probabilities or logits instead of log-probabilities?)"
        )
    return np.minimum(arr, 0.0)


def entropies(x: Any, name: str) -> NDArray[np.float64]:
    """1-D finite array of entropies (each >= 0 within :data:`LOGP_TOL`, then clipped to 0)."""
    arr = vector(x, name)
    if np.any(arr < -LOGP_TOL):
        raise ValueError(f"{name} must be >= 0 (entropies, nats); got min {arr.min():.6g}")
    return np.maximum(arr, 0.0)


def ragged_rows(rows: Any, name: str) -> list[NDArray[np.float64]]:
    """A non-empty sequence of 1-D finite arrays (ragged lengths allowed), e.g. per-sample token values."""
    if isinstance(rows, np.ndarray) and rows.ndim == 2:
        items = list(rows)
    elif isinstance(rows, str | bytes) or not isinstance(rows, Sequence | np.ndarray):
        raise ValueError(f"{name} must be a sequence of per-sample token arrays; got {type(rows).__name__}")
    else:
        items = list(rows)
    if len(items) == 0:
        raise ValueError(f"{name} must hold at least one sample; got an empty list")
    return [vector(r, f"{name}[{k}]") for k, r in enumerate(items)]


def cluster_labels(x: Any, name: str = "cluster_ids") -> NDArray[np.int64]:
    """1-D non-empty array of integer cluster labels (any integer values, order irrelevant)."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    raise ValueError(f"{name} must hold integer cluster labels; got dtype {arr.dtype}: {arr.tolist()}")


def texts(x: Any, name: str = "texts") -> list[str]:
    """A non-empty sequence of strings (one string alone is refused)."""
    if isinstance(x, str) or not isinstance(x, Sequence | np.ndarray):
        raise ValueError(f"{name} must be a sequence of strings; got {type(x).__name__}")
    out = list(x)
    if len(out) == 0:
        raise ValueError(f"{name} must hold at least one answer; got an empty list")
    for k, t in enumerate(out):
        if not isinstance(t, str):
            raise ValueError(f"{name}[{k}] must be a str; got {type(t).__name__}")
    return out


def open_fraction(x: Any, name: str) -> float:
    """A finite real number strictly between 0 and 1 (e.g. an eigenvalue floor ``eps``)."""
    v = real_number(x, name)
    if not math.isfinite(v) or not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be a finite number with 0 < {name} < 1; got {x!r}")
    return v


def positive_int(x: Any, name: str) -> int:
    """An integer >= 1 (bools refused)."""
    if isinstance(x, bool) or not isinstance(x, int | np.integer) or x < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {x!r}")
    return int(x)


def positive_number(x: Any, name: str) -> float:
    """A finite real number > 0."""
    v = real_number(x, name)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0; got {x!r}")
    return v
