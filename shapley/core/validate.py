"""The one validation layer of the maths core. Every failure is a ``ValueError`` that names the problem.

Each public function of the core checks its arguments here once, at its start, and hands the checked numpy arrays
and numbers to helpers that trust them (internal calls do not check again). A helper that other modules of the core
call is named ``..._checked`` (e.g. :func:`shapley.core.psd.ensure_psd_checked`): it checks nothing, and it is not
part of the public API.

Tolerances, defined here once and used everywhere in the package:

* :data:`SYMMETRY_TOL` (``1e-8``, absolute): a matrix that must be symmetric may differ from its transpose
  by at most this much (float32 model outputs averaged in float64 stay well inside it); it is then
  symmetrised exactly.
* :data:`PROB_TOL` (``1e-9``): a probability may overshoot [0, 1] by this much before it is refused; the
  accepted value is clipped into [0, 1].
* :data:`LOGP_TOL` (``1e-6``): a log-probability may exceed 0 by this much (float32 rounding); it is then
  clipped to 0. Entropies may fall below 0 by the same amount.

Kinds, checked before ranges (issue 17: the wrong kind of input is refused, not converted):

* an array of real numbers (a matrix, scores, log-probabilities) must have an integer or floating dtype. Complex,
  string (also strings of digits such as ``["0.5"]``), bytes, object (``None``, ``Decimal``, mixed lists),
  datetime and **boolean** arrays are refused: ``True`` is not a probability or a score, and a boolean matrix
  almost always means a mask passed by mistake (write ``mask.astype(float)`` if it is meant);
* labels (``correct``) are the exception: booleans, or numbers that are 0 or 1;
* a real-number parameter is an ``int``/``float`` (numpy's included), never a ``bool`` or a string;
* an integer parameter (sizes, counts, seeds) is an ``int`` or numpy integer, never a ``bool`` or a float
  (not ``2.0``, ``inf`` or ``nan`` either);
* a flag is a ``bool`` (or ``numpy.bool_``), never ``0``/``1`` or ``"false"``;
* a choice (``method``, ``psd_policy``) is one of the listed strings.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

SYMMETRY_TOL = 1e-8
PROB_TOL = 1e-9
LOGP_TOL = 1e-6


_KIND_NAMES = {
    "b": "booleans",
    "c": "complex numbers",
    "U": "strings",
    "S": "bytes",
    "O": "Python objects (None, strings or mixed types)",
    "M": "datetimes",
    "m": "time deltas",
    "V": "structured records",
}


def as_numpy(x: Any) -> Any:
    """``x`` ready for ``numpy.asarray``: an autograd tensor (e.g. torch with ``requires_grad``) is detached
    first, found by duck typing (``requires_grad`` and ``detach``), so that this package never imports torch; a
    tensor on a GPU is refused by numpy's own conversion (the caller names the argument)."""
    if getattr(x, "requires_grad", False) is True and callable(getattr(x, "detach", None)):
        return x.detach()
    return x


def _kind_error(name: str, what: str, got: str) -> ValueError:
    return ValueError(f"{name} must be {what}; got {got}")


