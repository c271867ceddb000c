"""Self-evaluation of the generation stage: p(True) (Kadavath et al. 2022) and the ask-for-confidence reply
(A4C, Tian et al. 2023) of each greedy answer, and next-token class probabilities in general.

Each question's self-evaluation prompts are prefilled on their own (never padded beside another question's),
so its p(True) and A4C reply do not depend on which questions share its run, shard or chunk."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from shapley.pipeline.generate.config import _TRUE_FALSE, a4c_prompt, p_true_prompt
from shapley.pipeline.generate.decode import Decoder
from shapley.pipeline.generate.models import CausalLM
from shapley.pipeline.generate.prompts import PromptBuilder
from shapley.pipeline.rundir.records import Generation, QARecord


class SelfEvaluator:
    """p(True), A4C and class probabilities (the self-evaluation part of
    :class:`~shapley.pipeline.generate.generator.Generator`).

    State: none of its own beyond the settings; it encodes through the prompt builder and batches, pads and
    decodes through the decoder it is given."""

    def __init__(self, lm: CausalLM, config: Any, prompts: PromptBuilder, decoder: Decoder) -> None:
        self.lm = lm
        self.device = lm.device
        self.config = config
        self.prompts = prompts
        self.decoder = decoder

    def _padded_logits(self, prompts: Sequence[list[int]]) -> torch.Tensor:
        """Last-position logits (B, V) of left-padded prompts, one forward pass."""
        length = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), length), self.decoder.pad_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), length), dtype=torch.long)
        for r, p in enumerate(prompts):
            if p:
                ids[r, length - len(p) :] = torch.tensor(p)
                mask[r, length - len(p) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        kw: dict[str, Any] = {"input_ids": ids, "use_cache": False}
        if len(prompts) > 1 or not bool(mask.all()):
            kw.update(attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0))
        return self.lm.forward(**kw).logits[:, -1, :]

    @torch.inference_mode()
    def class_probabilities(
        self, prompts: Sequence[tuple[str, str]], classes: Mapping[str, Sequence[str]]
    ) -> np.ndarray:
        """Next-token probabilities of answer classes, normalised over the classes; shape (N, C).

        ``prompts``: (body, answer prefix) pairs, encoded as in :meth:`generate` (chat template when
        enabled). ``classes``: class name -> spelling variants (e.g. ``{"A": (" A", "A")}``); a class's
        probability is the summed probability of the first tokens of its variants (tokens shared by
        several classes are dropped). One forward pass per :meth:`batch_rows` prompts (left-padded)."""
        ids = self.prompts.class_token_ids(classes)
        encoded = [self.prompts.encode(body, prefix) for body, prefix in prompts]
        if not encoded:
            return np.zeros((0, len(ids)), dtype=np.float64)

        def run(chunk: list[list[int]]) -> list[np.ndarray]:
            logp = torch.log_softmax(self._padded_logits(chunk).float(), dim=-1)
            per_class = torch.stack([torch.logsumexp(logp[:, v], dim=-1) for v in ids.values()], dim=-1)
            return list(torch.softmax(per_class, dim=-1).cpu().double().numpy())

        rows = self.decoder.in_batches(encoded, self.decoder.batch_rows(max(len(p) for p in encoded) + 1), run)
        return np.stack(rows).astype(np.float64)

    def evaluate(self, record: QARecord, gen: Generation) -> None:
        """p(True) and the A4C reply of one question's greedy answer (in place), each prompt on its own."""
        cfg = self.config
        if cfg.p_true:
            probs = self.class_probabilities([p_true_prompt(record.question, gen.samples, gen.answer)], _TRUE_FALSE)
            gen.p_true = float(probs[0, 0])
        if cfg.a4c:
            state = self.prompts.prefill(self.prompts.encode(*a4c_prompt(record.question, gen.answer)))
            gen.a4c_text = self.decoder.decode_rows(state, [None], cfg.a4c_max_new_tokens, keep_hidden=False)[0].text
