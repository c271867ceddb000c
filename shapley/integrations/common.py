"""What the LM-Polygraph and uqlm integrations share: settings, the total with a defined value for singular
kernels and the map from uncertainty to confidence.

**Singular kernels.** With exact-duplicate answers at ``beta = 1`` (more generally, whenever the kernel R is
singular under :mod:`shapley.core.entropy`'s rule) the Gaussian entropy, hence the total Shapley uncertainty, is
``-inf``: the answers span fewer dimensions than there are answers. The core keeps ``-inf`` (it is the right
value). A harness needs a number it can rank and average:

* LM-Polygraph (:func:`defined_total`): the ``-inf`` is replaced by the *singular total* (:func:`singular_total`),
  which keeps the order of the limit it stands for. ``-inf`` is the limit of near-singular totals (answers that
  approach identity), so a singular question must rank as more certain than any question with a finite total, and
  among singular questions the more collapsed dimensions, the more certain. Float64 bounds every finite total of n
  answers from below by ``n (1/2 ln(2 pi e) + ln 2**-1074)`` (:func:`singular_total` derives it), and the singular
  total lies below that bound. Non-singular matrices keep their exact total.
* uqlm (:func:`confidence_from_total`): the confidence map sends ``-inf`` to exactly 1, so no substitute is
  needed there.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from shapley.core import validate
from shapley.core.entropy import HALF_LOG_2PIE, shapley_uncertainty
from shapley.core.kernel import correlation_matrix, kernel_matrix
from shapley.core.psd import DEFAULT_EPS, PSD_POLICIES, ensure_psd
from shapley.pipeline.config import ScoringSettings

RUN_DEFAULTS = ScoringSettings()
"""The pipeline's scoring defaults (:class:`shapley.pipeline.config.ScoringSettings`), which the integrations take as
theirs: the paper's beta, and the PSD policy ``"nearest"`` (a harness run must not stop at the first indefinite
kernel, and it is the repair our committed runs use)."""

LOG_SMALLEST_DOUBLE = math.log(np.finfo(np.float64).smallest_subnormal)
"""ln 2**-1074 (about -744.4): the log of the smallest positive float64, the least log of a positive pivot."""


def check_settings(beta: Any, psd_policy: Any, eps: Any) -> tuple[float, str, float]:
    """``(beta, psd_policy, eps)`` validated: beta in (0, 1], a policy of ``PSD_POLICIES``, ``0 < eps < 1``."""
    return (
        validate.beta_value(beta),
        validate.choice(psd_policy, PSD_POLICIES, "psd_policy"),
        validate.open_fraction(eps, "eps"),
    )


def singular_total(P: ArrayLike, beta: float, psd_policy: str, eps: float = DEFAULT_EPS) -> float:
    """The finite stand-in (nats) for the ``-inf`` total of the (n, n) entailment matrix ``P`` whose (PSD-handled)
    kernel R is singular: with R's eigenvalues ``lambda_k``, ``m`` of them below ``eps`` (collapsed dimensions),

    ``n (1/2 ln(2 pi e) + LOG_SMALLEST_DOUBLE) + 1/2 sum_k ln(max(lambda_k, eps) / n) - m n/2 ln(n / eps)``.

    It is below every finite total of n answers: the core's is ``n/2 ln(2 pi e) + 1/2 ln det R``, ``ln det R`` a sum
    of n logs of positive float64 pivots (each at least :data:`LOG_SMALLEST_DOUBLE`) or of squared Cholesky
    diagonals (at least twice it), plus a scaling term ``n k ln 2 >= 0`` (:mod:`shapley.core.entropy`; ``k >= 0``
    as R's diagonal is 1), so at least ``n (1/2 ln(2 pi e) + LOG_SMALLEST_DOUBLE)``. R's trace is n, so every
    ``lambda_k <= n``: each term of the sum is at most 0, and the singular eigenvalue's is negative. The sum exceeds
    ``-n/2 ln(n / eps)`` (the largest eigenvalue is at least 1), so singular totals order by ``m`` first (more
    collapsed: lower) and by the eigenvalues within one ``m``.

    Examples:
        >>> identical, near = np.ones((3, 3)), np.full((3, 3), 0.9999)  # three answers at beta = 1
        >>> np.fill_diagonal(near, 1.0)
        >>> bound = 3 * (HALF_LOG_2PIE + LOG_SMALLEST_DOUBLE)
        >>> singular_total(identical, 1.0, "raise") < bound < shapley_uncertainty(near, 1.0, psd_policy="raise")
        True
        >>> two_groups = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # rank 2: one collapsed
        >>> singular_total(identical, 1.0, "raise") < singular_total(two_groups, 1.0, "raise") < bound
        True
    """
    R, _ = ensure_psd(kernel_matrix(correlation_matrix(P), beta), psd_policy, eps)
    n, lam = R.shape[0], np.linalg.eigvalsh(R)
    lifted = 0.5 * float(np.sum(np.log(np.maximum(lam, eps) / n)))
    collapsed = int(np.count_nonzero(lam < eps))
    return n * (HALF_LOG_2PIE + LOG_SMALLEST_DOUBLE) + lifted - collapsed * n / 2 * math.log(n / eps)


def defined_total(P: ArrayLike, beta: float, psd_policy: str, eps: float = DEFAULT_EPS) -> float:
    """The total Shapley uncertainty (nats) of the (n, n) entailment matrix ``P``:
    ``shapley.shapley_uncertainty(P, beta, psd_policy=..., eps=...)`` exactly when it is finite, the
    :func:`singular_total` when the kernel is singular (module docstring). Never ``-inf`` or NaN.

    Examples:
        >>> P = [[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [0.5, 0.5, 1.0]]  # the paper's Mozart matrix (Table 1)
        >>> round(defined_total(P, 0.5, "raise"), 4)
        3.9627
        >>> math.isfinite(defined_total(np.ones((3, 3)), 1.0, "raise"))  # duplicates at beta = 1: finite
        True
    """
    total = shapley_uncertainty(P, beta, psd_policy=psd_policy, eps=eps)
    if total == -math.inf:
        return singular_total(P, beta, psd_policy, eps)
    return total


def confidence_from_total(total: float, n: int) -> float:
    """Confidence in [0, 1] from a total Shapley uncertainty ``total`` (nats) over ``n`` answers:
    ``1 - det(R) ** (1/n) = 1 - exp(2 (total - n/2 ln(2 pi e)) / n)``.

    Why this map: the total is ``n/2 ln(2 pi e) + 1/2 ln det R`` and R has unit diagonal, so (Hadamard)
    ``det R <= 1``, with equality only for R = I. ``det(R) ** (1/n)`` is the geometric mean of R's eigenvalues, the
    volume the answers span per answer, in [0, 1]. One minus it is in [0, 1], is exactly 1 for a singular kernel
    (``total = -inf``: duplicates at beta = 1), does not grow with the number of samples merely because there are
    more of them, and is strictly decreasing in ``total`` for a fixed ``n``, so it ranks questions exactly as the
    total does. It ranks; it is not calibrated: the kernel never reaches R = I (unrelated answers still correlate
    ``beta exp(-1/2)``) nor, for beta < 1, a singular R, so at beta = 0.5 and n = 4 it runs from about 0.10
    (unrelated answers) to 0.25 (identical ones). A choice, not the paper's (the paper ranks by the total only).

    Examples:
        >>> confidence_from_total(2 * HALF_LOG_2PIE, 2)  # R = I: nothing shared
        0.0
        >>> confidence_from_total(-math.inf, 3)  # identical answers
        1.0
        >>> confidence_from_total(2.5, 2) > confidence_from_total(2.6, 2)  # decreasing in the total
        True
    """
    n = validate.positive_int(n, "n")
    if math.isnan(total):
        raise ValueError("total must not be NaN")
    return 1.0 - math.exp(min(0.0, 2.0 * (total - n * HALF_LOG_2PIE) / n))  # in [0, 1]: exp of at most 0
