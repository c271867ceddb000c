"""The merge of the K run directories of a run split with ``--shard I/K`` (:mod:`shapley.pipeline.data.questions`:
each score record keeps ``position``, the question's place in the unsharded input).

:func:`merge_runs` (``python -m shapley merge SHARD_DIR... --output DIR``) checks the shards, writes their union as
one run directory (stage files in the unsharded order, ``config.json`` with the shard removed and
``provenance.merged_from``), and recomputes there whatever spans questions, with the same code the unsharded run
uses (:func:`shapley.pipeline.evaluate.metrics.write_run_outputs`): the bootstrap intervals, the ER fit,
and ``comparisons.csv``. The result equals the unsharded run's files byte for byte (each
question's generation and entailment are computed on their own, see ``tests/pipeline/test_invariance.py``).

The merge refuses (``ValueError`` naming the problem, before anything is written): a directory that is not a
sharded run; a shard that is running (the merge holds every shard's lock while it reads and writes); shards of
different result settings or ``--limit`` (:meth:`RunConfig.result_settings` without the shard) or different
model fingerprints, dtypes or device kinds; a shard given twice or missing (I of K, each present once); an
unfinished shard (its last call did not write its outputs, e.g. a resume with a larger ``--limit`` that was
killed; or the shards together miss some of the input's questions under the ``--limit``: a hole or a tail); a
question stored in a shard it does not belong to, or in two shards; gaps in the positions.

A ``run`` merge copies the shards' hidden-state files (``hidden/``), so that ER is refitted on the union and a
resume of the merged directory regenerates nothing. The merged ``config.json`` records in
``provenance.merged_from`` (:data:`MERGED_FROM`), one entry per shard: its directory (relative to the
repository), shard label, questions, the commits and dirty flags of all its invocations (``commits``,
``dirty``; :func:`shapley.pipeline.rundir.store.run_history` counts them, so a merged run is flagged as any run), and
the batch sizes each invocation used (``batch_sizes``). A merge killed at any point can be run again into the same
output.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from shapley.pipeline.config import RunConfig, flag_of
from shapley.pipeline.data.questions import sample_questions, shard_of
from shapley.pipeline.evaluate import metrics as evaluate
from shapley.pipeline.experiment.pipelines import hidden_states
from shapley.pipeline.rundir.jsonl import (
    COMPACT_STAGES,
    STAGE_FILES,
    JsonlStore,
    encode_record,
    write_compact,
)
from shapley.pipeline.rundir.provenance import provenance, repo_relative
from shapley.pipeline.rundir.records import HIDDEN_DIR, HIDDEN_KEY, check_hidden_dir
from shapley.pipeline.rundir.settings import REPO_ROOT
from shapley.pipeline.rundir.store import COMPUTE_KEYS, RunDir, lock_run_dir, require_record, run_history, stored_run
from shapley.results.records import sha256_file, write_files

MERGED_FROM = "merged_from"
"""Key of ``config.json``'s provenance listing the shards a merged run directory was made from."""

MODEL_KINDS = ("model", "entailment")
"""Keys of ``config.json``'s provenance that describe a model (:meth:`RunDir.record_fingerprint`)."""


# --------------------------------------------------------------------------------------------------
# Reading and checking the shards


@dataclasses.dataclass
class Shard:
    """One shard's run directory as the merge reads it (stores loaded read-only)."""

    path: Path
    record: dict[str, Any]
    config: RunConfig
    index: int
    count: int
    stores: dict[str, dict[str, dict[str, Any]]]

    @property
    def name(self) -> str:
        return f"{self.path} (shard {self.index}/{self.count})"


def _stages(config: RunConfig) -> tuple[str, ...]:
    """The stage files of a run: all four (``run``), or entailment and scores (``score-samples``, the stages the
    compact copy holds)."""
    return tuple(STAGE_FILES) if config.command == "run" else COMPACT_STAGES


