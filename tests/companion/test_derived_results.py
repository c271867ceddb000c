"""The committed derived-file verdicts (results/companion/derived_status.json): read when the runs' committed files
and the code are unchanged, recomputed otherwise, never a verdict that a recomputation would not give."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shapley.companion import provenance
from shapley.pipeline.experiment import pipelines as experiment
from shapley.pipeline.rundir import derived
from shapley.results import records
from tests import fakes

RECORD = provenance.RECORD


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 8)
    experiment.score_samples(fakes.samples_config(inp), tmp_path / "results" / "toy" / "run")
    return tmp_path / "results"


def test_a_fresh_record_answers_as_a_recomputation_does(results: Path):
    run = results / "toy" / "run"
    record = RECORD.load(RECORD.write(results))
    assert list(record["runs"]) == ["toy/run"] and all(p.startswith("toy/run/") for p in record["freshness"]["inputs"])
    assert "toy/run/config.json" in record["freshness"]["inputs"]
    assert RECORD.fresh(results) == record
    assert provenance.derived_status(run) == record["runs"]["toy/run"] == derived.derived_status(run)
    assert set(derived.derived_status(run).values()) == {"fresh"}


def test_a_changed_file_sends_the_check_back_to_the_stage_files(results: Path):
    run = results / "toy" / "run"
    RECORD.write(results)
    metrics = run / "metrics.csv"
    metrics.write_text(metrics.read_text() + "\n")  # a hand edit after the record
    assert RECORD.fresh(results) is None
    assert provenance.derived_status(run)["metrics.csv"].startswith("stale")
    metrics.write_text(metrics.read_text()[:-1])
    assert RECORD.fresh(results) is not None


def test_a_recorded_verdict_is_never_read_for_a_derived_file_the_record_did_not_see(results: Path, monkeypatch):
    run = results / "toy" / "run"
    RECORD.write(results)
    recomputed = {"metrics.csv": "recomputed"}
    monkeypatch.setattr(derived, "derived_status", lambda run_dir, names=None: recomputed)
    assert provenance.derived_status(run) != recomputed  # the record holds every derived file present
    record = RECORD.load(results / RECORD.path)
    del record["runs"]["toy/run"]["metrics.csv"]
    monkeypatch.setattr(records.PageRecord, "fresh", lambda self, folder: record)
    assert provenance.derived_status(run)["metrics.csv"] == "recomputed"


@pytest.mark.parametrize(
    "damage",
    [None, lambda text: text.replace('"runs"', '"run"'), lambda text: text.replace('"fresh"', "1", 1)],
    ids=["missing", "missing-key", "wrong-type"],
)
def test_a_missing_or_malformed_record_means_a_recomputation(results: Path, damage):
    """(A damaged envelope: tests/results/test_records.py.)"""
    run = results / "toy" / "run"
    path = RECORD.write(results)
    if damage is None:
        path.unlink()
    else:
        path.write_text(damage(path.read_text()))
    with pytest.raises(FileNotFoundError, match="companion.provenance"):
        RECORD.load(path)
    assert provenance.derived_status(run) == derived.derived_status(run)


def test_the_record_holds_only_what_git_tracks(results: Path):
    """A run or a derived file that git does not track is not in the record, which does not fingerprint it, and
    the provenance check answers for it live (issue 38, held back: after a sweep the git-ignored per-question file
    is left over)."""
    from shapley.pipeline.evaluate import metrics as evaluate

    run, other = results / "toy" / "run", results / "toy" / "other"
    evaluate.write_beta_sweep(run, [0.3, 0.5])
    shutil.copytree(run, other)
    per_question = run / derived.SWEEP_OUTPUTS[1]
    subprocess.run(["git", "init", "-q", str(results)], check=True)
    tracked = [str(p.relative_to(results)) for p in run.iterdir() if p.is_file() and p != per_question]
    subprocess.run(["git", "-C", str(results), "add", "-f", *tracked], check=True)
    record = RECORD.load(RECORD.write(results))
    assert list(record["runs"]) == ["toy/run"] and all(p.startswith("toy/run/") for p in record["freshness"]["inputs"])
    assert per_question.name not in record["runs"]["toy/run"] and "beta_sweep.csv" in record["runs"]["toy/run"]
    for edited in (per_question, other / "metrics.csv"):  # left over from another sweep; an untracked run's edit
        edited.write_text(edited.read_text() + "\n")
    assert RECORD.fresh(results) is not None
    status = provenance.derived_status(run)
    assert status[per_question.name].startswith("stale") and status == derived.derived_status(run)
    assert provenance.derived_status(other)["metrics.csv"].startswith("stale")
