"""The axioms page's committed short replay (results/theory/axioms_replay.json, ``make theory-results``): it agrees
with the stored table, its input, and so does a replay of a tiny table written here."""

from __future__ import annotations

from shapley.theory import axioms as ax
from shapley.theory import estimator_replay

RECORD = estimator_replay.RECORD


def test_the_committed_replay_agrees_with_the_stored_table():
    from shapley.pipeline.rundir.settings import REPO_ROOT

    rec = RECORD.load(REPO_ROOT / "results" / "theory")
    assert rec["mismatches"] == [] and rec["short_failing_cells"] > 0


def test_a_replay_of_a_tiny_table_agrees_and_reads_the_table(tmp_path):
    ax.write_axiom_table(tmp_path / "axioms", max_examples=4, seed=0)  # as `make axioms` writes the stored table
    rec = RECORD.load(RECORD.write(tmp_path, {"max_examples": 2, "seed": 0}))
    assert rec["mismatches"] == [] and list(rec["freshness"]["inputs"]) == [estimator_replay.TABLE]
