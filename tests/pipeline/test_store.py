"""Run directories: checksummed append-only JSON lines, verification and repair on resume, provenance and
config refusal."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from shapley.pipeline import store as runs
from shapley.pipeline.config import CONFIG_SCHEMA, RunConfig
from shapley.pipeline.experiment import run_stage
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
    line = runs.encode_record(rec)
    back = json.loads(line)
    assert back[runs.CHECKSUM_KEY] == runs.record_checksum(back)
    assert back["x"] == 0.1 + 0.2 and back["m"] == [[1 / 3, 2.0]]
    assert math.isnan(back["nan"]) and back["inf"] == -math.inf
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert "é".encode() in line


def test_store_append_and_load(tmp_path):
    s = runs.JsonlStore(tmp_path / "a.jsonl", ("v",))
    s.load()
    for i in range(3):
        s.append({"id": f"k{i}", "v": i / 7})
    with pytest.raises(ValueError, match="already holds"):
        s.append({"id": "k1", "v": 0})
    with pytest.raises(ValueError, match="required"):
        s.append({"id": "k9"})
    t = runs.JsonlStore(tmp_path / "a.jsonl", ("v",))
    assert [r["v"] for r in t.load().values()] == [0 / 7, 1 / 7, 2 / 7]
    assert t.problems == []


def test_append_requires_load_of_existing_file(tmp_path):
    s = runs.JsonlStore(tmp_path / "a.jsonl")
    s.append({"id": "x"})
    with pytest.raises(RuntimeError, match="load"):
        runs.JsonlStore(tmp_path / "a.jsonl").append({"id": "y"})


def _write_store(path: Path, n: int) -> list[bytes]:
    s = runs.JsonlStore(path, ("v",))
    s.load()
    for i in range(n):
        s.append({"id": f"k{i}", "v": float(i)})
    return path.read_bytes().split(b"\n")[:-1]


def test_torn_last_line_is_dropped_and_file_repaired(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = _write_store(p, 4)
    p.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][: len(lines[3]) // 2])
    s = runs.JsonlStore(p, ("v",))
    with pytest.warns(runs.CorruptRecordWarning, match="line 4"):
        recs = s.load()
    assert list(recs) == ["k0", "k1", "k2"]
    assert p.read_bytes() == b"\n".join(lines[:3]) + b"\n"
    s.append({"id": "k3", "v": 3.0})
    assert p.read_bytes() == b"\n".join(lines) + b"\n"


def test_corrupt_middle_line_is_detected_later_lines_kept(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = _write_store(p, 5)
    bad = lines[1].replace(b'"v":1.0', b'"v":1.5')  # valid JSON, wrong checksum
    assert bad != lines[1]
    p.write_bytes(b"\n".join([lines[0], bad, b"{not json", lines[3], lines[4], lines[0]]) + b"\n")
    s = runs.JsonlStore(p, ("v",))
    with pytest.warns(runs.CorruptRecordWarning) as rec:
        recs = s.load()
    msgs = " ".join(str(w.message) for w in rec)
    assert "checksum mismatch" in msgs and "not valid JSON" in msgs and "duplicate id" in msgs
    assert list(recs) == ["k0", "k3", "k4"]
    assert runs.JsonlStore(p, ("v",)).load() == recs  # rewritten: a second load is clean
    assert p.read_bytes() == b"\n".join([lines[0], lines[3], lines[4]]) + b"\n"


def test_missing_required_field_is_invalid(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(runs.encode_record({"id": "a"}) + runs.encode_record({"id": "b", "v": 1}))
    with pytest.warns(runs.CorruptRecordWarning, match="missing field"):
        assert list(runs.JsonlStore(p, ("v",)).load()) == ["b"]


def test_read_only_load_does_not_rewrite(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = _write_store(p, 2)
    torn = lines[0] + b"\n" + lines[1][:10]
    p.write_bytes(torn)
    with pytest.warns(runs.CorruptRecordWarning):
        assert list(runs.JsonlStore(p).load(repair=False)) == ["k0"]
    assert p.read_bytes() == torn


# --------------------------------------------------------------------------------------------------
# Run directories and provenance


def test_rundir_config_provenance_and_refusal(tmp_path):
    d = tmp_path / "run"
    config = fakes.samples_config(tmp_path / "in.jsonl", limit=10)
    config = config.replace(scoring=replace(config.scoring, methods=("Shap",)))
    with runs.RunDir.open(d, config, argv=["prog", "--beta", "0.5"]) as run:
        assert not run.resumed
        cfg = json.loads((d / "config.json").read_text())
        assert cfg["schema"] == CONFIG_SCHEMA == 3 and RunConfig.from_stored(cfg) == config
        prov = cfg["provenance"]
        assert set(prov["versions"]) == set(runs.VERSIONED_PACKAGES)
        assert prov["versions"]["numpy"] == np.__version__
        assert {"commit", "dirty"} <= set(prov["git"])
        assert "cpu" in prov["device"] and prov["command_line"] == "prog --beta 0.5"
        with pytest.raises(RuntimeError, match="in use"):
            runs.RunDir.open(d, config)
        run.record_fingerprint("entailment", {"spec": "s", "fingerprint": "abc"})
        with pytest.raises(ValueError, match="fingerprint changed"):
            run.record_fingerprint("entailment", {"spec": "s", "fingerprint": "xyz"})
    with pytest.raises(ValueError, match=r"'scoring.beta' \(--beta\) differs"):
        runs.RunDir.open(d, config.replace(scoring=replace(config.scoring, beta=0.4)))
    with pytest.raises(ValueError, match=r"'scoring.methods' \(--methods\) differs"):
        runs.check_resumable(d, config.replace(scoring=replace(config.scoring, methods=("Shap", "SE"))))
    with runs.RunDir.open(d, fakes.with_limit(config, 20)) as run:  # limit does not affect results
        assert run.resumed
        inv = json.loads((d / "config.json").read_text())["invocations"]
        assert len(inv) == 2 and inv[1]["changed_settings"] == {"data.limit": [10, 20]}
    other = tmp_path / "other"
    other.mkdir()
    (other / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        runs.RunDir.open(other, config)


def test_schema1_config_is_read_and_migrated_on_resume(tmp_path):
    d = tmp_path / "old"
    d.mkdir()
    flat = {
        "command": "score-samples",
        "input_path": str(tmp_path / "in.jsonl"),
        "input_sha256": "ab",
        "n_samples": 3,
        "limit": 5,
        "dataset": "in",
        "model": "external",
        "entailment": "fake:",
        "with_question": False,
        "beta": 0.5,
        "psd_policy": "nearest",
        "cluster_rule": "bidirectional",
        "se_aggregation": "mean",
        "methods": ["Shap", "DSE"],
        "correctness_metric": "rougeL",
        "threshold": 0.3,
        "seed": 0,
        "n_boot": 50,
        "batch_size": 32,
        "device": None,
    }
    (d / "config.json").write_text(json.dumps({"schema": 1, "settings": flat, "provenance": {}, "invocations": []}))
    old = runs.read_config(d)
    assert old.command == "score-samples" and old.data.n_samples == 3 and old.scoring.methods == ("Shap", "DSE")
    assert old.data.sha256 == "ab" and old.model == "external" and old.entailment.backend == "fake:"
    with runs.RunDir.open(d, fakes.with_limit(old, 7)) as run:
        assert run.resumed
    cfg = json.loads((d / "config.json").read_text())
    assert cfg["schema"] == CONFIG_SCHEMA and "settings" not in cfg
    assert cfg["invocations"][-1]["migrated_from_schema"] == 1
    assert runs.read_config(d) == fakes.with_limit(old, 7)


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
    store = runs.JsonlStore(tmp_path / "s.jsonl", ("v",))
    store.load()
    store.append({"id": "b", "v": 0})
    seen = []

    def compute(chunk):
        seen.extend(chunk)
        return [{"id": c, "v": len(c)} for c in chunk]

    out = run_stage(store, "st", ["a", "b", "c"], compute, key=str, chunk_size=2, progress=False)
    assert seen == ["a", "c"] and list(out) == ["b", "a", "c"]
    assert log.read_text() == "st\ta\nst\tc\n"
    run_stage(store, "st", ["a", "b", "c"], compute, key=str, progress=False)
    assert seen == ["a", "c"]
