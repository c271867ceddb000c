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

from shapley.companion import reported
from shapley.companion.htmltable import Col, Html, code, esc, html_table
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


def judge_robustness_html(
    run_a: str | os.PathLike[str], run_b: str | os.PathLike[str], label_a: str, label_b: str
) -> Html:
    """:func:`judge_robustness` for readers, or a note saying the second run is not there yet."""
    missing = [d for d in (run_b, run_a) if not (Path(d) / "metrics.csv").exists()]
    if missing:
        return Html(
            f'<p class="not-run"><em>Judge robustness: not yet run</em> ({code(relative_path(missing[0]))} has no '
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
        Col("rank_a", f"Rank, {label_a}", decimals=0),
        Col("rank_b", f"Rank, {label_b}", decimals=0),
        Col("oa", f"vs {REFERENCE}, {label_a}"),
        Col("ob", f"vs {REFERENCE}, {label_b}"),
        Col("keep", "Same outcome?"),
    ]
    caption = (
        f"The same answers scored under two entailment judges ({code(r.run_a)}: {esc(label_a)}; "
        f"{code(r.run_b)}: {esc(label_b)}), on the {r.n_questions} questions both scored; correctness is judged by "
        "ROUGE-L in both, and AUROCs and outcomes are recomputed on those questions. "
        f"<em>vs {REFERENCE}</em>: the paired comparison's outcome under that judge (DeLong, Holm-adjusted within "
        "each run; n.s.: no significant difference). Rank correlation of the two orderings: Spearman "
        f"{r.spearman:.2f}, Kendall {r.kendall:.2f}, over {len(r.table)} methods."
    )
    return html_table(t, cols, caption=caption, css="measured-table")


PAPER_BASELINES: frozenset[str] = frozenset(reported.paper_baselines())
"""Our names of the methods the paper compares Shap with: its tables' columns and the baselines its Sec. 4 names
(:func:`shapley.companion.reported.paper_baselines`)."""


def claim_status(outcomes_vs_reference: dict[str, str]) -> str:
    """Whether one judge's paired comparisons support the paper's claim that Shap orders answers best.

    ``outcomes_vs_reference``: method -> outcome from the method's side against :data:`REFERENCE` (``win``,
    ``tie``, ``loss``, ``undefined``; DeLong, Holm within the run). Only :data:`PAPER_BASELINES` count:
    ``supported`` when Shap is significantly better than every one compared, ``contradicted`` when one is
    significantly better than Shap, ``not supported`` otherwise, ``not tested`` when none is compared.

    >>> claim_status({"DSE": "loss", "SE": "loss", "EigV": "win"})
    'supported'
    >>> claim_status({"DSE": "tie", "SE": "loss"}), claim_status({"LexSim": "win"}), claim_status({"EigV": "loss"})
    ('not supported', 'contradicted', 'not tested')
    """
    paper = [o for m, o in outcomes_vs_reference.items() if m in PAPER_BASELINES and o != "undefined"]
    if not paper:
        return "not tested"
    if "win" in paper:
        return "contradicted"
    return "supported" if all(o == "loss" for o in paper) else "not supported"


def _listing(methods: list[str]) -> str:
    """``A, B`` with the methods the paper never compares marked."""
    return ", ".join(esc(m) if m in PAPER_BASELINES else f"{esc(m)} (not compared in the paper)" for m in methods)


def _judge_status(outcomes_vs_reference: dict[str, str], label: str) -> str:
    """One judge's status of the claim, with its ties with paper baselines and Shap's significant wins/losses."""
    by: dict[str, list[str]] = {}
    for m, o in outcomes_vs_reference.items():
        by.setdefault(o, []).append(m)
    parts = []
    ties = [m for m in by.get("tie", []) if m in PAPER_BASELINES]
    if ties:
        parts.append(f"no significant difference with {_listing(ties)}")
    if by.get("loss"):
        parts.append(f"significantly better than {_listing(by['loss'])}")
    if by.get("win"):
        parts.append(f"significantly worse than {_listing(by['win'])}")
    if not by.get("win") and not by.get("loss"):
        parts.append(
            f"none of its {sum(o != 'undefined' for o in outcomes_vs_reference.values())} comparisons significant"
        )
    return f"{claim_status(outcomes_vs_reference)} under {esc(label)} ({REFERENCE}: {'; '.join(parts)})"


def judge_findings(
    run_a: str | os.PathLike[str], run_b: str | os.PathLike[str], label_b: str, label_a: str = "the first judge"
) -> str:
    """HTML sentence: whether the paper's claim that Shap orders answers best is supported under each judge, by
    the paired comparisons (DeLong, Holm within each run; :func:`claim_status`), with the ties with the paper's
    baselines and Shap's significant wins and losses; then the rank correlation of the two orderings (point
    estimates) and how many outcomes survive the change of judge. Or that the run is not there yet."""
    if not (Path(run_b) / "metrics.csv").exists():
        return f"The second judge ({esc(label_b)}) has not been run yet (<code>make results</code>)."
    r = judge_robustness(run_a, run_b)
    t = r.table[r.table["method"] != REFERENCE]
    status = [
        _judge_status({m: o for m, o in zip(t["method"], t[col], strict=True) if isinstance(o, str)}, label)
        for col, label in (("outcome_a", label_a), ("outcome_b", label_b))
    ]
    return (
        f"On the {r.n_questions} questions both judges scored, the paper's claim that {REFERENCE} orders answers "
        f"best (tested against its baselines by DeLong's paired test, Holm-adjusted within each run) is "
        f"{status[0]}, and {status[1]}. The two orderings of the methods by AUROC correlate with Spearman "
        f"{r.spearman:.2f} (Kendall {r.kendall:.2f}), and {r.n_kept} of {r.n_compared} paired comparisons "
        f"against {REFERENCE} keep their outcome."
    )
