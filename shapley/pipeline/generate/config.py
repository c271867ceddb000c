"""The generator's configuration and pure helpers of the generation stage: :class:`GenerationConfig`, the
self-evaluation prompts, the truncation rule (:func:`truncate_at_stop`, :class:`StopChecker`), per-row seeds and
inverse-CDF sampling.

See :mod:`shapley.pipeline.generate.generator` for what the stage computes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from shapley.pipeline.config import GenerationSettings, setting
from shapley.pipeline.rundir.records import QARecord

#: least rows per decoding batch on a CPU when no size is set (a question's 1 + n_samples rows when more)
CPU_BATCH_ROWS = 8
#: upper bound of an automatic batch (rows) on CUDA
MAX_AUTO_ROWS = 1024
#: prompt length (tokens) assumed for the memory estimate when the prompts are not known yet
ASSUMED_PROMPT_TOKENS = 512
#: share of the free device memory an automatic batch may plan to use
MEMORY_SHARE = 0.8

# --------------------------------------------------------------------------------------------------
# configuration and prompts
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerationConfig(GenerationSettings):
    """The generator's configuration: a run's generation settings, inherited from
    :class:`shapley.pipeline.config.GenerationSettings` (declared, defaulted and checked there; ``model`` is not
    read here, since :class:`~shapley.pipeline.generate.generator.Generator` is given its model), and how this
    process runs them.

    ``n_samples`` may be 0 here (the greedy answer alone; a run samples at least one). ``seed``: the run's seed
    (per-row seeds derive from it). ``batch_size`` and ``device``: the run's runtime settings (rows per decoding
    batch when ``rows_per_batch`` is unset, ``None`` = automatic: on a CPU 8, or a question's rows when more; from
    free memory on CUDA; the device the model is loaded on). ``progress``: the generator's own tqdm bar (``None`` =
    auto, shown on a terminal only). ``stop``: answers end at the first of these strings. ``a4c_max_new_tokens``:
    length limit of the A4C reply. ``hidden_state``: keep the greedy answer's last-token hidden state (for ER).
    ``static_cache``: decode with a preallocated key-value cache (``None`` = on CUDA only, where it saves the copy
    that a growing cache makes at every step; falls back to the growing cache for models whose cache cannot be
    preallocated).
    """

    n_samples: int = setting(10, "sampled answers per question (0: the greedy answer alone)", low=0, high=1000)
    seed: int = 0
    batch_size: int | None = None
    device: str | None = None
    progress: bool | None = None
    stop: tuple[str, ...] = ("\n",)
    a4c_max_new_tokens: int = 10
    hidden_state: bool = True
    static_cache: bool | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.stop, str) or not all(isinstance(x, str) and x for x in self.stop):
            raise ValueError(f"stop must be a tuple of non-empty strings such as ('\\n',); got {self.stop!r}")
        object.__setattr__(self, "stop", tuple(self.stop))
        checks = [
            (self.batch_size is None or (_whole(self.batch_size) and self.batch_size >= 1), "batch_size must be >= 1"),
            (_whole(self.a4c_max_new_tokens) and self.a4c_max_new_tokens >= 1, "a4c_max_new_tokens must be >= 1"),
            (_whole(self.seed), "seed must be an integer"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(f"{msg}; got {self!r}")


def _whole(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _fallback_prompt(record: QARecord) -> str:
    return f"Answer the question briefly.\nQ: {record.question}\nA:"


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


def truncate_at_stop(
    token_ids: Sequence[int], decode: Callable[[Sequence[int]], str], stop: Sequence[str]
) -> tuple[int, str]:
    """Apply the truncation rule; returns (number of tokens kept, stripped answer text).

    Kept tokens: the longest prefix whose decoded text contains no stop string and is not longer than
    the position of the first stop string in the full decoded text."""
    text = decode(token_ids)
    hits = [text.find(s) for s in stop if s in text]
    if not hits:
        return len(token_ids), text.strip()
    first = min(hits)
    m = len(token_ids)
    while m > 0:
        t = decode(token_ids[:m])
        if len(t) <= first and not any(s in t for s in stop):
            return m, t.strip()
        m -= 1
    return 0, ""


class StopChecker:
    """Incremental stop-string detection over a vocabulary of ``vocab_size`` token ids.

    ``table[v]`` is True when token ``v`` may complete a stop string: its own text contains the last
    character of a stop string or a replacement character (a byte that completes a multi-byte
    character), or it is unknown to the tokenizer. Every stop string ends inside the text added by the
    token that completes it, so a row whose new token is not marked cannot have just reached a stop
    string, and only marked rows are checked with :meth:`hit` (the rule itself). A stop string that ends
    in a space marks every token (sentencepiece-style decoders add a token's leading space only in
    context); other characters, newlines included, come from the token's own text.
    """

    def __init__(
        self,
        stop: Sequence[str],
        decode: Callable[[Sequence[int]], str],
        vocab_size: int,
        batch_decode: Callable[[list[list[int]]], list[str]] | None = None,
        known_tokens: int | None = None,
    ):
        self.stop = tuple(stop)
        self.decode = decode
        self.table = np.zeros(vocab_size, dtype=bool)
        if not self.stop:
            return
        ends = {s[-1] for s in self.stop}
        if " " in ends:
            self.table[:] = True
            return
        known = vocab_size if known_tokens is None else min(vocab_size, known_tokens)
        ids = [[v] for v in range(known)]
        texts = batch_decode(ids) if batch_decode is not None else [decode(i) for i in ids]
        marks = ["\ufffd", *ends]
        self.table[:known] = [any(c in t for c in marks) for t in texts]
        self.table[known:] = True

    def hit(self, token_ids: Sequence[int]) -> bool:
        """The rule: does the decoded text of ``token_ids`` contain a stop string?"""
        text = self.decode(token_ids)
        return any(s in text for s in self.stop)


_TRUE_FALSE: dict[str, tuple[str, ...]] = {"A": (" A", "A"), "B": (" B", "B")}


def _derive_seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def inverse_cdf_sample(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """One token per row by inverse CDF: the first index whose cumulative probability exceeds ``u * total``.

    ``probs``: (B, V) non-negative; ``u``: (B,) uniforms in [0, 1). The cumulative sum runs in float64, so
    a token of probability p is drawn for a share p of the unit interval up to about 1e-16; a token of
    probability 0 is never drawn. Returns (B,) int64 on the device of ``probs``."""
    cdf = probs.double().cumsum(-1)
    x = (u.double() * cdf[:, -1]).unsqueeze(-1)
    idx = torch.searchsorted(cdf, x, right=True).squeeze(-1)
    return torch.where(idx >= probs.shape[-1], probs.argmax(-1), idx)  # x rounded up to the total: the mode
