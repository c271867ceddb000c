"""Runs split with ``--shard I/K`` and joined with ``python -m shapley merge``: the merge equals the unsharded run,
and refuses shards that do not belong together."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shapley import cli
from shapley.pipeline.config import DataSettings, RunConfig, RuntimeSettings
from shapley.pipeline.data import questions
from shapley.pipeline.entail import backends as entail
from shapley.pipeline.experiment import merge
from shapley.pipeline.experiment import pipelines as experiment
from shapley.pipeline.rundir import jsonl, provenance, store
from tests import fakes
from tests.pipeline.test_store import open_run

OUTPUTS = ("scores.csv", "metrics.csv", "skipped.csv", "comparisons.csv")
SCRIPTS = fakes.REPO / "scripts"


def assert_same_table(a: Path, b: Path, atol: float = 1e-6) -> None:
    """Two CSV files hold the same table: same columns, ids exactly, numbers to ``atol``, the rest equal."""
    x, y = pd.read_csv(a, dtype={"id": str}), pd.read_csv(b, dtype={"id": str})
    assert list(x.columns) == list(y.columns), a.name
    assert x.shape == y.shape, a.name
    for col in x.columns:
        u, v = x[col], y[col]
        if pd.api.types.is_numeric_dtype(u) and pd.api.types.is_numeric_dtype(v) and u.dtype != bool:
            np.testing.assert_allclose(
                u.to_numpy(float), v.to_numpy(float), atol=atol, rtol=0, err_msg=f"{a.name}:{col}"
            )
        else:
            assert u.fillna("").astype(str).tolist() == v.fillna("").astype(str).tolist(), f"{a.name}:{col}"


def _content(path: Path) -> dict[str, dict]:
    """A stage file's records without what records how they were computed: the batch (``chunk``) they were
    computed in, and the fingerprint of their inputs (which covers the upstream record's ``chunk``)."""
    recs = jsonl.JsonlStore(path).load(repair=False)
    return {k: {f: v for f, v in r.items() if f not in (jsonl.CHUNK_KEY, jsonl.UPSTREAM_KEY)} for k, r in recs.items()}


def _samples_input(path: Path, n: int = 36) -> None:
    fakes.make_full_samples_file(path, n, fields_seed=3)


def _with_shard(config: RunConfig, shard: str | None) -> RunConfig:
    return config.replace(data=replace(config.data, shard=shard))


def _sharded(config: RunConfig, run, tmp_path: Path, k: int = 3) -> list[Path]:
    return [run(_with_shard(config, f"{i}/{k}"), tmp_path / f"shard{i}") for i in range(k)]


def test_shard_of_is_a_fixed_partition():
    # fixed values: the split must not change between versions, machines or Python hash seeds
    assert [questions.shard_of(f"q{i}", 3) for i in range(8)] == [0, 1, 2, 1, 2, 0, 1, 1]
    assert [questions.shard_of(x, 5) for x in ("東京", "", "q1", "Zürich")] == [
        int.from_bytes(hashlib.sha256(x.encode("utf-8")).digest()[:8], "big") % 5 for x in ("東京", "", "q1", "Zürich")
    ]  # the documented rule (first 8 bytes of SHA-256 of the UTF-8 id, big-endian, mod k), non-ASCII included
    code = "from shapley.pipeline.data.questions import shard_of; print([shard_of(f'q{i}', 3) for i in range(8)])"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(fakes.REPO)}  # another salt of hash()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout.strip() == "[0, 1, 2, 1, 2, 0, 1, 1]", r.stderr
    ids = [f"id-{i}" for i in range(50)]
    parts = [questions.take_shard(ids, f"{i}/4", key=str) for i in range(4)]
    assert sorted(pos for p in parts for pos, _ in p) == list(range(50))  # disjoint and covering
    assert all(ids[pos] == it for p in parts for pos, it in p)  # positions count in the unsharded list
    assert questions.take_shard(ids, None, key=str) == list(enumerate(ids))


