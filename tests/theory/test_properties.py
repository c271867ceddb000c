"""Theory checks behind notebooks/properties.md: efficiency and the three properties in two readings.

Each test calls the same ``shapley.theory`` function as the notebook and asserts the notebook's conclusion
(searches are derandomized, so their outcome is reproducible).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shapley
from shapley.theory import properties as pr
from shapley.theory import search as se
from shapley.theory import symbolic as sym


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


def test_property1_rv_holds_with_exact_copy() -> None:
    res = se.search_counterexample("1", "rv", n_range=(3, 5))
    assert not res.found and res.examples_run == se.SEARCH_MAX_EXAMPLES


def test_property1_rv_fails_with_imperfect_copy() -> None:
    res = se.search_counterexample("1", "rv", rho=0.99, n_range=(3, 5))
    assert res.found
    bad = res.check.failures()
    assert bad and all(r.i == res.check.detail["argmin"] for r in bad)  # the i = m case, as the notebook says
    assert pr.property1_rv_rho_condition(res.example["M"])["fails_at_m_for_rho_below_1"]


@settings(max_examples=60)
@given(st.integers(3, 5), st.integers(0, 10_000), st.floats(0.0, 0.999))
def test_property1_rv_closed_form_condition(n: int, seed: int, rho: float) -> None:
    """Direct check agrees with the chain-rule condition: holds iff rho^2 >= R2_i (i != m) and R2_m = 0."""
    R = pr.random_correlation(n, seed, max_partial=0.8)
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


def test_property1_sentence_fails() -> None:
    res = se.search_counterexample("1", "sentence", n_range=(3, 6))
    assert res.found and res.example["M"].shape[0] == 4
    strict = se.search_counterexample("1", "sentence", n_range=(3, 6), strict_only=True)
    assert strict.found and any(r.required == "<" for r in strict.check.failures())
    safe = se.search_counterexample("1", "sentence", n_range=(3, 6), beta="gershgorin")
    assert safe.found


# --- Property 2 --------------------------------------------------------------------------------------


def test_property2_rv_holds() -> None:
    res = se.search_counterexample("2", "rv", n_range=(3, 5))
    assert not res.found and res.examples_run == se.SEARCH_MAX_EXAMPLES


def test_property2_sentence_fails_on_hub_pattern_from_six_answers() -> None:
    assert pr.hub_weight(5, 0.5) > 0 > pr.hub_weight(6, 0.5)
    chk = pr.check_property2(pr.property2_witness_sentence(6), "sentence", beta=0.5)
    assert not chk.holds
    (bad,) = chk.failures()
    assert bad.i == 5 and bad.old - bad.new > 1e-4  # a real drop, far above round-off
    # The notebook records that Hypothesis does not find it within its budget:
    assert not se.search_counterexample("2", "sentence", n_range=(3, 7)).found


def test_property2_sentence_safe_beta_not_refuted() -> None:
    assert all(pr.hub_weight(n, "gershgorin") > 0 for n in range(3, 13))
    assert not se.search_counterexample("2", "sentence", n_range=(3, 7), beta="gershgorin").found


# --- Property 3 --------------------------------------------------------------------------------------


def test_property3_rv_fails() -> None:
    R_old, R_new, j = pr.property3_witness_rv()
    chk = pr.check_property3(R_old, R_new, j, "rv")
    assert chk.detail["premise"] and not chk.detail["conclusion"] and not chk.holds
    assert pr.rv_r_squared(R_new)[j] > pr.rv_r_squared(R_old)[j]
    res = se.search_counterexample("3", "rv", n_range=(3, 4))
    assert res.found and res.check.detail["premise"]


def test_property3_sentence() -> None:
    C_old, C_new, j = pr.property3_witness_sentence(7)
    chk = pr.check_property3(C_old, C_new, j, "sentence", beta=0.5)
    assert chk.detail["premise"] and chk.detail["premise_margin"] > 1e-4 and not chk.holds
    assert not se.search_counterexample("3", "sentence", n_range=(3, 6)).found
    assert not se.search_counterexample("3", "sentence", n_range=(3, 6), beta="gershgorin").found


def test_premise_requires_matching_matrices() -> None:
    with pytest.raises(ValueError):
        pr.consistency_premise(np.eye(3), np.eye(4), 0)


# --- Appendix A steps ------------------------------------------------------------------------------------


def test_appendix_step_property1_is_false() -> None:
    res = se.search_step_counterexample("1")
    assert res.found and res.check.wrong_way


def test_appendix_step_property2_is_true() -> None:
    assert not se.search_step_counterexample("2").found


def test_appendix_step_property3_is_false() -> None:
    R_old, R_new, j = pr.property3_witness_rv()
    assert pr.appendix_step_property3(R_old, R_new, j).wrong_way == (0,)
    assert se.search_step_counterexample("3").found


# --- building blocks ------------------------------------------------------------------------------------


def test_exact_copy_total_is_minus_infinity() -> None:
    R = pr.random_correlation(4, seed=3)
    m = pr.argmin_player(R)
    i = (m + 1) % 4
    assert pr.total_uncertainty(pr.rv_duplicate(R, i, m, 1.0)) == -math.inf
    assert pr.total_uncertainty(pr.rv_duplicate(R, m, m, 1.0)) == pytest.approx(pr.total_uncertainty(R))


def test_sentence_replacements() -> None:
    C = np.array([[1.0, 0.2, 0.7], [0.2, 1.0, 0.4], [0.7, 0.4, 1.0]])
    D = pr.sentence_duplicate(C, 2, 0)
    assert D[2, 0] == 1.0 and D[2, 1] == C[0, 1]
    assert np.array_equal(pr.sentence_duplicate(C, 1, 1), C)
    U = pr.sentence_unrelated(C, 1)
    assert U[1, 0] == U[1, 2] == 0.0 and U[1, 1] == 1.0


def test_validation() -> None:
    with pytest.raises(ValueError):
        pr.check_property1(np.eye(3), "bogus")
    with pytest.raises(ValueError):
        pr.resolve_beta("paper", 3)
    with pytest.raises(ValueError):
        pr.rv_duplicate(np.eye(3), 0, 1, rho=1.5)


# --- Propositions 3.5 and 3.6 reading by reading (issue 9, A2-A3) ----------------------------------------


def test_partials_of_one_give_a_singular_correlation_matrix() -> None:
    R = pr.degenerate_witness()
    assert np.array_equal(R[0], R[1]) and pr.is_singular(R) and shapley.min_eigenvalue(R) > -1e-12
    with pytest.raises(ValueError):
        pr.corr_from_partials(np.array([[0.0, 1.1], [0.0, 0.0]]))


def test_rv_search_reaches_singular_R_only_when_allowed() -> None:
    """The non-singular domain cannot reach the paper's degenerate case; the closed one finds it."""
    assert not se.search_counterexample("2", "rv", n_range=(3, 5)).found
    res = se.search_counterexample("2", "rv", n_range=(3, 5), singular=True)
    assert res.found and pr.is_singular(res.example["M"])
    assert all(r.old == r.new == -math.inf and r.required == ">" for r in res.check.failures())
    assert pr.undefined_shapley_message(res.example["M"]) is not None  # phi undefined on the same input
    with pytest.raises(ValueError, match="Property 2"):
        se.search_counterexample("1", "rv", singular=True)


