"""Common machinery of the entailment backends: input checks, question groups, the batch rule, the cache.

**Batch rule** (``BATCH_RULE``): a pair's numbers never depend on what else is in a call. Each question's
answers form a *group*: its distinct texts in sorted order (``group_id`` names it by their SHA-256). A backend
computes a group's ordered pairs of different texts in forward passes that hold that group's pairs (or
texts) alone, in an order and cut into passes that depend on the group's texts only (by decreasing token
length, at most a fixed number of pairs per pass for the device kind, padded within the pass). So the
entailment ``batch_size``, the other questions of a call, shards and the cache's contents do not change a
single bit of a group's probabilities. Two questions with the same distinct texts share one computation.

**Cache key** (:meth:`EntailmentBackend.cache_context`): besides the backend name, the model fingerprint,
``with_question`` and the texts, every cached pair is keyed by its *computation*: the batch rule, the
device kind (``cpu`` / ``cuda`` ...), the dtype, the pass limits (``pass_pairs``, ``pass_tokens``) and its
group's id; a value is reused only where it was computed the same way. A group is served from the cache
only when every one of its pairs is there (valid); otherwise the whole group is computed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shapley.pipeline.entail.cache import EntailmentCache, EntailmentCacheWarning, TruncatedInputWarning
from shapley.pipeline.generate.models import ModelNotAvailableError, hf_offline, local_snapshot, looks_like_hub_id
from shapley.pipeline.rundir.progress import tqdm

__all__ = [
    "BATCH_RULE",
    "DEFAULT_NLI_MODEL",
    "EntailmentBackend",
    "EntailmentResult",
    "group_id",
    "group_pairs",
    "nli_label_indices",
]

DEFAULT_NLI_MODEL = "microsoft/deberta-large-mnli"
#: version of the rule that forms forward passes (part of every cache key; bump it when the rule changes)
BATCH_RULE = "question-v1"

_ALTERNATIVES = (
    '"embedding:minilm" (packaged all-MiniLM-L6-v2), "llm:smollm2" (packaged SmolLM2 judge), '
    'or "hf:<local model directory>"'
)

#: (entail, contradict or None) of one group's distinct texts, each (u, u)
GroupScores = tuple[np.ndarray, np.ndarray | None]


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
    u = len(texts)
    premises = [texts[r] for r in range(u) for s in range(u) if r != s]
    hypotheses = [texts[s] for r in range(u) for s in range(u) if r != s]
    return premises, hypotheses


def _off_diagonal(u: int) -> np.ndarray:
    return ~np.eye(u, dtype=bool)


def group_matrices(u: int, entail: np.ndarray, contradict: np.ndarray | None) -> GroupScores:
    """(u, u) matrices from the flat values of :func:`group_pairs` order: clipped to [0, 1], float64, with
    diagonal 1 (entail) and 0 (contradict)."""
    off = _off_diagonal(u)
    e = np.eye(u)
    e[off] = np.clip(np.asarray(entail, dtype=np.float64), 0.0, 1.0)
    if contradict is None:
        return e, None
    c = np.zeros((u, u))
    c[off] = np.clip(np.asarray(contradict, dtype=np.float64), 0.0, 1.0)
    return e, c


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
    """Common machinery (question groups, the batch rule, the cache); subclasses implement ``_score_groups``.

    Attributes: ``name`` (the spec, e.g. ``"embedding:minilm"``), ``fingerprint`` (of the weights),
    ``is_nli`` (True only for real NLI classifiers), ``batch_size`` (as given; it never changes a result: the
    forward passes follow the batch rule, see the module docstring), ``computation`` (what besides the texts
    determines a pair's numbers: ``rule``, ``device``, ``dtype``, ``pass_pairs``, ``pass_tokens``; part of
    every cache key), ``cache`` (an :class:`EntailmentCache` or ``None``), ``stats`` (work counters,
    cumulative: the pass limits (``batch_size``), pairs requested / unique within their group / scored, cache
    hits, cache rows redone, forward passes, truncated texts, the largest pass run in pairs or texts,
    out-of-memory splits)."""

    name: str
    fingerprint: str
    is_nli: bool
    has_contradiction: bool = True

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
        self.computation: dict[str, Any] = {"rule": BATCH_RULE}
        self._inexact = False  # set when an out-of-memory split broke the batch rule in this call
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

    def _note_split(self) -> None:
        """An out-of-memory split: this call's results may differ from the batch rule's in the last bits, so
        they are not cached."""
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
        """(u, u) matrices of each group's distinct texts (at least 2), computed by the batch rule."""

    def cache_context(self, gid: str) -> str:
        """The computation part of a cache key: the ``computation`` settings (JSON) and the group id."""
        return json.dumps(self.computation, sort_keys=True) + "|" + gid

    def _cached(self, groups: dict[str, list[str]], with_question: bool) -> tuple[dict[str, GroupScores], list[str]]:
        """Groups every pair of which the cache holds (valid) and the cache keys, group after group, in
        :func:`group_pairs` order (empty without a cache)."""
        if self.cache is None or not groups:
            return {}, []
        keys: list[str] = []
        for gid, texts in groups.items():
            pairs = list(zip(*group_pairs(texts), strict=True))
            keys += EntailmentCache.keys(self.name, self.fingerprint, with_question, pairs, self.cache_context(gid))
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
        found, at = {}, 0
        for gid, texts in groups.items():
            m = len(texts) * (len(texts) - 1)
            mine = keys[at : at + m]
            at += m
            if all(k in hit for k in mine):
                e = np.array([hit[k][0] for k in mine])
                c = (
                    None
                    if not self.has_contradiction
                    else np.array([np.nan if hit[k][1] is None else hit[k][1] for k in mine])
                )
                found[gid] = group_matrices(len(texts), e, c)
                self.stats["cache_hits"] += m
        return found, keys

    def _store(self, groups: dict[str, list[str]], scored: dict[str, GroupScores], with_question: bool) -> None:
        if self.cache is None or self._inexact or not scored:
            return
        tag = self.fingerprint + "|" + json.dumps(self.computation, sort_keys=True)
        rows = []
        for gid, (e, c) in scored.items():
            texts = groups[gid]
            pairs = list(zip(*group_pairs(texts), strict=True))
            keys = EntailmentCache.keys(self.name, self.fingerprint, with_question, pairs, self.cache_context(gid))
            off = _off_diagonal(len(texts))
            c_list = [None] * len(keys) if c is None else c[off].tolist()
            rows += [
                (k, self.name, tag, bool(with_question), ev, cv)
                for k, ev, cv in zip(keys, e[off].tolist(), c_list, strict=True)
            ]
        self.cache.put_many(rows)

    def score(
        self, items: Sequence[tuple[str, Sequence[str]]], *, with_question: bool = False
    ) -> list[EntailmentResult]:
        """Entailment matrices for each ``(question, answers)`` item, in order; shapes (n, n). Each item's
        numbers depend on its own answers (and question, with ``with_question``) only."""
        groups: dict[str, list[str]] = {}
        per_item: list[tuple[str, np.ndarray]] = []
        for question, answers in _validate_items(items):
            texts = [f"{question} {a}" if with_question else a for a in answers]
            uniq = sorted(set(texts))
            pos = {t: i for i, t in enumerate(uniq)}
            gid = group_id(uniq)
            groups.setdefault(gid, uniq)
            per_item.append((gid, np.array([pos[t] for t in texts], dtype=np.intp)))
            self.stats["pairs_requested"] += len(texts) * (len(texts) - 1)
        self.stats["pairs_unique"] += sum(len(u) * (len(u) - 1) for u in groups.values())
        small = {
            g: group_matrices(len(t), np.zeros(0), None if not self.has_contradiction else np.zeros(0))
            for g, t in groups.items()
            if len(t) < 2
        }
        big = {g: t for g, t in groups.items() if len(t) >= 2}
        found, _ = self._cached(big, with_question)
        todo = [g for g in big if g not in found]
        scored: dict[str, GroupScores] = {}
        if todo:
            self._inexact = False
            for gid, (e, c) in zip(todo, self._score_groups([big[g] for g in todo]), strict=True):
                u = len(big[gid])
                off = _off_diagonal(u)
                scored[gid] = group_matrices(u, e[off], None if c is None else c[off])
                self.stats["pairs_scored"] += u * (u - 1)
            self._store(big, scored, with_question)
        matrices = {**small, **found, **scored}
        out = []
        for gid, inv in per_item:
            e, c = matrices[gid]
            out.append(
                EntailmentResult(entail=e[np.ix_(inv, inv)], contradict=None if c is None else c[np.ix_(inv, inv)])
            )
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, fingerprint={self.fingerprint[:12]!r})"


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
