"""The committed -inf counts (results/companion/infinite_scores.json): read when fresh, recomputed when the
runs' files or the code changed, never quoted stale."""

from __future__ import annotations

import dataclasses
import json

import pytest

from shapley.companion import singular_results

REL = singular_results.RUNS[0]
RECORD = singular_results.RECORD


@pytest.fixture
def results(tmp_path, monkeypatch):
    run = tmp_path / REL
    run.mkdir(parents=True)
    for name in ("beta_sweep.csv", "config.json", "stages.jsonl.gz"):
        (run / name).write_text(f"{name} of a small run\n")
    recomputed = singular_results.InfiniteScores(1.0, 3, 0, 0, 0.5)
    monkeypatch.setattr(singular_results, "recompute", lambda run_dir, beta: recomputed)
    return tmp_path


def test_a_fresh_record_is_read_and_a_stale_one_is_not(results):
    stored = singular_results.InfiniteScores(1.0, 10, 4, 0, 0.8)
    rec = {
        "command": RECORD.command,
        "seconds": 1.0,
        "freshness": RECORD.freshness(results),
        "scores": {REL: dataclasses.asdict(stored)},
    }
    (results / "companion").mkdir()
    (results / RECORD.path).write_text(json.dumps(rec))
    loaded = RECORD.load(results / "companion")
    assert RECORD.stale_reasons(loaded, results) == []
    assert singular_results.infinite_scores(results / REL, 1.0, results) == stored
    # another beta than the record's is computed, not read
    assert singular_results.infinite_scores(results / REL, 0.9, results).n == 3
    # the run regenerated: its stage file changed, so the record is stale and the numbers are recomputed
    (results / REL / "stages.jsonl.gz").write_text("another run\n")
    assert RECORD.stale_reasons(loaded, results) == [
        f"inputs changed since the record was computed: {REL}/stages.jsonl.gz"
    ]
    assert singular_results.infinite_scores(results / REL, 1.0, results).n == 3


def test_write_stores_what_recompute_computes(results):
    rec = RECORD.load(RECORD.write(results))
    assert list(rec["scores"]) == [REL] and rec["scores"][REL]["n"] == 3
    assert sorted(rec["freshness"]["inputs"]) == [f"{REL}/config.json", f"{REL}/stages.jsonl.gz"]


@pytest.mark.parametrize(
    "damage",
    [
        None,  # no record
        lambda text: text.replace('"scores"', '"scorez"'),  # a missing key
        lambda text: text.replace('"n": 3', '"n": "3"'),  # a wrong type
        lambda text: text.replace('"n": 3,', ""),  # a missing field
    ],
    ids=["missing", "missing-key", "wrong-type", "missing-field"],
)
def test_a_missing_or_malformed_record_is_recomputed(results, damage, monkeypatch):
    """A bad record costs time (a recomputation), never a crash or a wrong number (a damaged envelope:
    tests/results/test_records.py)."""
    path = RECORD.write(results)
    good = path.read_text()
    if damage is None:
        path.unlink()
    else:
        path.write_text(damage(good))
    with pytest.raises(FileNotFoundError, match="singular_results"):
        RECORD.load(path)
    recomputed = dataclasses.replace(singular_results.InfiniteScores(**json.loads(good)["scores"][REL]), n=99)
    monkeypatch.setattr(singular_results, "recompute", lambda run_dir, beta: recomputed)
    assert singular_results.infinite_scores(results / REL, 1.0, results).n == 99
