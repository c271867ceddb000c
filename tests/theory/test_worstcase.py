"""Theory checks behind notebooks/psd.md: eigenvalue map, Gershgorin bounds, exact worst case beta*(n)."""

from __future__ import annotations

import math

import pytest
import sympy as sp
from hypothesis import given, settings, target
from hypothesis import strategies as st

import shapley
from shapley.theory import symbolic
from shapley.theory import worstcase as wc
from tests.strategies import near_worst_C


def test_eigenvalue_map_and_bounds_symbolic() -> None:
    sym = symbolic.symbolic_bounds()
    assert sym["eig_map_check"] == sp.zeros(3, 3)
    n, beta = sp.symbols("n beta", positive=True)
    assert sp.simplify(sym["paper"].rhs - 1 / (n + 1)) == 0 and sym["paper"].lhs == beta
    assert sp.simplify(sym["gershgorin"].rhs - 1 / (n - 1)) == 0
    assert sp.simplify(sym["ratio"] - (n + 1) / (n - 1)) == 0
    a = sp.Symbol("a", positive=True)
    assert sp.simplify(sym["two_group_even"] - (1 - a) * (1 - n / 2)) == 0


@pytest.mark.parametrize("n", range(2, 51))
def test_gershgorin_bound_is_less_conservative_than_papers(n: int) -> None:
    assert shapley.gershgorin_beta_bound(n) > shapley.paper_beta_bound(n)
    assert wc.beta_star(n) >= shapley.gershgorin_beta_bound(n)


@pytest.mark.parametrize("n", range(1, wc.EXHAUSTIVE_MAX_N + 1))
def test_closed_form_matches_exhaustive_vertex_search(n: int) -> None:
    assert wc.exhaustive_vertex_search(n) == pytest.approx(wc.min_kernel_eigenvalue(n), abs=1e-12)


@pytest.mark.parametrize("n", range(2, 13))
def test_closed_form_matches_all_two_group_splits(n: int) -> None:
    assert wc.partition_search(n) == pytest.approx(wc.min_kernel_eigenvalue(n), abs=1e-12)


@pytest.mark.parametrize("n", range(3, 21))
def test_beta_star_is_tight(n: int) -> None:
    C = wc.two_group_C(n // 2, n - n // 2)
    b = wc.beta_star(n)
    assert shapley.min_eigenvalue(shapley.kernel_matrix(C, b)) == pytest.approx(0.0, abs=1e-12)
    assert shapley.min_eigenvalue(shapley.kernel_matrix(C, min(1.0, b * (1 + 1e-6)))) < -1e-12


def _fraction():
    """Where beta sits below its bound: at the bound, just below it, or anywhere (the boundary is where a
    wrong bound shows)."""
    return st.one_of(st.just(1.0), st.floats(0.9, 1.0), st.floats(1e-3, 1.0))


@st.composite
def c_and_beta(draw, bound):
    """(C, beta): C anywhere in [0, 1] (vertices likely) or near the worst case (a two-group split, drawn
    sizes, perturbed, permuted); beta a drawn fraction of ``bound(n)``."""
    n = draw(st.integers(2, 12))
    if draw(st.booleans()):
        C = draw(near_worst_C(n, n))
    else:
        m = n * (n - 1) // 2
        vals = draw(st.lists(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0)), min_size=m, max_size=m))
        C = wc.symmetric_from_upper(n, vals)
    return C, draw(_fraction()) * bound(n)


def _psd_below(bound, max_examples: int = 150):
    """The property "R_beta is PSD for every C when beta <= bound(n)", as a runnable Hypothesis test, so
    that it can be run against a mutant bound too. ``target`` pushes towards the smallest eigenvalue."""

    @settings(max_examples=max_examples, database=None)
    @given(c_and_beta(bound))
    def prop(cb) -> None:
        C, beta = cb
        R = shapley.kernel_matrix(C, beta)
        target(-shapley.min_eigenvalue(R))
        assert shapley.is_psd(R)

    return prop


