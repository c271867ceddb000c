"""Issue 26, the third outside attack: each listed case, then the classes they belong to, walked whole."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import shutil
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shapley import cli
from shapley.cli import args as cli_args
from shapley.core import metrics
from shapley.pipeline.data.samples import read_samples_file
from shapley.pipeline.evaluate import metrics as evaluate
from shapley.pipeline.evaluate import report
from shapley.pipeline.rundir import derived, jsonl, store
from shapley.pipeline.rundir.csvfiles import read_csv_ids
from tests import fakes


@pytest.fixture()
def fake_entail(monkeypatch):
    return fakes.install_fake_entail(monkeypatch)


def _ss(inp: Path, out: Path, *extra: str) -> int:
    return cli.main(
        ["score-samples", str(inp), "--entailment", "fake:", "--output", str(out), "--no-progress", "--n-boot", "20"]
        + list(extra)
    )


@pytest.fixture()
def run8(tmp_path, fake_entail, capsys):
    """A score-samples run over 8 questions, resumed with --limit 4 (its outputs describe 4)."""
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 8)
    out = tmp_path / "run"
    assert _ss(inp, out) == 0
    assert _ss(inp, out, "--limit", "4") == 0
    capsys.readouterr()
    return out


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith(("warning:", "note:"))]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


# --------------------------------------------------------------------------------------------------
# Case 1: beta-sweep covers exactly the questions the run's outputs describe


def test_beta_sweep_covers_the_questions_of_the_outputs_also_from_the_compact_copy(run8, capsys):
    assert len(report.load_metrics(run8)) and (report.load_metrics(run8)["n"] <= 4).all()
    assert cli.main(["beta-sweep", str(run8)]) == 0
    full = pd.read_csv(run8 / "beta_sweep.csv")
    assert (full["n"] == 4).all()
    assert derived.derived_status(run8)["beta_sweep.csv"] == derived.FRESH
    ids = read_csv_ids(run8 / "scores.csv")["id"].tolist()
    jsonl.write_compact(run8, ids)
    for name in jsonl.STAGE_FILES.values():
        (run8 / name).unlink(missing_ok=True)
    assert derived.derived_status(run8)["beta_sweep.csv"] == derived.FRESH
    assert cli.main(["beta-sweep", str(run8)]) == 0
    compact = pd.read_csv(run8 / "beta_sweep.csv")
    pd.testing.assert_frame_equal(full, compact)


# --------------------------------------------------------------------------------------------------
# Case 2 and the class: every size option has a cap that the parser enforces


def _int_options() -> list[tuple[str, str]]:
    """Every option that reads a whole number: the integer run settings (their readers carry the field's name)
    and beta-sweep's --n-boot."""
    import argparse

    from shapley.pipeline.config import GROUPS, RunConfig, field_kinds

    int_fields = {n for c in (RunConfig, *GROUPS.values()) for n, (kind, _) in field_kinds(c).items() if kind is int}
    found = []
    for action in cli.build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for cmd, sub in action.choices.items():
                for a in sub._actions:
                    name = getattr(a.type, "__name__", "")
                    if a.option_strings and (name in int_fields or a.type is cli_args.read_sweep_boot):
                        found.append((cmd, a.option_strings[0]))
    return found


def test_size_options_were_found():
    names = {flag for _, flag in _int_options()}
    assert {"--n-boot", "--n-samples", "--limit", "--max-new-tokens", "--batch-size", "--seed"} <= names


@pytest.mark.parametrize(("cmd", "flag"), _int_options())
def test_every_size_option_has_a_cap_at_the_parser(cmd, flag, capsys):
    base = {
        "run": ["run", "--dataset", "triviaqa", "--output", "o"],
        "score-samples": ["score-samples", "in.jsonl", "--output", "o"],
        "beta-sweep": ["beta-sweep", "d"],
    }[cmd]
    for value in ("65537" if flag == "--n-boot" else "1" + "0" * 30, "1" + "0" * 400):
        with pytest.raises(SystemExit) as e:
            cli.build_parser().parse_args([*base, flag, value])
        assert e.value.code == 2
        assert flag in capsys.readouterr().err


def test_n_boot_at_the_internal_maximum_passes_the_parser():
    a = cli.build_parser().parse_args(["beta-sweep", "d", "--n-boot", str(metrics.MAX_BOOT)])
    assert a.n_boot == metrics.MAX_BOOT
    b = cli.build_parser().parse_args(["score-samples", "in.jsonl", "--output", "o", "--n-boot", str(metrics.MAX_BOOT)])
    assert getattr(b, "scoring.n_boot") == metrics.MAX_BOOT


# --------------------------------------------------------------------------------------------------
# Case 3 and the class: nothing we write replaces what is not ours


def _run_files(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}


def test_no_output_overwrites_a_file_of_a_run_directory_being_read(run8, capsys):
    before = _run_files(run8)
    names = sorted(n for n in before if not n.startswith("."))
    assert {"config.json", "scores.jsonl", "metrics.csv", "derived.json"} <= set(names)
    for name in [*names, "metrics.md", "scores.md", "x_per_question.csv", "new.csv"]:
        argv = ["report", str(run8), "--output", str(run8 / name)]
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code == 2, (argv, err)
        line = _one_error_line(err)
        assert "--output" in line and str(run8) in line
        assert _run_files(run8) == before, argv


def test_merge_output_is_not_one_of_its_shards(tmp_path, capsys):
    a = tmp_path / "a"
    a.mkdir()
    assert cli.main(["merge", str(a), str(tmp_path / "b"), "--output", str(a)]) == 2
    _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("kind", ["fifo", "device", "symlink", "dangling"])
def test_an_output_that_is_a_fifo_device_or_link_is_refused_or_written_through(run8, tmp_path, kind, capsys):
    target = tmp_path / "out.md"
    real = tmp_path / "real.md"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":  # a private copy of /dev/null: a bug here must not replace the system's
        try:
            os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("cannot make a device node here")
    elif kind == "symlink":
        real.write_text("old")
        target.symlink_to(real)
    else:
        target.symlink_to(tmp_path / "missing" / "x.md")
    code = cli.main(["report", str(run8), "--output", str(target)])
    err = capsys.readouterr().err
    if kind in ("fifo", "device", "dangling"):
        assert code == 2
        assert str(target) in _one_error_line(err)
        if kind == "fifo":
            assert target.is_fifo()
        if kind == "device":
            assert target.is_char_device()
    else:  # a link is written through: the link stays, its target gets the report
        assert code == 0, err
        assert target.is_symlink() and real.read_text().startswith("# AUROC across runs")


@pytest.mark.parametrize("argv", ["report", "beta-sweep", "score-samples"])
def test_a_full_disk_is_reported_with_exit_2_naming_the_file(run8, tmp_path, argv, monkeypatch, capsys):
    real_write = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith("."):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(jsonl.os, "write", full)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 4)
    cmd = {
        "report": ["report", str(run8), "--output", str(tmp_path / "r.md")],
        "beta-sweep": ["beta-sweep", str(run8)],
        "score-samples": ["score-samples", str(inp), "--entailment", "fake:", "--output", str(tmp_path / "new")],
    }[argv]
    code = cli.main([*cmd, "--no-progress"] if argv == "score-samples" else cmd)
    line = _one_error_line(capsys.readouterr().err)
    assert code == 2 and "No space left" in line and str(tmp_path) in line


