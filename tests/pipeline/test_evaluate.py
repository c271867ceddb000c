"""Metrics tables of a run and reports across runs."""

from __future__ import annotations

import gzip
import json
import math
import shutil
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shapley.core import metrics as M
from shapley.pipeline.evaluate import metrics as evaluate
from shapley.pipeline.evaluate import report
from shapley.pipeline.rundir import derived, jsonl
from shapley.pipeline.rundir.csvfiles import csv_text, read_csv_ids
from shapley.results import records
from tests import fakes


def _frame(rng, m=60):
    correct = rng.random(m) < 0.5
    good = np.where(correct, 0.0, 1.0) + rng.normal(0, 0.7, m)
    return pd.DataFrame(
        {
            "id": [f"q{i}" for i in range(m)],
            "correct": correct,
            "Good": good,
            "Noise": rng.normal(size=m),
            "Never": np.nan,
        }
    )


def test_compute_metrics_columns_and_values():
    rng = np.random.default_rng(0)
    df = _frame(rng)
    df.loc[:9, "Noise"] = np.nan
    skipped = {"Noise": Counter({"missing input: x": 10}), "Never": Counter({"missing input: y": 60})}
    m, sk = evaluate.compute_metrics(
        df,
        methods=["Good", "Noise", "Never"],
        skipped=skipped,
        labels={"model": "m", "entailment": "e", "dataset": "d"},
        n_boot=200,
        seed=1,
        notes={},
    )
    assert list(m.columns) == [*report.METRICS_COLUMNS, *report.EXTRA_COLUMNS]
    assert list(m["method"]) == ["Good", "Noise"]  # a method skipped everywhere is not a row of NaNs
    g = m.set_index("method").loc["Good"]  # AUROC, AUARC, PRR, n, accuracy: test_metrics_independent.py
    u, c = df["Good"].to_numpy(), df["correct"].to_numpy()
    ci = M.bootstrap_interval(M.auroc, u, c, n_boot=200, seed=1)
    assert (g["auroc_lo"], g["auroc_hi"], g["auroc_lo_mcse"], g["n_boot"]) == (ci.lo, ci.hi, ci.lo_mcse, ci.n_boot)
    n = m.set_index("method").loc["Noise"]
    assert n["n"] == 50 and "skipped on 10 of 60" in n["note"]
    assert n["accuracy"] == pytest.approx(c[10:].mean())
    assert list(sk.columns) == list(evaluate.SKIPPED_COLUMNS)
    assert dict(zip(sk["method"], sk["n_skipped"], strict=True)) == {"Noise": 10, "Never": 60}


