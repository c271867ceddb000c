"""Theory checks behind notebooks/properties.md: efficiency and the three properties in two readings.

Each test calls the same ``shapley.theory`` function as the notebook and asserts the notebook's conclusion. What the
page's (derandomised) searches find is pinned on their committed record, fresh from the code:
tests/theory/test_hypothesis_results.py.
"""

from __future__ import annotations

import itertools
import math
import time
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shapley
from shapley.theory import properties as pr
from shapley.theory import propositions as pv
from shapley.theory import search as se
from shapley.theory import symbolic as sym
from tests.strategies import vine_correlations


@pytest.mark.parametrize("n", [2, 3, 4])
def test_efficiency_symbolic(n: int) -> None:
    eff = sym.efficiency_symbolic(n)
    assert eff["difference"] == 0
    assert len(eff["phi"]) == n


def test_efficiency_numeric() -> None:
    gaps = [abs(pr.efficiency_gap(pr.random_correlation(n, seed))) for n in range(2, 9) for seed in range(30)]
    assert max(gaps) < 1e-9


def test_corr_from_partials_is_a_valid_correlation_matrix() -> None:
    for n in range(2, 7):
        R = pr.random_correlation(n, seed=n)
        assert np.allclose(np.diag(R), 1.0) and shapley.min_eigenvalue(R) > 0
    assert np.array_equal(pr.corr_from_partials(np.zeros((4, 4))), np.eye(4))


# --- Property 1 --------------------------------------------------------------------------------------


@settings(max_examples=60)
@given(vine_correlations(3, 5, max_partial=0.8), st.floats(0.0, 0.999))
def test_property1_rv_closed_form_condition(R: np.ndarray, rho: float) -> None:
    """Direct check agrees with the chain-rule condition: holds iff rho^2 >= R2_i (i != m) and R2_m = 0."""
    cond = pr.property1_rv_rho_condition(R)
    chk = pr.check_property1(R, "rv", rho=rho)
    m = cond["m"]
    margin = 1e-6
    for row in chk.rows:
        if row.i == m:
            if abs(row.new - row.old) > margin:  # a visible change at i = m is always a rise, i.e. a failure
                assert row.new > row.old and not row.holds and cond["fails_at_m_for_rho_below_1"]
        elif abs(rho**2 - cond["r2"][row.i]) > margin:
            assert row.holds == (rho**2 > cond["r2"][row.i])


# --- Property 2 --------------------------------------------------------------------------------------


def test_property2_sentence_fails_on_hub_pattern_from_six_answers() -> None:
    assert pr.hub_weight(5, 0.5) > 0 > pr.hub_weight(6, 0.5)
    assert all(pr.hub_weight(n, "gershgorin") > 0 for n in range(3, 13))  # no hub witness at beta = 1/(n-1)
    chk = pr.check_property2(pr.property2_witness_sentence(6), "sentence", beta=0.5)
    assert not chk.holds
    (bad,) = chk.failures()
    assert bad.i == 5 and bad.old - bad.new > 1e-4  # a real drop, far above round-off


# --- Property 3 --------------------------------------------------------------------------------------


def test_property3_rv_fails() -> None:
    R_old, R_new, j = pr.property3_witness_rv()
    chk = pr.check_property3(R_old, R_new, j, "rv")
    assert chk.detail["premise"] and not chk.detail["conclusion"] and not chk.holds
    assert pr.rv_r_squared(R_new)[j] > pr.rv_r_squared(R_old)[j]
    assert pr.appendix_step_property3(R_old, R_new, j).wrong_way == (0,)  # Appendix A's step (b) fails too


def test_property3_sentence() -> None:
    C_old, C_new, j = pr.property3_witness_sentence(7)
    chk = pr.check_property3(C_old, C_new, j, "sentence", beta=0.5)
    assert chk.detail["premise"] and chk.detail["premise_margin"] > 1e-4 and not chk.holds


def test_premise_requires_matching_matrices() -> None:
    with pytest.raises(ValueError):
        pr.check_property3(np.eye(3), np.eye(4), 0)


# --- building blocks ------------------------------------------------------------------------------------


def test_exact_copy_total_is_minus_infinity() -> None:
    R = pr.random_correlation(4, seed=3)
    m = pr.argmin_player(R)
    i = (m + 1) % 4
    assert pr.total_uncertainty(pr.with_duplicate(R, i, m)) == -math.inf
    assert pr.total_uncertainty(pr.with_duplicate(R, m, m)) == pytest.approx(pr.total_uncertainty(R))


def test_sentence_replacements() -> None:
    C = np.array([[1.0, 0.2, 0.7], [0.2, 1.0, 0.4], [0.7, 0.4, 1.0]])
    D = pr.with_duplicate(C, 2, 0)
    assert D[2, 0] == 1.0 and D[2, 1] == C[0, 1]
    assert np.array_equal(pr.with_duplicate(C, 1, 1), C)
    U = pr.with_unrelated(C, 1)
    assert U[1, 0] == U[1, 2] == 0.0 and U[1, 1] == 1.0


def test_validation() -> None:
    with pytest.raises(ValueError):
        pr.check_property1(np.eye(3), "bogus")
    with pytest.raises(ValueError):
        pr.resolve_beta("paper", 3)


# --- Propositions 3.5 and 3.6 reading by reading (issue 9, A2-A3) ----------------------------------------


