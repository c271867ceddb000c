"""The committed freshness verdicts of the runs' derived files (``make results``, after the runs).

:func:`shapley.pipeline.rundir.derived.derived_status` re-reads every record of a run and hashes its canonical
JSON: a tenth of a second to a quarter per run, two seconds for the results page's provenance table.
``python -m shapley.companion.derived_results [--results results]`` computes it once per run under ``results``
and writes ``companion/derived_status.json`` with, per run, the SHA-256 of each file of the run that git tracks
(its ``config.json``, ``derived.json``, compact copy, derived files, and the JSONL stage files where those are
committed) and the module digest of the code that decides the verdicts.

:func:`derived_status` answers from the record when the run's fingerprinted files and the code are unchanged
(hashing them takes milliseconds) and recomputes otherwise: a stale or missing record costs time, never a wrong
verdict. Only committed files are fingerprinted, so a clean clone finds the record fresh; a local edit of a
git-ignored JSONL stage file that leaves the compact copy as it was is not seen by the record (the run rewrites
its compact copy whenever it changes a stage file, and ``report`` checks the stage files themselves).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shapley.pipeline.rundir import derived
from shapley.pipeline.rundir.jsonl import sha256_file
from shapley.theory import freshness

RECORD_FILE = "derived_status.json"
RECORD_DIR = "companion"
MODULES = (
    "shapley.pipeline.rundir.derived",
    "shapley.pipeline.rundir.jsonl",
    "shapley.pipeline.rundir.store",
    "shapley.pipeline.rundir.settings",
)
"""The modules whose code decides the verdicts (their digest is in the freshness block)."""

COMMAND = "python -m shapley.companion.derived_results --results results"
_SKIP = frozenset({".lock"})


def _tracked(run: Path) -> list[str]:
    """Names of the files of ``run`` that git tracks; every file (but the lock) when git cannot say."""
    names = sorted(p.name for p in run.iterdir() if p.is_file() and p.name not in _SKIP)
    try:
        out = subprocess.run(
            ["git", "-C", str(run), "ls-files", "."], capture_output=True, text=True, timeout=30, check=True
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return names
    return [n for n in names if n in {Path(o).name for o in out}] or names


def _run_dirs(results: Path) -> list[Path]:
    return sorted(p.parent for p in results.rglob(derived.DERIVED_FILE) if (p.parent / "config.json").is_file())


def compute(results: str | os.PathLike[str]) -> dict[str, Any]:
    """The record: per run under ``results``, the fingerprints of its tracked files and its derived statuses."""
    start, root = time.perf_counter(), Path(results)
    runs = {}
    for run in _run_dirs(root):
        files = {name: sha256_file(run / name) for name in _tracked(run)}
        runs[run.relative_to(root).as_posix()] = {"files": files, "status": derived.derived_status(run)}
    return {
        "command": COMMAND,
        "freshness": freshness.freshness({"runs": sorted(runs)}, MODULES),
        "seconds": round(time.perf_counter() - start, 1),
        "runs": runs,
    }


def load(results: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The record under ``results``, or None when there is none."""
    p = Path(results) / RECORD_DIR / RECORD_FILE
    if not p.is_file():
        return None
    record: dict[str, Any] = json.loads(p.read_text())
    return record


def recorded_status(run_dir: str | os.PathLike[str], record: dict[str, Any] | None) -> dict[str, str] | None:
    """The recorded statuses of ``run_dir`` when ``record`` holds it and its files and the code are unchanged,
    restricted to the derived files present now; None otherwise (then the statuses must be recomputed)."""
    run = Path(run_dir).resolve()
    root = run.parent.parent
    entry = (record or {}).get("runs", {}).get(run.relative_to(root).as_posix())
    block = (record or {}).get("freshness") or {}
    if entry is None or block.get("code_digest") != freshness.module_digest(MODULES):
        return None
    for name, sha in entry["files"].items():
        if not (run / name).is_file() or sha256_file(run / name) != sha:
            return None
    present = [n for n in (*derived.RUN_OUTPUTS, *derived.SWEEP_OUTPUTS) if (run / n).is_file()]
    if any(n not in entry["status"] for n in present):
        return None
    return {n: entry["status"][n] for n in present}


def derived_status(run_dir: str | os.PathLike[str]) -> dict[str, str]:
    """:func:`shapley.pipeline.rundir.derived.derived_status` of ``run_dir``: from the record under the run's
    grandparent folder when it is fresh for this run, recomputed otherwise."""
    run = Path(run_dir).resolve()
    found = recorded_status(run, load(run.parent.parent))
    return found if found is not None else derived.derived_status(run)


def main(argv: Sequence[str] | None = None) -> int:
    return freshness.results_folder_main(
        argv, __doc__, compute, f"{RECORD_DIR}/{RECORD_FILE}", lambda r: f"{len(r['runs'])} runs"
    )


if __name__ == "__main__":
    raise SystemExit(main())
