"""Run directories: checksummed append-only JSON lines, verification and repair on resume, provenance,
config refusal, score-samples input validation, and resumption after SIGKILL."""

from __future__ import annotations

import gzip
import json
import math
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

from shapley import runs

REPO = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------------------------------
# A cheap deterministic entailment backend (token overlap), installed as the module shapley.entail.

FAKE_BACKEND_SRC = r"""
import re, types, sys
import numpy as np

def _overlap_matrix(samples):
    toks = [set(re.findall(r"\w+", s.lower())) for s in samples]
    n = len(samples)
    P = np.eye(n)
    for i in range(n):
        for j in range(n):
            if i != j:
                P[i, j] = len(toks[i] & toks[j]) / len(toks[j]) if toks[j] else float(not toks[i])
    return P

class FakeBackend:
    name = "fake:overlap"
    fingerprint = "fake-overlap-v1"
    is_nli = False
    def __init__(self, spec):
        self.spec = spec
    def score(self, items, *, with_question=False):
        out = []
        for q, answers in items:
            P = _overlap_matrix([(q + " " + a) if with_question else a for a in answers])
            out.append(types.SimpleNamespace(entail=P, contradict=0.5 * (1.0 - P)))
        return out

LOADS = []
def load_backend(spec, *, device=None, batch_size=32, cache=True):
    LOADS.append(spec)
    return FakeBackend(spec)

def install():
    mod = types.ModuleType("shapley.entail")
    mod.load_backend = load_backend
    mod.LOADS = LOADS
    sys.modules["shapley.entail"] = mod
    return mod
"""