def test_partials_of_one_give_a_singular_correlation_matrix() -> None:
    R = pv.degenerate_witness()
    assert np.array_equal(R[0], R[1]) and pr.is_singular(R) and shapley.min_eigenvalue(R) > -1e-12


def test_property1_refuses_singular_R() -> None:
    with pytest.raises(ValueError, match="singular"):
        pr.check_property1(pv.degenerate_witness(), "rv")


def test_prop35_nonsingular_reading_is_contradicted_by_the_chain_rule() -> None:
    nonsingular, degenerate = pv.prop35_readings(n_matrices=60, seed=1)
    w = nonsingular.witness
    assert nonsingular.verdict == "contradicted" and w["matrices"] == 60
    assert w["property1_failures"] == 0 and w["property2_failures"] == 0
    assert w["max_chain_rule_error"] < 1e-9 and w["smallest_strict_gain"] > 0
    assert degenerate.verdict == "reproduced"
    d = degenerate.witness
    assert [r.i for r in d["property2_failures"]] == [2]  # the answer related to the pair
    assert len(d["property1_strict_failures"]) == len(d["property1_rows"]) == 6  # every m, every i != m
    assert d["shapley_error"] and "undefined" in d["shapley_error"]


def test_prop36_readings_and_their_witnesses() -> None:
    rows = {r.reading: r for r in pv.prop36_readings()}
    rv = rows["random variables, non-singular R"]
    assert rv.verdict == "contradicted" and rv.witness["property3"].detail["premise"]
    assert not rv.witness["property3"].holds
    assert rows["random variables, the paper's degenerate example (a pair with rho = 1)"].witness["shapley_error"]
    p3 = rows["sentences through the kernel (beta = 0.5), Property 3"]
    assert p3.verdict == "contradicted" and not p3.witness["property3"].holds
    p12 = rows["sentences through the kernel (beta = 0.5), Properties 1-2"]
    assert not p12.witness["property1"].holds and not p12.witness["property2"].holds
    assert any(r.required == "<" for r in p12.witness["property1"].failures())  # the strict part fails
    assert p12.witness["premises"] == pv.sentence_premise_bounds(0.5)  # test_sentence_premises_cannot_occur...


def test_property1_sentence_witness_fails_the_strict_part_inside_the_searched_domain() -> None:
    """The hand-kept witness printed in the notebook (the search's shrunk example: test_hypothesis_results.py)."""
    C = pr.property1_witness_sentence()
    assert _in_domain(C, (3, 6)) and any(r.required == "<" for r in pr.check_property1(C, "sentence").failures())


@pytest.mark.parametrize("beta", [0.25, 0.5, 0.9])
def test_sentence_premises_cannot_occur_below_beta_one(beta: float) -> None:
    b = pv.sentence_premise_bounds(beta)
    assert b["duplicate_R"] == pytest.approx(beta) and b["unrelated_R"] == pytest.approx(beta * math.exp(-0.5))


# --- Recall: each search finds every known witness that lies in its own domain (issue 20) ----------------


def _in_domain(M: np.ndarray, n_range: tuple[int, int]) -> bool:
    """Does C lie in the sentence search's domain: n answers in n_range, entries on {0, 0.1, ..., 1}?"""
    k = M * se.GRID_STEPS
    return n_range[0] <= M.shape[0] <= n_range[1] and bool(np.allclose(k, np.round(k), atol=1e-9))


def test_property2_sentence_sweep_tries_the_hub_inside_its_domain() -> None:
    """Recall (issue 20): the hub with link 0.1 at n = 7 lies on the tenths grid, and the sweep tries it (the
    page's search finds a hub there: test_hypothesis_results.py); the link-0.05 witness lies off the grid."""
    inside, outside = pr.hub_C(7, 0.1), pr.property2_witness_sentence(6)
    for C in (inside, outside):
        assert not pr.check_property2(C, "sentence", beta=0.5).holds
    assert _in_domain(inside, (3, 7)) and not _in_domain(outside, (3, 7))
    assert any(np.array_equal(inside, x) for _, (x, _j) in se.sentence_families("2", (3, 7)))


def test_property3_sentence_hub_lies_outside_the_searched_domain() -> None:
    """The Property 3 hub needs n = 7 answers and a link of 0.005: outside n = 3..6 on the tenths grid, so
    the search is not asked to find it; the witness is checked directly."""
    C_old, C_new, j = pr.property3_witness_sentence(7)
    assert not _in_domain(C_old, (3, 6))  # the witness fails: test_property3_sentence
    joint = np.zeros((8, 8))
    joint[:7, :7] = C_old
    joint[7, 7] = 1.0
    old, new = se._swap_in_g(joint, j)  # the search's input format reproduces the witness
    assert np.array_equal(old, C_old) and np.array_equal(new, C_new)


def test_a_search_runs_the_same_examples_however_loaded_the_machine(monkeypatch) -> None:
    """Hypothesis stops looking for further failures 10 s (time.monotonic) after the first one; a racing clock (a
    loaded machine) must not change what a search runs or finds (search.count_based_stop). Without the freeze this
    search stops at 22 examples instead of 23."""
    search = partial(se.search_counterexample, "1", "rv", rho=0.99, n_range=(3, 5))
    calm = search()
    ticks = itertools.count(step=100.0)
    monkeypatch.setattr(time, "monotonic", lambda: next(ticks))
    raced = search()
    assert raced.examples_run == calm.examples_run and np.array_equal(raced.example["M"], calm.example["M"])
