"""The LLM-judge backend (``llm:``): entail = p(yes), contradict = p(no), over {yes, no, maybe}. Not real NLI.

Each question's pairs go in their own forward passes (by decreasing prompt length, ties in the group's pair
order, at most ``JUDGE_PASS_ROWS[device kind]`` prompts per pass, one prefill each), so a pair's numbers never
depend on the other questions of a call or on the ``batch_size`` setting.
"""

from __future__ import annotations

from typing import Unpack

import numpy as np
import torch

from shapley.pipeline.entail import base
from shapley.pipeline.generate.config import GenerationConfig
from shapley.pipeline.generate.generator import Generator
from shapley.pipeline.generate.models import load_model

#: fixed prompts per forward pass by device kind (part of the cache key)
JUDGE_PASS_ROWS: dict[str, int] = {"cpu": 32, "cuda": 256}


def judge_prompt(premise: str, hypothesis: str) -> tuple[str, str]:
    """(body, answer prefix) of the LLM-judge prompt."""
    body = (
        f"First answer: {premise}\n"
        f"Second answer: {hypothesis}\n"
        "Does the first answer imply the second? Answer yes, no or maybe."
    )
    return body, "Answer:"


#: the judge's three answers, each with its spellings as a next token (leading space or not, capitalised or not)
_JUDGE_CLASSES = {w: (f" {w}", w, f" {w.capitalize()}", w.capitalize()) for w in ("yes", "no", "maybe")}


class LLMJudgeBackend(base.EntailmentBackend):
    """LLM judge (``llm:``): entail = p(yes), contradict = p(no), over {yes, no, maybe}. Not real NLI."""

    is_nli = False

    def __init__(
        self, spec: str = "smollm2", *, device: str | torch.device | None = None, **options: Unpack[base.BackendOptions]
    ) -> None:
        super().__init__(**options)
        model, tokenizer, self.fingerprint = load_model(spec, device=device)
        self.name = f"llm:{spec}"
        param = next(model.parameters())
        self.pass_rows = base.for_device(JUDGE_PASS_ROWS, param.device.type)
        # chat_template=None: the prompt is wrapped in the model's chat template when the tokenizer has one
        config = GenerationConfig(n_samples=0, p_true=False, a4c=False, batch_size=self.pass_rows, chat_template=None)
        self.generator = Generator(model, config, tokenizer=tokenizer, fingerprint=self.fingerprint)
        self._fix_computation(
            param.device.type,
            param.dtype,
            self.pass_rows,
            pass_pairs=self.pass_rows,
            chat_template=bool(self.generator.prompts.use_chat_template),
        )

    def _score_groups(self, groups: list[list[str]]) -> list[base.GroupScores]:
        """Each group's pairs in their own passes: by decreasing prompt length (ties in the group's pair order),
        at most ``pass_rows`` prompts per pass (one prefill each)."""
        out = []
        with self._bar(sum(len(t) * (len(t) - 1) for t in groups), f"judge {self.name}") as bar:  # pairs
            for texts in groups:
                premises, hypotheses = base.group_pairs(texts)
                lengths = [len(p) + len(h) for p, h in zip(premises, hypotheses, strict=True)]
                ent, con = np.zeros(len(lengths)), np.zeros(len(lengths))
                for idx in base.plan_passes(lengths, self.pass_rows):  # similar lengths share a pass
                    splits = self.generator.stats["oom_splits"]
                    probs = self.generator.class_probabilities(
                        [judge_prompt(premises[i], hypotheses[i]) for i in idx], _JUDGE_CLASSES
                    )
                    if self.generator.stats["oom_splits"] != splits:
                        self._note_split()
                    self._count_pass(len(idx))
                    ent[idx], con[idx] = probs[:, 0], probs[:, 1]
                    bar.update(len(idx))
                out.append(base.group_matrices(len(texts), ent, con))
        return out
