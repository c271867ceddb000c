"""Decoding of the generation stage: rows of one prefilled prompt, in batches, one token per row and step.

Sampling: one uniform number per row and step, drawn up front from the row's own CPU ``torch.Generator``, picks
the token by inverse CDF of the sampling distribution (temperature, then top-k, then top-p) in one vectorised
operation on the model's device. The loop stays on the device and synchronises with the host once per step
(to learn which rows ended). Stop strings are looked for incrementally (:class:`StopChecker`).

Ended rows leave the forward passes: with a growing (dynamic) cache, a step after which rows ended keeps only the
rows still generating (and the greedy rows whose hidden state is wanted), so later steps cost what the live rows
cost. Which rows stay is a function of the tokens alone, so the numbers depend only on the inputs and the recorded
settings. A preallocated (static) cache keeps its batch whole.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

from shapley.pipeline.generate.config import (
    ASSUMED_PROMPT_TOKENS,
    CPU_BATCH_ROWS,
    MAX_AUTO_ROWS,
    MEMORY_SHARE,
    StopChecker,
    _fallback_prompt,
    inverse_cdf_sample,
    truncate_at_stop,
)
from shapley.pipeline.generate.models import (
    CausalLM,
    free_device_memory,
    is_out_of_memory,
    kv_cache_bytes_per_token,
    release_device_memory,
)
from shapley.pipeline.generate.prompts import PromptBuilder, PromptState
from shapley.pipeline.rundir.records import QARecord

T = TypeVar("T")


@dataclass
class _Decoded:
    tokens: list[int]
    logprobs: list[float]
    entropies: list[float]
    text: str
    hidden: np.ndarray | None = None


@dataclass
class _Track:
    """Bookkeeping of one decoding batch: host copies of tokens and row state, device buffers of statistics."""

    alive: np.ndarray  # (B,) bool: the row is still generating
    length: np.ndarray  # (B,) int: tokens generated so far (an end-of-sequence token is not counted)
    tokens: np.ndarray  # (B, T) int64: chosen tokens
    logprobs: torch.Tensor  # (B, T) float32 on the device
    entropies: torch.Tensor  # (B, T) float32 on the device
    alive_dev: torch.Tensor  # (B,) bool on the device

    @classmethod
    def start(cls, rows: int, steps: int, device: torch.device) -> _Track:
        return cls(
            alive=np.ones(rows, dtype=bool),
            length=np.zeros(rows, dtype=np.int64),
            tokens=np.zeros((rows, steps), dtype=np.int64),
            logprobs=torch.zeros((rows, steps), dtype=torch.float32, device=device),
            entropies=torch.zeros((rows, steps), dtype=torch.float32, device=device),
            alive_dev=torch.ones(rows, dtype=torch.bool, device=device),
        )


class _HeadInput:
    """Forward pre-hook on the output head: ``last`` is the head's input of the latest forward pass
    (the final-layer hidden states, (B, q, d))."""

    def __init__(self, head: torch.nn.Module | None):
        self.last: torch.Tensor | None = None
        self._handle = None if head is None else head.register_forward_pre_hook(self._grab)

    def _grab(self, _module: Any, args: tuple[Any, ...]) -> None:
        if args and isinstance(args[0], torch.Tensor):
            self.last = args[0]

    def take(self) -> torch.Tensor | None:
        """Hidden state of the last position of each row, (B, d); None when the hook saw nothing."""
        h, self.last = self.last, None
        return None if h is None else h[:, -1, :]

    def close(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


class _HiddenTrack:
    """Hidden states of selected rows after every forward pass: ``buf[:, i]`` follows the prefill (i = 0)
    or the feeding of generated token i - 1."""

    def __init__(self, rows: Sequence[int], steps: int, device: torch.device):
        self.rows = list(rows)
        self.index = torch.tensor(self.rows, dtype=torch.long, device=device)
        self.steps = steps
        self.buf: torch.Tensor | None = None
        self.filled = -1

    def follow(self, batch_rows: np.ndarray) -> None:
        """The batch now holds the rows ``batch_rows`` (in order): find the tracked rows among them."""
        where = {int(r): i for i, r in enumerate(batch_rows)}
        self.index = torch.tensor([where[r] for r in self.rows], dtype=torch.long, device=self.index.device)

    def record(self, position: int, h: torch.Tensor | None) -> None:
        if not self.rows or h is None:
            return
        h = h.index_select(0, self.index)
        if self.buf is None:
            self.buf = torch.empty((len(self.rows), self.steps + 1, h.shape[-1]), dtype=h.dtype, device=h.device)
        self.buf[:, position] = h
        self.filled = position

    def vectors(self, kept: Mapping[int, int]) -> dict[int, np.ndarray]:
        """Row -> float16 vector at its ``kept[row]`` position (rows whose position was not computed are left out)."""
        if self.buf is None:
            return {}
        at = torch.tensor([min(kept[r], self.filled) for r in self.rows], device=self.buf.device)
        chosen = self.buf[torch.arange(len(self.rows), device=self.buf.device), at]
        host = chosen.float().clamp(-65504.0, 65504.0).cpu().numpy().astype(np.float16)
        return {r: host[i] for i, r in enumerate(self.rows) if kept[r] <= self.filled}


class _LiveRows:
    """The rows of a decoding batch that still take part in the forward passes, and their per-row state.

    ``rows`` (host) and ``index`` (device) are the batch rows, in order, that the cache, ``mask``, ``pos``, ``u``
    and ``sampled`` hold. :meth:`keep` drops the rows that ended (greedy rows whose hidden state is wanted stay
    until the end) when the cache is a growing one."""

    def __init__(
        self, owner: Any, state: PromptState, seeds: Sequence[int | None], steps: int, wanted: Sequence[int], cache: Any
    ):
        b, device = len(seeds), owner.device
        self.owner = owner
        self.rows = np.arange(b)
        self.index = torch.arange(b, device=device)
        self.stay = np.isin(np.arange(b), np.asarray(wanted, dtype=np.int64))
        self.cache = cache
        self.compact = type(cache).__name__ != "StaticCache" and hasattr(cache, "batch_select_indices")
        self.mask = torch.ones((b, state.length), dtype=torch.long, device=device)
        self.pos = torch.full((b, 1), state.length - 1, dtype=torch.long, device=device)
        self.u = owner._uniforms(seeds, steps)
        self.sampled = torch.tensor([s is not None for s in seeds], device=device)

    def spread(self, nxt: torch.Tensor, b: int) -> torch.Tensor:
        """The live rows' tokens (len(rows),) placed in a (b,) vector (0 for rows that left)."""
        if len(self.rows) == b:
            return nxt
        return torch.zeros(b, dtype=nxt.dtype, device=nxt.device).index_copy(0, self.index, nxt)

    def keep(self, track: _Track, nxt: torch.Tensor, hid: _HiddenTrack) -> torch.Tensor:
        """Drop the rows that ended at this step; returns ``nxt`` of the rows that stay."""
        at = np.flatnonzero(track.alive[self.rows] | self.stay[self.rows])
        if not self.compact or len(at) == len(self.rows):
            return nxt
        sel = torch.from_numpy(at).to(self.index.device)
        self.cache.batch_select_indices(sel)
        self.owner.stats["rows_dropped"] += len(self.rows) - len(at)
        self.rows, self.index = self.rows[at], self.index.index_select(0, sel)
        self.mask, self.pos, self.sampled = self.mask[sel], self.pos[sel], self.sampled[sel]
        self.u = None if self.u is None else self.u[sel]
        hid.follow(self.rows)
        return nxt[sel]


