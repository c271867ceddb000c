"""The entailment pair cache: one sqlite file of scored pairs (plain rows, no pickle), checksummed rows.

A row is keyed by the SHA-256 of everything that determines its two numbers (:meth:`EntailmentCache.keys`):
the backend name, the model fingerprint, ``with_question``, a ``context`` string (how the pair was
computed: the batching rule, dtype, device kind and the pair's question group, see
:mod:`shapley.pipeline.entail.base`) and the two texts. A path that cannot hold the cache (a directory, a
device such as ``/dev/null``, a folder without write permission) raises ``ValueError`` naming it; a full disk
(sqlite's SQLITE_FULL) raises ``OSError`` (ENOSPC) naming it, with nothing half-stored.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import sqlite3
import stat
import struct
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from shapley.pipeline.rundir.settings import cache_dir


class TruncatedInputWarning(UserWarning):
    """Some inputs were longer than the entailment model reads and were cut."""


def is_corrupt(exc: BaseException) -> bool:
    """A sqlite error that means the file is damaged or not a database (not a lock or a busy file)."""
    name = getattr(exc, "sqlite_errorname", "")
    if name in {"SQLITE_CORRUPT", "SQLITE_NOTADB"}:
        return True
    benign = (sqlite3.OperationalError, sqlite3.IntegrityError, sqlite3.ProgrammingError)
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, benign)


#: seconds a connection waits for another process's lock before giving up
LOCK_TIMEOUT_S = 60
#: keys looked up per query (sqlite bounds the parameters of one statement; old builds at 999)
KEYS_PER_QUERY = 500
T = TypeVar("T")


class EntailmentCache:
    """Persistent pair cache in one sqlite file (plain rows, no pickle).

    A row holds the sha256 key of (backend name, fingerprint, with_question, computation, premise, hypothesis)
    (:meth:`keys`), the two probabilities and a checksum of key and values (:meth:`row_checksum`); the columns
    ``backend``, ``fingerprint`` and ``with_question`` stay, empty, so that older versions still write the file
    (nothing reads them; rows written before fill them). :meth:`get_many`
    returns only rows whose checksum matches and whose values are probabilities; others are counted and
    recomputed by the caller. A file that is not a readable database is moved aside with a warning and replaced
    by an empty cache."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else cache_dir() / "entail" / "entail.sqlite"
        check_cache_path(self.path)
        try:
            self._transaction(self._create)
        except sqlite3.OperationalError as exc:  # unreadable, read-only, locked for a minute
            raise ValueError(f"entailment cache {self.path}: cannot open it as an sqlite database ({exc})") from exc

    def _run(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """``op(connection)`` in one transaction, committed on success (rolled back on an error), then closed."""
        with contextlib.closing(sqlite3.connect(self.path, timeout=LOCK_TIMEOUT_S)) as con, con:
            return op(con)

    @staticmethod
    def _create(con: sqlite3.Connection) -> None:
        con.execute(
            "CREATE TABLE IF NOT EXISTS pairs (key TEXT PRIMARY KEY, backend TEXT, fingerprint TEXT, "
            "with_question INTEGER, entail REAL NOT NULL, contradict REAL, checksum TEXT)"
        )

    def _rebuild(self, exc: BaseException) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{os.getpid()}")
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                Path(str(self.path) + suffix).rename(Path(str(aside) + suffix))
        warnings.warn(
            f"entailment cache {self.path} is not a readable sqlite database ({type(exc).__name__}: {exc}); "
            f"moved it to {aside} and started an empty cache (its pairs will be scored again)",
            RuntimeWarning,
            stacklevel=3,
        )
        self._run(self._create)

    def _transaction(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """:meth:`_run` ``op``; a damaged file is rebuilt once and ``op`` retried; a full disk (SQLITE_FULL:
        sqlite has rolled the transaction back) is an ``OSError`` (ENOSPC) naming the file."""
        try:
            try:
                return self._run(op)
            except sqlite3.DatabaseError as exc:
                if not is_corrupt(exc):
                    raise
                self._rebuild(exc)
            return self._run(op)
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL":
                raise OSError(errno.ENOSPC, f"cannot write the entailment cache {self.path}: {exc}") from exc
            raise

    @staticmethod
    def keys(
        backend: str, fingerprint: str, with_question: bool, pairs: Sequence[tuple[str, str]], context: str
    ) -> list[str]:
        """SHA-256 (hex) naming each scored (premise, hypothesis) pair: of the backend, fingerprint, with_question
        and the computation ``context``, and the SHA-256 of each text (each distinct text hashed once)."""
        head = json.dumps([backend, fingerprint, bool(with_question), context], ensure_ascii=False) + "\x1f"
        text_hash = {t: hashlib.sha256(t.encode("utf-8")).hexdigest() for t in {t for pair in pairs for t in pair}}
        return [hashlib.sha256((head + text_hash[p] + text_hash[h]).encode()).hexdigest() for p, h in pairs]

    @staticmethod
    def row_checksum(key: str, entail: float, contradict: float | None) -> str:
        """SHA-256 (hex) of a row's key and the exact bytes of its values (float64; a flag for no contradiction)."""
        values = struct.pack("<d?d", entail, contradict is None, 0.0 if contradict is None else contradict)
        return hashlib.sha256(key.encode() + values).hexdigest()

    @staticmethod
    def _valid(key: str, e: Any, c: Any, checksum: Any) -> bool:
        def prob(v: Any) -> bool:
            return isinstance(v, float) and 0.0 <= v <= 1.0

        return prob(e) and (c is None or prob(c)) and checksum == EntailmentCache.row_checksum(key, e, c)

    def get_many(self, keys: Sequence[str]) -> tuple[dict[str, tuple[float, float | None]], int]:
        """Valid cached values of ``keys``, and how many of their rows were bad (left out)."""

        def read(con: sqlite3.Connection) -> tuple[dict[str, tuple[float, float | None]], int]:
            found: dict[str, tuple[float, float | None]] = {}
            bad = 0
            for start in range(0, len(keys), KEYS_PER_QUERY):
                chunk = list(keys[start : start + KEYS_PER_QUERY])
                marks = ",".join("?" * len(chunk))
                query = f"SELECT key, entail, contradict, checksum FROM pairs WHERE key IN ({marks})"
                for k, e, c, checksum in con.execute(query, chunk).fetchall():
                    if self._valid(k, e, c, checksum):
                        found[k] = (e, c)
                    else:
                        bad += 1
            return found, bad

        return self._transaction(read)

    def put_many(self, rows: Sequence[tuple[str, float, float | None]]) -> None:
        """Store (key, entail, contradict) rows with their checksums."""
        full = [(*r, self.row_checksum(*r)) for r in rows]
        query = "INSERT OR REPLACE INTO pairs (key, entail, contradict, checksum) VALUES (?, ?, ?, ?)"
        self._transaction(lambda con: con.executemany(query, full))

    def __len__(self) -> int:
        return int(self._transaction(lambda con: con.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]))


def check_cache_path(path: Path) -> None:
    """``ValueError`` naming ``path`` unless it can hold the cache: an existing regular file (or none yet) in a
    folder that exists (or can be made) and can be written. Never follows up by moving a device aside."""
    try:
        info = path.stat()
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise ValueError(f"entailment cache {path}: cannot read it ({exc})") from exc
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ValueError(f"entailment cache {path} is a directory; give the path of a file (e.g. {path}/entail.sqlite)")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ValueError(f"entailment cache {path} is not a regular file (a device, pipe or socket); give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"entailment cache {path}: cannot create its folder ({exc})") from exc
    if not os.access(path.parent, os.W_OK | os.X_OK) or (info is not None and not os.access(path, os.R_OK | os.W_OK)):
        raise ValueError(f"entailment cache {path}: no permission to write it (or its folder {path.parent})")
