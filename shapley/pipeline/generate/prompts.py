"""Prompts of the generation stage and their key-value caches: the self-evaluation prompts, encoding, the
shared-prefix cache, one prefill per prompt, and copies of a prompt's cache for the rows that decode from it.

Shared prefix. Every prompt of a dataset starts with the same few-shot block; only the question's own part
(its passage, when it has one, and its question) differs. The *template head* of a record is its prompt up
to where its own part starts (the last occurrence of its context, else of its question), and its shared
prefix is the longest common token-id prefix of the prompt's tokens and the head's tokens (token ids, since a
tokenizer can merge tokens across the boundary). The head is the same text for every question of a dataset,
so the prefix is too, and its key-value cache is computed once and kept (:data:`PREFIX_CACHE_ENTRIES` most
recent prefixes); each question then prefills only its suffix. The split point is a function of the
question's own record, never of which other questions are in the run, shard or batch, so a question's
numbers do not depend on them. A prefix shorter than :data:`MIN_PREFIX_TOKENS` is not cached.

A prefilled prompt (:class:`PromptState`, one row) is expanded into each decoding batch of its rows by
copying its cache (:meth:`PromptBuilder.expand`), into a preallocated static cache when that is on.
Models whose cache layers are not plain dynamic ones fall back to a whole-prompt prefill, with a note in
``stats["prefix_cache"]``.
"""

from __future__ import annotations

import copy
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from shapley.pipeline.generate.config import GenerationConfig
from shapley.pipeline.generate.models import CausalLM, HeadInput, is_out_of_memory
from shapley.pipeline.rundir.records import QARecord

#: prefixes (token-id tuples) whose key-value caches are kept
PREFIX_CACHE_ENTRIES = 4
#: a shared prefix shorter than this (tokens) is prefilled with the rest of the prompt
MIN_PREFIX_TOKENS = 16
#: the answer classes of the p(True) prompt and their spellings: (A) True, (B) False
TRUE_FALSE: dict[str, tuple[str, ...]] = {"A": (" A", "A"), "B": (" B", "B")}


@dataclass
class PromptState:
    """One prefilled prompt: ``length`` tokens, the last position's logits (1, V), its key-value cache
    (one row; never handed to the model itself, only copies of it) and the last position's hidden state
    (1, d) or None."""

    length: int
    logits: torch.Tensor
    cache: Any
    hidden: torch.Tensor | None


def p_true_prompt(question: str, samples: Sequence[str], answer: str) -> tuple[str, str]:
    """(body, answer prefix) of the p(True) self-evaluation prompt (Kadavath et al. 2022 style).

    The model sees the question, its own brainstormed samples and the proposed answer, and is asked
    whether the proposal is (A) True or (B) False; the prefix is where it states the letter."""
    ideas = "\n".join(s if s else "(empty)" for s in samples)
    body = (
        f"Question: {question}\n"
        + (f"Brainstormed answers:\n{ideas}\n" if samples else "")
        + f"Proposed answer: {answer}\n"
        "Is the proposed answer:\n (A) True\n (B) False"
    )
    return body, "The proposed answer is:"


def a4c_prompt(question: str, answer: str) -> tuple[str, str]:
    """(body, answer prefix) of the ask-for-confidence prompt (Tian et al. 2023 style): the model is
    asked for the probability, 0.0 to 1.0, that the proposed answer is correct."""
    body = (
        f"Question: {question}\n"
        f"Proposed answer: {answer}\n"
        "How likely is it that the proposed answer is correct? Reply with a single probability "
        "between 0.0 and 1.0 and nothing else."
    )
    return body, "Probability:"


def prompt_text(record: QARecord) -> str:
    """The record's prompt; a plain question-answer template when it has none."""
    return record.prompt or f"Answer the question briefly.\nQ: {record.question}\nA:"


