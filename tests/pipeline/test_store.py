"""Run directories: checksummed append-only JSON lines, verification and repair on resume, provenance and
config refusal."""

from __future__ import annotations

import json
import math
import operator
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from shapley.pipeline.config import CONFIG_SCHEMA, RunConfig
from shapley.pipeline.experiment.stages import run_stage
from shapley.pipeline.rundir import jsonl, provenance
from shapley.pipeline.rundir import store as runs
from shapley.pipeline.rundir.settings import REPO_ROOT
from tests import fakes

# --------------------------------------------------------------------------------------------------
# JSON lines


def test_canonical_record_roundtrip_is_exact():
    rec = {
        "id": "é",
        "x": 0.1 + 0.2,
        "m": np.array([[1 / 3, 2.0]]),
        "nan": math.nan,
        "inf": -math.inf,
        "f32": np.float32(0.1),
        "t": (1, 2),
    }
    line = jsonl.encode_record(rec)
    back = json.loads(line)
    assert back[jsonl.CHECKSUM_KEY] == jsonl.record_checksum(back)
    assert back["x"] == 0.1 + 0.2 and back["m"] == [[1 / 3, 2.0]]
    assert math.isnan(back["nan"]) and back["inf"] == -math.inf
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert "é".encode() in line


def test_store_append_and_load(tmp_path):
    s = jsonl.JsonlStore(tmp_path / "a.jsonl", ("v",))
    s.load()
    for i in range(3):
        s.append_many([{"id": f"k{i}", "v": i / 7}])
    with pytest.raises(ValueError, match="already holds"):
        s.append_many([{"id": "k1", "v": 0}])
    t = jsonl.JsonlStore(tmp_path / "a.jsonl", ("v",))
    assert [r["v"] for r in t.load().values()] == [0 / 7, 1 / 7, 2 / 7]
    assert t.problems == []


def _write_store(path: Path, n: int) -> list[bytes]:
    s = jsonl.JsonlStore(path, ("v",))
    s.load()
    for i in range(n):
        s.append_many([{"id": f"k{i}", "v": float(i)}])
    return path.read_bytes().split(b"\n")[:-1]


