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


def _is_small(C: np.ndarray, max_n: int, max_links: int) -> bool:
    """A shrunk example is small: few answers and few related pairs (non-zero C off the diagonal)."""
    return C.shape[0] <= max_n and int(np.count_nonzero(np.triu(C, 1))) <= max_links


def test_property1_sentence_fails() -> None:
    """Each shrunk example is re-checked as a counterexample, and is small (not pinned entry by entry)."""
    res = se.search_counterexample("1", "sentence", n_range=(3, 6))
    assert res.found and not pr.check_property1(res.example["M"], "sentence", beta=0.5).holds
    assert _is_small(res.example["M"], max_n=5, max_links=4)
    safe = se.search_counterexample("1", "sentence", n_range=(3, 6), beta="gershgorin")
    assert safe.found and not pr.check_property1(safe.example["M"], "sentence", beta="gershgorin").holds


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


def test_property2_sentence_safe_beta_reported_with_budget() -> None:
    """At beta = 1/(n-1) no counterexample is known: the search's "not found" is a budget, not a proof."""
    assert all(pr.hub_weight(n, "gershgorin") > 0 for n in range(3, 13))
    res = se.search_counterexample("2", "sentence", n_range=(3, 7), beta="gershgorin")
    _assert_honest(res, lambda ex: pr.check_property2(ex["M"], "sentence", beta="gershgorin").holds)


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
    for beta in (0.5, "gershgorin"):  # no known witness lies in this domain: report the budget
        res = se.search_counterexample("3", "sentence", n_range=(3, 6), beta=beta)
        _assert_honest(
            res, lambda ex, b=beta: pr.check_property3(ex["M_old"], ex["M_new"], ex["j"], "sentence", beta=b).holds
        )


def test_premise_requires_matching_matrices() -> None:
    with pytest.raises(ValueError):
        pr.check_property3(np.eye(3), np.eye(4), 0)


# --- Appendix A steps ------------------------------------------------------------------------------------


def test_appendix_step_property1_is_false() -> None:
    res = se.search_step_counterexample("1")
    assert res.found and res.check.wrong_way


def test_appendix_step_property2_is_true() -> None:
    """Proved (submodularity of entropy, notebooks/properties.md), so a found example would be a bug; the
    search ran its whole budget."""
    res = se.search_step_counterexample("2")
    assert not res.found and res.examples_run == se.SEARCH_MAX_EXAMPLES


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
    R = pv.degenerate_witness()
    assert np.array_equal(R[0], R[1]) and pr.is_singular(R) and shapley.min_eigenvalue(R) > -1e-12
    with pytest.raises(ValueError):
        pr.corr_from_partials(np.array([[0.0, 1.1], [0.0, 0.0]]))


def test_rv_search_reaches_singular_R_only_when_allowed() -> None:
    """The non-singular domain cannot reach the paper's degenerate case (test_property2_rv_holds); the closed one
    finds it."""
    res = se.search_counterexample("2", "rv", n_range=(3, 5), singular=True)
    assert res.found and pr.is_singular(res.example["M"])
    assert all(r.old == r.new == -math.inf and r.required == ">" for r in res.check.failures())
    assert pv.undefined_shapley_message(res.example["M"]) is not None  # phi undefined on the same input
    with pytest.raises(ValueError, match="Property 2"):
        se.search_counterexample("1", "rv", singular=True)


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
    b = p12.witness["premises"]
    assert b["duplicate_R"] == 0.5 < 1 and 0 < b["unrelated_R"] == pytest.approx(0.5 * math.exp(-0.5))


def test_property1_sentence_strict_example_is_a_small_counterexample() -> None:
    """The shrunk example (whatever the Hypothesis version) fails the strict part, and is small; so does
    the hand-kept witness printed in the notebook."""
    res = se.search_counterexample("1", "sentence", n_range=(3, 6), strict_only=True)
    assert _in_domain(pr.property1_witness_sentence(), (3, 6), 10) and res.found  # recall: inside its domain
    for C in (res.example["M"], pr.property1_witness_sentence()):
        chk = pr.check_property1(C, "sentence", beta=0.5)
        assert any(r.required == "<" for r in chk.failures())
        assert _is_small(C, max_n=5, max_links=4)


