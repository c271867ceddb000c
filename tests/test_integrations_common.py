"""shapley.integrations.common in the main environment: the stand-ins for a singular kernel's ``-inf`` total keep
the order of the limit they stand for (issue 32): identical answers rank at least as certain as near-identical
ones. ``identical_first`` is also the check of tests_integrations/ (both integration environments)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from shapley.core.entropy import HALF_LOG_2PIE, shapley_uncertainty
from shapley.core.kernel import correlation_matrix, kernel_matrix
from shapley.core.psd import DEFAULT_EPS, PSD_POLICIES
from shapley.integrations.common import LOG_SMALLEST_DOUBLE, confidence_from_total, defined_total, singular_total

NEAR_IDENTICAL = (0.9999, 0.999, 0.99)
"""Entailment between every two different answers of a near-identical question (1: identical answers)."""


def agreeing(n: int, c: float) -> np.ndarray:
    """(n, n) entailment matrix with every off-diagonal entry ``c``."""
    P = np.full((n, n), c)
    np.fill_diagonal(P, 1.0)
    return P


def identical_first(uncertainty: Callable[[float], float]) -> bool:
    """True when ``uncertainty(c)`` (higher = less certain) of identical answers (``c = 1``) is at most that of
    every near-identical question ``c`` of :data:`NEAR_IDENTICAL`."""
    return all(uncertainty(1.0) <= uncertainty(c) for c in NEAR_IDENTICAL)


def old_floored_total(P: np.ndarray) -> float:
    """The stand-in before issue 32: the entropy with R's eigenvalues below ``DEFAULT_EPS`` lifted to it."""
    lam = np.linalg.eigvalsh(kernel_matrix(correlation_matrix(P), 1.0))
    return float(len(P) * HALF_LOG_2PIE + 0.5 * np.sum(np.log(np.maximum(lam, DEFAULT_EPS))))


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("policy", PSD_POLICIES)
def test_identical_answers_rank_at_least_as_certain_as_near_identical(n, policy):
    def total(c: float) -> float:
        return shapley_uncertainty(agreeing(n, c), 1.0, psd_policy=policy)

    assert identical_first(lambda c: defined_total(agreeing(n, c), 1.0, policy))
    assert identical_first(lambda c: -confidence_from_total(total(c), n))  # uqlm's map: higher = more certain
    assert defined_total(agreeing(n, 0.99), 1.0, policy) == shapley_uncertainty(agreeing(n, 0.99), 1.0)


@pytest.mark.parametrize("n", [3, 5])
def test_the_check_fails_on_the_old_floored_total(n):
    assert not identical_first(lambda c: old_floored_total(agreeing(n, c)))
    assert old_floored_total(agreeing(n, 1.0)) > shapley_uncertainty(agreeing(n, 0.9999), 1.0)


def groups(n: int, k: int) -> np.ndarray:
    """(n, n) entailment matrix of n answers in k groups of identical answers (none entail across groups)."""
    label = np.arange(n) % k
    return (label[:, None] == label[None, :]).astype(float)


@pytest.mark.parametrize("n", [3, 5, 10, 30])
def test_singular_total_is_below_every_finite_total_and_orders_by_collapsed_dimensions(n):
    floor = n * (HALF_LOG_2PIE + LOG_SMALLEST_DOUBLE)  # the least finite total of n answers
    one, two = (singular_total(groups(n, k), 1.0, "raise") for k in (1, 2))
    assert one < two < floor  # one group collapses n - 1 dimensions, two groups n - 2
    near = [shapley_uncertainty(agreeing(n, 1.0 - 10.0**-k), 1.0) for k in range(1, 9)]  # the last ones: -inf
    assert near == sorted(near, reverse=True)  # the limit: lower as the answers approach identity
    assert all(floor < t for t in near[:6]) and all(math.isfinite(t) for t in near[:6])


@pytest.mark.parametrize("n", [3, 5])
def test_the_metrics_rank_a_singular_total_below_near_identical_ones(n):
    """The metrics' stand-in for -inf (``rankable``: below the lowest finite score) keeps the same order."""
    from shapley.pipeline.evaluate.comparisons import rankable

    u = np.array([shapley_uncertainty(agreeing(n, c), 1.0) for c in (1.0, *NEAR_IDENTICAL)])
    r, n_inf = rankable(u)
    assert n_inf == 1 and np.isfinite(r).all() and np.argsort(r).tolist() == [0, 1, 2, 3]
