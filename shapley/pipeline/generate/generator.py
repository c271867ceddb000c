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

An answer ends at the end-of-sequence token or at the first stop string, and its text, log-probabilities and
entropies describe the same kept tokens (the truncation rule, :mod:`shapley.pipeline.generate.decode`).

Sampling: sample ``k`` of a question draws its tokens with its own generator, seeded from ``(config.seed,
record.id, k)`` (:func:`sample_seed`; how, see :mod:`shapley.pipeline.generate.decode`).

Determinism: the global torch RNG is neither read nor changed. Each question is generated on its own: its
prompt is prefilled once (only its suffix when the shared-prefix cache is on, see
:mod:`shapley.pipeline.generate.prompts`), and its ``1 + n_samples`` rows decode from copies of that prompt's cache,
in batches of ``rows_per_batch`` rows that never hold another question's rows; its p(True) and A4C prompts are
run alone too (never padded beside another question's). So everything a question gets is a function of its own
record, the settings (rows per batch and the prefix cache included) and the code, bit for bit on one machine,
whatever the other questions of the call, shard or resume point. Across rows-per-batch settings the numbers agree
up to floating-point noise (batched matrix products of other shapes round differently), which is why a run
records its rows per batch and a resume reuses it. On CUDA in bf16 that noise is at the 1e-3 level and can change
a sampled token.

Batch sizes: :meth:`Decoder.batch_rows <shapley.pipeline.generate.decode.Decoder.batch_rows>`. A batch that runs
out of memory is split in half and retried, and later batches stay at the smaller size (counted in ``stats``).

Self-evaluation (prompts in :mod:`shapley.pipeline.generate.prompts`): p(True) is the probability of "(A) True" for
the greedy answer (:meth:`Generator.class_probabilities`), A4C the model's greedy reply when asked its confidence.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from shapley.pipeline.config import LARGEST_SEED
from shapley.pipeline.generate.config import GenerationConfig
from shapley.pipeline.generate.decode import Decoder
from shapley.pipeline.generate.models import CausalLM, load_model
from shapley.pipeline.generate.prompts import TRUE_FALSE, PromptBuilder, a4c_prompt, p_true_prompt
from shapley.pipeline.rundir.records import Generation, QARecord


def sample_seed(seed: int, record_id: str, k: int) -> int:
    """The seed of sample ``k`` of the question ``record_id`` in a run seeded ``seed``: a hash of the three,
    in [0, LARGEST_SEED]."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in (seed, record_id, k)).encode()).digest()
    return int.from_bytes(digest[:8], "little") & LARGEST_SEED


class Generator:
    """Generation stage over a causal LM.

    ``Generator(spec_or_model, config, tokenizer=None, fingerprint=None)``: a model spec is loaded with
    :func:`~shapley.pipeline.generate.models.load_model` on ``config.device`` / ``config.dtype``; a model object
    needs its ``tokenizer`` and may be given its ``fingerprint`` (which identifies the weights, for provenance and
    caches). ``.generate(records)`` returns one
    :class:`~shapley.pipeline.rundir.records.Generation` per record. ``stats`` counts the work, each part its own
    counters: the prompt builder's (``prompts``) and the decoder's (``decoder``). A tokenizer that cannot tell the
    p(True) answers apart is refused.
    """

    def __init__(
        self, spec_or_model: Any, config: GenerationConfig, tokenizer: Any = None, fingerprint: str | None = None
    ):
        self.config = config
        if isinstance(spec_or_model, (str, os.PathLike)):
            model, tokenizer, fingerprint = load_model(str(spec_or_model), device=config.device, dtype=config.dtype)
        elif tokenizer is None:
            raise ValueError("a model object needs its tokenizer: Generator(model, config, tokenizer=...)")
        else:
            model = spec_or_model
        self.model = model.eval()
        self.fingerprint = fingerprint
        self.lm = CausalLM(self.model, tokenizer)
        self.stats: dict[str, Any] = {}
        self.prompts = PromptBuilder(self.lm, config, self.stats)
        self.prompts.class_token_ids(TRUE_FALSE)  # a tokenizer that cannot tell A from B is refused here
        self.decoder = Decoder(self.lm, config, self.stats, self.prompts)

    def fix_rows(self) -> int:
        """Fix the rows per decoding batch for every later batch and return them (see
        :meth:`~shapley.pipeline.generate.decode.Decoder.fix_rows`)."""
        return self.decoder.fix_rows()

    def questions_per_batch(self) -> int:
        """Questions whose ``1 + n_samples`` rows fit one decoding batch (at least 1)."""
        return max(1, self.decoder.batch_rows() // (1 + self.config.n_samples))

    @torch.inference_mode()
    def class_probabilities(
        self, prompts: Sequence[tuple[str, str]], classes: Mapping[str, Sequence[str]]
    ) -> np.ndarray:
        """Next-token probabilities of answer classes, normalised over the classes; shape (N, C).

        ``prompts``: (body, answer prefix) pairs, encoded as the generator's prompts are (chat template when
        enabled). ``classes``: class name -> spelling variants (e.g.
        :data:`~shapley.pipeline.generate.prompts.TRUE_FALSE`); a class's probability is the summed probability of
        the first tokens of its variants (tokens shared by several classes are dropped). One forward pass per
        :meth:`Decoder.batch_rows <shapley.pipeline.generate.decode.Decoder.batch_rows>` prompts (left-padded)."""
        ids = self.prompts.class_token_ids(classes)
        encoded = [self.prompts.encode(body, prefix) for body, prefix in prompts]

        def run(chunk: Sequence[list[int]]) -> list[np.ndarray]:
            logp = torch.log_softmax(self.lm.last_logits(chunk).float(), dim=-1)
            per_class = torch.stack([torch.logsumexp(logp[:, v], dim=-1) for v in ids.values()], dim=-1)
            return list(torch.softmax(per_class, dim=-1).cpu().double().numpy())

        rows = self.decoder.in_batches(encoded, self.decoder.batch_rows(), run)
        return np.stack(rows)  # float64 already

    def generate(self, records: Sequence[QARecord]) -> list[Generation]:
        """Samples, greedy answer, token statistics, p(True), A4C and (optionally) the greedy answer's
        hidden state for each record (same order); each record on its own (see the module docstring)."""
        return [self._generate_one(r) for r in records]

    def _generate_one(self, record: QARecord) -> Generation:
        """Greedy answer plus ``n_samples`` samples of one question, decoded from one prefill of its prompt, then
        the greedy answer's p(True) and A4C reply, each prompt on its own."""
        cfg = self.config
        prompt, split = self.prompts.record_prompt(record)
        seeds = [None] + [sample_seed(cfg.seed, record.id, k) for k in range(cfg.n_samples)]
        greedy, *samples = self.decoder.decode_prompt(prompt, seeds, cfg.max_new_tokens, cfg.hidden_state, split)
        texts = [d.text for d in samples]
        p_true = a4c_text = None
        if cfg.p_true:
            probs = self.class_probabilities([p_true_prompt(record.question, texts, greedy.text)], TRUE_FALSE)
            p_true = float(probs[0, 0])
        if cfg.a4c:
            a4c_ids = self.prompts.encode(*a4c_prompt(record.question, greedy.text))
            a4c_text = self.decoder.decode_prompt(a4c_ids, [None], cfg.a4c_max_new_tokens)[0].text
        return Generation(
            id=record.id,
            samples=texts,
            answer=greedy.text,
            sample_token_logprobs=[d.logprobs for d in samples],
            sample_token_entropies=[d.entropies for d in samples],
            answer_token_logprobs=greedy.logprobs,
            answer_token_entropies=greedy.entropies,
            p_true=p_true,
            a4c_text=a4c_text,
            hidden=greedy.hidden,
        )