def read_shard(path: str | os.PathLike[str], locks: contextlib.ExitStack) -> Shard:
    """Load one shard directory under its lock, held until ``locks`` closes (``ValueError`` when a run holds it: the
    shard is still running); ``ValueError`` / ``FileNotFoundError`` naming it when it cannot be merged."""
    p = Path(path)
    config = RunConfig.from_stored(require_record(p))
    if config.data.shard is None:
        raise ValueError(f"{p} is not a sharded run (made without --shard)")
    i, k = (int(part) for part in config.data.shard.split("/"))  # as the settings wrote it: I/K
    try:
        locks.callback(os.close, lock_run_dir(p))
    except RuntimeError as exc:
        raise ValueError(f"{p} is in use by another process (a shard still running); merge it once it ends") from exc
    record = require_record(p)  # again, under the lock
    config = RunConfig.from_stored(record)
    shard = Shard(
        p, record, config, i, k, {s: JsonlStore(p / STAGE_FILES[s]).load(repair=False) for s in _stages(config)}
    )
    _check_finished(shard)
    return shard


def _check_finished(s: Shard) -> None:
    scored = set(s.stores["scores"])
    for stage, recs in s.stores.items():
        if set(recs) != scored:
            raise ValueError(
                f"{s.name} is unfinished: {len(set(recs) ^ scored)} question(s) are in {STAGE_FILES[stage]} or "
                f"{STAGE_FILES['scores']} but not both; rerun its command to complete it"
            )
    if not (s.path / "metrics.csv").is_file():
        raise ValueError(f"{s.name} is unfinished: no metrics.csv; rerun its command to complete it")
    outputs = s.record.get("outputs", {})
    last = len(s.record["invocations"]) - 1
    if outputs.get("invocation") != last or outputs.get("limit") != s.config.data.limit:
        raise ValueError(
            f"{s.name} is unfinished: its last call (--limit {s.config.data.limit}) did not write its outputs "
            "(killed, or still running); rerun its command to complete it"
        )
    limit = s.config.data.limit
    for qid, r in s.stores["scores"].items():
        if (owner := shard_of(qid, s.count)) != s.index:
            raise ValueError(
                f"{s.name}: question {qid!r} belongs to shard {owner}/{s.count}, not this one "
                "(overlapping or mislabelled shards)"
            )
        if limit is not None and r["position"] >= limit:
            raise ValueError(
                f"{s.name} stores questions beyond its --limit {limit} (an earlier call had a larger one); "
                "rerun it with the --limit of its stored questions"
            )


def _comparable(config: RunConfig) -> dict[str, Any]:
    keys = {k: v for k, v in config.result_settings().items() if k != "data.shard"}
    keys["data.limit"] = config.data.limit  # the split is made after --limit: the shards must share it
    return keys


def check_shards(shards: Sequence[Shard]) -> None:
    """Same settings, same model fingerprints, each of the K shards exactly once (``ValueError`` otherwise);
    ``shards`` holds one at least (``merge`` takes one or more directories)."""
    first = shards[0]
    ref = _comparable(first.config)
    for s in shards[1:]:
        other = _comparable(s.config)
        for key in sorted(set(ref) | set(other)):
            if ref.get(key) != other.get(key):
                raise ValueError(
                    f"shards of different settings: {key!r} ({flag_of(key)}) is {ref.get(key)!r} in {first.path} "
                    f"but {other.get(key)!r} in {s.path}"
                )
        for kind, key in itertools.product(MODEL_KINDS, COMPUTE_KEYS):
            a, b = (shard.record["provenance"].get(kind, {}).get(key) for shard in (first, s))
            if a is not None and b is not None and a != b:  # a shard that stored nothing never loaded its models
                raise ValueError(f"shards of different {kind} models: {key} {a!r} in {first.path}, {b!r} in {s.path}")
    counts = sorted({s.count for s in shards})
    if len(counts) > 1:
        raise ValueError(f"shards of different counts K: {', '.join(f'/{k}' for k in counts)}")
    k = counts[0]
    seen: dict[int, Path] = {}
    for s in shards:
        if s.index in seen:
            raise ValueError(f"shard {s.index}/{k} given twice: {seen[s.index]} and {s.path}")
        seen[s.index] = s.path
    missing = [i for i in range(k) if i not in seen]
    if missing:
        raise ValueError(f"missing shard(s) {', '.join(f'{i}/{k}' for i in missing)}")


