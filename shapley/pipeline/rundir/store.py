"""Run directories: append-only checksummed JSON lines, atomic writes, provenance, and the run's config.

A run is a directory::

    config.json        {"schema": 4, "config": RunConfig, "provenance": {...}, "invocations": [...],
                        "outputs"?: {...}} (see :meth:`RunDir.open`)
    questions.jsonl    run only: one record per question: its id and ``sha256``, the fingerprint of the question
                       as the data module builds it (question, references, prompt, context). No dataset text:
                       the questions are rebuilt from the data file (whose fingerprint is ``config.data.sha256``)
                       on every call.
    generations.jsonl  run only: one Generation per question (samples, token log-probs, p(True), A4C reply)
    entailment.jsonl   one record per question: n, entail (n x n nested lists), contradict (or null)
    scores.jsonl       one record per question: correctness, scores {method: float}, skipped {method: reason},
                       diagnostics (shap_psd_repaired, shap_min_eig, n_clusters, ...)
    scores.csv, metrics.csv, skipped.csv   written by :mod:`shapley.pipeline.evaluate.metrics`
    stages.jsonl.gz    the entailment and score records without answer text or bookkeeping (gzip, no timestamp;
                       :func:`write_compact`), rewritten with the outputs; readers (``repair=False``) fall back to
                       it when a stage file is absent, so that a run whose JSONL files are left out of git (the
                       LLaMA-13B runs) still recomputes its beta sweep, outputs and report
    hidden/            run only: the judged answers' hidden states (``.npz``, :mod:`shapley.pipeline.rundir.records`)
    .lock              advisory lock (flock) so that two processes never write one run

Storage guarantees (:class:`JsonlStore`):

* Every record is one line of canonical JSON (sorted keys, Python's float repr, which round-trips
  exactly) with a ``_sha256`` field: the SHA-256 of the canonical JSON of the record without it.
* A line is appended with a single ``os.write`` on a descriptor opened with ``O_APPEND``, then
  ``fsync``: a crash leaves at most one torn line, at the end.
* On resume every line is verified (JSON, checksum, required fields, one record per id). A torn or
  corrupt line anywhere (not only the last) is reported with a warning and its question is recomputed;
  the file is first rewritten atomically (temp file + ``os.replace``) with only the valid records, so
  later appends never follow garbage. Duplicate ids keep the first valid record.
* Nothing already valid is recomputed; settings that change results must match the stored config
  (``ValueError`` naming the key, see :meth:`shapley.pipeline.config.RunConfig.result_settings`).
* No pickle anywhere: JSON lines and CSV only. Matrices are nested lists of floats (exact).
* Chunks are atomic: the records that a stage computes together (one batch of questions, whose numbers may
  depend on the batch's composition) are appended with one write (:meth:`JsonlStore.append_many`), each
  carrying the ids of its chunk (``chunk``). A write torn by a crash leaves the file's last chunk incomplete;
  :meth:`JsonlStore.load` then drops what is left of that chunk, so that the chunk is recomputed whole, with
  the same composition, and a resumed run equals an uninterrupted one.
* Records that depend on another stage carry the fingerprint of their inputs (``upstream_sha256``, e.g. the
  checksum of the generation record an entailment record was computed from). A stored record whose inputs
  changed (an upstream record was redone) is recomputed, and so is one that does not say from what.

Test hooks (read from the environment, for the resumption tests only; unset in normal use):

* ``SHAPLEY_TEST_SLEEP_PER_QUESTION``: seconds to sleep before storing each computed record of any stage.
* ``SHAPLEY_TEST_CALL_LOG``: path of a file to which ``"<stage>\\t<id>\\n"`` is appended after each record
  a stage computes and stores (counts recomputations).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shapley.pipeline.config import RunConfig, json_object
from shapley.pipeline.rundir.jsonl import (
    STAGE_FILES,
    JsonlStore,
    canonical_json,
    read_json_file,
)
from shapley.pipeline.rundir.provenance import device_info
from shapley.pipeline.rundir.records import HIDDEN_DIR
from shapley.results.records import write_files

CONFIG_FILE = "config.json"
LOCK_FILE = ".lock"

TEST_SLEEP_ENV = "SHAPLEY_TEST_SLEEP_PER_QUESTION"
TEST_CALL_LOG_ENV = "SHAPLEY_TEST_CALL_LOG"

COMPUTE_KEYS = ("fingerprint", "dtype", "device_kind", "computation")
"""What a run's model information in provenance pins (:meth:`RunDir.record_fingerprint`): the weights, the dtype
they compute in, the kind of device and, for entailment, how its forward passes are formed (the backend's
``computation``: batching rule and pass limits, :mod:`shapley.pipeline.entail.base`); every number a model stores
depends on all of them."""

REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "questions": (),
    "generations": ("samples", "answer"),
    "entailment": ("n", "entail", "contradict"),
    "scores": ("correct", "correctness_value", "scores", "skipped", "diagnostics"),
}
"""The fields besides ``id`` that a stored record of each stage must hold (:class:`JsonlStore`)."""


def read_record(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The parsed ``config.json`` of run directory ``path`` (None if it has none).

    Raises ``ValueError`` naming the file when it is not valid JSON or holds no readable configuration.
    """
    f = Path(path) / CONFIG_FILE
    if not f.is_file():
        return None
    rec = read_json_file(f, refusal="; refusing to use this run directory")
    try:
        RunConfig.from_stored(rec)
        # besides the configuration: provenance and outputs (once written) objects, invocations a list of objects
        json_object(rec.get("provenance"), "'provenance'")
        json_object(rec.get("outputs", {}), "'outputs'")
        inv = rec.get("invocations")
        if not isinstance(inv, list) or not all(isinstance(i, Mapping) for i in inv):
            raise ValueError("'invocations' must be a list of JSON objects")
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{f}: not a readable shapley run configuration ({exc})") from exc
    return rec


