"""shapley.integrations.common in the main environment: the stand-ins for a singular kernel's ``-inf`` total keep
the order of the limit they stand for (issue 32): identical answers rank at least as certain as near-identical
ones. ``identical_first`` is also the check of tests_integrations/ (both integration environments). The uqlm
confidence does not depend on the number of answers for a fixed pairwise agreement, and the checks both adapters
share refuse what they would otherwise convert (issue 33)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from shapley.core import validate
from shapley.core.entropy import HALF_LOG_2PIE, shapley_uncertainty
from shapley.core.kernel import correlation_matrix, kernel_matrix
from shapley.core.psd import DEFAULT_EPS, PSD_POLICIES, PSDRepairWarning
from shapley.integrations.common import (
    LOG_SMALLEST_DOUBLE,
    cache_option,
    confidence_from_total,
    defined_total,
    entailment_matrix,
    equicorrelated_log_det,
    singular_total,
)

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


def test_the_total_equals_the_cores_under_nearest_on_an_indefinite_kernel():
    """``defined_total`` (what LM-Polygraph's ``ShapleyUncertainty`` returns per question) is the core's total under
    the same PSD policy on an indefinite kernel too, not only on PSD ones: here R has a negative eigenvalue, the
    core's default policy refuses it and ``"nearest"`` repairs it, the same way in both."""
    C = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    assert np.linalg.eigvalsh(kernel_matrix(correlation_matrix(C), 1.0))[0] < -0.1
    with pytest.raises(ValueError, match="not positive semi-definite"):
        shapley_uncertainty(C, 1.0)
    with pytest.warns(PSDRepairWarning):
        total = defined_total(C, 1.0, "nearest")
    with pytest.warns(PSDRepairWarning):
        assert math.isfinite(total) and total == shapley_uncertainty(C, 1.0, psd_policy="nearest")


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


# issue 33, item 1: the uqlm confidence depends on the pairwise agreement, not on the number of answers


@pytest.mark.parametrize("beta", [0.5, 1.0])
@pytest.mark.parametrize("c", [0.0, 0.3, 0.7, 0.99, 1.0])
def test_confidence_of_a_fixed_pairwise_agreement_is_independent_of_n(beta, c):
    """Every two answers entail each other with ``c``: R is equicorrelated at ``rho = beta exp(-(1 - c)**2 / 2)``
    whatever n, and the confidence is that rho at every n (identical answers: ``c = 1``, rho = beta)."""
    rho = beta * math.exp(-((1.0 - c) ** 2) / 2.0)
    got = [confidence_from_total(shapley_uncertainty(agreeing(n, c), beta), n) for n in (2, 3, 6, 21, 51)]
    if beta == 1.0 and c == 1.0:
        assert got == [1.0] * 5  # singular: -inf at every n
    else:
        np.testing.assert_allclose(got, rho, rtol=0, atol=1e-12)


def test_confidence_ties_finite_totals_with_a_singular_r_below_the_float64_edge():
    """For a fixed n the map never reverses the order of the totals, but it is not strictly decreasing in float64:
    every finite total whose ln det R lies below the equicorrelated one at the largest double below 1 maps to
    exactly 1, the confidence of a singular R (book/integrations.md says so, with this edge glued)."""
    for n in (3, 10, 150):
        edge = n * HALF_LOG_2PIE + 0.5 * equicorrelated_log_det(float(np.nextafter(1.0, 0.0)), n)
        assert math.isfinite(edge)
        assert confidence_from_total(edge - 1.0, n) == confidence_from_total(2 * edge, n) == 1.0
        assert confidence_from_total(edge + 1.0, n) < 1.0
        totals = np.linspace(edge - 5.0, edge + 50.0, 400)
        conf = [confidence_from_total(float(t), n) for t in totals]
        assert all(a >= b for a, b in zip(conf, conf[1:], strict=False))  # never reverses the order


def test_the_n_check_fails_on_the_old_map():
    """The map before issue 33, ``1 - det(R) ** (1/n)``, grows with n for identical answers at beta = 0.5."""

    def old(total: float, n: int) -> float:
        return 1.0 - math.exp(2.0 * (total - n * HALF_LOG_2PIE) / n)

    got = [old(shapley_uncertainty(agreeing(n, 1.0), 0.5), n) for n in (2, 3, 6, 21, 51)]
    assert got == sorted(got) and got[-1] - got[0] > 0.3


def test_confidence_needs_two_answers_and_a_number():
    with pytest.raises(ValueError, match="n must be"):
        confidence_from_total(HALF_LOG_2PIE, 1)
    with pytest.raises(ValueError, match="NaN"):
        confidence_from_total(math.nan, 3)
    with pytest.raises(ValueError, match="total must be a real number; got str '1.0'"):
        confidence_from_total("1.0", 3)


# issue 33, items 2-4, 6 and 8: the checks both adapters share (each adapter's tests check that it uses them)


@pytest.mark.parametrize(
    ("cache", "shown"),
    [("false", "str 'false'"), (" True", "str ' True'"), ("0", "str '0'"), (5, "int 5"), (1.0, "float 1.0")],
)
def test_cache_option_refuses_words_of_booleans_and_other_types(cache, shown):
    with pytest.raises(ValueError, match=rf"^cache must be True, False, None or a file path; got {re.escape(shown)} "):
        cache_option(cache)


def test_cache_option_keeps_booleans_none_and_paths():
    assert [cache_option(c) for c in (True, False, None, np.bool_(True), "entail.sqlite")] == [
        True,
        False,
        None,
        True,
        "entail.sqlite",
    ]
    assert cache_option(Path("false")) == Path("false")  # a path object says it is a path


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ("abc", "q must be a sequence of strings; got str"),  # not three answers 'a', 'b', 'c'
        (None, "q must be a sequence of strings; got NoneType"),
        ([], "q must hold at least one answer"),
        (["a", None], "q[1] must be a str; got NoneType None"),
        (["1", 1], "q[1] must be a str; got int 1"),
        (["ok", "a\ud800b"], r"q[1] holds text that cannot be encoded as UTF-8 (surrogates not allowed: '\ud800'"),
    ],
)
def test_validate_texts_refuses_what_would_be_coerced(texts, message):
    with pytest.raises(ValueError) as e:
        validate.texts(texts, "q")
    assert str(e.value).startswith(message)


