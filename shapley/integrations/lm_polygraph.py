"""Shapley uncertainty as an LM-Polygraph estimator (extra ``lm-polygraph``; environment ``.venv-lm-polygraph``).

* :class:`ShapleyUncertainty`: an ``lm_polygraph.estimators.Estimator`` on ``stats["semantic_matrix_entail"]``
  (batch, n, n), entry [b, i, j] = P(sample i entails sample j). Per question b it returns the total Shapley
  uncertainty in nats, ``shapley.shapley_uncertainty(E[b], beta, psd_policy=..., eps=...)`` (higher = more
  uncertain, as LM-Polygraph expects); a singular kernel's ``-inf`` becomes the singular total
  (:mod:`shapley.integrations.common`), so that PRR and AUROC stay defined. The per-answer Shapley values are
  :meth:`ShapleyUncertainty.shapley_values`. A batch may be ragged (a list of (n_b, n_b) matrices).
* :func:`load_estimator`: what LM-Polygraph's ``FactoryEstimator`` calls for a module name, so that a
  ``polygraph_eval`` config can name ``shapley.integrations.lm_polygraph`` with ``cfg: {beta: 0.5}``.
* :class:`ShapleyEntailmentCalculator`: a stat calculator that fills ``semantic_matrix_entail`` from one of our
  entailment backends (``embedding:minilm``, ``hf:<id|path>``, ``llm:<...>``), the same matrices as our pipeline.
  It provides that one statistic only (no ``semantic_matrix_contra``, ``semantic_classes_entail`` or greedy
  matrices): estimators that read others (SemanticEntropy, NumSemSets, KernelLanguageEntropy, ...) still build
  LM-Polygraph's DeBERTa calculators, which need ``microsoft/deberta-large-mnli`` from the hub; offline they stop the
  run. In Python, :func:`stat_calculator_container` registers it; in a ``polygraph_eval`` configuration, an entry of
  ``stat_calculators`` after ``auto``::

      - name: ShapleyEntailmentCalculator
        builder: shapley.integrations.lm_polygraph   # LM-Polygraph calls its load_stat_calculator(cfg, environment)
        cfg: {entailment: "embedding:minilm", cache: false, with_question: false}
        stats: [semantic_matrix_entail]
        dependencies: [sample_texts]

  ``examples/lm_polygraph/polygraph_eval_shapley.yaml`` is a complete configuration (estimators, this entry, a local
  model and a local .csv of questions), which ``tests_integrations/test_polygraph_eval.py`` runs through
  ``polygraph_eval`` offline.

Usage (in ``.venv-lm-polygraph``)::

    from shapley.integrations.lm_polygraph import ShapleyUncertainty
    estimator = ShapleyUncertainty(beta=0.5)           # str(estimator) == "Shap_beta0.5_nearest"
    ue = estimator({"semantic_matrix_entail": E})      # E: (batch, n, n) -> (batch,) nats
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from shapley.core import entropy, validate
from shapley.core.kernel import correlation_matrix, kernel_matrix
from shapley.core.psd import DEFAULT_EPS
from shapley.integrations.common import (
    RUN_DEFAULTS,
    cache_option,
    check_settings,
    defined_total,
    entailment_matrix,
)

EXTRA = "lm-polygraph"
"""The extra (and ``.venv-lm-polygraph``, the environment of ``make integrations``) that installs LM-Polygraph."""


def _peer(module: str, name: str, what: str) -> Any:
    """LM-Polygraph's ``module.name``; without LM-Polygraph (outside its environment: this module must still
    import there, for the doctests and layer checks), a stand-in whose construction raises ``ImportError``
    naming ``what`` needs it and the environment that provides it."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        pass

    class Missing:
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            raise ImportError(
                f"{what} needs the {EXTRA!r} extra: `make integrations` builds .venv-{EXTRA} "
                f"(or pip install -e '.[{EXTRA}]' with constraints-{EXTRA}.txt)"
            )

    return Missing


