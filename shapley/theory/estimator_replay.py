"""The committed short replay of the estimator-properties table (``make theory-results``; part of ``make results``).

``python -m shapley.theory.estimator_replay [--axioms results/axioms] [--out results/theory]`` runs
:func:`shapley.theory.axioms.axiom_table` again with few examples per cell and the stored table's seed, compares
it with the stored ``axiom_table.csv`` (:func:`shapley.theory.axioms.prefix_mismatches`: every cell replays the
same draws, so a short run must agree with the full one) and writes ``axioms_replay.json``: the outcome, the
seconds it took, the SHA-256 of the table it was compared with and a freshness record
(:mod:`shapley.theory.freshness`). ``notebooks/axioms.md`` only reads it (:func:`load`) and says whether it is
stale (:func:`stale_reasons`: other settings or code, or a stored table that changed since).
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shapley.theory import axioms as ax
from shapley.theory import freshness

RECORD_FILE = "axioms_replay.json"
TABLE_FILE = "axiom_table.csv"
MODULES = (
    "shapley.theory.axioms",
    "shapley.theory.axiom_search",
    "shapley.theory.properties",
    "shapley.theory.worstcase",
    "shapley.core.baselines.entropies",
    "shapley.core.baselines.spectral",
    "shapley.core.entropy",
    "shapley.core.kernel",
    "shapley.core.validate",
)
"""The modules whose code determines the record's numbers (their digest is in the freshness block)."""

SETTINGS: dict[str, Any] = {"max_examples": 25, "seed": 0}
COMMAND = "python -m shapley.theory.estimator_replay --axioms results/axioms --out results/theory"


def table_digest(axioms_dir: str | Path) -> str:
    """SHA-256 of the stored ``axiom_table.csv`` in ``axioms_dir``."""
    return hashlib.sha256((Path(axioms_dir) / TABLE_FILE).read_bytes()).hexdigest()


def read_table(axioms_dir: str | Path) -> Any:
    """The stored table (``axiom_table.csv``, which holds the hand-settled cells), as the page reads it."""
    import pandas as pd

    return pd.read_csv(Path(axioms_dir) / TABLE_FILE, keep_default_na=False, dtype={"property": str})


def compute(axioms_dir: str | Path, settings: Mapping[str, Any] = SETTINGS) -> dict[str, Any]:
    """Run the short table and compare it with the stored one in ``axioms_dir``; the record, ready for JSON."""
    start = time.perf_counter()
    full = read_table(axioms_dir)
    short = ax.axiom_table(max_examples=settings["max_examples"], seed=settings["seed"])
    mismatches = ax.prefix_mismatches(short, full)
    return {
        "command": COMMAND,
        "freshness": freshness.freshness(settings, MODULES),
        "seconds": round(time.perf_counter() - start, 1),
        "table_sha256": table_digest(axioms_dir),
        "short_failing_cells": int((short.verdict == ax.FAILS).sum()),
        "mismatches": [list(m) for m in mismatches],
    }


def load(path: str | Path) -> dict[str, Any]:
    """The record at ``path`` (an ``axioms_replay.json`` or the folder holding it)."""
    return freshness.load_record(path, RECORD_FILE, COMMAND)


def stale_reasons(record: Mapping[str, Any], axioms_dir: str | Path) -> list[str]:
    """Why the record is stale against the current :data:`SETTINGS`, code and stored table; [] when fresh."""
    reasons = freshness.stale_reasons(record, SETTINGS, MODULES)
    if record.get("table_sha256") != table_digest(axioms_dir):
        reasons.append(f"{Path(axioms_dir) / TABLE_FILE} changed since the replay was compared with it")
    return reasons


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--axioms", type=Path, default=Path("results/axioms"), help="the stored table's folder")
    parser.add_argument("--out", type=Path, default=Path("results/theory"), help="folder (default results/theory)")
    args = parser.parse_args(argv)
    record = compute(args.axioms)
    path = freshness.write_record(args.out / RECORD_FILE, record)
    print(f"wrote {path} in {record['seconds']} s: {len(record['mismatches'])} cells disagree with the stored table")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
