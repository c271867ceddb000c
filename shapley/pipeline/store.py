"""Run directories: append-only checksummed JSON lines, atomic writes, provenance, and the run's config.

A run is a directory::

    config.json        {"schema": 3, "config": RunConfig, "provenance": {...}, "invocations": [...],
                        "outputs"?: {...}} (see :meth:`RunDir.open`)
    questions.jsonl    run only: one record per question: its id and ``sha256``, the fingerprint of the question
                       as the data module builds it (question, references, prompt, context). No dataset text:
                       the questions are rebuilt from the data file (whose fingerprint is ``config.data.sha256``)
                       on every call. Older runs stored the whole question here; they are still read, and
                       rewritten to ids and fingerprints when resumed.
    generations.jsonl  run only: one Generation per question (samples, token log-probs, p(True), A4C reply)
    entailment.jsonl   one record per question: n, entail (n x n nested lists), contradict (or null)
    scores.jsonl       one record per question: correctness, scores {method: float}, skipped {method: reason},
                       diagnostics (shap_psd_repaired, shap_min_eig, n_clusters, ...)
    scores.csv, metrics.csv, skipped.csv   written by :mod:`shapley.pipeline.evaluate`
    stages.jsonl.gz    the entailment and score records without answer text or bookkeeping (gzip, no timestamp;
                       :func:`write_compact`), rewritten with the outputs; readers (``repair=False``) fall back to
                       it when a stage file is absent, so that a run whose JSONL files are left out of git (the
                       LLaMA-13B runs) still recomputes its beta sweep, selection table and report
    hidden/            run only: the judged answers' hidden states (``.npz``, :mod:`shapley.pipeline.records`)
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
  changed (an upstream record was redone) is recomputed. Records written before this field existed are
  trusted.

Test hooks (read from the environment, for the resumption tests only; unset in normal use):

* ``SHAPLEY_TEST_SLEEP_PER_QUESTION``: seconds to sleep before storing each computed record of any stage.
* ``SHAPLEY_TEST_CALL_LOG``: path of a file to which ``"<stage>\\t<id>\\n"`` is appended after each record
  a stage computes and stores (counts recomputations).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import gzip
import hashlib
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shapley.pipeline.config import CONFIG_SCHEMA, RunConfig, flag_of
from shapley.pipeline.settings import REPO_ROOT

CHECKSUM_KEY = "_sha256"
CONFIG_FILE = "config.json"
LOCK_FILE = ".lock"

TEST_SLEEP_ENV = "SHAPLEY_TEST_SLEEP_PER_QUESTION"
TEST_CALL_LOG_ENV = "SHAPLEY_TEST_CALL_LOG"

VERSIONED_PACKAGES = ("numpy", "scipy", "torch", "transformers", "sentence-transformers", "shapley")

SOURCE_PATHS: tuple[str, ...] = (
    "shapley",
    "pyproject.toml",
    "constraints.txt",
    "environment.yml",
    "Makefile",
    "scripts",
    "benchmarks",
)
"""What "the package's source" means for provenance (paths relative to the repository): a run is *dirty*
when ``git status`` reports a change to one of these, tracked or untracked (but not git-ignored). Everything
else (``results/``, where runs write, the book, notebooks, tests) never makes a run dirty."""

COMPUTE_KEYS = ("fingerprint", "dtype", "device_kind")
"""What a run's model information in provenance pins (:meth:`RunDir.record_fingerprint`): the weights, the dtype
they compute in and the kind of device; every number a model stores depends on all three."""

CHUNK_KEY = "chunk"
UPSTREAM_KEY = "upstream_sha256"

STAGE_FILES = {
    "questions": "questions.jsonl",
    "generations": "generations.jsonl",
    "entailment": "entailment.jsonl",
    "scores": "scores.jsonl",
}
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "questions": ("id",),
    "generations": ("id", "samples", "answer"),
    "entailment": ("id", "n", "entail", "contradict"),
    "scores": ("id", "correct", "correctness_value", "scores", "skipped", "diagnostics"),
}


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
    if isinstance(o, (tuple, set, frozenset)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"cannot store {type(o).__name__} in JSON")


def canonical_json(obj: Any) -> str:
    """Canonical JSON text: sorted keys, no spaces, UTF-8 kept, exact float repr (NaN/Infinity allowed)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default)


