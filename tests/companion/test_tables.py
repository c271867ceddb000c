"""The book's tables: measured AUROCs aligned to the paper's column labels."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shapley.companion import costs, paired, provenance, tables
from shapley.companion import reported as paper
from shapley.companion.htmltable import record_status_html, show, with_interval
from shapley.pipeline.evaluate import report
from shapley.pipeline.rundir import store
from shapley.pipeline.score.scores import METHODS
from shapley.results.records import PageRecord
from tests import fakes


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        yield fakes.make_two_runs(tmp_path_factory.mktemp("runs"), mp)


def test_measured_rows_show_our_methods_under_the_papers_labels():
    """A committed run's row in the paper's layout: each paper label's cell is our method's AUROC over its interval
    (SU and SE both our SE, NE our LNE), and our methods the paper does not compare are left out."""
    results = Path(__file__).resolve().parents[2] / "results" / "smollm2"
    for table, run in ((3, results / "coqa"), (4, results / "squad")):
        metrics = report.load_metrics(run).set_index("method")
        frame = tables.comparison_frame(table, [run])
        row = frame[[c == "measured" for c in frame.attrs["rows"]]].iloc[0]
        labels = paper.TABLE3_METHODS if table == 3 else paper.TABLE4_METHODS
        shown = []
        for label in labels:
            ours = {"SU": "SE", "NE": "LNE"}.get(label, label)
            if ours in metrics.index and not math.isnan(metrics.loc[ours, "auroc"]):
                m = metrics.loc[ours]
                assert with_interval(m["auroc"], m["auroc_lo"], m["auroc_hi"], decimals=3) == row[label], label
                shown.append(label)
        assert {"SU", "Shap"} <= set(shown) if table == 3 else {"SE", "NE", "Shap"} <= set(shown)
        assert list(frame.columns) == ["Model", *labels] and "LexSim" not in labels


# ---------------------------------------------------------------------------------------------- for readers


def test_comparison_frame_interleaves_reported_and_measured_rows(two_runs):
    a, b = two_runs
    rows = tables.comparison_frame(4, [a, b]).attrs["rows"]
    assert rows.count("reported") == len(paper.TABLE4_ROWS)
    assert rows.count("group") == 4  # one heading row per dataset
    assert rows.count("measured") == 4  # no runs on Table 4's datasets: one "no run" row each
    h = show(tables.comparison_frame(4, [a, b]))
    cells = len(paper.TABLE4_ROWS) * (len(paper.TABLE4_METHODS) + 1)
    assert "no run" in h and "<caption>" in h and h.count('reported" >') == cells
    t3 = tables.comparison_frame(3, [a, b]).attrs["rows"]
    assert "reported" in t3 and "measured" in t3


def _ablation() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "source": ["A", "A", "B", "B", "C", "C"],
            "beta": [0.5, 1.0, 0.5, 1.0, 0.5, 1.0],
            "auroc": [0.7, 0.6, 0.8, 0.81, math.nan, math.nan],
            "n": [10, 10, 20, 20, 5, 5],
            "n_not_psd": [0, 3, 0, 0, 0, 2],
            "frac_not_psd": [0, 0.3, 0, 0, 0, 0.4],
        }
    )


def test_psd_at_beta_counts_over_runs(tmp_path):
    for name, bad in (("r1", 0), ("r2", 4)):
        d = tmp_path / name
        d.mkdir()
        (d / "beta_sweep.csv").write_text(f"beta,auroc,n,n_not_psd\n0.5,0.7,10,{bad}\n1.0,0.6,10,9\n")
    (tmp_path / "r3").mkdir()  # no sweep: not counted
    got = tables.psd_at_beta([tmp_path / n for n in ("r1", "r2", "r3")], 0.5)
    assert got == {"n": 20, "n_not_psd": 4, "runs": 2}


def _config(d, invocations, git0):
    d.mkdir(parents=True, exist_ok=True)
    rec = {"schema": 2, "config": {}, "provenance": {"created": "t0", "command_line": "x", "git": git0}}
    rec["invocations"] = invocations
    (d / "config.json").write_text(json.dumps(rec))
    return d


def test_recorded_invocations_are_the_recorded_commands_and_flags(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "require_record", lambda d: json.loads((Path(d) / "config.json").read_text()))
    clean = {"commit": "a" * 40, "dirty": False}
    d = _config(
        tmp_path / "run",
        [
            {
                "time": "2026-01-01T10:00:00",
                "command_line": "python -m shapley run --limit 25",
                "resumed": False,
                "git": clean,
            },
            {
                "time": "2026-01-02T10:00:00",
                "command_line": "python -m shapley run --limit 100",
                "resumed": True,
                "git": {"commit": "b" * 40, "dirty": True},
            },
        ],
        clean,
    )
    page = provenance.commands_html([d])
    assert "2026-01-01 10:00, created, commit aaaaaaa</span>" in page and "--limit 25</code>" in page
    assert "2026-01-02 10:00, resumed, commit bbbbbbb (dirty)</span>" in page and "--limit 100</code>" in page
    history = store.run_history(json.loads((d / "config.json").read_text()))
    assert provenance.provenance_flags(history) == ["dirty", "multi-commit"]
    assert provenance.provenance_flags(store.RunHistory(("x",), ("a" * 40,), False)) == []
    assert provenance.provenance_flags(store.RunHistory(("x",), (), None)) == ["commit unknown"]


def test_comparisons_are_read_as_the_runs_decided_them_by_delong_holm(tmp_path):
    """The book reads each comparison's Holm-adjusted DeLong p-value and outcome as the run wrote them: in a
    committed run they are Holm's adjustment of DeLong's p within the run and the outcome it decides (never a
    bootstrap's)."""
    from shapley.core.metrics import holm
    from shapley.pipeline.evaluate.comparisons import outcomes

    run = Path(__file__).resolve().parents[2] / "results" / "smollm2" / "squad"
    comp = paired.load_comparisons([run])
    assert len(comp) == len(pd.read_csv(run / "comparisons.csv")) > 1 and comp["delong_p"].notna().any()
    assert set(comp["run"]) == {provenance.relative_path(run)}
    np.testing.assert_allclose(comp["delong_p_holm"], holm(comp["delong_p"].to_numpy(dtype=np.float64)))
    decided = outcomes(comp["delta_auroc"].to_numpy(), comp["delong_p_holm"].to_numpy())
    assert comp["outcome"].tolist() == decided.tolist()
    assert paired.load_comparisons([tmp_path / "missing"]).empty  # a run without the file adds no rows


def test_stale_derived_files_are_flagged(tmp_path, monkeypatch):
    from shapley.pipeline.experiment import pipelines as experiment

    fakes.install_fake_entail(monkeypatch)
    fakes.make_samples_file(tmp_path / "in.jsonl", 8)
    d = tmp_path / "results" / "toy" / "run"
    experiment.score_samples(fakes.samples_config(tmp_path / "in.jsonl"), d)
    assert not [f for f in provenance.provenance_table([d])["flags"].iloc[0] if f.startswith("stale")]
    metrics = d / "metrics.csv"
    metrics.write_text(metrics.read_text() + "\n")  # changed after it was computed
    table = provenance.provenance_table([d])
    assert "stale metrics.csv" in table["flags"].iloc[0]
    assert '<span class="flag">stale metrics.csv</span>' in show(provenance.provenance_frame(table))


def test_cost_estimate_grows_with_model_size_and_names_the_gpu():
    small = costs.seconds_per_question(7.0, 200, costs.A100)
    assert costs.seconds_per_question(14.0, 200, costs.A100) > small
    assert costs.seconds_per_question(7.0, 700, costs.A100) > small
    assert costs.seconds_per_question(7.0, 200, costs.H100) < small
    est = costs.cost_estimate([["L-7B"], ["L-13B", "Q-14B"]], 8000)
    assert list(est["gpu_gb"]) == [24.0, 40.0]
    assert "Estimate, not measured" in show(costs.cost_estimate_frame([["L-7B"]], 8000))


def test_workload_follows_the_generators_declared_defaults():
    """The cost model's sample count and length limits are the generator's defaults, not typed again; its decode
    steps are the answers' limit plus the A4C reply's, its prompt tokens grow with every answer p(True) quotes."""
    from shapley.pipeline.generate.config import GenerationConfig

    w, cfg = costs.Workload(), GenerationConfig()
    assert (w.n_samples, w.max_new_tokens, w.a4c_max_new_tokens) == (
        cfg.n_samples,
        cfg.max_new_tokens,
        cfg.a4c_max_new_tokens,
    )
    assert w.decode_steps == cfg.max_new_tokens + cfg.a4c_max_new_tokens
    more = costs.Workload(n_samples=w.n_samples + 1)
    assert more.prefill_tokens(700) - w.prefill_tokens(700) == w.max_new_tokens
    assert w.prefill_tokens(700) - w.prefill_tokens(200) == 500  # the question's prompt is read once
    longer = costs.Workload(a4c_max_new_tokens=w.a4c_max_new_tokens + 5)
    assert costs.seconds_per_question(7.0, 200, costs.A100, longer) > costs.seconds_per_question(7.0, 200, costs.A100)


def test_outcome_counts():
    comp = pd.DataFrame({"outcome": ["win", "tie", "loss", "undefined"], "run": ["a"] * 4})
    assert paired.outcome_counts(comp) == {"win": 1, "tie": 1, "loss": 1, "undefined": 1}


def test_record_status_is_a_sentence_without_markdown():
    """A page record's status reads as prose: file and command as code, fresh or stale with why (issue 32: the
    results page showed a raw status line with its backticks)."""
    toy = PageRecord("theory/toy.json", "shapley.results.records", lambda s, r: {}, lambda r: "", {"x": 1})
    record = {"freshness": toy.freshness(Path("results")), "seconds": 7.2, "command": toy.command}
    fresh = record_status_html(toy, record, "results")
    assert "<code>results/theory/toy.json</code>" in fresh and "<code>python -m shapley.results.records</code>" in fresh
    assert "computed these numbers in 7 s" in fresh and "it is fresh" in fresh and "`" not in fresh
    stale = record_status_html(toy, {**record, "freshness": {**record["freshness"], "settings": {"x": 2}}}, "results")
    assert "it is stale" in stale and "settings differ" in stale and "`" not in stale


def test_the_glossary_has_one_entry_per_method_and_paper_label():
    from bs4 import BeautifulSoup

    from shapley.companion.reported import METHODS as PAPER_METHODS

    soup = BeautifulSoup(tables.method_glossary_html(), "html.parser")
    terms = {dt["id"]: dt.get_text(strip=True) for dt in soup.select("dl.method-glossary dt")}
    assert sorted(terms.values()) == sorted(set(METHODS) | set(PAPER_METHODS))
    assert all(i == tables.glossary_id(t) for i, t in terms.items())
    note = soup.find("dt", id="glossary-ne").find_next_sibling("dd").get_text()
    assert "in the paper's tables, NE is" in note and "measured as our LNE" in note  # a label that is also ours


def test_row_finding_states_only_what_the_paired_tests_support():
    results = Path(__file__).resolve().parents[2] / "results" / "smollm2"
    for name in ("coqa", "squad", "bioasq", "nq_open"):
        run = results / name
        labels = paper.TABLE3_METHODS if name == "coqa" else paper.TABLE4_METHODS
        text = tables.row_finding(run, labels)
        m = report.load_metrics(run).set_index("method")
        assert text.startswith(f"Shap {m.loc['Shap', 'auroc']:.3f}")
        comp = paired.load_comparisons([run])
        ours = {tables.PAPER_ALIASES.get(x, x) for x in labels} - {"Shap"}
        significant = comp[comp["method"].isin(ours) & comp["outcome"].isin(["win", "loss"])]
        assert ("significantly" in text) == (len(significant) > 0)
        if len(significant) == 0:
            assert "no difference with Shap is significant" in text
        correct, judged = tables.class_sizes(run)
        few = min(correct, judged - correct) < tables.FEW_IN_A_CLASS
        assert ("read with caution" in text) == (len(significant) > 0 and few)
    assert tables.row_finding(results / "svamp", paper.TABLE4_METHODS).startswith("AUROC undefined: 0 of")


def test_table4_can_give_the_papers_range_over_models_in_one_row():
    run = Path(__file__).resolve().parents[2] / "results" / "smollm2" / "squad"
    full, short = tables.comparison_frame(4, [run]), tables.comparison_frame(4, [run], reported_rows="range")
    assert full.attrs["rows"].count("reported") == len(paper.TABLE4_ROWS)
    assert short.attrs["rows"].count("reported") == len({d for d, _ in paper.TABLE4_ROWS})
    squad = [v[-1] for (d, _), v in paper.TABLE4_ROWS.items() if d == "squad"]  # Shap, the last column
    assert f"{min(squad):.3f}–{max(squad):.3f}" in short["Shap"].tolist()


def test_beta_spans_use_only_the_grid_points_where_every_matrix_is_psd():
    spans = tables.beta_spans(_ablation(), [0.5, 1.0])
    assert spans["A"] == 0.0  # beta = 1 has 3 matrices not PSD: only 0.5 counts
    assert spans["B"] == pytest.approx(0.01) and math.isnan(spans["C"])
