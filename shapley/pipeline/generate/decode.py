"""Decoding of the generation stage: rows of one prefilled prompt, in batches, one token per row and step.

Sampling: one uniform number per row and step, drawn up front from the row's own CPU ``torch.Generator``, picks
the token by inverse CDF of the sampling distribution (temperature, then top-k, then top-p) in one vectorised
operation on the model's device (:func:`inverse_cdf_sample`). The loop stays on the device and synchronises with
the host once per step (to learn which rows ended).

Truncation rule: a row stops at the end-of-sequence token (not kept) or once its decoded text contains one of the
stop strings. The kept tokens are then the longest prefix of the generated tokens whose decoded text contains no
stop string and ends before the first stop string; the answer text is the decoded kept prefix with surrounding
whitespace stripped, so the text, the log-probabilities and the entropies always describe the same tokens
(:meth:`StopChecker.truncate`). Stop strings are looked for incrementally: a table over the vocabulary marks the tokens
whose text could complete a stop string (:class:`StopChecker`), and only a row whose new token is marked is decoded
and checked with the rule, so no step re-decodes every row. The kept tokens always come from the rule itself,
applied once per answer at the end.

Ended rows leave the forward passes: with a growing (dynamic) cache, a step after which rows ended keeps only the
rows still generating (and the greedy rows whose hidden state is wanted), so later steps cost what the live rows
cost. Which rows stay is a function of the tokens alone, so the numbers depend only on the inputs and the recorded
settings. A preallocated (static) cache keeps its batch whole.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

from shapley.pipeline.config import CPU_BATCH_ROWS
from shapley.pipeline.generate.config import GenerationConfig
from shapley.pipeline.generate.models import (
    CausalLM,
    HeadInput,
    kv_cache_bytes_per_token,
    split_on_oom,
)
from shapley.pipeline.generate.prompts import PromptBuilder, PromptState

#: upper bound of an automatic batch (rows) on CUDA
MAX_AUTO_ROWS = 1024
#: prompt length (tokens) assumed for the memory estimate of an automatic batch
ASSUMED_PROMPT_TOKENS = 512
#: share of the free device memory an automatic batch may plan to use
MEMORY_SHARE = 0.8
#: device bytes per row and vocabulary entry planned for a step's logits and what is computed from them (float32
#: log-probabilities and probabilities, the sampling distribution, its float64 cumulative sum)
VOCAB_BYTES_PER_ROW = 48
#: largest finite float16: hidden states are clamped to it before they are stored as float16
FLOAT16_MAX = float(np.finfo(np.float16).max)

T = TypeVar("T")


class StopChecker:
    """The truncation rule (:meth:`truncate`) and incremental stop-string detection over a vocabulary of
    ``vocab_size`` token ids (``decode``: token ids -> text).

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

    def truncate(self, token_ids: Sequence[int]) -> tuple[int, str]:
        """Apply the truncation rule; returns (number of tokens kept, stripped answer text).

        Kept tokens: the longest prefix whose decoded text contains no stop string and is not longer than
        the position of the first stop string in the full decoded text."""
        text = self.decode(token_ids)
        hits = [text.find(s) for s in self.stop if s in text]
        if not hits:
            return len(token_ids), text.strip()
        first = min(hits)
        for m in range(len(token_ids), 0, -1):
            t = self.decode(token_ids[:m])
            if len(t) <= first and not any(s in t for s in self.stop):
                return m, t.strip()
        return 0, ""


