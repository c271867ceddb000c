"""Every claim has a verdict in the one vocabulary, with evidence that exists, quotes that are the paper's,
commands that the CLI accepts, and the internal checks behind each verdict hold; each computed verdict follows
its evidence."""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import shapley
from shapley.companion import claim_model, claims, verdict_html, verdicts
from shapley.companion import reported as paper
from shapley.companion.claim_model import CONSISTENT, CONTRADICTED, DEPENDS, NOT_HERE, REPRODUCED
from shapley.core import metrics

ROOT = Path(__file__).resolve().parents[2]
TEX = ROOT.parent / "shared" / "paper" / "shapley_uncertainty_nlg.tex"


def _toc_pages() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = {toc["root"]}

    def walk(entries):
        for e in entries:
            if "file" in e:
                pages.add(e["file"])
            walk(e.get("sections", []))
            walk(e.get("chapters", []))

    walk(toc.get("parts", []))
    return pages


#: The verdict each claim has today. A change of evidence that flips one fails
#: test_computed_verdicts_agree_with_the_expected_ones, and must be looked at.
EXPECTED = {
    "shap-addresses-collapse": CONTRADICTED,
    "shap-more-accurate": CONTRADICTED,
    "mozart-entropies": REPRODUCED,
    "mozart-shapley": CONTRADICTED,
    "mozart-rise": REPRODUCED,
    "prop-3.1-existence": REPRODUCED,
    "prop-3.1-bound": REPRODUCED,
    "beta-0.5-psd": NOT_HERE,
    "diffent-high-dim": REPRODUCED,
    "prop-3.5": DEPENDS,
    "prop-3.6": CONTRADICTED,
    "auroc-definition": CONTRADICTED,
    "auroc-random-worst": DEPENDS,
    "t3-majority": CONSISTENT,
    "t3-gemma-wmt-exception": CONSISTENT,
    "t3-average": CONSISTENT,
    "t4-competitive": DEPENDS,
    "t4-squad-all": CONTRADICTED,
    "t4-squad-l13b-dse": CONTRADICTED,
    "t4-bioasq-all": CONTRADICTED,
    "t4-bioasq-m7b-se": CONTRADICTED,
    "t4-deepseek-squad": CONTRADICTED,
    "t4-er-svamp-q14b": CONSISTENT,
    "t4-nq-f7b-ne": CONTRADICTED,
    "t5-beta-argmax": NOT_HERE,
    "setup-8000": NOT_HERE,
    "setup-correctness": CONSISTENT,
    "setup-opt-range": CONTRADICTED,
    "fig-claims": NOT_HERE,
}


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return verdicts.verdict_table()


def test_every_claim_has_one_verdict_of_the_vocabulary(table):
    assert list(table["id"]) == [c.id for c in claims.CLAIMS] and set(table["id"]) == set(EXPECTED)
    assert len(EXPECTED) == len(claims.CLAIMS)
    assert claim_model.VERDICT_KINDS == (
        "reproduced",
        "consistent",
        "contradicted",
        "depends on reading",
        "not reproducible here",
    )
    assert set(table["verdict"]) <= set(claim_model.VERDICT_KINDS)
    assert set(claim_model.BADGES) == set(claim_model.VERDICT_KINDS)
    for _, row in table.iterrows():
        assert row["note"].strip() and row["where"].strip(), row["id"]
    for c in claims.CLAIMS:
        if isinstance(c.verdict, str):
            assert c.verdict in claim_model.VERDICT_KINDS and c.reason.strip(), c.id


def test_evidence_pages_exist_and_cited_functions_resolve(table):
    pages = _toc_pages()
    for _, row in table.iterrows():
        assert row["evidence"], row["id"]
        for target in row["evidence"]:
            page = target.partition("#")[0]
            assert page in pages, f"{row['id']}: evidence {page} is not a book page"
        for name in row["functions"]:
            module, _, attr = name.rpartition(".")
            assert callable(getattr(importlib.import_module(module), attr)), f"{row['id']}: {name}"


def test_readings_only_where_the_verdict_depends_on_them(table):
    for _, row in table.iterrows():
        if row["verdict"] == DEPENDS:
            assert len(row["readings"]) >= 2, row["id"]
            for name, verdict, note in row["readings"]:
                assert verdict in claim_model.VERDICT_KINDS and verdict != DEPENDS, (row["id"], name)
                assert name.strip() and note.strip()
        else:
            assert row["readings"] == (), row["id"]


