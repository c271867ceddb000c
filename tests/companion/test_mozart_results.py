"""The Mozart page's committed beta fits (results/companion/mozart.json, ``make theory-results``): fresh, equal to
the computation they stand for, and stale when their settings or code change."""

from __future__ import annotations

from shapley.companion import mozart, mozart_results
from shapley.pipeline.rundir.settings import REPO_ROOT
from shapley.theory import page_records

RECORD = mozart_results.RECORD


def test_a_small_record_round_trips_and_equals_the_computation(tmp_path):
    settings = {**RECORD.settings, "beta_grid_points": 40}
    loaded = mozart_results.RECORD.load(RECORD.write(tmp_path, settings).parent)
    assert mozart_results.fits(loaded) == mozart.fitted_beta_table(mozart.beta_grid(40))
    assert loaded["freshness"] == RECORD.freshness(tmp_path, settings)
    # the default settings (600 points) are not these: the record says so
    assert RECORD.stale_reasons(loaded, tmp_path)[0].startswith("settings differ")
    facts = mozart.verdict_facts(fits=mozart_results.fits(loaded))
    assert facts["moz_n_fit"] == sum(bool(r["beta_both"]) for r in loaded["fits"])


def test_the_committed_record_is_fresh_and_fits_what_the_verdict_says(monkeypatch):
    rec = mozart_results.RECORD.load(REPO_ROOT / "results" / "companion")
    assert RECORD.stale_reasons(rec, REPO_ROOT / "results") == []
    assert [r["key"] for r in mozart_results.fits(rec) if r["beta_both"]] == ["likelihood_weighted"]
    monkeypatch.setattr(page_records, "source_digests", lambda modules: dict.fromkeys(modules, "0" * 64))
    assert RECORD.stale_reasons(rec, REPO_ROOT / "results") == [
        f"code changed since the record was computed: {', '.join(RECORD.code_modules)}"
    ]