@pytest.mark.parametrize("bad", ["3/3", "1/0", "-1/3", "a/3", "1", "1/3/4", ""])
def test_bad_shard_is_refused_naming_the_flag(bad):
    with pytest.raises(ValueError, match="--shard"):
        DataSettings(dataset="d", shard=bad)


def test_shard_lives_in_the_config_and_blocks_resuming_another_shard(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 9)
    cfg = _with_shard(fakes.samples_config(inp), "1/3")
    assert RunConfig.from_dict(cfg.to_dict()) == cfg and cfg.data.shard == "1/3"
    assert "data.shard" in cfg.result_settings()
    out = experiment.score_samples(cfg, tmp_path / "s1")
    ids = set(jsonl.JsonlStore(out / "scores.jsonl").load(repair=False))
    assert ids == {f"q{q:03d}" for q in range(9) if questions.shard_of(f"q{q:03d}", 3) == 1}
    with pytest.raises(ValueError, match=r"'data.shard' \(--shard\) differs"):
        experiment.score_samples(_with_shard(cfg, "2/3"), out)


def test_entail_cache_setting_reaches_the_backend_and_is_a_runtime_setting(tmp_path, monkeypatch):
    calls: list[object] = []
    fake = fakes.FakeEntail()

    def load_backend(spec, **kw):
        calls.append(kw.get("cache"))
        return fake.load_backend(spec)

    monkeypatch.setattr(entail, "load_backend", load_backend)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 4)
    base = fakes.samples_config(inp)
    for value, expected in ((None, True), ("none", False), (str(tmp_path / "c.sqlite"), str(tmp_path / "c.sqlite"))):
        cfg = base.replace(runtime=replace(base.runtime, entail_cache=value))
        experiment.score_samples(cfg, tmp_path / f"run-{len(calls)}")
        assert calls[-1] == expected
    assert "runtime.entail_cache" not in base.result_settings()
    a = cli.build_parser().parse_args(
        ["score-samples", "f.jsonl", "--output", "o", "--shard", "2/4", "--entail-cache", "/x/e.sqlite"]
    )
    cfg = cli.config_from_args(a)
    assert cfg.data.shard == "2/4" and cfg.runtime.entail_cache == "/x/e.sqlite"
    with pytest.raises(ValueError, match="--entail-cache"):
        RuntimeSettings(entail_cache=" ")


def test_score_samples_in_three_shards_merges_to_the_unsharded_run(tmp_path, monkeypatch, capsys):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    _samples_input(inp)
    config = fakes.samples_config(inp, n_boot=200)
    full = experiment.score_samples(config, tmp_path / "full")
    shards = _sharded(config, experiment.score_samples, tmp_path)
    assert all(0 < len(jsonl.JsonlStore(s / "scores.jsonl").load(repair=False)) < 36 for s in shards)
    merged = merge.merge_runs(shards, tmp_path / "merged")
    for f in OUTPUTS:
        assert_same_table(full / f, merged / f)
    m = pd.read_csv(merged / "metrics.csv")
    assert {"ER", "SE", "Shap"} <= set(m["method"])  # the ER fit and the bootstrap ran on the union
    # the merged directory is a run directory of the unsharded settings, stage records in the unsharded order
    assert store.read_config(merged) == store.read_config(full).replace(runtime=config.runtime)
    for stage in ("entailment", "scores"):
        a, b = _content(full / jsonl.STAGE_FILES[stage]), _content(merged / jsonl.STAGE_FILES[stage])
        assert list(a) == list(b) and a == b
    sources = [r["answer_source"] for r in jsonl.JsonlStore(merged / "scores.jsonl").load(repair=False).values()]
    assert sources.count("input") == sources.count("first_sample") == 18  # the lines with an 'answer' field, and not
    prov = json.loads((merged / "config.json").read_text())["provenance"]
    assert [d["shard"] for d in prov["merged_from"]] == ["0/3", "1/3", "2/3"]
    # merging again into the same output rewrites it
    assert merge.merge_runs(list(reversed(shards)), merged) == merged
    for f in OUTPUTS:
        assert_same_table(full / f, merged / f)
    # without the input file (it holds the embeddings) ER cannot be refitted: said, and skipped
    inp.rename(tmp_path / "moved.jsonl")
    capsys.readouterr()
    merge.merge_runs(shards, tmp_path / "merged2")
    assert "ER cannot be refitted" in capsys.readouterr().err
    assert "ER" not in set(pd.read_csv(tmp_path / "merged2" / "metrics.csv")["method"])


