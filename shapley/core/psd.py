"""Positive semi-definiteness of the kernel matrix R, guaranteed bounds on beta, and repair policies.

The paper treats R as the covariance of a Gaussian, which needs R to be PSD. It is not always:
with beta = 0.5 an adversarial entailment pattern makes R indefinite from n = 8 on. Functions that
need a log-det therefore take a ``psd_policy``:

``"raise"`` (default everywhere in the core)
    ``ValueError`` that reports the minimum eigenvalue and names the fixes.
``"shrink"``
    Shrink the off-diagonal part, ``R(t) = I + t (R - I)``. Since R and R(t) share eigenvectors,
    ``lambda_min(R(t)) = 1 + t (lambda_min - 1)``; we take the largest t that leaves
    ``lambda_min = eps``. For a kernel matrix this is exactly lowering beta to ``t * beta``.
``"nearest"``
    Higham's (2002) alternating projections to the nearest correlation matrix whose eigenvalues are
    at least ``eps`` (Frobenius norm).

R is PSD when no eigenvalue lies below ``-psd_tolerance(R)`` (:func:`is_psd`), and a PSD R is singular when its
smallest eigenvalue is at most that tolerance (:func:`is_singular`).

Every repair emits a :class:`PSDRepairWarning`. ``eps`` (a number with ``0 < eps < 1``, checked by every
function that takes it) defaults to ``1e-6``: a repaired matrix is positive definite, so its log-det is
finite, but it sits close to singular and its entropy is dominated by ``ln(eps)``-sized terms. The repair is
an explicit modelling choice, not a fix of the data.

Guaranteed bounds (Gershgorin): with every off-diagonal entry of the beta = 1 kernel in
``[exp(-1/2), 1]``, the paper bounds ``|lambda| <= n`` and concludes that beta <= 1/(n+1) is safe.
Applying Gershgorin to R itself gives ``lambda >= 1 - beta (n - 1)``, hence beta <= 1/(n-1), which is
larger (less conservative) for every n >= 2.
"""

from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import validate

PSDPolicy = Literal["raise", "shrink", "nearest"]
PSD_POLICIES: tuple[str, ...] = get_args(PSDPolicy)
"""What :func:`ensure_psd` (and every estimator's ``psd_policy``) does with a kernel that is not PSD: ``"raise"``
(``ValueError``), ``"shrink"`` or ``"nearest"`` (see the module docstring)."""
DEFAULT_EPS = 1e-6
"""Eigenvalue floor of the PSD repairs (dimensionless, the kernel's own scale)."""
_NEAREST_ITERATIONS, _NEAREST_TOL = 500, 1e-10
"""The default iteration limit and stopping tolerance of :func:`nearest_correlation` (also under ``"nearest"``)."""


class PSDRepairWarning(RuntimeWarning):
    """A non-PSD matrix was repaired by an explicit policy."""


@dataclass(frozen=True)
class PSDReport:
    """What a PSD check found and did: ``min_eigenvalue`` is of the input, which is repaired when not ``was_psd``."""

    min_eigenvalue: float
    was_psd: bool
    policy: str
    shrink_factor: float | None = None


def min_eigenvalue(R: ArrayLike) -> float:
    """Smallest eigenvalue of a symmetric (n, n) matrix.

    Examples:
        >>> round(min_eigenvalue([[1.0, 0.5], [0.5, 1.0]]), 12)
        0.5
    """
    return _smallest_eigenvalue(validate.symmetric_matrix(R, "R"))


def _smallest_eigenvalue(A: NDArray[np.float64]) -> float:
    """lambda_min of a checked symmetric A, computed on ``A / 2**k`` (exact) so that huge entries do not overflow.

    Raises ``ValueError`` when the eigenvalue itself is beyond float64 (entries near the largest float), rather
    than reporting NaN.
    """
    top = float(np.max(np.abs(A)))
    k = math.frexp(top)[1]  # 0 for a zero matrix
    scaled = float(np.linalg.eigvalsh(np.ldexp(A, -k))[0])
    try:
        return math.ldexp(scaled, k)
    except OverflowError:
        raise ValueError(
            f"R's eigenvalues overflow float64 (max |R| = {top:.4g}): rescale R, e.g. to unit diagonal"
        ) from None


def psd_tolerance(R: ArrayLike) -> float:
    """Round-off tolerance for the eigenvalues of R: ``10 * n * machine eps * max|R|`` (relative to R's scale).

    An eigenvalue within this distance of zero is zero to working precision. The tolerance scales with R
    (there is no absolute floor), so ``c * R`` is PSD, singular or positive definite exactly when R is.

    Examples:
        >>> print(f"{psd_tolerance(np.eye(2)):.3e}")
        4.441e-15
        >>> psd_tolerance(1e-300 * np.eye(2)) < 1e-310  # scale-aware: no absolute floor
        True
    """
    return psd_tolerance_checked(validate.square_matrix(R, "R"))


