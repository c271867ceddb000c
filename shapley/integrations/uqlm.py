"""Shapley confidence as a uqlm black-box scorer (extra ``uqlm``; environment ``.venv-uqlm``: uqlm needs numpy<2).

:class:`ShapleyScorer` follows uqlm's black-box scorers: ``evaluate(responses, sampled_responses)``
returns one confidence in [0, 1] per prompt (higher = more confident; identical answers score ``beta``, 0.5 by
default: below). The answers of prompt k are its response followed by its sampled responses; their entailment
matrix comes from one of our backend specs (``"embedding:minilm"``, ``"hf:<id|path>"``, e.g. uqlm's NLI model
``hf:microsoft/deberta-large-mnli``, ``"llm:<...>"``): the same matrices as our pipeline.

The total Shapley uncertainty U (nats, :func:`shapley.shapley_uncertainty`) becomes a confidence by
:func:`shapley.integrations.common.confidence_from_total`, an equivalent pairwise agreement: our choice (the paper
ranks by U and defines no confidence), which ranks prompts with the same number of answers as U does but is not
calibrated (why, and its range: there).

**Full agreement scores beta, not 1.** Identical answers score exactly ``beta`` (every kernel entry is ``beta``):
0.5 at the default beta = 0.5, 1 only at beta = 1. A prompt scores above beta only when its entailment matrix is
inconsistent: at beta = 0.5 a search built to find such matrices found some (mixes of 0 and 1 entries whose kernel
is near singular, up to 0.84), a search over uniform random matrices none. So uqlm's threshold
tools, which try thresholds across [0, 1], find almost no prompt above 0.5 at the default: read the confidence
against beta (0.5 = full agreement), or divide it by beta (:meth:`ShapleyScorer.rescaled`: identical answers then
score 1, the order of the prompts is unchanged, and an inconsistent prompt can exceed 1).

:func:`add_to_result` puts the Shapley confidence into a ``BlackBoxUQ`` result (``UQResult``) as one more column
of its score table, beside uqlm's own scorers.

**uqlm's plots.** ``uqlm.utils.plots.plot_filtered_accuracy`` labels every scorer column from its own fixed
table of uqlm's scorer names and takes no label argument, so with a ``"shapley"`` column it raises
``KeyError: 'shapley'``; we do not write into uqlm's table. Pass it uqlm's scorers only
(``scorers_names=[...]``), and plot the Shapley column with ``uqlm.utils.plots.plot_model_accuracies``, which takes
any scores and thresholds: ``plot_model_accuracies(result.data["shapley"], correct,
thresholds=np.linspace(0, 0.9, 10) * scorer.beta)`` (the script ``examples/uqlm/generate_and_score.py`` does both).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from shapley.core import validate
from shapley.core.entropy import shapley_uncertainty
from shapley.core.psd import DEFAULT_EPS
from shapley.integrations.common import (
    RUN_DEFAULTS,
    cache_option,
    check_settings,
    confidence_from_total,
)


class ShapleyScorer:
    """uqlm-style black-box scorer: Shapley confidence per prompt, in [0, 1], identical answers scoring exactly
    ``beta`` (0.5 by default, not 1); see the module docstring for what that means for uqlm's thresholds.

    Args:
        entailment: our backend spec (``"embedding:minilm"``, ``"hf:<id|path>"``, ``"llm:<...>"``).
        beta, psd_policy, eps: as :func:`shapley.shapley_uncertainty` (defaults: the pipeline's beta and policy,
            :data:`shapley.integrations.common.RUN_DEFAULTS`, and ``shapley.core.psd.DEFAULT_EPS``).
        cache: our backends' entailment cache (False: none; True: the default file; or a path).
    """

    def __init__(
        self,
        entailment: str = "embedding:minilm",
        *,
        beta: float = RUN_DEFAULTS.beta,
        psd_policy: str = RUN_DEFAULTS.psd_policy,
        eps: float = DEFAULT_EPS,
        cache: Any = False,
    ) -> None:
        self.beta, self.psd_policy, self.eps = check_settings(beta, psd_policy, eps)
        from shapley.pipeline.entail.backends import load_backend  # here: it imports torch

        self.backend = load_backend(entailment, cache=cache_option(cache), progress=False)

    def entail_matrices(self, responses: Sequence[str], sampled_responses: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """(n_k, n_k) entailment matrices, answers ``[responses[k], *sampled_responses[k]]``."""
        return [r.entail for r in self.backend.score([("", g) for g in _answer_groups(responses, sampled_responses)])]

    def uncertainty(self, responses: Sequence[str], sampled_responses: Sequence[Sequence[str]]) -> list[float]:
        """Total Shapley uncertainty (nats) per prompt, exactly :func:`shapley.shapley_uncertainty` (``-inf`` for a
        singular kernel)."""
        return [self._total(P) for P in self.entail_matrices(responses, sampled_responses)]

    def evaluate(self, responses: Sequence[str], sampled_responses: Sequence[Sequence[str]]) -> list[float]:
        """Confidence per prompt (higher = more confident): the equivalent pairwise agreement of its n answers
        (:func:`shapley.integrations.common.confidence_from_total`). In [0, 1]; identical answers score exactly
        ``beta`` (0.5 at the default, not 1): :meth:`rescaled` divides by beta.

        Args:
            responses: one response per prompt.
            sampled_responses: the sampled responses of each prompt (at least one each).

        Raises:
            ValueError: as :meth:`entail_matrices`, for answers that are not texts or a prompt without samples.
        """
        matrices = self.entail_matrices(responses, sampled_responses)
        return [confidence_from_total(self._total(P), len(P)) for P in matrices]

    def rescaled(self, confidences: Sequence[float]) -> list[float]:
        """``confidences`` (from :meth:`evaluate`) divided by ``beta``, so that identical answers score 1, the top
        that uqlm's thresholds in [0, 1] expect. The order of the prompts is unchanged; a prompt with an
        inconsistent entailment matrix (module docstring) can exceed 1."""
        return [float(c) / self.beta for c in confidences]

    def _total(self, P: np.ndarray) -> float:
        return shapley_uncertainty(P, self.beta, psd_policy=self.psd_policy, eps=self.eps)


def _answer_groups(responses: Any, sampled_responses: Any) -> list[list[str]]:
    """``[responses[k], *sampled_responses[k]]`` per prompt k, each checked by
    :func:`shapley.core.validate.texts` (a prompt with no sampled response is refused, naming it)."""
    responses = validate.texts(responses, "responses")
    if isinstance(sampled_responses, str) or not isinstance(sampled_responses, Sequence):
        raise ValueError(
            f"sampled_responses must be a list (one per prompt) of lists of strings; got {sampled_responses!r}"
        )
    if len(responses) != len(sampled_responses):
        raise ValueError(f"{len(responses)} responses but {len(sampled_responses)} lists of sampled responses")
    return [
        [r, *validate.texts(samples, f"sampled_responses[{k}] (prompt {k})")]
        for k, (r, samples) in enumerate(zip(responses, sampled_responses, strict=True))
    ]


def add_to_result(result: Any, scorer: ShapleyScorer, name: str = "shapley") -> Any:
    """Add the Shapley confidence to a uqlm ``UQResult`` (from ``BlackBoxUQ.score`` or ``generate_and_score``) as
    the column ``name`` of its score table, beside uqlm's own scorers: ``result.to_df()`` then shows it, and
    ``result.metadata["scorers"]`` lists it. Reads the result's ``responses`` and ``sampled_responses``; returns
    the same (modified) result. ``ValueError`` when the result lacks them, when ``name`` is not a non-empty ``str``
    or when ``result.to_df()`` would then show two columns of one name (uqlm's ``to_df`` drops a final "s":
    ``"exact_matchs"`` would show as uqlm's ``exact_match``, ``"response"`` as ``responses``)."""
    data = getattr(result, "data", None)
    if not isinstance(data, dict) or "responses" not in data or "sampled_responses" not in data:
        raise ValueError("result must be a uqlm UQResult whose data holds 'responses' and 'sampled_responses'")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty str; got {type(name).__name__} {name!r}")
    if name in data:
        raise ValueError(f"the result already has a column {name!r}; choose another name")
    data[name] = [0.0] * len(data["responses"])  # a placeholder, to see the table to_df() would show, before scoring
    shown_once = result.to_df().columns.is_unique
    del data[name]
    if not shown_once:
        raise ValueError(f"the column {name!r} would show as an existing column in result.to_df(); choose another name")
    data[name] = scorer.evaluate(data["responses"], data["sampled_responses"])
    whole = getattr(result, "result_dict", None)
    if isinstance(whole, dict) and isinstance(whole.get("data"), dict) and whole["data"] is not data:
        whole["data"][name] = data[name]
    meta = getattr(result, "metadata", None)
    if isinstance(meta, dict) and isinstance(meta.get("scorers"), list):
        meta["scorers"] = [*meta["scorers"], name]
    return result