def test_torn_last_line_is_dropped_and_file_repaired(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = _write_store(p, 4)
    p.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][: len(lines[3]) // 2])
    s = jsonl.JsonlStore(p, ("v",))
    with pytest.warns(jsonl.CorruptRecordWarning, match="line 4"):
        recs = s.load()
    assert list(recs) == ["k0", "k1", "k2"]
    assert p.read_bytes() == b"\n".join(lines[:3]) + b"\n"
    s.append_many([{"id": "k3", "v": 3.0}])
    assert p.read_bytes() == b"\n".join(lines) + b"\n"


def test_corrupt_middle_line_is_detected_later_lines_kept(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = _write_store(p, 5)
    bad = lines[1].replace(b'"v":1.0', b'"v":1.5')  # valid JSON, wrong checksum
    assert bad != lines[1]
    p.write_bytes(b"\n".join([lines[0], bad, b"{not json", lines[3], lines[4], lines[0]]) + b"\n")
    s = jsonl.JsonlStore(p, ("v",))
    with pytest.warns(jsonl.CorruptRecordWarning) as rec:
        recs = s.load()
    msgs = " ".join(str(w.message) for w in rec)
    assert "checksum mismatch" in msgs and "not valid JSON" in msgs and "duplicate id" in msgs
    assert list(recs) == ["k0", "k3", "k4"]
    assert jsonl.JsonlStore(p, ("v",)).load() == recs  # rewritten: a second load is clean
    assert p.read_bytes() == b"\n".join([lines[0], lines[3], lines[4]]) + b"\n"


def test_missing_required_field_is_invalid(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(jsonl.encode_record({"id": "a"}) + jsonl.encode_record({"id": "b", "v": 1}))
    with pytest.warns(jsonl.CorruptRecordWarning, match="missing field"):
        assert list(jsonl.JsonlStore(p, ("v",)).load()) == ["b"]


def test_read_only_load_does_not_rewrite(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = _write_store(p, 2)
    torn = lines[0] + b"\n" + lines[1][:10]
    p.write_bytes(torn)
    with pytest.warns(jsonl.CorruptRecordWarning):
        assert list(jsonl.JsonlStore(p).load(repair=False)) == ["k0"]
    assert p.read_bytes() == torn


# --------------------------------------------------------------------------------------------------
# Run directories and provenance


def open_run(path: Path, config: RunConfig, argv: list[str] | None = None) -> runs.RunDir:
    """:meth:`~shapley.pipeline.rundir.store.RunDir.open` as the pipelines call it: the stored record read, and this
    call's record built from it (which refuses other result settings)."""
    stored = runs.stored_run(path)
    return runs.RunDir.open(path, config, config.run_record(path, stored, provenance.provenance(argv), {}))


def test_rundir_config_provenance_and_refusal(tmp_path):
    d = tmp_path / "run"
    config = fakes.samples_config(tmp_path / "in.jsonl", limit=10)
    config = config.replace(scoring=replace(config.scoring, methods=("Shap",)))
    with open_run(d, config, ["prog", "--beta", "0.5"]) as run:
        assert not run.invocation["resumed"]
        cfg = json.loads((d / "config.json").read_text())
        assert cfg["schema"] == CONFIG_SCHEMA == 4 and RunConfig.from_stored(cfg) == config
        prov = cfg["provenance"]
        assert set(prov["versions"]) == set(provenance.VERSIONED_PACKAGES)
        assert prov["versions"]["numpy"] == np.__version__
        assert {"commit", "dirty"} <= set(prov["git"])
        assert "cpu" in prov["device"] and prov["command_line"] == "prog --beta 0.5"
        with pytest.raises(RuntimeError, match="in use"):
            open_run(d, config)
        run.record_fingerprint("entailment", {"spec": "s", "fingerprint": "abc"})
        with pytest.raises(ValueError, match="fingerprint changed"):
            run.record_fingerprint("entailment", {"spec": "s", "fingerprint": "xyz"})
    with pytest.raises(
        ValueError, match=rf"cannot resume {re.escape(str(d))}: setting 'scoring.beta' \(--beta\) differs"
    ):
        open_run(d, config.replace(scoring=replace(config.scoring, beta=0.4)))
    with open_run(d, fakes.with_limit(config, 20)) as run:  # limit does not affect results
        assert run.invocation["resumed"]
        inv = json.loads((d / "config.json").read_text())["invocations"]
        assert len(inv) == 2 and inv[1]["changed_settings"] == {"data.limit": [10, 20]}
    other = tmp_path / "other"
    other.mkdir()
    (other / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        open_run(other, config)


def test_a_run_written_between_read_and_open_is_refused(tmp_path):
    """Another process appends an invocation after this call read config.json and before it takes the lock: the
    record built from the earlier read is refused, and the other process's config.json is kept."""
    d, config = tmp_path / "run", fakes.samples_config(tmp_path / "in.jsonl")
    with open_run(d, config):
        pass
    record = config.run_record(d, runs.stored_run(d), provenance.provenance(None), {})
    with open_run(d, config):  # the other process
        pass
    written = (d / "config.json").read_bytes()
    with pytest.raises(RuntimeError, match="written by another process meanwhile"):
        runs.RunDir.open(d, config, record)
    assert (d / "config.json").read_bytes() == written


def _edited_run(tmp_path, edit):
    """A new run directory whose ``config.json`` record ``edit(record)`` has changed; returns (its path, its config)."""
    d, config = tmp_path / "run", fakes.samples_config(tmp_path / "in.jsonl")
    with open_run(d, config):
        pass
    rec = json.loads((d / "config.json").read_text())
    edit(rec)
    (d / "config.json").write_text(json.dumps(rec))
    return d, config


def _setting(rec, key):
    """The mapping of ``rec["config"]`` that holds the dotted ``key``, and the key's last part."""
    group, _, name = key.rpartition(".")
    return (rec["config"][group] if group else rec["config"]), name


@pytest.mark.parametrize("schema", [1, 2, 3, 5, None])
def test_a_config_of_another_schema_is_refused_naming_the_file_and_saying_to_run_again(tmp_path, schema):
    """No reader migrates older run directories: any schema but today's is refused, before anything is written."""
    d, config = _edited_run(tmp_path, lambda rec: rec.update(schema=schema))
    before = (d / "config.json").read_bytes()
    with pytest.raises(
        ValueError,
        match=rf"{d / 'config.json'}.*schema {schema}; this version reads schema 4 only.*run the command again",
    ):
        runs.read_config(d)
    with pytest.raises(ValueError, match="schema"):
        open_run(d, config)
    assert (d / "config.json").read_bytes() == before


def test_unreadable_config_is_refused_naming_the_file(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    for body in ('{"schema": 1, "settings": [1, 2]}', "{oops", '{"schema": 9}', '{"schema": 2, "config": {"x": 1}}'):
        (d / "config.json").write_text(body)
        with pytest.raises(ValueError, match="config.json"):
            runs.read_config(d)


def test_run_stage_computes_only_pending_and_logs(tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv(runs.TEST_CALL_LOG_ENV, str(log))
    store = jsonl.JsonlStore(tmp_path / "s.jsonl", ("v",))
    store.load()
    store.append_many([{"id": "b", "v": 0}])
    seen = []

    def compute(chunk):
        seen.extend(chunk)
        return [{"id": c, "v": len(c)} for c in chunk]

    out = run_stage(store, "st", ["a", "b", "c"], compute, key=str, chunk_size=2, progress=False)
    assert seen == ["a", "c"] and list(out) == ["b", "a", "c"]
    assert log.read_text() == "st\ta\nst\tc\n"
    run_stage(store, "st", ["a", "b", "c"], compute, key=str, progress=False)
    assert seen == ["a", "c"]


# --------------------------------------------------------------------------------------------------
# Issue 12 #4: chunks are atomic


def test_a_chunk_not_stored_whole_is_dropped_whole(tmp_path):
    p = tmp_path / "s.jsonl"
    s = jsonl.JsonlStore(p, ("v",))
    s.load()
    s.append_many([{"id": "a", "v": 0, "chunk": ["a", "b"]}, {"id": "b", "v": 1, "chunk": ["a", "b"]}])
    s.append_many([{"id": f"k{i}", "v": i, "chunk": ["k0", "k1", "k2"]} for i in range(3)])
    lines = p.read_bytes().split(b"\n")[:-1]
    assert len(lines) == 5
    p.write_bytes(b"\n".join(lines[:4]) + b"\n")  # a crash after two of the three lines of the last chunk
    with pytest.warns(jsonl.CorruptRecordWarning, match="not stored whole"):
        recs = jsonl.JsonlStore(p, ("v",)).load()
    assert list(recs) == ["a", "b"]
    assert p.read_bytes() == b"\n".join(lines[:2]) + b"\n"  # repaired: the chunk will be recomputed whole


def test_append_many_is_one_write_and_discard_rewrites(tmp_path, monkeypatch):
    p = tmp_path / "s.jsonl"
    s = jsonl.JsonlStore(p, ("v",))
    s.load()
    writes = []
    real_write = runs.os.write
    monkeypatch.setattr(runs.os, "write", lambda fd, data: writes.append(len(data)) or real_write(fd, data))
    s.append_many([{"id": f"k{i}", "v": i} for i in range(4)])
    assert len(writes) == 1
    with pytest.raises(ValueError, match="already holds"):
        s.append_many([{"id": "x", "v": 0}, {"id": "x", "v": 1}])
    monkeypatch.undo()
    s.discard(["k1", "k3"])
    assert list(jsonl.JsonlStore(p, ("v",)).load()) == ["k0", "k2"] == list(s.records)


# --------------------------------------------------------------------------------------------------
# Issue 9 C: provenance that reproduces


def _git(repo: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_dirty_means_the_package_source_changed(tmp_path):
    repo = tmp_path / "repo"
    (repo / "shapley").mkdir(parents=True)
    (repo / "shapley" / "a.py").write_text("x = 1\n")
    (repo / "pyproject.toml").write_text("[project]\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    clean = provenance.git_info(repo)
    assert clean["dirty"] is False and len(clean["commit"]) == 40
    (repo / "results" / "run").mkdir(parents=True)  # a run's own outputs, and other untracked files
    (repo / "results" / "run" / "config.json").write_text("{}")
    (repo / "notes.txt").write_text("x")
    assert provenance.git_info(repo)["dirty"] is False
    (repo / "shapley" / "new.py").write_text("y = 2\n")  # an untracked module changes the package
    info = provenance.git_info(repo)
    assert info["dirty"] is True and info["dirty_paths"] == ["shapley/new.py"]
    (repo / "shapley" / "new.py").unlink()
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert provenance.git_info(repo)["dirty"] is True


def test_provenance_paths_are_relative_to_the_repository(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO_ROOT / "shapley")
    assert provenance.provenance(["prog"])["cwd"] == "shapley"
    assert provenance.repo_relative(REPO_ROOT / "results" / "x") == "results/x"
    assert provenance.repo_relative(REPO_ROOT.parent / "shared" / "data" / "f.gz") == "../shared/data/f.gz"
    assert not provenance.repo_relative(tmp_path).startswith("/")
    monkeypatch.chdir(tmp_path)
    with open_run(tmp_path / "run", fakes.samples_config(tmp_path / "in.jsonl")) as run:
        assert not run.record["provenance"]["cwd"].startswith("/")
        assert not run.invocation["cwd"].startswith("/")


@pytest.mark.parametrize(
    "change",
    [
        {"config": [1, 2]},
        {"provenance": [1, 2]},
        {"invocations": {"a": 1}},
        {"invocations": [1]},
        {"outputs": "all"},
    ],
)
def test_malformed_record_is_refused_naming_the_file(tmp_path, change):
    d, _ = _edited_run(tmp_path, lambda rec: rec.update(change))
    with pytest.raises(ValueError, match=r"config.json"):
        runs.read_record(d)
    with pytest.raises(ValueError, match=r"config.json"):
        open_run(d, fakes.samples_config(tmp_path / "in.jsonl"))


def test_run_history_lists_commands_commits_and_dirt():
    rec = {
        "schema": 4,
        "provenance": {"command_line": "a", "git": {"commit": "c1", "dirty": False}},
        "invocations": [
            {"command_line": "python -m shapley run --limit 25", "resumed": False},
            {"command_line": "python -m shapley run --limit 50", "git": {"commit": "c1", "dirty": False}},
        ],
    }
    h = runs.run_history(rec)
    assert h.commands == ("python -m shapley run --limit 25", "python -m shapley run --limit 50")
    assert h.commits == ("c1",) and h.dirty is False and not h.multi_commit
    rec["invocations"].append({"command_line": "c", "git": {"commit": "c2", "dirty": True}})
    h = runs.run_history(rec)
    assert h.commits == ("c1", "c2") and h.multi_commit and h.dirty is True
    assert runs.run_history({"provenance": {"command_line": "x"}}).commands == ()


# --------------------------------------------------------------------------------------------------
# config.json: every key of the schema must be there, none other; values are checked, never coerced


@pytest.mark.parametrize(
    "key",
    [
        "scoring.beta",
        "scoring.methods",
        "entailment.with_question",
        "seed",
        "data.shard",
        "data.reference_field",
        "scoring",
    ],
)
def test_a_config_missing_a_key_is_refused_naming_key_and_file(tmp_path, key):
    d, config = _edited_run(tmp_path, lambda rec: operator.delitem(*_setting(rec, key)))
    with pytest.raises(ValueError, match=rf"{d / 'config.json'}.*lacks the key '{key}'"):
        runs.read_config(d)
    with pytest.raises(ValueError, match=f"'{key}'"):
        open_run(d, config)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("seed", 0.9, "--seed must be an integer"),
        ("entailment.with_question", "false", "--with-question must be true or false"),
        ("runtime.batch_size", "8", "--batch-size must be an integer"),
        ("scoring.beta", "0.5", "--beta must be a number"),
        ("entailment.backend", None, r"backend \(--entailment\) must be given"),
        ("data.extra", 1, r"unknown key\(s\) \['extra'\] in group 'data'"),
    ],
)
def test_stored_values_of_the_wrong_kind_are_refused_not_coerced(tmp_path, key, value, message):
    d, _ = _edited_run(tmp_path, lambda rec: operator.setitem(*_setting(rec, key), value))
    with pytest.raises(ValueError, match=rf"config.json.*{message}"):
        runs.read_config(d)


# --------------------------------------------------------------------------------------------------
# The compact copy (stages.jsonl.gz): what beta-sweep, the outputs and report need, without answer text


def test_a_run_without_its_stage_files_is_recomputed_from_the_compact_copy(tmp_path, monkeypatch):
    import gzip

    from shapley import cli
    from shapley.pipeline.evaluate import metrics as evaluate
    from shapley.pipeline.experiment import pipelines as experiment

    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    rows = fakes.make_samples_file(inp, 20, n_samples=5)
    out = experiment.score_samples(fakes.samples_config(inp, n_boot=50), tmp_path / "run")
    assert cli.main(["beta-sweep", str(out), "--n-boot", "20"]) == 0
    compact = gzip.decompress((out / jsonl.COMPACT_FILE).read_bytes()).decode("utf-8")
    answers = {r["id"]: r["samples"][0] for r in rows}
    stored = jsonl.JsonlStore(out / "scores.jsonl").load(repair=False)
    assert all(rec["answer"] == answers[k] for k, rec in stored.items())
    assert '"answer"' not in compact and "_sha256" in compact  # checksummed lines, no answer text
    expected = {f: (out / f).read_bytes() for f in ("beta_sweep.csv", "comparisons.csv")}
    expected["metrics.csv"] = (out / "metrics.csv").read_bytes()
    for name in ("entailment.jsonl", "scores.jsonl"):  # left out of git, as for the LLaMA-13B runs
        (out / name).unlink()
    for f in expected:
        (out / f).unlink()
    assert cli.main(["beta-sweep", str(out), "--n-boot", "20"]) == 0
    evaluate.write_run_outputs(out)
    for f, data in expected.items():
        assert (out / f).read_bytes() == data, f
    assert not (out / "scores.jsonl").exists()  # a reader never creates or repairs a stage file


def test_a_damaged_compact_copy_is_refused_naming_file_and_line(tmp_path):
    import gzip

    d = tmp_path / "run"
    d.mkdir()
    good = jsonl.encode_record({"id": "a", "entailment": {"id": "a"}, "scores": {"id": "a"}})
    (d / jsonl.COMPACT_FILE).write_bytes(gzip.compress(good + good.replace(b'"a"', b'"b"', 1)))
    with pytest.raises(ValueError, match=r"stages.jsonl.gz, line 2"):
        jsonl.read_compact(d)
    (d / jsonl.COMPACT_FILE).write_bytes(good)
    with pytest.raises(ValueError, match="not a readable gzip"):
        jsonl.read_compact(d)
