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

Sampling: one uniform number per row and step from the row's own CPU ``torch.Generator`` (seeded from
``(config.seed, record.id, k)`` for sample ``k``) picks the token by inverse CDF of the sampling distribution
(temperature, then top-k, then top-p).

Determinism: the global torch RNG is neither read nor changed. Each question is generated on its own: its
prompt is prefilled once (only its suffix when the shared-prefix cache is on, see
:mod:`shapley.pipeline.generate.prompts`), and its ``1 + n_samples`` rows decode from copies of that prompt's cache,
in batches of ``rows_per_batch`` rows that never hold another question's rows; its p(True) and A4C prompts are
run alone too. So everything a question gets is a function of its own record, the settings (rows per batch
and the prefix cache included) and the code, bit for bit on one machine, whatever the other questions of the
call, shard or resume point. Across rows-per-batch settings the numbers agree up to floating-point noise
(batched matrix products of other shapes round differently), which is why a run records its rows per batch
and a resume reuses it. On CUDA in bf16 that noise is at the 1e-3 level and can change a sampled token.

Batch sizes: ``GenerationConfig.rows_per_batch`` (a run's recorded size), else ``batch_size``, else automatic: on a
CPU 8, or a question's ``1 + n_samples`` rows when more, and, on CUDA, as many rows as the key-value cache of the
longest prompt fits in the free device memory (``torch.cuda.mem_get_info``). A batch that runs out of memory is
split in half and retried, and later batches stay at the smaller size; the sizes used are counted in
``Generator.stats``.

Code: prompts and the prefix cache in :mod:`shapley.pipeline.generate.prompts`, decoding in
:mod:`shapley.pipeline.generate.decode`, self-evaluation in :mod:`shapley.pipeline.generate.selfeval`, settings and pure
helpers in :mod:`shapley.pipeline.generate.config`; the public names are importable from here.

Models are loaded by :mod:`shapley.pipeline.generate.models`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shapley.pipeline.generate.config import (
    _TRUE_FALSE,
    GenerationConfig,
    StopChecker,
    _derive_seed,
    a4c_prompt,
    inverse_cdf_sample,
    p_true_prompt,
    truncate_at_stop,
)
from shapley.pipeline.generate.decode import Decoder
from shapley.pipeline.generate.models import CausalLM, load_model, model_fingerprint
from shapley.pipeline.generate.prompts import PromptBuilder
from shapley.pipeline.generate.selfeval import SelfEvaluator
from shapley.pipeline.rundir.progress import tqdm
from shapley.pipeline.rundir.records import Generation, QARecord

__all__ = [
    "GenerationConfig",
    "Generator",
    "StopChecker",
    "inverse_cdf_sample",
    "load_model",
    "p_true_prompt",
    "a4c_prompt",
    "truncate_at_stop",
]


class Generator:
    """Generation stage over a causal LM.

    ``Generator(spec_or_model, config, tokenizer=None)``: a model spec (see :func:`resolve_model`) is
    loaded with :func:`load_model` on ``config.device`` / ``config.dtype``; a model object needs its
    ``tokenizer``. ``.generate(records)`` returns one :class:`~shapley.pipeline.rundir.records.Generation` per record.
    ``fingerprint`` identifies the weights (for provenance and caches). ``stats`` counts the work: the rows
    planned per decoding batch of samples (``batch_size``, chosen from free memory when automatic), decoding
    batches and their sizes in rows (``batch_rows_used``), decoding steps, tokens generated (end-of-sequence
    tokens not counted, tokens cut by a stop string counted), rows checked against the stop strings,
    batches split after running out of memory (``oom_splits``), which cache was used, prompt prefills
    (``prompt_prefills``: one per prompt), prefills of shared prefixes (``prefix_prefills``), the prefix tokens
    whose prefill was saved (``prefix_tokens_reused``) and whether the prefix cache was used (``prefix_cache``).
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
        self.lm = CausalLM(self.model, self.tokenizer)
        self.device = self.lm.device
        static = self.device.type == "cuda" if self.config.static_cache is None else self.config.static_cache
        self.stats: dict[str, Any] = {
            "batch_size": None,
            "decode_batches": 0,
            "batch_rows_used": [],
            "decode_steps": 0,
            "rows_dropped": 0,
            "tokens_generated": 0,
            "stop_checks": 0,
            "oom_splits": 0,
            "cache": "static" if static else "dynamic",
        }
        self.prompts = PromptBuilder(self.lm, self.config, self.stats, static)
        self.use_chat_template = self.prompts.use_chat_template
        self.prompts.class_token_ids(_TRUE_FALSE)  # fail early when the tokenizer cannot tell A from B
        self.decoder = Decoder(self.lm, self.config, self.stats, self.prompts)
        self.self_evaluator = SelfEvaluator(self.lm, self.config, self.prompts, self.decoder)
        self.prompts.count_prefills()

    # ---------------------------------------------------------------------------------------------
    def record_prompt(self, record: QARecord) -> tuple[list[int], int]:
        """(token ids of the record's prompt, length of its shared prefix; 0 when none is cached)."""
        return self.prompts.record_prompt(record)

    def batch_rows(self, context_tokens: int | None = None) -> int:
        """Rows per decoding batch (see :meth:`~shapley.pipeline.generate.decode.Decoder.batch_rows`)."""
        return self.decoder.batch_rows(context_tokens)

    def fix_rows(self) -> int:
        """Fix the rows per decoding batch for every later batch and return them (see
        :meth:`~shapley.pipeline.generate.decode.Decoder.fix_rows`)."""
        return self.decoder.fix_rows()

    def questions_per_batch(self, records: Sequence[QARecord] | None = None) -> int:
        """Questions whose ``1 + n_samples`` rows fit one decoding batch (at least 1)."""
        return self.decoder.questions_per_batch(records)

    def class_probabilities(
        self, prompts: Sequence[tuple[str, str]], classes: Mapping[str, Sequence[str]]
    ) -> np.ndarray:
        """Next-token probabilities of answer classes, normalised over the classes; shape (N, C) (see
        :meth:`~shapley.pipeline.generate.selfeval.SelfEvaluator.class_probabilities`)."""
        return self.self_evaluator.class_probabilities(prompts, classes)

    def generate(self, records: Sequence[QARecord]) -> list[Generation]:
        """Samples, greedy answer, token statistics, p(True), A4C and (optionally) the greedy answer's
        hidden state for each record (same order); each record on its own (see the module docstring)."""
        if isinstance(records, QARecord) or not isinstance(records, Sequence):
            raise ValueError("records must be a sequence of QARecord")
        for i, rec in enumerate(records):
            if not isinstance(rec, QARecord):
                raise ValueError(f"records[{i}] is a {type(rec).__name__}, expected QARecord")
        disable = None if self.config.progress is None else not self.config.progress
        results: list[Generation] = []
        with tqdm(total=len(records), desc="generate", unit="q", disable=disable) as bar:
            for record in records:
                gen = self._generate_one(record)
                self.self_evaluator.evaluate(record, gen)
                results.append(gen)
                bar.update(1)
        return results

    def decode_prompt(
        self, prompt: list[int], seeds: Sequence[int | None], new_tokens: int, keep_hidden: bool = False, split: int = 0
    ) -> list[Any]:
        """Rows ``seeds`` (None: greedy) of one prompt (token ids), see :meth:`Decoder.decode_prompt
        <shapley.pipeline.generate.decode.Decoder.decode_prompt>`."""
        return self.decoder.decode_prompt(prompt, seeds, new_tokens, keep_hidden, split)

    def _generate_one(self, record: QARecord) -> Generation:
        """Greedy answer plus ``n_samples`` samples of one question, decoded from one prefill of its prompt."""
        cfg = self.config
        prompt, split = self.record_prompt(record)
        seeds = [None] + [_derive_seed(cfg.seed, record.id, k) for k in range(cfg.n_samples)]
        decoded = self.decode_prompt(prompt, seeds, cfg.max_new_tokens, cfg.hidden_state, split)
        greedy, samples = decoded[0], decoded[1:]
        return Generation(
            id=record.id,
            samples=[d.text for d in samples],
            answer=greedy.text,
            sample_token_logprobs=[d.logprobs for d in samples],
            sample_token_entropies=[d.entropies for d in samples],
            answer_token_logprobs=greedy.logprobs,
            answer_token_entropies=greedy.entropies,
            hidden=greedy.hidden,
        )