def test_not_reproducible_here_names_a_command_the_cli_accepts(table):
    from shapley.cli import build_parser

    parser = build_parser()
    for _, row in table.iterrows():
        if row["verdict"] == NOT_HERE:
            assert row["command"], f"{row['id']}: 'not reproducible here' needs the command that would settle it"
        for command in filter(None, row["command"].split(" && ")):
            argv = shlex.split(command)
            assert argv[:3] == ["python", "-m", "shapley"], command
            parser.parse_args(argv[3:])  # exits (SystemExit) on a flag the CLI does not know


def test_the_verdicts_the_issue_settled(table):
    v = table.set_index("id")  # the verdicts themselves: EXPECTED
    # 0 non-PSD at beta = 0.5 in results/, but from judges that are not the paper's (the stand-in can produce
    # one at the sizes run): not reproducible here, with the evidence and the proved caveat
    note = v.loc["beta-0.5-psd", "note"]
    assert "0 of" in note and "at most 20 answers" in note
    assert "n = 8 on" in v.loc["beta-0.5-psd", "proved"]
    assert v.loc["beta-0.5-psd", "command"]
    assert {r[1] for r in v.loc["prop-3.5", "readings"]} == {CONTRADICTED, REPRODUCED}


def _sweep(path: Path, n_not_psd: int) -> None:
    path.mkdir(parents=True)
    (path / "beta_sweep.csv").write_text(
        "beta,auroc,auroc_lo,auroc_hi,n,n_not_psd,n_repaired,min_eig_min\n"
        f"0.5,0.7,0.6,0.8,10,{n_not_psd},{n_not_psd},0.1\n"
    )
    (path / "metrics.csv").write_text("method,auroc,n_questions\nShap,0.7,10\n")
    (path / "config.json").write_text((ROOT / "results" / "smollm2" / "squad" / "config.json").read_text())


def test_the_beta_05_verdict_follows_the_measurements(tmp_path, monkeypatch):
    from shapley.companion import provenance

    monkeypatch.setattr(provenance, "question_count", lambda d: 10)
    none = verdicts.verdict_table(tmp_path / "none").set_index("id")
    assert none.loc["beta-0.5-psd", "verdict"] == NOT_HERE
    assert "(all questions of 0 runs, at most n/a answers), n/a are not PSD" in none.loc["beta-0.5-psd", "note"]
    _sweep(tmp_path / "clean" / "run", 0)
    assert verdicts.facts(tmp_path / "clean")["psd05_not"] == 0
    clean = verdicts.verdict_table(tmp_path / "clean").set_index("id")
    assert clean.loc["beta-0.5-psd", "verdict"] == NOT_HERE  # none indefinite settles nothing here
    _sweep(tmp_path / "bad" / "run", 3)
    t = verdicts.verdict_table(tmp_path / "bad").set_index("id")
    assert t.loc["beta-0.5-psd", "verdict"] == CONTRADICTED
    assert "3 of 10" in t.loc["beta-0.5-psd", "note"]


def test_mozart_numbers_and_direction_have_separate_verdicts(table):
    """Issue 18, item 6: 0.40 and 0.51 are contradicted; the rise from one to the other is reproduced."""
    from shapley.companion import mozart

    v = table.set_index("id")  # their verdicts: EXPECTED
    assert "does hold" not in v.loc["mozart-shapley", "note"]
    rows = [r for r in mozart.readings_table() if r["key"] != "paper" and r["rises"] is not None]
    n_rise = sum(r["rises"] is True for r in rows)
    assert f"rises under {n_rise} of the {len(rows)} other readings" in v.loc["mozart-rise", "note"]


