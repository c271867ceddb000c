"""Which stage-file content each derived file of a run was computed from, and whether it still matches.

The derived files (:data:`RUN_OUTPUTS`, written by :func:`shapley.pipeline.evaluate.metrics.write_run_outputs`, and
:data:`SWEEP_OUTPUTS`, written by :func:`shapley.pipeline.evaluate.metrics.write_beta_sweep`) are functions of the run's
per-question records and settings. ``derived.json`` in the run directory records, for each derived file, the
SHA-256 of its bytes and an *input digest*: the SHA-256 of the canonical JSON of the stage files' records it was
computed from (every stored record of those stages, keyed by id, without bookkeeping: :data:`BOOKKEEPING_KEYS`
and keys starting with ``_``), the ids it describes, in order, and the settings that change its numbers (the
run's scoring settings and seed, and a sweep's own arguments). Hidden-state files (ER's input) are not part of
the digest.

:func:`derived_status` recomputes the digests from the stage files and says, per derived file present:
``fresh``; ``stale: ...`` (its inputs or its bytes changed since it was computed, or ``derived.json`` holds no
record of it; the reasons are :func:`shapley.results.records.stale_reasons`); ``unverified (no stage files)``
(neither the stage files it was computed from nor the run's compact copy are in the directory: only its bytes
are checked).

Committed runs keep their JSONL stage files out of git and commit the compact copy
(:data:`shapley.pipeline.rundir.jsonl.COMPACT_FILE`: the entailment and score records of the questions that have both,
without answer text). So each entry also records a *compact digest*: the same digest over exactly what that copy
holds (:data:`shapley.pipeline.rundir.jsonl.TEXT_FIELDS` left out, only questions with records in both stages). Where a
stage file is absent, the check runs against the compact copy instead, so a clean clone verifies every committed
run from git alone. The answer text is then not covered; every number is.
:func:`stale_outputs` lists the stale ones; ``report`` and the book refuse them.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from shapley.pipeline.rundir.jsonl import (
    COMPACT_FILE,
    COMPACT_STAGES,
    STAGE_FILES,
    JsonlStore,
    canonical_json,
    compact_records,
    fingerprint,
    read_compact,
    read_json_file,
)
from shapley.pipeline.rundir.store import read_config
from shapley.results import records

DERIVED_FILE = "derived.json"
SCHEMA = 1

RUN_OUTPUTS: tuple[str, ...] = ("scores.csv", "metrics.csv", "skipped.csv", "comparisons.csv")
"""Derived files computed from the ``scores`` stage (score records) and the run's settings. A file that older
versions also derived (``selection.csv``, ``selection_tests.csv``) and a committed run still holds is not
checked: its entry in ``derived.json`` is kept and read by nothing."""

SWEEP_OUTPUTS: tuple[str, ...] = ("beta_sweep.csv", "beta_sweep_per_question.csv")
"""Derived files computed from the ``entailment`` and ``scores`` stages and the sweep's arguments."""

BOOKKEEPING_KEYS = frozenset({"chunk", "position", "upstream_sha256", "provenance", "timing", "timings"})
"""Record fields that say how a record was computed or stored, not what it holds: left out of the digests."""

NO_STAGE_FILES = "unverified (no stage files)"
FRESH = "fresh"

Source = Literal["stage files", "compact of stage files", "compact file"]
"""Where :class:`_Records` reads the records a digest covers (see :meth:`_Records.digest`)."""


def _content(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in BOOKKEEPING_KEYS and not k.startswith("_")}


class _Records:
    """The stored records of one run directory, each source read at most once: the stage files (whole records) and
    the compact copy; the run's settings likewise, and each digest computed once."""

    def __init__(self, run_dir: str | os.PathLike[str], read: Mapping[str, Mapping[str, dict[str, Any]]] | None = None):
        """``read``: ``{stage: {id: record}}`` as the caller read them from the stage files (the digests then cover
        what was read, not what the files hold later)."""
        self.dir = Path(run_dir)
        self._stages: dict[str, dict[str, dict[str, Any]]] = {s: dict(r) for s, r in (read or {}).items()}
        self._digests: dict[str, str | None] = {}

    def stage_files(self, stages: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]] | None:
        """``{stage: {id: record}}`` from the stage files (None if one of them is missing)."""
        if not all((self.dir / STAGE_FILES[s]).is_file() for s in stages):
            return None
        for s in stages:
            if s not in self._stages:
                self._stages[s] = JsonlStore(self.dir / STAGE_FILES[s]).load(repair=False)
        return {s: self._stages[s] for s in stages}

    @functools.cached_property
    def compact(self) -> dict[str, dict[str, dict[str, Any]]] | None:
        """``{stage: {id: record}}`` from :data:`COMPACT_FILE` (None if there is none)."""
        return read_compact(self.dir) if (self.dir / COMPACT_FILE).is_file() else None

    @functools.cached_property
    def settings(self) -> dict[str, Any]:
        """The run's settings that change the derived numbers: its scoring settings and seed."""
        config = read_config(self.dir)
        return {"scoring": dataclasses.asdict(config.scoring), "seed": config.seed}

    def _content_of(self, source: Source, stages: Sequence[str], ids: Sequence[str] | None) -> dict[str, Any] | None:
        """``{stage: {id: record content}}`` of ``stages`` from ``source``: every stored record of the stage files,
        or what the compact copy holds (:func:`compact_records` of ``ids``, or of all) from the stage files or from
        :data:`COMPACT_FILE`. None when that source is missing or, for the compact copy, a stage is not in it."""
        if source == "stage files":
            records = self.stage_files(stages)
        elif not set(stages) <= set(COMPACT_STAGES):
            return None
        else:
            records = self.compact if source == "compact file" else self.stage_files(COMPACT_STAGES)
            if records is not None:
                records = compact_records(records, records[COMPACT_STAGES[0]] if ids is None else ids)
        return None if records is None else {s: {q: _content(r) for q, r in records[s].items()} for s in stages}

    def digest(self, source: Source, stages: Sequence[str], ids: Sequence[str] | None, args: Any) -> str | None:
        """SHA-256 of the content of ``stages``' records from ``source`` (:meth:`_content_of`), ``ids``, the run's
        :attr:`settings` and ``args`` (None when that content is missing); computed once for each set of
        arguments."""
        key = fingerprint([source, stages, ids, args])
        if key not in self._digests:
            content = self._content_of(source, stages, ids)
            body = {"stages": content, "ids": None if ids is None else [str(i) for i in ids], "args": dict(args or {})}
            self._digests[key] = None if content is None else fingerprint({**body, "settings": self.settings})
        return self._digests[key]