# --------------------------------------------------------------------------------------------------
# Case 4: crashes


@pytest.mark.parametrize("entry", [1, "x", [1, 2], None])
def test_a_derived_json_entry_of_the_wrong_type_is_a_clear_error(run8, entry, capsys):
    f = run8 / derived.DERIVED_FILE
    rec = json.loads(f.read_text())
    rec["files"]["metrics.csv"] = entry
    f.write_text(json.dumps(rec))
    code = cli.main(["report", str(run8)])
    line = _one_error_line(capsys.readouterr().err)
    assert code == 2 and "derived.json" in line and "metrics.csv" in line


def _deep(k: int = 100_000) -> str:
    return "[" * k + "]" * k


def test_a_deeply_nested_json_line_is_refused_naming_file_and_line(tmp_path, fake_entail, capsys):
    inp = tmp_path / "in.jsonl"
    rows = fakes.make_samples_file(inp, 2)
    inp.write_text(json.dumps(rows[0]) + "\n" + '{"id": "q", "samples": ' + _deep() + "}\n")
    with pytest.raises(ValueError, match=r"in\.jsonl, line 2: .*nested"):
        read_samples_file(inp)
    assert _ss(inp, tmp_path / "o") == 2
    assert "line 2" in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("name", ["config.json", "derived.json"])
def test_a_deeply_nested_run_file_is_refused_naming_it(run8, name, capsys):
    (run8 / name).write_text(_deep())
    assert cli.main(["report", str(run8)]) == 2
    assert name in _one_error_line(capsys.readouterr().err)