def test_run_in_three_shards_merges_answer_sources_and_provenance(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_generator(monkeypatch)
    fakes.install_fake_dataset(monkeypatch, n=12)
    config = fakes.run_config(n_samples=4, limit=None, n_boot=200)
    shards = _sharded(config, experiment.run_experiment, tmp_path)
    merged = merge.merge_runs(shards, tmp_path / "merged")  # equal to the whole run: test_invariance.py
    scored = jsonl.JsonlStore(merged / "scores.jsonl").load(repair=False).values()
    assert [r["answer_source"] for r in scored] == ["greedy"] * 12
    merged_from = json.loads((merged / "config.json").read_text())["provenance"]["merged_from"]
    shard_prov = [json.loads((d / "config.json").read_text())["provenance"] for d in shards]
    assert [m["questions_sha256"] for m in merged_from] == [p["questions_sha256"] for p in shard_prov]


def test_a_shard_may_be_empty(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 3)
    config = fakes.samples_config(inp)
    full = experiment.score_samples(config, tmp_path / "full")
    shards = _sharded(config, experiment.score_samples, tmp_path, k=6)
    assert any(len(pd.read_csv(s / "scores.csv")) == 0 for s in shards)
    merged = merge.merge_runs(shards, tmp_path / "merged")
    for f in OUTPUTS:
        assert_same_table(full / f, merged / f)


# --------------------------------------------------------------------------------------------------
# What the merge refuses (exit 2, naming the problem, nothing written)


@pytest.fixture()
def three_shards(tmp_path, monkeypatch) -> tuple[RunConfig, list[Path]]:
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 15)
    config = fakes.samples_config(inp)
    return config, _sharded(config, experiment.score_samples, tmp_path)


def _merge_cli(dirs: list[Path], out: Path, capsys) -> tuple[int, str]:
    rc = cli.main(["merge", *map(str, dirs), "--output", str(out)])
    return rc, capsys.readouterr().err


def test_merge_cli_writes_the_run_and_prints_its_summary(three_shards, tmp_path, capsys):
    _, shards = three_shards
    rc = cli.main(["merge", *map(str, shards), "--output", str(tmp_path / "m")])
    assert rc == 0
    assert "run directory:" in capsys.readouterr().out
    for f in OUTPUTS:
        assert (tmp_path / "m" / f).is_file()


def test_merge_refuses_a_missing_or_repeated_shard(three_shards, tmp_path, capsys):
    _, s = three_shards
    out = tmp_path / "m"
    rc, err = _merge_cli([s[0], s[2]], out, capsys)
    assert rc == 2 and "missing shard(s) 1/3" in err
    rc, err = _merge_cli([s[0], s[1], s[2], s[1]], out, capsys)
    assert rc == 2 and "shard 1/3 given twice" in err
    assert not out.exists()


def test_merge_refuses_shards_of_different_settings(three_shards, tmp_path, capsys):
    config, s = three_shards
    other = config.replace(scoring=replace(config.scoring, beta=0.3))
    s1 = experiment.score_samples(_with_shard(other, "1/3"), tmp_path / "other1")
    rc, err = _merge_cli([s[0], s1, s[2]], tmp_path / "m", capsys)
    assert rc == 2 and "'scoring.beta' (--beta)" in err
    limited = config.replace(data=replace(config.data, limit=12))
    s1 = experiment.score_samples(_with_shard(limited, "1/3"), tmp_path / "limited1")
    rc, err = _merge_cli([s[0], s1, s[2]], tmp_path / "m", capsys)
    assert rc == 2 and "'data.limit' (--limit)" in err
    k2 = experiment.score_samples(_with_shard(config, "1/2"), tmp_path / "k2")
    rc, err = _merge_cli([s[0], k2, s[2]], tmp_path / "m", capsys)
    assert rc == 2 and "different counts" in err
    assert not (tmp_path / "m").exists()


