"""Generation stage: sampled answers, the most-likely answer, token statistics, p(True) and A4C.

For every question the model produces ``n_samples`` sampled answers and one greedy (most-likely)
answer. For each answer token we keep

* its log-probability (nats) under the model's *untempered* next-token distribution
  ``softmax(logits)``, i.e. before temperature, top-k and top-p are applied (so the numbers describe
  the model, not the sampler, and are comparable across sampling settings), and
* the entropy (nats) of that same untempered distribution at that step.

For the greedy answer we also keep the model's final-layer hidden state at its last kept token (the input
of the output head, float16; the prompt's last token for an empty answer): the features of the
embedding-regression method ER.

Truncation rule: generation of a sequence stops at the end-of-sequence token (not kept) or once its
decoded text contains one of the stop strings. The kept tokens are then the longest prefix of the
generated tokens whose decoded text contains no stop string and ends before the first stop string;
the answer text is the decoded kept prefix with surrounding whitespace stripped, so the text, the
log-probabilities and the entropies always describe the same tokens (:func:`truncate_at_stop`).
Stop strings are looked for incrementally: a table over the vocabulary marks the tokens whose text
could complete a stop string (:class:`StopChecker`), and only a row whose new token is marked is decoded
and checked with the rule above, so no step re-decodes every row. The kept tokens always come from the
rule itself, applied once per answer at the end.

Sampling: one uniform number per row and step, drawn up front for the whole batch from the row's own CPU
``torch.Generator`` (seeded from ``(config.seed, record.id, k)`` for sample ``k``), picks the token by
inverse CDF of the sampling distribution (temperature, then top-k, then top-p) in one vectorised operation
on the model's device. The decoding loop stays on the device and synchronises with the host once per
step (to learn which rows ended).

Determinism: the global torch RNG is neither read nor changed. On a CPU in float32, sample ``k`` of a
question depends only on ``(seed, id, k)``, not on the batch size or the other questions (up to the
floating-point noise of batched matrix products, which moves a token only when a uniform falls within
about 1e-7 of a CDF boundary). On CUDA a run is repeatable for the same device, batch composition, dtype
and seed; bit-identical samples across different batch compositions cannot hold in bf16 on a GPU, because
batched kernels round differently for different shapes and bf16 keeps only 8 bits of mantissa, so
log-probabilities differ at the 1e-3 level and a sampled token can change.

Batch sizes: ``GenerationConfig.batch_size`` rows per decoding batch; ``None`` (the default) chooses 8 on a
CPU and, on CUDA, as many rows as the key-value cache of the longest prompt fits in the free device memory
(``torch.cuda.mem_get_info``). A batch that runs out of memory is split in half and retried, and later
batches stay at the smaller size; the sizes used are counted in ``Generator.stats``. Batching changes
results only through floating-point noise (see above).

Models are loaded by :mod:`shapley.pipeline.models`.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch
from tqdm.auto import tqdm

from shapley.pipeline.models import (
    free_device_memory,
    is_out_of_memory,
    kv_cache_bytes_per_token,
    load_model,
    model_fingerprint,
    release_device_memory,
)
from shapley.pipeline.records import Generation, QARecord

__all__ = [
    "GenerationConfig",
    "Generator",
    "StopChecker",
    "inverse_cdf_sample",
    "p_true_prompt",
    "a4c_prompt",
    "truncate_at_stop",
]

T = TypeVar("T")

#: rows per decoding batch on a CPU when ``GenerationConfig.batch_size`` is None
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


@dataclass
class GenerationConfig:
    """Settings of the generation stage.

    ``temperature`` 0 means greedy sampling; ``top_k`` 0 and ``top_p`` 1 switch those filters off.
    ``stop``: answers end at the first of these strings. ``batch_size``: rows (sequences) per decoding batch;
    ``None`` = automatic (8 on a CPU, from free memory on CUDA; see the module docstring).
    ``p_true`` / ``a4c``: also compute p(True) and the ask-for-confidence reply for the greedy answer.
    ``hidden_state``: keep the greedy answer's last-token hidden state (for ER).
    ``chat_template``: wrap prompts in the tokenizer's chat template (``None`` = when it has one). The
    default, ``False``, feeds the raw few-shot template string, as the paper's Appendix B describes.
    ``a4c_max_new_tokens``: length limit of the A4C reply. ``progress``: tqdm bar (``None`` = auto,
    shown on a terminal only). ``device`` / ``dtype``: used when a spec (not a model) is loaded.
    ``static_cache``: decode with a preallocated key-value cache (``None`` = on CUDA only, where it
    saves the copy that a growing cache makes at every step; falls back to the growing cache for models
    whose cache cannot be preallocated).
    """

    n_samples: int = 10
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 32
    seed: int = 0
    stop: tuple[str, ...] = ("\n",)
    batch_size: int | None = None
    p_true: bool = True
    a4c: bool = True
    device: str | None = None
    dtype: str | None = None
    chat_template: bool | None = False
    a4c_max_new_tokens: int = 10
    progress: bool | None = None
    hidden_state: bool = True
    static_cache: bool | None = None

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            raise ValueError(f"stop must be a tuple of strings such as ('\\n',), not the string {self.stop!r}")
        self.stop = tuple(self.stop)
        if not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError(f"stop strings must be non-empty strings, got {self.stop!r}")
        checks = [
            (isinstance(self.n_samples, int) and self.n_samples >= 0, "n_samples must be an integer >= 0"),
            (self.temperature >= 0 and np.isfinite(self.temperature), "temperature must be finite and >= 0"),
            (0 < self.top_p <= 1, "top_p must be in (0, 1]"),
            (isinstance(self.top_k, int) and self.top_k >= 0, "top_k must be an integer >= 0 (0 = off)"),
            (isinstance(self.max_new_tokens, int) and self.max_new_tokens >= 1, "max_new_tokens must be >= 1"),
            (
                self.batch_size is None or (isinstance(self.batch_size, int) and self.batch_size >= 1),
                "batch_size must be None (automatic) or an integer >= 1",
            ),
            (
                isinstance(self.a4c_max_new_tokens, int) and self.a4c_max_new_tokens >= 1,
                "a4c_max_new_tokens must be >= 1",
            ),
            (isinstance(self.seed, int), "seed must be an integer"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(f"{msg}; got {self!r}")


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


# --------------------------------------------------------------------------------------------------
# decoding state
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# the generator
# --------------------------------------------------------------------------------------------------


class Generator:
    """Generation stage over a causal LM.

    ``Generator(spec_or_model, config, tokenizer=None)``: a model spec (see :func:`resolve_model`) is
    loaded with :func:`load_model` on ``config.device`` / ``config.dtype``; a model object needs its
    ``tokenizer``. ``.generate(records)`` returns one :class:`~shapley.pipeline.records.Generation` per record.
    ``fingerprint`` identifies the weights (for provenance and caches). ``stats`` counts the work: the rows
    planned per decoding batch of samples (``batch_size``, chosen from free memory when automatic), decoding
    batches and their sizes in rows (``batch_rows_used``), decoding steps, tokens generated (end-of-sequence
    tokens not counted, tokens cut by a stop string counted), rows checked against the stop strings,
    batches split after running out of memory (``oom_splits``) and which cache was used.
    """

    def __init__(self, spec_or_model: Any, config: GenerationConfig | None = None, tokenizer: Any = None):
        self.config = config if config is not None else GenerationConfig()
        if not isinstance(self.config, GenerationConfig):
            raise ValueError(f"config must be a GenerationConfig, got {type(self.config).__name__}")
        if isinstance(spec_or_model, (str, os.PathLike)):
            self.spec = str(spec_or_model)
            model, tok, fp = load_model(self.spec, device=self.config.device, dtype=self.config.dtype)
            self.tokenizer = tokenizer if tokenizer is not None else tok
        else:
            if tokenizer is None:
                raise ValueError("a model object needs its tokenizer: Generator(model, config, tokenizer=...)")
            self.spec = getattr(getattr(spec_or_model, "config", None), "_name_or_path", "") or "<in-memory>"
            model, fp = spec_or_model, model_fingerprint(spec_or_model)
            self.tokenizer = tokenizer
        self.model = model.eval()
        self.fingerprint = fp
        self.device = next(self.model.parameters()).device
        params = inspect.signature(self.model.forward).parameters
        self._takes_positions = "position_ids" in params
        self._takes_logits_to_keep = "logits_to_keep" in params
        self._eos_ids = self._collect_eos_ids()
        pad = self.tokenizer.pad_token_id
        self._pad_id = int(pad if pad is not None else (sorted(self._eos_ids)[0] if self._eos_ids else 0))
        use_chat = self.config.chat_template
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if use_chat and not has_template:
            raise ValueError("chat_template=True but the tokenizer has no chat template")
        self.use_chat_template = has_template if use_chat is None else bool(use_chat)
        self._class_token_ids(_TRUE_FALSE)  # fail early when the tokenizer cannot tell A from B
        head = self.model.get_output_embeddings() if hasattr(self.model, "get_output_embeddings") else None
        self._head = head if isinstance(head, torch.nn.Module) else None
        self._tables: tuple[StopChecker, torch.Tensor, torch.Tensor] | None = None
        self._row_cap: int | None = None
        self._static = self.device.type == "cuda" if self.config.static_cache is None else self.config.static_cache
        self.stats: dict[str, Any] = {
            "batch_size": None,
            "decode_batches": 0,
            "batch_rows_used": [],
            "decode_steps": 0,
            "tokens_generated": 0,
            "stop_checks": 0,
            "oom_splits": 0,
            "cache": "static" if self._static else "dynamic",
        }

    # ---------------------------------------------------------------------------------------------
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

    def _class_token_ids(self, variants: Mapping[str, Sequence[str]]) -> dict[str, list[int]]:
        """First token id of each spelling variant per class, dropping ids shared between classes."""
        firsts: dict[str, set[int]] = {}
        for cls, forms in variants.items():
            ids = set()
            for form in forms:
                enc = self.tokenizer.encode(form, add_special_tokens=False)
                if enc:
                    ids.add(int(enc[0]))
            firsts[cls] = ids
        out: dict[str, list[int]] = {}
        for cls, ids in firsts.items():
            others = set().union(*(v for k, v in firsts.items() if k != cls))
            keep = sorted(ids - others)
            if not keep:
                raise ValueError(f"the tokenizer has no token that distinguishes answer {cls!r} from the others")
            out[cls] = keep
        return out

    def _encode(self, body: str, prefix: str = "") -> list[int]:
        """Token ids of a prompt; with the chat template, ``body`` is the user turn and ``prefix`` starts
        the assistant turn."""
        if self.use_chat_template:
            rendered = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": body}], add_generation_prompt=True, tokenize=False
            )
            return list(self.tokenizer.encode(rendered + prefix, add_special_tokens=False))
        text = body + ("\n" + prefix if prefix else "")
        return list(self.tokenizer.encode(text, add_special_tokens=True))

    def _decode_text(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def _vocab_size(self) -> int:
        weight = getattr(self._head, "weight", None)
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
                self._decode_text,
                vocab,
                batch_decode=None if batch is None else lambda ids: batch(ids, skip_special_tokens=True),
                known_tokens=len(self.tokenizer),
            )
            eos = torch.zeros(vocab, dtype=torch.bool)
            eos[[i for i in self._eos_ids if 0 <= i < vocab]] = True
            self._tables = (checker, eos.to(self.device), torch.from_numpy(checker.table).to(self.device))
        return self._tables

    # ---------------------------------------------------------------------------------------------
    # batch sizes
    def batch_rows(self, context_tokens: int | None = None) -> int:
        """Rows per decoding batch: ``config.batch_size``, else 8 on a CPU, else what the key-value cache of
        ``context_tokens`` tokens per row (default: 512 + max_new_tokens) fits in the free device memory;
        never more than a size that ran out of memory before."""
        if self.config.batch_size is not None:
            rows = self.config.batch_size
        elif self.device.type != "cuda":
            rows = CPU_BATCH_ROWS
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
            context = self._context_tokens([self._encode(r.prompt or _fallback_prompt(r)) for r in records], 0)
            context = None if context is None else context + self.config.max_new_tokens
        return max(1, self.batch_rows(context) // (1 + self.config.n_samples))

    def _in_batches(self, items: Sequence[T], rows: int, run: Callable[[list[T]], list[Any]]) -> list[Any]:
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

    # ---------------------------------------------------------------------------------------------
    # forward passes
    def _forward(self, **kw: Any) -> Any:
        if not self._takes_positions:
            kw.pop("position_ids", None)
        if self._takes_logits_to_keep:
            kw["logits_to_keep"] = 1
        return self.model(**kw)

    def _prefill(
        self, prompts: Sequence[list[int]], head: _HeadInput | None = None, extra: int = 0
    ) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Run the prompts; returns (last logits (B,V), cache, attention mask (B,L), last positions (B,1),
        last hidden states (B,d) or None).

        Each distinct prompt is run once (left-padded with the others); rows that repeat a prompt, such as
        the n samples of one question, get copies of its cache, so the prompt's cost is paid once. With
        ``extra`` > 0 and the static cache on, the cache is preallocated for ``extra`` more tokens.
        """
        b = len(prompts)
        uniq: dict[tuple[int, ...], int] = {}
        rows = [uniq.setdefault(tuple(p), len(uniq)) for p in prompts]
        distinct = [list(p) for p in uniq]
        length = max(len(p) for p in distinct)
        ids = torch.full((len(distinct), length), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(distinct), length), dtype=torch.long)
        for r, p in enumerate(distinct):  # left padding
            if p:
                ids[r, length - len(p) :] = torch.tensor(p)
                mask[r, length - len(p) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        kw: dict[str, Any] = {"input_ids": ids, "use_cache": True}
        if len(distinct) > 1 or not bool(mask.all()):
            kw.update(attention_mask=mask, position_ids=positions)
        out = self._forward(**kw)
        logits, cache = out.logits[:, -1, :], out.past_key_values
        hidden = None if head is None else head.take()
        index = torch.tensor(rows, device=self.device)
        static = self._static_copy(cache, index, length + extra) if self._static and extra > 0 else None
        if static is not None:
            cache = static
        elif len(distinct) < b:
            if not hasattr(cache, "batch_select_indices"):
                raise RuntimeError("this model's cache cannot be expanded over repeated prompts")
            cache.batch_select_indices(index)
        if len(distinct) < b:
            logits, mask, positions = logits[index], mask[index], positions[index]
            hidden = None if hidden is None else hidden[index]
        return logits, cache, mask, positions[:, -1:], hidden

    def _static_copy(self, cache: Any, index: torch.Tensor, max_len: int) -> Any | None:
        """A preallocated (static) cache of ``max_len`` positions holding the prompt cache's rows ``index``;
        None (and the growing cache is kept, for good) when this model's cache layers are not plain ones."""
        try:
            from transformers import StaticCache

            static = StaticCache(config=self.model.config, max_cache_len=max_len)
            layers, sources = getattr(static, "layers", []), getattr(cache, "layers", [])
            if len(layers) != len(sources) or not layers:
                raise TypeError("cache layers differ")
            for target, source in zip(layers, sources, strict=True):
                if type(target).__name__ != "StaticLayer" or not hasattr(source, "keys"):
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

    def _step(
        self, feed: torch.Tensor, cache: Any, mask: torch.Tensor, pos: torch.Tensor
    ) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
        """Feed one token per row; returns (logits (B,V), cache, mask, positions)."""
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
        pos = pos + 1
        out = self._forward(
            input_ids=feed[:, None], attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True
        )
        return out.logits[:, -1, :], out.past_key_values, mask, pos

    # ---------------------------------------------------------------------------------------------
    # decoding
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

    @torch.inference_mode()
    def _decode(
        self, prompts: Sequence[list[int]], seeds: Sequence[int | None], max_new_tokens: int, keep_hidden: bool = False
    ) -> list[_Decoded]:
        """Decode one batch: row r is greedy when ``seeds[r] is None``, else sampled with that seed. With
        ``keep_hidden``, greedy rows also get their last kept token's hidden state."""
        b, steps = len(prompts), max_new_tokens
        self.stats["decode_batches"] += 1
        if b not in self.stats["batch_rows_used"]:
            self.stats["batch_rows_used"] = sorted([*self.stats["batch_rows_used"], b])
        tables = self._lookup_tables()
        u = self._uniforms(seeds, steps)
        sampled = torch.tensor([s is not None for s in seeds], device=self.device)
        wanted = [r for r, s in enumerate(seeds) if s is None] if keep_hidden and self._head is not None else []
        head = _HeadInput(self._head if wanted else None)
        try:
            logits, cache, mask, pos, h = self._prefill(prompts, head if wanted else None, extra=steps)
            hid = _HiddenTrack(wanted, steps, self.device)
            hid.record(0, h)
            track = _Track.start(b, steps, self.device)
            nxt = torch.zeros(b, dtype=torch.long, device=self.device)
            for step in range(steps):
                nxt, lp, ent = self._next_tokens(logits, None if u is None else u[:, step], sampled)
                track.logprobs[:, step], track.entropies[:, step] = lp, ent
                if self._advance(track, nxt, step, tables) or step == steps - 1:
                    break
                feed = torch.where(track.alive_dev, nxt, self._pad_id)
                logits, cache, mask, pos = self._step(feed, cache, mask, pos)
                hid.record(step + 1, head.take())
            result = self._finish(track, tables[0])
            kept = {r: len(result[r].tokens) for r in wanted}
            if hid.buf is not None and max(kept.values()) > hid.filled:  # a greedy row kept its last token: feed it
                self._step(nxt, cache, mask, pos)
                hid.record(hid.filled + 1, head.take())
            for r, vec in hid.vectors(kept).items():
                result[r].hidden = vec
            return result
        finally:
            head.close()

    def _finish(self, track: _Track, checker: StopChecker) -> list[_Decoded]:
        """Apply the truncation rule to every row; one device-to-host copy of the statistics."""
        lps, ents = track.logprobs.cpu().numpy(), track.entropies.cpu().numpy()
        self.stats["tokens_generated"] += int(track.length.sum())
        out = []
        for r in range(len(track.alive)):
            tokens = track.tokens[r, : track.length[r]].tolist()
            m, text = truncate_at_stop(tokens, self._decode_text, checker.stop)
            out.append(_Decoded(tokens[:m], lps[r, :m].tolist(), ents[r, :m].tolist(), text))
        return out

    def _decode_rows(self, rows: Sequence[tuple[list[int], int | None]], new_tokens: int, keep_hidden: bool) -> list:
        """Decode (prompt, seed) rows in batches of :meth:`batch_rows`, splitting a batch that runs out of memory."""
        size = self.batch_rows(self._context_tokens([p for p, _ in rows], new_tokens))

        def run(chunk: list[tuple[list[int], int | None]]) -> list[_Decoded]:
            return self._decode([p for p, _ in chunk], [s for _, s in chunk], new_tokens, keep_hidden)

        return self._in_batches(rows, size, run)

    @torch.inference_mode()
    def class_probabilities(
        self, prompts: Sequence[tuple[str, str]], classes: Mapping[str, Sequence[str]]
    ) -> np.ndarray:
        """Next-token probabilities of answer classes, normalised over the classes; shape (N, C).

        ``prompts``: (body, answer prefix) pairs, encoded as in :meth:`generate` (chat template when
        enabled). ``classes``: class name -> spelling variants (e.g. ``{"A": (" A", "A")}``); a class's
        probability is the summed probability of the first tokens of its variants (tokens shared by
        several classes are dropped). One forward pass per :meth:`batch_rows` prompts."""
        ids = self._class_token_ids(classes)
        encoded = [self._encode(body, prefix) for body, prefix in prompts]
        if not encoded:
            return np.zeros((0, len(ids)), dtype=np.float64)

        def run(chunk: list[list[int]]) -> list[np.ndarray]:
            logits = self._prefill(chunk)[0]
            logp = torch.log_softmax(logits.float(), dim=-1)
            per_class = torch.stack([torch.logsumexp(logp[:, v], dim=-1) for v in ids.values()], dim=-1)
            return list(torch.softmax(per_class, dim=-1).cpu().double().numpy())

        rows = self._in_batches(encoded, self.batch_rows(self._context_tokens(encoded, 1)), run)
        return np.stack(rows).astype(np.float64)

    # ---------------------------------------------------------------------------------------------
    def generate(self, records: Sequence[QARecord]) -> list[Generation]:
        """Samples, greedy answer, token statistics, p(True), A4C and (optionally) the greedy answer's
        hidden state for each record (same order)."""
        if isinstance(records, QARecord) or not isinstance(records, Sequence):
            raise ValueError("records must be a sequence of QARecord")
        for i, rec in enumerate(records):
            if not isinstance(rec, QARecord):
                raise ValueError(f"records[{i}] is a {type(rec).__name__}, expected QARecord")
        cfg = self.config
        results: list[Generation] = []
        disable = None if cfg.progress is None else not cfg.progress
        prompts = [self._encode(r.prompt or _fallback_prompt(r)) for r in records]
        with tqdm(total=len(records), desc="generate", unit="q", disable=disable) as bar:
            rows = self.batch_rows(self._context_tokens(prompts, cfg.max_new_tokens))
            per_group = max(1, rows // (1 + cfg.n_samples))
            for start in range(0, len(records), per_group):
                group = records[start : start + per_group]
                gens = self._generate_group(group, prompts[start : start + per_group])
                self._self_evaluate(group, gens)
                results.extend(gens)
                bar.update(len(group))
        return results

    def _self_evaluate(self, group: Sequence[QARecord], gens: list[Generation]) -> None:
        """p(True) and the A4C reply of each greedy answer (in place)."""
        cfg = self.config
        if cfg.p_true:
            probs = self.class_probabilities(
                [p_true_prompt(r.question, g.samples, g.answer) for r, g in zip(group, gens, strict=True)],
                _TRUE_FALSE,
            )
            for g, v in zip(gens, probs[:, 0], strict=True):
                g.p_true = float(v)
        if cfg.a4c:
            prompts = [self._encode(*a4c_prompt(r.question, g.answer)) for r, g in zip(group, gens, strict=True)]
            replies = self._decode_rows([(p, None) for p in prompts], cfg.a4c_max_new_tokens, keep_hidden=False)
            for g, rep in zip(gens, replies, strict=True):
                g.a4c_text = rep.text

    def _generate_group(self, group: Sequence[QARecord], prompts: Sequence[list[int]]) -> list[Generation]:
        """Greedy answer plus ``n_samples`` samples for each question of ``group``, decoded together.

        Rows of several questions share one decoding batch (:meth:`batch_rows` rows at most): each step
        reads all weights once, whatever the number of rows.
        """
        cfg = self.config
        rows: list[tuple[list[int], int | None]] = []
        for record, prompt in zip(group, prompts, strict=True):
            seeds = [None] + [_derive_seed(cfg.seed, record.id, k) for k in range(cfg.n_samples)]
            rows.extend((prompt, seed) for seed in seeds)
        self.stats["batch_size"] = self.batch_rows(self._context_tokens(prompts, cfg.max_new_tokens))
        decoded = self._decode_rows(rows, cfg.max_new_tokens, keep_hidden=cfg.hidden_state)
        per_q = 1 + cfg.n_samples
        out = []
        for q, record in enumerate(group):
            greedy, samples = decoded[q * per_q], decoded[q * per_q + 1 : (q + 1) * per_q]
            out.append(
                Generation(
                    id=record.id,
                    samples=[d.text for d in samples],
                    answer=greedy.text,
                    sample_token_logprobs=[d.logprobs for d in samples],
                    sample_token_entropies=[d.entropies for d in samples],
                    answer_token_logprobs=greedy.logprobs,
                    answer_token_entropies=greedy.entropies,
                    hidden=greedy.hidden,
                )
            )
        return out