def psd_tolerance_checked(A: NDArray[np.float64]) -> float:
    """:func:`psd_tolerance` of a checked square float array (no checks)."""
    return 10.0 * A.shape[0] * float(np.finfo(np.float64).eps) * float(np.max(np.abs(A)))


def is_psd(R: ArrayLike) -> bool:
    """True if the symmetric R has no eigenvalue below ``-psd_tolerance(R)``.

    Examples:
        >>> is_psd([[1.0, 0.9], [0.9, 1.0]]), is_psd([[1.0, 2.0], [2.0, 1.0]])
        (True, False)
    """
    A = validate.symmetric_matrix(R, "R")
    return bool(_smallest_eigenvalue(A) >= -psd_tolerance_checked(A))


def is_singular(R: ArrayLike) -> bool:
    """True if the PSD matrix R is singular to working precision: ``lambda_min(R) <= psd_tolerance(R)``.

    This is the one singularity rule of the core (module docstring of :mod:`shapley.core.entropy`):
    :func:`~shapley.core.entropy.gaussian_entropy` is ``-inf`` exactly when it holds.

    Examples:
        >>> is_singular([[1.0, 1.0], [1.0, 1.0]]), is_singular([[1.0, 1 - 1e-12], [1 - 1e-12, 1.0]])
        (True, False)
        >>> is_singular(1e-300 * np.eye(3))  # tiny but well conditioned
        False
    """
    return singularity_checked(validate.symmetric_matrix(R, "R"))[0]


def singularity_checked(A: NDArray[np.float64], lam: float | None = None) -> tuple[bool, float]:
    """(A is singular, pivot threshold) under the one rule (:func:`is_singular`) for a checked symmetric A (no
    checks); ``lam`` is lambda_min(A) if already known. The threshold for elimination pivots is
    :func:`psd_tolerance` when A is singular, else 0 (module docstring of :mod:`shapley.core.entropy`)."""
    tol = psd_tolerance_checked(A)
    singular = (_smallest_eigenvalue(A) if lam is None else lam) <= tol
    return singular, (tol if singular else 0.0)


def paper_beta_bound(n: int) -> float:
    """The paper's guaranteed bound, beta <= 1/(n+1) (Appendix A, Gershgorin on the beta = 1 matrix).

    Examples:
        >>> paper_beta_bound(7)
        0.125
    """
    n = validate.positive_int(n, "n")
    return 1.0 / (n + 1)


def gershgorin_beta_bound(n: int) -> float:
    """Gershgorin on R itself: beta <= 1/(n-1) keeps R PSD for every C (1.0 for n <= 2, capped at 1).

    Examples:
        >>> gershgorin_beta_bound(2), round(gershgorin_beta_bound(7), 4)
        (1.0, 0.1667)
    """
    n = validate.positive_int(n, "n")
    return 1.0 if n <= 2 else 1.0 / (n - 1)


def _shrink(A: NDArray[np.float64], e: float, lam: float) -> tuple[NDArray[np.float64], float]:
    """``(I + t (A - I), t)`` with the largest t in (0, 1] that keeps ``lambda_min >= e``, for a checked symmetric A
    with unit diagonal whose smallest eigenvalue is ``lam < e`` (the ``"shrink"`` policy)."""
    t = (1.0 - e) / (1.0 - lam)
    n = A.shape[0]
    out = np.eye(n) + t * (A - np.eye(n))
    return out, float(t)


def _clip(R: NDArray[np.float64], e: float) -> NDArray[np.float64]:
    """R with its eigenvalues below ``e`` clipped up to ``e``, rescaled to unit diagonal (which leaves the smallest
    eigenvalue at least ``e / max diagonal``, a little below ``e``): the last step of :func:`nearest_correlation`."""
    w, V = np.linalg.eigh(R)
    A = (V * np.maximum(w, e)) @ V.T
    d = np.sqrt(np.diag(A))
    A = A / np.outer(d, d)
    return (A + A.T) / 2.0


def nearest_correlation(
    R: ArrayLike, eps: float = DEFAULT_EPS, max_iter: int = _NEAREST_ITERATIONS, tol: float = _NEAREST_TOL
) -> NDArray[np.float64]:
    """Nearest correlation matrix with eigenvalues >= ``eps`` (Higham 2002, Dykstra-corrected projections).

    Args:
        R: (n, n) symmetric matrix. eps: eigenvalue floor, ``0 < eps < 1``. max_iter: iterations (>= 1).
        tol: relative Frobenius change that stops the iteration (> 0).

    Examples:
        >>> A = nearest_correlation([[1.0, 0.9, 0.0], [0.9, 1.0, 0.9], [0.0, 0.9, 1.0]])
        >>> np.round(np.diag(A), 9).tolist(), min_eigenvalue(A) >= 1e-6 * (1 - 1e-9)
        ([1.0, 1.0, 1.0], True)
    """
    e = validate.open_fraction(eps, "eps")
    iters = validate.positive_int(max_iter, "max_iter")
    stop = validate.number(tol, "tol", 0.0)
    return _nearest(validate.symmetric_matrix(R, "R"), e, iters, stop)