def test_the_beta_05_note_quotes_the_committed_cosine_searches():
    """Issue 23: the note quotes the committed searches (results/theory), names the witness that the stand-in
    can be indefinite, never claims that a search bounds anything, and counts per judge."""
    from shapley.companion import provenance, tables
    from shapley.pipeline.rundir.settings import REPO_ROOT
    from shapley.theory import cosine, cosine_results

    f = verdicts.facts()
    record = cosine_results.RECORD.load(REPO_ROOT / "results" / "theory")
    found = next(r for r in record["sweep"] if r["n"] == verdicts.COSINE_SEARCH_N)
    assert f["cos_search_min"] == found["min_eig_R"]
    lam = np.linalg.eigvalsh(shapley.kernel_matrix(cosine.cosine_C(cosine_results.witness_vectors(record)), 0.5))
    assert f["cos_witness_min"] == pytest.approx(lam[0], abs=1e-12) and lam[0] < 0
    assert cosine.circle_first_indefinite_n(0.5) > verdicts.COSINE_SEARCH_N
    note = verdicts.fill(claims.claim("beta-0.5-psd").note, f)
    assert "hardly" not in note and "a bound for every" not in note and "bounds nothing" in note
    # issue 37: not "the only witness": the searches in R^n found indefinite R at every n from 26 to 30, and the
    # circle from 61 on, each recomputed here
    assert "only witness" not in note
    negative = [r["n"] for r in record["sweep"] if r["min_eig_R"] < 0]
    assert negative == list(range(26, 31)) and f["cos_rn_indefinite"] == tuple(negative)
    assert "indefinite R for n = 26, 27, 28, 29 and 30" in note
    first = next(n for n in range(2, 200) if cosine.circle_min_eigenvalue(n, 0.5) < 0)
    assert first == f["circle_first_n"] == 61 and f"for every n from {first}" in note
    assert all(cosine.circle_min_eigenvalue(n, 0.5) < 0 for n in range(first, f["circle_checked"] + 1))
    assert f"{f['cos_witness_n']} unit vectors in {f['cos_witness_dim']} dimensions" in note
    assert f"smallest eigenvalue {lam[0]:.4f}" in note
    by_judge = tables.psd_at_beta_by_judge(provenance.discover_runs(REPO_ROOT / "results"), 0.5)
    assert set(by_judge) == {"embedding:minilm", "llm:smollm2"}
    for judge, c in by_judge.items():
        assert f"{c['n_not_psd']} of {c['n']} under {judge}" in note


def test_ascii_maths_is_typeset_and_minus_infinity_does_not_wrap(table):
    html = verdict_html.verdicts_html()
    assert "beta &lt;=" not in html and "β ≤ 1/(n+1)" in html
    assert "-inf" not in re.sub(r"<code>.*?</code>", "", html)
    assert '<span style="white-space:nowrap">−∞</span>' in html
    assert "beta_star" in html  # identifiers in code stay as they are


def test_notes_are_filled_from_computations(table):
    """The notes quote computed numbers: change a computation and the note changes with it."""
    from shapley.companion import mozart

    v = table.set_index("id")
    assert f"{mozart.evaluate('paper', 1):.2f}" in v.loc["mozart-shapley", "note"]
    assert f"Of the {len(mozart.readings_table())} readings tried" in v.loc["mozart-shapley", "note"]
    computed = verdicts.facts()
    for c in claims.CLAIMS:
        for text in (c.note, c.reason, c.proved, *(r.note for r in c.all_readings())):
            for field in re.findall(r"{(\w+)[^}]*}", text):
                assert field in computed, f"{c.id}: {{{field}}} is not computed by facts()"


def _normalise_tex(tex: str) -> str:
    tex = re.sub(r"~?\\cite[pt]?\{[^}]*\}", "", tex)
    tex = tex.replace("\\%", "%").replace("``", '"').replace("''", '"')
    return re.sub(r"\s+", " ", tex)


@pytest.mark.skipif(not TEX.exists(), reason=f"paper source not found at {TEX}")
def test_quotes_are_one_verbatim_sentence_of_the_paper():
    text = _normalise_tex(TEX.read_text(encoding="utf-8"))
    quotes = {c.id: c.quote for c in claims.CLAIMS if c.quote}
    assert len(quotes) >= len(claims.CLAIMS) - 1
    for cid, quote in quotes.items():
        assert len(quote.split()) <= 35, f"{cid}: quote longer than one short sentence"
        assert not re.search(r"[.;:!?] [A-Z]", quote), f"{cid}: more than one sentence quoted"
        for part in quote.split(" … "):
            assert part in text, f"{cid}: not verbatim in the paper: {part!r}"


# ------------------------------------------------------------------ the internal checks behind verdicts


def _row(dataset: str, model: str) -> dict[str, float]:
    return dict(zip(paper.TABLE4_METHODS, paper.TABLE4_ROWS[(dataset, model)], strict=True))


