"""Generation stage: sampled answers, the most-likely answer, token statistics, p(True) and A4C.

For every question the model produces ``n_samples`` sampled answers and one greedy (most-likely)
answer. For each answer token we keep

* its log-probability (nats) under the model's *untempered* next-token distribution
  ``softmax(logits)``, i.e. before temperature, top-k and top-p are applied (so the numbers describe
  the model, not the sampler, and are comparable across sampling settings), and
* the entropy (nats) of that same untempered distribution at that step.

Truncation rule: generation of a sequence stops at the end-of-sequence token (not kept) or once its
decoded text contains one of the stop strings. The kept tokens are then the longest prefix of the
generated tokens whose decoded text contains no stop string and ends before the first stop string;
the answer text is the decoded kept prefix with surrounding whitespace stripped, so the text, the
log-probabilities and the entropies always describe the same tokens.

Determinism: sampled answer ``k`` of a question is drawn with its own CPU ``torch.Generator`` whose
seed is derived from ``(config.seed, record.id, k)``. The global torch RNG is neither read nor
changed, and the samples do not depend on the batch size or on the other questions (up to the
floating-point noise of batched matrix products).

Models are loaded by :mod:`shapley.pipeline.models`.
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from shapley.pipeline.models import load_model, model_fingerprint
from shapley.pipeline.records import Generation, QARecord

__all__ = [
    "GenerationConfig",
    "Generator",
    "p_true_prompt",
    "a4c_prompt",
]

# --------------------------------------------------------------------------------------------------
# configuration and prompts
# --------------------------------------------------------------------------------------------------


@dataclass
class GenerationConfig:
    """Settings of the generation stage.

    ``temperature`` 0 means greedy sampling; ``top_k`` 0 and ``top_p`` 1 switch those filters off.
    ``stop``: answers end at the first of these strings. ``batch_size``: sequences per forward pass.
    ``p_true`` / ``a4c``: also compute p(True) and the ask-for-confidence reply for the greedy answer.
    ``chat_template``: wrap prompts in the tokenizer's chat template (``None`` = when it has one). The
    default, ``False``, feeds the raw few-shot template string, as the paper's Appendix B describes.
    ``a4c_max_new_tokens``: length limit of the A4C reply. ``progress``: tqdm bar (``None`` = auto,
    shown on a terminal only). ``device`` / ``dtype``: used when a spec (not a model) is loaded.
    """

    n_samples: int = 10
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 32
    seed: int = 0
    stop: tuple[str, ...] = ("\n",)
    batch_size: int = 8
    p_true: bool = True
    a4c: bool = True
    device: str | None = None
    dtype: str | None = None
    chat_template: bool | None = False
    a4c_max_new_tokens: int = 10
    progress: bool | None = None

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
            (isinstance(self.batch_size, int) and self.batch_size >= 1, "batch_size must be an integer >= 1"),
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


_TRUE_FALSE: dict[str, tuple[str, ...]] = {"A": (" A", "A"), "B": (" B", "B")}


def _derive_seed(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


# --------------------------------------------------------------------------------------------------
# the generator
# --------------------------------------------------------------------------------------------------


@dataclass
class _Decoded:
    tokens: list[int]
    logprobs: list[float]
    entropies: list[float]
    text: str


class Generator:
    """Generation stage over a causal LM.

    ``Generator(spec_or_model, config, tokenizer=None)``: a model spec (see :func:`resolve_model`) is
    loaded with :func:`load_model` on ``config.device`` / ``config.dtype``; a model object needs its
    ``tokenizer``. ``.generate(records)`` returns one :class:`~shapley.pipeline.records.Generation` per record.
    ``fingerprint`` identifies the weights (for provenance and caches).
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

    # ---------------------------------------------------------------------------------------------
    def _forward(self, **kw: Any) -> Any:
        if not self._takes_positions:
            kw.pop("position_ids", None)
        if self._takes_logits_to_keep:
            kw["logits_to_keep"] = 1
        return self.model(**kw)

    def _prefill(self, prompts: Sequence[list[int]]) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
        """Run the prompts; returns (last logits (B,V), cache, attention mask (B,L), last positions (B,1)).

        Each distinct prompt is run once (left-padded with the others); rows that repeat a prompt, such as
        the n samples of one question, get copies of its cache, so the prompt's cost is paid once.
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
        if len(distinct) < b:
            index = torch.tensor(rows, device=self.device)
            if not hasattr(cache, "batch_select_indices"):
                raise RuntimeError("this model's cache cannot be expanded over repeated prompts")
            cache.batch_select_indices(index)
            logits, mask, positions = logits[index], mask[index], positions[index]
        return logits, cache, mask, positions[:, -1:]

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

    @torch.inference_mode()
    def _decode(self, prompts: Sequence[list[int]], seeds: Sequence[int | None], max_new_tokens: int) -> list[_Decoded]:
        """Decode one batch: row r is greedy when ``seeds[r] is None``, else sampled with that seed."""
        b = len(prompts)
        gens = [None if s is None else torch.Generator().manual_seed(int(s)) for s in seeds]
        greedy_only = all(g is None for g in gens) or self.config.temperature == 0
        logits, cache, mask, pos = self._prefill(prompts)
        tokens: list[list[int]] = [[] for _ in range(b)]
        lps: list[list[float]] = [[] for _ in range(b)]
        ents: list[list[float]] = [[] for _ in range(b)]
        done = [False] * b
        stop = self.config.stop
        for step in range(max_new_tokens):
            logp = torch.log_softmax(logits.float(), dim=-1)
            p = logp.exp()
            ent = (-torch.where(p > 0, p * logp, torch.zeros_like(p)).sum(-1)).clamp(min=0)
            nxt = logp.argmax(-1)
            if not greedy_only:
                probs = self._sampling_probs(logits.float()).cpu()
                nxt = nxt.cpu()
                for r, g in enumerate(gens):
                    if g is not None and not done[r]:
                        nxt[r] = torch.multinomial(probs[r], 1, generator=g)[0]
                nxt = nxt.to(self.device)
            chosen_lp = logp.gather(-1, nxt[:, None])[:, 0].cpu().tolist()
            ent_l = ent.cpu().tolist()
            nxt_l = nxt.cpu().tolist()
            for r in range(b):
                if done[r]:
                    continue
                if nxt_l[r] in self._eos_ids:
                    done[r] = True
                    continue
                tokens[r].append(nxt_l[r])
                lps[r].append(float(chosen_lp[r]))
                ents[r].append(float(ent_l[r]))
                if any(s in self._decode_text(tokens[r]) for s in stop):
                    done[r] = True
            if all(done) or step == max_new_tokens - 1:
                break
            feed = torch.tensor([self._pad_id if done[r] else nxt_l[r] for r in range(b)], device=self.device)
            mask = torch.cat([mask, torch.ones((b, 1), dtype=mask.dtype, device=self.device)], dim=-1)
            pos = pos + 1
            out = self._forward(
                input_ids=feed[:, None],
                attention_mask=mask,
                position_ids=pos,
                past_key_values=cache,
                use_cache=True,
            )
            cache = out.past_key_values
            logits = out.logits[:, -1, :]
        result = []
        for r in range(b):
            m, text = truncate_at_stop(tokens[r], self._decode_text, stop)
            result.append(_Decoded(tokens[r][:m], lps[r][:m], ents[r][:m], text))
        return result

    @torch.inference_mode()
    def class_probabilities(
        self, prompts: Sequence[tuple[str, str]], classes: Mapping[str, Sequence[str]]
    ) -> np.ndarray:
        """Next-token probabilities of answer classes, normalised over the classes; shape (N, C).

        ``prompts``: (body, answer prefix) pairs, encoded as in :meth:`generate` (chat template when
        enabled). ``classes``: class name -> spelling variants (e.g. ``{"A": (" A", "A")}``); a class's
        probability is the summed probability of the first tokens of its variants (tokens shared by
        several classes are dropped). One forward pass per ``config.batch_size`` prompts."""
        ids = self._class_token_ids(classes)
        encoded = [self._encode(body, prefix) for body, prefix in prompts]
        out = np.zeros((len(encoded), len(ids)), dtype=np.float64)
        bs = self.config.batch_size
        for start in range(0, len(encoded), bs):
            logits, _, _, _ = self._prefill(encoded[start : start + bs])
            logp = torch.log_softmax(logits.float(), dim=-1)
            per_class = torch.stack([torch.logsumexp(logp[:, v], dim=-1) for v in ids.values()], dim=-1)
            out[start : start + len(per_class)] = torch.softmax(per_class, dim=-1).cpu().double().numpy()
        return out

    # ---------------------------------------------------------------------------------------------
    def generate(self, records: Sequence[QARecord]) -> list[Generation]:
        """Samples, greedy answer, token statistics, p(True) and A4C for each record (same order)."""
        if isinstance(records, QARecord) or not isinstance(records, Sequence):
            raise ValueError("records must be a sequence of QARecord")
        for i, rec in enumerate(records):
            if not isinstance(rec, QARecord):
                raise ValueError(f"records[{i}] is a {type(rec).__name__}, expected QARecord")
        cfg = self.config
        results: list[Generation] = []
        disable = None if cfg.progress is None else not cfg.progress
        with tqdm(total=len(records), desc="generate", unit="q", disable=disable) as bar:
            per_group = self.questions_per_batch()
            for start in range(0, len(records), per_group):
                group = records[start : start + per_group]
                gens = self._generate_group(group)
                if cfg.p_true:
                    probs = self.class_probabilities(
                        [p_true_prompt(r.question, g.samples, g.answer) for r, g in zip(group, gens, strict=True)],
                        _TRUE_FALSE,
                    )
                    for g, v in zip(gens, probs[:, 0], strict=True):
                        g.p_true = float(v)
                if cfg.a4c:
                    prompts = [
                        self._encode(*a4c_prompt(r.question, g.answer)) for r, g in zip(group, gens, strict=True)
                    ]
                    replies: list[_Decoded] = []
                    for s in range(0, len(prompts), cfg.batch_size):
                        chunk = prompts[s : s + cfg.batch_size]
                        replies.extend(self._decode(chunk, [None] * len(chunk), cfg.a4c_max_new_tokens))
                    for g, rep in zip(gens, replies, strict=True):
                        g.a4c_text = rep.text
                results.extend(gens)
                bar.update(len(group))
        return results

    def questions_per_batch(self) -> int:
        """Questions whose ``1 + n_samples`` rows fit one decoding batch of ``batch_size`` rows (at least 1)."""
        return max(1, self.config.batch_size // (1 + self.config.n_samples))

    def _generate_group(self, group: Sequence[QARecord]) -> list[Generation]:
        """Greedy answer plus ``n_samples`` samples for each question of ``group``, decoded together.

        Rows of several questions share one decoding batch (``batch_size`` rows at most), which on a CPU
        costs little more per step than a single question's rows: each step reads all weights once.
        """
        cfg = self.config
        rows: list[tuple[int, list[int], int | None]] = []
        for q, record in enumerate(group):
            prompt = self._encode(record.prompt or _fallback_prompt(record))
            seeds = [None] + [_derive_seed(cfg.seed, record.id, k) for k in range(cfg.n_samples)]
            rows.extend((q, prompt, seed) for seed in seeds)
        decoded: list[_Decoded] = []
        for s in range(0, len(rows), cfg.batch_size):
            chunk = rows[s : s + cfg.batch_size]
            decoded.extend(self._decode([r[1] for r in chunk], [r[2] for r in chunk], cfg.max_new_tokens))
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
                )
            )
        return out