def install_fake_entail(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    ns: dict = {}
    exec(FAKE_BACKEND_SRC, ns)  # noqa: S102 - test helper shared with the subprocess runner
    mod = types.ModuleType("shapley.entail")
    mod.load_backend = ns["load_backend"]
    mod.LOADS = ns["LOADS"]
    monkeypatch.setitem(sys.modules, "shapley.entail", mod)
    return mod


RUNNER_SRC = (
    "import sys\n"
    f"sys.path.insert(0, {str(REPO)!r})\n" + FAKE_BACKEND_SRC + "\ninstall()\n"
    "from shapley.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def make_samples_file(path: Path, n_questions: int = 40, n_samples: int = 6, seed: int = 0, **extra) -> list[dict]:
    rng = np.random.default_rng(seed)
    vocab = ["Paris", "Rome", "Mozart", "Beethoven", "the capital", "of France", "Vienna", "1791", "Zürich", "東京"]
    rows = []
    for q in range(n_questions):
        ref = vocab[q % len(vocab)]
        k = int(rng.integers(1, 4))
        pool = [ref] + [str(w) for w in rng.choice(vocab, size=k)]
        samples = [" ".join(rng.choice(pool, size=int(rng.integers(1, 3)))) for _ in range(n_samples)]
        rows.append({"id": f"q{q:03d}", "question": f"Question {q}?", "references": [ref], "samples": samples, **extra})
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return rows


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
    settings = {"command": "x", "beta": 0.5, "limit": 10, "methods": ["Shap"]}
    with runs.RunDir.open(d, settings, argv=["prog", "--beta", "0.5"]) as run:
        assert not run.resumed
        cfg = json.loads((d / "config.json").read_text())
        assert cfg["settings"] == settings
        prov = cfg["provenance"]
        assert set(prov["versions"]) == set(runs.VERSIONED_PACKAGES)
        assert prov["versions"]["numpy"] == np.__version__
        assert {"commit", "dirty"} <= set(prov["git"])
        assert "cpu" in prov["device"] and prov["command_line"] == "prog --beta 0.5"
        with pytest.raises(RuntimeError, match="in use"):
            runs.RunDir.open(d, settings)
        run.record_fingerprint("entailment", {"spec": "s", "fingerprint": "abc"})
        with pytest.raises(ValueError, match="fingerprint changed"):
            run.record_fingerprint("entailment", {"spec": "s", "fingerprint": "xyz"})
    with pytest.raises(ValueError, match="'beta' differs"):
        runs.RunDir.open(d, {**settings, "beta": 0.4})
    with pytest.raises(ValueError, match="'methods' differs"):
        runs.check_resumable(d, {**settings, "methods": ["Shap", "SE"]})
    with runs.RunDir.open(d, {**settings, "limit": 20}) as run:  # limit does not affect results
        assert run.resumed
        inv = json.loads((d / "config.json").read_text())["invocations"]
        assert len(inv) == 2 and inv[1]["changed_settings"] == {"limit": [10, 20]}
    other = tmp_path / "other"
    other.mkdir()
    (other / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        runs.RunDir.open(other, settings)


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

    out = runs.run_stage(store, "st", ["a", "b", "c"], compute, key=str, chunk_size=2, progress=False)
    assert seen == ["a", "c"] and list(out) == ["b", "a", "c"]
    assert log.read_text() == "st\ta\nst\tc\n"
    runs.run_stage(store, "st", ["a", "b", "c"], compute, key=str, progress=False)
    assert seen == ["a", "c"]


# --------------------------------------------------------------------------------------------------
# score-samples input


def test_read_samples_file_validation(tmp_path):
    p = tmp_path / "in.jsonl"
    good = {"id": 1, "question": "Q?", "references": ["A"], "samples": ["A", "B"]}
    p.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "id": 2}) + "\n")
    items = runs.read_samples_file(p)
    assert [i.id for i in items] == ["1", "2"] and items[0].answer == "A"
    cases = [
        ({"question": "Q?", "references": ["A"], "samples": ["A"]}, "field 'id'"),
        ({"id": 3, "references": ["A"], "samples": ["A"]}, "field 'question'"),
        ({"id": 3, "question": "Q", "references": ["A"]}, "field 'samples'"),
        ({"id": 3, "question": "Q", "samples": ["A"]}, "field 'references'"),
        ({"id": 3, "question": "Q", "references": [], "samples": ["A"]}, "'references' is empty"),
        ({"id": 3, "question": "Q", "references": ["A"], "samples": []}, "'samples' is empty"),
        ({"id": 3, "question": "Q", "references": ["A"], "samples": ["A", 5]}, "'samples' must be a list"),
        (
            {"id": 3, "question": "Q", "references": ["A"], "samples": ["A"], "sample_logprobs": [[-1], [-2]]},
            "sample_logprobs",
        ),
        ({"id": 1, "question": "Q", "references": ["A"], "samples": ["A"]}, "duplicate id '1'"),
    ]
    for row, msg in cases:
        p.write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
        with pytest.raises(ValueError, match="line 2") as e:
            runs.read_samples_file(p)
        assert msg in str(e.value), (msg, str(e.value))
    p.write_text(json.dumps(good) + "\n{oops\n")
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        runs.read_samples_file(p)


def test_read_samples_file_layouts_gz_and_truncation(tmp_path):
    p = tmp_path / "in.jsonl.gz"
    uq = {
        "id": "t1",
        "question": "Q?",
        "answer": "Botswana",
        "samples": [" Botswana\n", ".. x\n", " Namibia\n"],
        "samples_cleaned": [" Botswana", "", " Namibia"],
    }
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write(json.dumps(uq) + "\n")
    (it,) = runs.read_samples_file(p)
    assert it.references == ["Botswana"] and it.samples == ["Botswana", "", "Namibia"] and it.answer == "Botswana"
    (it,) = runs.read_samples_file(p, n_samples=2)
    assert it.samples == ["Botswana", ""]
    with pytest.raises(ValueError, match="fewer than --n-samples 5"):
        runs.read_samples_file(p, n_samples=5)
    rows = make_samples_file(tmp_path / "many.jsonl", 10)
    assert [i.id for i in runs.read_samples_file(tmp_path / "many.jsonl", limit=3)] == [r["id"] for r in rows[:3]]


# --------------------------------------------------------------------------------------------------
# Pipelines in process (fake entailment backend)