def test_a_deeply_nested_stage_line_is_refused_or_dropped_not_a_recursion_error(run8, capsys):
    n = len(jsonl.JsonlStore(run8 / "scores.jsonl").load(repair=False))
    with open(run8 / "scores.jsonl", "a") as f:
        f.write(_deep() + "\n")
    with pytest.warns(UserWarning, match="not valid JSON"):
        assert len(jsonl.JsonlStore(run8 / "scores.jsonl").load(repair=False)) == n  # dropped as corrupt


@pytest.mark.parametrize("device", ["cuda", "cuda:99", "bogus", "cpu:x"])
def test_an_unusable_device_exits_2_naming_it(tmp_path, fake_entail, device, capsys):
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 3)
    import torch

    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("a GPU is here")
    assert _ss(inp, tmp_path / "o", "--device", device) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "--device" in line and device in line
    assert not (tmp_path / "o").exists()


def test_a_busy_run_directory_exits_2_with_one_line(run8, tmp_path, capsys):
    fd = store.lock_run_dir(run8)
    try:
        assert _ss(tmp_path / "in.jsonl", run8) == 2
    finally:
        os.close(fd)
    assert "in use" in _one_error_line(capsys.readouterr().err)


def test_a_cache_folder_that_is_a_file_exits_2_naming_the_variable(tmp_path, fake_entail, monkeypatch, capsys):
    from shapley.pipeline.rundir import settings

    f = tmp_path / "cachefile"
    f.write_text("x")
    monkeypatch.setenv("SHAPLEY_CACHE_DIR", str(f))
    with pytest.raises(ValueError, match="SHAPLEY_CACHE_DIR"):
        settings.cache_dir()
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 3)
    assert _ss(inp, tmp_path / "o") == 2
    assert "SHAPLEY_CACHE_DIR" in _one_error_line(capsys.readouterr().err)


def test_an_absurd_bootstrap_request_is_refused_before_allocating():
    u, c = np.arange(300.0), np.arange(300) % 2
    with pytest.raises(ValueError, match="max_boot"):
        metrics.bootstrap_interval(metrics.auroc, u, c, max_boot=10**12, mcse=1e-9)
    with pytest.raises(ValueError, match="max_boot"):
        metrics.paired_interval(metrics.auroc, u, u[::-1].copy(), c, max_boot=10**12, mcse=1e-9)


# --------------------------------------------------------------------------------------------------
# Case 5: messages


def test_every_setting_refusal_names_a_flag_that_exists():
    from shapley.pipeline.config import flag_of

    parser = cli.build_parser()
    options = {s for sub in _subparsers(parser) for a in sub._actions for s in a.option_strings}
    keys = [*_setting_keys(fakes.run_config()), *_setting_keys(fakes.samples_config("x.jsonl"))]
    assert "generation.prefix_cache" in keys and "scoring.n_boot" in keys
    for key in keys:
        for flag in re.findall(r"--[a-z0-9-]+", flag_of(key)):
            assert flag in options, f"{key}: the message names {flag}, which no command has"


def _subparsers(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.values()


def _setting_keys(config):
    import dataclasses

    for part in ("data", "generation", "entailment", "scoring"):
        value = getattr(config, part)
        if value is not None:
            for f in dataclasses.fields(value):
                yield f"{part}.{f.name}"


def test_resume_refuses_an_explicit_no_prefix_cache_like_rows_per_batch(tmp_path, monkeypatch):
    from shapley.pipeline.experiment import pipelines as experiment

    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_generator(monkeypatch)
    fakes.install_fake_dataset(monkeypatch, n=3)
    config = fakes.run_config(limit=2)
    out = tmp_path / "run"
    experiment.run_experiment(config, out)
    off = config.replace(generation=dataclasses.replace(config.generation, prefix_cache=False))
    with pytest.raises(ValueError, match="--no-prefix-cache"):
        experiment.run_experiment(off, out)


def test_report_labels_runs_of_the_same_name_distinctly(run8, tmp_path, capsys):
    other = tmp_path / "b" / "run"
    shutil.copytree(run8, other)
    assert cli.main(["report", str(run8), str(other)]) == 0
    out = capsys.readouterr().out
    wide = out.split("## All metrics")[0]
    rows = [r for r in wide.splitlines() if r.startswith("| ") and "dataset" not in r]
    labels = [r.split("|")[4].strip() for r in rows]
    assert len(set(labels)) == 2, labels


def test_embeddings_of_different_lengths_are_refused_at_validation(tmp_path):
    inp = tmp_path / "in.jsonl"
    rows = fakes.make_samples_file(inp, 3)
    for k, r in enumerate(rows):
        r["embedding"] = [0.1] * (3 if k < 2 else 4)
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"line 3: .*'embedding'.*4.*3"):
        read_samples_file(inp)


