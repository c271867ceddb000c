"""Run directories: resumable append-only storage, provenance, and the two pipelines.

A run is a directory::

    config.json        settings (compared on resume) + provenance (versions, git, device, fingerprints, argv)
    questions.jsonl    run only: one QARecord per question (prompt, references)
    generations.jsonl  run only: one Generation per question (samples, token log-probs, p(True), A4C reply)
    entailment.jsonl   one record per question: n, entail (n x n nested lists), contradict (or null)
    scores.jsonl       one record per question: correctness, scores {method: float}, skipped {method: reason},
                       diagnostics (shap_psd_repaired, shap_min_eig, n_clusters, ...)
    scores.csv         flat table of scores.jsonl for the questions of this call (rewritten at the end)
    metrics.csv        AUROC [CI], AUARC, PRR, n, accuracy per computed method (see shapley.report)
    skipped.csv        methods skipped on some or all questions, with counts and reasons
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
  (``ValueError`` naming the key); ``limit``, ``batch_size``, ``device`` and the input's path may
  change (a resumed run may cover more or fewer questions; outputs then describe this call's questions).
* No pickle anywhere: JSON lines and CSV only. Matrices are nested lists of floats (exact).

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
import importlib
import importlib.metadata
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from shapley import score as _score
from shapley.settings import REPO_ROOT

T = TypeVar("T")

CHECKSUM_KEY = "_sha256"
CONFIG_FILE = "config.json"
LOCK_FILE = ".lock"
CONFIG_SCHEMA = 1

TEST_SLEEP_ENV = "SHAPLEY_TEST_SLEEP_PER_QUESTION"
TEST_CALL_LOG_ENV = "SHAPLEY_TEST_CALL_LOG"

NON_RESULT_SETTINGS: frozenset[str] = frozenset({"limit", "batch_size", "device", "input_path", "data_path"})
"""Settings that may differ when a run is resumed (they do not change any stored number)."""

VERSIONED_PACKAGES = ("numpy", "scipy", "torch", "transformers", "sentence-transformers", "shapley")

STAGE_FILES = {
    "questions": "questions.jsonl",
    "generations": "generations.jsonl",
    "entailment": "entailment.jsonl",
    "scores": "scores.jsonl",
}
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "questions": ("id", "question", "references"),
    "generations": ("id", "samples", "answer"),
    "entailment": ("id", "n", "entail", "contradict"),
    "scores": ("id", "correct", "correctness_value", "scores", "skipped", "diagnostics"),
}


class CorruptRecordWarning(UserWarning):
    """A stored line was torn, corrupt or duplicated; it was dropped and its question will be redone."""


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
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, ``os.replace``."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            k = os.write(fd, view)
            view = view[k:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, p)
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
            return self.records
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        tail_torn = lines[-1] != b""
        if not tail_torn:
            lines = lines[:-1]
        rewrite = False
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
        for lineno, why in self.problems:
            warnings.warn(
                f"{self.path}: line {lineno} dropped: {why}; its question will be recomputed if needed",
                CorruptRecordWarning,
                stacklevel=2,
            )
        if rewrite and repair:
            atomic_write_bytes(self.path, b"".join(encode_record(r) for r in self.records.values()))
        return self.records

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record atomically (single ``os.write`` with ``O_APPEND``, then ``fsync``)."""
        if not self._loaded and self.path.exists():
            raise RuntimeError(f"{self.path}: call load() before append() so that the file is verified first")
        self._loaded = True
        miss = [k for k in self.required if k not in record]
        if miss:
            raise ValueError(f"record for {self.path.name} lacks required field(s) {miss}")
        key = str(record["id"])
        if key in self.records:
            raise ValueError(f"{self.path.name} already holds a record for id {key!r}")
        data = encode_record(record)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write to {self.path} ({written} of {len(data)} bytes)")
            os.fsync(fd)
        finally:
            os.close(fd)
        self.records[key] = json.loads(data)
        del self.records[key][CHECKSUM_KEY]

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
    """``{"commit": sha | None, "dirty": bool | None}`` of the source checkout (None where git is unavailable)."""
    out: dict[str, Any] = {"commit": None, "dirty": None}
    if not (Path(repo) / ".git").exists():
        return out
    try:
        r = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if r.returncode == 0:
            out["commit"] = r.stdout.strip()
        s = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if s.returncode == 0:
            out["dirty"] = bool(s.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return out


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
    """What produced a run: time, command line, versions, git commit, device."""
    args = list(sys.argv if argv is None else argv)
    return {
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "argv": args,
        "command_line": shlex.join(args),
        "cwd": os.getcwd(),
        "python": sys.version.split()[0],
        "versions": package_versions(),
        "git": git_info(),
        "device": device_info(),
    }


# --------------------------------------------------------------------------------------------------
# Run directories


def _read_config(path: Path) -> dict[str, Any] | None:
    f = path / CONFIG_FILE
    if not f.exists():
        return None
    try:
        cfg = json.loads(f.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{f} is not valid JSON ({exc}); refusing to resume this run directory") from exc
    if not isinstance(cfg, dict) or "settings" not in cfg:
        raise ValueError(f"{f} has no 'settings'; it is not a shapley run directory")
    return cfg


def check_resumable(path: str | os.PathLike[str], settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """Read-only check that ``path`` is new, or a run made with the same result-affecting settings.

    Returns the stored config (None for a new run). Raises ``ValueError`` naming the first differing key,
    or when ``path`` exists, is not empty and is not a run directory.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"output {p} exists and is not a directory")
    cfg = _read_config(p) if p.is_dir() else None
    if cfg is None:
        if p.is_dir() and any(x.name != LOCK_FILE for x in p.iterdir()):
            raise ValueError(f"output directory {p} is not empty and holds no {CONFIG_FILE}; choose a new one")
        return None
    old = cfg["settings"]
    new = json.loads(canonical_json(dict(settings)))
    for key in sorted(set(old) | set(new)):
        if key in NON_RESULT_SETTINGS:
            continue
        if canonical_json(old.get(key)) != canonical_json(new.get(key)):
            raise ValueError(
                f"cannot resume {p}: setting {key!r} differs (stored {old.get(key)!r}, now {new.get(key)!r}); "
                "use a new --output directory, or the stored setting"
            )
    return cfg


class RunDir:
    """An open run directory holding an exclusive lock; use as a context manager.

    :meth:`open` creates it (writing ``config.json``) or resumes it (after :func:`check_resumable`),
    appending a record of this invocation to ``config["invocations"]``.
    """

    def __init__(self, path: Path, config: dict[str, Any], lock_fd: int) -> None:
        self.path = path
        self.config = config
        self._lock_fd: int | None = lock_fd
        self.resumed = False
        self.stores: dict[str, JsonlStore] = {}

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], settings: Mapping[str, Any], *, argv: Sequence[str] | None = None
    ) -> RunDir:
        p = Path(path)
        check_resumable(p, settings)  # before creating anything
        p.mkdir(parents=True, exist_ok=True)
        fd = os.open(p / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise RuntimeError(f"run directory {p} is in use by another process") from exc
        try:
            stored = check_resumable(p, settings)  # again, under the lock
        except Exception:
            os.close(fd)
            raise
        prov = provenance(argv)
        if stored is None:
            config = {
                "schema": CONFIG_SCHEMA,
                "settings": json.loads(canonical_json(dict(settings))),
                "provenance": prov,
                "invocations": [{"time": prov["created"], "command_line": prov["command_line"], "resumed": False}],
            }
        else:
            config = stored
            changed = {
                k: [config["settings"].get(k), v]
                for k, v in json.loads(canonical_json(dict(settings))).items()
                if config["settings"].get(k) != v
            }
            config.setdefault("invocations", []).append(
                {
                    "time": prov["created"],
                    "command_line": prov["command_line"],
                    "resumed": True,
                    "git": prov["git"],
                    "versions": prov["versions"],
                    "changed_settings": changed,
                }
            )
        run = cls(p, config, fd)
        run.resumed = stored is not None
        run.save_config()
        return run

    def save_config(self) -> None:
        atomic_write_text(self.path / CONFIG_FILE, json.dumps(self.config, indent=2, ensure_ascii=False) + "\n")

    def record_fingerprint(self, kind: str, info: Mapping[str, Any]) -> None:
        """Store ``provenance[kind] = info`` (e.g. kind "entailment", info {"spec", "fingerprint", "is_nli"}).

        Raises ``ValueError`` if a fingerprint for ``kind`` was stored before and differs: the resumed run would
        mix outputs of two different models.
        """
        prov = self.config["provenance"]
        old = prov.get(kind)
        if old is not None and old.get("fingerprint") != info.get("fingerprint"):
            raise ValueError(
                f"cannot resume {self.path}: the {kind} model's fingerprint changed "
                f"(stored {old.get('fingerprint')!r}, now {info.get('fingerprint')!r})"
            )
        prov[kind] = json.loads(canonical_json(dict(info)))
        prov["device"] = device_info()
        self.save_config()

    def store(self, stage: str) -> JsonlStore:
        """The verified (loaded and repaired) store of ``stage`` (a key of :data:`STAGE_FILES`)."""
        if stage not in self.stores:
            s = JsonlStore(self.path / STAGE_FILES[stage], REQUIRED_FIELDS[stage])
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
    from tqdm.auto import tqdm

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
# score-samples input


@dataclass
class SampleItem:
    """One validated line of a score-samples input file."""

    id: str
    question: str
    references: list[str]
    samples: list[str]
    answer: str
    lineno: int
    sample_logprobs: list[list[float]] | None = None
    answer_token_logprobs: list[float] | None = None
    answer_token_entropies: list[float] | None = None
    p_true: float | None = None
    a4c_text: str | None = None
    embedding: list[float] | None = None


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _str_list(v: Any, where: str, name: str) -> list[str]:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise ValueError(f"{where}: field {name!r} must be a list of strings")
    if not v:
        raise ValueError(f"{where}: field {name!r} is empty")
    return list(v)


def _num_list(v: Any, where: str, name: str) -> list[float]:
    if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise ValueError(f"{where}: field {name!r} must be a list of numbers")
    out = [float(x) for x in v]
    if not all(math.isfinite(x) for x in out):
        raise ValueError(f"{where}: field {name!r} holds NaN or inf")
    return out


def parse_sample_line(row: Any, where: str, lineno: int, n_samples: int | None = None) -> SampleItem:
    """Validate one decoded input line (see :func:`read_samples_file` for the accepted fields)."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: a line must be a JSON object")
    for name in ("id", "question"):
        if name not in row:
            raise ValueError(f"{where}: missing field {name!r}")
    if not isinstance(row["id"], (str, int)) or isinstance(row["id"], bool):
        raise ValueError(f"{where}: field 'id' must be a string or an integer")
    if not isinstance(row["question"], str):
        raise ValueError(f"{where}: field 'question' must be a string")
    if "samples_cleaned" in row:
        samples = [s.strip() for s in _str_list(row["samples_cleaned"], where, "samples_cleaned")]
    elif "samples" in row:
        samples = [s.strip() for s in _str_list(row["samples"], where, "samples")]
    else:
        raise ValueError(f"{where}: missing field 'samples'")
    if "references" in row:
        refs = _str_list(row["references"], where, "references")
        answer = row.get("answer", samples[0])
        if not isinstance(answer, str):
            raise ValueError(f"{where}: field 'answer' must be a string")
        answer = answer.strip()
    elif "answer" in row:
        refs = _str_list(row["answer"], where, "answer")  # the UQ-NLG layout: 'answer' is the reference
        answer = samples[0]
    else:
        raise ValueError(f"{where}: missing field 'references'")
    if not any(r.strip() for r in refs):
        raise ValueError(f"{where}: field 'references' holds only blank strings")
    slp = None
    if row.get("sample_logprobs") is not None:
        v = row["sample_logprobs"]
        if not isinstance(v, list) or len(v) != len(samples):
            raise ValueError(f"{where}: field 'sample_logprobs' must be a list with one list per sample")
        slp = [_num_list(t, where, f"sample_logprobs[{k}]") for k, t in enumerate(v)]
    if n_samples is not None:
        if len(samples) < n_samples:
            raise ValueError(f"{where}: field 'samples' has {len(samples)} samples, fewer than --n-samples {n_samples}")
        samples = samples[:n_samples]
        slp = None if slp is None else slp[:n_samples]
    item = SampleItem(
        id=str(row["id"]),
        question=row["question"],
        references=refs,
        samples=samples,
        answer=answer,
        lineno=lineno,
        sample_logprobs=slp,
    )
    for name in ("answer_token_logprobs", "answer_token_entropies", "embedding"):
        if row.get(name) is not None:
            setattr(item, name, _num_list(row[name], where, name))
    if row.get("p_true") is not None:
        p = row["p_true"]
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0.0 <= p <= 1.0:
            raise ValueError(f"{where}: field 'p_true' must be a number in [0, 1]")
        item.p_true = float(p)
    if row.get("a4c_text") is not None:
        if not isinstance(row["a4c_text"], str):
            raise ValueError(f"{where}: field 'a4c_text' must be a string")
        item.a4c_text = row["a4c_text"]
    return item


def read_samples_file(
    path: str | os.PathLike[str], *, n_samples: int | None = None, limit: int | None = None
) -> list[SampleItem]:
    """Read and validate a score-samples input (JSON lines, optionally ``.gz``) completely.

        Each line: ``{"id", "question", "references": [...], "samples": [...], "answer"?, "sample_logprobs"?,
        "answer_token_logprobs"?, "answer_token_entropies"?, "p_true"?, "a4c_text"?, "embedding"?}``.
        ``answer`` (the judged answer) defaults to ``samples[0]``. Fallbacks for the UQ-NLG layout of
        ``triviaqa_llama13b_samples.jsonl.gz``: ``samples_cleaned`` (stripped) is used instead of ``samples``
        when present, and without ``references`` the field ``answer`` is the reference (a string or a list) and
        the judged answer is ``samples[0]``. Surrounding whitespace is stripped from samples and the judged answer;
    empty answers are kept (scored like any text; an empty judged answer is incorrect). Blank lines are ignored.

        ``n_samples``: keep the first N samples (a line with fewer is an error). ``limit``: validate and keep the
        first ``limit`` questions only.

        Raises:
            ValueError: naming the line number and the field, for the first bad line; or duplicate ids.
            FileNotFoundError: no such file.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"input file {p} does not exist")
    if n_samples is not None and n_samples < 1:
        raise ValueError(f"--n-samples must be >= 1; got {n_samples}")
    items: list[SampleItem] = []
    seen: dict[str, int] = {}
    with _open_text(p) as f:
        for lineno, line in enumerate(f, start=1):
            if limit is not None and len(items) >= limit:
                break
            if not line.strip():
                continue
            where = f"{p.name}, line {lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not valid JSON ({exc.msg})") from exc
            item = parse_sample_line(row, where, lineno, n_samples)
            if item.id in seen:
                raise ValueError(f"{where}: duplicate id {item.id!r} (first on line {seen[item.id]})")
            seen[item.id] = lineno
            items.append(item)
    if not items:
        raise ValueError(f"{p}: no questions in the input")
    return items


# --------------------------------------------------------------------------------------------------
# Shared stages


def _entail_module() -> Any:
    return importlib.import_module("shapley.entail")


class _LazyBackend:
    """Loads the entailment backend on first use (a fully resumed run never loads it)."""

    def __init__(self, spec: str, device: str | None, batch_size: int) -> None:
        self.spec, self.device, self.batch_size = spec, device, batch_size
        self._backend: Any = None
        self.recorded = False

    def get(self) -> Any:
        if self._backend is None:
            self._backend = _entail_module().load_backend(self.spec, device=self.device, batch_size=self.batch_size)
        return self._backend

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    def info(self) -> dict[str, Any]:
        b = self.get()
        return {
            "spec": self.spec,
            "name": getattr(b, "name", self.spec),
            "fingerprint": getattr(b, "fingerprint", None),
            "is_nli": bool(getattr(b, "is_nli", False)),
        }


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
    backend: _LazyBackend,
    *,
    with_question: bool,
    chunk_size: int = 16,
    progress: bool = True,
) -> dict[str, dict[str, Any]]:
    """Entailment matrices for ``items`` = (id, question, samples); stored in ``entailment.jsonl``."""
    store = run.store("entailment")

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

    return run_stage(store, "entail", items, compute, key=lambda it: it[0], chunk_size=chunk_size, progress=progress)


def _correctness(answer: str, references: Sequence[str], metric: str) -> float:
    return float(importlib.import_module("shapley.correctness").similarity(answer, list(references), metric))


def score_record(
    x: _score.ScoreInputs,
    answer: str,
    references: Sequence[str],
    *,
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """The stored score record of one question (correctness of ``answer`` + every per-question method)."""
    value = _correctness(answer, references, settings["correctness_metric"])
    qs = _score.score_question_detailed(
        x,
        methods=settings["methods"],
        beta=settings["beta"],
        psd_policy=settings["psd_policy"],
        cluster_rule=settings["cluster_rule"],
        se_aggregation=settings.get("se_aggregation", _score.SE_AGGREGATION),
    )
    return {
        "id": x.id,
        "answer": answer,
        "correctness_metric": settings["correctness_metric"],
        "correctness_value": value,
        "correct": bool(value > settings["threshold"]),
        "scores": qs.scores,
        "skipped": qs.skipped,
        "diagnostics": qs.diagnostics,
    }


def finalize(run: RunDir, ids: Sequence[str], *, embeddings: Mapping[str, Sequence[float]] | None = None) -> Path:
    """Write ``scores.csv``, ``metrics.csv`` and ``skipped.csv`` for the questions ``ids`` (this call's)."""
    from shapley import report

    return report.write_run_outputs(run, ids, embeddings=embeddings)


# --------------------------------------------------------------------------------------------------
# Pipelines


def _scoring_settings(
    entailment: str, with_question: bool, beta: float, psd_policy: str, cluster_rule: str, se_aggregation: str,
    methods: list[str], correctness_metric: str | None, threshold: float, seed: int, n_boot: int,
    batch_size: int, device: str | None,
) -> dict[str, Any]:
    """The settings shared by ``score-samples`` and ``run``: entailment, scoring, correctness and metrics."""
    return {
        "entailment": entailment,
        "with_question": with_question,
        "beta": beta,
        "psd_policy": psd_policy,
        "cluster_rule": cluster_rule,
        "se_aggregation": se_aggregation,
        "methods": methods,
        "correctness_metric": correctness_metric,
        "threshold": threshold,
        "seed": seed,
        "n_boot": n_boot,
        "batch_size": batch_size,
        "device": device,
    }


def score_samples(
    path: str | os.PathLike[str],
    *,
    output: str | os.PathLike[str],
    entailment: str,
    n_samples: int | None = None,
    limit: int | None = None,
    beta: float = 0.5,
    methods: Sequence[str] | None = None,
    psd_policy: str = _score.DEFAULT_PSD_POLICY,
    cluster_rule: str = _score.CLUSTER_RULE,
    se_aggregation: str = _score.SE_AGGREGATION,
    correctness_metric: str = "rougeL",
    threshold: float = 0.3,
    with_question: bool = False,
    device: str | None = None,
    batch_size: int = 32,
    seed: int = 0,
    n_boot: int = 1000,
    dataset_label: str | None = None,
    model_label: str = "external",
    progress: bool = True,
    argv: Sequence[str] | None = None,
) -> Path:
    """Score answers generated elsewhere (``python -m shapley score-samples``); returns the run directory.

    The whole input is validated before anything is written. Stages: entailment -> scores -> metrics.
    """
    items = read_samples_file(path, n_samples=n_samples, limit=limit)
    names = list(_score.resolve_methods(methods))
    p = Path(path)
    label = dataset_label or p.name.split(".")[0]
    settings = {
        "command": "score-samples",
        "input_path": str(p.resolve()),
        "input_sha256": sha256_file(p),
        "n_samples": n_samples,
        "limit": limit,
        "dataset": label,
        "model": model_label,
        **_scoring_settings(entailment, with_question, beta, psd_policy, cluster_rule, se_aggregation, names,
                            correctness_metric, threshold, seed, n_boot, batch_size, device),
    }
    _check_settings(settings)
    if not any(it.sample_logprobs for it in items):
        needs_lp = [m for m in names if "sample_logprobs" in _score.METHODS[m].needs]
        if needs_lp:
            print(f"note: no sample_logprobs in the input; skipping {', '.join(needs_lp)}", file=sys.stderr)
    lens = sorted({len(it.samples) for it in items})
    if len(lens) > 1:
        print(
            f"note: questions have different numbers of samples {lens}; Shap grows with n, consider --n-samples",
            file=sys.stderr,
        )
    backend = _LazyBackend(entailment, device, batch_size)
    stored = check_resumable(output, settings)
    if stored is None:
        backend.get()  # a backend that cannot load fails before the output directory exists
    with RunDir.open(output, settings, argv=argv) as run:
        if backend.loaded:
            run.record_fingerprint("entailment", backend.info())
            backend.recorded = True
        entail_stage(
            run,
            [(it.id, it.question, it.samples) for it in items],
            backend,
            with_question=with_question,
            chunk_size=max(1, batch_size // 2),
            progress=progress,
        )
        ent = run.store("entailment").records

        def compute(chunk: list[SampleItem]) -> list[dict[str, Any]]:
            out = []
            for it in chunk:
                e = ent[it.id]
                x = _score.ScoreInputs(
                    id=it.id,
                    samples=it.samples,
                    entail=e["entail"],
                    contradict=e["contradict"],
                    sample_logprobs=it.sample_logprobs,
                    answer_logprobs=it.answer_token_logprobs,
                    answer_entropies=it.answer_token_entropies,
                    p_true=it.p_true,
                    a4c_text=it.a4c_text,
                    embeddings=it.embedding,
                )
                out.append(score_record(x, it.answer, it.references, settings=run.config["settings"]))
            return out

        run_stage(run.store("scores"), "score", items, compute, key=lambda it: it.id, progress=progress)
        emb = {it.id: it.embedding for it in items if it.embedding is not None}
        finalize(run, [it.id for it in items], embeddings=emb or None)
        return run.path


def _check_settings(s: Mapping[str, Any]) -> None:
    if not 0.0 < float(s["beta"]) <= 1.0:
        raise ValueError(f"--beta must be in (0, 1]; got {s['beta']}")
    if s["psd_policy"] not in ("raise", "clip", "nearest", "shrink"):
        raise ValueError(f"--psd-policy must be raise, clip, nearest or shrink; got {s['psd_policy']!r}")
    if s["correctness_metric"] not in ("rougeL", "bleu"):
        raise ValueError(f"correctness metric must be 'rougeL' or 'bleu'; got {s['correctness_metric']!r}")
    if not 0.0 <= float(s["threshold"]) <= 1.0:
        raise ValueError(f"--threshold must be in [0, 1]; got {s['threshold']}")
    if s.get("se_aggregation", _score.SE_AGGREGATION) not in _score.SE_AGGREGATIONS:
        raise ValueError(f"--se-aggregation must be sum or mean; got {s['se_aggregation']!r}")
    if s["cluster_rule"] not in ("bidirectional", "non_contradiction"):
        raise ValueError(f"--cluster-rule must be bidirectional or non_contradiction; got {s['cluster_rule']!r}")
    if s.get("limit") is not None and int(s["limit"]) < 1:
        raise ValueError(f"--limit must be >= 1; got {s['limit']}")
    if s.get("n_samples") is not None and int(s["n_samples"]) < 1:
        raise ValueError(f"--n-samples must be >= 1; got {s['n_samples']}")
    if int(s["n_boot"]) < 1:
        raise ValueError(f"--n-boot must be >= 1; got {s['n_boot']}")


class _LazyGenerator:
    """Builds the generator (and loads the model) on first use."""

    def __init__(self, model: str, config_kwargs: Mapping[str, Any]) -> None:
        self.model, self.kwargs = model, dict(config_kwargs)
        self._gen: Any = None
        self.recorded = False

    def get(self) -> Any:
        if self._gen is None:
            g = importlib.import_module("shapley.generate")
            self._gen = g.Generator(self.model, g.GenerationConfig(**self.kwargs))
        return self._gen

    def info(self) -> dict[str, Any]:
        gen = self.get()
        return {"spec": self.model, "fingerprint": getattr(gen, "fingerprint", None)}


def run_experiment(
    *,
    dataset: str,
    output: str | os.PathLike[str],
    model: str = "smollm2",
    entailment: str = "hf:microsoft/deberta-large-mnli",
    n_samples: int = 10,
    limit: int | None = None,
    seed: int = 0,
    beta: float = 0.5,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = 0,
    max_new_tokens: int = 32,
    batch_size: int = 8,
    device: str | None = None,
    dtype: str | None = None,
    with_question: bool = False,
    n_shots: int = 5,
    source: str = "auto",
    data_path: str | None = None,
    methods: Sequence[str] | None = None,
    psd_policy: str = _score.DEFAULT_PSD_POLICY,
    cluster_rule: str = _score.CLUSTER_RULE,
    se_aggregation: str = _score.SE_AGGREGATION,
    correctness_metric: str | None = None,
    chat_template: bool = False,
    threshold: float = 0.3,
    p_true: bool = True,
    a4c: bool = True,
    n_boot: int = 1000,
    progress: bool = True,
    argv: Sequence[str] | None = None,
) -> Path:
    """The whole experiment (``python -m shapley run``): data -> generate -> entail -> score -> metrics.

    Every stage is resumable (stage files in the run directory); models are loaded only when a stage has
    pending questions. Returns the run directory.
    """
    data = importlib.import_module("shapley.data")
    records = data.load_dataset(dataset, limit=limit, n_shots=n_shots, seed=seed, source=source, path=data_path)
    if not records:
        raise ValueError(f"dataset {dataset!r} gave no questions")
    name = records[0].dataset or dataset
    if correctness_metric is None:
        correctness_metric = importlib.import_module("shapley.correctness").CORRECTNESS_FOR.get(name, "rougeL")
    local = None if source == "online" else data.local_path(dataset, data_path)
    data_sha = sha256_file(local) if local is not None and Path(local).is_file() else None
    names = list(_score.resolve_methods(methods))
    settings = {
        "command": "run",
        "dataset": name,
        "source": source if data_sha is None else "local",
        "data_path": None if local is None else str(local),
        "data_sha256": data_sha,
        "n_shots": n_shots,
        "limit": limit,
        "model": model,
        "n_samples": n_samples,
        "temperature": temperature,
        "top_p": top_p,
        "top_k": top_k,
        "max_new_tokens": max_new_tokens,
        "chat_template": chat_template,
        "p_true": p_true,
        "a4c": a4c,
        "dtype": dtype,
        **_scoring_settings(entailment, with_question, beta, psd_policy, cluster_rule, se_aggregation, names,
                            correctness_metric, threshold, seed, n_boot, batch_size, device),
    }
    _check_settings(settings)
    generator = _LazyGenerator(
        model,
        {
            "n_samples": n_samples,
            "temperature": temperature,
            "top_p": top_p,
            "top_k": top_k,
            "max_new_tokens": max_new_tokens,
            "chat_template": chat_template,
            "seed": seed,
            "batch_size": batch_size,
            "p_true": p_true,
            "a4c": a4c,
            "device": device,
            "dtype": dtype,
            "progress": False,  # run_stage shows the bar
        },
    )
    backend = _LazyBackend(entailment, device, max(batch_size, 8))
    with RunDir.open(output, settings, argv=argv) as run:
        run.config["provenance"]["questions_sha256"] = hashlib.sha256(
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
        run_stage(
            qstore, "data", records, lambda chunk: [r.to_dict() for r in chunk], key=lambda r: r.id, progress=False
        )

        def gen_compute(chunk: list[Any]) -> list[dict[str, Any]]:
            if not generator.recorded:
                run.record_fingerprint("model", generator.info())
                generator.recorded = True
            return [g.to_dict() for g in generator.get().generate(chunk)]

        gens = run_stage(
            run.store("generations"),
            "generate",
            records,
            gen_compute,
            key=lambda r: r.id,
            # As many questions as fill one decoding batch (Generator.questions_per_batch), stored as they finish.
            chunk_size=max(1, batch_size // (1 + n_samples)),
            progress=progress,
        )
        entail_stage(
            run,
            [(r.id, r.question, list(gens[r.id]["samples"])) for r in records],
            backend,
            with_question=with_question,
            chunk_size=max(1, batch_size),
            progress=progress,
        )
        ent = run.store("entailment").records
        from shapley.records import Generation

        def score_compute(chunk: list[Any]) -> list[dict[str, Any]]:
            out = []
            for r in chunk:
                g = gens[r.id]
                e = ent[r.id]
                x = _score.ScoreInputs.from_generation(
                    Generation.from_dict(g),
                    _score.ScoreInputs(id=r.id, entail=e["entail"], contradict=e["contradict"]),
                    embeddings=g.get("embedding"),
                )
                out.append(score_record(x, g["answer"], r.references, settings=run.config["settings"]))
            return out

        run_stage(run.store("scores"), "score", records, score_compute, key=lambda r: r.id, progress=progress)
        emb = {r.id: gens[r.id]["embedding"] for r in records if gens[r.id].get("embedding") is not None}
        finalize(run, [r.id for r in records], embeddings=emb or None)
        return run.path