def union_order(shards: Sequence[Shard]) -> list[tuple[str, Shard]]:
    """Every question id with its shard, in the unsharded order (by ``position``); ``ValueError`` for positions that
    are not exactly 0..N-1. No id is in two shards: each holds only its own (:func:`read_shard`) and each index is
    given once (:func:`check_shards`)."""
    owner: dict[str, Shard] = {}
    by_pos: dict[int, str] = {}
    for s in shards:
        for qid, r in s.stores["scores"].items():
            owner[qid] = s
            pos = int(r["position"])
            if pos in by_pos:
                raise ValueError(f"position {pos} is held by {by_pos[pos]!r} and {qid!r}: the shards do not fit")
            by_pos[pos] = qid
    totals = {s.record["outputs"]["input_questions"] for s in shards}
    if len(totals) > 1:
        raise ValueError(f"the shards were made from inputs of different sizes {sorted(totals)}")
    (total,) = totals
    gaps = sorted(set(range(total)) - set(by_pos))
    if gaps:
        raise ValueError(
            f"the shards miss {len(gaps)} question(s) of the input (positions {gaps[:5]}...): a shard is unfinished "
            "or was made from a different input"
        )
    return [(by_pos[p], owner[by_pos[p]]) for p in range(total)]


# --------------------------------------------------------------------------------------------------
# Writing the union


def _stored_output(output: Path, shards: Sequence[Shard]) -> dict[str, Any] | None:
    """The record of an earlier merge into ``output`` (None: a new output); ``ValueError`` for a shard directory or
    another run."""
    if any(output.resolve() == s.path.resolve() for s in shards):
        raise ValueError(f"--output {output} is one of the shard directories")
    rec = stored_run(output)
    if rec is not None and MERGED_FROM not in rec["provenance"]:
        raise ValueError(f"--output {output} holds a run that is not a merge; choose a new directory")
    return rec


def _copy_hidden_states(output: Path, order: Sequence[tuple[str, Shard]]) -> None:
    """Copy every hidden-state file that a merged generation record points to into ``output/hidden/`` (the
    names are digests of their content, so the shards' files never collide). Every shard's ``hidden/`` and the
    output's are checked before the first byte is written (:func:`check_hidden_dir`: no link out of a run
    directory is followed, and no file is written through a link)."""
    names = {
        (s.path, ref["file"])
        for q, s in order
        if isinstance(ref := s.stores["generations"][q].get(HIDDEN_KEY), Mapping) and isinstance(ref.get("file"), str)
    }
    for d in (output, *sorted({src_dir for src_dir, _ in names})):
        check_hidden_dir(d)
    links = [p for src_dir, name in sorted(names) for p in (src_dir / name, output / name) if p.is_symlink()]
    if links:
        raise ValueError(
            f"{links[0]} is a symbolic link; hidden-state files are never copied through one: replace it by the file"
        )
    for src_dir, name in sorted(names):
        src, dst = src_dir / name, output / name
        if ".." in Path(name).parts or Path(name).parts[0] != HIDDEN_DIR:  # (an absolute name starts with "/")
            continue  # never copied from or to outside the run directories; the reader refuses it too
        if src.is_file() and not (dst.is_file() and sha256_file(dst) == sha256_file(src)):
            dst.parent.mkdir(parents=True, exist_ok=True)
            write_files({dst: src.read_bytes()})


