"""The two pipelines and their stage runners, driven by one :class:`~shapley.pipeline.config.RunConfig`.

* :func:`run_experiment` (``python -m shapley run``): data -> generate -> entail -> score -> evaluate.
* :func:`score_samples` (``python -m shapley score-samples``): answers read from a file -> entail -> score ->
  evaluate.

Every stage is resumable (its records live in the run directory, :mod:`shapley.pipeline.store`); models are
loaded only when a stage has pending questions, so a fully resumed run never loads one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from tqdm.auto import tqdm

from shapley.pipeline import correctness, data, entail, evaluate, generate, selection
from shapley.pipeline import score as _score
from shapley.pipeline.config import EntailmentSettings, RunConfig, RuntimeSettings, ScoringSettings
from shapley.pipeline.merge import take_shard
from shapley.pipeline.records import Generation, QARecord
from shapley.pipeline.samples import SampleItem, read_samples_file
from shapley.pipeline.store import (
    TEST_CALL_LOG_ENV,
    TEST_SLEEP_ENV,
    JsonlStore,
    RunDir,
    canonical_json,
    check_resumable,
    sha256_file,
)

T = TypeVar("T")

# --------------------------------------------------------------------------------------------------
# Stage runner


def _batches(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for i in range(0, len(items), max(1, size)):
        yield list(items[i : i + max(1, size)])


def run_stage(
    store: JsonlStore,
    stage: str,
    items: Sequence[T],
    compute: Callable[[list[T]], list[dict[str, Any]]],
    *,
    key: Callable[[T], str],
    chunk_size: int = 1,
    progress: bool = True,
) -> dict[str, dict[str, Any]]:
    """Compute and store the records of ``items`` that ``store`` does not hold yet.

    ``compute(chunk)`` returns one record (with ``"id"``) per item of the chunk, in order; each record is
    appended as soon as its chunk is done. Returns the store's ``{id: record}``.
    """
    pending = [it for it in items if key(it) not in store]
    sleep = float(os.environ.get(TEST_SLEEP_ENV) or 0.0)
    log_path = os.environ.get(TEST_CALL_LOG_ENV)
    with tqdm(total=len(items), initial=len(items) - len(pending), desc=stage, unit="q", disable=not progress) as bar:
        for chunk in _batches(pending, chunk_size):
            records = compute(chunk)
            if len(records) != len(chunk):
                raise RuntimeError(f"stage {stage}: {len(records)} records for {len(chunk)} items")
            for it, rec in zip(chunk, records, strict=True):
                if str(rec["id"]) != key(it):
                    raise RuntimeError(f"stage {stage}: record id {rec['id']!r} for item {key(it)!r}")
                if sleep:
                    time.sleep(sleep)
                store.append(rec)
                if log_path:
                    with open(log_path, "a", encoding="utf-8") as f:
                        f.write(f"{stage}\t{key(it)}\n")
                bar.update(1)
    return store.records


# --------------------------------------------------------------------------------------------------
# Lazily loaded models


class LazyBackend:
    """Loads the entailment backend on first use (a fully resumed run never loads it)."""

    def __init__(self, settings: EntailmentSettings, runtime: RuntimeSettings, batch_size: int) -> None:
        self.settings, self.runtime, self.batch_size = settings, runtime, batch_size
        self._backend: Any = None
        self.recorded = False

    def get(self) -> Any:
        if self._backend is None:
            self._backend = entail.load_backend(
                self.settings.backend,
                device=self.runtime.device,
                batch_size=self.batch_size,
                cache=self.runtime.entail_cache_arg(),
            )
        return self._backend

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    def info(self) -> dict[str, Any]:
        b = self.get()
        spec = self.settings.backend
        return {
            "spec": spec,
            "name": getattr(b, "name", spec),
            "fingerprint": getattr(b, "fingerprint", None),
            "is_nli": bool(getattr(b, "is_nli", False)),
        }


class LazyGenerator:
    """Builds the generator (and loads the model) on first use."""

    def __init__(self, config: RunConfig) -> None:
        assert config.generation is not None
        g = config.generation
        self.model = g.model
        self.config = generate.GenerationConfig(
            n_samples=g.n_samples,
            temperature=g.temperature,
            top_p=g.top_p,
            top_k=g.top_k,
            max_new_tokens=g.max_new_tokens,
            chat_template=g.chat_template,
            seed=config.seed,
            batch_size=config.runtime.batch_size,
            p_true=g.p_true,
            a4c=g.a4c,
            device=config.runtime.device,
            dtype=g.dtype,
            progress=False,  # run_stage shows the bar
        )
        self._gen: Any = None
        self.recorded = False

    def get(self) -> Any:
        if self._gen is None:
            self._gen = generate.Generator(self.model, self.config)
        return self._gen

    def info(self) -> dict[str, Any]:
        return {"spec": self.model, "fingerprint": getattr(self.get(), "fingerprint", None)}


# --------------------------------------------------------------------------------------------------
# Shared stages


def _matrix_list(M: Any, n: int, what: str, qid: str) -> list[list[float]] | None:
    if M is None:
        return None
    A = np.asarray(M, dtype=np.float64)
    if A.shape != (n, n):
        raise RuntimeError(f"entailment backend returned a {what} matrix of shape {A.shape} for {n} samples ({qid})")
    return A.tolist()


def entail_stage(
    run: RunDir,
    items: Sequence[tuple[str, str, list[str]]],
    backend: LazyBackend,
    *,
    chunk_size: int = 16,
) -> dict[str, dict[str, Any]]:
    """Entailment matrices for ``items`` = (id, question, samples); stored in ``entailment.jsonl``."""
    with_question = run.config.entailment.with_question

    def compute(chunk: list[tuple[str, str, list[str]]]) -> list[dict[str, Any]]:
        if not backend.recorded:
            run.record_fingerprint("entailment", backend.info())  # loads the backend if needed
            backend.recorded = True
        results = backend.get().score([(q, s) for _, q, s in chunk], with_question=with_question)
        out = []
        for (qid, _, samples), r in zip(chunk, results, strict=True):
            n = len(samples)
            out.append(
                {
                    "id": qid,
                    "n": n,
                    "entail": _matrix_list(r.entail, n, "entail", qid),
                    "contradict": _matrix_list(getattr(r, "contradict", None), n, "contradict", qid),
                }
            )
        return out

    return run_stage(
        run.store("entailment"),
        "entail",
        items,
        compute,
        key=lambda it: it[0],
        chunk_size=chunk_size,
        progress=run.config.runtime.progress,
    )


def score_record(
    x: _score.ScoreInputs,
    answer: str,
    references: Sequence[str],
    scoring: ScoringSettings,
    *,
    position: int | None = None,
    answer_source: str = "greedy",
) -> dict[str, Any]:
    """The stored score record of one question (correctness of ``answer`` + every per-question method).

    Also stored: ``position`` (the question's place in the unsharded input, for ``merge``), each sample's
    correctness value ``sample_correctness``, the answers chosen by the selection strategies ``selected`` with
    the exact Shapley values ``phi`` (or ``phi_note``: why not; :mod:`shapley.pipeline.selection`) and
    ``answer_source`` (what ``answer`` is: one of :data:`shapley.pipeline.selection.ANSWER_SOURCES`).
    """
    metric = scoring.correctness_metric
    assert metric is not None, "the correctness metric is resolved before a run starts"
    value = float(correctness.similarity(answer, list(references), metric))
    chosen, phi, phi_note = selection.choose(x, scoring)
    per_sample = [float(correctness.similarity(s, list(references), metric)) for s in x.samples or []]
    qs = _score.score_question_detailed(
        x,
        methods=scoring.methods,
        beta=scoring.beta,
        psd_policy=scoring.psd_policy,
        cluster_rule=scoring.cluster_rule,
        se_aggregation=scoring.se_aggregation,
    )
    return {
        "id": x.id,
        "answer": answer,
        "correctness_metric": metric,
        "correctness_value": value,
        "correct": bool(value > scoring.threshold),
        "scores": qs.scores,
        "skipped": qs.skipped,
        "diagnostics": qs.diagnostics,
        "position": position,
        "answer_source": answer_source,
        "sample_correctness": per_sample,
        "selected": chosen,
        "phi": phi,
        "phi_note": phi_note,
    }


def _score_stage(
    run: RunDir,
    ids: Sequence[str],
    inputs: Callable[[str], tuple[_score.ScoreInputs, str, Sequence[str]]],
    extra: Callable[[str], Mapping[str, Any]] = lambda qid: {},
) -> None:
    """Score every question of ``ids``; ``inputs(id)`` gives its (ScoreInputs, judged answer, references),
    ``extra(id)`` the keyword arguments ``position`` and ``answer_source`` of :func:`score_record`."""
    scoring = run.config.scoring

    def compute(chunk: list[str]) -> list[dict[str, Any]]:
        return [score_record(*inputs(qid), scoring, **extra(qid)) for qid in chunk]

    run_stage(run.store("scores"), "score", ids, compute, key=lambda qid: qid, progress=run.config.runtime.progress)


# --------------------------------------------------------------------------------------------------
# score-samples


def _note(message: str) -> None:
    print(f"note: {message}", file=sys.stderr)


def _sample_notes(items: Sequence[SampleItem], methods: Sequence[str]) -> None:
    if not any(it.sample_logprobs for it in items):
        needs_lp = [m for m in methods if "sample_logprobs" in _score.METHODS[m].needs]
        if needs_lp:
            _note(f"no sample_logprobs in the input; skipping {', '.join(needs_lp)}")
    lens = sorted({len(it.samples) for it in items})
    if len(lens) > 1:
        _note(f"questions have different numbers of samples {lens}; Shap grows with n, consider --n-samples")


def _sample_inputs(item: SampleItem, ent: Mapping[str, Any]) -> _score.ScoreInputs:
    return _score.ScoreInputs(
        id=item.id,
        samples=item.samples,
        entail=ent["entail"],
        contradict=ent["contradict"],
        sample_logprobs=item.sample_logprobs,
        answer_logprobs=item.answer_token_logprobs,
        answer_entropies=item.answer_token_entropies,
        p_true=item.p_true,
        a4c_text=item.a4c_text,
        embeddings=None if item.embedding is None else np.asarray(item.embedding, dtype=np.float64),
    )


def score_samples(config: RunConfig, output: str | os.PathLike[str], *, argv: Sequence[str] | None = None) -> Path:
    """Score answers generated elsewhere (``python -m shapley score-samples``); returns the run directory.

    ``config.data.path`` is the input file (JSON lines, see :func:`shapley.pipeline.samples.read_samples_file`).
    The whole input is validated before anything is written. Stages: entailment -> scores -> metrics.
    """
    if config.command != "score-samples" or config.data.path is None:
        raise ValueError("score_samples needs a 'score-samples' RunConfig whose data.path is the input file")
    path = Path(config.data.path)
    placed = take_shard(
        read_samples_file(path, n_samples=config.data.n_samples, limit=config.data.limit),
        config.data.shard,
        key=lambda it: it.id,
    )
    items = [it for _, it in placed]
    position = {it.id: pos for pos, it in placed}
    config = config.replace(
        data=dataclasses.replace(config.data, path=str(path.resolve()), sha256=sha256_file(path), source="file"),
        scoring=dataclasses.replace(config.scoring, correctness_metric=config.scoring.correctness_metric or "rougeL"),
    )
    _sample_notes(items, config.scoring.methods)
    backend = LazyBackend(config.entailment, config.runtime, config.runtime.batch_size)
    if check_resumable(output, config) is None:
        backend.get()  # a backend that cannot load fails before the output directory exists
    with RunDir.open(output, config, argv=argv) as run:
        if backend.loaded:
            run.record_fingerprint("entailment", backend.info())
            backend.recorded = True
        entail_stage(
            run,
            [(it.id, it.question, it.samples) for it in items],
            backend,
            chunk_size=max(1, config.runtime.batch_size // 2),
        )
        ent = run.store("entailment").records
        by_id = {it.id: it for it in items}
        _score_stage(
            run,
            list(by_id),
            lambda qid: (_sample_inputs(by_id[qid], ent[qid]), by_id[qid].answer, by_id[qid].references),
            lambda qid: {
                "position": position[qid],
                "answer_source": "input" if by_id[qid].answer_given else "first_sample",
            },
        )
        emb = {it.id: it.embedding for it in items if it.embedding is not None}
        evaluate.write_run_outputs(run, list(by_id), embeddings=emb or None)
        return run.path


# --------------------------------------------------------------------------------------------------
# run


def _resolve_run(config: RunConfig) -> tuple[RunConfig, list[QARecord]]:
    """Load the questions, and fill in what the configuration leaves to the data: the per-dataset correctness
    metric, the local file and its fingerprint."""
    d = config.data
    source = "auto" if d.source == "file" else d.source
    records = data.load_dataset(
        d.dataset, limit=d.limit, n_shots=d.n_shots, seed=config.seed, source=source, path=d.path
    )
    if not records:
        raise ValueError(f"dataset {d.dataset!r} gave no questions")
    name = records[0].dataset or d.dataset
    local = None if source == "online" else data.local_path(d.dataset, d.path)
    sha = sha256_file(local) if local is not None and Path(local).is_file() else None
    metric = config.scoring.correctness_metric or correctness.CORRECTNESS_FOR.get(name, "rougeL")
    config = config.replace(
        data=dataclasses.replace(
            d,
            dataset=name,
            source=source if sha is None else "local",
            path=None if local is None else str(local),
            sha256=sha,
        ),
        scoring=dataclasses.replace(config.scoring, correctness_metric=metric),
    )
    return config, records


def _store_questions(run: RunDir, records: Sequence[QARecord]) -> None:
    run.record["provenance"]["questions_sha256"] = hashlib.sha256(
        canonical_json([r.to_dict() for r in records]).encode("utf-8")
    ).hexdigest()
    run.save_config()
    qstore = run.store("questions")
    for r in records:
        if r.id in qstore and canonical_json(qstore.records[r.id]) != canonical_json(r.to_dict()):
            raise ValueError(
                f"cannot resume {run.path}: question {r.id!r} differs from the stored one "
                "(the dataset or its prompt template changed)"
            )
    run_stage(qstore, "data", records, lambda chunk: [r.to_dict() for r in chunk], key=lambda r: r.id, progress=False)


def _generation_stage(run: RunDir, records: Sequence[QARecord], generator: LazyGenerator) -> dict[str, dict[str, Any]]:
    def compute(chunk: list[QARecord]) -> list[dict[str, Any]]:
        if not generator.recorded:
            run.record_fingerprint("model", generator.info())
            generator.recorded = True
        return [g.to_dict() for g in generator.get().generate(chunk)]

    n_samples = generator.config.n_samples
    return run_stage(
        run.store("generations"),
        "generate",
        records,
        compute,
        key=lambda r: r.id,
        # As many questions as fill one decoding batch (Generator.questions_per_batch), stored as they finish.
        chunk_size=max(1, run.config.runtime.batch_size // (1 + n_samples)),
        progress=run.config.runtime.progress,
    )


def run_experiment(config: RunConfig, output: str | os.PathLike[str], *, argv: Sequence[str] | None = None) -> Path:
    """The whole experiment (``python -m shapley run``): data -> generate -> entail -> score -> metrics.

    Every stage is resumable (stage files in the run directory); models are loaded only when a stage has
    pending questions. Returns the run directory.
    """
    if config.command != "run":
        raise ValueError("run_experiment needs a 'run' RunConfig (with generation settings)")
    config, all_records = _resolve_run(config)
    placed = take_shard(all_records, config.data.shard, key=lambda r: r.id)
    records = [r for _, r in placed]
    position = {r.id: pos for pos, r in placed}
    generator = LazyGenerator(config)
    backend = LazyBackend(config.entailment, config.runtime, max(config.runtime.batch_size, 8))
    with RunDir.open(output, config, argv=argv) as run:
        _store_questions(run, records)
        gens = _generation_stage(run, records, generator)
        entail_stage(
            run,
            [(r.id, r.question, list(gens[r.id]["samples"])) for r in records],
            backend,
            chunk_size=max(1, config.runtime.batch_size),
        )
        ent = run.store("entailment").records
        by_id = {r.id: r for r in records}

        def inputs(qid: str) -> tuple[_score.ScoreInputs, str, Sequence[str]]:
            g, e = gens[qid], ent[qid]
            x = _score.ScoreInputs.from_generation(
                Generation.from_dict(g),
                _score.ScoreInputs(id=qid, entail=e["entail"], contradict=e["contradict"]),
                embeddings=g.get("embedding"),
            )
            return x, g["answer"], by_id[qid].references

        _score_stage(run, list(by_id), inputs, lambda qid: {"position": position[qid]})
        emb = {r.id: gens[r.id]["embedding"] for r in records if gens[r.id].get("embedding") is not None}
        evaluate.write_run_outputs(run, list(by_id), embeddings=emb or None)
        return run.path
