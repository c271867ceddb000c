"""The axioms page's committed short replay (results/theory/axioms_replay.json, ``make theory-results``): fresh
against the stored table, and the record's staleness on a tiny table written here."""

from __future__ import annotations

from shapley.theory import axioms as ax
from shapley.theory import estimator_replay, freshness


def test_the_committed_replay_is_fresh_and_agrees_with_the_stored_table():
    from shapley.pipeline.rundir.settings import REPO_ROOT

    rec = estimator_replay.load(REPO_ROOT / "results" / "theory")
    assert estimator_replay.stale_reasons(rec, REPO_ROOT / "results" / "axioms") == []
    assert rec["mismatches"] == [] and rec["short_failing_cells"] > 0


def test_a_replay_of_a_tiny_table_agrees_and_goes_stale_when_the_table_changes(tmp_path):
    ax.write_axiom_table(tmp_path, max_examples=4, seed=0)  # as `make axioms` writes the stored table
    tiny = {"max_examples": 2, "seed": 0}
    rec = estimator_replay.compute(tmp_path, tiny)
    assert rec["mismatches"] == [] and rec["table_sha256"] == estimator_replay.table_digest(tmp_path)
    assert freshness.stale_reasons(rec, tiny, estimator_replay.MODULES) == []
    assert estimator_replay.stale_reasons(rec, tmp_path)[0].startswith("settings differ")
    with open(tmp_path / estimator_replay.TABLE_FILE, "a") as table:
        table.write("\n")
    assert estimator_replay.stale_reasons(rec, tmp_path)[-1].endswith("changed since the replay was compared with it")
