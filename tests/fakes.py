"""Shared test doubles for the pipeline: a cheap deterministic entailment backend, a fake generator, a fake
dataset, score-samples input files and the configurations that use them.

Imported by the tests (``from tests import fakes``) and by the subprocess runner of the SIGKILL tests
(:data:`RUNNER_SRC`), which installs the same fakes in a fresh interpreter.
"""

from __future__ import annotations

import gzip
import json
import re
import types
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shapley.pipeline.config import (
    DataSettings,
    EntailmentSettings,
    GenerationSettings,
    RunConfig,
    RuntimeSettings,
    ScoringSettings,
)
from shapley.pipeline.data import datasets as data
from shapley.pipeline.entail import backends as entail
from shapley.pipeline.generate import generator as generate
from shapley.pipeline.generate.config import GenerationConfig
from shapley.pipeline.rundir.records import Generation, QARecord

REPO = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------------------------------
# Entailment: token overlap


def overlap_matrix(samples: list[str]) -> np.ndarray:
    """P[i, j] = share of the tokens of answer j that answer i contains (1 on the diagonal)."""
    toks = [set(re.findall(r"\w+", s.lower())) for s in samples]
    n = len(samples)
    P = np.eye(n)
    for i in range(n):
        for j in range(n):
            if i != j:
                P[i, j] = len(toks[i] & toks[j]) / len(toks[j]) if toks[j] else float(not toks[i])
    return P


class FakeBackend:
    """Entailment by token overlap; ``contradict = (1 - P) / 2``."""

    name = "fake:overlap"
    fingerprint = "fake-overlap-v1"
    is_nli = False

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def score(self, items: Any, *, with_question: bool = False) -> list[Any]:
        out = []
        for q, answers in items:
            P = overlap_matrix([(q + " " + a) if with_question else a for a in answers])
            out.append(types.SimpleNamespace(entail=P, contradict=0.5 * (1.0 - P)))
        return out


class FakeEntail:
    """What :func:`install_fake_entail` installs: ``load_backend`` that counts its calls in ``LOADS``."""

    def __init__(self) -> None:
        self.LOADS: list[str] = []

    def load_backend(self, spec: str, **_: Any) -> FakeBackend:
        self.LOADS.append(spec)
        return FakeBackend(spec)


def install_fake_entail(monkeypatch: pytest.MonkeyPatch | None = None) -> FakeEntail:
    """Replace :func:`shapley.pipeline.entail.backends.load_backend` by the fake (for good without ``monkeypatch``)."""
    fake = FakeEntail()
    if monkeypatch is None:
        entail.load_backend = fake.load_backend  # type: ignore[assignment]
    else:
        monkeypatch.setattr(entail, "load_backend", fake.load_backend)
    return fake


# --------------------------------------------------------------------------------------------------
# Generation and data


class FakeGenerator:
    """Stands in for :class:`shapley.pipeline.generate.generator.Generator`: deterministic samples drawn from the
    reference, Rome and Vienna; counts its constructions (model loads) in ``FakeGenerator.constructed``.
    With ``hidden_dim`` > 0 the greedy answer also gets a float16 hidden state that separates correct from
    wrong answers (so that ER has something to find)."""

    fingerprint = "fake-llm-v1"
    constructed = 0
    hidden_dim = 0

    def __init__(self, spec: str, config: GenerationConfig) -> None:
        type(self).constructed += 1
        self.config = config

    def questions_per_batch(self) -> int:
        return max(1, (self.config.batch_size or 8) // (1 + self.config.n_samples))

    def fix_rows(self) -> int:
        return self.config.rows_per_batch or self.config.batch_size or 8

    def _hidden(self, r: QARecord, answer: str, rng: np.random.Generator) -> np.ndarray | None:
        if not self.hidden_dim:
            return None
        v = rng.normal(size=self.hidden_dim)
        v[0] += 3.0 if answer == r.references[0] else -3.0
        return v.astype(np.float16)

    def generate(self, records: list[QARecord]) -> list[Generation]:
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
                    hidden=self._hidden(r, s[0], rng),
                )
            )
        return out


def install_fake_generator(monkeypatch: pytest.MonkeyPatch, hidden_dim: int = 0) -> type[FakeGenerator]:
    """Replace the Generator class by a fresh :class:`FakeGenerator` subclass (its own load counter); with
    ``hidden_dim`` > 0 its generations carry hidden states."""
    cls = type("CountingFakeGenerator", (FakeGenerator,), {"constructed": 0, "hidden_dim": hidden_dim})
    monkeypatch.setattr(generate, "Generator", cls)
    return cls


def install_fake_dataset(monkeypatch: pytest.MonkeyPatch, n: int = 10) -> None:
    """``data.dataset_records`` (what a run reads) returns n capital-city questions; no
    local file."""

    def dataset_records(name: str, *, limit: int | None = None, **_: Any) -> list[QARecord]:
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

    monkeypatch.setattr(data, "dataset_records", dataset_records)
    monkeypatch.setattr(data, "local_path", lambda name, path=None: None)