def _nearest(R: NDArray[np.float64], e: float, iters: int, stop: float) -> NDArray[np.float64]:
    """:func:`nearest_correlation` of checked arguments."""
    Y = R.copy()
    dS = np.zeros_like(R)
    for _ in range(iters):
        Rk = Y - dS
        w, V = np.linalg.eigh((Rk + Rk.T) / 2.0)
        X = (V * np.maximum(w, e)) @ V.T
        dS = X - Rk
        np.fill_diagonal(X, 1.0)  # the projection onto unit diagonals: the next iterate
        converged = np.linalg.norm(X - Y, "fro") <= stop * max(1.0, float(np.linalg.norm(Y, "fro")))
        Y = X
        if converged:
            break
    # The unit-diagonal iterate may sit a hair below eps; finish with a clip, which moves it by O(tol).
    Y = (Y + Y.T) / 2.0
    if np.linalg.eigvalsh(Y)[0] < e * (1 - 1e-9):
        Y = _clip(Y, e)
    return Y


def ensure_psd(R: ArrayLike, policy: str = "raise", eps: float = DEFAULT_EPS) -> tuple[NDArray[np.float64], PSDReport]:
    """Validate R and apply ``policy`` if it is not PSD.

    Args:
        R: (n, n) symmetric matrix.
        policy: one of ``PSD_POLICIES`` (module docstring).
        eps: eigenvalue floor of the repairing policies, ``0 < eps < 1`` (checked under every policy).

    Returns:
        (R to use, report). A PSD input (no eigenvalue below ``-psd_tolerance(R)``) is returned unchanged,
        singular PSD included.

    Raises:
        ValueError: bad input, unknown policy, ``eps`` out of range, or a non-PSD R under ``"raise"``.

    Examples:
        >>> A, report = ensure_psd([[1.0, 0.5], [0.5, 1.0]])
        >>> report.was_psd, report.shrink_factor
        (True, None)
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", PSDRepairWarning)
        ...     A, report = ensure_psd([[1.0, 2.0], [2.0, 1.0]], "shrink", eps=0.5)
        >>> report.was_psd, report.shrink_factor
        (False, 0.25)
    """
    policy = validate.choice(policy, PSD_POLICIES, "policy (psd_policy)")
    eps = validate.open_fraction(eps, "eps")
    return ensure_psd_checked(validate.symmetric_matrix(R, "R"), policy, eps)


def ensure_psd_checked(A: NDArray[np.float64], policy: str, eps: float) -> tuple[NDArray[np.float64], PSDReport]:
    """:func:`ensure_psd` of a checked symmetric A, policy and eps (no checks)."""
    lam = _smallest_eigenvalue(A)
    if lam >= -psd_tolerance_checked(A):
        return A, PSDReport(lam, True, policy)
    n = A.shape[0]
    if policy == "raise":
        raise ValueError(
            f"R is not positive semi-definite: its minimum eigenvalue is {lam:.4g} (n = {n}), so it is not a "
            "valid Gaussian covariance and its log-det is undefined. Fixes: lower beta (beta <= "
            f"{gershgorin_beta_bound(n):.4g} = 1/(n-1) is guaranteed for this n), or pass "
            "psd_policy='shrink' | 'nearest' to repair R explicitly (see shapley.core.psd)."
        )
    t = None
    if policy == "shrink":
        out, t = _shrink(A, eps, lam)
    else:
        out = _nearest(A, eps, _NEAREST_ITERATIONS, _NEAREST_TOL)
    warnings.warn(
        f"R was not PSD (min eigenvalue {lam:.4g}, n = {n}); repaired with psd_policy={policy!r}"
        + (f" (off-diagonals scaled by {t:.4g})" if t is not None else ""),
        PSDRepairWarning,
        stacklevel=_first_caller_outside_the_core(),
    )
    return out, PSDReport(lam, False, policy, t)


def _first_caller_outside_the_core() -> int:
    """The ``stacklevel`` that attributes a warning raised in the caller of this function to the first frame
    outside :mod:`shapley.core` (the user's line, however deep in the core the warning arises)."""
    frame, level = inspect.currentframe(), 0
    while frame is not None and frame.f_globals.get("__name__", "").startswith("shapley.core"):
        frame, level = frame.f_back, level + 1
    return level
