"""The same questions under two entailment backends (judges): do the methods' AUROCs, their ordering and the
paired comparisons survive a change of judge?

:func:`judge_robustness` compares two runs that scored the same answers with different entailment backends
(on the results page: the LLaMA-13B TriviaQA answers at n = 10 under the MiniLM embedding stand-in and under
the packaged SmolLM2 LLM judge). Correctness is judged by ROUGE-L in both, so only the uncertainty scores move.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from shapley.companion.htmltable import titled
from shapley.companion.provenance import relative_path
from shapley.core import metrics, ranks
from shapley.pipeline.evaluate.comparisons import REFERENCE_METHOD as REFERENCE
from shapley.pipeline.evaluate.comparisons import outcomes
from shapley.pipeline.evaluate.report import load_metrics
from shapley.pipeline.rundir.csvfiles import read_csv_ids


@dataclass(frozen=True)
class JudgeRobustness:
    """Two runs of the same answers under two judges.

    ``table``: one row per method with a defined AUROC under both judges: method, auroc_a, auroc_b, rank_a,
    rank_b (1 = highest AUROC), outcome_a, outcome_b (against :data:`REFERENCE`, DeLong with Holm within each
    run; None where a run has no such comparison), kept (the outcome is the same under both judges).
    ``spearman`` and ``kendall``: rank correlations of the two AUROC orderings over those methods (NaN with fewer
    than 3). ``n_questions``: how many questions both runs scored (the comparison uses those only).
    """

    run_a: str
    run_b: str
    table: pd.DataFrame
    spearman: float
    kendall: float
    n_questions: int

    @property
    def n_compared(self) -> int:
        """Paired comparisons against the reference present and defined under both judges."""
        return int(self.table["kept"].notna().sum())

    @property
    def n_kept(self) -> int:
        """Of :attr:`n_compared`, those whose outcome is the same under both judges."""
        return int(self.table["kept"].eq(True).sum())


def _common_scores(run_a: str | os.PathLike[str], run_b: str | os.PathLike[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both runs' ``scores.csv`` restricted to the questions both scored, in run a's order, indexed by id."""
    sa, sb = (read_csv_ids(Path(d) / "scores.csv").set_index("id") for d in (run_a, run_b))
    common = [i for i in sa.index if i in sb.index]
    return sa.loc[common], sb.loc[common]


def _methods(scores: pd.DataFrame, run_dir: str | os.PathLike[str]) -> list[str]:
    """The run's scored methods (its metrics.csv order) that ``scores`` holds a column for."""
    return [m for m in load_metrics(run_dir)["method"] if m in scores.columns]