def make_samples_file(path: Path, n_questions: int = 40, n_samples: int = 6, seed: int = 0, **extra: Any) -> list[dict]:
    """Write a score-samples input (``.jsonl`` or ``.jsonl.gz``) of n questions; returns its rows."""
    rng = np.random.default_rng(seed)
    vocab = ["Paris", "Rome", "Mozart", "Beethoven", "the capital", "of France", "Vienna", "1791", "Zürich", "東京"]
    rows = []
    for q in range(n_questions):
        ref = vocab[q % len(vocab)]
        k = int(rng.integers(1, 4))
        pool = [ref] + [str(w) for w in rng.choice(vocab, size=k)]
        samples = [" ".join(rng.choice(pool, size=int(rng.integers(1, 3)))) for _ in range(n_samples)]
        rows.append({"id": f"q{q:03d}", "question": f"Question {q}?", "references": [ref], "samples": samples, **extra})
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return rows


def make_full_samples_file(path: Path, n_questions: int, fields_seed: int) -> list[dict]:
    """A score-samples input with every optional field a cross-question step reads: embeddings for ER, p(True),
    log-probs for SE / NE, and a judged answer on every other line (``answer_source`` ``input``). The optional
    fields are drawn from their own generator, seeded with ``fields_seed``."""
    rows = make_samples_file(path, n_questions)
    rng = np.random.default_rng(fields_seed)
    for k, r in enumerate(rows):
        r["embedding"] = list(rng.normal(size=4))
        r["p_true"] = float(rng.random())
        r["sample_logprobs"] = [list(-rng.uniform(0.01, 2, size=3)) for _ in r["samples"]]
        if k % 2:
            r["answer"] = r["samples"][-1]
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return rows


def prefix_cache_agreement(cached: list[Any], whole: list[Any]) -> tuple[int, int]:
    """(rows with identical texts, rows) of two generations of the same records, with and without the prefix
    cache; asserts that the token log-probabilities of every row agree within 1e-4 unless its texts differ."""
    same = rows = 0
    for x, y in zip(cached, whole, strict=True):
        pairs = [(x.answer, y.answer, x.answer_token_logprobs, y.answer_token_logprobs)]
        pairs += list(zip(x.samples, y.samples, x.sample_token_logprobs, y.sample_token_logprobs, strict=True))
        for tx, ty, lx, ly in pairs:
            rows += 1
            same += tx == ty
            first = next((i for i, (p, q) in enumerate(zip(lx, ly, strict=False)) if abs(p - q) > 1e-4), None)
            assert first is None or tx != ty, (tx, ty)
    return same, rows


def local_data_dir() -> Path:
    """The local data folder (``../shared/data`` or ``SHAPLEY_DATA_DIR``); the calling test is skipped, with the
    reason, where there is none."""
    from shapley.pipeline.rundir.settings import data_dir

    try:
        return data_dir()
    except FileNotFoundError as e:
        pytest.skip(f"local data folder not available ({e})")


# --------------------------------------------------------------------------------------------------
# Configurations


def samples_config(path: Path | str, *, n_boot: int = 50, **data_kw: Any) -> RunConfig:
    """A score-samples RunConfig over ``path`` with the fake backend, no progress bars, ``n_boot`` resamples."""
    return RunConfig(
        command="score-samples",
        data=DataSettings(dataset=Path(path).name.split(".")[0], source="file", path=str(path), **data_kw),
        entailment=EntailmentSettings(backend="fake:"),
        scoring=ScoringSettings(n_boot=n_boot),
        runtime=RuntimeSettings(batch_size=32, progress=False),
    )


def run_config(*, n_samples: int = 5, limit: int | None = 6, n_boot: int = 50, **gen_kw: Any) -> RunConfig:
    """A run RunConfig with the fake model and backend (install the fakes first)."""
    return RunConfig(
        command="run",
        data=DataSettings(dataset="triviaqa", limit=limit),
        generation=GenerationSettings(model="fake", n_samples=n_samples, **gen_kw),
        entailment=EntailmentSettings(backend="fake:"),
        scoring=ScoringSettings(n_boot=n_boot),
        runtime=RuntimeSettings(progress=False),
    )


def with_limit(config: RunConfig, limit: int | None) -> RunConfig:
    return config.replace(data=replace(config.data, limit=limit))


def make_two_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two score-samples runs over the same 40 fake questions (with embeddings and p_true): ``a`` with every
    method at beta 0.5, ``b`` with Shap, LexSim and SE at beta 0.3."""
    from shapley.pipeline.experiment import pipelines as experiment

    install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    rows = make_samples_file(inp, 40)
    rng = np.random.default_rng(5)
    with open(inp, "w", encoding="utf-8") as f:  # add embeddings (ER) and p_true to every line
        for r in rows:
            r["embedding"] = list(rng.normal(size=3))
            r["p_true"] = float(rng.random())
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    base = samples_config(inp, n_boot=100)
    base = base.replace(data=replace(base.data, dataset="toy", model_label="toy-llm"))
    a = experiment.score_samples(base, tmp_path / "a")
    b_config = base.replace(scoring=replace(base.scoring, beta=0.3, methods=("Shap", "LexSim", "SE")))
    b = experiment.score_samples(b_config, tmp_path / "b")
    return a, b


RUNNER_SRC = (
    "import sys\n"
    f"sys.path.insert(0, {str(REPO)!r})\n"
    "from tests import fakes\n"
    "fakes.install_fake_entail()\n"
    "from shapley.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
"""A script that runs the CLI with the fake entailment backend (for subprocess tests)."""
