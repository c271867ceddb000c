"""Append-only checksummed JSON lines, atomic writes, and the compact text-free copy of a run's records.

The storage layer of :mod:`shapley.pipeline.rundir.store` (see its docstring for the guarantees).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shapley.results.records import write_all, write_files

CHECKSUM_KEY = "_sha256"

CHUNK_KEY = "chunk"
UPSTREAM_KEY = "upstream_sha256"

STAGE_FILES = {stage: f"{stage}.jsonl" for stage in ("questions", "generations", "entailment", "scores")}
"""Each stage's file in a run directory, in the order the stages run."""

COMPACT_FILE = "stages.jsonl.gz"
"""The compact, text-free copy of a run's entailment and score records (:func:`write_compact`), committed where
the stage files are too large or hold text that is not ours to publish (the LLaMA-13B answers of Lin et al.)."""

COMPACT_STAGES: tuple[str, ...] = ("entailment", "scores")
TEXT_FIELDS: dict[str, tuple[str, ...]] = {"scores": ("answer",)}
"""Fields of a stage's records that hold answer text, left out of :data:`COMPACT_FILE`."""


class CorruptRecordWarning(UserWarning):
    """A stored line was torn, corrupt or duplicated; it was dropped and its question will be redone."""


class StaleRecordWarning(UserWarning):
    """A stored record was computed from inputs that have changed since; it is recomputed."""


# --------------------------------------------------------------------------------------------------
# Canonical JSON lines with checksums


def _json_default(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, (set, frozenset)):  # (tuples are JSON arrays already)
        return list(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"cannot store {type(o).__name__} in JSON")


def canonical_json(obj: Any) -> str:
    """Canonical JSON text: sorted keys, no spaces, UTF-8 kept, exact float repr (NaN/Infinity allowed)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default)


def fingerprint(obj: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``obj`` (e.g. the inputs a stored record was computed from)."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def record_checksum(record: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of ``record`` without its checksum field."""
    return fingerprint({k: v for k, v in record.items() if k != CHECKSUM_KEY})


