"""Runs that fan out: a deterministic split of the questions into K shards, and the merge of the K run directories.

* ``--shard I/K`` (``run`` and ``score-samples``; :attr:`shapley.pipeline.config.DataSettings.shard`) keeps the
  questions, after ``--limit``, whose id falls in shard I (from 0) of K: :func:`shard_of`, a SHA-256 of the id
  (not Python's salted ``hash``), so that every process, machine and Python version splits alike. Each shard
  is its own resumable run directory; every score record keeps ``position``, the question's place in the
  unsharded input, so that the merge restores the unsharded order.
* :func:`merge_runs` (``python -m shapley merge SHARD_DIR... --output DIR``) checks the shards, writes their
  union as one run directory (stage files in the unsharded order, ``config.json`` with the shard removed and
  ``provenance.merged_from``), and recomputes there whatever spans questions, with the same code the unsharded
  run uses (:func:`shapley.pipeline.evaluate.write_run_outputs`): the bootstrap intervals, the ER fit,
  ``comparisons.csv`` and ``selection.csv``. The result equals the unsharded run's files, up to the
  entailment model's batch-composition noise (about 1e-7 on a GPU) in the scores.

The merge refuses (``ValueError`` naming the problem, before anything is written): a directory that is not a
sharded run; shards of different result settings or ``--limit`` (:meth:`RunConfig.result_settings` without the
shard) or different model fingerprints; a shard given twice or missing (I of K, each present once); an
unfinished shard; a question stored in a shard it does not belong to, or in two shards; gaps in the positions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from shapley.pipeline import evaluate
from shapley.pipeline.config import RunConfig, flag_of, parse_shard
from shapley.pipeline.samples import read_samples_file
from shapley.pipeline.settings import REPO_ROOT
from shapley.pipeline.store import (
    CONFIG_FILE,
    STAGE_FILES,
    JsonlStore,
    RunDir,
    atomic_write_bytes,
    encode_record,
    read_record,
    sha256_file,
)

T = TypeVar("T")

MERGED_FROM = "merged_from"
"""Key of ``config.json``'s provenance listing the shards a merged run directory was made from."""