def record_checksum(record: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of ``record`` without its checksum field."""
    body = {k: v for k, v in record.items() if k != CHECKSUM_KEY}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def fingerprint(obj: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``obj`` (e.g. the inputs a stored record was computed from)."""
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One stored line (with trailing newline): the record, normalised through JSON, plus its checksum."""
    body = json.loads(canonical_json({k: v for k, v in record.items() if k != CHECKSUM_KEY}))
    body[CHECKSUM_KEY] = record_checksum(body)
    return (canonical_json(body) + "\n").encode("utf-8")


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """SHA-256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, ``os.replace``; on failure
    (e.g. a full disk) the temp file is removed and ``path`` is untouched."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                k = os.write(fd, view)
                view = view[k:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, p)
    except BaseException:  # e.g. a full disk: no temporary file is left behind
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(p.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


class JsonlStore:
    """Append-only JSON-lines file of records keyed by ``id`` (see the module docstring for guarantees).

    Call :meth:`load` before :meth:`append` on an existing file: it verifies every line and repairs the
    file, so that an append never follows a torn line.
    """

    def __init__(self, path: str | os.PathLike[str], required: Sequence[str] = ("id",)) -> None:
        self.path = Path(path)
        self.required = tuple(dict.fromkeys(("id", *required)))
        self.records: dict[str, dict[str, Any]] = {}
        self._loaded = False
        self.problems: list[tuple[int, str]] = []

    def _check_line(self, line: bytes) -> tuple[dict[str, Any] | None, str]:
        try:
            rec = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return None, f"not valid JSON ({exc.__class__.__name__})"
        if not isinstance(rec, dict):
            return None, "not a JSON object"
        stored = rec.pop(CHECKSUM_KEY, None)
        if stored is None:
            return None, f"no {CHECKSUM_KEY} field"
        if stored != record_checksum(rec):
            return None, "checksum mismatch"
        miss = [k for k in self.required if k not in rec]
        if miss:
            return None, f"missing field(s) {miss}"
        return rec, ""

    def load(self, *, repair: bool = True) -> dict[str, dict[str, Any]]:
        """Read and verify every line; drop (with a :class:`CorruptRecordWarning`) torn, corrupt and duplicate
        lines and, with ``repair``, rewrite the file atomically without them (readers that do not own the run,
        like the report, pass ``repair=False``). Returns ``{id: record}`` in file order."""
        self.records = {}
        self.problems = []
        self._loaded = repair
        if not self.path.exists():
            if not repair:  # a reader: the run's compact copy stands in for a stage file left out of git
                self.records = read_compact(self.path.parent).get(_STAGE_OF_FILE.get(self.path.name, ""), {})
            return self.records
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        tail_torn = lines[-1] != b""
        if not tail_torn:
            lines = lines[:-1]
        rewrite = False
        linenos: dict[str, int] = {}
        for lineno, line in enumerate(lines, start=1):
            last_unterminated = tail_torn and lineno == len(lines)
            if not line.strip():
                self.problems.append((lineno, "blank line"))
                rewrite = True
                continue
            rec, why = self._check_line(line)
            if rec is None:
                if last_unterminated:
                    why += " (unterminated last line: torn write)"
                self.problems.append((lineno, why))
                rewrite = True
                continue
            if last_unterminated:
                rewrite = True  # a valid record that lost only its newline: keep it, fix the file
            key = str(rec["id"])
            if key in self.records:
                self.problems.append((lineno, f"duplicate id {key!r} (the first valid record is kept)"))
                rewrite = True
                continue
            self.records[key] = rec
            linenos[key] = lineno
        rewrite |= self._drop_incomplete_tail_chunk(linenos)
        for lineno, why in self.problems:
            warnings.warn(
                f"{self.path}: line {lineno} dropped: {why}; its question will be recomputed if needed",
                CorruptRecordWarning,
                stacklevel=2,
            )
        if rewrite and repair:
            atomic_write_bytes(self.path, b"".join(encode_record(r) for r in self.records.values()))
        return self.records

    def _drop_incomplete_tail_chunk(self, linenos: Mapping[str, int]) -> bool:
        """Drop the records of the file's last chunk if some of its records are missing (a torn write)."""
        if not self.records:
            return False
        last = next(reversed(self.records.values()))
        chunk = last.get(CHUNK_KEY)
        if not isinstance(chunk, list) or all(str(i) in self.records for i in chunk):
            return False
        present = [str(i) for i in chunk if str(i) in self.records]
        for key in present:
            self.problems.append(
                (linenos[key], f"its chunk {chunk} was not stored whole (torn write); the chunk is recomputed whole")
            )
            del self.records[key]
        return True

    def _check_new(self, records: Sequence[Mapping[str, Any]]) -> None:
        if not self._loaded and self.path.exists():
            raise RuntimeError(f"{self.path}: call load() before append() so that the file is verified first")
        keys = [str(r.get("id")) for r in records]
        for record, key in zip(records, keys, strict=True):
            miss = [k for k in self.required if k not in record]
            if miss:
                raise ValueError(f"record for {self.path.name} lacks required field(s) {miss}")
            if key in self.records or keys.count(key) > 1:
                raise ValueError(f"{self.path.name} already holds a record for id {key!r}")

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record atomically (single ``os.write`` with ``O_APPEND``, then ``fsync``)."""
        self.append_many([record])

    def append_many(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append several records with one ``os.write`` (``O_APPEND``, then ``fsync``): all or, after a crash,
        a torn tail that :meth:`load` detects (see the module docstring on chunks)."""
        self._check_new(records)
        self._loaded = True
        if not records:
            return
        lines = [encode_record(r) for r in records]
        data = b"".join(lines)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        for line in lines:
            rec = json.loads(line)
            del rec[CHECKSUM_KEY]
            self.records[str(rec["id"])] = rec

    def discard(self, keys: Iterable[str]) -> None:
        """Remove the records of ``keys`` (to be recomputed): the file is rewritten atomically without them."""
        gone = {str(k) for k in keys} & set(self.records)
        if not gone:
            return
        if not self._loaded and self.path.exists():
            raise RuntimeError(f"{self.path}: call load() before discard()")
        self.records = {k: r for k, r in self.records.items() if k not in gone}
        atomic_write_bytes(self.path, b"".join(encode_record(r) for r in self.records.values()))

    def rewrite(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Replace the whole file atomically by ``records`` (e.g. a layout migration)."""
        self.records = {}
        self._check_new(records)
        self._loaded = True
        body = [json.loads(encode_record(r)) for r in records]
        atomic_write_bytes(self.path, b"".join(encode_record(r) for r in body))
        for rec in body:
            del rec[CHECKSUM_KEY]
            self.records[str(rec["id"])] = rec

    def __contains__(self, key: object) -> bool:
        return str(key) in self.records

    def __len__(self) -> int:
        return len(self.records)


# --------------------------------------------------------------------------------------------------
# Provenance


def package_versions(names: Iterable[str] = VERSIONED_PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (None if not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_info(repo: str | os.PathLike[str] = REPO_ROOT) -> dict[str, Any]:
    """``{"commit", "dirty", "dirty_paths"}`` of the source checkout (None where git is unavailable).

    ``dirty`` is True when the package's source (:data:`SOURCE_PATHS`) differs from the commit: a tracked
    file changed, or a file git does not ignore was added there. Files elsewhere (the run's own outputs under
    ``results/`` included) never count. ``dirty_paths``: the first changed paths, for diagnosis.
    """
    out: dict[str, Any] = {"commit": None, "dirty": None, "dirty_paths": []}
    if not (Path(repo) / ".git").exists():
        return out
    try:
        r = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if r.returncode == 0:
            out["commit"] = r.stdout.strip()
        s = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all", "--", *SOURCE_PATHS],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if s.returncode == 0:
            changed = [line[3:] for line in s.stdout.splitlines() if line.strip()]
            out["dirty"] = bool(changed)
            out["dirty_paths"] = changed[:20]
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def repo_relative(path: str | os.PathLike[str], repo: str | os.PathLike[str] = REPO_ROOT) -> str:
    """``path`` relative to the source checkout ``repo`` (``..`` where it lies outside it), so that provenance
    names no machine-specific absolute path; unchanged when ``repo`` is not a source checkout."""
    if not (Path(repo) / "pyproject.toml").exists():
        return str(path)
    # Lexical (abspath, not resolve): a data folder reached through a symbolic link keeps the name it was given.
    return os.path.relpath(os.path.abspath(path), os.path.abspath(repo))


def device_info() -> dict[str, Any]:
    """CPU model and count; CUDA device names when torch is already imported (it is never imported here)."""
    cpu = platform.processor() or None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    info: dict[str, Any] = {"cpu": cpu, "cpu_count": os.cpu_count(), "platform": platform.platform()}
    torch = sys.modules.get("torch")
    if torch is None:
        info["cuda"] = "not queried (torch not imported)"
    else:
        try:
            if torch.cuda.is_available():
                info["cuda"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            else:
                info["cuda"] = []
        except Exception as exc:  # noqa: BLE001 - provenance must never break a run
            info["cuda"] = f"error: {exc}"
    return info


def provenance(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """What produced a run: time, command line, versions, git commit, device; ``cwd`` relative to the
    repository (:func:`repo_relative`)."""
    args = list(sys.argv if argv is None else argv)
    return {
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "argv": args,
        "command_line": shlex.join(args),
        "cwd": repo_relative(os.getcwd()),
        "python": sys.version.split()[0],
        "versions": package_versions(),
        "git": git_info(),
        "device": device_info(),
    }


# --------------------------------------------------------------------------------------------------
# The compact copy of the entailment and score records

_STAGE_OF_FILE = {f: stage for stage, f in STAGE_FILES.items()}


def write_compact(run_dir: str | os.PathLike[str], ids: Sequence[str]) -> Path:
    """Write ``run_dir/stages.jsonl.gz`` (:data:`COMPACT_FILE`): for each of ``ids`` (in order) that has both, its
    entailment and score records, without bookkeeping (``chunk``, ``upstream_sha256``) and without answer text
    (:data:`TEXT_FIELDS`). One checksummed line per question (``{"id", "entailment", "scores"}``), gzip with no
    timestamp, so that equal records give equal bytes. What ``beta-sweep``, the selection table and ``report``
    read (:meth:`JsonlStore.load` with ``repair=False``) when the stage files are absent. Returns its path."""
    d = Path(run_dir)
    stages = {s: JsonlStore(d / STAGE_FILES[s]).load(repair=False) for s in COMPACT_STAGES}
    drop = {CHUNK_KEY, UPSTREAM_KEY}
    lines = []
    for qid in ids:
        if not all(qid in stages[s] for s in COMPACT_STAGES):
            continue
        rec: dict[str, Any] = {"id": qid}
        for s in COMPACT_STAGES:
            rec[s] = {k: v for k, v in stages[s][qid].items() if k not in drop and k not in TEXT_FIELDS.get(s, ())}
        lines.append(encode_record(rec))
    out = d / COMPACT_FILE
    atomic_write_bytes(out, gzip.compress(b"".join(lines), compresslevel=9, mtime=0))
    return out


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
        try:
            rec = json.loads(line)
            ok = isinstance(rec, dict) and rec.pop(CHECKSUM_KEY, None) == record_checksum(rec)
        except (UnicodeDecodeError, json.JSONDecodeError):
            ok = False
        if not ok or not all(isinstance(rec.get(s), dict) for s in COMPACT_STAGES):
            raise ValueError(f"{f}, line {lineno}: not an intact record (checksum or layout)")
        for s in COMPACT_STAGES:
            out[s][str(rec["id"])] = rec[s]
    return out


# --------------------------------------------------------------------------------------------------
# Run directories


def read_record(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The parsed ``config.json`` of run directory ``path`` (None if it has none).

    Raises ``ValueError`` naming the file when it is not valid JSON or holds no readable configuration.
    """
    f = Path(path) / CONFIG_FILE
    if not f.is_file():
        return None
    try:
        rec = json.loads(f.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{f} is not valid JSON ({exc}); refusing to use this run directory") from exc
    try:
        RunConfig.from_stored(rec)
        _check_record_shape(rec)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{f}: not a readable shapley run configuration ({exc})") from exc
    return rec


def _check_record_shape(rec: Mapping[str, Any]) -> None:
    """The parts of ``config.json`` besides the configuration: provenance an object, invocations a list of
    objects, outputs an object."""
    for key in ("provenance", "outputs"):
        if key in rec and not isinstance(rec[key], Mapping):
            raise ValueError(f"{key!r} must be a JSON object; got {type(rec[key]).__name__}")
    inv = rec.get("invocations", [])
    if not isinstance(inv, list) or not all(isinstance(i, Mapping) for i in inv):
        raise ValueError("'invocations' must be a list of JSON objects")


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

    @property
    def clean(self) -> bool:
        """One commit, never dirty: the run reproduces from that commit."""
        return len(self.commits) == 1 and self.dirty is False


def run_history(run: str | os.PathLike[str] | Mapping[str, Any]) -> RunHistory:
    """The recorded command lines and commits of a run directory (or of its parsed ``config.json``).

    Reads every schema (schema 1 recorded the first invocation's git state in ``provenance`` only). A merged run
    (``provenance.merged_from``, :mod:`shapley.pipeline.merge`) also counts the commits and dirty flags of every
    shard's invocations (each entry's ``commits`` and ``dirty``), so that it is flagged as any run would be.
    """
    rec = run if isinstance(run, Mapping) else read_record(run)
    if rec is None:
        raise FileNotFoundError(f"{run} is not a run directory (no {CONFIG_FILE})")
    prov = rec.get("provenance") or {}
    invocations = list(rec.get("invocations") or [])
    if not invocations:
        invocations = [{"command_line": prov.get("command_line", ""), "git": prov.get("git")}]
    commands, commits, dirty = [], [], []
    for k, inv in enumerate(invocations):
        commands.append(str(inv.get("command_line", "")))
        git = inv.get("git") or (prov.get("git") if k == 0 else None) or {}
        if git.get("commit") and git["commit"] not in commits:
            commits.append(git["commit"])
        dirty.append(git.get("dirty"))
    for shard in prov.get("merged_from") or []:
        if not isinstance(shard, Mapping):
            continue
        commits += [c for c in shard.get("commits") or [] if c not in commits]
        dirty.append(shard.get("dirty"))
    known = [d for d in dirty if d is not None]
    return RunHistory(tuple(commands), tuple(commits), None if not known else any(known))


def read_config(path: str | os.PathLike[str]) -> RunConfig:
    """The :class:`RunConfig` of an existing run directory (``FileNotFoundError`` if it has no config.json)."""
    rec = read_record(path)
    if rec is None:
        raise FileNotFoundError(f"{path} is not a run directory (no {CONFIG_FILE})")
    return RunConfig.from_stored(rec)


def check_resumable(path: str | os.PathLike[str], config: RunConfig) -> dict[str, Any] | None:
    """Read-only check that ``path`` is new, or a run made with the same result-affecting settings.

    Returns the stored ``config.json`` (None for a new run). Raises ``ValueError`` naming the first differing
    setting, or when ``path`` exists, is not empty and is not a run directory.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"output {p} exists and is not a directory")
    rec = read_record(p) if p.is_dir() else None
    if rec is None:
        if p.is_dir() and not stored_nothing(p):
            raise ValueError(f"output directory {p} is not empty and holds no {CONFIG_FILE}; choose a new one")
        return None
    diff = RunConfig.from_stored(rec).differences(config)
    if diff:
        key, (old, new) = next(iter(diff.items()))
        raise ValueError(
            f"cannot resume {p}: setting {key!r} ({flag_of(key)}) differs (stored {old!r}, now {new!r}); "
            "use a new --output directory, or the stored setting"
        )
    return rec


def _is_own_temporary(name: str) -> bool:
    """A temporary file of :func:`atomic_write_bytes` (``.<name>.tmp-<pid>``) or the lock file."""
    return name == LOCK_FILE or (name.startswith(".") and ".tmp-" in name and name.rsplit("-", 1)[-1].isdigit())


def stored_nothing(path: Path) -> bool:
    """Whether ``path`` holds nothing but the project's own temporary files and lock (counts as empty)."""
    return path.is_dir() and all(_is_own_temporary(x.name) for x in path.iterdir())


def _remove_own_files(path: Path, *, rmdir: bool, keep_lock: bool = False) -> None:
    with contextlib.suppress(OSError):
        for x in path.iterdir():
            if _is_own_temporary(x.name) and not (keep_lock and x.name == LOCK_FILE):
                x.unlink()
        if rmdir:
            path.rmdir()


def _check_storable(path: Path, config: RunConfig, argv: Sequence[str]) -> None:
    """``ValueError`` naming the value when the run directory's path, a setting or the command line holds text
    that cannot be written as UTF-8 (e.g. a file name of invalid UTF-8 bytes, read as lone surrogates)."""
    values = [("the output directory", str(path)), *((f"argument {a!r}", a) for a in argv)]
    values += [(f"setting {k!r}", v) for k, v in config.flat().items() if isinstance(v, str)]
    for what, text in values:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"{what} ({text!r}) holds bytes that are not valid UTF-8 ({exc.reason}); config.json cannot record "
                "it: rename the file or directory"
            ) from exc


def _invocation_record(stored: Mapping[str, Any] | None, config: RunConfig, argv: Sequence[str]) -> dict[str, Any]:
    """The ``config.json`` record of a new run (``stored`` None), or ``stored`` with this invocation appended."""
    prov = provenance(argv)
    invocation: dict[str, Any] = {
        "time": prov["created"],
        "command_line": prov["command_line"],
        "cwd": prov["cwd"],
        "git": prov["git"],
    }
    if stored is None:
        return {
            "schema": CONFIG_SCHEMA,
            "config": config.to_dict(),
            "provenance": prov,
            "invocations": [{**invocation, "resumed": False}],
        }
    record = dict(stored)
    old = RunConfig.from_stored(stored).flat()
    changed = {k: [old.get(k), v] for k, v in config.flat().items() if old.get(k) != v}
    if record.get("schema", 1) != CONFIG_SCHEMA:
        invocation["migrated_from_schema"] = record.get("schema", 1)
        record.pop("settings", None)
    record.update(schema=CONFIG_SCHEMA, config=config.to_dict())
    record.setdefault("invocations", [])
    record["invocations"].append(
        {**invocation, "resumed": True, "versions": prov["versions"], "changed_settings": changed}
    )
    return record


class RunDir:
    """An open run directory holding an exclusive lock; use as a context manager.

    :meth:`open` creates it (writing ``config.json``) or resumes it (after :func:`check_resumable`),
    appending a record of this invocation to ``record["invocations"]``. ``config`` is this call's
    :class:`RunConfig`; ``record`` the whole ``config.json`` (provenance and invocations included).

    Each invocation records its time, command line, git state and, as the stages run, the batch sizes its
    models actually used (``batch_sizes``, :meth:`record_batch_sizes`) and any ``notes`` (:meth:`note`).
    ``record["outputs"]`` says which questions the CSV outputs describe (:meth:`record_outputs`).
    """

    def __init__(self, path: Path, config: RunConfig, record: dict[str, Any], lock_fd: int) -> None:
        self.path = path
        self.config = config
        self.record = record
        self._lock_fd: int | None = lock_fd
        self.resumed = False
        self.stores: dict[str, JsonlStore] = {}

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        config: RunConfig,
        *,
        argv: Sequence[str] | None = None,
        extra_provenance: Mapping[str, Any] | None = None,
    ) -> RunDir:
        """Create or resume the run directory ``path`` under its lock; ``extra_provenance`` is written into
        ``record["provenance"]`` with the first ``config.json`` (e.g. a merge's ``merged_from``, so that a merge
        killed right after it is recognised as one and can be restarted)."""
        p = Path(path)
        check_resumable(p, config)  # before creating anything
        args = list(sys.argv if argv is None else argv)
        _check_storable(p, config, args)
        created = not p.exists()
        p.mkdir(parents=True, exist_ok=True)
        fd = _lock(p)
        try:
            stored = check_resumable(p, config)  # again, under the lock
            if stored is None:  # temporaries left by a process that failed: stale, since we hold the lock
                _remove_own_files(p, rmdir=False, keep_lock=True)
            record = _invocation_record(stored, config, args)
            record.setdefault("provenance", {}).update(extra_provenance or {})
            run = cls(p, config, record, fd)
            run.resumed = stored is not None
            run.save_config()
        except BaseException:
            os.close(fd)
            if stored_nothing(p):  # a failed first write (e.g. a full disk) leaves nothing behind
                _remove_own_files(p, rmdir=created)
            raise
        return run

    def save_config(self) -> None:
        atomic_write_text(self.path / CONFIG_FILE, json.dumps(self.record, indent=2, ensure_ascii=False) + "\n")

    @property
    def invocation(self) -> dict[str, Any]:
        """This call's entry of ``record["invocations"]``."""
        inv: dict[str, Any] = self.record["invocations"][-1]
        return inv

    def note(self, message: str) -> None:
        """Keep ``message`` in this invocation's ``notes`` (the caller prints it)."""
        self.invocation.setdefault("notes", []).append(message)
        self.save_config()

    def record_batch_sizes(self, stage: str, sizes: Mapping[str, Any]) -> str | None:
        """Store the batch sizes ``stage`` actually used in this call (``invocation["batch_sizes"][stage]``).

        Returns a note (also kept with :meth:`note`) when an earlier call of this run stored records of
        ``stage`` with other sizes: the stage's records then mix both (see
        :class:`shapley.pipeline.config.RuntimeSettings` for what batching may change).
        """
        sizes = json.loads(canonical_json(dict(sizes)))
        earlier = [
            inv["batch_sizes"][stage]
            for inv in self.record["invocations"][:-1]
            if isinstance(inv.get("batch_sizes"), Mapping) and stage in inv["batch_sizes"]
        ]
        self.invocation.setdefault("batch_sizes", {})[stage] = sizes
        self.save_config()
        others = [e for e in earlier if e != sizes]
        if not others:
            return None
        message = (
            f"the {stage} stage ran with batch sizes {sizes} in this call but {others[-1]} in an earlier one: "
            f"{STAGE_FILES.get(stage, stage)} mixes records computed with both (batching may move entailment "
            "probabilities by about 1e-7 and generation log-probabilities by about 1e-5)"
        )
        self.note(message)
        return message

    def record_outputs(self, n_questions: int, input_questions: int | None = None) -> str | None:
        """Record that the CSV outputs describe this call's ``n_questions`` questions (``record["outputs"]``).

        ``input_questions``: how many questions the unsharded input holds under this call's ``--limit`` (a shard
        covers some of them; ``merge`` checks that the shards together hold them all). ``outputs.invocation``
        is this call's index in ``invocations``: a later call that was killed before its outputs leaves it
        behind, and ``merge`` refuses such a shard as unfinished.

        Returns a note (kept with :meth:`note`) when the run stores scores of more questions than that (a
        ``--limit`` below what an earlier call covered).
        """
        stored = len(self.store("scores"))
        self.record["outputs"] = {
            "n_questions": n_questions,
            "stored_questions": stored,
            "limit": self.config.data.limit,
            "invocation": len(self.record["invocations"]) - 1,
        }
        if input_questions is not None:
            self.record["outputs"]["input_questions"] = input_questions
        self.save_config()
        if n_questions >= stored:
            return None
        message = (
            f"scores.csv, metrics.csv and skipped.csv now describe this call's {n_questions} questions "
            f"(--limit {self.config.data.limit}), not all {stored} stored in this run; "
            "rerun with a larger --limit, or none, to cover them all"
        )
        self.note(message)
        return message

    def record_fingerprint(self, kind: str, info: Mapping[str, Any]) -> None:
        """Store ``provenance[kind] = info`` (e.g. kind "entailment", info {"spec", "fingerprint", "is_nli",
        "dtype", "device_kind"}).

        Raises ``ValueError`` if a value of :data:`COMPUTE_KEYS` stored before for ``kind`` differs: the resumed
        run would mix outputs of two different models, or of one model computing in two dtypes or on two kinds
        of device. A key that an older run did not store is not compared.
        """
        prov = self.record["provenance"]
        old = prov.get(kind)
        for key in COMPUTE_KEYS:
            if old is not None and (key == "fingerprint" or key in old) and old.get(key) != info.get(key):
                what = "fingerprint" if key == "fingerprint" else key.replace("_", " ")
                raise ValueError(
                    f"cannot resume {self.path}: the {kind} model's {what} changed "
                    f"(stored {old.get(key)!r}, now {info.get(key)!r}); its stored records were computed with the "
                    "stored one: resume where it ran (--device, --dtype), or use a new --output directory"
                )
        prov[kind] = json.loads(canonical_json(dict(info)))
        prov["device"] = device_info()
        self.save_config()

    def store(self, stage: str) -> JsonlStore:
        """The verified (loaded and repaired) store of ``stage`` (a key of :data:`STAGE_FILES`)."""
        if stage not in self.stores:
            f = self.path / STAGE_FILES[stage]
            if f.is_symlink() and self.path.resolve() not in f.resolve().parents:
                raise ValueError(
                    f"{f} is a symbolic link to {f.resolve()}, outside the run directory; a resume would append to "
                    "that file: replace the link by a copy of the file"
                )
            s = JsonlStore(f, REQUIRED_FIELDS[stage])
            s.load()
            self.stores[stage] = s
        return self.stores[stage]

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


def _lock(path: Path) -> int:
    """An exclusive, non-blocking flock on ``path/.lock``; ``RuntimeError`` when another process holds it."""
    fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise RuntimeError(f"run directory {path} is in use by another process") from exc
    return fd
