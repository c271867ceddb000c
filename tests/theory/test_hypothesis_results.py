"""The properties page's committed searches (results/theory/properties_searches.json, ``make theory-results``):
every stored counterexample failing its property again, and the record's round trip on a tiny run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shapley.pipeline.rundir.settings import REPO_ROOT
from shapley.theory import hypothesis_results
from shapley.theory import properties as pr
from shapley.theory import propositions as pv

RESULTS = REPO_ROOT / "results"
RECORD = hypothesis_results.RECORD
TINY = {
    **RECORD.settings,
    "max_examples": 5,
    "searches": {
        "p2_rv": {"prop": "2", "reading": "rv", "kwargs": {"n_range": (3, 3)}},
        "p2_s": {"prop": "2", "reading": "sentence", "kwargs": {"n_range": (7, 7)}},
    },
    "steps": {"st2": {"prop": "2", "kwargs": {"n_range": (3, 3)}}},
    "chain_rule": {"n_matrices": 3, "seed": 0},
}


def _record():
    return RECORD.load(RESULTS / "theory")


def _is_small(C: np.ndarray, max_n: int = 5, max_links: int = 4) -> bool:
    """A shrunk example is small: few answers and few related pairs (non-zero C off the diagonal)."""
    return C.shape[0] <= max_n and int(np.count_nonzero(np.triu(C, 1))) <= max_links


def test_the_committed_record_holds_every_search_of_the_page_and_its_examples_fail_again():
    """What each search of the page found (its examples re-checked by search_results): these searches are
    derandomised, so the record, fresh from the code (tests/test_results_clean.py), pins their outcomes."""
    rec = _record()
    assert set(rec["searches"]) == set(hypothesis_results.SEARCHES) | set(hypothesis_results.STEPS)
    res = hypothesis_results.search_results(rec)
    found = {name for name, r in res.items() if r.found}
    assert found == {"p1_rv99", "p1_s", "p1_s_strict", "p1_safe", "p2_sing", "p2_s", "p3_rv", "st1", "st3"}
    for r in res.values():  # "not found" is reported with its budget: every Hypothesis example plus the sweep
        assert r.found or r.examples_run == rec["freshness"]["settings"]["max_examples"] + r.families_run
        assert r.found or r.reading == "rv" or r.families_run > 0
    assert all(r.i == res["p1_rv99"].check.detail["argmin"] for r in res["p1_rv99"].check.failures())  # i = m
    assert pr.property1_rv_rho_condition(res["p1_rv99"].example["M"])["fails_at_m_for_rho_below_1"]
    assert _is_small(res["p1_s"].example["M"]) and _is_small(res["p1_s_strict"].example["M"])
    assert np.array_equal(res["p1_s_strict"].example["M"], pr.property1_witness_sentence())
    assert any(r.required == "<" for r in res["p1_s_strict"].check.failures())  # the strict part fails
    sing = res["p2_sing"]  # the closed domain reaches the paper's degenerate case; phi is undefined there
    assert pr.is_singular(sing.example["M"]) and pv.undefined_shapley_message(sing.example["M"]) is not None
    assert all(r.old == r.new == -np.inf and r.required == ">" for r in sing.check.failures())
    assert res["p2_s"].example["family"].startswith("hub(n=7")  # Hypothesis missed it; the sweep found it
    assert res["p3_rv"].check.detail["premise"] and res["st1"].check.wrong_way and res["st3"].check.wrong_way
    assert "hub and two-group split" in res["p2_s"].strategy
    assert rec["chain_rule"]["property1_failures"] == rec["chain_rule"]["property2_failures"] == 0


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A record computed here with tiny budgets, written and read back as the page reads it."""
    return RECORD.load(RECORD.write(tmp_path_factory.mktemp("results"), TINY))


def test_a_tiny_record_round_trips_and_renders(tiny):
    results = hypothesis_results.search_results(tiny)
    assert set(results) == {"p2_rv", "p2_s", "st2"}
    assert not results["p2_rv"].found and results["p2_rv"].check is None and results["p2_rv"].examples_run == 5
    hub = results["p2_s"]  # Hypothesis misses it in 5 examples; the sweep finds the hub at n = 7
    assert hub.found and hub.example["family"].startswith("hub(n=7") and hub.families_run > 0
    assert isinstance(hub.example["M"], np.ndarray) and not hub.check.holds
    assert hub.check == pr.check_property2(hub.example["M"], "sentence", beta=0.5)
    assert hub.check.rows  # what the page's table shows
    chain = pv.prop35_readings(chain=tiny["chain_rule"])[0].witness
    assert chain == pv.chain_rule_check(3, 0)


def test_a_stored_example_that_no_longer_fails_is_refused(tiny):
    edited = json.loads(json.dumps(tiny))
    n = len(edited["searches"]["p2_s"]["example"]["M"])
    edited["searches"]["p2_s"]["example"]["M"] = np.eye(n).tolist()  # no answer related: Property 2 holds
    with pytest.raises(ValueError, match="'p2_s' recorded found=True, but its example does not fail"):
        hypothesis_results.search_results(edited)