_Estimator: Any = _peer("lm_polygraph.estimators.estimator", "Estimator", "ShapleyUncertainty")
_StatCalculator: Any = _peer("lm_polygraph.stat_calculators.stat_calculator", "StatCalculator", "the calculator")
_BlackboxModel: Any = _peer("lm_polygraph.utils.model", "BlackboxModel", "CannedBlackboxModel")
_Container: Any = _peer("lm_polygraph.utils.factory_stat_calculator", "StatCalculatorContainer", "the container")

STAT = "semantic_matrix_entail"
SHOWN_CHARS = 80
"""Characters of a question or prompt quoted in a refusal."""


def entail_matrices(stats: Mapping[str, Any]) -> list[np.ndarray]:
    """The (n_b, n_b) float64 matrices of ``stats["semantic_matrix_entail"]``: a (batch, n, n) array or a
    sequence of square matrices (ragged batches), each checked by
    :func:`shapley.integrations.common.entailment_matrix` (kind before any conversion, then entries in [0, 1]).
    ``ValueError`` naming the stat, and the question's batch index when one matrix is bad."""
    if STAT not in stats:
        raise ValueError(f"stats has no {STAT!r} (keys: {sorted(stats)}); add a semantic matrix calculator")
    raw = stats[STAT]
    rows = list(raw) if isinstance(raw, np.ndarray) and raw.ndim == 3 else raw
    if isinstance(rows, np.ndarray) or not isinstance(rows, Sequence):
        raise ValueError(f"stats[{STAT!r}] must be a (batch, n, n) array or a list of (n, n) arrays")
    return [entailment_matrix(m, f"stats[{STAT!r}][{b}] (question {b})") for b, m in enumerate(rows)]


def _per_question(stats: Mapping[str, Any], compute: Callable[[np.ndarray], Any]) -> list[Any]:
    """``compute(P)`` for each question's matrix P; a ``ValueError`` of the core is raised again naming the
    question's batch index."""
    out = []
    for b, P in enumerate(entail_matrices(stats)):
        try:
            out.append(compute(P))
        except ValueError as exc:
            raise ValueError(f"stats[{STAT!r}][{b}] (question {b}): {exc}") from exc
    return out


class ShapleyUncertainty(_Estimator):
    """Total Shapley uncertainty (nats) per question, from ``semantic_matrix_entail``.

    Args:
        beta: kernel scale in (0, 1] (the paper's 0.5).
        psd_policy: what to do with an indefinite kernel (``shapley.PSD_POLICIES``); by default the pipeline's
            (:data:`shapley.integrations.common.RUN_DEFAULTS`). ``"raise"`` stops the run at the first indefinite one.
        eps: eigenvalue floor of the PSD repairs and of the singular total, ``0 < eps < 1``.

    ``str(estimator)`` (LM-Polygraph's unique name) carries beta and the policy, e.g. ``Shap_beta0.5_nearest``.
    """

    def __init__(
        self, beta: float = RUN_DEFAULTS.beta, psd_policy: str = RUN_DEFAULTS.psd_policy, eps: float = DEFAULT_EPS
    ):
        self.beta, self.psd_policy, self.eps = check_settings(beta, psd_policy, eps)
        super().__init__([STAT], "sequence")

    def __str__(self) -> str:
        eps = "" if self.eps == DEFAULT_EPS else f"_eps{self.eps:g}"
        return f"Shap_beta{self.beta:g}_{self.psd_policy}{eps}"

    def __call__(self, stats: Mapping[str, Any]) -> np.ndarray:
        """(batch,) float64 totals in nats; higher = more uncertain; never ``-inf`` or NaN."""
        totals = _per_question(stats, lambda P: defined_total(P, self.beta, self.psd_policy, self.eps))
        return np.array(totals, dtype=np.float64)

    def shapley_values(self, stats: Mapping[str, Any], method: Any = "exact", **options: Any) -> list[np.ndarray]:
        """Per-answer Shapley values (nats) of each question, ``(n_b,)`` each, summing to the total where it is
        finite: ``shapley.shapley_values(R, method, **options)`` (``"exact"`` up to ``shapley.EXACT_MAX_N``
        answers; ``"monte_carlo"`` beyond, with ``n_permutations`` and ``seed`` in ``options``); for a singular
        kernel the core's ``-inf`` entries or its ``ValueError``, naming the question."""
        return _per_question(
            stats,
            lambda P: entropy.shapley_values(
                kernel_matrix(correlation_matrix(P), self.beta),
                method,
                psd_policy=self.psd_policy,
                eps=self.eps,
                **options,
            ),
        )


