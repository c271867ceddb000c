"""The pipelines end to end with fakes (in process), and resumption after SIGKILL (real subprocess)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

from shapley.pipeline import experiment, store
from tests import fakes
from tests.fakes import make_samples_file

# --------------------------------------------------------------------------------------------------
# Pipelines in process (fake entailment backend)


def test_score_samples_resume_recomputes_nothing(tmp_path, monkeypatch):
    ent = fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 12)
    log = tmp_path / "calls.log"
    monkeypatch.setenv(store.TEST_CALL_LOG_ENV, str(log))
    out = tmp_path / "run"
    experiment.score_samples(fakes.samples_config(inp), out)
    first = (out / "scores.jsonl").read_bytes()
    assert len(log.read_text().splitlines()) == 24  # 12 entail + 12 score
    assert ent.LOADS == ["fake:"]
    experiment.score_samples(fakes.samples_config(inp), out)
    assert len(log.read_text().splitlines()) == 24
    assert ent.LOADS == ["fake:"]  # a complete run never loads the backend again
    assert (out / "scores.jsonl").read_bytes() == first
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["provenance"]["entailment"] == {
        "spec": "fake:",
        "name": "fake:overlap",
        "fingerprint": "fake-overlap-v1",
        "is_nli": False,
    }
    assert cfg["config"]["data"]["sha256"] == store.sha256_file(inp)
    assert len(cfg["invocations"]) == 2


def test_same_seed_same_numbers(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 10)
    a = experiment.score_samples(fakes.samples_config(inp, n_boot=100), tmp_path / "a")
    b = experiment.score_samples(fakes.samples_config(inp, n_boot=100), tmp_path / "b")
    for f in ("scores.jsonl", "scores.csv", "metrics.csv", "skipped.csv"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f


def test_run_experiment_with_fakes_resumes_without_loading_models(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    gen = fakes.install_fake_generator(monkeypatch)
    fakes.install_fake_dataset(monkeypatch)
    out = tmp_path / "run"
    config = fakes.run_config(n_samples=5, limit=6)
    experiment.run_experiment(config, out)
    assert gen.constructed == 1
    for f in (
        "config.json",
        "questions.jsonl",
        "generations.jsonl",
        "entailment.jsonl",
        "scores.jsonl",
        "scores.csv",
        "metrics.csv",
        "skipped.csv",
    ):
        assert (out / f).is_file(), f
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["provenance"]["model"] == {"spec": "fake", "fingerprint": "fake-llm-v1"}
    assert cfg["config"]["scoring"]["correctness_metric"] == "rougeL"

    m = pd.read_csv(out / "metrics.csv")
    assert {"Shap", "SE", "NE", "LNE", "MaxL", "AvgE", "P(T)", "A4C"} <= set(m["method"])
    assert (m["n"] == 6).all()
    experiment.run_experiment(config, out)
    assert gen.constructed == 1  # nothing pending: the model is not loaded
    experiment.run_experiment(fakes.with_limit(config, 8), out)  # more questions: only the new ones are generated
    assert gen.constructed == 2
    assert len((out / "generations.jsonl").read_text().splitlines()) == 8
    assert pd.read_csv(out / "metrics.csv")["n"].max() == 8
    with pytest.raises(ValueError, match=r"'generation.temperature' \(--temperature\) differs"):
        experiment.run_experiment(fakes.run_config(n_samples=5, limit=6, temperature=0.7), out)


# --------------------------------------------------------------------------------------------------
# Resumption after SIGKILL (real subprocess)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n") if path.exists() else []


def _valid_ids(path: Path) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(store.JsonlStore(path).load(repair=False))


def _runner(tmp_path: Path, args: list[str], env_extra: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Command and environment of a subprocess running the CLI with the fake entailment backend."""
    script = tmp_path / "runner.py"
    script.write_text(fakes.RUNNER_SRC)
    env = {k: v for k, v in os.environ.items() if k not in (store.TEST_SLEEP_ENV, store.TEST_CALL_LOG_ENV)}
    env.update({"PYTHONPATH": str(fakes.REPO), **env_extra})
    return [sys.executable, str(script), *args], env