def read(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The parsed ``derived.json`` (None when absent); a damaged one raises ValueError naming it."""
    f = Path(run_dir) / DERIVED_FILE
    if not f.is_file():
        return None
    rec = read_json_file(f)
    if not isinstance(rec, dict) or not isinstance(rec.get("files"), dict):
        raise ValueError(f"{f}: expected an object with a 'files' object")
    for name, entry in rec["files"].items():
        if not isinstance(entry, dict):
            raise ValueError(
                f"{f}: the entry of {name!r} must be an object; got {type(entry).__name__} (the file is damaged: "
                "delete it and resume the run, which records every derived file again)"
            )
    return rec


def record(
    run_dir: str | os.PathLike[str],
    texts: Mapping[str, str],
    *,
    stages: Sequence[str],
    ids: Sequence[str] | None,
    args: Mapping[str, Any] | None = None,
    read_records: Mapping[str, Mapping[str, dict[str, Any]]] | None = None,
) -> None:
    """Record in ``derived.json`` that the files ``texts`` (name -> text as written) come from the content of
    ``stages`` for ``ids`` (and ``args``); other files' entries are kept. ``read_records``: ``{stage: {id:
    record}}`` as the caller read and computed them from the stage files; the digests are of those (what was
    read), not of what the files hold now. The caller holds the run's lock (:func:`shapley.pipeline.rundir.store.
    lock_run_dir`), so that two read-modify-writes of ``derived.json`` never lose an entry."""
    rec = read(run_dir) or {"schema": SCHEMA, "files": {}}
    stored = _Records(run_dir, read_records)  # each stage file read once, each digest computed once for all
    for name, text in texts.items():
        rec["files"][name] = {
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "stages": list(stages),
            "ids": None if ids is None else [str(i) for i in ids],
            "args": dict(args or {}),
            "inputs": stored.digest("stage files", stages, ids, args),
            "compact_inputs": stored.digest("compact of stage files", stages, ids, args),
        }
    _write(run_dir, rec)


def _write(run_dir: str | os.PathLike[str], rec: Mapping[str, Any]) -> None:
    records.write_files({Path(run_dir) / DERIVED_FILE: json.dumps(json.loads(canonical_json(rec)), indent=1) + "\n"})


def forget(run_dir: str | os.PathLike[str], names: Sequence[str]) -> None:
    """Remove the files ``names`` and their entries in ``derived.json`` (under the run's lock, as :func:`record`)."""
    for name in names:
        (Path(run_dir) / name).unlink(missing_ok=True)
    rec = read(run_dir)
    if rec is not None and any(n in rec["files"] for n in names):
        for n in names:
            rec["files"].pop(n, None)
        _write(run_dir, rec)


def _status(stored: _Records, name: str, entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return f"stale: {DERIVED_FILE} holds no record of {name}"
    stages, ids, args = entry.get("stages") or (), entry.get("ids"), entry.get("args")
    now, recorded = stored.digest("stage files", stages, ids, args), entry.get("inputs")
    source = ", ".join(STAGE_FILES.get(s, s) for s in stages) + " or the run's settings"
    if now is None and entry.get("compact_inputs") is not None:  # stage files left out: check the compact copy
        now, recorded = stored.digest("compact file", stages, ids, args), entry["compact_inputs"]
        source = COMPACT_FILE + " or the run's settings"
    was, current = {name: entry.get("sha256")}, {name: records.sha256_file(stored.dir / name)}
    if now is not None:
        was[source], current[source] = recorded, now
    reasons = records.stale_reasons({"inputs": was}, {"inputs": current})
    if reasons:
        return f"stale: {'; '.join(reasons)}"
    return FRESH if now is not None else NO_STAGE_FILES


def derived_status(run_dir: str | os.PathLike[str], names: Sequence[str] | None = None) -> dict[str, str]:
    """Each derived file present in ``run_dir`` (of ``names``, default all) -> ``fresh``, ``stale: <why>`` or
    :data:`NO_STAGE_FILES` (see the module docstring)."""
    path = Path(run_dir)
    rec = read(path)
    files = rec["files"] if rec is not None else {}
    stored = _Records(path)  # each stage file and the compact copy read once for all entries
    wanted = [n for n in (*RUN_OUTPUTS, *SWEEP_OUTPUTS) if names is None or n in names]
    return {name: _status(stored, name, files.get(name)) for name in wanted if (path / name).is_file()}


def stale_outputs(run_dir: str | os.PathLike[str]) -> list[str]:
    """The derived files of ``run_dir`` that no longer match its stage files or settings (see
    :func:`derived_status`; files without stage files are not listed)."""
    return [name for name, s in derived_status(run_dir).items() if s.startswith("stale")]
