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
from scipy import stats

from shapley.companion.htmltable import Col, Html, code, esc, html_table
from shapley.companion.provenance import relative_path
from shapley.core import metrics
from shapley.pipeline.comparisons import outcomes
from shapley.pipeline.evaluate import load_metrics, read_csv_ids

REFERENCE = "Shap"


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
        t = self.table.dropna(subset=["outcome_a", "outcome_b"])
        return int(((t["outcome_a"] != "undefined") & (t["outcome_b"] != "undefined")).sum())

    @property
    def n_kept(self) -> int:
        """Of :attr:`n_compared`, those whose outcome is the same under both judges."""
        t = self.table.dropna(subset=["outcome_a", "outcome_b"])
        t = t[(t["outcome_a"] != "undefined") & (t["outcome_b"] != "undefined")]
        return int((t["outcome_a"] == t["outcome_b"]).sum())

    def reference_rank(self) -> tuple[int | None, int | None]:
        """Rank of :data:`REFERENCE` under each judge (None where it has no defined AUROC)."""
        row = self.table[self.table["method"] == REFERENCE]
        if row.empty:
            return None, None
        return int(row["rank_a"].iloc[0]), int(row["rank_b"].iloc[0])


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
    (:func:`shapley.pipeline.comparisons.outcomes`)."""
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
        rho = float(stats.spearmanr(both["auroc_a"], both["auroc_b"]).statistic)
        tau = float(stats.kendalltau(both["auroc_a"], both["auroc_b"]).statistic)
    else:
        rho = tau = math.nan
    ordered = both.sort_values(["rank_a", "method"]).reset_index(drop=True)
    cols = ["method", "auroc_a", "auroc_b", "rank_a", "rank_b", "outcome_a", "outcome_b", "kept"]
    return JudgeRobustness(relative_path(run_a), relative_path(run_b), ordered[cols], rho, tau, len(sa))


def judge_robustness_html(
    run_a: str | os.PathLike[str], run_b: str | os.PathLike[str], label_a: str, label_b: str
) -> Html:
    """:func:`judge_robustness` for readers, or a note saying the second run is not there yet."""
    if not (Path(run_b) / "metrics.csv").exists() or not (Path(run_a) / "metrics.csv").exists():
        missing = run_b if not (Path(run_b) / "metrics.csv").exists() else run_a
        return Html(
            f'<p class="not-run"><em>Judge robustness: not yet run</em> ({code(relative_path(missing))} has no '
            "<code>metrics.csv</code>; <code>make results</code> builds it).</p>"
        )
    r = judge_robustness(run_a, run_b)
    words = {"win": "better", "loss": "worse", "tie": "n.s.", "undefined": "undefined"}
    t = r.table.assign(
        oa=["–" if pd.isna(o) else words.get(o, "–") for o in r.table["outcome_a"]],
        ob=["–" if pd.isna(o) else words.get(o, "–") for o in r.table["outcome_b"]],
        keep=["–" if k is None else ("yes" if k else "no") for k in r.table["kept"]],
    )
    cols = [
        Col("method", "Method"),
        Col("auroc_a", f"AUROC, {label_a}", decimals=3),
        Col("auroc_b", f"AUROC, {label_b}", decimals=3),
        Col("rank_a", "Rank", decimals=0),
        Col("rank_b", "Rank", decimals=0),
        Col("oa", f"vs {REFERENCE}"),
        Col("ob", f"vs {REFERENCE}"),
        Col("keep", "Kept?"),
    ]
    caption = (
        f"The same answers scored under two entailment judges ({code(r.run_a)}: {esc(label_a)}; "
        f"{code(r.run_b)}: {esc(label_b)}), on the {r.n_questions} questions both scored; correctness is judged by "
        "ROUGE-L in both, and AUROCs and outcomes are recomputed on those questions. "
        f"<em>vs {REFERENCE}</em>: the paired comparison's outcome (DeLong, Holm-adjusted within each run; n.s.: "
        "no significant difference). Rank correlation of the two orderings: Spearman "
        f"{r.spearman:.2f}, Kendall {r.kendall:.2f}, over {len(r.table)} methods."
    )
    return html_table(t, cols, caption=caption, css="measured-table")


def judge_findings(run_a: str | os.PathLike[str], run_b: str | os.PathLike[str], label_b: str) -> str:
    """HTML sentence: whether the paper's ordering claims (Shap ranks first; methods' standing against Shap)
    survive the change of judge, computed from :func:`judge_robustness`, or that the run is not there yet."""
    if not (Path(run_b) / "metrics.csv").exists():
        return f"The second judge ({esc(label_b)}) has not been run yet (<code>make results</code>)."
    r = judge_robustness(run_a, run_b)
    rank_a, rank_b = r.reference_rank()
    if rank_a is None or rank_b is None:
        shap = f"{REFERENCE} has no defined AUROC under one of the judges"
    else:
        shap = f"{REFERENCE} ranks {rank_a} of {len(r.table)} under the first judge and {rank_b} under {esc(label_b)}"
    first = rank_a == 1 and rank_b == 1
    claim = (
        "so the paper's claim that Shap orders answers best survives the change of judge"
        if first
        else "so the paper's claim that Shap orders answers best holds under neither judge"
        if rank_a != 1 and rank_b != 1
        else "so the paper's claim that Shap orders answers best holds under one judge only"
    )
    return (
        f"On the {r.n_questions} questions both judges scored, under a second entailment judge ({esc(label_b)}) "
        f"{shap}, {claim}; the two orderings of the methods "
        f"correlate with Spearman {r.spearman:.2f} (Kendall {r.kendall:.2f}), and {r.n_kept} of {r.n_compared} "
        f"paired comparisons against {REFERENCE} keep their outcome."
    )
