"""The two pipelines and their stage runners, driven by one :class:`~shapley.pipeline.config.RunConfig`.

* :func:`run_experiment` (``python -m shapley run``): data -> generate -> entail -> score -> evaluate.
* :func:`score_samples` (``python -m shapley score-samples``): answers read from a file -> entail -> score ->
  evaluate.

Every stage is resumable (its records live in the run directory, :mod:`shapley.pipeline.rundir.store`); models are
loaded only when a stage has pending questions, so a fully resumed run never loads one. A stage's chunk (the
questions computed together) is stored with one write, and a record whose inputs changed (an upstream record
was redone) is recomputed (see :func:`run_stage`).

Nothing is half-made: the input is validated, the settings checked against a stored run and, for a new
run, the models loaded before the output directory is created. With ``runtime.progress`` off, model loading
shows no progress bar and the model libraries log errors only.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shapley.pipeline.config import RunConfig, ScoringSettings
from shapley.pipeline.data.questions import Questions, run_questions, sample_questions
from shapley.pipeline.data.samples import SampleItem
from shapley.pipeline.evaluate import metrics as evaluate
from shapley.pipeline.experiment.stages import (
    ENTAIL_CHUNK,
    EntailmentModel,
    GenerationModel,
    LazyModel,
    note,
    run_stage,
    scoring_fingerprint,
)
from shapley.pipeline.rundir.jsonl import (
    CorruptRecordWarning,
    StaleRecordWarning,
    fingerprint,
    record_checksum,
    write_compact,
)
from shapley.pipeline.rundir.provenance import provenance
from shapley.pipeline.rundir.records import (
    HIDDEN_KEY,
    Generation,
    HiddenStateReader,
    QARecord,
    check_hidden_dir,
    save_hidden_states,
)
from shapley.pipeline.rundir.store import RunDir, stored_run
from shapley.pipeline.score import correctness
from shapley.pipeline.score import scores as score

# --------------------------------------------------------------------------------------------------
# Shared stages


def entail_stage(
    run: RunDir,
    items: Sequence[tuple[str, str, list[str]]],
    backend: LazyModel,
    *,
    upstream: Callable[[str], str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Entailment matrices for ``items`` = (id, question, samples); stored in ``entailment.jsonl``, in chunks of
    ``--batch-size`` questions (default :data:`~shapley.pipeline.experiment.stages.ENTAIL_CHUNK`).

    ``upstream(id)``: the fingerprint of the inputs (default: of the question and its samples); a stored
    matrix computed from other inputs (or other entailment settings) is recomputed. The batch sizes used are
    kept in the run's record."""
    with_question = run.config.entailment.with_question
    inputs = upstream or {qid: fingerprint([q, s]) for qid, q, s in items}.__getitem__
    settings = fingerprint(dataclasses.asdict(run.config.entailment))
    chunk_size = run.config.runtime.batch_size or ENTAIL_CHUNK

    def compute(chunk: list[tuple[str, str, list[str]]]) -> list[dict[str, Any]]:
        backend.record(run)  # loads the backend if needed
        results = backend.get().score([(q, s) for _, q, s in chunk], with_question=with_question)
        # the (n, n) float64 matrices are stored as nested lists (canonical_json)
        return [
            {"id": qid, "n": len(samples), "entail": r.entail, "contradict": r.contradict}
            for (qid, _, samples), r in zip(chunk, results, strict=True)
        ]

    records = run_stage(
        run.store("entailment"),
        "entail",
        items,
        compute,
        key=lambda it: it[0],
        chunk_size=chunk_size,
        progress=run.config.runtime.progress,
        upstream=lambda it: fingerprint([inputs(it[0]), settings]),
    )
    backend.record_batch_sizes(run, "entailment", chunk_size)
    return records


def score_record(
    x: score.ScoreInputs,
    answer: str,
    references: Sequence[str],
    scoring: ScoringSettings,
    *,
    position: int,
    answer_source: str,
) -> dict[str, Any]:
    """The stored score record of one question (correctness of ``answer`` + every per-question method).

    Also stored: ``position`` (the question's place in the unsharded input, for ``merge``) and ``answer_source``
    (what ``answer`` is: the generator's greedy answer, ``greedy``; the input's ``answer`` field, ``input``; or the
    first sample, ``first_sample``, in ``score-samples`` without an ``answer`` field).

    Floating-point overflow (e.g. summing token log-probabilities of -1e308) gives +-inf without a numpy
    warning: a method that cannot use an infinite value skips the question and records why, and the metrics
    rank infinite scores at the extremes."""
    metric = scoring.correctness_metric
    assert metric is not None, "the correctness metric is resolved before a run starts"
    value = float(correctness.similarity(answer, list(references), metric))
    with np.errstate(over="ignore"):
        qs = score.score_question(score.QuestionContext(x, scoring), methods=scoring.methods)
    return {
        "id": x.id,
        "answer": answer,
        "correctness_metric": metric,
        "correctness_value": value,
        "correct": correctness.exceeds(value, scoring.threshold),
        "scores": qs.scores,
        "skipped": qs.skipped,
        "diagnostics": qs.diagnostics,
        "position": position,
        "answer_source": answer_source,
    }


