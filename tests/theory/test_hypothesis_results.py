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


def test_the_committed_record_holds_every_search_of_the_page_and_its_examples_fail_again():
    rec = _record()
    assert set(rec["searches"]) == set(hypothesis_results.SEARCHES) | set(hypothesis_results.STEPS)
    found = {name: res.found for name, res in hypothesis_results.search_results(rec).items()}
    assert not found["p1_rv"] and not found["p2_rv"] and not found["st2"]
    assert found["p1_rv99"] and found["p1_s_strict"] and found["p3_rv"] and found["st1"] and found["st3"]
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