def test_property1_refuses_singular_R() -> None:
    with pytest.raises(ValueError, match="singular"):
        pr.check_property1(pr.degenerate_witness(), "rv")


def test_prop35_nonsingular_reading_is_contradicted_by_the_chain_rule() -> None:
    nonsingular, degenerate = pr.prop35_readings(n_matrices=60, seed=1)
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
    rows = {r.reading: r for r in pr.prop36_readings()}
    rv = rows["random variables, non-singular R"]
    assert rv.verdict == "contradicted" and rv.witness["property3"].detail["premise"]
    assert not rv.witness["property3"].holds
    assert rows["random variables, the paper's degenerate example (a pair with rho = 1)"].witness["shapley_error"]
    p3 = rows["sentences through the kernel (beta = 0.5), Property 3"]
    assert p3.verdict == "contradicted" and not p3.witness["property3"].holds
    p12 = rows["sentences through the kernel (beta = 0.5), Properties 1-2"]
    assert not p12.witness["property1"].holds and not p12.witness["property2"].holds
    assert any(r.required == "<" for r in p12.witness["property1"].failures())  # the strict part fails
    b = p12.witness["premises"]
    assert b["duplicate_R"] == 0.5 < 1 and 0 < b["unrelated_R"] == pytest.approx(0.5 * math.exp(-0.5))


def test_property1_sentence_witness_is_the_searched_example() -> None:
    res = se.search_counterexample("1", "sentence", n_range=(3, 6), strict_only=True)
    assert np.array_equal(res.example["M"], pr.property1_witness_sentence())


@pytest.mark.parametrize("beta", [0.25, 0.5, 0.9])
def test_sentence_premises_cannot_occur_below_beta_one(beta: float) -> None:
    b = pr.sentence_premise_bounds(beta)
    assert b["duplicate_R"] == pytest.approx(beta) and b["unrelated_R"] == pytest.approx(beta * math.exp(-0.5))