def test_score_samples_resume_recomputes_nothing(tmp_path, monkeypatch):
    ent = install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 12)
    log = tmp_path / "calls.log"
    monkeypatch.setenv(runs.TEST_CALL_LOG_ENV, str(log))
    out = tmp_path / "run"
    runs.score_samples(inp, output=out, entailment="fake:", progress=False, n_boot=50)
    first = (out / "scores.jsonl").read_bytes()
    assert len(log.read_text().splitlines()) == 24  # 12 entail + 12 score
    assert ent.LOADS == ["fake:"]
    runs.score_samples(inp, output=out, entailment="fake:", progress=False, n_boot=50)
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
    assert cfg["settings"]["input_sha256"] == runs.sha256_file(inp)
    assert len(cfg["invocations"]) == 2


def test_same_seed_same_numbers(tmp_path, monkeypatch):
    install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    make_samples_file(inp, 10)
    a = runs.score_samples(inp, output=tmp_path / "a", entailment="fake:", progress=False, n_boot=100)
    b = runs.score_samples(inp, output=tmp_path / "b", entailment="fake:", progress=False, n_boot=100)
    for f in ("scores.jsonl", "scores.csv", "metrics.csv", "skipped.csv"):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f


class _FakeGenerationModule(types.ModuleType):
    """Stands in for shapley.generate: deterministic samples from the reference, counts model loads."""

    def __init__(self) -> None:
        super().__init__("shapley.generate")
        self.constructed = 0
        mod = self

        class GenerationConfig:
            def __init__(self, **kw):
                self.__dict__.update(kw)

        class Generator:
            fingerprint = "fake-llm-v1"

            def __init__(self, spec, config):
                mod.constructed += 1
                self.config = config

            def generate(self, records):
                from shapley.records import Generation

                out = []
                for r in records:
                    rng = np.random.default_rng([self.config.seed, int(r.id[1:])])
                    pool = [r.references[0], "Rome", "Vienna"]
                    s = [str(rng.choice(pool)) for _ in range(self.config.n_samples)]
                    lp = [list(-rng.uniform(0.01, 1, size=2)) for _ in s]
                    out.append(
                        Generation(
                            id=r.id,
                            samples=s,
                            answer=s[0],
                            sample_token_logprobs=lp,
                            sample_token_entropies=lp,
                            answer_token_logprobs=lp[0],
                            answer_token_entropies=[0.5, 0.1],
                            p_true=float(rng.random()),
                            a4c_text=f"{int(rng.integers(0, 100))}%",
                        )
                    )
                return out

        self.GenerationConfig = GenerationConfig
        self.Generator = Generator


def _fake_dataset(monkeypatch, n=10):
    from shapley import data
    from shapley.records import QARecord

    def load_dataset(name, *, limit=None, n_shots=5, seed=0, source="auto", path=None):
        recs = [
            QARecord(
                id=f"q{i}",
                dataset=name,
                question=f"Capital {i}?",
                references=(["Paris", "Rome"][i % 2],),
                prompt=f"Q: Capital {i}?\nA:",
            )
            for i in range(n)
        ]
        return recs[:limit]

    monkeypatch.setattr(data, "load_dataset", load_dataset)
    monkeypatch.setattr(data, "local_path", lambda name, path=None: None)


def test_run_experiment_with_fakes_resumes_without_loading_models(tmp_path, monkeypatch):
    install_fake_entail(monkeypatch)
    gen = _FakeGenerationModule()
    monkeypatch.setitem(sys.modules, "shapley.generate", gen)
    _fake_dataset(monkeypatch)
    out = tmp_path / "run"
    kw = dict(
        dataset="triviaqa",
        output=out,
        model="fake",
        entailment="fake:",
        n_samples=5,
        limit=6,
        progress=False,
        n_boot=50,
    )
    runs.run_experiment(**kw)
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
    assert cfg["settings"]["correctness_metric"] == "rougeL"
    import pandas as pd

    m = pd.read_csv(out / "metrics.csv")
    assert {"Shap", "SE", "NE", "LNE", "MaxL", "AvgE", "P(T)", "A4C"} <= set(m["method"])
    assert (m["n"] == 6).all()
    runs.run_experiment(**kw)
    assert gen.constructed == 1  # nothing pending: the model is not loaded
    runs.run_experiment(**{**kw, "limit": 8})  # more questions: only the new ones are generated
    assert gen.constructed == 2
    assert len((out / "generations.jsonl").read_text().splitlines()) == 8
    assert pd.read_csv(out / "metrics.csv")["n"].max() == 8
    with pytest.raises(ValueError, match="'temperature' differs"):
        runs.run_experiment(**{**kw, "temperature": 0.7})