def test_validate_texts_keeps_a_list_of_strings():
    assert validate.texts(("Paris", "Paris."), "q") == ["Paris", "Paris."]


@pytest.mark.parametrize(
    ("M", "kind"),
    [
        (np.array([[1.0, 0.5j], [0.5, 1.0]]), "complex numbers"),  # not scored without its imaginary part
        ([["1", "0.5"], ["0.5", "1"]], "strings"),  # not parsed
        (np.array([[1.0, None], [0.5, 1.0]], dtype=object), "Python objects"),  # not "contains NaN"
        (np.eye(2, dtype=bool), "booleans"),
    ],
)
def test_entailment_matrix_refuses_by_kind_before_converting(M, kind):
    with pytest.raises(ValueError, match=f"^E must be a numeric \\(n, n\\) array; got an array of {kind}"):
        entailment_matrix(M, "E")


def test_entailment_matrix_takes_one_ulp_of_its_float_type_and_prints_the_rest_exactly():
    above = np.float32(1.0) + np.finfo(np.float32).eps  # one float32 ulp above 1: identical texts, float32 maths
    E = np.array([[1.0, above], [above, 1.0]], dtype=np.float32)
    assert entailment_matrix(E, "E").tolist() == [[1.0, 1.0], [1.0, 1.0]]
    for M, shown in [
        (np.array([[1.0, 1.0000001], [0.5, 1.0]]), "1.0000001 at [0, 1]"),  # float64: the core's 1e-9
        (np.array([[1.0, 0.5], [-2.5e-7, 1.0]], dtype=np.float32), f"{float(np.float32(-2.5e-7))!r} at [1, 0]"),
    ]:
        with pytest.raises(ValueError) as e:
            entailment_matrix(M, "E")
        assert str(e.value) == f"E must hold probabilities in [0, 1]; got {shown}"