def require_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """:func:`read_record` of a run directory that must exist (``FileNotFoundError`` when it has no config.json)."""
    rec = read_record(path)
    if rec is None:
        raise FileNotFoundError(f"{path} is not a run directory (no {CONFIG_FILE})")
    return rec


@dataclass(frozen=True)
class RunHistory:
    """How a run directory was made (:func:`run_history`): every invocation's command line, in order; the
    git commits they ran at (distinct, in order of first use); whether any ran from a dirty tree (None:
    unknown for every invocation)."""

    commands: tuple[str, ...]
    commits: tuple[str, ...]
    dirty: bool | None

    @property
    def multi_commit(self) -> bool:
        """The invocations ran at more than one commit."""
        return len(self.commits) > 1


def run_history(run: str | os.PathLike[str] | Mapping[str, Any]) -> RunHistory:
    """The recorded command lines and commits of a run directory (or of its parsed ``config.json``).

    A merged run (``provenance.merged_from``, :mod:`shapley.pipeline.experiment.merge`) also counts the commits and
    dirty flags of every shard's invocations (each entry's ``commits`` and ``dirty``), so that it is flagged as any
    run would be.
    """
    rec = run if isinstance(run, Mapping) else require_record(run)
    invocations = rec.get("invocations", [])
    gits = [inv.get("git") or {} for inv in invocations]
    shards = rec.get("provenance", {}).get("merged_from", [])
    commits = [git.get("commit") for git in gits] + [c for shard in shards for c in shard["commits"]]
    known = [d for d in [git.get("dirty") for git in gits] + [shard["dirty"] for shard in shards] if d is not None]
    return RunHistory(
        tuple(str(inv.get("command_line", "")) for inv in invocations),
        tuple(dict.fromkeys(c for c in commits if c)),  # distinct, in order of first use
        None if not known else any(known),
    )


def read_config(path: str | os.PathLike[str]) -> RunConfig:
    """The :class:`RunConfig` of an existing run directory (``FileNotFoundError`` if it has no config.json)."""
    return RunConfig.from_stored(require_record(path))


