"""Scores as every rank-based metric sees them: validated, and rounded once to :data:`SCORE_DIGITS`
significant digits (:func:`round_scores`), so that round-off never orders scores equal in exact arithmetic."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import validate

# checked_inputs and one_class are the metrics' internal helpers (their callers validate and name the arguments)
__all__ = ["SCORE_DIGITS", "round_scores"]

SCORE_DIGITS = 12
"""Significant digits every score is rounded to before any rank-based computation (:func:`round_scores`)."""


def round_scores(scores: ArrayLike, digits: int = SCORE_DIGITS) -> NDArray[np.float64]:
    """Scores rounded to ``digits`` significant digits, so that round-off never orders scores equal in exact
    arithmetic.

    Each finite non-zero x becomes ``rint(x * 10**k) / 10**k`` with ``k = digits - 1 - floor(log10|x|)``
    (divided and multiplied the other way round when k < 0): a pure function of x, so the same on every
    machine and in any order of computation, and idempotent. Zeros, +-inf and NaN pass through (``-0.0``
    becomes ``0.0``); |x| below 1e-280 is left as it is. Two scores within a few units in the last place of
    each other (e.g. 5e-17 relative) round to one value unless they straddle a rounding boundary of the 12th
    digit, which for scores equal in exact arithmetic needs a value with 12 digits and a half, exactly.

    Args:
        scores: (m,) float scores (any shape works). digits: significant digits, 1..15.

    Returns:
        float64 array of ``scores``' shape.

    Examples:
        >>> x = 0.1 + 0.2  # 0.30000000000000004
        >>> bool(x == 0.3), bool(round_scores([x])[0] == 0.3)
        (False, True)
        >>> round_scores([1.7320537945392505, 1.7320537945392505 * (1 + 1e-13), -2.5e-7, 0.0]).tolist()
        [1.73205379454, 1.73205379454, -2.5e-07, 0.0]
    """
    if isinstance(digits, bool) or not isinstance(digits, (int, np.integer)) or not 1 <= digits <= 15:
        raise ValueError(f"digits must be an integer in [1, 15]; got {digits!r}")
    a = validate.real_array(scores, "scores")
    out = a + 0.0  # a copy, with -0.0 made 0.0
    mag = np.abs(a)
    ok = np.isfinite(a) & (mag >= 1e-280)
    v = a[ok]
    k = int(digits) - 1 - np.floor(np.log10(mag[ok])).astype(np.int64)
    scale = 10.0 ** np.abs(k).astype(np.float64)
    up = k >= 0
    r = np.empty_like(v)
    r[up] = np.rint(v[up] * scale[up]) / scale[up]
    r[~up] = np.rint(v[~up] / scale[~up]) * scale[~up]
    out[ok] = r + 0.0
    return out


def checked_inputs(
    uncertainty: ArrayLike, correct: ArrayLike, name: str = "uncertainty"
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """(rounded scores, booleans) of one method's (m,) scores and the (m,) correctness labels, checked."""
    u = round_scores(validate.score_vector(uncertainty, name))
    c = validate.label_vector(correct, "correct")
    if u.shape != c.shape:
        raise ValueError(f"{name} and correct must have the same length; got {u.shape[0]} and {c.shape[0]}")
    if u.size == 0:
        raise ValueError(f"{name} is empty: no questions to evaluate")
    return u, c


def one_class(c: NDArray[np.bool_], name: str) -> bool:
    """True, with a RuntimeWarning that ``name`` is undefined, when ``c`` holds one class only."""
    if c.all() or not c.any():
        warnings.warn(
            f"{name} is undefined: all {c.size} answers are {'correct' if c.all() else 'incorrect'}; returning NaN",
            RuntimeWarning,
            stacklevel=3,
        )
        return True
    return False