def test_merge_refuses_shards_that_store_more_than_their_limit(three_shards, tmp_path, capsys):
    config, s = three_shards  # 15 questions each side of the split
    limited = config.replace(data=replace(config.data, limit=12))
    for i, d in enumerate(s):  # a later call with a lower --limit: the earlier questions stay stored
        experiment.score_samples(_with_shard(limited, f"{i}/3"), d)
    rc, err = _merge_cli(s, tmp_path / "m", capsys)
    assert rc == 2 and "beyond its --limit 12" in err


def test_merge_refuses_overlapping_questions(three_shards, tmp_path, capsys):
    _, s = three_shards
    # a record of shard 1 smuggled into shard 0 (with a valid checksum): the question is in two shards
    rec = next(iter(jsonl.JsonlStore(s[1] / "scores.jsonl").load(repair=False).values()))
    ent = jsonl.JsonlStore(s[1] / "entailment.jsonl").load(repair=False)[rec["id"]]
    for stage, r in (("scores", rec), ("entailment", ent)):
        with open(s[0] / jsonl.STAGE_FILES[stage], "ab") as f:
            f.write(jsonl.encode_record({**r, jsonl.CHUNK_KEY: [r["id"]]}))  # a whole chunk of its own
    rc, err = _merge_cli(s, tmp_path / "m", capsys)
    assert rc == 2 and f"question {rec['id']!r} belongs to shard 1/3" in err and "overlapping" in err


def test_merge_refuses_an_unfinished_or_unsharded_directory(three_shards, tmp_path, capsys):
    config, s = three_shards
    lines = (s[2] / "scores.jsonl").read_bytes().splitlines(keepends=True)
    (s[2] / "scores.jsonl").write_bytes(b"".join(lines[:-1]))  # killed before its last score was stored
    rc, err = _merge_cli(s, tmp_path / "m", capsys)
    assert rc == 2 and "unfinished" in err and "shard 2/3" in err
    (s[2] / "scores.jsonl").write_bytes(b"".join(lines))
    (s[2] / "metrics.csv").unlink()
    rc, err = _merge_cli(s, tmp_path / "m", capsys)
    assert rc == 2 and "no metrics.csv" in err
    full = experiment.score_samples(config, tmp_path / "full")
    rc, err = _merge_cli([s[0], full], tmp_path / "m", capsys)
    assert rc == 2 and "not a sharded run" in err
    rc, err = _merge_cli([s[0], tmp_path / "nowhere"], tmp_path / "m", capsys)
    assert rc == 2 and "not a run directory" in err
    assert not (tmp_path / "m").exists()
    (s[2] / "metrics.csv").write_text("")  # finished again
    rc, err = _merge_cli(s, full, capsys)  # an output holding a run that is not a merge
    assert rc == 2 and "not a merge" in err


def test_merge_refuses_a_shard_that_is_running(three_shards, tmp_path, capsys):
    config, s = three_shards
    with open_run(s[1], store.read_config(s[1])):  # its run holds the lock
        rc, err = _merge_cli(s, tmp_path / "m", capsys)
    assert rc == 2 and "in use by another process" in err and str(s[1]) in err
    assert not (tmp_path / "m").exists()
    rc, err = _merge_cli(s, tmp_path / "m", capsys)  # it ended without writing its outputs (killed)
    assert rc == 2 and "unfinished" in err
    experiment.score_samples(_with_shard(config, "1/3"), s[1])  # completed
    rc, err = _merge_cli(s, tmp_path / "m", capsys)
    assert rc == 0, err