def shard_of(qid: str, k: int) -> int:
    """The shard (0..k-1) of question id ``qid``: the first 8 bytes of SHA-256(id, UTF-8), big-endian, mod k.

    Examples:
        >>> shard_of("q1", 4), shard_of("q1", 4) == shard_of("q1", 4), shard_of("anything", 1)
        (2, True, 0)
    """
    if k < 1:
        raise ValueError(f"the number of shards must be >= 1; got {k}")
    digest = hashlib.sha256(str(qid).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % k


def take_shard(items: Sequence[T], shard: str | None, key: Callable[[T], str]) -> list[tuple[int, T]]:
    """``(position, item)`` for the items of ``shard`` (``"I/K"``; ``None``: all), ``position`` counted in
    ``items`` (the questions after ``--limit``), order kept."""
    pairs = list(enumerate(items))
    if shard is None:
        return pairs
    i, k = parse_shard(shard)
    return [(pos, it) for pos, it in pairs if shard_of(key(it), k) == i]


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
    if config.command == "run":
        return ("questions", "generations", "entailment", "scores")
    return ("entailment", "scores")


def read_shard(path: str | os.PathLike[str]) -> Shard:
    """Load one shard directory; ``ValueError`` / ``FileNotFoundError`` naming it when it cannot be merged."""
    p = Path(path)
    record = read_record(p)
    if record is None:
        raise FileNotFoundError(f"{p} is not a run directory (no {CONFIG_FILE})")
    config = RunConfig.from_stored(record)
    if config.data.shard is None:
        raise ValueError(f"{p} is not a sharded run (made without --shard)")
    i, k = parse_shard(config.data.shard)
    stores = {s: JsonlStore(p / STAGE_FILES[s]).load(repair=False) for s in _stages(config)}
    shard = Shard(p, record, config, i, k, stores)
    _check_finished(shard)
    return shard


def _check_finished(s: Shard) -> None:
    ids = {stage: set(recs) for stage, recs in s.stores.items()}
    scored = ids["scores"]
    for stage, have in ids.items():
        if have != scored:
            raise ValueError(
                f"{s.name} is unfinished: {len(have ^ scored)} question(s) are in {STAGE_FILES[stage]} or "
                f"{STAGE_FILES['scores']} but not both; rerun its command to complete it"
            )
    if not (s.path / "metrics.csv").is_file():
        raise ValueError(f"{s.name} is unfinished: no metrics.csv; rerun its command to complete it")
    for qid, r in s.stores["scores"].items():
        if shard_of(qid, s.count) != s.index:
            raise ValueError(
                f"{s.name}: question {qid!r} belongs to shard {shard_of(qid, s.count)}/{s.count}, not this one "
                "(overlapping or mislabelled shards)"
            )
        if not isinstance(r.get("position"), int):
            raise ValueError(f"{s.name}: the score record of {qid!r} has no 'position' (made by an older version)")
        limit = s.config.data.limit
        if limit is not None and r["position"] >= limit:
            raise ValueError(
                f"{s.name} stores questions beyond its --limit {limit} (an earlier call had a larger one); "
                "rerun it with the --limit of its stored questions"
            )


def _merged_config(config: RunConfig) -> RunConfig:
    return config.replace(
        data=dataclasses.replace(config.data, shard=None),
        runtime=dataclasses.replace(config.runtime, entail_cache=None),
    )


def _comparable(config: RunConfig) -> dict[str, Any]:
    keys = {k: v for k, v in config.result_settings().items() if k != "data.shard"}
    keys["data.limit"] = config.data.limit  # the split is made after --limit: the shards must share it
    return keys


def check_shards(shards: Sequence[Shard]) -> None:
    """Same settings, same model fingerprints, each of the K shards exactly once (``ValueError`` otherwise)."""
    if not shards:
        raise ValueError("merge needs at least one shard directory")
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
        for kind in ("model", "entailment"):
            a = (first.record.get("provenance", {}).get(kind) or {}).get("fingerprint")
            b = (s.record.get("provenance", {}).get(kind) or {}).get("fingerprint")
            if a is not None and b is not None and a != b:
                raise ValueError(
                    f"shards of different {kind} models: fingerprint {a!r} in {first.path}, {b!r} in {s.path}"
                )
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
    """Every question id with its shard, in the unsharded order (by ``position``); ``ValueError`` for an id in
    two shards, or positions that are not exactly 0..N-1."""
    owner: dict[str, Shard] = {}
    by_pos: dict[int, str] = {}
    for s in shards:
        for qid, r in s.stores["scores"].items():
            if qid in owner:
                raise ValueError(f"overlapping shards: question {qid!r} is in {owner[qid].path} and in {s.path}")
            owner[qid] = s
            pos = int(r["position"])
            if pos in by_pos:
                raise ValueError(f"position {pos} is held by {by_pos[pos]!r} and {qid!r}: the shards do not fit")
            by_pos[pos] = qid
    gaps = sorted(set(range(len(by_pos))) - set(by_pos))
    if gaps:
        raise ValueError(
            f"the shards miss {len(gaps)} question(s) of the input (positions {gaps[:5]}...): a shard is unfinished "
            "or was made from a different input"
        )
    return [(by_pos[p], owner[by_pos[p]]) for p in range(len(by_pos))]


# --------------------------------------------------------------------------------------------------
# Writing the union


def _check_output(output: Path, shards: Sequence[Shard]) -> None:
    if any(output.resolve() == s.path.resolve() for s in shards):
        raise ValueError(f"--output {output} is one of the shard directories")
    rec = read_record(output) if output.is_dir() else None
    if rec is not None and MERGED_FROM not in rec.get("provenance", {}):
        raise ValueError(f"--output {output} holds a run that is not a merge; choose a new directory")


def _embeddings(config: RunConfig, order: Sequence[tuple[str, Shard]]) -> dict[str, Any] | None:
    """Per-question embeddings for ER: the generations' (``run``) or the input file's (``score-samples``, when
    the file is still where it was and unchanged, else a note on stderr); ``None`` when there are none."""
    if config.command == "run":
        emb = {q: s.stores["generations"][q].get("embedding") for q, s in order}
        return {q: e for q, e in emb.items() if e is not None} or None
    if "ER" not in config.scoring.methods or config.data.path is None:
        return None
    path = Path(config.data.path)
    path = path if path.is_absolute() else REPO_ROOT / path  # stored relative to the repository
    if not path.is_file() or sha256_file(path) != config.data.sha256:
        why = "is missing" if not path.is_file() else "has changed"
        print(f"note: the input file {path} {why}: ER cannot be refitted on the union and is skipped", file=sys.stderr)
        return None
    items = read_samples_file(
        path,
        n_samples=config.data.n_samples,
        limit=config.data.limit,
        reference_field=config.data.reference_field or "references",
    )
    ids = {q for q, _ in order}
    return {it.id: it.embedding for it in items if it.id in ids and it.embedding is not None} or None


def _provenance(shards: Iterable[Shard]) -> list[dict[str, Any]]:
    out = []
    for s in sorted(shards, key=lambda s: s.index):
        prov = s.record.get("provenance", {})
        out.append(
            {
                "dir": str(s.path.resolve()),
                "shard": s.config.data.shard,
                "n_questions": len(s.stores["scores"]),
                "created": prov.get("created"),
                "questions_sha256": prov.get("questions_sha256"),
                "git": prov.get("git"),
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
    out = Path(output)
    shards = [read_shard(d) for d in shard_dirs]
    check_shards(shards)
    order = union_order(shards)
    _check_output(out, shards)
    config = _merged_config(shards[0].config)
    first_prov: Mapping[str, Any] = shards[0].record.get("provenance", {})
    with RunDir.open(out, config, argv=argv) as run:
        for stage in _stages(config):
            data = b"".join(encode_record(s.stores[stage][q]) for q, s in order)
            atomic_write_bytes(run.path / STAGE_FILES[stage], data)
        prov = run.record["provenance"]
        for kind in ("model", "entailment"):
            if first_prov.get(kind) is not None:
                prov[kind] = first_prov[kind]
        prov[MERGED_FROM] = _provenance(shards)
        run.save_config()
        run.record_outputs(len(order))
        evaluate.write_run_outputs(run, [q for q, _ in order], embeddings=_embeddings(config, order))
        return run.path
