"""Shapley confidence as a uqlm black-box scorer (extra ``uqlm``; environment ``.venv-uqlm``: uqlm needs numpy<2).

:class:`ShapleyScorer` follows uqlm's black-box scorers: ``evaluate(responses, sampled_responses)`` returns one
confidence in [0, 1] per prompt (higher = more confident). The answers of prompt k are its response followed by
its sampled responses; their entailment matrix comes from

* one of our backend specs (``"embedding:minilm"``, ``"hf:<id|path>"``, ``"llm:<...>"``): the same matrices as
  our pipeline; or
* a uqlm NLI object (anything with a sequence-classification ``model`` and its ``tokenizer``, such as
  ``uqlm.nli.nli.NLI``): ``P(s_i => s_j)`` is the softmax probability of the label that the model's own
  ``config.label2id`` names entailment, premise ``s_i`` and hypothesis ``s_j`` encoded as a text pair. uqlm's own
  NLI reads its outputs in a fixed [contradiction, neutral, entailment] order; we never assume it.

The total Shapley uncertainty U (nats, :func:`shapley.shapley_uncertainty`) becomes a confidence by
:func:`shapley.integrations.common.confidence_from_total`, ``1 - det(R) ** (1/n)``: our choice (the paper ranks by U
and defines no confidence), which ranks prompts as U does but is not calibrated (why, and its range: there).

:func:`add_to_result` puts the Shapley confidence into a ``BlackBoxUQ`` result (``UQResult``) as one more column
of its score table, beside uqlm's own scorers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from shapley.core.entropy import shapley_uncertainty
from shapley.core.psd import DEFAULT_EPS
from shapley.integrations.common import (
    RUN_DEFAULTS,
    check_settings,
    confidence_from_total,
)


def entailment_label(label2id: dict[str, Any]) -> int:
    """Index of the entailment label in a model's ``config.label2id`` (case-insensitive: the one label containing
    "entail" and not starting with "not"/"non"). ``ValueError`` when there is not exactly one.

    Examples:
        >>> entailment_label({"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2})  # deberta-large-mnli
        2
        >>> entailment_label({"entailment": 0, "neutral": 1, "contradiction": 2})  # another order
        0
    """
    names = {str(name).strip().lower(): int(i) for name, i in label2id.items()}
    found = [i for name, i in names.items() if "entail" in name and not name.startswith(("not", "non"))]
    if len(found) != 1:
        raise ValueError(f"cannot find one entailment label in label2id={dict(label2id)}")
    return found[0]


def _nli_matrix(nli: Any, texts: Sequence[str]) -> np.ndarray:
    """(n, n) ``P(s_i => s_j)`` from a uqlm NLI object's ``model`` and ``tokenizer``: softmax probability of the
    ``label2id`` entailment label, each ordered pair of different texts scored once (identical texts: 1, like the
    diagonal, as our backends do)."""
    import torch

    model, tokenizer = nli.model, nli.tokenizer
    ent = entailment_label(dict(model.config.label2id))
    uniq = sorted(set(texts))
    pairs = [(a, b) for a in uniq for b in uniq if a != b]
    probs: dict[tuple[str, str], float] = {}
    if pairs:
        device = next(model.parameters()).device
        enc = tokenizer(
            [a for a, _ in pairs], [b for _, b in pairs], padding=True, truncation=True, return_tensors="pt"
        )
        with torch.no_grad():
            logits = model(**{k: v.to(device) for k, v in enc.items()}).logits
        p = torch.softmax(logits.double(), dim=-1)[:, ent].cpu().numpy()
        probs = {pair: float(v) for pair, v in zip(pairs, p, strict=True)}
    return np.array([[1.0 if a == b else probs[(a, b)] for b in texts] for a in texts])


class ShapleyScorer:
    """uqlm-style black-box scorer: Shapley confidence in [0, 1] per prompt.

    Args:
        entailment: our backend spec (``"embedding:minilm"``, ``"hf:<id|path>"``, ``"llm:<...>"``) or a uqlm NLI
            object (``model`` and ``tokenizer`` attributes; its ``label2id`` is read).
        beta, psd_policy, eps: as :func:`shapley.shapley_uncertainty` (defaults: the pipeline's beta and policy,
            :data:`shapley.integrations.common.RUN_DEFAULTS`, and ``shapley.core.psd.DEFAULT_EPS``).
        cache: our backends' entailment cache (False: none; True: the default file; or a path).
    """

    def __init__(
        self,
        entailment: Any = "embedding:minilm",
        *,
        beta: float = RUN_DEFAULTS.beta,
        psd_policy: str = RUN_DEFAULTS.psd_policy,
        eps: float = DEFAULT_EPS,
        cache: Any = False,
    ) -> None:
        self.beta, self.psd_policy, self.eps = check_settings(beta, psd_policy, eps)
        self.backend: Any = None
        self.nli: Any = None
        if isinstance(entailment, str):
            from shapley.pipeline.entail.backends import load_backend  # here: it imports torch

            self.backend = load_backend(entailment, cache=cache, progress=False)
            self.name = f"shapley[{entailment}]"
        elif hasattr(entailment, "model") and hasattr(entailment, "tokenizer"):
            entailment_label(dict(entailment.model.config.label2id))  # fail now, not at the first prompt
            self.nli = entailment
            self.name = f"shapley[{type(entailment).__name__}]"
        else:
            raise ValueError(
                "entailment must be a backend spec such as 'embedding:minilm' or a uqlm NLI object with model and "
                f"tokenizer attributes; got {type(entailment).__name__}"
            )

    def entail_matrices(self, responses: Sequence[str], sampled_responses: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """(n_k, n_k) entailment matrices, answers ``[responses[k], *sampled_responses[k]]``."""
        groups = _answer_groups(responses, sampled_responses)
        if self.nli is not None:
            return [_nli_matrix(self.nli, g) for g in groups]
        return [r.entail for r in self.backend.score([("", g) for g in groups])]

    def uncertainty(self, responses: Sequence[str], sampled_responses: Sequence[Sequence[str]]) -> list[float]:
        """Total Shapley uncertainty (nats) per prompt, exactly :func:`shapley.shapley_uncertainty` (``-inf`` for a
        singular kernel)."""
        return [self._total(P) for P in self.entail_matrices(responses, sampled_responses)]

    def evaluate(self, responses: Sequence[str], sampled_responses: Sequence[Sequence[str]]) -> list[float]:
        """Confidence in [0, 1] per prompt (higher = more confident): ``1 - det(R) ** (1/n)`` of its n answers."""
        matrices = self.entail_matrices(responses, sampled_responses)
        return [confidence_from_total(self._total(P), len(P)) for P in matrices]

    def _total(self, P: np.ndarray) -> float:
        return shapley_uncertainty(P, self.beta, psd_policy=self.psd_policy, eps=self.eps)


def _answer_groups(responses: Any, sampled_responses: Any) -> list[list[str]]:
    if isinstance(responses, str) or not isinstance(responses, Sequence):
        raise ValueError("responses must be a list of strings, one per prompt")
    if isinstance(sampled_responses, str) or not isinstance(sampled_responses, Sequence):
        raise ValueError("sampled_responses must be a list (one per prompt) of lists of strings")
    if len(responses) != len(sampled_responses):
        raise ValueError(f"{len(responses)} responses but {len(sampled_responses)} lists of sampled responses")
    out = []
    for k, (r, samples) in enumerate(zip(responses, sampled_responses, strict=True)):
        if isinstance(samples, str) or not isinstance(samples, Sequence):
            raise ValueError(f"sampled_responses[{k}] must be a list of strings, not {type(samples).__name__}")
        group = [r, *samples]
        if not all(isinstance(t, str) for t in group):
            raise ValueError(f"prompt {k}: every response and sampled response must be a string")
        out.append(group)
    return out


def add_to_result(result: Any, scorer: ShapleyScorer, name: str = "shapley") -> Any:
    """Add the Shapley confidence to a uqlm ``UQResult`` (from ``BlackBoxUQ.score`` or ``generate_and_score``) as
    the column ``name`` of its score table, beside uqlm's own scorers: ``result.to_df()`` then shows it, and
    ``result.metadata["scorers"]`` lists it. Reads the result's ``responses`` and ``sampled_responses``; returns
    the same (modified) result. ``ValueError`` when the result lacks them or already has a column ``name``."""
    data = getattr(result, "data", None)
    if not isinstance(data, dict) or "responses" not in data or "sampled_responses" not in data:
        raise ValueError("result must be a uqlm UQResult whose data holds 'responses' and 'sampled_responses'")
    if name in data:
        raise ValueError(f"the result already has a column {name!r}; choose another name")
    data[name] = scorer.evaluate(data["responses"], data["sampled_responses"])
    whole = getattr(result, "result_dict", None)
    if isinstance(whole, dict) and isinstance(whole.get("data"), dict) and whole["data"] is not data:
        whole["data"][name] = data[name]
    meta = getattr(result, "metadata", None)
    if isinstance(meta, dict) and isinstance(meta.get("scorers"), list):
        meta["scorers"] = [*meta["scorers"], name]
    return result
