"""The axioms page's committed short replay (results/theory/axioms_replay.json, ``make theory-results``): fresh
against the stored table, and the record's staleness on a tiny table written here."""

from __future__ import annotations

from shapley.theory import axioms as ax
from shapley.theory import estimator_replay

RECORD = estimator_replay.RECORD


def test_the_committed_replay_is_fresh_and_agrees_with_the_stored_table():
    from shapley.pipeline.rundir.settings import REPO_ROOT

    rec = RECORD.load(REPO_ROOT / "results" / "theory")
    assert RECORD.stale_reasons(rec, REPO_ROOT / "results") == []
    assert rec["mismatches"] == [] and rec["short_failing_cells"] > 0


def test_a_replay_of_a_tiny_table_agrees_and_goes_stale_when_the_table_changes(tmp_path):
    ax.write_axiom_table(tmp_path / "axioms", max_examples=4, seed=0)  # as `make axioms` writes the stored table
    rec = RECORD.load(RECORD.write(tmp_path, {"max_examples": 2, "seed": 0}))
    assert rec["mismatches"] == [] and list(rec["freshness"]["inputs"]) == [estimator_replay.TABLE]
    assert RECORD.stale_reasons(rec, tmp_path)[0].startswith("settings differ")
    assert RECORD.stale_reasons({**rec, "freshness": {**rec["freshness"], "settings": RECORD.settings}}, tmp_path) == []
    with open(tmp_path / estimator_replay.TABLE, "a") as table:
        table.write("\n")
    assert RECORD.stale_reasons(rec, tmp_path)[-1] == (
        f"inputs changed since the record was computed: {estimator_replay.TABLE}"
    )
