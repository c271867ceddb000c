"""The numbers the verdict notes quote, computed (:func:`facts`): from the package, from the paper's
transcribed numbers (:mod:`shapley.companion.reported`) and from the committed runs under ``results/``.

:mod:`shapley.companion.verdicts` fills its note templates with these; ``verdicts.facts`` is this module's
:func:`facts`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from shapley.companion.htmltable import word_list

#: The verdict vocabulary (defined in :mod:`shapley.companion.verdicts`, which re-exports these names).
REPRODUCED = "reproduced"
CONSISTENT = "consistent"
CONTRADICTED = "contradicted"
DEPENDS = "depends on reading"
NOT_HERE = "not reproducible here"

# ---------------------------------------------------------------------------------------------------
# The numbers the notes quote, computed
# ---------------------------------------------------------------------------------------------------


def _f(x: float, decimals: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{decimals}f}"


def _rep(x: float) -> str:
    """A reported number as printed (Python's shortest repr, which keeps the printed digits)."""
    return repr(float(x)) if len(repr(float(x))) <= 7 else f"{x:.3f}"


@functools.cache
def _mozart_facts(results: Path) -> dict[str, str]:
    """The Mozart facts; the beta fits (seconds to compute) come from the committed record under
    ``results/companion`` (:mod:`shapley.companion.mozart_results`; ``moz_n_fit`` is 'n/a' without it)."""
    from shapley.companion import mozart, mozart_results, reported

    try:
        fits: list[dict[str, Any]] | None = mozart_results.fits(mozart_results.load(results / "companion"))
    except FileNotFoundError:
        fits = None
    base = mozart.baseline_uncertainties(1)
    v = mozart.verdict_facts(fits=fits if fits is not None else [])
    # the readings other than the paper's definition with finite values on both tables
    others = [r for r in mozart.readings_table() if r["key"] != "paper" and r["rises"] is not None]
    printed = reported.MOZART_UNCERTAINTY
    return {
        "moz_like": _f(base["likelihood"]),
        "moz_sem": _f(base["semantic_likelihood"]),
        "rep_moz_like": f"{printed['table1']['likelihood']:.2f}",
        "rep_moz_sem": f"{printed['table1']['semantic_likelihood']:.2f}",
        "rep_moz_shap1": f"{printed['table1']['shapley']:.2f}",
        "rep_moz_shap2": f"{printed['table2']['shapley']:.2f}",
        "moz_paper1": _f(v["paper_definition"][0], 2),
        "moz_paper2": _f(v["paper_definition"][1], 2),
        "moz_n_readings": str(v["readings_tried"]),
        "moz_n_match": str(len(v["fit_both_at_beta"])),
        "moz_n_fit": str(len(v["fit_both_beta_free"])) if fits is not None else "n/a",
        "moz_n_rise": str(sum(r["rises"] is True for r in others)),
        "moz_n_finite": str(len(others)),
        "moz_rises": "yes" if v["rises_under_paper_definition"] else "no",
    }


COSINE_SEARCH_N = 20
"""Size of the unit-vector searches quoted in the ``beta-0.5-psd`` note (the largest n of the committed runs)."""


def psd_judge_facts(results: str | Path) -> dict[str, str]:
    """The facts of the ``beta-0.5-psd`` note that are cheap to compute (the PSD and limitations pages glue
    them; :func:`facts` holds them too): the committed clipped-cosine searches (``results/theory``, ``make
    theory-results``), the non-PSD counts per judge and the most answers per question of the swept runs."""
    from shapley.companion import reported
    from shapley.theory import cosine, cosine_results

    results = Path(results)
    out = {
        "cos_search_n": str(COSINE_SEARCH_N),
        "cos_circle_n": str(cosine.circle_first_indefinite_n(0.5)),
        "psd05_judges": _judge_counts(results, reported.HYPERPARAMETERS["beta"]),
        "psd05_max_n": _max_n(results),
    }
    try:
        record = cosine_results.load(results / "theory")
    except FileNotFoundError:
        return {
            **out,
            **dict.fromkeys(
                ("cos_search_min", "cos_witness_n", "cos_witness_dim", "cos_witness_min", "cos_dims", "cos_sizes"),
                "n/a",
            ),
        }
    found = next(r for r in record["sweep"] if r["n"] == COSINE_SEARCH_N)
    w = record["witness"]
    grid = record["freshness"]["settings"]["dimension_search"]
    return {
        **out,
        "cos_search_min": _f(found["min_eig_R"]),
        "cos_witness_n": str(w["n"]),
        "cos_witness_dim": str(w["dim"]),
        # recomputed from the committed vectors, not copied from the record
        "cos_witness_min": _f(cosine.cosine_min_eigenvalue(cosine_results.witness_vectors(record), w["beta"]), 4),
        "cos_dims": f"{min(grid['dims'])} to {max(grid['dims'])}",
        "cos_sizes": ", ".join(str(n) for n in grid["sizes"]),
    }


def _max_n(results: Path) -> str:
    """The most answers per question among the runs with a beta sweep ('n/a' when none)."""
    from shapley.companion import tables
    from shapley.pipeline.rundir.store import read_config

    swept = [d for d in tables.discover_runs(results) if (Path(d) / "beta_sweep.csv").exists()]
    sizes = [n for n in (_n_samples(read_config, d) for d in swept) if n is not None]
    return str(max(sizes)) if sizes else "n/a"


def _judge_counts(results: Path, beta: float) -> str:
    """Non-PSD kernel matrices at ``beta`` per judge: "0 of 2100 under embedding:minilm (9 runs) and ..."."""
    from shapley.companion import tables

    by_judge = tables.psd_at_beta_by_judge(tables.discover_runs(results), beta)
    parts = [
        f"{c['n_not_psd']} of {c['n']} under {judge} ({c['runs']} run{'s' if c['runs'] != 1 else ''})"
        for judge, c in by_judge.items()
    ]
    return word_list(parts) or "n/a"


NEAR_COPY_RHOS = (0.99, 0.999)
"""rho of the near copies whose Property 1 failure the prop-3.6 note quotes."""


@functools.cache
def _near_copy_facts() -> dict[str, str]:
    """Property 1 with a near copy (rho < 1) of the minimiser m replacing m itself: the rise of the total (nats)
    on the hand-made 3-answer matrix of the properties page, for each rho of :data:`NEAR_COPY_RHOS`."""
    from shapley.theory import properties as pr

    R = pr.property3_witness_rv()[0]
    m = pr.argmin_player(R)
    rise = [pr.total_uncertainty(pr.rv_duplicate(R, m, m, rho)) - pr.total_uncertainty(R) for rho in NEAR_COPY_RHOS]
    return {
        "p1_rhos": " and ".join(f"{r:g}" for r in NEAR_COPY_RHOS),
        "p1_rises": " and ".join(f"{x:.1e}" for x in rise),
    }


@functools.cache
def _psd_facts() -> dict[str, str]:
    from shapley.core.metrics import auroc
    from shapley.core.psd import gershgorin_beta_bound, paper_beta_bound
    from shapley.theory import worstcase

    caveat = worstcase.beta_caveat(0.5)
    return {
        "bound_paper10": _f(paper_beta_bound(10)),
        "bound_gersh10": _f(gershgorin_beta_bound(10)),
        "beta_star10": _f(worstcase.beta_star(10)),
        "beta_star8": _f(caveat["beta_star_at"]),
        "psd05_first_n": str(caveat["n_fail"]),
        "auroc_reversed": _f(auroc([2.0, 1.0], [True, False]), 0),
    }


def _row(rows: Mapping[tuple[str, str], tuple[float, ...]], methods: tuple[str, ...], key: tuple[str, str]):
    return dict(zip(methods, rows[key], strict=True))


def _shap_best(values: Mapping[str, float]) -> bool:
    return all(values["Shap"] > v for m, v in values.items() if m != "Shap")


def _above(values: Mapping[str, float]) -> str:
    """The methods printed above Shap in a row, with their values: "SE (0.792) and DSE (0.797)"."""
    above = [f"{m} ({_rep(v)})" for m, v in values.items() if v > values["Shap"]]
    return word_list(above)


def relative_gap(value: float, base: float) -> float:
    """How far ``value`` is above ``base``, in percent of ``base`` (negative when below): the "+7.9%" of the
    paper's text.

    Examples:
        >>> relative_gap(0.55, 0.5), round(relative_gap(0.5, 0.55), 2)
        (10.000000000000009, -9.09)
    """
    return 100.0 * (value / base - 1.0)


@functools.cache
def _table_facts() -> dict[str, str]:
    from shapley.companion import reported as rp

    t3 = {k: _row(rp.TABLE3_ROWS, rp.TABLE3_METHODS, k) for k in rp.TABLE3_ROWS}
    t4 = {k: _row(rp.TABLE4_ROWS, rp.TABLE4_METHODS, k) for k in rp.TABLE4_ROWS}
    gaps = {k: max(v.values()) - v["Shap"] for k, v in t4.items()}
    worst = max(gaps, key=lambda k: gaps[k])
    nq = t4[("nq_open", "F-7B")]
    claim_nq: Mapping[str, Any] = next(c for c in rp.TABLE4_TEXT_CLAIMS_CHECK if c["claim_id"] == "t4-nq-f7b-ne")
    gemma = t3[("wmt14", "G-7B")]
    return {
        "t3_rows": str(len(t3)),
        "t3_avg_best": max(zip(rp.TABLE3_AVERAGE, rp.TABLE3_METHODS, strict=True))[1],
        "t4_svamp_q14b_best": max(t4[("svamp", "Q-14B")], key=lambda m: t4[("svamp", "Q-14B")][m]),
        "t3_shap_best": str(sum(_shap_best(v) for v in t3.values())),
        "rep_t3_gemma_avge": _rep(gemma["AvgE"]),
        "rep_t3_gemma_shap": _rep(gemma["Shap"]),
        "rep_t3_avg_shap": _rep(rp.TABLE3_AVERAGE[rp.TABLE3_METHODS.index("Shap")]),
        "t4_rows": str(len(t4)),
        "t4_per_dataset": str(len(rp.TABLE4_MODELS)),
        "t4_shap_best": str(sum(_shap_best(v) for v in t4.values())),
        "t4_squad_best": str(sum(_shap_best(v) for (d, _), v in t4.items() if d == "squad")),
        "t4_bioasq_best": str(sum(_shap_best(v) for (d, _), v in t4.items() if d == "bioasq")),
        "t4_max_gap": _f(gaps[worst]),
        "t4_max_gap_row": f"{max(t4[worst], key=lambda m: t4[worst][m])} on {rp.DATASETS[worst[0]]}, "
        f"{rp.MODELS[worst[1]]}",
        "rep_t4_squad_l13b_shap": _rep(t4[("squad", "L-13B")]["Shap"]),
        "rep_t4_squad_l13b_dse": _rep(t4[("squad", "L-13B")]["DSE"]),
        "rep_t4_bioasq_m7b_shap": _rep(t4[("bioasq", "M-7B")]["Shap"]),
        "rep_t4_bioasq_m7b_se": _rep(t4[("bioasq", "M-7B")]["SE"]),
        "rep_t4_squad_d8b_shap": _rep(t4[("squad", "D-8B")]["Shap"]),
        "t4_squad_d8b_above": _above(t4[("squad", "D-8B")]),
        "rep_t4_svamp_q14b_er": _rep(t4[("svamp", "Q-14B")]["ER"]),
        "t4_nq_gap_abs": _f(nq["Shap"] - nq["NE"]),
        "t4_nq_gap_rel": f"{relative_gap(nq['Shap'], nq['NE']):.1f}%",
        "rep_t4_nq_claimed": f"{100 * float(claim_nq['claimed']):.1f}%",
        "t4_nq_above": _above(nq),
    }


def _n_samples(read_config: Callable[[Any], Any], run_dir: Path) -> int | None:
    """The run's number of answers per question, or None when its config.json cannot be read."""
    try:
        return int(read_config(run_dir).n_samples)
    except (ValueError, KeyError, TypeError, OSError):
        return None


_T5_FIELDS = (
    "t5_span",
    "t5_ci",
    "t5_psd_max",
    "t5_not_psd1",
    "t5_n1",
    "t5_auroc1",
    "t5_neginf1",
    "t5_neginf1_repaired",
    "t5_auroc1_finite",
)


def _measured_facts(results: Path) -> dict[str, str]:
    """Facts from the committed runs under ``results`` ('n/a' where a file is missing)."""
    from shapley.companion import reported, singular_results, tables
    from shapley.companion.htmltable import count_range

    runs = tables.discover_runs(results)
    psd = tables.psd_at_beta(runs, reported.HYPERPARAMETERS["beta"])
    counts = [n for n in (tables.question_count(d) for d in runs) if n is not None]
    out = {
        "psd05_not": str(psd["n_not_psd"]),
        "psd05_total": str(psd["n"]),
        "psd05_runs": str(psd["runs"]),
        "q_min": str(min(counts)) if counts else "n/a",
        "q_max": str(max(counts)) if counts else "n/a",
        "q_range": count_range(counts),
        **dict.fromkeys(_T5_FIELDS, "n/a"),
    }
    llama = results / "triviaqa_llama13b" / "minilm_n10"
    if (llama / "beta_sweep.csv").exists():
        sweep = tables.beta_ablation({"LLaMA-13B": llama})
        grid = sweep[sweep["beta"].isin([b for b, _ in reported.TABLE5_ROUND1])]
        ok = grid[grid["n_not_psd"] == 0]
        last = grid.sort_values("beta").iloc[-1]
        out.update(
            t5_span=_f(float(ok["auroc"].max() - ok["auroc"].min())),
            t5_ci=_f(float((ok["auroc_hi"] - ok["auroc_lo"]).median())),
            t5_psd_max=f"{ok['beta'].max():g}",
            t5_not_psd1=str(int(last["n_not_psd"])),
            t5_n1=str(int(last["n"])),
            t5_auroc1=_f(float(last["auroc"])),
        )
        inf = singular_results.infinite_scores(llama, float(last["beta"]), results)
        out.update(
            t5_neginf1=str(inf.n_neginf),
            t5_neginf1_repaired=str(inf.n_neginf_repaired),
            t5_auroc1_finite=_f(inf.auroc_finite),
        )
    return out


@functools.cache
def _theory_facts() -> dict[str, str]:
    from shapley.pipeline.config import ScoringSettings
    from shapley.theory.propositions import prop36_readings

    checks = [r.witness["property3"] for r in prop36_readings() if "property3" in r.witness]
    return {
        "prop36_p3_fails": str(sum(not c.holds for c in checks)),
        "prop36_p3_readings": str(len(checks)),
        "setup_threshold": repr(float(ScoringSettings().threshold)),
    }


def computed_verdicts(f: Mapping[str, str]) -> dict[str, str]:
    """Claim id -> verdict, decided from the facts ``f`` (:func:`facts`) for every claim whose verdict the
    package's own computations or the paper's transcribed numbers settle; the other claims keep their rule's
    verdict (``not reproducible here``: what this environment lacks; or a reading of the text)."""
    from shapley.companion import reported as rp

    def holds(ok: bool, yes: str = CONSISTENT) -> str:
        return yes if ok else CONTRADICTED

    def x(key: str) -> float:
        return float(f[key].rstrip("%"))

    hp = rp.HYPERPARAMETERS
    claimed_nq = f["rep_t4_nq_claimed"]
    return {
        "mozart-entropies": holds(
            (f"{x('moz_like'):.2f}", f"{x('moz_sem'):.2f}") == (f["rep_moz_like"], f["rep_moz_sem"]), REPRODUCED
        ),
        "mozart-shapley": holds((f["moz_paper1"], f["moz_paper2"]) == (f["rep_moz_shap1"], f["rep_moz_shap2"])),
        "mozart-rise": holds(f["moz_rises"] == "yes", REPRODUCED),
        "prop-3.1-existence": holds(x("beta_star10") > 0, REPRODUCED),
        "prop-3.1-bound": holds(x("bound_paper10") <= x("beta_star10"), REPRODUCED),
        "beta-0.5-psd": CONTRADICTED if f["psd05_not"] not in ("0", "n/a") else NOT_HERE,
        "prop-3.6": holds(f["prop36_p3_fails"] == "0", REPRODUCED),
        "auroc-definition": holds(x("auroc_reversed") == 1.0),
        "auroc-random-worst": holds(x("auroc_reversed") >= 0.5),
        "t3-majority": holds(2 * x("t3_shap_best") > x("t3_rows")),
        "t3-gemma-wmt-exception": holds(
            x("rep_t3_gemma_avge") > x("rep_t3_gemma_shap") and x("t3_shap_best") == x("t3_rows") - 1
        ),
        "t3-average": holds(f["t3_avg_best"] == "Shap"),
        "t4-squad-all": holds(f["t4_squad_best"] == f["t4_per_dataset"]),
        "t4-squad-l13b-dse": holds(x("rep_t4_squad_l13b_shap") > x("rep_t4_squad_l13b_dse")),
        "t4-bioasq-all": holds(f["t4_bioasq_best"] == f["t4_per_dataset"]),
        "t4-bioasq-m7b-se": holds(x("rep_t4_bioasq_m7b_shap") > x("rep_t4_bioasq_m7b_se")),
        "t4-deepseek-squad": holds(not f["t4_squad_d8b_above"]),
        "t4-er-svamp-q14b": holds(f["t4_svamp_q14b_best"] == "ER"),
        "t4-nq-f7b-ne": holds(f["t4_nq_gap_rel"] == claimed_nq and not f["t4_nq_above"]),
        "setup-correctness": holds(float(f["setup_threshold"]) == hp["rougeL_threshold"] == hp["bleu_threshold"]),
    }


def results_page_facts(results: str | Path) -> dict[str, str]:
    """The fields of :func:`facts` that the results page glues (the Mozart readings and the facts measured on
    the committed runs), without the theory computations the page never shows."""
    root = Path(results)
    return {**_mozart_facts(root), **_measured_facts(root)}


def facts(results: str | Path | None = None) -> dict[str, str]:
    """Every ``{field}`` of the note templates, computed (formatted as shown). ``results``: the folder of
    committed runs (default: the repository's ``results/``)."""
    from shapley.pipeline.rundir.settings import REPO_ROOT

    root = Path(results) if results is not None else REPO_ROOT / "results"
    # a new dict: the cached ones stay intact
    return {
        **_mozart_facts(root),
        **_near_copy_facts(),
        **_psd_facts(),
        **_table_facts(),
        **_theory_facts(),
        **psd_judge_facts(root),
        **_measured_facts(root),
    }
