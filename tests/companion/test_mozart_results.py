"""The Mozart page's committed beta fits (results/companion/mozart.json, ``make theory-results``): fresh, equal to
the computation they stand for, and stale when their settings or code change."""

from __future__ import annotations

import json

from shapley.companion import mozart, mozart_results
from shapley.theory import freshness


def test_a_small_record_round_trips_and_equals_the_computation(tmp_path):
    settings = {**mozart_results.SETTINGS, "beta_grid_points": 40}
    rec = mozart_results.compute(settings)
    (tmp_path / mozart_results.RECORD_FILE).write_text(json.dumps(rec))
    loaded = mozart_results.load(tmp_path)
    assert mozart_results.fits(loaded) == mozart.fitted_beta_table(mozart.beta_grid(40))
    assert freshness.stale_reasons(loaded, settings, mozart_results.MODULES) == []
    # the default settings (600 points) are not these: the record says so
    assert mozart_results.stale_reasons(loaded)[0].startswith("settings differ")
    facts = mozart.verdict_facts(fits=mozart_results.fits(loaded))
    assert facts["fit_both_beta_free"] == [r["key"] for r in loaded["fits"] if r["beta_both"]]


def test_the_committed_record_is_fresh_and_fits_what_the_verdict_says(monkeypatch):
    from shapley.pipeline.rundir.settings import REPO_ROOT

    rec = mozart_results.load(REPO_ROOT / "results" / "companion")
    assert mozart_results.stale_reasons(rec) == []
    assert [r["key"] for r in mozart_results.fits(rec) if r["beta_both"]] == ["likelihood_weighted"]
    monkeypatch.setattr(freshness, "module_digest", lambda modules: "0" * 64)
    assert mozart_results.stale_reasons(rec) == [
        f"the code of {', '.join(mozart_results.MODULES)} changed since the record was computed"
    ]