def test_merge_refuses_a_shard_whose_resume_with_a_larger_limit_was_killed(tmp_path, monkeypatch, capsys):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 15)
    limited = fakes.with_limit(fakes.samples_config(inp), 9)
    s = _sharded(limited, experiment.score_samples, tmp_path)
    # shard 0 resumed with --limit 15 and killed right after it opened its run (config.json has the new limit)
    with open_run(s[0], fakes.with_limit(store.read_config(s[0]), 15)):
        pass
    for i in (1, 2):
        experiment.score_samples(_with_shard(fakes.with_limit(limited, 15), f"{i}/3"), s[i])
    rc, err = _merge_cli(s, tmp_path / "m", capsys)
    assert rc == 2 and "unfinished" in err and "shard 0/3" in err
    assert not (tmp_path / "m").exists()


def test_merge_refuses_shards_missing_the_tail_of_the_input(three_shards, tmp_path, capsys):
    _, s = three_shards
    # the last question of the input removed, whole, from the shard that holds it: no hole, a missing tail
    last = max(
        (
            (r["position"], qid, d)
            for d in s
            for qid, r in jsonl.JsonlStore(d / "scores.jsonl").load(repair=False).items()
        )
    )
    for stage in ("entailment", "scores"):
        f = last[2] / jsonl.STAGE_FILES[stage]
        kept = jsonl.JsonlStore(f).load(repair=False)
        f.write_bytes(
            b"".join(jsonl.encode_record({**r, jsonl.CHUNK_KEY: [k]}) for k, r in kept.items() if k != last[1])
        )
    rc, err = _merge_cli(s, tmp_path / "m", capsys)
    assert rc == 2 and f"positions [{last[0]}]" in err


def test_a_merge_killed_after_writing_config_json_can_be_run_again(three_shards, tmp_path, monkeypatch, capsys):
    _, s = three_shards
    out = tmp_path / "m"
    real = merge.write_files

    def killed(*a, **k):
        raise KeyboardInterrupt  # the merge dies after RunDir.open wrote config.json, before the stage files

    monkeypatch.setattr(merge, "write_files", killed)
    with pytest.raises(KeyboardInterrupt):
        merge.merge_runs(s, out)
    assert (out / "config.json").is_file()
    monkeypatch.setattr(merge, "write_files", real)
    rc, err = _merge_cli(s, out, capsys)
    assert rc == 0, err
    assert (out / "metrics.csv").is_file()


def test_merged_provenance_lists_each_shards_commits_dirt_and_batch_sizes(three_shards, tmp_path):
    config, s = three_shards
    rec = json.loads((s[2] / "config.json").read_text())
    rec["invocations"][0]["git"] = {"commit": "0" * 40, "dirty": True}  # shard 2 ran elsewhere, from a dirty tree
    rec["invocations"][0]["batch_sizes"] = {"entailment": {"batch_size": 3, "chunk": 1}}
    (s[2] / "config.json").write_text(json.dumps(rec))
    out = merge.merge_runs(s, tmp_path / "m")
    merged = json.loads((out / "config.json").read_text())
    entries = merged["provenance"]["merged_from"]
    assert [e["dir"] for e in entries] == [provenance.repo_relative(d) for d in s]
    assert all(not e["dir"].startswith("/") for e in entries)
    assert entries[2]["commits"] == ["0" * 40] and entries[2]["dirty"] is True
    assert entries[2]["batch_sizes"] == [{"entailment": {"batch_size": 3, "chunk": 1}}]
    history = store.run_history(out)
    assert "0" * 40 in history.commits and history.dirty is True