def inverse_cdf_sample(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """One token per row by inverse CDF: the first index whose cumulative probability exceeds ``u * total``.

    ``probs``: (B, V) non-negative; ``u``: (B,) uniforms in [0, 1). The cumulative sum runs in float64, so
    a token of probability p is drawn for a share p of the unit interval up to about 1e-16; a token of
    probability 0 is never drawn. Returns (B,) int64 on the device of ``probs``."""
    cdf = probs.double().cumsum(-1)
    x = (u.double() * cdf[:, -1]).unsqueeze(-1)
    idx = torch.searchsorted(cdf, x, right=True).squeeze(-1)
    return torch.where(idx >= probs.shape[-1], probs.argmax(-1), idx)  # x rounded up to the total: the mode


@dataclass
class Decoded:
    """One decoded row: its kept tokens, their untempered log-probabilities and entropies (nats), its answer text
    and, for a greedy row whose hidden state is kept, that state (float16, (d,))."""

    tokens: list[int]
    logprobs: list[float]
    entropies: list[float]
    text: str
    hidden: np.ndarray | None = None


class _Batch:
    """One decoding batch of rows of one prompt, over at most ``steps`` steps.

    Every row: on the host ``alive`` (B,) (still generating), ``length`` (B,) (tokens generated so far; an
    end-of-sequence token is not counted) and ``tokens`` (B, steps); on the device ``logprobs`` and ``entropies``
    (B, steps) float32 and ``alive_dev`` (B,). The rows that still take part in the forward passes are ``rows``
    (host) and ``index`` (device), in order, and ``cache``, ``mask``, ``pos``, ``u`` and ``sampled`` hold theirs:
    :meth:`keep` drops the rows that ended when the cache is a growing one, and counts them in ``dropped``. The
    rows ``wanted`` (greedy rows whose hidden state is kept) stay until the end; ``hidden[:, i]`` holds their
    hidden states after the prefill (i = 0) or the feeding of generated token i - 1 (:meth:`record`)."""

    def __init__(
        self,
        state: PromptState,
        seeds: Sequence[int | None],
        u: torch.Tensor | None,
        wanted: Sequence[int],
        cache: Any,
        steps: int,
    ):
        b, device = len(seeds), state.logits.device
        self.alive = np.ones(b, dtype=bool)
        self.length = np.zeros(b, dtype=np.int64)
        self.tokens = np.zeros((b, steps), dtype=np.int64)
        self.logprobs = torch.zeros((b, steps), dtype=torch.float32, device=device)
        self.entropies = torch.zeros((b, steps), dtype=torch.float32, device=device)
        self.alive_dev = torch.ones(b, dtype=torch.bool, device=device)
        self.rows = np.arange(b)
        self.index = torch.arange(b, device=device)
        self.cache = cache
        self.compact = type(cache).__name__ != "StaticCache"
        self.mask = torch.ones((b, state.length), dtype=torch.long, device=device)
        self.pos = torch.full((b, 1), state.length - 1, dtype=torch.long, device=device)
        self.u = u
        self.sampled = torch.tensor([s is not None for s in seeds], device=device)
        self.dropped = 0
        self.wanted = list(wanted)
        self.hidden_index = torch.tensor(self.wanted, dtype=torch.long, device=device)  # their places among rows
        self.hidden: torch.Tensor | None = None
        self.filled = -1

    def spread(self, nxt: torch.Tensor) -> torch.Tensor:
        """The live rows' tokens (len(rows),) placed in a (B,) vector (0 for rows that left)."""
        b = len(self.alive)
        if len(self.rows) == b:
            return nxt
        return torch.zeros(b, dtype=nxt.dtype, device=nxt.device).index_copy(0, self.index, nxt)

    def keep(self, nxt: torch.Tensor) -> torch.Tensor:
        """Drop the rows that ended at this step; returns ``nxt`` of the rows that stay."""
        at = np.flatnonzero(self.alive[self.rows] | np.isin(self.rows, self.wanted))
        if not self.compact or len(at) == len(self.rows):
            return nxt
        sel = torch.from_numpy(at).to(self.index.device)
        self.cache.batch_select_indices(sel)
        self.dropped += len(self.rows) - len(at)
        self.rows, self.index = self.rows[at], self.index.index_select(0, sel)
        self.mask, self.pos, self.sampled = self.mask[sel], self.pos[sel], self.sampled[sel]
        self.u = None if self.u is None else self.u[sel]
        self.hidden_index = torch.from_numpy(np.searchsorted(self.rows, self.wanted)).to(sel.device)  # rows ascend
        return nxt[sel]

    def step(self, lm: CausalLM, feed: torch.Tensor) -> torch.Tensor:
        """Feed one token per live row; returns the next logits (len(rows), V)."""
        self.mask = torch.cat([self.mask, self.mask.new_ones((self.mask.shape[0], 1))], dim=-1)
        self.pos = self.pos + 1
        out = lm.forward(
            input_ids=feed[:, None],
            attention_mask=self.mask,
            position_ids=self.pos,
            past_key_values=self.cache,
            use_cache=True,
        )
        self.cache = out.past_key_values
        return out.logits[:, -1, :]

    def record(self, position: int, h: torch.Tensor | None) -> None:
        """Keep the wanted rows' hidden states ``h`` (len(rows), d) at ``position``."""
        if not self.wanted or h is None:
            return
        h = h.index_select(0, self.hidden_index)
        if self.hidden is None:
            shape = (len(self.wanted), self.tokens.shape[1] + 1, h.shape[-1])
            self.hidden = torch.empty(shape, dtype=h.dtype, device=h.device)
        self.hidden[:, position] = h
        self.filled = position

    def hidden_vectors(self, kept: Mapping[int, int]) -> dict[int, np.ndarray]:
        """Wanted row -> float16 vector at its ``kept[row]`` position (rows whose position was not computed are
        left out)."""
        if self.hidden is None:
            return {}
        at = torch.tensor([min(kept[r], self.filled) for r in self.wanted], device=self.hidden.device)
        chosen = self.hidden[torch.arange(len(self.wanted), device=self.hidden.device), at]
        host = chosen.float().clamp(-FLOAT16_MAX, FLOAT16_MAX).cpu().numpy().astype(np.float16)
        return {r: host[i] for i, r in enumerate(self.wanted) if kept[r] <= self.filled}


class Decoder:
    """Batch sizes and the decoding loop (the decoding part of :class:`~shapley.pipeline.generate.generator.Generator`).

    State: the stop-string lookup tables (:attr:`tables`), the row cap left by an out-of-memory split and the
    rows fixed by :meth:`fix_rows`. Prompts are encoded, prefilled and copied by its
    :class:`~shapley.pipeline.generate.prompts.PromptBuilder`. Adds its counters to ``stats`` (the generator's):
    the rows planned per decoding batch (``batch_size``), decoding batches and their sizes in rows
    (``batch_rows_used``), decoding steps, rows that left their batch early, tokens generated (end-of-sequence
    tokens not counted, tokens cut by a stop string counted), and batches
    split after running out of memory (``oom_splits``)."""

    def __init__(self, lm: CausalLM, config: GenerationConfig, stats: dict[str, Any], prompts: PromptBuilder) -> None:
        self.lm = lm
        self.config = config
        self.stats = stats
        self.prompts = prompts
        self._row_cap: int | None = None
        self._fixed_rows: int | None = None
        stats.update(
            batch_size=None,
            decode_batches=0,
            batch_rows_used=[],
            decode_steps=0,
            rows_dropped=0,
            tokens_generated=0,
            oom_splits=0,
        )

    def decode_prompt(
        self, prompt: list[int], seeds: Sequence[int | None], new_tokens: int, keep_hidden: bool = False, split: int = 0
    ) -> list[Decoded]:
        """Rows ``seeds`` (None: greedy) of one prompt (token ids): one prefill (of the tokens after the cached
        shared prefix of length ``split``), then batches of :meth:`batch_rows` rows from copies of its cache (a
        batch that runs out of memory is split). With ``keep_hidden``, greedy rows also get their last kept token's
        hidden state."""
        with contextlib.closing(HeadInput(self.lm.head if keep_hidden else None)) as head:
            state = self.prompts.prefill(prompt, split, head)
        rows = self.batch_rows()
        self.stats["batch_size"] = rows
        return self.in_batches(list(seeds), rows, lambda chunk: self._decode(state, chunk, new_tokens, keep_hidden))

    @functools.cached_property
    def tables(self) -> tuple[StopChecker, torch.Tensor, torch.Tensor]:
        """(stop checker, end-of-sequence table, may-stop table), the tables (V,) bool on the device; built on
        first use."""
        vocab, tokenizer = self.lm.vocab_size, self.lm.tokenizer
        checker = StopChecker(
            self.config.stop,
            self.prompts.decode_text,
            vocab,
            batch_decode=lambda ids: tokenizer.batch_decode(ids, skip_special_tokens=True),
            known_tokens=len(tokenizer),
        )
        eos = torch.zeros(vocab, dtype=torch.bool)
        eos[[i for i in self.lm.eos_ids if 0 <= i < vocab]] = True
        return checker, eos.to(self.lm.device), torch.from_numpy(checker.table).to(self.lm.device)

    def fix_rows(self) -> int:
        """Fix the rows per decoding batch at what :meth:`batch_rows` chooses now, for every later batch (a new run
        records it as ``generation.rows_per_batch``, so that a resume and every shard decode alike); returns it."""
        self._fixed_rows = self.batch_rows()
        return self._fixed_rows

    def batch_rows(self) -> int:
        """Rows per decoding batch: ``config.rows_per_batch`` (a run's recorded size) or the size fixed by
        :meth:`fix_rows`, else ``config.batch_size``, else on a CPU :data:`CPU_BATCH_ROWS` or a question's
        ``1 + n_samples`` rows if more, else (CUDA) as many rows as :data:`MEMORY_SHARE` of the free device memory
        holds, each the key-value cache of :data:`ASSUMED_PROMPT_TOKENS` + max_new_tokens tokens and a step's
        vocabulary-sized buffers; never more than a size that ran out of memory before."""
        rows = self.config.rows_per_batch or self._fixed_rows or self.config.batch_size
        if rows is None and self.lm.device.type != "cuda":  # a question's rows in one batch: its cache is copied once
            rows = max(CPU_BATCH_ROWS, 1 + self.config.n_samples)
        elif rows is None:
            context = ASSUMED_PROMPT_TOKENS + self.config.max_new_tokens
            per_row = kv_cache_bytes_per_token(self.lm.model) * context + VOCAB_BYTES_PER_ROW * self.lm.vocab_size
            free, _total = torch.cuda.mem_get_info(self.lm.device)
            rows = int(min(MAX_AUTO_ROWS, max(1, MEMORY_SHARE * free // per_row)))
        return self._capped(rows)

    def _capped(self, rows: int) -> int:
        return rows if self._row_cap is None else max(1, min(rows, self._row_cap))

    def in_batches(self, items: Sequence[T], rows: int, run: Callable[[Sequence[T]], list[Any]]) -> list[Any]:
        """``run`` over consecutive batches of ``rows`` items (fewer after an out-of-memory split)."""
        out: list[Any] = []
        start = 0
        while start < len(items):
            size = self._capped(rows)
            out.extend(
                split_on_oom(run, list(items[start : start + size]), self.lm.device, operator.add, self._note_split)
            )
            start += size
        return out

    def _note_split(self, rows: int, half: int) -> None:
        """A batch of ``rows`` ran out of memory and is split: later batches stay at most ``half`` rows."""
        self._row_cap = half if self._row_cap is None else min(self._row_cap, half)
        self.stats["oom_splits"] += 1
        warnings.warn(
            f"generation ran out of device memory at {rows} rows; retrying as two batches of at most {half}",
            RuntimeWarning,
            stacklevel=2,
        )

    def _sampling_probs(self, logits: torch.Tensor) -> torch.Tensor:
        """Sampling distribution: temperature, then top-k, then top-p (nucleus) on float32 logits."""
        cfg = self.config
        x = logits / cfg.temperature
        if cfg.top_k > 0 and cfg.top_k < x.shape[-1]:
            kth = torch.topk(x, cfg.top_k, dim=-1).values[..., -1:]
            x = x.masked_fill(x < kth, float("-inf"))
        if cfg.top_p < 1.0:
            sorted_x, order = torch.sort(x, dim=-1, descending=True)
            p = torch.softmax(sorted_x, dim=-1)
            drop = (p.cumsum(-1) - p) >= cfg.top_p  # keep the smallest head reaching top_p
            drop[..., 0] = False
            x = x.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
        return torch.softmax(x, dim=-1)

    def _uniforms(self, seeds: Sequence[int | None], steps: int) -> torch.Tensor | None:
        """(B, steps) float64 uniforms on the device, row r from its own generator seeded ``seeds[r]``
        (zeros for greedy rows); None when no row samples."""
        if self.config.temperature == 0 or all(s is None for s in seeds):
            return None
        u = torch.zeros((len(seeds), steps), dtype=torch.float64)
        for r, s in enumerate(seeds):
            if s is not None:
                u[r] = torch.rand(steps, generator=torch.Generator().manual_seed(int(s)), dtype=torch.float64)
        return u.to(self.lm.device)

    def _next_tokens(
        self, logits: torch.Tensor, u: torch.Tensor | None, sampled: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(next token, its untempered log-probability, untempered entropy), each (B,), on the device."""
        x = logits.float()
        logp = torch.log_softmax(x, dim=-1)
        p = logp.exp()
        ent = (-torch.where(p > 0, p * logp, 0.0).sum(-1)).clamp(min=0)
        nxt = logp.argmax(-1)
        if u is not None:
            cfg = self.config
            plain = cfg.temperature == 1.0 and cfg.top_k == 0 and cfg.top_p >= 1.0
            draw = inverse_cdf_sample(p if plain else self._sampling_probs(x), u)
            nxt = torch.where(sampled, draw, nxt)
        return nxt, logp.gather(-1, nxt[:, None])[:, 0], ent

    def _advance(self, batch: _Batch, nxt: torch.Tensor, step: int, tables: tuple[Any, ...]) -> bool:
        """Record the step's tokens (B,) on the host (the step's one synchronisation), end rows at an
        end-of-sequence token or a stop string; True when every row has ended."""
        checker, eos_table, stop_table = tables
        packed = torch.stack([nxt, eos_table[nxt].long(), stop_table[nxt].long()]).cpu().numpy()
        batch.tokens[:, step] = packed[0]
        was = batch.alive.copy()
        eos = was & packed[1].astype(bool)
        kept = was & ~eos
        batch.length[kept] = step + 1
        batch.alive[eos] = False
        for r in np.flatnonzero(kept & packed[2].astype(bool)):
            if checker.hit(batch.tokens[r, : step + 1].tolist()):
                batch.alive[r] = False
        if not np.array_equal(was, batch.alive):
            batch.alive_dev = torch.from_numpy(batch.alive.copy()).to(self.lm.device)
        self.stats["decode_steps"] += 1
        return not batch.alive.any()

    def _finish(self, batch: _Batch, checker: StopChecker) -> list[Decoded]:
        """Apply the truncation rule to every row; one device-to-host copy of the statistics."""
        lps, ents = batch.logprobs.cpu().numpy(), batch.entropies.cpu().numpy()
        self.stats["tokens_generated"] += int(batch.length.sum())
        self.stats["rows_dropped"] += batch.dropped
        out = []
        for r in range(len(batch.alive)):
            tokens = batch.tokens[r, : batch.length[r]].tolist()
            m, text = checker.truncate(tokens)
            out.append(Decoded(tokens[:m], lps[r, :m].tolist(), ents[r, :m].tolist(), text))
        return out

    @torch.inference_mode()
    def _decode(self, state: PromptState, seeds: Sequence[int | None], steps: int, keep_hidden: bool) -> list[Decoded]:
        """Decode one batch of rows of one prefilled prompt: row r is greedy when ``seeds[r] is None``, else
        sampled with that seed. With ``keep_hidden``, greedy rows also get their last kept token's hidden
        state. Every row starts from a copy of the prompt's cache: no padding, no other prompt. Ended rows leave
        the batch (see the module docstring)."""
        b = len(seeds)
        self.stats["decode_batches"] += 1
        if b not in self.stats["batch_rows_used"]:
            self.stats["batch_rows_used"] = sorted([*self.stats["batch_rows_used"], b])
        tables = self.tables
        wanted = [r for r, s in enumerate(seeds) if s is None] if keep_hidden else []
        with contextlib.closing(HeadInput(self.lm.head if wanted else None)) as head:
            cache = self.prompts.expand(state, b, steps)
            batch = _Batch(state, seeds, self._uniforms(seeds, steps), wanted, cache, steps)
            logits = state.logits.expand(b, -1)
            batch.record(0, None if state.hidden is None else state.hidden.expand(b, -1))
            for step in range(steps):  # sets nxt, read after the loop only when a step ran
                nxt, lp, ent = self._next_tokens(logits, None if batch.u is None else batch.u[:, step], batch.sampled)
                batch.logprobs[batch.index, step], batch.entropies[batch.index, step] = lp, ent
                if self._advance(batch, batch.spread(nxt), step, tables) or step == steps - 1:
                    break
                nxt = batch.keep(nxt)
                logits = batch.step(self.lm, torch.where(batch.alive_dev[batch.index], nxt, self.lm.pad_id))
                batch.record(step + 1, head.take())
            result = self._finish(batch, tables[0])
            kept = {r: len(result[r].tokens) for r in wanted}
            if batch.hidden is not None and max(kept.values()) > batch.filled:  # a greedy row kept its last token
                batch.step(self.lm, nxt)
                batch.record(batch.filled + 1, head.take())
            for r, vec in batch.hidden_vectors(kept).items():
                result[r].hidden = vec
            return result
