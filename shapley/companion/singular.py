"""Why Shap's AUROC falls at the top of the beta grid: at beta = 1 two answers that the judge scores as
equivalent (C[i, j] = 1, e.g. exact duplicates) give R[i, j] = 1 beside a unit diagonal, a singular 2x2 block.
R is then either not PSD (and repaired) or singular: its log-determinant is -inf and so is Shap (the sum of the
Shapley values is the entropy of N(0, R)). Duplicates, with equal rows of C, give the singular case.

:func:`infinite_scores` recomputes Shap at one beta from a run's stored entailment matrices (the run's
``stages.jsonl.gz``, read by :func:`shapley.pipeline.evaluate.metrics.beta_table`) and counts the -inf totals, the
repaired (not PSD) matrices and the AUROC with and without the -inf questions. About 2 s for 500 questions.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from shapley.core import kernel, metrics
from shapley.pipeline.evaluate import metrics as evaluate
from shapley.pipeline.evaluate.comparisons import rankable
from shapley.pipeline.rundir.jsonl import STAGE_FILES, JsonlStore


@dataclass(frozen=True)
class InfiniteScores:
    """Shap at one beta on one run's questions.

    ``n``: questions scored; ``n_neginf``: Shap = -inf; ``n_repaired``: R not PSD, repaired by the run's policy;
    ``n_neginf_repaired``: both; ``n_equal_pair``: questions with two answers at C[i, j] = 1 (at beta = 1, R is
    then singular or not PSD); ``n_neginf_equal``: -inf questions among those; ``auroc``: all questions (-inf
    ranked as the most certain, as every metric of a run ranks it); ``auroc_finite``: the questions with a finite
    Shap only (NaN when one class is left)."""

    beta: float
    n: int
    n_neginf: int
    n_repaired: int
    n_neginf_repaired: int
    n_equal_pair: int
    n_neginf_equal: int
    auroc: float
    auroc_finite: float


def _auroc(u: np.ndarray, c: np.ndarray) -> float:
    if c.size == 0 or c.all() or not c.any():
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(metrics.auroc(rankable(u)[0], c))


def count_infinite(per_question: pd.DataFrame, correct: pd.Series, equal_pair: pd.Series) -> InfiniteScores:
    """:class:`InfiniteScores` of one beta's rows of a per-question table.

    Args:
        per_question: rows ``id, beta, Shap, repaired`` of one beta (Shap in nats, may be -inf).
        correct: booleans indexed by question id.
        equal_pair: booleans indexed by question id (two answers at C = 1).
    """
    betas = per_question["beta"].unique()
    if len(betas) != 1:
        raise ValueError(f"per_question must hold one beta; got {sorted(betas)}")
    g = per_question[~per_question["Shap"].isna()]
    u = g["Shap"].to_numpy(dtype=np.float64)
    c = correct.loc[g["id"]].to_numpy(dtype=bool)
    neginf = np.isneginf(u)
    repaired = g["repaired"].to_numpy(dtype=bool)
    equal = equal_pair.loc[g["id"]].to_numpy(dtype=bool)
    return InfiniteScores(
        beta=float(betas[0]),
        n=int(u.size),
        n_neginf=int(neginf.sum()),
        n_repaired=int(repaired.sum()),
        n_neginf_repaired=int((neginf & repaired).sum()),
        n_equal_pair=int(equal.sum()),
        n_neginf_equal=int((equal & neginf).sum()),
        auroc=_auroc(u, c),
        auroc_finite=_auroc(u[~neginf], c[~neginf]),
    )


def has_equal_pair(P: np.ndarray) -> bool:
    """True when two different answers have C[i, j] = 1 (to 12 digits)."""
    C = kernel.correlation_matrix(P)
    off = C[~np.eye(C.shape[0], dtype=bool)]
    return bool((off >= 1.0 - 1e-12).any())


def infinite_scores(run_dir: str | os.PathLike[str], beta: float = 1.0) -> InfiniteScores:
    """:class:`InfiniteScores` of ``run_dir`` at ``beta``, recomputed from its stored entailment matrices and
    correctness labels (the run's PSD policy). Cached per (resolved directory, beta) within a process: a page that
    quotes it twice (its own table and a verdict note) computes it once."""
    return _infinite_scores(str(Path(run_dir).resolve()), float(beta))


@functools.lru_cache(maxsize=16)
def _infinite_scores(run_dir: str, beta: float) -> InfiniteScores:
    _, per_q = evaluate.beta_table(run_dir, [beta])
    scores = JsonlStore(os.path.join(run_dir, STAGE_FILES["scores"])).load(repair=False)
    ent = JsonlStore(os.path.join(run_dir, STAGE_FILES["entailment"])).load(repair=False)
    ids = list(per_q["id"])
    correct = pd.Series({i: bool(scores[i]["correct"]) for i in ids}, dtype=bool)
    equal = pd.Series({i: has_equal_pair(np.asarray(ent[i]["entail"], dtype=np.float64)) for i in ids}, dtype=bool)
    return count_infinite(per_q, correct, equal)


def findings(inf: InfiniteScores, label: str, below: tuple[float, float] | None = None) -> str:
    """One sentence (Markdown) on ``inf``: the -inf count, how many of them were repaired, and the AUROC with and
    without them. ``below``: (beta, AUROC) of the grid point below, quoted for comparison."""
    n_fin = inf.n - inf.n_neginf
    before = f" (at β = {below[0]:g}: {below[1]:.3f})" if below is not None else ""
    without = f"{inf.auroc_finite:.3f}" if not math.isnan(inf.auroc_finite) else "undefined (one class left)"
    return (
        f"{label}: at β = {inf.beta:g}, Shap = −∞ for {inf.n_neginf} of {inf.n} questions, "
        f"{inf.n_neginf_repaired} of them among the {inf.n_repaired} repaired (not PSD) matrices; the AUROC is "
        f"{inf.auroc:.3f}{before}, and {without} on the {n_fin} questions with a finite Shap."
    )