@pytest.mark.parametrize("kill_in", [pytest.param("entailment", marks=pytest.mark.slow), "scores"])
def test_sigkill_resume_equals_uninterrupted_run(tmp_path, kill_in):
    inp = tmp_path / "in.jsonl.gz"
    rows = make_samples_file(inp, 40)
    ids = [r["id"] for r in rows]
    args = ["score-samples", str(inp), "--entailment", "fake:", "--n-boot", "50", "--no-progress"]

    # uninterrupted reference run
    cmd, env = _runner(tmp_path, [*args, "--output", str(tmp_path / "ref")], {})
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr

    # interrupted run: slowed stages, killed once `kill_in` holds some records
    out = tmp_path / "killed"
    log1, log2 = tmp_path / "calls1.log", tmp_path / "calls2.log"
    cmd, env = _runner(
        tmp_path, [*args, "--output", str(out)], {store.TEST_SLEEP_ENV: "0.03", store.TEST_CALL_LOG_ENV: str(log1)}
    )
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    target = out / store.STAGE_FILES[kill_in]
    deadline = time.monotonic() + 90
    need = 18 if kill_in == "entailment" else 8  # entailment: past its first chunk of 16 questions
    while len(_lines(target)) < need and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    # simulate a torn write: cut the last complete line of the stage file in half
    data = target.read_bytes()
    body = data[: data.rstrip(b"\n").rfind(b"\n") + 1]
    last = data[len(body) :]
    torn = json.loads(last) if last.endswith(b"\n") else None
    torn_id = None if torn is None else torn["id"]
    torn_chunk = set() if torn is None else set(torn.get(store.CHUNK_KEY, [torn_id]))
    target.write_bytes(body + last[: len(last) // 2])
    done_entail = set(_valid_ids(out / "entailment.jsonl"))
    done_scores = set(_valid_ids(out / "scores.jsonl"))
    assert 0 < len(done_entail if kill_in == "entailment" else done_scores) < 40
    assert not (out / "metrics.csv").exists()

    # resume
    cmd, env = _runner(tmp_path, [*args, "--output", str(out)], {store.TEST_CALL_LOG_ENV: str(log2)})
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "dropped" in r.stderr and "torn write" in r.stderr  # the torn line was reported

    # every id exactly once, in every stage file, each line verified
    for stage in ("entailment", "scores"):
        lines = [ln for ln in _lines(out / store.STAGE_FILES[stage]) if ln]
        got = [json.loads(ln)["id"] for ln in lines]
        assert sorted(got) == ids and len(set(got)) == 40
        assert store.JsonlStore(out / store.STAGE_FILES[stage]).load(repair=False).keys() == set(ids)
    # identical results to the uninterrupted run
    ref = tmp_path / "ref"
    for stage in ("entailment", "scores"):
        a = store.JsonlStore(ref / store.STAGE_FILES[stage]).load(repair=False)
        b = store.JsonlStore(out / store.STAGE_FILES[stage]).load(repair=False)
        assert a == b
    for f in ("scores.csv", "metrics.csv", "skipped.csv"):
        assert (ref / f).read_bytes() == (out / f).read_bytes(), f
    # nothing valid was recomputed: the resumed process computed exactly the missing questions
    calls = [ln.split("\t") for ln in log2.read_text().splitlines()]
    assert sorted(i for s, i in calls if s == "entail") == sorted(set(ids) - done_entail)
    assert sorted(i for s, i in calls if s == "score") == sorted(set(ids) - done_scores)
    # only the torn record's chunk was computed twice (the chunk is recomputed whole; its log lines may be
    # missing if the kill came right after its write)
    tag = "entail" if kill_in == "entailment" else "score"
    first = [ln.split("\t") for ln in log1.read_text().splitlines()]
    redone = {i for s, i in first if s == tag} & {i for s, i in calls if s == tag}
    assert redone <= torn_chunk
    if torn_id is not None:
        assert torn_id in {i for s, i in calls if s == tag}