def test_html_shows_quote_badge_readings_command_and_links():
    h = verdict_html.verdicts_html()
    assert h.count('<tr id="claim-') == len(claims.CLAIMS)
    assert h.count('<tr class="claim-group"') == len(claim_model.GROUPS)
    assert '<q class="paper-quote">' in h and 'class="verdict-depends"' in h and "Command: <code>" in h
    assert 'href="../notebooks/properties.html#' in h and 'href="method.html"' in h
    assert "consistent within the paper</span>" in h


def test_prop36_near_copy_rise_matches_the_chain_rule_and_vanishes_as_rho_tends_to_one():
    import math

    import numpy as np

    from shapley.theory import properties as pr

    R = pr.property3_witness_rv()[0]
    m = pr.argmin_player(R)
    r2 = 1.0 - 1.0 / np.linalg.inv(R)[m, m]  # independent: squared multiple correlation of m with the others
    rises = [0.5 * math.log(rho**2 + (1 - rho**2) / (1 - r2)) for rho in verdicts.NEAR_COPY_RHOS]
    f = verdicts.paper_facts()
    assert f["p1_rises"] == pytest.approx(rises, rel=1e-9)
    written = " and ".join(f"{x:.1e}" for x in rises)
    assert rises[0] > rises[1] > 0 and written in verdicts.verdict_table().set_index("id").loc["prop-3.6", "note"]


# ------------------------------------------------------------------ verdicts computed from evidence (issue 27)


def test_computed_verdicts_agree_with_the_expected_ones(table):
    """Every verdict, as the book shows it, equals the one expected today (a change of evidence that flips a
    verdict fails here and must be looked at); at least 20 of them are computed by a rule."""
    assert dict(zip(table["id"], table["verdict"], strict=True)) == EXPECTED
    assert sum(not isinstance(c.verdict, str) for c in claims.CLAIMS) >= 20


_MOZART_AS_COMPUTED = {
    "moz_like": 0.943,
    "moz_sem": 0.325,
    "rep_moz_like": 0.94,
    "rep_moz_sem": 0.33,
    "moz_paper1": 1.10,
    "moz_paper2": 1.20,
    "rep_moz_shap1": 0.40,
    "rep_moz_shap2": 0.51,
    "moz_rises": True,
}


def _quick_facts() -> dict:
    return {**_MOZART_AS_COMPUTED, **verdicts.paper_facts(), **verdicts.paired_facts(ROOT / "results"), "psd05_not": 0}


def test_quick_verdicts_agree_with_the_rules():
    """As above without the slow Mozart and cosine computations (every other verdict from its evidence)."""
    f = _quick_facts()
    assert {c.id: c.decide(f) for c in claims.CLAIMS} == EXPECTED


@pytest.mark.parametrize(
    ("claim", "change"),
    [
        ("mozart-entropies", {"moz_like": 0.123}),
        ("mozart-shapley", {"moz_paper1": 0.40, "moz_paper2": 0.51}),
        ("mozart-rise", {"moz_rises": False}),
        ("prop-3.1-bound", {"bound_paper10": 0.9}),
        ("prop-3.1-existence", {"beta_star10": 0.0}),
        ("beta-0.5-psd", {"psd05_not": 3}),
        ("prop-3.6", {"prop36_p3_fails": 0}),
        ("auroc-definition", {"auroc_reversed": 1.0}),
        ("auroc-random-worst", {"auroc_reversed": 0.5}),
        ("shap-addresses-collapse", {"collapse_gap": 0.1}),
        ("shap-addresses-collapse", {"collapse_totals": (1.0, 1.0)}),
        ("shap-more-accurate", {"paired_baseline_win": 0}),
        ("t3-majority", {"t3_shap_best": 2}),
        ("t3-gemma-wmt-exception", {"rep_t3_gemma_avge": 0.5}),
        ("t3-average", {"t3_avg_best": "AvgE"}),
        ("t4-squad-all", {"t4_squad_best": 6, "t4_per_dataset": 6}),
        ("t4-squad-l13b-dse", {"rep_t4_squad_l13b_dse": 0.1}),
        ("t4-bioasq-all", {"t4_bioasq_best": 6, "t4_per_dataset": 6}),
        ("t4-bioasq-m7b-se", {"rep_t4_bioasq_m7b_se": 0.1}),
        ("t4-deepseek-squad", {"t4_squad_d8b_above": ()}),
        ("t4-er-svamp-q14b", {"t4_svamp_q14b_best": "Shap"}),
        ("t4-nq-f7b-ne", {"t4_nq_gap_rel": 7.9, "rep_t4_nq_claimed": 7.9, "t4_nq_above": ()}),
        ("setup-correctness", {"setup_rouge": (0.3, 0.35)}),
    ],
)
def test_each_computed_verdict_follows_its_evidence(claim, change):
    """Changing the evidence flips the verdict: none is a typed constant. The evidence is the computed one
    except the Mozart numbers (slow: their computed values are checked by the test above)."""
    c = claims.claim(claim)
    f = _quick_facts()
    before = c.decide(f)
    after = c.decide({**f, **change})
    assert before == EXPECTED[claim] and after != before