def _judged(scores: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """One run on the common questions: each method's AUROC, and its DeLong comparison with :data:`REFERENCE`
    (Holm within the run), the way ``comparisons.csv`` decides outcomes
    (:func:`shapley.pipeline.evaluate.comparisons.outcomes`)."""
    c = scores["correct"].astype(bool).to_numpy()
    ref = scores[REFERENCE].to_numpy(dtype=np.float64) if REFERENCE in scores else np.full(len(scores), np.nan)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # one correctness class: NaN, reported as undefined
        for m in methods:
            u = scores[m].to_numpy(dtype=np.float64)
            ok = np.isfinite(u)
            auroc = metrics.auroc(u[ok], c[ok]) if ok.any() else math.nan
            both = ok & np.isfinite(ref)
            d = metrics.delong_test(u[both], ref[both], c[both]) if m != REFERENCE and both.any() else None
            rows.append(
                {"method": m, "auroc": auroc, "delta": d.delta if d else math.nan, "p": d.p_value if d else math.nan}
            )
    t = pd.DataFrame(rows)
    tested = t["method"] != REFERENCE
    t["outcome"] = None
    if tested.any():
        p_holm = metrics.holm(t.loc[tested, "p"].to_numpy(dtype=np.float64))
        t.loc[tested, "outcome"] = outcomes(t.loc[tested, "delta"].to_numpy(), p_holm)
    return t


def judge_robustness(run_a: str | os.PathLike[str], run_b: str | os.PathLike[str]) -> JudgeRobustness:
    """Compare two runs of the same answers scored under two entailment backends (see :class:`JudgeRobustness`),
    on the questions both scored: AUROCs and DeLong outcomes are recomputed from their ``scores.csv`` there.

    Raises FileNotFoundError if either run has no ``metrics.csv`` or ``scores.csv``.
    """
    sa, sb = _common_scores(run_a, run_b)
    methods = [m for m in _methods(sa, run_a) if m in _methods(sb, run_b)]
    ja, jb = _judged(sa, methods), _judged(sb, methods)
    both = ja.merge(jb, on="method", suffixes=("_a", "_b"))
    both = both.dropna(subset=["auroc_a", "auroc_b"]).reset_index(drop=True)
    both["rank_a"] = both["auroc_a"].rank(ascending=False, method="min").astype(int)
    both["rank_b"] = both["auroc_b"].rank(ascending=False, method="min").astype(int)
    kept = [
        None if pd.isna(a) or pd.isna(b) or "undefined" in (a, b) else a == b
        for a, b in zip(both["outcome_a"], both["outcome_b"], strict=True)
    ]
    both["kept"] = pd.Series(kept, index=both.index, dtype=object)
    if len(both) >= 3:
        rho = ranks.spearman_rho(both["auroc_a"], both["auroc_b"])
        tau = ranks.kendall_tau_b(both["auroc_a"], both["auroc_b"])
    else:
        rho = tau = math.nan
    ordered = both.sort_values(["rank_a", "method"]).reset_index(drop=True)
    cols = ["method", "auroc_a", "auroc_b", "rank_a", "rank_b", "outcome_a", "outcome_b", "kept"]
    return JudgeRobustness(relative_path(run_a), relative_path(run_b), ordered[cols], rho, tau, len(sa))


def judge_robustness_frame(
    run_a: str | os.PathLike[str], run_b: str | os.PathLike[str], label_a: str, label_b: str
) -> pd.DataFrame:
    """:func:`judge_robustness` for readers, each column named by its judge."""
    r = judge_robustness(run_a, run_b)
    words = {"win": "better", "loss": "worse", "tie": "n.s.", "undefined": "undefined"}
    frame = pd.DataFrame(
        {
            "Method": r.table["method"],
            f"AUROC, {label_a}": r.table["auroc_a"],
            f"AUROC, {label_b}": r.table["auroc_b"],
            f"Rank, {label_a}": r.table["rank_a"],
            f"Rank, {label_b}": r.table["rank_b"],
            f"vs {REFERENCE}, {label_a}": [words.get(o, "–") for o in r.table["outcome_a"]],
            f"vs {REFERENCE}, {label_b}": [words.get(o, "–") for o in r.table["outcome_b"]],
            "Same outcome?": ["–" if k is None else ("yes" if k else "no") for k in r.table["kept"]],
        }
    )
    caption = (
        f"The same answers scored under two entailment judges (`{r.run_a}`: {label_a}; "
        f"`{r.run_b}`: {label_b}), on the {r.n_questions} questions both scored; correctness is judged by "
        "ROUGE-L in both, and AUROCs and outcomes are recomputed on those questions. "
        f"*vs {REFERENCE}*: the paired comparison's outcome under that judge (DeLong, Holm-adjusted within "
        "each run; n.s.: no significant difference). Rank correlation of the two orderings: Spearman "
        f"{r.spearman:.2f}, Kendall {r.kendall:.2f}, over {len(r.table)} methods."
    )
    formats = dict.fromkeys(frame.columns[1:3], ".3f") | dict.fromkeys(frame.columns[3:5], ".0f")
    return titled(frame, caption, formats=formats)