def _from_cfg(cls: Any, cfg: dict[str, Any], options: tuple[str, ...]) -> Any:
    """``cls(**cfg)`` for one of LM-Polygraph's factories; ``ValueError`` naming the keys that are not ``options``."""
    unknown = sorted(set(cfg) - set(options))
    if unknown:
        raise ValueError(f"unknown {cls.__name__} option(s) {unknown}; use {', '.join(options)}")
    return cls(**cfg)


def load_estimator(cfg: Mapping[str, Any] | None = None) -> ShapleyUncertainty:
    """The estimator for LM-Polygraph's ``FactoryEstimator``: ``cfg`` may set ``beta``, ``psd_policy`` and
    ``eps``; other keys raise ``ValueError`` naming them."""
    return _from_cfg(ShapleyUncertainty, dict(cfg or {}), ("beta", "psd_policy", "eps"))


class ShapleyEntailmentCalculator(_StatCalculator):
    """LM-Polygraph stat calculator: ``semantic_matrix_entail`` from ``sample_texts`` with one of our entailment
    backends, so that LM-Polygraph's estimators see the matrices our pipeline computes. It provides that statistic
    only (:meth:`meta_info`); the statistics it does not provide still come from LM-Polygraph's own calculators
    (module docstring: a ``polygraph_eval`` entry, and which estimators then still need DeBERTa).

    Args:
        entailment: our backend spec: ``"embedding:minilm"`` (packaged all-MiniLM-L6-v2, offline),
            ``"hf:<id|path>"`` (e.g. ``hf:microsoft/deberta-large-mnli``, the paper's), ``"llm:<...>"``.
        cache: our sqlite entailment cache (False: none; True: the default file; or a path).
        with_question: score ``f"{question} {answer}"`` (the batch's input texts) instead of the bare answers.
        backend: an already built backend (then ``entailment`` and ``cache`` are not used).

    ``cache`` and ``with_question`` are checked before anything is built (``"false"`` from a config file is
    refused, not read as true); each call's inputs before any is scored (each question a ``str``, its samples a
    non-empty list of ``str``: :func:`shapley.core.validate.texts`), ``ValueError`` naming the question.

    Output: (batch, n, n) float64 ``P(s_i => s_j)`` (diagonal 1) when every input has the same number of samples,
    else a list of (n_b, n_b) arrays (which :class:`ShapleyUncertainty` reads; LM-Polygraph's own calculator
    cannot produce ragged batches: it stacks its matrices).
    """

    @staticmethod
    def meta_info() -> tuple[list[str], list[str]]:
        """``(["semantic_matrix_entail"], ["sample_texts"])``: the statistics it provides and those it reads, the
        ``stats`` and ``dependencies`` of its ``polygraph_eval`` entry."""
        return [STAT], ["sample_texts"]

    def __init__(
        self, entailment: str = "embedding:minilm", cache: Any = False, with_question: bool = False, backend: Any = None
    ) -> None:
        super().__init__()
        self.with_question = validate.flag(with_question, "with_question")
        if backend is None:
            from shapley.pipeline.entail.backends import load_backend  # here: it imports torch

            backend = load_backend(entailment, cache=cache_option(cache), progress=False)
        self.backend = backend

    def __str__(self) -> str:
        return f"ShapleyEntailmentCalculator({self.backend.name})"

    def __call__(
        self,
        dependencies: Mapping[str, Any],
        texts: Sequence[str],
        model: Any = None,
        max_new_tokens: int = 100,
        **kwargs: Any,
    ) -> dict[str, Any]:
        samples = dependencies["sample_texts"]
        if len(texts) != len(samples):
            raise ValueError(f"{len(texts)} input texts but {len(samples)} lists of sample_texts")
        items = []
        for b, (q, answers) in enumerate(zip(texts, samples, strict=True)):
            question = validate.text(q, f"texts[{b}] (question {b})")
            items.append(
                (question, validate.texts(answers, f"sample_texts[{b}] (question {b}: {question[:SHOWN_CHARS]!r})"))
            )
        mats = [r.entail for r in self.backend.score(items, with_question=self.with_question)]
        same = len({m.shape for m in mats}) == 1
        return {STAT: np.stack(mats) if same and mats else mats}