def test_prop36_and_auroc_evidence_is_computed():
    from shapley.theory.propositions import prop36_readings

    f = _quick_facts()
    p3 = [r.witness["property3"] for r in prop36_readings() if "property3" in r.witness]
    assert len(p3) == 2 and f["prop36_p3_fails"] == sum(not c.holds for c in p3) == 2
    assert f["auroc_reversed"] == metrics.auroc([2.0, 1.0], [True, False]) == 0.0


def test_the_relative_gap_is_taken_the_paper_way_round():
    """A known, asymmetric case: 0.55 against 0.5 is +10 %, 0.5 against 0.55 is -9.09 %; the printed Table 4
    gap is Shap relative to NE, computed here without the package's helper."""
    from shapley.companion.verdicts import relative_gap, shap_best

    assert relative_gap(0.55, 0.5) == pytest.approx(10.0)
    assert relative_gap(0.5, 0.55) == pytest.approx(-100 / 11)
    r = _row("nq_open", "F-7B")
    f = verdicts.paper_facts()
    assert f["t4_nq_gap_rel"] == pytest.approx(100 * (r["Shap"] - r["NE"]) / r["NE"])
    assert f["t4_nq_gap_abs"] == pytest.approx(r["Shap"] - r["NE"])
    # Shap's largest shortfall: the best entry of a row minus Shap's, over Table 4's rows
    shortfall = max(max(v) - v[paper.TABLE4_METHODS.index("Shap")] for v in paper.TABLE4_ROWS.values())
    assert f["t4_max_gap"] == pytest.approx(shortfall)
    # "best" is strict: a tie with another method is not outperforming it (squad M-7B ties DSE at 0.728)
    assert not shap_best({"Shap": 0.728, "DSE": 0.728, "SE": 0.5})
    assert shap_best({"Shap": 0.729, "DSE": 0.728}) and not shap_best({"Shap": 0.7, "DSE": 0.728})


def test_the_results_page_facts_are_those_of_facts():
    """The results page glues a subset of the facts (without the theory computations): the same values."""
    results = ROOT / "results"
    page = verdicts.results_page_facts(results)
    everything = verdicts.facts(results)
    assert {"psd05_not", "psd05_total", "t5_span"} <= page.keys()
    assert page == {k: everything[k] for k in page}


def test_facts_are_numbers_and_absent_ones_read_na():
    """Facts stay numbers (or names, or lists of them) until a template writes them; an absent one is "n/a"."""
    f = verdicts.facts()
    assert isinstance(f["t4_max_gap"], float) and isinstance(f["t4_rows"], int) and isinstance(f["moz_rises"], bool)
    assert verdicts.fill("{t4_max_gap:.3f} of {nothing:.3f}", f) == f"{f['t4_max_gap']:.3f} of n/a"
    assert verdicts.fill("{psd05_judges}", f) == " and ".join(
        f"{c.n_not_psd} of {c.n} under {c.judge} ({c.runs} run{'s' if c.runs != 1 else ''})" for c in f["psd05_judges"]
    )
    assert verdicts.fill("{t4_squad_d8b_above:.3f}", f) == "SE (0.792) and DSE (0.797)"
    assert verdicts.fill("{a}, {b:.1f}", {"a": (), "b": float("nan")}) == "n/a, n/a"