def _score_and_write(
    run: RunDir,
    questions: Questions[Any],
    inputs: Callable[[str], tuple[score.ScoreInputs, str, Sequence[str]]],
    upstream: Callable[[str], str],
    answer_source: Callable[[str], str],
    embeddings: Mapping[str, Any],
) -> None:
    """Score every question of ``questions`` (each has an ``id``), then write the CSV outputs for them and the record
    of what they cover (a note when it is less than stored; ``questions.total``, the questions of the unsharded
    input under the ``--limit``: ``merge`` checks the shards hold them all).

    ``inputs(id)`` gives a question's (ScoreInputs, judged answer, references), ``upstream(id)`` the fingerprint of
    those inputs (a stored score computed from others is recomputed; the stored fingerprint also covers the scoring
    settings, :func:`scoring_fingerprint`), ``answer_source(id)`` and its position in the unsharded input the
    keyword arguments of :func:`score_record`; ``embeddings``: ER's, by id (none: empty)."""
    scoring = run.config.scoring
    settings = scoring_fingerprint(scoring)
    position = questions.position(lambda q: q.id)
    ids = list(position)

    def compute(chunk: list[str]) -> list[dict[str, Any]]:
        return [
            score_record(*inputs(qid), scoring, position=position[qid], answer_source=answer_source(qid))
            for qid in chunk
        ]

    run_stage(
        run.store("scores"),
        "score",
        ids,
        compute,
        key=lambda qid: qid,
        progress=run.config.runtime.progress,
        upstream=lambda qid: fingerprint([upstream(qid), settings]),
    )
    message = run.record_outputs(len(ids), input_questions=questions.total)
    if message:
        note(message)
    evaluate.write_run_outputs(run, ids, embeddings=embeddings or None)
    write_compact(run.path, ids)


# --------------------------------------------------------------------------------------------------
# score-samples


def _sample_notes(items: Sequence[SampleItem], methods: Sequence[str]) -> None:
    extra = Counter(name for it in items for name in it.extra_fields)
    if extra:
        listed = ", ".join(f"{name!r} ({k} of {len(items)} lines)" for name, k in sorted(extra.items()))
        note(f"the input has field(s) that score-samples does not use, ignored: {listed}")
    if not any(it.sample_logprobs for it in items):
        needs_lp = [m for m in methods if "sample_logprobs" in score.METHODS[m].needs]
        if needs_lp:
            note(f"no sample_logprobs in the input; skipping {', '.join(needs_lp)}")
    lens = sorted({len(it.samples) for it in items})
    if len(lens) > 1:
        note(f"questions have different numbers of samples {lens}; Shap grows with n, consider --n-samples")


