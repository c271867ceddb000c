"""The axioms page's short replay of the estimator-properties table, committed as a page record (:data:`RECORD`,
``results/theory/axioms_replay.json``, written by ``python -m shapley.theory.estimator_replay``).

It runs :func:`shapley.theory.axioms.axiom_table` again with few examples per cell and the stored table's seed and
compares it with the stored table (:func:`shapley.theory.axioms.prefix_mismatches`: every cell replays the same
draws, so a short run must agree with the full one). The stored table is the record's input: the record goes stale
when ``make axioms`` rewrites it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shapley.results import records
from shapley.theory import axioms as ax

TABLE = "axioms/axiom_table.csv"
"""The stored table, under the results folder (``make axioms`` writes it)."""


def read_table(results: str | Path) -> Any:
    """The stored table under the results folder ``results`` (it holds the hand-settled cells), as the page reads
    it."""
    import pandas as pd

    return pd.read_csv(Path(results) / TABLE, keep_default_na=False, dtype={"property": str})


def compute(settings: Mapping[str, Any], results: Path) -> dict[str, Any]:
    """The short table with ``settings``, compared with the stored one under ``results``: the record's numbers."""
    short = ax.axiom_table(max_examples=settings["max_examples"], seed=settings["seed"])
    mismatches = ax.prefix_mismatches(short, read_table(results))
    return {"short_failing_cells": (short.verdict == ax.FAILS).sum(), "mismatches": mismatches}


RECORD = records.PageRecord(
    path="theory/axioms_replay.json",
    module=__spec__.name,
    compute=compute,
    check=records.has_keys(short_failing_cells=int, mismatches=list),
    summary=lambda record: f"{len(record['mismatches'])} cells disagree with the stored table",
    settings={"max_examples": 25, "seed": 0},
    inputs=lambda results: [TABLE],
)

if __name__ == "__main__":
    raise SystemExit(RECORD.main())