def test_the_table5_interval_width_is_the_median_of_an_even_count_by_its_definition(tmp_path, monkeypatch):
    """t5_ci, the median width of the Table 5 intervals at the betas where every R is PSD: on an even number of
    widths it is the mean of the middle two (statistics.median), not the lower or upper one."""
    import statistics

    from shapley.companion import singular_results, tables

    betas = [b for b, _ in paper.TABLE5_ROUND1]
    widths = [0.01 * (k + 1) ** 2 for k in range(len(betas) - 2)] + [0.5, 0.5]  # the last two are not all PSD
    sweep = pd.DataFrame(
        {
            "beta": betas,
            "auroc": 0.7,
            "auroc_lo": 0.1,
            "auroc_hi": [0.1 + w for w in widths],
            "n": 10,
            "n_not_psd": [0] * (len(betas) - 2) + [1, 2],
        }
    )
    run = tmp_path / "triviaqa_llama13b" / "minilm_n10"
    run.mkdir(parents=True)
    (run / "beta_sweep.csv").write_text("")
    monkeypatch.setattr(tables, "beta_ablation", lambda runs: sweep)
    counts = singular_results.InfiniteScores(1.0, 10, 0, 0, 0.5)
    monkeypatch.setattr(singular_results, "infinite_scores", lambda *args: counts)
    ok = widths[: len(betas) - 2]
    assert len(ok) % 2 == 0 and statistics.median(ok) not in ok
    assert verdicts.results_page_facts(tmp_path)["t5_ci"] == pytest.approx(statistics.median(ok), rel=1e-12)


# ------------------------------------------------------------------ the claims page for readers (issue 37)


def test_claims_are_grouped_in_the_page_order():
    """Every claim has one of the four groups, each group is present, and CLAIMS lists them group by group in the
    order of GROUPS (the page shows them in that order)."""
    assert claim_model.GROUPS == (
        "core theory",
        "headline empirical claims",
        "the paper's internal consistency",
        "set-up",
    )
    order = [claim_model.GROUPS.index(c.group) for c in claims.CLAIMS]  # a ValueError names an unknown group
    assert order == sorted(order) and set(order) == set(range(len(claim_model.GROUPS)))
    assert set(claim_model.GROUP_NOTES) == set(claim_model.GROUPS)


def test_anchors_are_unique_and_the_rows_carry_them():
    h = verdict_html.verdicts_html()
    anchors = [c.anchor for c in claims.CLAIMS]
    assert len(set(anchors)) == len(anchors)
    for a, c in zip(anchors, claims.CLAIMS, strict=True):
        assert a == f"claim-{c.id}" and re.fullmatch(r"claim-[a-z0-9.-]+", a)
    for a in anchors:
        assert h.count(f'id="{a}"') == 1 and f'href="#{a}"' in h
    groups = [verdict_html.group_anchor(g) for g in claim_model.GROUPS]
    assert len(set(groups) | set(anchors)) == len(groups) + len(anchors)
    assert "claims-the-papers-internal-consistency" in groups


def test_every_claim_has_a_one_line_reason_and_the_long_note_is_collapsed(table):
    from tests.book.test_prose_numbers import _reported_numbers, offending_numbers

    known = _reported_numbers()
    for c in claims.CLAIMS:
        assert c.reason.strip() and "\n" not in c.reason, c.id
        for text in (c.reason, c.proved):
            assert not offending_numbers(text, known), (c.id, text)
    for _, row in table.iterrows():
        assert len(row["reason"].split()) <= 30, (row["id"], row["reason"])
        assert "n/a" not in row["reason"], row["id"]
    h = verdict_html.verdicts_html()
    assert h.count("<details><summary>Details</summary>") == len(claims.CLAIMS)
    for _, row in table.iterrows():  # the reason is shown before the details open
        row_html = h.split(f'id="{row["anchor"]}"')[1].split("</tr>")[0]
        assert row_html.index(verdict_html.typeset(row["reason"])) < row_html.index("<details>")
    assert h.count("<strong>Proved:</strong>") == sum(bool(c.proved) for c in claims.CLAIMS) >= 2