def test_kernel_is_psd_for_every_C_when_beta_below_gershgorin() -> None:
    _psd_below(lambda n: shapley.gershgorin_beta_bound(n))()


def test_kernel_is_psd_for_every_C_when_beta_below_exact_threshold() -> None:
    _psd_below(lambda n: wc.beta_star(n))()


@pytest.mark.parametrize("factor", [1.1, 1.2])
def test_psd_property_catches_an_inflated_beta_star(monkeypatch, factor: float) -> None:
    """A beta* too large by 10 % is wrong for every n >= 3; the same property, run against that mutant,
    fails (and passes on the real beta*, above)."""
    real = wc.beta_star
    monkeypatch.setattr(wc, "beta_star", lambda n: min(1.0, factor * real(n)))
    with pytest.raises(AssertionError):
        _psd_below(lambda n: wc.beta_star(n))()


def test_psd_property_catches_a_doubled_gershgorin_bound(monkeypatch) -> None:
    """For kernel matrices (entries in [exp(-1/2), 1]) a 2x-inflated Gershgorin bound 2/(n-1) is wrong only
    at n = 3 (beta = 1 > beta*(3)); from n = 4 it stays below beta*(n). The property, aimed at the worst
    case, still catches it; Gershgorin's own class (off-diagonal entries in [-1, 1]) is in test_core.py."""
    assert [n for n in range(3, 2000) if 2 / (n - 1) > wc.beta_star(n)] == [3]
    real = shapley.gershgorin_beta_bound
    monkeypatch.setattr(shapley, "gershgorin_beta_bound", lambda n: min(1.0, 2 * real(n)))
    with pytest.raises(AssertionError):
        _psd_below(lambda n: shapley.gershgorin_beta_bound(n), max_examples=400)()


def test_beta_half_first_fails_at_eight_answers() -> None:
    """The notebook's conclusion from the closed form."""
    assert not shapley.is_psd(shapley.kernel_matrix(wc.two_group_C(4, 4), 0.5))  # the closed form's witness
    assert 1 + 0.5 * (wc.exhaustive_vertex_search(7) - 1) > 0  # no vertex (hence no C) breaks beta = 0.5 at n = 7
    assert shapley.is_psd(shapley.kernel_matrix(wc.two_group_C(3, 4), 0.5))
    assert wc.smallest_failing_n(0.5) == 8
    assert wc.beta_star(7) > 0.5 > wc.beta_star(8)


def test_illustrative_matrix_is_indefinite_then_fixed_by_kernel() -> None:
    C = shapley.correlation_matrix(wc.illustrative_entailment())
    assert shapley.min_eigenvalue(C) < 0
    assert shapley.min_eigenvalue(shapley.kernel_matrix(C, 0.5)) > 0


def test_worst_eight_answer_pattern_survives_kernel_at_half() -> None:
    C8 = wc.two_group_C(4, 4)
    R8 = shapley.kernel_matrix(C8, 0.5)
    assert shapley.min_eigenvalue(R8) < -0.05  # the lowest point of x^T R8 x on the unit sphere
    with pytest.warns(shapley.PSDRepairWarning):
        _, report = shapley.ensure_psd(R8, "shrink")
    assert 0.5 * report.shrink_factor == pytest.approx(wc.beta_star(8), rel=1e-5)


def test_closed_form_values_quoted_in_verdict() -> None:
    assert round(wc.beta_star(3), 3) == 0.875
    assert round(wc.beta_star(7), 3) == 0.510 and round(wc.beta_star(8), 3) == 0.459
    assert math.isclose(wc.min_kernel_eigenvalue(8), (1 - wc.A_FLOOR) * (1 - 4), rel_tol=1e-12)


def test_validation() -> None:
    with pytest.raises(ValueError):
        wc.exhaustive_vertex_search(wc.EXHAUSTIVE_MAX_N + 1)