def test_run_merge_keeps_hidden_states_er_and_resumes_without_regenerating(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    gen = fakes.install_fake_generator(monkeypatch, hidden_dim=6)
    fakes.install_fake_dataset(monkeypatch, n=24)
    config = fakes.run_config(n_samples=4, limit=None, n_boot=100)
    full = experiment.run_experiment(config, tmp_path / "full")
    shards = _sharded(config, experiment.run_experiment, tmp_path)
    merged = merge.merge_runs(shards, tmp_path / "merged")
    assert "ER" in set(pd.read_csv(full / "metrics.csv")["method"])
    for f in OUTPUTS:
        assert_same_table(full / f, merged / f)
    assert sorted(p.name for p in (merged / "hidden").iterdir()) == sorted(
        p.name for d in shards for p in (d / "hidden").iterdir()
    )
    log = tmp_path / "calls.log"
    monkeypatch.setenv(store.TEST_CALL_LOG_ENV, str(log))
    loads = gen.constructed
    experiment.run_experiment(config, merged)  # resuming the merged directory recomputes nothing
    assert gen.constructed == loads and not log.exists()
    for f in OUTPUTS:
        assert_same_table(full / f, merged / f)


# --------------------------------------------------------------------------------------------------
# The launch scripts


@pytest.mark.parametrize("script", ["run_per_gpu.sh", "slurm_array.sh"])
def test_scripts_are_valid_bash_with_a_usage_header(script):
    path = SCRIPTS / script
    r = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    head = path.read_text().splitlines()[:40]
    assert head[0] == "#!/usr/bin/env bash" and any("Usage" in ln for ln in head)


def _runner(tmp_path: Path) -> str:
    script = tmp_path / "runner.py"
    script.write_text(fakes.RUNNER_SRC)
    return f"{sys.executable} {script}"


@pytest.mark.slow
def test_run_per_gpu_launches_k_shards_and_merges(tmp_path):
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 12)
    env = {**os.environ, "SHAPLEY": _runner(tmp_path), "NGPUS": "3", "OUT": str(tmp_path / "out")}
    args = ["score-samples", str(inp), "--entailment", "fake:", "--n-boot", "50", "--no-progress"]
    r = subprocess.run(
        ["bash", str(SCRIPTS / "run_per_gpu.sh"), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr
    ref = tmp_path / "ref"
    r = subprocess.run(
        [*_runner(tmp_path).split(), *args, "--output", str(ref)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    for f in OUTPUTS:
        assert_same_table(ref / f, tmp_path / "out" / "merged" / f)
    for i in range(3):  # each shard had its own entailment cache file
        cfg = store.read_config(tmp_path / "out" / "shards" / str(i))
        assert cfg.data.shard == f"{i}/3" and cfg.runtime.entail_cache == str(
            tmp_path / "out" / "cache" / f"shard-{i}.sqlite"
        )


@pytest.mark.slow
def test_slurm_array_submits_k_tasks_then_a_dependent_merge(tmp_path):
    """A stand-in ``sbatch`` runs each submitted job at once (array tasks in turn) and logs its options."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "sbatch.log"
    fake = bin_dir / "sbatch"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> {log}\n'
        'array=""; opts=(); while [[ "$1" == --* ]]; do case "$1" in --array=*) array="${1#--array=}";; esac; '
        'opts+=("$1"); shift; done\n'
        'if [ -n "$array" ]; then for i in $(seq ${array%-*} ${array#*-}); do '
        'SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_JOB_ID=7 bash "$@" >/dev/null || exit 1; done; echo 7; '
        'else bash "$@" >/dev/null || exit 1; echo 8; fi\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 12)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SHAPLEY": _runner(tmp_path),
        "K": "3",
        "OUT": str(tmp_path / "out"),
    }
    args = ["score-samples", str(inp), "--entailment", "fake:", "--n-boot", "50", "--no-progress"]
    r = subprocess.run(
        ["bash", str(SCRIPTS / "slurm_array.sh"), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr
    submitted = log.read_text().splitlines()
    assert len(submitted) == 2 and "--array=0-2" in submitted[0] and "--dependency=afterok:7" in submitted[1]
    assert all((tmp_path / "out" / "merged" / f).is_file() for f in OUTPUTS)
    shutil.rmtree(tmp_path / "out")