def test_a_fifo_input_says_what_it_is(tmp_path):
    f = tmp_path / "in.jsonl"
    os.mkfifo(f)
    with pytest.raises(ValueError, match="not a regular file"):
        read_samples_file(f)


# --------------------------------------------------------------------------------------------------
# Labels: booleans or 0/1 at every entry point, never cast


@pytest.mark.parametrize("bad", [["yes", "no", "yes", "no"], [0.5, 1, 0, 1], [2, 0, 1, 0]])
def test_method_metrics_refuses_labels_that_are_not_boolean_or_01(bad):
    with pytest.raises(ValueError, match="booleans or 0/1"):
        evaluate.method_metrics([0.1, 0.2, 0.3, 0.4], bad, n_boot=100)


def test_stored_labels_that_are_not_boolean_are_refused(run8, capsys):
    with pytest.raises(ValueError, match="correct"):
        evaluate.scores_frame([{"id": "a", "correct": "no", "scores": {}}], [])


# --------------------------------------------------------------------------------------------------
# The class: every file we write round-trips through our own readers, for hostile strings

HOSTILE = [
    "NA",
    "None",
    "null",
    "nan",
    "1e3",
    "007",
    "=1+1",
    "+x",
    "-1",
    "@a",
    "'quoted",
    "a\tb",
    "a\rb",
    "a\r\nb",
    "a\x00b",
    'q"uote',
    "a,b;c",
    "#hash",
    "",
]


def test_ids_and_labels_round_trip_through_every_reader(tmp_path, fake_entail, capsys):
    inp = tmp_path / "in.jsonl"
    rows = fakes.make_samples_file(inp, len(HOSTILE))
    for r, qid in zip(rows, HOSTILE, strict=True):
        r["id"] = qid
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    for label in ("NA", "=cmd", "1e3", "a\tb"):
        shutil.rmtree(out, ignore_errors=True)
        assert _ss(inp, out, "--model-label", label, "--dataset-label", "null") == 0, capsys.readouterr().err
        m = report.load_metrics(out)
        assert set(m["model"]) == {label} and set(m["dataset"]) == {"null"}
    assert read_csv_ids(out / "scores.csv")["id"].tolist() == HOSTILE
    assert evaluate.load_scores(out)["id"].tolist() == HOSTILE
    assert cli.main(["beta-sweep", str(out)]) == 0
    per_q = read_csv_ids(out / "beta_sweep_per_question.csv")
    assert per_q[per_q["beta"] == 0.5]["id"].tolist() == HOSTILE
    assert derived.derived_status(out)["beta_sweep.csv"] == derived.FRESH
    assert cli.main(["report", str(out), "--output", str(tmp_path / "r.md")]) == 0


# --------------------------------------------------------------------------------------------------
# The class: exit 2 with one line naming file and line for every number out of range, whatever its digits

OUT_OF_RANGE = ["1e400", "-1e400", "1" + "0" * 400, "1" + "0" * 5000, "1e-400000"]


@pytest.mark.parametrize("field", ["p_true", "embedding", "answer_token_logprobs", "sample_logprobs"])
@pytest.mark.parametrize("literal", OUT_OF_RANGE)
def test_an_out_of_range_number_in_an_input_file_is_refused_naming_file_and_line(
    tmp_path, fake_entail, field, literal, capsys
):
    inp = tmp_path / "in.jsonl"
    rows = fakes.make_samples_file(inp, 2)
    line = json.loads(json.dumps(rows[1]))
    value = {"p_true": "X", "embedding": "[X, 0.5]", "answer_token_logprobs": "[X]"}.get(field)
    value = value or "[" + ", ".join("[X]" for _ in line["samples"]) + "]"
    text = json.dumps(line)[:-1] + f', "{field}": ' + value.replace("X", literal) + "}"
    inp.write_text(json.dumps(rows[0]) + "\n" + text + "\n")
    code = _ss(inp, tmp_path / "o")
    err = capsys.readouterr().err
    if literal == "1e-400000":  # underflows to 0.0: a valid number, except where a probability must be > 0
        assert code in (0, 2) and "Traceback" not in err
        return
    assert code == 2
    msg = _one_error_line(err)
    assert "in.jsonl, line 2" in msg
    assert not (tmp_path / "o").exists()