def template_head(record: QARecord) -> str:
    """The record's prompt up to where its own part starts: the last occurrence of its context, else of its
    question ("" when neither occurs)."""
    prompt = prompt_text(record)
    starts = [prompt.rfind(a) for a in (record.context, record.question) if a and a in prompt]
    return prompt[: min(starts)] if starts else ""


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token-id sequences."""
    return len(os.path.commonprefix([list(a), list(b)]))  # element by element, on any lists


class PromptBuilder:
    """Encodes prompts and prefills them (the prompt part of :class:`~shapley.pipeline.generate.generator.Generator`).

    State: whether prompts use the chat template, the shared-prefix caches (:data:`PREFIX_CACHE_ENTRIES` most
    recent) and the template heads' token ids, whether the prefix cache and the static cache are (still) on.
    Adds its counters to ``stats`` (the generator's): which cache decodes (``cache``), prompt prefills (one per
    prompt), prefills of shared prefixes, the prefix tokens whose prefill was saved, and whether the prefix cache is
    used (``prefix_cache``)."""

    def __init__(self, lm: CausalLM, config: GenerationConfig, stats: dict[str, Any]) -> None:
        self.lm = lm
        self.stats = stats
        has_template = bool(getattr(self.lm.tokenizer, "chat_template", None))
        if config.chat_template and not has_template:
            raise ValueError("chat_template=True but the tokenizer has no chat template")
        self.use_chat_template = has_template if config.chat_template is None else config.chat_template
        self._static = self.lm.device.type == "cuda" if config.static_cache is None else config.static_cache
        self._prefixes: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self._head_ids: dict[str, list[int]] = {}
        self._prefix_ok = config.prefix_cache
        stats.update(
            cache="static" if self._static else "dynamic",
            prompt_prefills=0,
            prefix_prefills=0,
            prefix_tokens_reused=0,
            prefix_cache="on" if self._prefix_ok else "off",
        )

    def class_token_ids(self, variants: Mapping[str, Sequence[str]]) -> dict[str, list[int]]:
        """First token id of each spelling variant per class, dropping ids shared between classes."""
        firsts: dict[str, set[int]] = {}
        for cls, forms in variants.items():
            encoded = [self.lm.tokenizer.encode(form, add_special_tokens=False) for form in forms]
            firsts[cls] = {int(ids[0]) for ids in encoded if ids}
        out: dict[str, list[int]] = {}
        for cls, ids in firsts.items():
            others = set().union(*(v for k, v in firsts.items() if k != cls))
            keep = sorted(ids - others)
            if not keep:
                raise ValueError(f"the tokenizer has no token that distinguishes answer {cls!r} from the others")
            out[cls] = keep
        return out

    def encode(self, body: str, prefix: str = "") -> list[int]:
        """Token ids of a prompt; with the chat template, ``body`` is the user turn and ``prefix`` starts
        the assistant turn."""
        if self.use_chat_template:
            rendered = self.lm.tokenizer.apply_chat_template(
                [{"role": "user", "content": body}], add_generation_prompt=True, tokenize=False
            )
            return list(self.lm.tokenizer.encode(rendered + prefix, add_special_tokens=False))
        text = body + ("\n" + prefix if prefix else "")
        return list(self.lm.tokenizer.encode(text, add_special_tokens=True))

    def decode_text(self, ids: Sequence[int]) -> str:
        return str(self.lm.tokenizer.decode(list(ids), skip_special_tokens=True))

    def record_prompt(self, record: QARecord) -> tuple[list[int], int]:
        """(token ids of the record's prompt, length of its shared prefix; 0 when none is cached)."""
        prompt = self.encode(prompt_text(record))
        if not self._prefix_ok:
            return prompt, 0
        head = template_head(record)
        if head not in self._head_ids:
            self._head_ids[head] = self.encode(head) if head else []
        split = min(common_prefix_length(prompt, self._head_ids[head]), len(prompt) - 1)
        return prompt, (split if split >= MIN_PREFIX_TOKENS else 0)

    @torch.inference_mode()
    def prefix_cache(self, prefix: tuple[int, ...]) -> Any | None:
        """The key-value cache of ``prefix`` (one row), computed on first use; None (and the prefix cache off,
        with a note) when this model's cache cannot be reused."""
        if prefix in self._prefixes:
            self._prefixes.move_to_end(prefix)
            return self._prefixes[prefix]
        ids = torch.tensor([list(prefix)], dtype=torch.long, device=self.lm.device)
        cache = self.lm.forward(input_ids=ids, use_cache=True).past_key_values
        self.stats["prefix_prefills"] += 1
        kinds = {type(layer).__name__ for layer in getattr(cache, "layers", [None])}
        if kinds != {"DynamicLayer"}:
            self._prefix_ok = False
            self.stats["prefix_cache"] = f"off (this model's cache layers, {sorted(kinds)}, cannot be reused)"
            self._prefixes.clear()
            return None
        self._prefixes[prefix] = cache
        while len(self._prefixes) > PREFIX_CACHE_ENTRIES:
            self._prefixes.popitem(last=False)
        return cache

    @torch.inference_mode()
    def prefill(self, prompt: list[int], split: int = 0, head: HeadInput | None = None) -> PromptState:
        """Prefill one prompt once; with ``split`` > 0 only the tokens after its cached shared prefix. ``head``:
        where the last hidden state is read from (None: it is not kept)."""
        self.stats["prompt_prefills"] += 1
        past = self.prefix_cache(tuple(prompt[:split])) if split > 0 and self._prefix_ok else None
        if past is None:
            out = self.lm.forward(input_ids=torch.tensor([prompt], device=self.lm.device), use_cache=True)
        else:
            self.stats["prefix_tokens_reused"] += split
            n = len(prompt)
            out = self.lm.forward(
                input_ids=torch.tensor([prompt[split:]], device=self.lm.device),
                attention_mask=torch.ones((1, n), dtype=torch.long, device=self.lm.device),
                position_ids=torch.arange(split, n, device=self.lm.device)[None],
                past_key_values=copy.deepcopy(past),
                use_cache=True,
            )
        hidden = None if head is None else head.take()
        return PromptState(len(prompt), out.logits[:, -1, :], out.past_key_values, hidden)

    @torch.inference_mode()
    def expand(self, state: PromptState, rows: int, extra: int) -> Any:
        """A cache of ``rows`` copies of the prompt's cache, for ``extra`` more tokens: preallocated (static)
        when that is on and works for this model, else a dynamic copy. The prompt's own cache is left as is."""
        index = torch.zeros(rows, dtype=torch.long, device=self.lm.device)
        if self._static and extra > 0:
            static = self._static_copy(state.cache, index, state.length + extra)
            if static is not None:
                return static
        cache = copy.deepcopy(state.cache)
        if rows > 1:
            cache.batch_select_indices(index)
        return cache

    def _static_copy(self, cache: Any, index: torch.Tensor, max_len: int) -> Any | None:
        """A preallocated (static) cache of ``max_len`` positions holding the prompt cache's rows ``index``;
        None (and the growing cache is kept, for good) when this model's cache layers are not plain ones."""
        try:
            from transformers import StaticCache

            static: Any = StaticCache(config=self.lm.model.config, max_cache_len=max_len)
            for target, source in zip(static.layers, cache.layers, strict=True):  # ValueError where they differ
                if type(target).__name__ != "StaticLayer":
                    raise TypeError(f"unsupported cache layer {type(target).__name__}")
                keys, values = source.keys.index_select(0, index), source.values.index_select(0, index)
                target.lazy_initialization(keys, values)
                target.keys[:, :, : keys.shape[2]].copy_(keys)
                target.values[:, :, : values.shape[2]].copy_(values)
                target.cumulative_length.fill_(keys.shape[2])
            return static
        except (ImportError, TypeError, AttributeError, ValueError, RuntimeError) as exc:
            if is_out_of_memory(exc):
                raise
            self._static = False
            self.stats["cache"] = f"dynamic (static cache unavailable: {type(exc).__name__}: {exc})"
            return None