class Decoder:
    """Batch sizes and the decoding loop (the decoding part of :class:`~shapley.pipeline.generate.generator.Generator`).

    State: the end-of-sequence ids and the padding id, the output head (for hidden states), the stop-string
    lookup tables (built on first use) and the row cap left by an out-of-memory split. Prompts are encoded,
    prefilled and copied by its :class:`~shapley.pipeline.generate.prompts.PromptBuilder`; counts its work in
    ``stats`` (the generator's counters)."""

    def __init__(self, lm: CausalLM, config: Any, stats: dict[str, Any], prompts: PromptBuilder) -> None:
        self.lm = lm
        self.model = lm.model
        self.tokenizer = lm.tokenizer
        self.device = lm.device
        self.config = config
        self.stats = stats
        self.prompts = prompts
        self.eos_ids = self._collect_eos_ids()
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (sorted(self.eos_ids)[0] if self.eos_ids else 0))
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        self.head: torch.nn.Module | None = head if isinstance(head, torch.nn.Module) else None
        self._tables: tuple[StopChecker, torch.Tensor, torch.Tensor] | None = None
        self._row_cap: int | None = None
        self._fixed_rows: int | None = None

    def _collect_eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for src in (
            self.tokenizer.eos_token_id,
            getattr(self.model.generation_config, "eos_token_id", None)
            if getattr(self.model, "generation_config", None) is not None
            else None,
        ):
            if src is None:
                continue
            ids.update(int(i) for i in (src if isinstance(src, (list, tuple)) else [src]))
        return ids

    def decode_prompt(
        self, prompt: list[int], seeds: Sequence[int | None], new_tokens: int, keep_hidden: bool = False, split: int = 0
    ) -> list[Any]:
        """Rows ``seeds`` (None: greedy) of one prompt (token ids): one prefill (of the tokens after the cached
        shared prefix of length ``split``), then batches of :meth:`batch_rows` rows from copies of its cache."""
        keep_hidden = keep_hidden and self.head is not None
        head = _HeadInput(self.head if keep_hidden else None)
        try:
            state = self.prompts.prefill(prompt, split, head if keep_hidden else None)
        finally:
            head.close()
        self.stats["batch_size"] = self.batch_rows(state.length + new_tokens)
        return self.decode_rows(state, seeds, new_tokens, keep_hidden=keep_hidden)

    def _vocab_size(self) -> int:
        weight = getattr(self.head, "weight", None)
        if isinstance(weight, torch.Tensor) and weight.dim() == 2:
            return int(weight.shape[0])
        return int(getattr(self.model.config, "vocab_size", None) or len(self.tokenizer))

    def _lookup_tables(self) -> tuple[StopChecker, torch.Tensor, torch.Tensor]:
        """(stop checker, end-of-sequence table, may-stop table), the tables (V,) bool on the device."""
        if self._tables is None:
            vocab = self._vocab_size()
            batch = getattr(self.tokenizer, "batch_decode", None)
            checker = StopChecker(
                self.config.stop,
                self.prompts.decode_text,
                vocab,
                batch_decode=None if batch is None else lambda ids: batch(ids, skip_special_tokens=True),
                known_tokens=len(self.tokenizer),
            )
            eos = torch.zeros(vocab, dtype=torch.bool)
            eos[[i for i in self.eos_ids if 0 <= i < vocab]] = True
            self._tables = (checker, eos.to(self.device), torch.from_numpy(checker.table).to(self.device))
        return self._tables

    def fix_rows(self) -> int:
        """Fix the rows per decoding batch at what :meth:`batch_rows` chooses now, for every later batch (a new run
        records it as ``generation.rows_per_batch``, so that a resume and every shard decode alike); returns it."""
        self._fixed_rows = self.batch_rows()
        return self._fixed_rows

    def batch_rows(self, context_tokens: int | None = None) -> int:
        """Rows per decoding batch: ``config.rows_per_batch`` (a run's recorded size) or the size fixed by
        :meth:`fix_rows`, else ``config.batch_size``, else on a CPU 8 or a question's ``1 + n_samples`` rows if
        more, else what the key-value cache of ``context_tokens`` tokens per row (default: 512 + max_new_tokens)
        fits in the free device memory; never more than a size that ran out of memory before."""
        fixed = self.config.rows_per_batch or self._fixed_rows
        if fixed is not None:
            rows = fixed
        elif self.config.batch_size is not None:
            rows = self.config.batch_size
        elif self.device.type != "cuda":  # a question's rows in one batch: its cache is copied once
            rows = max(CPU_BATCH_ROWS, 1 + self.config.n_samples)
        else:
            context = context_tokens or ASSUMED_PROMPT_TOKENS + self.config.max_new_tokens
            per_row = kv_cache_bytes_per_token(self.model) * context + 48 * self._vocab_size()
            free = free_device_memory(self.device) or 0
            rows = int(min(MAX_AUTO_ROWS, max(1, MEMORY_SHARE * free // per_row)))
        return rows if self._row_cap is None else max(1, min(rows, self._row_cap))

    def _context_tokens(self, prompts: Sequence[Sequence[int]], new_tokens: int) -> int | None:
        return (max(len(p) for p in prompts) + new_tokens) if prompts else None

    def questions_per_batch(self, records: Sequence[QARecord] | None = None) -> int:
        """Questions whose ``1 + n_samples`` rows fit one decoding batch (at least 1). With automatic sizes on
        CUDA, the longest prompt of ``records`` (if given) sets the memory estimate."""
        context = None
        if records and self.config.batch_size is None and self.device.type == "cuda":
            context = self._context_tokens([self.prompts.encode(r.prompt or _fallback_prompt(r)) for r in records], 0)
            context = None if context is None else context + self.config.max_new_tokens
        return max(1, self.batch_rows(context) // (1 + self.config.n_samples))

    def in_batches(self, items: Sequence[T], rows: int, run: Callable[[list[T]], list[Any]]) -> list[Any]:
        """``run`` over consecutive batches of ``rows`` items (fewer after an out-of-memory split)."""
        out: list[Any] = []
        start = 0
        while start < len(items):
            size = rows if self._row_cap is None else max(1, min(rows, self._row_cap))
            out.extend(self._split_on_oom(list(items[start : start + size]), run))
            start += size
        return out

    def _split_on_oom(self, items: list[T], run: Callable[[list[T]], list[Any]]) -> list[Any]:
        """``run(items)``; a batch that runs out of memory is split in half and retried (down to one item),
        and later batches stay at most that size."""
        try:
            return run(items)
        except Exception as exc:  # noqa: BLE001 - only out-of-memory errors are handled, others re-raised
            if not is_out_of_memory(exc) or len(items) <= 1:
                raise
        release_device_memory(self.device)  # outside the except block, so the failed batch's tensors are gone
        half = (len(items) + 1) // 2
        self._row_cap = half if self._row_cap is None else min(self._row_cap, half)
        self.stats["oom_splits"] += 1
        warnings.warn(
            f"generation ran out of device memory at {len(items)} rows; retrying as two batches of at most {half}",
            RuntimeWarning,
            stacklevel=2,
        )
        return self._split_on_oom(items[:half], run) + self._split_on_oom(items[half:], run)

    def _step(
        self, feed: torch.Tensor, cache: Any, mask: torch.Tensor, pos: torch.Tensor
    ) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
        """Feed one token per row; returns (logits (B,V), cache, mask, positions)."""
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
        pos = pos + 1
        out = self.lm.forward(
            input_ids=feed[:, None], attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True
        )
        return out.logits[:, -1, :], out.past_key_values, mask, pos

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
        return u.to(self.device)

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

    def _advance(self, track: _Track, nxt: torch.Tensor, step: int, tables: tuple[Any, ...]) -> bool:
        """Record the step's tokens on the host (the step's one synchronisation), end rows at an
        end-of-sequence token or a stop string; True when every row has ended."""
        checker, eos_table, stop_table = tables
        packed = torch.stack([nxt, eos_table[nxt].long(), stop_table[nxt].long()]).cpu().numpy()
        track.tokens[:, step] = packed[0]
        was = track.alive.copy()
        eos = was & packed[1].astype(bool)
        kept = was & ~eos
        track.length[kept] = step + 1
        track.alive[eos] = False
        for r in np.flatnonzero(kept & packed[2].astype(bool)):
            self.stats["stop_checks"] += 1
            if checker.hit(track.tokens[r, : step + 1].tolist()):
                track.alive[r] = False
        if not np.array_equal(was, track.alive):
            track.alive_dev = torch.from_numpy(track.alive.copy()).to(self.device)
        self.stats["decode_steps"] += 1
        return not track.alive.any()

    def _finish(self, track: _Track, checker: StopChecker) -> list[_Decoded]:
        """Apply the truncation rule to every row; one device-to-host copy of the statistics."""
        lps, ents = track.logprobs.cpu().numpy(), track.entropies.cpu().numpy()
        self.stats["tokens_generated"] += int(track.length.sum())
        out = []
        for r in range(len(track.alive)):
            tokens = track.tokens[r, : track.length[r]].tolist()
            m, text = truncate_at_stop(tokens, self.prompts.decode_text, checker.stop)
            out.append(_Decoded(tokens[:m], lps[r, :m].tolist(), ents[r, :m].tolist(), text))
        return out

    @torch.inference_mode()
    def _decode(
        self, state: PromptState, seeds: Sequence[int | None], max_new_tokens: int, keep_hidden: bool = False
    ) -> list[_Decoded]:
        """Decode one batch of rows of one prefilled prompt: row r is greedy when ``seeds[r] is None``, else
        sampled with that seed. With ``keep_hidden``, greedy rows also get their last kept token's hidden
        state. Every row starts from a copy of the prompt's cache: no padding, no other prompt. Ended rows leave
        the batch (see the module docstring)."""
        b, steps = len(seeds), max_new_tokens
        self.stats["decode_batches"] += 1
        if b not in self.stats["batch_rows_used"]:
            self.stats["batch_rows_used"] = sorted([*self.stats["batch_rows_used"], b])
        tables = self._lookup_tables()
        wanted = [r for r, s in enumerate(seeds) if s is None] if keep_hidden and self.head is not None else []
        head = _HeadInput(self.head if wanted else None)
        try:
            cache = self.prompts.expand(state, b, steps)
            live = _LiveRows(self, state, seeds, steps, wanted, cache)
            logits = state.logits.expand(b, -1)
            hid = _HiddenTrack(wanted, steps, self.device)
            hid.record(0, None if state.hidden is None or not wanted else state.hidden.expand(b, -1))
            track = _Track.start(b, steps, self.device)
            nxt = torch.zeros(b, dtype=torch.long, device=self.device)
            for step in range(steps):
                nxt, lp, ent = self._next_tokens(logits, None if live.u is None else live.u[:, step], live.sampled)
                track.logprobs[live.index, step], track.entropies[live.index, step] = lp, ent
                if self._advance(track, live.spread(nxt, b), step, tables) or step == steps - 1:
                    break
                nxt = live.keep(track, nxt, hid)
                feed = torch.where(track.alive_dev[live.index], nxt, self.pad_id)
                logits, live.cache, live.mask, live.pos = self._step(feed, live.cache, live.mask, live.pos)
                hid.record(step + 1, head.take())
            result = self._finish(track, tables[0])
            kept = {r: len(result[r].tokens) for r in wanted}
            if hid.buf is not None and max(kept.values()) > hid.filled:  # a greedy row kept its last token: feed it
                self._step(nxt, live.cache, live.mask, live.pos)
                hid.record(hid.filled + 1, head.take())
            for r, vec in hid.vectors(kept).items():
                result[r].hidden = vec
            return result
        finally:
            head.close()

    def decode_rows(
        self, state: PromptState, seeds: Sequence[int | None], new_tokens: int, keep_hidden: bool
    ) -> list[_Decoded]:
        """Decode the rows ``seeds`` of one prefilled prompt in batches of :meth:`batch_rows` rows (a batch
        that runs out of memory is split); the prompt was prefilled once, whatever the batch size."""
        size = self.batch_rows(state.length + new_tokens)

        def run(chunk: list[int | None]) -> list[_Decoded]:
            return self._decode(state, chunk, new_tokens, keep_hidden)

        return self.in_batches(list(seeds), size, run)