def test_the_two_headline_claims_have_rows(table):
    """Sec. 3.3's 'Shapley uncertainty addresses the collapse' (refuted by efficiency, computed) and the abstract's
    'more accurately predicts' (judged from the paired tests, which only a baseline significantly better than Shap
    could turn into a contradiction)."""
    v = table.set_index("id")
    assert v.loc["shap-addresses-collapse", "group"] == claim_model.CORE
    assert v.loc["shap-more-accurate", "group"] == claim_model.HEADLINE
    assert v.loc["shap-addresses-collapse", "verdict"] == CONTRADICTED
    f = verdicts.facts()
    assert f["collapse_gap"] <= claims.EFFICIENCY_TOL and f["collapse_last"] < 0
    R = verdicts.collapse_matrix(1 - verdicts.COLLAPSE_EPS[-1])
    expected = verdicts.COLLAPSE_N / 2 * np.log(2 * np.pi * np.e) + 0.5 * np.log(np.linalg.det(R))
    assert f["collapse_last"] == pytest.approx(expected, abs=1e-6)
    # the paired counts are those of the beyond page's function, over the committed runs
    from shapley.companion import paired, provenance

    comparisons = paired.load_comparisons(provenance.discover_runs(ROOT / "results"))
    counts = paired.outcome_counts(comparisons)
    assert (f["paired_win"], f["paired_tie"], f["paired_loss"]) == (counts["win"], counts["tie"], counts["loss"])
    ours = comparisons[comparisons["method"].isin(list(paper.paper_baselines()))]
    assert f["paired_baseline_win"] == int((ours["outcome"] == "win").sum())
    expected_verdict = CONTRADICTED if f["paired_baseline_win"] else NOT_HERE
    assert v.loc["shap-more-accurate", "verdict"] == expected_verdict
    reason = v.loc["shap-more-accurate", "reason"]
    assert f"{f['paired_baseline_tie']} of {f['paired_baseline_defined']}" in reason
    # the baselines include those the paper names only in its Sec. 4 text (lexical similarity, both entropies)
    assert {"LexSim", "NE", "LNE"} <= set(list(paper.paper_baselines()))
    best = ours[ours["outcome"] == "win"].sort_values("delong_p_holm").iloc[0]
    assert (f["pb_method"], f["pb_p"]) == (best["method"], best["delong_p_holm"]) and f["pb_method"] in reason
    assert v.loc["shap-more-accurate", "command"]


def test_auroc_random_worst_depends_on_reading(table):
    v = table.set_index("id")
    assert v.loc["auroc-random-worst", "verdict"] == DEPENDS
    assert {name: verdict for name, verdict, _ in v.loc["auroc-random-worst", "readings"]} == {
        "worst = least informative": REPRODUCED,
        "worst = lowest AUROC": CONTRADICTED,
    }


def test_setup_opt_range_states_what_its_verdict_contradicts():
    c = claims.claim("setup-opt-range")
    assert "2.7B to 13B" in c.statement and "2.7B to 13B" in c.quote and "1.3B" in c.reason
    assert c.decide({}) == CONTRADICTED


def _anchors_of(page: str) -> set[str]:
    """The section ids a page's headings get (docutils' make_id of the heading text, maths without its dollars),
    its MyST labels, and its explicit HTML ids."""
    from docutils.nodes import make_id

    text = (ROOT / f"{page}.md").read_text(encoding="utf-8")
    out = {make_id(h.replace("$", "")) for h in re.findall(r"^#{1,6} +(.+?)\s*$", text, flags=re.M)}
    out |= set(re.findall(r"^\(([\w-]+)\)=\s*$", text, flags=re.M))
    return out | set(re.findall(r'id="([\w.-]+)"', text))


def test_evidence_anchors_exist_on_their_pages():
    for c in claims.CLAIMS:
        for target in c.evidence:
            page, _, anchor = target.partition("#")
            if anchor:
                assert anchor in _anchors_of(page), f"{c.id}: no section #{anchor} on {page}"


def test_verdict_labels_are_the_badges():
    css = (ROOT / "_static" / "custom.css").read_text()
    assert set(claim_model.LABELS) == set(claim_model.VERDICT_KINDS)
    assert claim_model.LABELS[CONSISTENT] == "consistent within the paper"
    for verdict in claim_model.VERDICT_KINDS:
        assert re.search(rf"^span\.{claim_model.BADGES[verdict]} \{{", css, flags=re.M), verdict


def test_group_counts_and_summary(table):
    counts = verdicts.group_counts(table)
    assert list(counts.index) == list(claim_model.GROUPS) and list(counts.columns) == list(claim_model.VERDICT_KINDS)
    assert counts.to_numpy().sum() == len(claims.CLAIMS)
    summary = verdict_html.group_summary_html(table)
    assert summary.count("<li>") == len(claim_model.GROUPS) and 'href="#claim-prop-3.6"' in summary
