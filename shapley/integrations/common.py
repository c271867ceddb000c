"""What the LM-Polygraph and uqlm integrations share: settings, the checks of their inputs, the total with a defined
value for singular kernels and the map from uncertainty to confidence.

**Inputs** are checked where a harness hands them over, before any conversion: answers by
:func:`shapley.core.validate.texts`, entailment matrices by :func:`entailment_matrix`, the ``cache`` option by
:func:`cache_option`; every refusal names the question (batch index) or option and prints the rejected value.

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
  needed there; it depends on the pairwise agreement of the answers, not on their number.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

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


def equicorrelated_log_det(rho: float, n: int) -> float:
    """``ln det`` of the (n, n) matrix with unit diagonal and every off-diagonal entry ``rho`` in [0, 1]: its
    eigenvalues are ``1 + (n - 1) rho`` (once) and ``1 - rho`` (n - 1 times). Strictly decreasing in ``rho`` for
    n >= 2, from 0 at ``rho = 0`` to ``-inf`` at ``rho = 1``.

    Examples:
        >>> round(equicorrelated_log_det(0.5, 2), 12) == round(math.log(0.75), 12)  # det [[1, .5], [.5, 1]]
        True
    """
    return math.log1p((n - 1) * rho) + (n - 1) * math.log1p(-rho)


def confidence_from_total(total: float, n: int) -> float:
    """Confidence in [0, 1] from a total Shapley uncertainty ``total`` (nats) over ``n >= 2`` answers: the
    *equivalent agreement*, the ``rho`` whose equicorrelated kernel has R's determinant,
    ``equicorrelated_log_det(rho, n) = ln det R = 2 (total - n/2 ln(2 pi e))``.

    Why this map: a fixed pairwise agreement gives the same confidence whatever the number of answers (an
    equicorrelated R maps to its own ``rho``; identical answers, whose kernel is equicorrelated at beta, to beta),
    so prompts with different numbers of samples compare on one scale. For a fixed n it is strictly decreasing in
    ``total`` (it ranks those prompts exactly as the total does): 0 for R = I (or a ``det R >= 1``, which only a
    PSD repair that raises the diagonal gives; Hadamard: ``det R <= 1`` for a unit diagonal), 1 for a singular R
    (``total = -inf``: duplicates at beta = 1). Solved by bisection to the last bit, which keeps the order. It
    ranks; it is not calibrated: the kernel's off-diagonal entries lie in ``[beta exp(-1/2), beta]``, so
    equicorrelated answers score between those two. A choice, not the paper's (the paper ranks by the total
    only). ``ValueError`` for n < 2 (one answer agrees with nothing) or a NaN total.

    Examples:
        >>> confidence_from_total(2 * HALF_LOG_2PIE, 2)  # R = I: nothing shared
        0.0
        >>> confidence_from_total(-math.inf, 3)  # singular R: identical answers at beta = 1
        1.0
        >>> identical = [shapley_uncertainty(np.ones((n, n)), 0.5) for n in (2, 3, 21)]  # R equicorrelated at 0.5
        >>> [round(confidence_from_total(t, n), 12) for t, n in zip(identical, (2, 3, 21))]
        [0.5, 0.5, 0.5]
    """
    n = validate.integer(n, "n", minimum=2)
    target = validate.real_number(total, "total")
    if math.isnan(target):
        raise ValueError("total must not be NaN")
    target = 2.0 * (target - n * HALF_LOG_2PIE)  # ln det R
    if target >= 0.0:
        return 0.0
    lo, hi = 0.0, 1.0  # equicorrelated_log_det(lo) > target >= equicorrelated_log_det(hi); -inf: hi stays 1
    while (mid := 0.5 * (lo + hi)) not in (lo, hi):
        lo, hi = (mid, hi) if equicorrelated_log_det(mid, n) > target else (lo, mid)
    return hi


BOOLEAN_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n", "0", "1", "none", "null", ""})
"""Strings that a YAML or command-line configuration means as a boolean or as nothing (lower case, stripped)."""


def cache_option(cache: Any) -> Any:
    """The ``cache`` option of our backends (:class:`shapley.pipeline.entail.base.BackendOptions`) validated:
    ``True``, ``False``, ``None`` or a file path (``str`` or ``os.PathLike``). ``ValueError`` naming the option and
    printing the value for anything else, and for a string of :data:`BOOLEAN_WORDS` (``"false"`` from a config
    file would otherwise name a cache file ``false``)."""
    if cache is None or isinstance(cache, bool | np.bool_):
        return None if cache is None else bool(cache)
    if isinstance(cache, os.PathLike) or (isinstance(cache, str) and cache.strip().lower() not in BOOLEAN_WORDS):
        return cache
    raise ValueError(
        f"cache must be True, False, None or a file path; got {type(cache).__name__} {cache!r} "
        "(a string that reads as a boolean is refused: write the boolean, or a path such as 'entail.sqlite')"
    )


def entailment_matrix(M: Any, name: str) -> NDArray[np.float64]:
    """``M`` as a float64 (n, n) matrix of probabilities in [0, 1], checked before any conversion: its kind by
    :func:`shapley.core.validate.square_matrix` (complex, string, object and boolean arrays refused), then its
    range by :func:`shapley.core.validate.probabilities`. An entry may leave [0, 1] by one unit in the last place at
    1 of ``M``'s own float type (float32: 2**-23, which a float32 similarity of identical texts can reach; float64:
    the core's ``PROB_TOL``) and is clipped; beyond that ``ValueError`` names ``name``, the entry and its exact
    value.

    Examples:
        >>> entailment_matrix(np.array([[1.0, 1.0 + 2**-23], [0.5, 1.0]], dtype=np.float32), "E").tolist()
        [[1.0, 1.0], [0.5, 1.0]]
        >>> entailment_matrix([[1.0, 1.000001], [0.5, 1.0]], "E")
        Traceback (most recent call last):
        ...
        ValueError: E must hold probabilities in [0, 1]; got 1.000001 at [0, 1]
    """
    A = validate.square_matrix(M, name)
    dtype = np.asarray(validate.as_numpy(M)).dtype  # a real dtype: square_matrix checked the kind
    tol = max(validate.PROB_TOL, float(np.finfo(dtype).eps)) if dtype.kind == "f" else validate.PROB_TOL
    return validate.probabilities(A, name, tol)