# --------------------------------------------------------------------------------------------------
# Resumption after SIGKILL (real subprocess)


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n") if path.exists() else []


def _valid_ids(path: Path) -> list[str]:
    store = runs.JsonlStore(path)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(store.load(repair=False))


def _runner(tmp_path: Path, args: list[str], env_extra: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Command and environment of a subprocess running the CLI with the fake entailment backend."""
    script = tmp_path / "runner.py"
    script.write_text(RUNNER_SRC)
    env = {k: v for k, v in os.environ.items() if k not in (runs.TEST_SLEEP_ENV, runs.TEST_CALL_LOG_ENV)}
    env.update({"PYTHONPATH": str(REPO), **env_extra})
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
        tmp_path, [*args, "--output", str(out)], {runs.TEST_SLEEP_ENV: "0.03", runs.TEST_CALL_LOG_ENV: str(log1)}
    )
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    target = out / runs.STAGE_FILES[kill_in]
    deadline = time.monotonic() + 90
    while len(_lines(target)) < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    # simulate a torn write: cut the last complete line of the stage file in half
    data = target.read_bytes()
    body = data[: data.rstrip(b"\n").rfind(b"\n") + 1]
    last = data[len(body) :]
    torn_id = json.loads(last)["id"] if last.endswith(b"\n") else None
    target.write_bytes(body + last[: len(last) // 2])
    done_entail = set(_valid_ids(out / "entailment.jsonl"))
    done_scores = set(_valid_ids(out / "scores.jsonl"))
    assert 0 < len(done_entail if kill_in == "entailment" else done_scores) < 40
    assert not (out / "metrics.csv").exists()

    # resume
    cmd, env = _runner(tmp_path, [*args, "--output", str(out)], {runs.TEST_CALL_LOG_ENV: str(log2)})
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "dropped" in r.stderr and "torn write" in r.stderr  # the torn line was reported

    # every id exactly once, in every stage file, each line verified
    for stage in ("entailment", "scores"):
        lines = [ln for ln in _lines(out / runs.STAGE_FILES[stage]) if ln]
        got = [json.loads(ln)["id"] for ln in lines]
        assert sorted(got) == ids and len(set(got)) == 40
        assert runs.JsonlStore(out / runs.STAGE_FILES[stage]).load(repair=False).keys() == set(ids)
    # identical results to the uninterrupted run
    ref = tmp_path / "ref"
    for stage in ("entailment", "scores"):
        a = runs.JsonlStore(ref / runs.STAGE_FILES[stage]).load(repair=False)
        b = runs.JsonlStore(out / runs.STAGE_FILES[stage]).load(repair=False)
        assert a == b
    for f in ("scores.csv", "metrics.csv", "skipped.csv"):
        assert (ref / f).read_bytes() == (out / f).read_bytes(), f
    # nothing valid was recomputed: the resumed process computed exactly the missing questions
    calls = [ln.split("\t") for ln in log2.read_text().splitlines()]
    assert sorted(i for s, i in calls if s == "entail") == sorted(set(ids) - done_entail)
    assert sorted(i for s, i in calls if s == "score") == sorted(set(ids) - done_scores)
    # only the torn record was computed twice (its log line may be missing if the kill came right after its write)
    tag = "entail" if kill_in == "entailment" else "score"
    first = [ln.split("\t") for ln in log1.read_text().splitlines()]
    redone = {i for s, i in first if s == tag} & {i for s, i in calls if s == tag}
    assert redone <= {torn_id}
    if torn_id is not None:
        assert torn_id in {i for s, i in calls if s == tag}