@pytest.mark.parametrize("beta", [0.25, 0.5, 0.9])
def test_sentence_premises_cannot_occur_below_beta_one(beta: float) -> None:
    b = pv.sentence_premise_bounds(beta)
    assert b["duplicate_R"] == pytest.approx(beta) and b["unrelated_R"] == pytest.approx(beta * math.exp(-0.5))


# --- Recall: each search finds every known witness that lies in its own domain (issue 20) ----------------


def _assert_honest(res: se.SearchResult, holds_on) -> None:
    """A search result that is not asserted as a property: a found example is re-checked as a real
    counterexample; "not found" is reported with its budget (every Hypothesis example plus the sweep)."""
    assert res.examples_run == res.settings["max_examples"] + res.families_run
    if res.found:
        assert not holds_on(res.example)
    else:
        assert res.families_run > 0  # the structured sweep ran, over the whole family


def _in_domain(M: np.ndarray, n_range: tuple[int, int], steps: int) -> bool:
    """Does C lie in the sentence search's domain: n answers in n_range, entries on {0, 1/steps, ..., 1}?"""
    k = M * steps
    return n_range[0] <= M.shape[0] <= n_range[1] and bool(np.allclose(k, np.round(k), atol=1e-9))


P2_WITNESSES = [  # (C, n_range, steps, in the domain?)
    (pr.hub_C(7, 0.1), (3, 7), 10, True),  # the hub with link 0.1 at n = 7: on the tenths grid
    (pr.property2_witness_sentence(6), (3, 7), 10, False),  # link 0.05: off the tenths grid...
    (pr.property2_witness_sentence(6), (6, 6), 20, True),  # ...on the twentieths grid
]


@pytest.mark.parametrize(("C", "n_range", "steps", "inside"), P2_WITNESSES)
def test_property2_sentence_search_recalls_known_witnesses(C, n_range, steps, inside) -> None:
    assert not pr.check_property2(C, "sentence", beta=0.5).holds  # the witness is a witness
    assert _in_domain(C, n_range, steps) == inside
    if not inside:
        return  # outside the domain: checked directly above; no search can be asked to find it
    tried = [x for _, (x, _j) in se.sentence_families("2", n_range, steps)]
    assert any(np.array_equal(C, x) for x in tried)  # the search tries it...
    res = se.search_counterexample("2", "sentence", n_range=n_range, steps=steps, max_examples=50)
    assert res.found and not pr.check_property2(res.example["M"], "sentence", beta=0.5).holds  # ...and finds one


def test_property2_sentence_search_finds_the_hub_with_its_published_budget() -> None:
    """The notebook's search (n = 3..7, tenths, the default budget) finds a counterexample; Hypothesis alone
    did not (the sweep runs only then), and its budget is reported."""
    res = se.search_counterexample("2", "sentence", n_range=(3, 7))
    assert res.found and not pr.check_property2(res.example["M"], "sentence", beta=0.5).holds
    assert res.example["family"].startswith("hub(n=7")
    assert res.families_run > 0 and res.examples_run - res.families_run == se.SEARCH_MAX_EXAMPLES


def test_property3_sentence_hub_lies_outside_the_searched_domain() -> None:
    """The Property 3 hub needs n = 7 answers and a link of 0.005: outside n = 3..6 on the tenths grid, so
    the search is not asked to find it; the witness is checked directly."""
    C_old, C_new, j = pr.property3_witness_sentence(7)
    assert not _in_domain(C_old, (3, 6), 10)  # the witness fails: test_property3_sentence
    joint = np.zeros((8, 8))
    joint[:7, :7] = C_old
    joint[7, 7] = 1.0
    old, new = se._swap_in_g(joint, j)  # the search's input format reproduces the witness
    assert np.array_equal(old, C_old) and np.array_equal(new, C_new)


def test_sentence_families_validate_and_describe() -> None:
    with pytest.raises(ValueError, match="steps"):
        se.grid_values(0)
    res = se.search_counterexample("2", "sentence", n_range=(3, 3), max_examples=5)
    assert "hub and two-group split" in res.strategy and res.settings["steps"] == 10
