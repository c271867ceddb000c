"""The committed -inf counts (results/companion/infinite_scores.json): read when fresh, recomputed when the
runs' files or the code changed, never quoted stale."""

from __future__ import annotations

import dataclasses
import json

import pytest

from shapley.companion import singular, singular_results
from shapley.theory import freshness

REL = singular_results.RUNS[0]


def _record(results, scores):
    now = singular_results.settings(results)
    return {"freshness": freshness.freshness(now, singular_results.MODULES), "scores": scores}


@pytest.fixture
def results(tmp_path, monkeypatch):
    run = tmp_path / REL
    run.mkdir(parents=True)
    for name in ("beta_sweep.csv", "config.json", "stages.jsonl.gz"):
        (run / name).write_text(f"{name} of a small run\n")
    recomputed = singular.InfiniteScores(1.0, 3, 0, 0, 0, 0, 0, 0.5, 0.5)
    monkeypatch.setattr(singular, "infinite_scores", lambda run_dir, beta: recomputed)
    return tmp_path


def test_a_fresh_record_is_read_and_a_stale_one_is_not(results):
    stored = singular.InfiniteScores(1.0, 10, 4, 1, 0, 5, 4, 0.6, 0.8)
    rec = _record(results, {REL: dataclasses.asdict(stored)})
    (results / "companion").mkdir()
    (results / "companion" / singular_results.RECORD_FILE).write_text(json.dumps(rec))
    loaded = singular_results.load(results)
    assert singular_results.stale_reasons(loaded, results) == []
    assert singular_results.infinite_scores(results / REL, 1.0, results) == stored
    # another beta than the record's is computed, not read
    assert singular_results.infinite_scores(results / REL, 0.9, results).n == 3
    # the run regenerated: its stage file changed, so the record is stale and the numbers are recomputed
    (results / REL / "stages.jsonl.gz").write_text("another run\n")
    reasons = singular_results.stale_reasons(loaded, results)
    assert len(reasons) == 1 and reasons[0].startswith("settings differ")
    assert singular_results.infinite_scores(results / REL, 1.0, results).n == 3


def test_a_missing_record_names_its_command_and_is_recomputed(results):
    with pytest.raises(FileNotFoundError, match="singular_results"):
        singular_results.load(results)
    assert singular_results.infinite_scores(results / REL, 1.0, results).n == 3


def test_compute_writes_what_singular_computes(results):
    rec = singular_results.compute(results)
    assert list(rec["scores"]) == [REL] and rec["scores"][REL]["n"] == 3
    assert singular_results.stale_reasons(rec, results) == []