def load_stat_calculator(cfg: Mapping[str, Any] | None = None, environment: Any = None) -> ShapleyEntailmentCalculator:
    """What LM-Polygraph's ``FactoryStatCalculator`` calls for a builder module: ``cfg`` may set ``entailment``,
    ``cache`` and ``with_question`` (an ``obj`` key, which LM-Polygraph's configs carry, is ignored)."""
    cfg = {k: v for k, v in dict(cfg or {}).items() if k != "obj"}
    return _from_cfg(ShapleyEntailmentCalculator, cfg, ("entailment", "cache", "with_question"))


def stat_calculator_container(entailment: str = "embedding:minilm", **cfg: Any) -> Any:
    """A ``StatCalculatorContainer`` for UEManager's ``available_stat_calculators``: put it after LM-Polygraph's
    defaults (``register_default_stat_calculators``), where it replaces their ``semantic_matrix_entail`` (and only
    that statistic). A ``polygraph_eval`` configuration cannot call this; it writes the same container as an entry
    (module docstring)."""
    stats, deps = ShapleyEntailmentCalculator.meta_info()
    return _Container(
        name="ShapleyEntailmentCalculator",
        stats=stats,
        dependencies=deps,
        builder=__name__,
        cfg={"entailment": entailment, **cfg},
    )


class CannedBlackboxModel(_BlackboxModel):
    """An LM-Polygraph black-box model that answers from a table instead of generating: ``answers[prompt]`` is the
    list of samples of that prompt; a greedy request (``n=1``) returns ``greedy[prompt]`` (default: the first
    sample), a sampling request with ``n`` returns the first ``n`` samples. For replaying committed generations.
    Prompts and answers are checked as the calculator checks them (``ValueError`` naming the prompt)."""

    def __init__(self, answers: Mapping[str, Sequence[str]], greedy: Mapping[str, str] | None = None) -> None:
        super().__init__(model_path="canned")
        prompts = [validate.text(k, f"answers key {k!r}") for k in answers]
        self.answers = {k: validate.texts(answers[k], f"answers[{k[:SHOWN_CHARS]!r}]") for k in prompts}
        chosen = {
            validate.text(k, f"greedy key {k!r}"): validate.text(v, f"greedy[{k!r}]") for k, v in (greedy or {}).items()
        }
        self.greedy = {k: v[0] for k, v in self.answers.items()} | chosen

    def generate_texts(self, input_texts: Sequence[str], n: int = 1, **kwargs: Any) -> list[Any]:
        missing = [t for t in input_texts if t not in self.answers]
        if missing:
            raise ValueError(f"no canned answers for {len(missing)} prompt(s), e.g. {missing[0][:SHOWN_CHARS]!r}")
        if n == 1 and not kwargs.get("sampling"):
            return [self.greedy[t] for t in input_texts]
        return [self.answers[t][:n] for t in input_texts]
