"""What the LM-Polygraph and uqlm integrations share: settings, the total with a defined value for singular
kernels and the map from uncertainty to confidence.

**Singular kernels.** With exact-duplicate answers at ``beta = 1`` (more generally, whenever the kernel R is
singular under :mod:`shapley.core.entropy`'s rule) the Gaussian entropy, hence the total Shapley uncertainty, is
``-inf``: the answers span fewer dimensions than there are answers. The core keeps ``-inf`` (it is the right
value). A harness needs a number it can rank and average:

* LM-Polygraph (:func:`defined_total`): the ``-inf`` is replaced by the *floored total*, the entropy with every
  eigenvalue of R below ``eps`` lifted to ``eps`` (``n/2 ln(2 pi e) + 1/2 sum_k ln max(lambda_k, eps)``). It is
  finite, lower than the total of any R whose eigenvalues are all at least ``eps`` (so a singular question ranks
  as more certain than those), and it still orders singular questions by how many dimensions collapsed
  (each lost dimension costs ``1/2 ln eps``, -6.9 nats at the default ``eps = 1e-6``). Non-singular matrices
  keep their exact total.
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


def check_settings(beta: Any, psd_policy: Any, eps: Any) -> tuple[float, str, float]:
    """``(beta, psd_policy, eps)`` validated: beta in (0, 1], a policy of ``PSD_POLICIES``, ``0 < eps < 1``."""
    return (
        validate.beta_value(beta),
        validate.choice(psd_policy, PSD_POLICIES, "psd_policy"),
        validate.open_fraction(eps, "eps"),
    )


def floored_total(P: ArrayLike, beta: float, psd_policy: str, eps: float = DEFAULT_EPS) -> float:
    """Entropy (nats) of N(0, R) with R's eigenvalues below ``eps`` lifted to ``eps``; R is the (PSD-handled)
    kernel of the (n, n) entailment matrix ``P``. Finite for every R.

    Examples:
        >>> P = np.ones((3, 3))  # three identical answers at beta = 1: rank 1, eigenvalues (3, 0, 0)
        >>> expected = 3 * HALF_LOG_2PIE + 0.5 * (math.log(3) + 2 * math.log(1e-6))
        >>> abs(floored_total(P, 1.0, "raise") - expected) < 1e-9
        True
    """
    R, _ = ensure_psd(kernel_matrix(correlation_matrix(P), beta), psd_policy, eps)
    lam = np.linalg.eigvalsh(R)
    return float(R.shape[0] * HALF_LOG_2PIE + 0.5 * np.sum(np.log(np.maximum(lam, eps))))


def defined_total(P: ArrayLike, beta: float, psd_policy: str, eps: float = DEFAULT_EPS) -> float:
    """The total Shapley uncertainty (nats) of the (n, n) entailment matrix ``P``:
    ``shapley.shapley_uncertainty(P, beta, psd_policy=..., eps=...)`` exactly when it is finite, the
    :func:`floored_total` when the kernel is singular (module docstring). Never ``-inf`` or NaN.

    Examples:
        >>> P = [[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [0.5, 0.5, 1.0]]  # the paper's Mozart matrix (Table 1)
        >>> round(defined_total(P, 0.5, "raise"), 4)
        3.9627
        >>> math.isfinite(defined_total(np.ones((3, 3)), 1.0, "raise"))  # duplicates at beta = 1: finite
        True
    """
    total = shapley_uncertainty(P, beta, psd_policy=psd_policy, eps=eps)
    if total == -math.inf:
        return floored_total(P, beta, psd_policy, eps)
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