def _normalised(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` without its checksum, as it reads back from its stored line (JSON types only)."""
    return json.loads(canonical_json({k: v for k, v in record.items() if k != CHECKSUM_KEY}))


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One stored line (with trailing newline): the record, normalised through JSON, plus its checksum."""
    body = _normalised(record)
    return (canonical_json({**body, CHECKSUM_KEY: fingerprint(body)}) + "\n").encode("utf-8")


def _verified(line: bytes) -> tuple[dict[str, Any] | None, str]:
    """The record of a stored line without its checksum, or None and why the line is not intact."""
    try:
        rec = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        return None, f"not valid JSON ({exc.__class__.__name__})"
    if not isinstance(rec, dict):
        return None, "not a JSON object"
    stored = rec.pop(CHECKSUM_KEY, None)
    if stored is None:
        return None, f"no {CHECKSUM_KEY} field"
    if stored != record_checksum(rec):
        return None, "checksum mismatch"
    return rec, ""


def read_json_file(path: str | os.PathLike[str], *, refusal: str = "") -> Any:
    """The parsed JSON of the file ``path`` (which must exist); ``ValueError`` naming the file when it is not valid
    JSON (UTF-8), with ``refusal`` appended to the message."""
    f = Path(path)
    try:
        return json.loads(f.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{f} is not valid JSON ({exc}){refusal}") from exc
    except RecursionError:
        raise ValueError(f"{f} is not valid JSON here (nested too deeply){refusal}") from None


class JsonlStore:
    """Append-only JSON-lines file of records keyed by ``id`` (see :mod:`shapley.pipeline.rundir.store` for the
    guarantees).

    ``required``: the fields besides ``id`` that a stored line must hold to be kept. Call :meth:`load` before
    :meth:`append_many` on an existing file (as :meth:`shapley.pipeline.rundir.store.RunDir.store` does): it
    verifies every line and repairs the file, so that an append never follows a torn line.
    """

    def __init__(self, path: str | os.PathLike[str], required: Sequence[str] = ()) -> None:
        self.path = Path(path)
        self.required = ("id", *required)
        self.records: dict[str, dict[str, Any]] = {}
        self.problems: list[tuple[int, str]] = []

    def load(self, *, repair: bool = True) -> dict[str, dict[str, Any]]:
        """Read and verify every line; drop (with a :class:`CorruptRecordWarning`) torn, corrupt and duplicate
        lines and, with ``repair``, rewrite the file atomically without them (readers that do not own the run,
        like the report, pass ``repair=False``). Returns ``{id: record}`` in file order."""
        self.records = {}
        self.problems = []
        if not self.path.exists():
            if not repair:  # a reader: the run's compact copy stands in for a stage file left out of git
                self.records = read_compact(self.path.parent).get(_STAGE_OF_FILE.get(self.path.name, ""), {})
            return self.records
        raw = self.path.read_bytes()
        torn = raw != b"" and not raw.endswith(b"\n")  # a write cut short: its line is unterminated
        lines = raw.split(b"\n")
        if not torn:
            lines.pop()  # the empty text after the last newline
        linenos: dict[str, int] = {}
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                self.problems.append((lineno, "blank line"))
                continue
            rec, why = _verified(line)
            if rec is not None and (miss := [k for k in self.required if k not in rec]):
                rec, why = None, f"missing field(s) {miss}"
            if rec is None:
                if torn and lineno == len(lines):
                    why += " (unterminated last line: torn write)"
                self.problems.append((lineno, why))
            elif (key := str(rec["id"])) in self.records:
                self.problems.append((lineno, f"duplicate id {key!r} (the first valid record is kept)"))
            else:
                self.records[key] = rec
                linenos[key] = lineno
        self._drop_incomplete_tail_chunk(linenos)
        for lineno, why in self.problems:
            warnings.warn(
                f"{self.path}: line {lineno} dropped: {why}; its question will be recomputed if needed",
                CorruptRecordWarning,
                stacklevel=2,
            )
        if repair and (torn or self.problems):  # a valid record that lost only its newline is kept, the file fixed
            self._rewrite()
        return self.records

    def _drop_incomplete_tail_chunk(self, linenos: Mapping[str, int]) -> None:
        """Drop the records of the file's last chunk if some of its records are missing (a torn write)."""
        if not self.records:
            return
        chunk = next(reversed(self.records.values())).get(CHUNK_KEY)
        if not isinstance(chunk, list) or all(str(i) in self.records for i in chunk):
            return
        for key in [str(i) for i in chunk if str(i) in self.records]:
            self.problems.append(
                (linenos[key], f"its chunk {chunk} was not stored whole (torn write); the chunk is recomputed whole")
            )
            del self.records[key]

    def _rewrite(self) -> None:
        """Replace the file atomically by the lines of :attr:`records`."""
        write_files({self.path: b"".join(encode_record(r) for r in self.records.values())})

    def append_many(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append several records with one ``os.write`` (``O_APPEND``, then ``fsync``): all or, after a crash,
        a torn tail that :meth:`load` detects (see :mod:`shapley.pipeline.rundir.store` on chunks)."""
        keys = [str(r["id"]) for r in records]
        for key in keys:
            if key in self.records or keys.count(key) > 1:
                raise ValueError(f"{self.path.name} already holds a record for id {key!r}")
        bodies = [_normalised(r) for r in records]
        try:
            write_all(self.path, b"".join(encode_record(b) for b in bodies), os.O_APPEND)
        except OSError as exc:  # e.g. a full disk (a torn tail is dropped by the next load): name the file
            raise OSError(exc.errno, f"cannot write {self.path}: {exc.strerror or exc}") from exc
        self.records.update((str(b["id"]), b) for b in bodies)

    def discard(self, keys: Iterable[str]) -> None:
        """Remove the records of ``keys`` (to be recomputed): the file is rewritten atomically without them."""
        gone = {str(k) for k in keys} & set(self.records)
        if gone:
            self.records = {k: r for k, r in self.records.items() if k not in gone}
            self._rewrite()

    def __contains__(self, key: object) -> bool:
        return str(key) in self.records

    def __len__(self) -> int:
        return len(self.records)


# --------------------------------------------------------------------------------------------------
# The compact copy of the entailment and score records

_STAGE_OF_FILE = {f: stage for stage, f in STAGE_FILES.items()}


def compact_records(
    records: Mapping[str, Mapping[str, Mapping[str, Any]]], ids: Iterable[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """What the compact copy holds of ``records`` (``{stage: {id: record}}`` of :data:`COMPACT_STAGES`): for each of
    ``ids`` (in order) that has records in every compact stage, ``{stage: {id: record}}`` without bookkeeping
    (``chunk``, ``upstream_sha256``) and without answer text (:data:`TEXT_FIELDS`)."""
    kept = [str(q) for q in ids if all(str(q) in records[s] for s in COMPACT_STAGES)]
    left_out = {s: {CHUNK_KEY, UPSTREAM_KEY, *TEXT_FIELDS.get(s, ())} for s in COMPACT_STAGES}
    return {
        s: {q: {k: v for k, v in records[s][q].items() if k not in left_out[s]} for q in kept} for s in COMPACT_STAGES
    }


def write_compact(run_dir: str | os.PathLike[str], ids: Sequence[str]) -> None:
    """Write ``run_dir/stages.jsonl.gz`` (:data:`COMPACT_FILE`): the :func:`compact_records` of the run's stage
    files for ``ids``, one checksummed line per question (``{"id", "entailment", "scores"}``), gzip with no
    timestamp, so that equal records give equal bytes. What ``beta-sweep``, the outputs and ``report``
    read (:meth:`JsonlStore.load` with ``repair=False``) when the stage files are absent."""
    d = Path(run_dir)
    stages = {s: JsonlStore(d / STAGE_FILES[s]).load(repair=False) for s in COMPACT_STAGES}
    kept = compact_records(stages, ids)
    lines = [encode_record({"id": q, **{s: kept[s][q] for s in COMPACT_STAGES}}) for q in kept[COMPACT_STAGES[0]]]
    write_files({d / COMPACT_FILE: gzip.compress(b"".join(lines), compresslevel=9, mtime=0)})


def read_compact(run_dir: str | os.PathLike[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{stage: {id: record}}`` from ``run_dir/stages.jsonl.gz`` (empty when there is none). ``ValueError`` naming
    the file and line for a line that is not intact (a committed file is never repaired)."""
    f = Path(run_dir) / COMPACT_FILE
    out: dict[str, dict[str, dict[str, Any]]] = {s: {} for s in COMPACT_STAGES}
    if not f.is_file():
        return out
    try:
        raw = gzip.decompress(f.read_bytes())
    except (OSError, EOFError) as exc:
        raise ValueError(f"{f} is not a readable gzip file ({exc})") from exc
    for lineno, line in enumerate(raw.splitlines(), start=1):
        rec, _ = _verified(line)
        if rec is None or not all(isinstance(rec.get(s), dict) for s in COMPACT_STAGES):
            raise ValueError(f"{f}, line {lineno}: not an intact record (checksum or layout)")
        for s in COMPACT_STAGES:
            out[s][str(rec["id"])] = rec[s]
    return out