def stored_run(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The parsed ``config.json`` of the run directory ``path`` to write (None for a new run: ``path`` absent, or
    holding only the project's own temporaries). ``ValueError`` when ``path`` exists and is not a directory, or is a
    directory that is not empty and holds no run (or a ``config.json`` that :func:`read_record` refuses)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"output {p} exists and is not a directory")
    rec = read_record(p)  # None where there is no directory
    if rec is None and p.is_dir() and not stored_nothing(p):
        raise ValueError(f"output directory {p} is not empty and holds no {CONFIG_FILE}; choose a new one")
    return rec


def _is_own_temporary(name: str) -> bool:
    """A temporary file of :func:`~shapley.results.records.write_files` (``.<name>.tmp-<pid>``) or the lock file."""
    return name == LOCK_FILE or (name.startswith(".") and ".tmp-" in name and name.rsplit("-", 1)[-1].isdigit())


def stored_nothing(path: Path) -> bool:
    """Whether ``path`` holds nothing but the project's own temporary files and lock (counts as empty)."""
    return path.is_dir() and all(_is_own_temporary(x.name) for x in path.iterdir())


def _check_storable(path: Path, record: Mapping[str, Any]) -> None:
    """``ValueError`` naming the text when the run directory's path or its record (a setting, the command line)
    holds text that cannot be written as UTF-8 (e.g. a file name of invalid UTF-8 bytes, read as lone surrogates)."""
    for what, text in (("the output directory", str(path)), (CONFIG_FILE, json.dumps(record, ensure_ascii=False))):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = exc.object[max(0, exc.start - 40) : exc.end + 40]
            raise ValueError(
                f"{what} ({bad!r}) holds bytes that are not valid UTF-8 ({exc.reason}); config.json cannot record "
                "it: rename the file or directory"
            ) from exc


class RunDir:
    """An open run directory holding an exclusive lock; use as a context manager.

    :meth:`open` creates it (writing ``config.json``) or resumes it, with a record of this invocation
    appended to ``record["invocations"]``. ``config`` is this call's
    :class:`RunConfig`; ``record`` the whole ``config.json`` (provenance and invocations included).

    Each invocation records its time, command line, git state and, as the stages run, the batch sizes its
    models actually used (``batch_sizes``, :meth:`record_batch_sizes`) and any ``notes`` (:meth:`record_outputs`).
    ``record["outputs"]`` says which questions the CSV outputs describe (:meth:`record_outputs`).
    """

    def __init__(self, path: Path, config: RunConfig, record: dict[str, Any], lock_fd: int) -> None:
        self.path = path
        self.config = config
        self.record = record
        self._lock_fd: int | None = lock_fd
        self._stores: dict[str, JsonlStore] = {}

    @classmethod
    def open(cls, path: str | os.PathLike[str], config: RunConfig, record: dict[str, Any]) -> RunDir:
        """Create or resume the run directory ``path`` under its lock, writing ``record``: this call's ``config.json``
        (:meth:`RunConfig.run_record`), built from what :func:`stored_run` read. Under the lock ``config.json`` is
        read again: it must still hold the invocations ``record`` extends (``RuntimeError`` when another process wrote
        the run meanwhile: its result settings could differ). ``config`` is carried for the stages (:attr:`config`)."""
        p = Path(path)
        _check_storable(p, record)
        created = not p.exists()
        p.mkdir(parents=True, exist_ok=True)
        fd = lock_run_dir(p)
        try:
            now = read_json_file(p / CONFIG_FILE) if (p / CONFIG_FILE).is_file() else {}
            if not isinstance(now, dict) or now.get("invocations", []) != record["invocations"][:-1]:
                raise RuntimeError(f"run directory {p} was written by another process meanwhile; run the command again")
            run = cls(p, config, record, fd)
            run.save_config()
        except BaseException:
            os.close(fd)
            if stored_nothing(p):  # a failed first write (e.g. a full disk) leaves nothing behind
                remove_stale_temporaries(p)
                with contextlib.suppress(OSError):
                    (p / LOCK_FILE).unlink()
                    if created:
                        p.rmdir()
            raise
        return run

    def save_config(self) -> None:
        write_files({self.path / CONFIG_FILE: json.dumps(self.record, indent=2, ensure_ascii=False) + "\n"})

    @property
    def invocation(self) -> dict[str, Any]:
        """This call's entry of ``record["invocations"]``."""
        return self.record["invocations"][-1]

    def record_batch_sizes(self, stage: str, sizes: Mapping[str, Any]) -> None:
        """Store the batch sizes ``stage`` actually used in this call (``invocation["batch_sizes"][stage]``); a
        record of how the call ran, which moves no number (see :class:`shapley.pipeline.config.RuntimeSettings`)."""
        self.invocation.setdefault("batch_sizes", {})[stage] = json.loads(canonical_json(dict(sizes)))
        self.save_config()

    def record_outputs(self, n_questions: int, input_questions: int) -> str | None:
        """Record that the CSV outputs describe this call's ``n_questions`` questions (``record["outputs"]``).

        ``input_questions``: how many questions the unsharded input holds under this call's ``--limit`` (a shard
        covers some of them; ``merge`` checks that the shards together hold them all). ``outputs.invocation``
        is this call's index in ``invocations``: a later call that was killed before its outputs leaves it
        behind, and ``merge`` refuses such a shard as unfinished.

        Returns a note (kept in this invocation's ``notes``; the caller prints it) when the run stores scores of more
        questions than that (a ``--limit`` below what an earlier call covered).
        """
        stored = len(self.store("scores"))
        message = None
        if n_questions < stored:
            message = (
                f"scores.csv, metrics.csv and skipped.csv now describe this call's {n_questions} questions "
                f"(--limit {self.config.data.limit}), not all {stored} stored in this run; "
                "rerun with a larger --limit, or none, to cover them all"
            )
            self.invocation.setdefault("notes", []).append(message)
        self.record["outputs"] = {
            "n_questions": n_questions,
            "stored_questions": stored,
            "limit": self.config.data.limit,
            "invocation": len(self.record["invocations"]) - 1,
            "input_questions": input_questions,
        }
        self.save_config()
        return message

    def record_fingerprint(self, kind: str, info: Mapping[str, Any]) -> None:
        """Store ``provenance[kind] = info`` (e.g. kind "entailment", info {"spec", "fingerprint", "is_nli",
        "dtype", "device_kind"}).

        Raises ``ValueError`` if a value of :data:`COMPUTE_KEYS` stored before for ``kind`` differs: the resumed
        run would mix outputs of two different models, or of one model computing in two dtypes or on two kinds
        of device.
        """
        prov = self.record["provenance"]
        old = prov.get(kind)
        for key in COMPUTE_KEYS:
            if old is not None and old.get(key) != info.get(key):
                raise ValueError(
                    f"cannot resume {self.path}: the {kind} model's {key.replace('_', ' ')} changed "
                    f"(stored {old.get(key)!r}, now {info.get(key)!r}); its stored records were computed with the "
                    "stored one: resume where it ran (--device, --dtype), or use a new --output directory"
                )
        prov[kind] = json.loads(canonical_json(dict(info)))
        prov["device"] = device_info()
        self.save_config()

    def store(self, stage: str) -> JsonlStore:
        """The verified (loaded and repaired) store of ``stage`` (a key of :data:`STAGE_FILES`)."""
        if stage not in self._stores:
            f = self.path / STAGE_FILES[stage]
            if f.is_symlink() and self.path.resolve() not in f.resolve().parents:
                raise ValueError(
                    f"{f} is a symbolic link to {f.resolve()}, outside the run directory; a resume would append to "
                    "that file: replace the link by a copy of the file"
                )
            s = JsonlStore(f, REQUIRED_FIELDS[stage])
            s.load()
            self._stores[stage] = s
        return self._stores[stage]

    def close(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lock_run_dir(path: Path) -> int:
    """An exclusive, non-blocking flock on ``path/.lock`` (its file descriptor); ``RuntimeError`` when another
    process holds it. Once it is held, the temporaries that killed writes left in the run directory are removed
    (:func:`remove_stale_temporaries`): every process that writes a run holds its lock, so they are stale."""
    if (path / LOCK_FILE).is_symlink():
        raise ValueError(f"{path / LOCK_FILE} is a symbolic link; the lock file is never opened through one: remove it")
    fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise RuntimeError(f"run directory {path} is in use by another process") from exc
    remove_stale_temporaries(path)
    return fd


def remove_stale_temporaries(path: Path) -> None:
    """Remove the temporaries of :func:`~shapley.results.records.write_files` (``.<name>.tmp-<pid>``)
    that killed writes left in the run directory ``path`` and in its ``hidden/`` folder; call it only under the
    run's lock. Only entries of that name pattern that are files or links (a link is removed itself, never
    followed) directly in those two folders; ``hidden/`` only when it is a folder, not a link. A file that cannot be
    removed is left, silently: it is harmless."""
    hidden = path / HIDDEN_DIR
    folders = [path, hidden] if hidden.is_dir() and not hidden.is_symlink() else [path]
    for folder in folders:
        with contextlib.suppress(OSError):
            with os.scandir(folder) as entries:
                for e in entries:
                    if e.name == LOCK_FILE or not _is_own_temporary(e.name) or e.is_dir(follow_symlinks=False):
                        continue
                    with contextlib.suppress(OSError):
                        os.unlink(e.path)