def _embeddings(config: RunConfig, order: Sequence[tuple[str, Shard]], run: RunDir) -> dict[str, Any] | None:
    """Per-question embeddings for ER: the hidden states of the generations (``run``, read from the merged run's
    copies, :func:`~shapley.pipeline.experiment.pipelines.hidden_states`) or the input file's (``score-samples``,
    when the file is still where it was and unchanged, else a note on stderr); ``None`` when there are none."""
    if config.command == "run":
        return hidden_states(run, [q for q, _ in order]) or None
    if "ER" not in config.scoring.methods or config.data.path is None:
        return None
    path = Path(config.data.path)
    path = path if path.is_absolute() else REPO_ROOT / path  # stored relative to the repository
    if not path.is_file() or sha256_file(path) != config.data.sha256:
        why = "is missing" if not path.is_file() else "has changed"
        print(f"note: the input file {path} {why}: ER cannot be refitted on the union and is skipped", file=sys.stderr)
        return None
    # the input's questions under the --limit: the union of the shards (union_order checked it)
    _, items = sample_questions(config.replace(data=dataclasses.replace(config.data, path=str(path))))
    return {it.id: it.embedding for it in items if it.embedding is not None} or None


def _provenance(shards: Iterable[Shard]) -> list[dict[str, Any]]:
    out = []
    for s in sorted(shards, key=lambda s: s.index):
        prov = s.record["provenance"]
        history = run_history(s.record)
        out.append(
            {
                "dir": repo_relative(s.path),
                "shard": s.config.data.shard,
                "n_questions": len(s.stores["scores"]),
                "created": prov.get("created"),
                "questions_sha256": prov.get("questions_sha256"),
                "git": prov.get("git"),
                "commits": list(history.commits),
                "dirty": history.dirty,
                "batch_sizes": [inv.get("batch_sizes") for inv in s.record["invocations"]],
                "device": prov.get("device"),
            }
        )
    return out


def merge_runs(
    shard_dirs: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *, argv: Sequence[str] | None = None
) -> Path:
    """Merge the K shard directories of one sharded run into ``output`` (see the module docstring).

    ``output`` must be new, empty, or an earlier merge output (rewritten). Returns the merged run directory.
    """
    read: dict[Path, Shard] = {}
    with contextlib.ExitStack() as locks:  # every shard's lock, held while it is read and merged
        for d in shard_dirs:  # a directory given twice is read (and locked) once; check_shards names it
            if Path(d).resolve() not in read:
                read[Path(d).resolve()] = read_shard(d, locks)
        return _merge([read[Path(d).resolve()] for d in shard_dirs], Path(output), argv)


def _merge(shards: Sequence[Shard], out: Path, argv: Sequence[str] | None) -> Path:
    check_shards(shards)
    order = union_order(shards)
    stored = _stored_output(out, shards)
    config = shards[0].config  # without the shard and the shard's own pair cache
    config = config.replace(
        data=dataclasses.replace(config.data, shard=None),
        runtime=dataclasses.replace(config.runtime, entail_cache=None),
    )
    first = shards[0].record["provenance"]
    models = {kind: first[kind] for kind in MODEL_KINDS if kind in first}
    record = config.run_record(out, stored, provenance(argv), {MERGED_FROM: _provenance(shards), **models})
    with RunDir.open(out, config, record) as run:
        if config.command == "run":
            _copy_hidden_states(run.path, order)  # before the records that point to them
        for stage in _stages(config):
            data = b"".join(encode_record(s.stores[stage][q]) for q, s in order)
            write_files({run.path / STAGE_FILES[stage]: data})
        run.record_outputs(len(order), input_questions=len(order))
        evaluate.write_run_outputs(run, [q for q, _ in order], embeddings=_embeddings(config, order, run))
        write_compact(run.path, [q for q, _ in order])
        return run.path