def real_array(
    x: Any, name: str, what: str = "an array of real numbers", *, ndim: int | None = None, dims: str = ""
) -> NDArray[np.float64]:
    """``x`` as a float64 array if its entries are real numbers (integer or floating dtype), else ``ValueError``.

    Refused (named in the message): the kinds the module docstring lists, ragged nestings, non-array objects (``None``,
    a dict, a bare string) and, with ``ndim``, another number of dimensions (``dims`` describes the shape).

    Examples:
        >>> real_array([1, 2.5], "x").tolist()
        [1.0, 2.5]
        >>> real_array(["0.5"], "x")
        Traceback (most recent call last):
        ...
        ValueError: x must be an array of real numbers; got an array of strings (dtype <U3)
        >>> real_array([[1.0]], "x", ndim=1)
        Traceback (most recent call last):
        ...
        ValueError: x must be 1-D; got shape (1, 1)
    """
    if isinstance(x, str | bytes | dict | set | frozenset) or x is None:
        raise _kind_error(name, what, f"a {type(x).__name__}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            arr = np.asarray(as_numpy(x))
    except (TypeError, ValueError, RuntimeError, Warning) as exc:
        raise _kind_error(name, what, f"{type(x).__name__} that is not a regular array ({exc})") from exc
    kind = arr.dtype.kind
    if kind not in "iuf":
        extra = " (write x.astype(float) if the booleans are meant as numbers)" if kind == "b" else ""
        got = f"an array of {_KIND_NAMES.get(kind, 'dtype ' + str(arr.dtype))} (dtype {arr.dtype}){extra}"
        raise _kind_error(name, what, got)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D{dims}; got shape {arr.shape}")
    return arr.astype(np.float64)


def finite(a: NDArray[np.float64], name: str) -> NDArray[np.float64]:
    """``a`` if it holds no NaN or inf, else ``ValueError`` naming the first bad entry."""
    ok = np.isfinite(a)
    if not ok.all():
        where = tuple(int(i) for i in np.argwhere(~ok)[0])
        raise ValueError(f"{name} contains NaN or inf (first at index {where[0] if a.ndim == 1 else where})")
    return a


def square_matrix(M: ArrayLike, name: str) -> NDArray[np.float64]:
    """Return ``M`` as a finite float (n, n) array with n >= 1, or raise ``ValueError``."""
    A = real_array(M, name, "a numeric (n, n) array", ndim=2, dims=" (n, n)")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be square; got shape {A.shape}")
    if A.shape[0] == 0:
        raise ValueError(f"{name} is empty (n = 0): at least one answer is needed")
    return finite(A, name)


def probabilities(A: NDArray[np.float64], name: str, tol: float = PROB_TOL) -> NDArray[np.float64]:
    """The real array ``A`` (already checked, e.g. by :func:`square_matrix`) clipped to [0, 1] when every entry lies
    within ``tol`` of it; else ``ValueError`` naming the first entry outside and printing its exact value.

    Examples:
        >>> probabilities(np.array([[1.0, 1.0000001], [0.5, 1.0]]), "E")
        Traceback (most recent call last):
        ...
        ValueError: E must hold probabilities in [0, 1]; got 1.0000001 at [0, 1]
    """
    bad = np.argwhere((A < -tol) | (A > 1.0 + tol))
    if len(bad):
        where = ", ".join(str(int(k)) for k in bad[0])
        raise ValueError(f"{name} must hold probabilities in [0, 1]; got {float(A[tuple(bad[0])])!r} at [{where}]")
    return np.clip(A, 0.0, 1.0)


def _symmetrised(A: NDArray[np.float64], name: str) -> NDArray[np.float64]:
    asym = float(np.max(np.abs(A - A.T)))
    if asym > SYMMETRY_TOL:
        raise ValueError(
            f"{name} must be symmetric; max |{name} - {name}.T| = {asym:.3g} > {SYMMETRY_TOL:g}. "
            "Symmetrise entailment probabilities first, e.g. with shapley.correlation_matrix(P) = (P + P.T) / 2."
        )
    return 0.5 * A + 0.5 * A.T  # equals (A + A.T) / 2 (bar subnormals) without overflowing near the largest float


def probability_matrix(M: ArrayLike, name: str) -> NDArray[np.float64]:
    """Square matrix whose entries are probabilities in [0, 1] (within :data:`PROB_TOL`, then clipped)."""
    return probabilities(square_matrix(M, name), name)


def symmetric_matrix(M: ArrayLike, name: str) -> NDArray[np.float64]:
    """Square matrix that is symmetric to within :data:`SYMMETRY_TOL`; returned exactly symmetrised."""
    return _symmetrised(square_matrix(M, name), name)


def similarity_matrix(M: ArrayLike, name: str) -> NDArray[np.float64]:
    """Symmetric (n, n) matrix with entries in [0, 1] (a similarity graph's weights)."""
    return _symmetrised(probabilities(square_matrix(M, name), name), name)


def real_number(x: Any, name: str) -> float:
    """A real number (bools and non-numbers refused); may be inf or NaN, callers check ranges."""
    if isinstance(x, bool | np.bool_) or not isinstance(x, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a real number; got {type(x).__name__} {x!r}")
    return float(x)


def number(
    x: Any,
    name: str,
    lo: float = -math.inf,
    hi: float = math.inf,
    *,
    closed: Literal["neither", "left", "right", "both"] = "neither",
) -> float:
    """A finite real number between ``lo`` and ``hi``, the ends included as ``closed`` says (bools refused).

    Examples:
        >>> number(1.0, "beta", 0.0, 1.0, closed="right")
        1.0
        >>> number(0.0, "eps", 0.0, 1.0)
        Traceback (most recent call last):
        ...
        ValueError: eps must be a finite number with 0 < eps < 1; got 0.0
    """
    v = real_number(x, name)
    left, right = closed in ("left", "both"), closed in ("right", "both")
    if math.isfinite(v) and (lo < v or (left and v == lo)) and (v < hi or (right and v == hi)):
        return v
    if hi < math.inf:
        bounds = f" with {lo:g} {'<=' if left else '<'} {name} {'<=' if right else '<'} {hi:g}"
    else:
        bounds = f" with {name} {'>=' if left else '>'} {lo:g}" if lo > -math.inf else ""
    raise ValueError(f"{name} must be a finite number{bounds}; got {x!r}")


def beta_value(beta: Any) -> float:
    """The kernel scale beta, a finite real number in (0, 1] (not a bool or a string)."""
    return number(beta, "beta", 0.0, 1.0, closed="right")


def open_fraction(x: Any, name: str) -> float:
    """A finite real number strictly between 0 and 1 (e.g. an eigenvalue floor ``eps``)."""
    return number(x, name, 0.0, 1.0)


def integer(x: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer parameter (module docstring) in ``[minimum, maximum]`` (either may be ``None``)."""
    kind_ok = not isinstance(x, bool | np.bool_) and isinstance(x, int | np.integer)
    if kind_ok and (minimum is None or x >= minimum) and (maximum is None or x <= maximum):
        return int(x)
    bound = "" if minimum is None else f" >= {minimum}" if maximum is None else f" in [{minimum}, {maximum}]"
    raise ValueError(f"{name} must be an integer{bound}; got {'' if kind_ok else type(x).__name__ + ' '}{x!r}")


def positive_int(x: Any, name: str) -> int:
    """An integer >= 1 (bools and floats refused)."""
    return integer(x, name, minimum=1)


def flag(x: Any, name: str) -> bool:
    """A boolean flag: ``True``/``False`` (or ``numpy.bool_``); ``0``, ``1`` and ``"false"`` are refused."""
    if not isinstance(x, bool | np.bool_):
        raise ValueError(f"{name} must be True or False; got {type(x).__name__} {x!r}")
    return bool(x)


def choice(x: Any, options: Sequence[str], name: str) -> str:
    """One of the strings ``options`` (anything else, including non-strings, refused naming the options)."""
    if not isinstance(x, str) or x not in options:
        raise ValueError(f"{name} must be one of {tuple(options)}; got {type(x).__name__} {x!r}")
    return x


def function(x: Any, name: str) -> Callable[..., Any]:
    """A callable (e.g. a metric such as :func:`shapley.core.metrics.auroc`)."""
    if not callable(x):
        raise ValueError(f"{name} must be a function; got {type(x).__name__} {x!r}")
    return x


def vector(x: Any, name: str, *, min_len: int = 1) -> NDArray[np.float64]:
    """1-D finite array of real numbers with at least ``min_len`` entries."""
    arr = real_array(x, name, "a 1-D sequence of numbers", ndim=1)
    if arr.size < min_len:
        raise ValueError(f"{name} must have at least {min_len} value(s); got {arr.size}")
    return finite(arr, name)


def label_vector(y: ArrayLike, name: str) -> NDArray[np.bool_]:
    """1-D boolean array from booleans or the numbers 0/1 (strings, complex, datetimes, None refused)."""
    if isinstance(y, str | bytes | dict | set) or y is None:
        raise ValueError(f"{name} must be a 1-D array of booleans or 0/1; got {type(y).__name__}")
    try:
        a = np.asarray(as_numpy(y))
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"{name} must be a 1-D array of booleans or 0/1; got {type(y).__name__} ({exc})") from exc
    if a.dtype.kind == "O" and all(isinstance(v, bool | np.bool_) for v in a.ravel()):
        a = a.astype(bool)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {a.shape}")
    if a.dtype.kind not in "biuf":
        raise ValueError(
            f"{name} must be an array of booleans or 0/1; got an array of "
            f"{_KIND_NAMES.get(a.dtype.kind, str(a.dtype))} (dtype {a.dtype})"
        )
    if a.dtype != np.bool_:
        af = a.astype(np.float64)
        if not np.all(np.isin(af, (0.0, 1.0))):
            raise ValueError(f"{name} must hold booleans or 0/1 labels; got values {np.unique(af)[:5]}")
        a = af.astype(bool)
    return a


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


def ragged_rows(rows: Any, name: str, row: Callable[[Any, str], NDArray[np.float64]]) -> list[NDArray[np.float64]]:
    """A non-empty sequence of per-sample arrays (ragged lengths allowed), each checked by ``row`` (e.g. log_probs)."""
    if isinstance(rows, str | bytes) or not isinstance(rows, Sequence | np.ndarray):
        raise ValueError(f"{name} must be a sequence of per-sample token arrays; got {type(rows).__name__}")
    if len(rows) == 0:
        raise ValueError(f"{name} must hold at least one sample; got an empty list")
    return [row(r, f"{name}[{k}]") for k, r in enumerate(rows)]


def cluster_labels(x: Any, name: str = "cluster_ids") -> NDArray[np.int64]:
    """1-D non-empty array of integer cluster labels (any integer values, order irrelevant)."""
    arr = real_array(x, name, "a 1-D array of integer cluster labels", ndim=1)
    raw = np.asarray(as_numpy(x))
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.issubdtype(raw.dtype, np.integer):
        return raw.astype(np.int64)
    if np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    raise ValueError(f"{name} must hold integer cluster labels; got dtype {raw.dtype}: {raw.tolist()}")


def text(x: Any, name: str = "text") -> str:
    """``x`` if it is a ``str`` that UTF-8 can encode (no lone surrogate: texts are hashed, cached and written as
    UTF-8), else ``ValueError`` naming ``name`` and the value.

    Examples:
        >>> text("Paris")
        'Paris'
        >>> text(None, "answer")
        Traceback (most recent call last):
        ...
        ValueError: answer must be a str; got NoneType None
    """
    if not isinstance(x, str):
        raise ValueError(f"{name} must be a str; got {type(x).__name__} {x!r}")
    try:
        x.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{name} holds text that cannot be encoded as UTF-8 "
            f"({exc.reason}: {exc.object[exc.start : exc.end]!r}, e.g. a lone surrogate escape)"
        ) from exc
    return x


def texts(x: Any, name: str = "texts") -> list[str]:
    """A non-empty sequence of :func:`text` strings (one string alone is refused)."""
    if isinstance(x, str) or not isinstance(x, Sequence | np.ndarray):
        raise ValueError(f"{name} must be a sequence of strings; got {type(x).__name__} {x!r}")
    out = list(x)
    if len(out) == 0:
        raise ValueError(f"{name} must hold at least one answer; got an empty list")
    return [text(t, f"{name}[{k}]") for k, t in enumerate(out)]
