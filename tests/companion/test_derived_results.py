"""The committed derived-file verdicts (results/companion/derived_status.json): read when the run's committed files
and the code are unchanged, recomputed otherwise, never a verdict that a recomputation would not give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shapley.companion import derived_results
from shapley.pipeline.experiment import pipelines as experiment
from shapley.pipeline.rundir import derived
from tests import fakes


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 8)
    experiment.score_samples(fakes.samples_config(inp), tmp_path / "results" / "toy" / "run")
    return tmp_path / "results"


def _write(results: Path) -> dict:
    record = derived_results.compute(results)
    (results / "companion").mkdir(exist_ok=True)
    (results / "companion" / derived_results.RECORD_FILE).write_text(json.dumps(record))
    return record


def test_a_fresh_record_answers_as_a_recomputation_does(results: Path):
    run = results / "toy" / "run"
    record = _write(results)
    assert list(record["runs"]) == ["toy/run"] and record["runs"]["toy/run"]["files"]
    assert derived_results.recorded_status(run, derived_results.load(results)) == derived.derived_status(run)
    assert set(derived.derived_status(run).values()) == {"fresh"}


def test_a_changed_file_or_code_sends_the_check_back_to_the_stage_files(results: Path, monkeypatch):
    run = results / "toy" / "run"
    record = _write(results)
    metrics = run / "metrics.csv"
    metrics.write_text(metrics.read_text() + "\n")  # a hand edit after the record
    assert derived_results.recorded_status(run, record) is None
    assert derived_results.derived_status(run)["metrics.csv"].startswith("stale")
    metrics.write_text(metrics.read_text()[:-1])
    assert derived_results.recorded_status(run, record) is not None
    monkeypatch.setattr(derived_results, "MODULES", ("shapley.theory.freshness",))
    assert derived_results.recorded_status(run, record) is None


def test_a_recorded_verdict_is_never_read_for_a_derived_file_the_record_did_not_see(results: Path):
    run = results / "toy" / "run"
    record = _write(results)
    (run / "beta_sweep.csv").unlink(missing_ok=True)
    del record["runs"]["toy/run"]["status"]["metrics.csv"]
    assert derived_results.recorded_status(run, record) is None


def test_no_record_means_a_recomputation(results: Path):
    run = results / "toy" / "run"
    assert derived_results.load(results) is None
    assert derived_results.derived_status(run) == derived.derived_status(run)
