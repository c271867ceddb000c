"""The Mozart page's committed beta fits (results/companion/mozart.json, ``make theory-results``): equal to the
computation they stand for, and what the verdict says."""

from __future__ import annotations

from shapley.companion import mozart, mozart_results
from shapley.pipeline.rundir.settings import REPO_ROOT

RECORD = mozart_results.RECORD


def test_a_small_record_round_trips_and_equals_the_computation(tmp_path):
    settings = {**RECORD.settings, "beta_grid_points": 40}
    loaded = mozart_results.RECORD.load(RECORD.write(tmp_path, settings).parent)
    assert mozart_results.fits(loaded) == mozart.fitted_beta_table(mozart.beta_grid(40))
    assert loaded["freshness"] == RECORD.freshness(tmp_path, settings)
    facts = mozart.verdict_facts(fits=mozart_results.fits(loaded))
    assert facts["moz_n_fit"] == sum(bool(r["beta_both"]) for r in loaded["fits"])


def test_the_committed_record_fits_what_the_verdict_says():
    rec = mozart_results.RECORD.load(REPO_ROOT / "results" / "companion")
    assert [r["key"] for r in mozart_results.fits(rec) if r["beta_both"]] == ["likelihood_weighted"]
