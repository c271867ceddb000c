"""The pipelines end to end with fakes (in process), and resumption after SIGKILL (real subprocess)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import types
import warnings
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from shapley.pipeline.data import datasets as data
from shapley.pipeline.entail import backends as entail
from shapley.pipeline.experiment import pipelines as experiment
from shapley.pipeline.experiment import stages
from shapley.pipeline.generate import generator as generate
from shapley.pipeline.rundir import jsonl, store
from shapley.results import records
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
        "computation": None,  # the fake has no batching rule of its own to pin
        "dtype": None,
        "device_kind": None,
    }
    assert cfg["config"]["data"]["sha256"] == records.sha256_file(inp)
    assert len(cfg["invocations"]) == 2


def test_run_experiment_with_fakes_resumes_without_loading_models(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    gen = fakes.install_fake_generator(monkeypatch)
    fakes.install_fake_dataset(monkeypatch)
    out = tmp_path / "run"
    config = fakes.run_config(n_samples=5, limit=6)
    experiment.run_experiment(config, out)
    assert gen.constructed == 1  # (every file a run writes: test_full_disk.py)
    cfg = json.loads((out / "config.json").read_text())
    model = {"spec": "fake", "fingerprint": "fake-llm-v1", "dtype": None, "device_kind": None}
    assert cfg["provenance"]["model"] == model
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
        return list(jsonl.JsonlStore(path).load(repair=False))


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
    target = out / jsonl.STAGE_FILES[kill_in]
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
    torn_chunk = set() if torn is None else set(torn.get(jsonl.CHUNK_KEY, [torn_id]))
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
        lines = [ln for ln in _lines(out / jsonl.STAGE_FILES[stage]) if ln]
        got = [json.loads(ln)["id"] for ln in lines]
        assert sorted(got) == ids and len(set(got)) == 40
        assert jsonl.JsonlStore(out / jsonl.STAGE_FILES[stage]).load(repair=False).keys() == set(ids)
    # identical results to the uninterrupted run
    ref = tmp_path / "ref"
    for stage in ("entailment", "scores"):
        a = jsonl.JsonlStore(ref / jsonl.STAGE_FILES[stage]).load(repair=False)
        b = jsonl.JsonlStore(out / jsonl.STAGE_FILES[stage]).load(repair=False)
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


# --------------------------------------------------------------------------------------------------
# Issue 12 #4: a chunk is stored whole, and a redone record invalidates what was computed from it


def _composition_compute(chunk):
    """Records whose numbers depend on the chunk they were computed in, like real batched models."""
    offset = 1e-6 * sum(int(c[1:]) for c in chunk)
    return [{"id": c, "v": int(c[1:]) + offset} for c in chunk]


def test_resume_after_a_torn_chunk_equals_the_uninterrupted_stage(tmp_path):
    items = [f"k{i}" for i in range(9)]
    ref = jsonl.JsonlStore(tmp_path / "ref.jsonl", ("v",))
    ref.load()
    run_stage = stages.run_stage
    expected = dict(run_stage(ref, "st", items, _composition_compute, key=str, chunk_size=3, progress=False))
    p = tmp_path / "s.jsonl"
    s = jsonl.JsonlStore(p, ("v",))
    s.load()
    run_stage(s, "st", items, _composition_compute, key=str, chunk_size=3, progress=False)
    lines = p.read_bytes().split(b"\n")[:-1]
    p.write_bytes(b"\n".join(lines[:4]) + b"\n")  # killed after the first line of the second chunk
    with pytest.warns(jsonl.CorruptRecordWarning, match="not stored whole"):
        s = jsonl.JsonlStore(p, ("v",))
        s.load()
    assert list(s.records) == ["k0", "k1", "k2"]
    got = run_stage(s, "st", items, _composition_compute, key=str, chunk_size=3, progress=False)
    assert got == expected  # the second chunk was recomputed whole, with the same neighbours


class _BatchDependentGenerator(fakes.FakeGenerator):
    """Log-probs move by 1e-6 with the composition of the decoding batch, as padding does in a real model."""

    def generate(self, records):
        out = super().generate(records)
        shift = 1e-6 * sum(int(r.id[1:]) for r in records)
        for g in out:
            g.sample_token_logprobs = [[x + shift for x in lp] for lp in g.sample_token_logprobs]
        return out


def _chunked_run_config(**kw):
    config = fakes.run_config(n_samples=5, limit=8, **kw)
    return config.replace(runtime=replace(config.runtime, batch_size=24))  # 24 // (1 + 5) = 4 questions a chunk


def test_run_resume_inside_a_generation_chunk_is_exact(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_dataset(monkeypatch)
    monkeypatch.setattr(generate, "Generator", _BatchDependentGenerator)
    config = _chunked_run_config()
    ref = experiment.run_experiment(config, tmp_path / "ref")
    out = experiment.run_experiment(config, tmp_path / "run")
    gens = out / "generations.jsonl"
    lines = gens.read_bytes().split(b"\n")[:-1]
    assert [json.loads(x)["id"] for x in lines] == [f"q{i}" for i in range(8)]
    gens.write_bytes(b"\n".join(lines[:6]) + b"\n")  # a kill between the records of the chunk q4..q7
    for f in ("entailment.jsonl", "scores.jsonl"):
        (out / f).unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        experiment.run_experiment(config, out)
    for f in ("generations.jsonl", "entailment.jsonl", "scores.jsonl"):
        assert jsonl.JsonlStore(ref / f).load(repair=False) == jsonl.JsonlStore(out / f).load(repair=False), f
    assert (ref / "metrics.csv").read_bytes() == (out / "metrics.csv").read_bytes()
    assert any("not stored whole" in str(w.message) for w in caught)


def test_a_redone_generation_invalidates_its_entailment_and_scores(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_generator(monkeypatch)
    fakes.install_fake_dataset(monkeypatch)
    config = fakes.run_config(n_samples=4, limit=6)
    out = experiment.run_experiment(config, tmp_path / "run")
    gens = out / "generations.jsonl"
    recs = [json.loads(x) for x in gens.read_text().splitlines()]
    g = next(r for r in recs if r["id"] == "q1")
    g["samples"] = ["Paris", "Paris", "Paris", "Paris"]  # as if q1 had been generated again, differently
    g["answer"] = "Paris"
    gens.write_bytes(b"".join(jsonl.encode_record(r) for r in recs))  # valid checksums: a redone record
    log = tmp_path / "calls.log"
    monkeypatch.setenv(store.TEST_CALL_LOG_ENV, str(log))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        experiment.run_experiment(config, out)
    assert log.read_text().splitlines() == ["entail\tq1", "score\tq1"]
    ent = jsonl.JsonlStore(out / "entailment.jsonl").load()["q1"]
    assert ent["entail"] == fakes.overlap_matrix(g["samples"]).tolist()
    sc = jsonl.JsonlStore(out / "scores.jsonl").load()["q1"]
    assert sc["answer"] == "Paris" and sc["diagnostics"]["n_clusters"] == 1
    assert any("inputs that changed" in str(w.message) for w in caught)
    log.unlink()
    experiment.run_experiment(config, out)  # now consistent: nothing is recomputed
    assert not log.exists()


# --------------------------------------------------------------------------------------------------
# Issue 12 #3, #5: batch sizes and the questions the outputs cover, in the run's record


def test_batch_sizes_are_recorded_per_call(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 12)
    out = tmp_path / "run"
    config = fakes.with_limit(fakes.samples_config(inp), 6)
    experiment.score_samples(config, out)
    inv = json.loads((out / "config.json").read_text())["invocations"]
    assert inv[0]["batch_sizes"] == {"entailment": {"batch_size": 32, "chunk": 32}}  # --batch-size 32 questions
    other = fakes.with_limit(config.replace(runtime=replace(config.runtime, batch_size=4)), 12)
    experiment.score_samples(other, out)
    inv = json.loads((out / "config.json").read_text())["invocations"]
    assert inv[1]["batch_sizes"] == {"entailment": {"batch_size": 4, "chunk": 4}}
    # a model that keeps the batch size it used (chosen from free memory) records that one
    model = stages.EntailmentModel(other)
    model._model = types.SimpleNamespace(stats={"batch_size": 5})
    recorded: dict = {}
    run = types.SimpleNamespace(record_batch_sizes=lambda stage, sizes: recorded.update({stage: sizes}))
    model.record_batch_sizes(run, "entailment", 7)
    assert recorded == {"entailment": {"batch_size": 5, "chunk": 7}}


def test_run_records_generation_batch_sizes(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_generator(monkeypatch)
    fakes.install_fake_dataset(monkeypatch)
    out = experiment.run_experiment(_chunked_run_config(), tmp_path / "run")
    inv = json.loads((out / "config.json").read_text())["invocations"]
    assert inv[0]["batch_sizes"]["generation"] == {"batch_size": 24, "chunk": 4}
    assert inv[0]["batch_sizes"]["entailment"] == {"batch_size": 24, "chunk": 24}


def test_a_smaller_limit_on_a_finished_run_is_noted_and_recorded(tmp_path, monkeypatch, capsys):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 6)
    out = tmp_path / "run"
    experiment.score_samples(fakes.samples_config(inp), out)
    rec = json.loads((out / "config.json").read_text())
    assert rec["outputs"] == {
        "n_questions": 6,
        "stored_questions": 6,
        "limit": None,
        "invocation": 0,
        "input_questions": 6,
    }
    capsys.readouterr()
    experiment.score_samples(fakes.with_limit(fakes.samples_config(inp), 3), out)
    err = capsys.readouterr().err
    assert "now describe this call's 3 questions (--limit 3), not all 6 stored" in err
    rec = json.loads((out / "config.json").read_text())
    assert rec["outputs"] == {
        "n_questions": 3,
        "stored_questions": 6,
        "limit": 3,
        "invocation": 1,
        "input_questions": 3,
    }
    assert rec["config"]["data"]["limit"] == 3 and rec["invocations"][1]["notes"]
    assert len(pd.read_csv(out / "scores.csv")) == 3


# --------------------------------------------------------------------------------------------------
# Issue 9 C: no dataset text in the run directory


def test_questions_are_stored_as_ids_and_fingerprints(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_generator(monkeypatch)
    fakes.install_fake_dataset(monkeypatch)
    config = fakes.run_config(n_samples=3, limit=4)
    out = experiment.run_experiment(config, tmp_path / "run")
    qs = jsonl.JsonlStore(out / "questions.jsonl").load()
    assert list(qs) == ["q0", "q1", "q2", "q3"] and all(set(r) == {"id", "sha256"} for r in qs.values())
    for f in ("questions.jsonl", "generations.jsonl", "entailment.jsonl", "scores.jsonl", "config.json"):
        assert "Capital 1?" not in (out / f).read_text(), f  # the question text is not stored
    # a question that changed is refused
    items = data.dataset_records("triviaqa", limit=4)
    qfile = out / "questions.jsonl"
    qfile.write_bytes(b"".join(jsonl.encode_record({"id": r.id, "sha256": "other"}) for r in items))
    with pytest.raises(ValueError, match="question 'q0' differs from the stored one"):
        experiment.run_experiment(config, out)


# --------------------------------------------------------------------------------------------------
# Issue 12 #10, #11: failures detectable up front leave nothing behind


@pytest.mark.parametrize("missing", ["generator", "entailment"])
def test_run_with_a_model_that_cannot_load_creates_nothing(tmp_path, monkeypatch, missing):
    """The entailment model is checked first (the default DeBERTa cannot load offline), before the slower
    generator loads; either failing leaves nothing behind."""
    fakes.install_fake_dataset(monkeypatch)

    def unavailable(*a, **k):
        raise OSError(f"the {missing} model is not available")

    def not_to_be_loaded(*a, **k):
        raise AssertionError("the generator was loaded before the entailment model was checked")

    if missing == "generator":
        fakes.install_fake_entail(monkeypatch)
    else:
        monkeypatch.setattr(entail, "load_backend", unavailable)
    monkeypatch.setattr(generate, "Generator", unavailable if missing == "generator" else not_to_be_loaded)
    with pytest.raises(OSError, match="not available"):
        experiment.run_experiment(fakes.run_config(), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_run_with_undecodable_question_text_creates_nothing(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_generator(monkeypatch)
    fakes.install_fake_dataset(monkeypatch)
    real = data.dataset_records

    def with_surrogate(name, **kw):
        recs = real(name, **kw)
        return [recs[0], replace(recs[1], question="bad \ud800 here"), *recs[2:]]

    monkeypatch.setattr(data, "dataset_records", with_surrogate)
    with pytest.raises(ValueError, match=r"question 'q1' holds text that cannot be encoded as UTF-8"):
        experiment.run_experiment(fakes.run_config(), tmp_path / "run")
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------------------------------
# Issue 12 #18: quiet model loading, no numpy overflow warnings


def test_no_progress_silences_the_loading_bar(tmp_path, monkeypatch, capfd):
    from transformers.utils import logging as hf_logging

    ent = fakes.install_fake_entail(monkeypatch)

    def load_with_bar(spec, **kw):
        for _ in hf_logging.tqdm(range(3), desc="Loading weights"):
            pass
        return ent.load_backend(spec, **kw)

    monkeypatch.setattr(entail, "load_backend", load_with_bar)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 4)
    was = hf_logging.is_progress_bar_enabled()
    experiment.score_samples(fakes.samples_config(inp), tmp_path / "run")  # progress=False
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled() == was  # restored afterwards


def test_huge_log_probs_give_no_numpy_warning(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    rows = make_samples_file(tmp_path / "base.jsonl", 4, n_samples=3)
    inp = tmp_path / "lp.jsonl"
    with open(inp, "w", encoding="utf-8") as f:
        for r in rows:
            r["sample_logprobs"] = [[-1e308, -1e308], [-1.0], [-2.0]]
            f.write(json.dumps(r) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = experiment.score_samples(fakes.samples_config(inp), tmp_path / "run")
    s = pd.read_csv(out / "skipped.csv")
    assert "SE" in set(s["method"])  # skipped, with its reason, instead of a leaked warning


# --------------------------------------------------------------------------------------------------
# Fingerprints cover every setting that changes a number (issue 16, item 5)


def _cli_args(inp: Path, out: Path) -> list[str]:
    return ["score-samples", str(inp), "--output", str(out), "--entailment", "fake:", "--n-boot", "20", "--no-progress"]


def _beta_run(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    from shapley import cli

    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 8)
    out = tmp_path / "run"
    assert cli.main([*_cli_args(inp, out), "--beta", "0.3"]) == 0
    return inp, out


def test_score_records_are_recomputed_when_config_json_was_edited_to_other_scoring_settings(tmp_path, monkeypatch):
    inp, out = _beta_run(tmp_path, monkeypatch)
    rec = json.loads((out / "config.json").read_text())
    rec["config"]["scoring"]["beta"] = 0.5  # hand-edited (or damaged) to the default
    (out / "config.json").write_text(json.dumps(rec))
    from shapley import cli

    assert cli.main(_cli_args(inp, out)) == 0
    fresh = tmp_path / "fresh"
    assert cli.main(_cli_args(inp, fresh)) == 0
    a = jsonl.JsonlStore(out / "scores.jsonl").load(repair=False)
    b = jsonl.JsonlStore(fresh / "scores.jsonl").load(repair=False)
    assert {k: r["scores"]["Shap"] for k, r in a.items()} == {k: r["scores"]["Shap"] for k, r in b.items()}
    assert (out / "scores.csv").read_bytes() == (fresh / "scores.csv").read_bytes()


@pytest.mark.parametrize(("key", "stored"), [("dtype", "bfloat16"), ("device_kind", "cuda")])
def test_a_resume_in_another_dtype_or_on_another_device_kind_is_refused(tmp_path, monkeypatch, key, stored):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 6)
    out = experiment.score_samples(fakes.samples_config(inp), tmp_path / "run")
    rec = json.loads((out / "config.json").read_text())
    rec["provenance"]["entailment"][key] = stored
    (out / "config.json").write_text(json.dumps(rec))
    (out / "entailment.jsonl").write_bytes(b"".join((out / "entailment.jsonl").read_bytes().splitlines(True)[:-1]))
    # the 5 lines kept of the one chunk of 6 are dropped first, each with its warning (expected: asserted here)
    with pytest.warns(jsonl.CorruptRecordWarning, match="not stored whole") as dropped:
        with pytest.raises(ValueError, match=f"entailment model's {key.replace('_', ' ')} changed"):
            experiment.score_samples(fakes.samples_config(inp), out)
    assert len(dropped) == 5


def test_compute_kind_reads_dtype_and_device_of_a_torch_model():
    torch = pytest.importorskip("torch")
    model = types.SimpleNamespace(model=torch.nn.Linear(2, 2).to(torch.bfloat16))
    assert stages.compute_kind(model) == {"dtype": "bfloat16", "device_kind": "cpu"}
    assert stages.compute_kind(types.SimpleNamespace()) == {"dtype": None, "device_kind": None}


# --------------------------------------------------------------------------------------------------
# Damaged hidden-state files, full disks, links and undecodable paths (issue 17)


def _hidden_run(tmp_path: Path, monkeypatch) -> tuple[Path, object, type]:
    fakes.install_fake_entail(monkeypatch)
    gen = fakes.install_fake_generator(monkeypatch, hidden_dim=6)
    fakes.install_fake_dataset(monkeypatch, n=12)
    config = fakes.run_config(n_samples=3, limit=None, n_boot=20)
    out = experiment.run_experiment(config, tmp_path / "run")
    return out, config, gen


def _damage_and_resume(out: Path, config, damage) -> list[str]:
    files = sorted((out / "hidden").iterdir())
    damage(files[0])
    before = (out / "metrics.csv").read_bytes()
    with pytest.warns(jsonl.CorruptRecordWarning, match="hidden-state file"):
        experiment.run_experiment(config, out)
    assert (out / "metrics.csv").read_bytes() == before  # regenerated (the fake is deterministic): same numbers
    return sorted(p.name for p in (out / "hidden").iterdir())


def _truncate(f: Path) -> None:
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _reshape(f: Path) -> None:
    import numpy as np

    with np.load(f) as z:
        ids, hidden = z["ids"], z["hidden"]
    np.savez(f.with_suffix(""), ids=ids, hidden=hidden[:, :, None])  # (m, d, 1): same bytes and checksum


@pytest.mark.parametrize("damage", [_truncate, _reshape])
def test_a_truncated_or_reshaped_hidden_state_file_is_a_damaged_record_recomputed(tmp_path, monkeypatch, damage):
    out, config, _ = _hidden_run(tmp_path, monkeypatch)
    _damage_and_resume(out, config, damage)
    assert "ER" in set(pd.read_csv(out / "metrics.csv")["method"])


def test_a_full_disk_on_the_first_config_json_leaves_nothing_and_the_command_can_be_rerun(tmp_path, monkeypatch):
    import errno

    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 4)
    out = tmp_path / "run"
    real = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store.os, "write", full)
    with pytest.raises(OSError, match="No space"):
        experiment.score_samples(fakes.samples_config(inp), out)
    monkeypatch.setattr(store.os, "write", real)
    assert not out.exists()  # neither .config.json.tmp-PID nor .lock, nor the directory it created
    out.mkdir()
    (out / f".config.json.tmp-{os.getpid() + 1}").write_text("{")  # left by an older version
    (out / ".lock").write_text("")
    experiment.score_samples(fakes.samples_config(inp), out)  # only our own temporaries: counts as empty
    assert (out / "metrics.csv").is_file()
    assert not list(out.glob(".*.tmp-*"))


def test_a_resume_refuses_a_stage_file_linked_outside_the_run(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 4)
    out = experiment.score_samples(fakes.samples_config(inp), tmp_path / "run")
    outside = tmp_path / "elsewhere.jsonl"
    (out / "scores.jsonl").rename(outside)
    (out / "scores.jsonl").symlink_to(outside)
    before = outside.read_bytes()
    with pytest.raises(ValueError, match="symbolic link.*outside the run directory"):
        experiment.score_samples(fakes.samples_config(inp), out)
    assert outside.read_bytes() == before


def test_an_output_path_of_invalid_utf8_is_named_and_nothing_is_left(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 4)
    bad = tmp_path / os.fsdecode(b"run-\xff")
    with pytest.raises(ValueError, match=r"output directory .*run-\\udcff.*not valid UTF-8"):
        experiment.score_samples(fakes.samples_config(inp), bad)
    assert not bad.exists()


# An unreadable hidden/ (issue 38, 4): refused before anything is discarded, naming the folder


@pytest.mark.parametrize("kind", ["dangling link", "file", "link outside", "unlistable"])
def test_an_unreadable_hidden_folder_is_refused_and_every_generation_record_kept(tmp_path, monkeypatch, kind):
    import shutil

    out, config, _ = _hidden_run(tmp_path, monkeypatch)
    hidden = out / "hidden"
    if kind == "unlistable":
        real = os.listdir

        def listdir(p="."):
            if Path(p) == hidden:
                raise PermissionError(13, "Permission denied")
            return real(p)

        monkeypatch.setattr(os, "listdir", listdir)
    else:
        moved = tmp_path / "elsewhere"
        shutil.move(hidden, moved)
        if kind == "dangling link":
            hidden.symlink_to(tmp_path / "not-mounted")
        elif kind == "file":
            hidden.write_text("")
        else:
            hidden.symlink_to(moved)
    before = (out / "generations.jsonl").read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error", jsonl.CorruptRecordWarning)  # nothing is declared damaged
        with pytest.raises(ValueError, match=rf"{hidden}.*(does not exist|not a folder|outside the run|cannot read)"):
            experiment.run_experiment(config, out)
    assert (out / "generations.jsonl").read_bytes() == before


def test_taking_the_lock_removes_the_temporaries_of_killed_writes_and_nothing_else(tmp_path, monkeypatch):
    """Issue 38, 7: a killed write leaves ``.<name>.tmp-<pid>``; every later taking of the run's lock removes them
    (run directory and hidden/ only; a link is removed itself, never followed; other names are kept)."""
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 4)
    out = experiment.score_samples(fakes.samples_config(inp), tmp_path / "run")
    (out / "hidden").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    stale = [out / ".generations.jsonl.tmp-99999", out / ".config.json.tmp-1", out / "hidden" / ".ab.npz.tmp-7"]
    for f in stale:
        f.write_text("partial")
    (out / ".link.tmp-5").symlink_to(outside / "keep.txt")
    (out / ".dir.tmp-6").symlink_to(outside)
    kept = [out / ".notes.tmp-abc", out / "notes.tmp-5", outside / "keep.txt", outside / ".x.tmp-3"]
    for f in kept[:2] + kept[3:]:
        f.write_text("mine")
    (out / ".folder.tmp-8").mkdir()
    experiment.score_samples(fakes.samples_config(inp), out)
    assert not any(os.path.lexists(f) for f in [*stale, out / ".link.tmp-5", out / ".dir.tmp-6"])
    assert all(f.exists() for f in kept) and (out / ".folder.tmp-8").is_dir()
    assert (out / ".lock").exists()


# Generation records tied to the generation settings (issue 38, 3)


def _edit_generation_settings(out: Path, config, **changes):
    rec = json.loads((out / "config.json").read_text())
    rec["config"]["generation"].update(changes)  # hand-edited; the rerun passes the matching flags
    (out / "config.json").write_text(json.dumps(rec))
    return config.replace(generation=replace(config.generation, **changes))


def _generations(out: Path) -> dict[str, dict]:
    return jsonl.JsonlStore(out / "generations.jsonl").load(repair=False)


def test_generations_of_other_settings_are_generated_again_after_config_json_was_edited(tmp_path, monkeypatch):
    out, config, _ = _hidden_run(tmp_path, monkeypatch)
    edited = _edit_generation_settings(out, config, n_samples=5, temperature=0.1, max_new_tokens=8)
    with pytest.warns(jsonl.StaleRecordWarning, match="generation settings"):
        experiment.run_experiment(edited, out)
    gens = _generations(out)
    assert gens and all(len(g["samples"]) == 5 for g in gens.values())
    fresh = experiment.run_experiment(edited, tmp_path / "fresh")
    assert (out / "scores.csv").read_bytes() == (fresh / "scores.csv").read_bytes()
    # the temperature alone (not visible in a record) is caught by the records' settings fingerprint
    again = _edit_generation_settings(out, edited, temperature=0.7)
    with pytest.warns(jsonl.StaleRecordWarning, match="generation settings"):
        experiment.run_experiment(again, out)
    assert len({g["settings_sha256"] for g in _generations(out).values()}) == 1


def test_generation_records_of_an_older_version_are_kept(tmp_path, monkeypatch):
    """Records without the settings fingerprint (the committed runs') are kept: they belong to config.json."""
    out, config, _ = _hidden_run(tmp_path, monkeypatch)
    lines = []
    for line in (out / "generations.jsonl").read_text().splitlines():
        rec = json.loads(line)
        rec.pop("settings_sha256")
        rec.pop("_sha256")
        lines.append(jsonl.encode_record(rec).decode())
    (out / "generations.jsonl").write_text("".join(lines))
    before = (out / "generations.jsonl").read_bytes()
    with warnings.catch_warnings():  # (entailment follows the rewritten records' checksums: recomputed, same numbers)
        warnings.simplefilter("ignore", jsonl.StaleRecordWarning)
        warnings.filterwarnings("error", ".*generation settings", jsonl.StaleRecordWarning)
        experiment.run_experiment(config, out)
    assert (out / "generations.jsonl").read_bytes() == before