def test_infinite_scores_keep_their_rank_and_one_class_is_noted():
    u = np.array([-np.inf, 0.1, 0.5, np.inf, 2.0])
    c = np.array([True, True, False, False, True])
    r = evaluate.method_metrics(u, c, n_boot=50)
    assert r["auroc"] == pytest.approx(M.auroc(np.array([-9.0, 0.1, 0.5, 9.0, 2.0]), c))
    assert "2 infinite" in r["note"]
    r = evaluate.method_metrics([0.1, 0.2], [True, True], n_boot=10)
    assert math.isnan(r["auroc"]) and "one correctness class" in r["note"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        yield fakes.make_two_runs(tmp_path_factory.mktemp("runs"), mp)


def test_run_outputs_and_loaders(two_runs):
    a, b = two_runs
    m = report.load_metrics(a)
    assert list(m.columns[:11]) == list(report.METRICS_COLUMNS)
    by = m.set_index("method")
    assert {"Shap", "DSE", "LexSim", "P(T)", "ER"} <= set(by.index)
    assert not {"SE", "NE", "LNE", "MaxL", "A4C"} & set(by.index)  # no log-probs / A4C text in the input
    assert by.loc["Shap", "n"] == 40 and by.loc["ER", "n"] == 20 and "fitted on 20" in by.loc["ER", "note"]
    assert (by["dataset"] == "toy").all() and (by["model"] == "toy-llm").all() and (by["entailment"] == "fake:").all()
    assert by["entailment_is_stand_in"].all()
    sk = evaluate.load_skipped(a).set_index("method")
    assert sk.loc["SE", "n_skipped"] == 40 and "sample_logprobs" in sk.loc["SE", "reason"]
    s = evaluate.load_scores(a)
    assert len(s) == 40 and s["id"].tolist() == sorted(s["id"]) and s["ER"].isna().sum() == 20
    assert {"shap_psd_repaired", "shap_min_eig", "n_clusters"} <= set(s.columns)
    t = report.runs_table([a, b])
    assert set(t["run_dir"]) == {str(a), str(b)} and set(t["beta"]) == {0.5, 0.3}
    # metrics.csv is reproducible from scores.jsonl alone
    before = (a / "metrics.csv").read_bytes()
    (a / "metrics.csv").unlink()
    evaluate.write_run_outputs(a, embeddings={r["id"]: r["embedding"] for r in _rows(a)})
    assert (a / "metrics.csv").read_bytes() == before


def _rows(run_dir: Path) -> list[dict]:
    cfg = json.loads((run_dir / "config.json").read_text())
    return [json.loads(line) for line in Path(cfg["config"]["data"]["path"]).read_text().splitlines()]


def test_beta_table_from_stored_entailment(two_runs):
    a, _ = two_runs
    summary, per_q = evaluate.beta_table(a, [0.1, 0.5, 1.0])
    assert list(summary["beta"]) == [0.1, 0.5, 1.0]
    assert (summary["n"] == 40).all() and len(per_q) == 120
    s5 = summary.set_index("beta").loc[0.5]
    assert s5["auroc"] == pytest.approx(report.load_metrics(a).set_index("method").loc["Shap", "auroc"])
    assert summary.set_index("beta").loc[0.1, "n_not_psd"] == 0  # beta <= 1/(n-1) = 0.2 is always PSD
    assert (summary["n_repaired"] <= summary["n_not_psd"]).all()


def _copy_run(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_derived_files_record_their_inputs_and_go_stale(two_runs, tmp_path):
    """derived.json: each derived file fresh after writing; a changed score record makes them stale, report
    refuses, and the next metrics stage rewrites them and removes the beta sweep computed from the old records."""
    a = _copy_run(two_runs[0], tmp_path / "a")
    evaluate.write_run_outputs(a, embeddings={r["id"]: r["embedding"] for r in _rows(a)})
    summary, paths = evaluate.write_beta_sweep(a, [0.3, 0.5], n_boot=100)
    assert paths == [a / "beta_sweep.csv", a / "beta_sweep_per_question.csv"]
    status = derived.derived_status(a)
    assert set(status) >= {"metrics.csv", "comparisons.csv", "beta_sweep.csv"}
    assert set(status.values()) == {"fresh"} and derived.stale_outputs(a) == []
    (a / "selection.csv").write_text("strategy\n")  # a file older versions derived, as committed runs hold
    assert derived.derived_status(a) == status
    # change one question's correctness in the stage file (a resume with other inputs, a hand edit)
    lines = (a / "scores.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["correct"] = not rec["correct"]
    rec.pop("_sha256")
    lines[0] = jsonl.encode_record(rec).decode().rstrip("\n")
    (a / "scores.jsonl").write_text("\n".join(lines) + "\n")
    stale = derived.stale_outputs(a)
    assert {"metrics.csv", "comparisons.csv", "beta_sweep.csv"} <= set(stale)
    with pytest.raises(ValueError, match=r"metrics\.csv"):
        report.report([a])
    with pytest.warns(UserWarning, match="beta_sweep.csv"):
        evaluate.write_run_outputs(a, embeddings={r["id"]: r["embedding"] for r in _rows(a)})
    assert not (a / "beta_sweep.csv").exists() and not (a / "beta_sweep_per_question.csv").exists()
    assert (
        derived.stale_outputs(a) == [] and "beta_sweep.csv" not in json.loads((a / "derived.json").read_text())["files"]
    )
    report.report([a])
    # a derived file edited by hand is stale too
    (a / "metrics.csv").write_text((a / "metrics.csv").read_text().replace("toy", "tay"))
    assert derived.stale_outputs(a) == ["metrics.csv"]


def test_beta_sweep_holds_the_run_lock_and_records_what_it_read(two_runs, tmp_path, monkeypatch):
    """Issue 38, 1: beta-sweep refuses a run in use (a resume extending it), writing nothing; and derived.json
    records the digest of the records the sweep read, so a change of the stage files between its read and its
    record leaves the sweep stale, not fresh."""
    import os

    from shapley.pipeline.rundir.store import lock_run_dir

    a = _copy_run(two_runs[0], tmp_path / "a")
    evaluate.write_run_outputs(a, embeddings={r["id"]: r["embedding"] for r in _rows(a)})
    before = (a / "derived.json").read_bytes()
    fd = lock_run_dir(a)  # another process (a resume) holds the run
    try:
        with pytest.raises(RuntimeError, match=rf"{a}.*in use"):
            evaluate.write_beta_sweep(a, [0.3, 0.5])
        with pytest.raises(RuntimeError, match="in use"):
            evaluate.write_run_outputs(a)
    finally:
        os.close(fd)
    assert not (a / "beta_sweep.csv").exists() and (a / "derived.json").read_bytes() == before

    real = evaluate.beta_table

    def read_then_changed(*args, **kw):  # the stage file changes after the sweep read it (a writer without a lock)
        out = real(*args, **kw)
        lines = (a / "scores.jsonl").read_text().splitlines()
        rec = json.loads(lines[0])
        rec["correct"] = not rec["correct"]
        rec.pop("_sha256")
        lines[0] = jsonl.encode_record(rec).decode().rstrip("\n")
        (a / "scores.jsonl").write_text("\n".join(lines) + "\n")
        return out

    monkeypatch.setattr(evaluate, "beta_table", read_then_changed)
    evaluate.write_beta_sweep(a, [0.3, 0.5])
    assert derived.derived_status(a)["beta_sweep.csv"].startswith("stale")


def _committed_runs() -> list[Path]:
    committed = Path(__file__).resolve().parents[2] / "results"
    return sorted(c.parent for c in committed.glob("*/*/config.json"))


def _without_stage_files(run: Path, dst: Path) -> Path:
    """A copy of ``run`` as a clean clone has it: the JSONL stage files are git-ignored for most committed runs."""
    shutil.copytree(run, dst, ignore=shutil.ignore_patterns(*jsonl.STAGE_FILES.values()))
    return dst


def test_committed_runs_are_fresh_from_git_alone_and_a_file_without_a_record_is_stale(tmp_path):
    runs = _committed_runs()
    assert len(runs) >= 10, runs
    for run in runs:  # in place (stage files where this checkout has them) and as a clean clone has them
        for d in (run, _without_stage_files(run, tmp_path / "clone" / run.parent.name / run.name)):
            status = derived.derived_status(d)
            assert status and set(status.values()) == {"fresh"}, (d, status)
    bare = tmp_path / "bare"
    shutil.copytree(runs[0], bare)
    (bare / "derived.json").unlink()  # every derived file must have a record
    assert derived.derived_status(bare)["metrics.csv"] == "stale: derived.json holds no record of metrics.csv"
    with pytest.raises(ValueError, match="no record of metrics.csv"):
        report.report([bare])


def test_without_stage_files_the_compact_copy_is_checked(two_runs, tmp_path):
    """A run whose JSONL stage files are absent is checked against stages.jsonl.gz: fresh while it matches, stale
    (naming the copy) once a number in it changes, unverified only when the copy is absent too."""
    a = _copy_run(two_runs[0], tmp_path / "a")
    ids = list(jsonl.JsonlStore(a / "scores.jsonl").load())
    evaluate.write_run_outputs(a, ids, embeddings={r["id"]: r["embedding"] for r in _rows(a)})
    evaluate.write_beta_sweep(a, [0.3, 0.5], n_boot=100)
    jsonl.write_compact(a, ids)
    b = _without_stage_files(a, tmp_path / "b")
    assert set(derived.derived_status(b).values()) == {"fresh"}
    assert all("answer" not in r["scores"] for r in _compact_lines(b))  # the copy holds no answer text
    # one correctness label changed in the copy, its line's checksum made to match: every derived file is stale
    lines = _compact_lines(b)
    lines[0]["scores"]["correct"] = not lines[0]["scores"]["correct"]
    _write_compact_lines(b, lines)
    status = derived.derived_status(b)
    assert all(
        s.startswith("stale: inputs changed") and s.endswith("stages.jsonl.gz or the run's settings")
        for s in status.values()
    ), status
    with pytest.raises(ValueError, match=r"metrics\.csv"):
        report.report([b])
    (b / jsonl.COMPACT_FILE).unlink()
    assert set(derived.derived_status(b).values()) == {derived.NO_STAGE_FILES}


def _compact_lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in gzip.decompress((run / jsonl.COMPACT_FILE).read_bytes()).splitlines()]


def _write_compact_lines(run: Path, lines: list[dict]) -> None:
    out = b""
    for rec in lines:
        rec.pop("_sha256", None)
        out += jsonl.encode_record(rec)
    (run / jsonl.COMPACT_FILE).write_bytes(gzip.compress(out, mtime=0))


def _recorded_as_written(*runs: Path) -> None:
    """Each run's ``metrics.csv``, edited here, recorded in its ``derived.json`` as written (else it is stale)."""
    for run in runs:
        rec = json.loads((run / "derived.json").read_text())
        rec["files"]["metrics.csv"]["sha256"] = records.sha256_file(run / "metrics.csv")
        (run / "derived.json").write_text(json.dumps(rec))


def test_report_escapes_labels_and_shows_every_run(two_runs, tmp_path):
    a = _copy_run(two_runs[0], tmp_path / "a")
    m = pd.read_csv(a / "metrics.csv")
    m["dataset"] = "x|y\n| forged | row |<script>&"
    one = m.head(1).assign(
        auroc=math.nan, auroc_lo=math.nan, auroc_hi=math.nan, method="Shap", note="one correctness class only"
    )
    b = _copy_run(two_runs[1], tmp_path / "b")
    (a / "metrics.csv").write_text(m.to_csv(index=False))
    (b / "metrics.csv").write_text(one.to_csv(index=False))
    _recorded_as_written(a, b)
    md = report.report([a, b])
    assert "<script>" not in md and "&lt;script&gt;&amp;" in md and "x\\|y \\| forged \\| row \\|" in md
    assert all(line.startswith("|") for line in md.split("## All metrics")[1].splitlines() if "forged" in line)
    wide = md.split("## All metrics")[0]
    assert "| b |" in wide and "undefined (one correctness class)" in wide  # the one-class run is a row
    assert "[, ]" not in md
    mm = pd.read_csv(a / "metrics.csv").assign(auroc_lo=math.nan)
    (a / "metrics.csv").write_text(mm.to_csv(index=False))
    _recorded_as_written(a)
    assert "[—]" in report.report([a])


@pytest.mark.parametrize("name", ["table.csv", "out/table.md", "table"])
def test_report_writes_markdown_and_csv(two_runs, tmp_path, name):
    md_path, csv_path = report.report_files(tmp_path / name)
    assert md_path != csv_path
    md = report.report(list(two_runs), tmp_path / name)
    assert md.startswith("# AUROC across runs") and "| dataset | model | entailment | run |" in md and "Shap" in md
    assert md_path.read_text() == md and len(pd.read_csv(csv_path)) == len(report.runs_table(list(two_runs)))
    with pytest.raises(FileNotFoundError):
        report.report([tmp_path])


def test_beta_sweep_never_draws_an_interval_from_fewer_than_min_boot(two_runs):
    """A small ``n_boot`` is the start of the resampling, raised to MIN_BOOT as in the run (no zero-width CI)."""
    summary, _ = evaluate.beta_table(two_runs[0], [0.5], n_boot=2)
    row = summary.iloc[0]
    assert row["n_boot"] >= M.MIN_BOOT and row["auroc_lo"] < row["auroc_hi"]


def test_report_csv_escapes_every_text_column(two_runs, tmp_path):
    """issue 38 (2): report.csv kept a label "=HYPERLINK(...)" a live formula, a lone CR split its rows, and
    run_dir was raw; now every text column follows the run outputs' CSV text rule and reads back exactly."""
    import csv as _csv
    import io

    a = _copy_run(two_runs[0], tmp_path / "=HYPERLINK(x)")
    m = pd.read_csv(a / "metrics.csv")
    m["dataset"] = '=HYPERLINK("http://evil","x")'
    m["model"] = "a\rb"
    m["method"] = "@cmd"
    (a / "metrics.csv").write_text(csv_text(m), newline="")
    _recorded_as_written(a)
    out = tmp_path / "out" / "table.md"
    report.report([a], out)
    with open(out.with_suffix(".csv"), newline="") as fh:
        text = fh.read()
    rows = list(_csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == len(m) + 1  # the lone CR splits no row
    cells = [c for r in rows[1:] for c in r]
    assert not any(c.startswith(("=", "@", "+")) for c in cells), "a text cell a spreadsheet reads as a formula"
    back = read_csv_ids(out.with_suffix(".csv"))
    assert (
        set(back["dataset"]) == {m["dataset"][0]} and set(back["model"]) == {"a\rb"} and set(back["method"]) == {"@cmd"}
    )
    assert set(back["run_dir"]) == {str(a)}


def test_a_text_column_with_every_cell_empty_stays_text(tmp_path):
    """read_csv_ids keeps a text column's dtype: metrics.csv with every note empty is read without a warning
    (pandas refuses to fill a float64 column with a string)."""
    f = tmp_path / "metrics.csv"
    frame = pd.DataFrame({"method": ["Shap", "SE"], "auroc": [0.5, 0.6], "note": ["", ""]})
    f.write_text(csv_text(frame.reindex(columns=[*report.METRICS_COLUMNS, *report.EXTRA_COLUMNS])))
    with warnings.catch_warnings(action="error"):
        m = report.load_metrics(tmp_path)
    assert m["note"].tolist() == ["", ""] and pd.api.types.is_string_dtype(m["note"])
