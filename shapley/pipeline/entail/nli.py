"""The NLI backend (``hf:``): a sequence classifier, its tokenisation and its forward passes.

Forward passes follow the batch rule of :mod:`shapley.pipeline.entail.base`: one question's pairs alone (in
the group's canonical pair order), cut by :func:`~shapley.pipeline.entail.base.plan_passes` on their token
lengths with the limits ``PASS_LIMITS[device kind]`` (pairs, padded tokens, ``fill``), each pass padded to its
longest pair. Every limit is a constant, never the free memory or the ``batch_size`` setting, so a pair's
probabilities are the same in every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

import numpy as np
import torch

from shapley.pipeline.config import DEFAULT_ENTAILMENT
from shapley.pipeline.entail.base import (
    BackendOptions,
    EntailmentBackend,
    GroupScores,
    for_device,
    group_matrices,
    group_pairs,
    local_model_folder,
    plan_passes,
)
from shapley.pipeline.generate.models import default_device, default_dtype, path_fingerprint, split_on_oom

#: the default NLI classifier (the spec ``"hf"`` alone), the model of the run's default entailment backend
DEFAULT_NLI_MODEL = DEFAULT_ENTAILMENT.removeprefix("hf:")
#: fixed limits of one forward pass by device kind: (pairs, padded tokens or None, fill); part of the cache key.
#: ``fill``: a pass ends before a pair shorter than that fraction of its longest pair (a CPU pays for every
#: padded token; a GPU for every pass, so it packs fuller passes)
PASS_LIMITS: dict[str, tuple[int, int | None, float]] = {"cpu": (32, None, 0.75), "cuda": (512, 16384, 0.0)}
#: tokens of a pair the classifier reads at most (the model's and tokenizer's own limits may be lower)
MAX_PAIR_TOKENS = 512
#: a model or tokenizer limit at or above this is no limit (tokenizers without one report a huge number)
NO_TOKEN_LIMIT = 1_000_000


def nli_label_indices(id2label: dict[Any, str]) -> tuple[int, int | None]:
    """(entailment index, contradiction index or None) from ``config.id2label``.

    Case-insensitive: a label containing "entail" and not starting with "not"/"non" is the entailment
    label, one containing "contra" the contradiction label. ``ValueError`` when there is no single
    entailment label (e.g. the generic ``LABEL_0``... names) or several contradiction labels."""
    labels = {int(i): str(name).strip().lower() for i, name in id2label.items()}
    ent = [i for i, n in labels.items() if "entail" in n and not n.startswith(("not", "non"))]
    con = [i for i, n in labels.items() if "contra" in n]
    if len(ent) != 1:
        raise ValueError(
            f"cannot find one entailment label in config.id2label={dict(id2label)}; an NLI model must name "
            "its labels (e.g. CONTRADICTION / NEUTRAL / ENTAILMENT)"
        )
    if len(con) > 1:
        raise ValueError(f"several contradiction labels in config.id2label={dict(id2label)}")
    return ent[0], (con[0] if con else None)


class HFNLIBackend(EntailmentBackend):
    """NLI sequence classifier (``hf:``): entail = P(entailment | premise, hypothesis).

    In bf16 on CUDA (fp16 where bf16 is missing), fp32 on a CPU. Forward passes: see the module docstring.
    ``max_length``: tokens read per pair (:data:`MAX_PAIR_TOKENS` or the model's or tokenizer's lower limit;
    longer pairs are cut, warned about and counted)."""

    is_nli = True

    def __init__(
        self,
        spec: str = DEFAULT_NLI_MODEL,
        *,
        device: str | torch.device | None = None,
        **options: Unpack[BackendOptions],
    ) -> None:
        super().__init__(**options)
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        folder = local_model_folder("hf", spec)
        self.name = f"hf:{spec}"
        self.device = default_device(device)
        self.dtype = default_dtype(self.device)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        if self.tokenizer.pad_token is None:  # a classifier's tokenizer without one: passes pad with id 0 (masked)
            self.tokenizer.pad_token_id = 0
        self.model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=self.dtype)
        self.model = self.model.to(self.device).eval()
        self.entail_index, self.contradict_index = nli_label_indices(self.model.config.id2label)
        self.has_contradiction = self.contradict_index is not None
        limits = [MAX_PAIR_TOKENS, getattr(self.model.config, "max_position_embeddings", None)]
        limits.append(getattr(self.tokenizer, "model_max_length", None))
        self.max_length = int(min(v for v in limits if isinstance(v, int) and 0 < v < NO_TOKEN_LIMIT))
        self.fingerprint = path_fingerprint(folder)
        self.max_batch_pairs, self.max_batch_tokens, self.pass_fill = for_device(PASS_LIMITS, self.device.type)
        self._fix_computation(
            self.device.type,
            self.dtype,
            {"pairs": self.max_batch_pairs, "tokens": self.max_batch_tokens},
            pass_pairs=self.max_batch_pairs,
            pass_tokens=self.max_batch_tokens,
            pass_fill=self.pass_fill,
        )

    def _tokenize(self, premises: list[str], hypotheses: list[str]) -> tuple[dict[str, list[list[int]]], int]:
        """(the model's inputs of every pair: ``input_ids``, and ``token_type_ids`` where the model takes them (the
        tokenizer's ``model_input_names`` say); the number of pairs cut to ``max_length``), untruncated in one call,
        then the long pairs cut."""
        enc = dict(self.tokenizer(premises, hypotheses, truncation=False, return_attention_mask=False, verbose=False))
        long = [i for i, x in enumerate(enc["input_ids"]) if len(x) > self.max_length]
        if long:
            cut = self.tokenizer(
                [premises[i] for i in long],
                [hypotheses[i] for i in long],
                truncation=True,
                max_length=self.max_length,
                return_attention_mask=False,
            )
            for name, values in enc.items():
                for j, i in enumerate(long):
                    values[i] = cut[name][j]
        return enc, len(long)

    def _forward_pass(self, enc: dict[str, list[list[int]]], rows: np.ndarray) -> torch.Tensor:
        """(pairs, 2) probabilities (entailment, contradiction or 0) of the pairs ``rows`` in one forward pass, padded
        to its longest pair, on the device (queued, no synchronisation); a pass that runs out of memory is split in
        half (:func:`~shapley.pipeline.generate.models.split_on_oom`)."""
        batch = {name: [values[i] for i in rows] for name, values in enc.items()}
        padded = self.tokenizer.pad(batch, return_attention_mask=True, return_tensors="pt")  # the tokenizer's side
        inputs = {name: self._to_device(t) for name, t in padded.items()}

        def run(pairs: Sequence[int]) -> torch.Tensor:
            part = slice(pairs[0], pairs[-1] + 1)
            probs = torch.softmax(self.model(**{name: t[part] for name, t in inputs.items()}).logits.float(), dim=-1)
            self._count_pass(len(pairs))
            con = probs[:, self.contradict_index] if self.contradict_index is not None else probs[:, 0] * 0
            return torch.stack([probs[:, self.entail_index], con], dim=-1)

        return split_on_oom(run, range(len(rows)), self.device, lambda a, b: torch.cat([a, b]), self._note_split)

    def _to_device(self, t: torch.Tensor) -> torch.Tensor:
        """Host-to-device copy that does not wait for the device (pinned memory) on CUDA."""
        if self.device.type == "cuda":
            return t.pin_memory().to(self.device, non_blocking=True)
        return t.to(self.device)

    @torch.inference_mode()
    def _score_groups(self, groups: list[list[str]]) -> list[GroupScores]:
        """Every pair of the call tokenised at once, then each group's pairs cut into passes by
        :func:`~shapley.pipeline.entail.base.plan_passes`, queued while the host builds the next pass; one copy
        back at the end."""
        flat = [group_pairs(g) for g in groups]
        sizes = [len(p) for p, _ in flat]
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        enc, cut = self._tokenize([p for ps, _ in flat for p in ps], [h for _, hs in flat for h in hs])
        self._note_truncated(cut, self.max_length, "premise-hypothesis pair(s)")
        lengths = np.fromiter((len(x) for x in enc["input_ids"]), dtype=np.int64, count=int(starts[-1]))
        out, orders = [], []
        with self._bar(int(starts[-1]), f"entail {self.name}") as bar:
            for g, at in enumerate(starts[:-1]):  # the batch rule: each group's pairs in passes of their own
                mine = lengths[at : at + sizes[g]]
                for rows in plan_passes(mine, self.max_batch_pairs, self.max_batch_tokens, self.pass_fill):
                    out.append(self._forward_pass(enc, rows + at))
                    orders.append(rows + at)
                    bar.update(len(rows))
        probs = np.zeros((int(starts[-1]), 2))
        probs[np.concatenate(orders)] = torch.cat(out).cpu().double().numpy()  # one copy back (every group has a pair)
        results = []
        for g, texts in enumerate(groups):
            span = probs[starts[g] : starts[g + 1]]
            results.append(group_matrices(len(texts), span[:, 0], span[:, 1] if self.has_contradiction else None))
        return results