def _sample_inputs(item: SampleItem, ent: Mapping[str, Any]) -> score.ScoreInputs:
    return score.ScoreInputs(
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


def _item_fingerprint(item: SampleItem) -> str:
    """What a score of ``item`` is computed from (everything but its line number and unused fields)."""
    d = dataclasses.asdict(item)
    for name in ("lineno", "extra_fields"):
        d.pop(name)
    return fingerprint(d)


def score_samples(config: RunConfig, output: str | os.PathLike[str], *, argv: Sequence[str] | None = None) -> Path:
    """Score answers generated elsewhere (``python -m shapley score-samples``); returns the run directory.

    The input is ``config.data.path`` (:func:`shapley.pipeline.data.questions.sample_questions`). The whole input
    is validated, and for a new run the entailment backend loaded, before anything is written. Stages:
    entailment -> scores -> metrics.
    """
    stored = stored_run(output)
    data, items = sample_questions(config)
    config = config.resolved(data)
    _sample_notes(items, config.scoring.methods)
    backend = EntailmentModel(config)
    if stored is None:
        backend.get()  # a backend that cannot load fails before the output directory exists
    with RunDir.open(output, config, config.run_record(output, stored, provenance(argv), {})) as run:
        entail_stage(run, [(it.id, it.question, it.samples) for it in items], backend)
        ent = run.store("entailment").records
        by_id = {it.id: it for it in items}
        _score_and_write(
            run,
            items,
            lambda qid: (_sample_inputs(by_id[qid], ent[qid]), by_id[qid].answer, by_id[qid].references),
            lambda qid: fingerprint([record_checksum(ent[qid]), _item_fingerprint(by_id[qid])]),
            lambda qid: "input" if by_id[qid].answer_given else "first_sample",
            {it.id: it.embedding for it in items if it.embedding is not None},
        )
        return run.path


# --------------------------------------------------------------------------------------------------
# run


def _store_questions(run: RunDir, records: Sequence[QARecord], fps: Mapping[str, str]) -> None:
    """Check the questions against the stored fingerprints ``fps`` (id -> fingerprint) and store the new ones.

    ``questions.jsonl`` keeps ids and fingerprints only (no dataset text)."""
    qstore = run.store("questions")
    for qid, fp in fps.items():
        stored = qstore.records.get(qid)
        if stored is not None and stored.get("sha256") != fp:
            raise ValueError(
                f"cannot resume {run.path}: question {qid!r} differs from the stored one "
                "(the dataset or its prompt template changed)"
            )
    run_stage(
        qstore,
        "data",
        records,
        lambda chunk: [{"id": r.id, "sha256": fps[r.id]} for r in chunk],
        key=lambda r: r.id,
        progress=False,  # instantaneous: no bar
    )


def _check_hidden_states(run: RunDir) -> None:
    """Stored generations whose hidden-state file is missing or does not match its checksum are redone, with a
    warning (their entailment and scores follow through the upstream fingerprints). Before anything is discarded,
    ``hidden/`` must be absent or a readable folder inside the run (:func:`check_hidden_dir`): otherwise the
    resume is refused, naming it, and every record is kept."""
    check_hidden_dir(run.path)
    reader = HiddenStateReader(run.path)
    store = run.store("generations")
    bad = [i for i, r in store.records.items() if HIDDEN_KEY in r and reader.get(i, r[HIDDEN_KEY]) is None]
    if bad:
        warnings.warn(
            f"{run.path}: the hidden-state file of {len(bad)} generation(s) is missing or damaged "
            f"(e.g. {bad[0]!r}); they are generated again",
            CorruptRecordWarning,
            stacklevel=2,
        )
        store.discard(bad)


def hidden_states(run: RunDir, ids: Sequence[str]) -> dict[str, list[float]]:
    """id -> stored hidden state of the judged answer (float16 values), for the questions that have an intact one."""
    reader = HiddenStateReader(run.path)
    recs = run.store("generations").records
    out = {i: reader.get(i, recs[i].get(HIDDEN_KEY)) for i in ids}  # every question has its generation
    return {i: v.astype(np.float64).tolist() for i, v in out.items() if v is not None}


GENERATION_SETTINGS_KEY = "settings_sha256"
"""Field of a generation record: the fingerprint of the settings it was generated with
(:func:`generation_fingerprint`)."""


ROUND_OFF_ONLY = ("generation.rows_per_batch", "generation.prefix_cache")
"""Generation settings that move numbers by float round-off only: left out of :func:`generation_fingerprint`, so
that a run's records are the same whatever the batching (``tests/pipeline/test_invariance.py``)."""


def generation_fingerprint(config: RunConfig) -> str:
    """Fingerprint of what decides a generation: every result setting of ``config.generation`` (model, n_samples,
    temperature, top_p, top_k, max_new_tokens, chat_template, p_true, a4c, dtype) but :data:`ROUND_OFF_ONLY`, and
    the run's seed. The model's weights, dtype and device kind are pinned by ``provenance`` instead
    (:meth:`RunDir.record_fingerprint`)."""
    flat = config.result_settings()
    chosen = {k: v for k, v in flat.items() if k.startswith("generation.") and k not in ROUND_OFF_ONLY}
    return fingerprint({"seed": config.seed, **chosen})


def _check_generation_settings(run: RunDir, settings: str) -> None:
    """Generation records generated with other settings than the run's (``settings``: its
    :func:`generation_fingerprint`; ``config.json`` edited by hand, or damaged) are discarded, with a warning,
    and generated again; their entailment and scores follow through the upstream fingerprints. A record without
    the fingerprint (an older version's, as in the committed runs) is kept: it belongs to ``config.json``, whose
    result settings a resume has compared."""
    store = run.store("generations")
    other = [qid for qid, rec in store.records.items() if rec.get(GENERATION_SETTINGS_KEY, settings) != settings]
    if other:
        warnings.warn(
            f"{store.path}: {len(other)} generation record(s) (e.g. {other[0]!r}) were generated with other "
            "generation settings (n_samples, temperature, max_new_tokens, seed, ...); generating them again",
            StaleRecordWarning,
            stacklevel=2,
        )
        store.discard(other)


def _generation_stage(
    run: RunDir, records: Sequence[QARecord], generator: LazyModel, fps: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
    def compute(chunk: list[QARecord]) -> list[dict[str, Any]]:
        generator.record(run)
        gens = generator.get().generate(chunk)
        with_hidden = [g for g in gens if g.hidden is not None]
        refs = {}
        if with_hidden:  # the vectors' file is complete on disk before any record points to it
            saved = save_hidden_states(run.path, [g.id for g in with_hidden], [g.hidden for g in with_hidden])
            refs = {g.id: ref for g, ref in zip(with_hidden, saved, strict=True)}
        return [
            {**g.to_dict(), GENERATION_SETTINGS_KEY: settings, **({HIDDEN_KEY: refs[g.id]} if g.id in refs else {})}
            for g in gens
        ]

    settings = generation_fingerprint(run.config)
    _check_hidden_states(run)
    _check_generation_settings(run, settings)
    store = run.store("generations")
    pending = [r for r in records if r.id not in store]
    # As many questions as fill one decoding batch (Generator.questions_per_batch), stored together.
    chunk_size = generator.get().questions_per_batch() if pending else 1
    gens = run_stage(
        store,
        "generate",
        records,
        compute,
        key=lambda r: r.id,
        chunk_size=chunk_size,
        progress=run.config.runtime.progress,
        upstream=lambda r: fps[r.id],
    )
    generator.record_batch_sizes(run, "generation", chunk_size)
    return gens


def run_experiment(config: RunConfig, output: str | os.PathLike[str], *, argv: Sequence[str] | None = None) -> Path:
    """The whole experiment (``python -m shapley run``): data -> generate -> entail -> score -> metrics.

    Every stage is resumable (stage files in the run directory); models are loaded only when a stage has
    pending questions, except for a new run, whose models are loaded before its directory is created (the
    entailment model first, since it is the one that cannot load offline by default, DeBERTa). A resume and every
    shard decode as the run began (``config.resolved``: its recorded rows per batch and prefix cache); a new
    run records the rows per batch its generator fixes. A record is recomputed when the record it was computed
    from was redone (entailment from its generation, scores from both). Returns the run directory.
    """
    if config.command != "run":
        raise ValueError("run_experiment needs a 'run' RunConfig (with generation settings)")
    stored = stored_run(output)
    data, records = run_questions(config)
    config = config.resolved(data, stored)
    backend, generator = EntailmentModel(config), GenerationModel(config)
    if stored is None:  # models that cannot load fail before the directory exists
        backend.get()
        rows = generator.get().fix_rows()
        assert config.generation is not None
        config = config.replace(generation=dataclasses.replace(config.generation, rows_per_batch=rows))
    fps = {r.id: fingerprint(r.to_dict()) for r in records}
    extra = {"questions_sha256": fingerprint([r.to_dict() for r in records])}
    with RunDir.open(output, config, config.run_record(output, stored, provenance(argv), extra)) as run:
        _store_questions(run, records, fps)
        gens = _generation_stage(run, records, generator, fps)
        entail_stage(
            run,
            [(r.id, r.question, list(gens[r.id]["samples"])) for r in records],
            backend,
            upstream=lambda qid: record_checksum(gens[qid]),
        )
        ent = run.store("entailment").records
        by_id = {r.id: r for r in records}

        def inputs(qid: str) -> tuple[score.ScoreInputs, str, Sequence[str]]:
            """A question's generation, entailment and references."""
            g, e = gens[qid], ent[qid]
            x = score.ScoreInputs.from_generation(Generation.from_dict(g), e["entail"], e["contradict"])
            return x, g["answer"], by_id[qid].references

        _score_and_write(
            run,
            records,
            inputs,
            lambda qid: fingerprint([record_checksum(gens[qid]), record_checksum(ent[qid]), fps[qid]]),
            lambda qid: "greedy",
            hidden_states(run, list(by_id)),  # ER's embeddings
        )
        return run.path
