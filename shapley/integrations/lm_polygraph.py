"""Shapley uncertainty as an LM-Polygraph estimator (extra ``lm-polygraph``; environment ``.venv-lm-polygraph``).

* :class:`ShapleyUncertainty`: an ``lm_polygraph.estimators.Estimator``. Per question b it returns the total
  Shapley uncertainty in nats of one (n, n) entailment matrix E[b], entry [i, j] = P(sample i entails sample j):
  ``shapley.shapley_uncertainty(E[b], beta, psd_policy=..., eps=...)`` (higher = more uncertain, as LM-Polygraph
  expects); a singular kernel's ``-inf`` becomes the singular total (:mod:`shapley.integrations.common`), so that
  PRR and AUROC stay defined. The per-answer Shapley values are :meth:`ShapleyUncertainty.shapley_values`. A batch
  may be ragged (a list of (n_b, n_b) matrices).
* The judge is explicit: ``judge="lm_polygraph"`` (the default) reads ``stats["semantic_matrix_entail"]``, the
  matrix of LM-Polygraph's own NLI calculator (DeBERTa); ``judge="shapley"`` reads
  ``stats["shapley_semantic_matrix_entail"]`` and ``stats["shapley_entailment_judge"]``, which only
  :class:`ShapleyEntailmentCalculator` provides. LM-Polygraph picks a calculator for each statistic by its key, so
  the choice is the same whatever the order of the estimators, and a run without our calculator stops before any
  model call ("Cant find stat calculator for: shapley_semantic_matrix_entail") instead of falling back to DeBERTa.
* :func:`load_estimator`: what LM-Polygraph's ``FactoryEstimator`` calls for a module name, so that a
  ``polygraph_eval`` config can name ``shapley.integrations.lm_polygraph`` with ``cfg: {beta: 0.5, judge: shapley}``.
* :class:`ShapleyEntailmentCalculator`: a stat calculator that fills ``shapley_semantic_matrix_entail`` from one of
  our entailment backends (``embedding:minilm``, ``hf:<id|path>``, ``llm:<...>``), the same matrices as our
  pipeline, and ``shapley_entailment_judge`` (per question, the backend's name). It writes none of LM-Polygraph's
  statistics: LM-Polygraph's estimators (SemanticEntropy, DegMat, ...) keep reading LM-Polygraph's own
  calculators, one judge for entailment and contradiction, whether or not ours is built. (It used to fill
  ``semantic_matrix_entail``; then the estimators' order decided which judge each estimator read.) To run one of
  LM-Polygraph's entailment-only estimators on our matrices, wrap it: :class:`OnShapleyMatrices`. In Python,
  :func:`stat_calculator_container` registers the calculator; in a ``polygraph_eval`` configuration, an entry of
  ``stat_calculators``::

      - name: ShapleyEntailmentCalculator
        builder: shapley.integrations.lm_polygraph   # LM-Polygraph calls its load_stat_calculator(cfg, environment)
        cfg: {entailment: "embedding:minilm", cache: false, with_question: false}
        stats: [shapley_semantic_matrix_entail, shapley_entailment_judge]
        dependencies: [sample_texts]

  ``examples/lm_polygraph/polygraph_eval_shapley.yaml`` is a complete configuration (estimators, this entry, a local
  model and a local .csv of questions), which ``tests_integrations/test_polygraph_eval.py`` runs through
  ``polygraph_eval`` offline.

Usage (in ``.venv-lm-polygraph``)::

    from shapley.integrations.lm_polygraph import ShapleyUncertainty
    estimator = ShapleyUncertainty(beta=0.5)           # str(estimator) == "Shap_beta0.5_nearest"
    ue = estimator({"semantic_matrix_entail": E})      # E: (batch, n, n) -> (batch,) nats
    ours = ShapleyUncertainty(beta=0.5, judge="shapley")  # reads ShapleyEntailmentCalculator's matrices
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
"""LM-Polygraph's entailment statistic (its ``SemanticMatrixCalculator``, DeBERTa by default)."""
OUR_STAT = "shapley_semantic_matrix_entail"
"""The entailment statistic of :class:`ShapleyEntailmentCalculator` (never written under :data:`STAT`)."""
JUDGE_STAT = "shapley_entailment_judge"
"""Per question, the name of the backend that produced :data:`OUR_STAT` (e.g. ``embedding:all-MiniLM-L6-v2``)."""
JUDGES = {"lm_polygraph": STAT, "shapley": OUR_STAT}
"""The estimator's ``judge`` options and the statistic each reads."""
SHOWN_CHARS = 80
"""Characters of a question or prompt quoted in a refusal."""


def entail_matrices(stats: Mapping[str, Any], key: str = STAT) -> list[np.ndarray]:
    """The (n_b, n_b) float64 matrices of ``stats[key]``: a (batch, n, n) array or a sequence of square matrices
    (ragged batches), each checked by :func:`shapley.integrations.common.entailment_matrix` (kind before any
    conversion, then entries in [0, 1]). For ``key=OUR_STAT``, ``stats[JUDGE_STAT]`` must name one judge per
    question. ``ValueError`` naming the stat, and the question's batch index when one matrix is bad."""
    if key not in stats:
        hint = (
            "register ShapleyEntailmentCalculator (stat_calculator_container, or its polygraph_eval entry)"
            if key == OUR_STAT
            else "add a semantic matrix calculator"
        )
        if key == STAT and OUR_STAT in stats:
            hint = f"ShapleyEntailmentCalculator provides {OUR_STAT!r}: read it with judge='shapley'"
        raise ValueError(f"stats has no {key!r} (keys: {sorted(stats)}); {hint}")
    raw = stats[key]
    rows = list(raw) if isinstance(raw, np.ndarray) and raw.ndim == 3 else raw
    if isinstance(rows, np.ndarray) or not isinstance(rows, Sequence):
        raise ValueError(f"stats[{key!r}] must be a (batch, n, n) array or a list of (n, n) arrays")
    if key == OUR_STAT:
        judges = stats.get(JUDGE_STAT)
        if not isinstance(judges, Sequence) or isinstance(judges, str) or len(judges) != len(rows):
            raise ValueError(
                f"stats[{JUDGE_STAT!r}] must name the judge of each of the {len(rows)} questions of "
                f"stats[{key!r}]; got {judges!r:.{SHOWN_CHARS}}"
            )
        for b, judge in enumerate(judges):
            validate.text(judge, f"stats[{JUDGE_STAT!r}][{b}] (question {b})")
    return [entailment_matrix(m, f"stats[{key!r}][{b}] (question {b})") for b, m in enumerate(rows)]


def _per_question(stats: Mapping[str, Any], compute: Callable[[np.ndarray], Any], key: str) -> list[Any]:
    """``compute(P)`` for each question's matrix P of ``stats[key]``; a ``ValueError`` of the core is raised again
    naming the question's batch index."""
    out = []
    for b, P in enumerate(entail_matrices(stats, key)):
        try:
            out.append(compute(P))
        except ValueError as exc:
            raise ValueError(f"stats[{key!r}][{b}] (question {b}): {exc}") from exc
    return out


class ShapleyUncertainty(_Estimator):
    """Total Shapley uncertainty (nats) per question, from the entailment matrices of the judge it names.

    Args:
        beta: kernel scale in (0, 1] (the paper's 0.5).
        psd_policy: what to do with an indefinite kernel (``shapley.PSD_POLICIES``); by default the pipeline's
            (:data:`shapley.integrations.common.RUN_DEFAULTS`). ``"raise"`` stops the run at the first indefinite one.
        eps: eigenvalue floor of the PSD repairs and of the singular total, ``0 < eps < 1``.
        judge: whose matrices it reads. ``"lm_polygraph"`` (default): ``semantic_matrix_entail``, which LM-Polygraph
            fills with its own NLI calculator (our calculator never writes it). ``"shapley"``:
            ``shapley_semantic_matrix_entail`` and ``shapley_entailment_judge`` of
            :class:`ShapleyEntailmentCalculator`; a run that has not registered it stops in LM-Polygraph's
            dependency resolution, and a ``stats`` without them raises ``ValueError`` naming the missing key.

    ``str(estimator)`` (LM-Polygraph's unique name) carries beta and the policy, e.g. ``Shap_beta0.5_nearest``,
    and ``_shapley_calculator`` for ``judge="shapley"``, so that both judges can be estimated in one run.
    """

    def __init__(
        self,
        beta: float = RUN_DEFAULTS.beta,
        psd_policy: str = RUN_DEFAULTS.psd_policy,
        eps: float = DEFAULT_EPS,
        judge: str = "lm_polygraph",
    ):
        self.beta, self.psd_policy, self.eps = check_settings(beta, psd_policy, eps)
        if not isinstance(judge, str) or judge not in JUDGES:
            raise ValueError(f"judge must be one of {sorted(JUDGES)}; got {judge!r}")
        self.judge, self.stat = judge, JUDGES[judge]
        super().__init__([OUR_STAT, JUDGE_STAT] if judge == "shapley" else [STAT], "sequence")

    def __str__(self) -> str:
        eps = "" if self.eps == DEFAULT_EPS else f"_eps{self.eps:g}"
        ours = "_shapley_calculator" if self.judge == "shapley" else ""
        return f"Shap_beta{self.beta:g}_{self.psd_policy}{eps}{ours}"

    def __call__(self, stats: Mapping[str, Any]) -> np.ndarray:
        """(batch,) float64 totals in nats; higher = more uncertain; never ``-inf`` or NaN."""
        totals = _per_question(stats, lambda P: defined_total(P, self.beta, self.psd_policy, self.eps), self.stat)
        return np.array(totals, dtype=np.float64)

    def shapley_values(self, stats: Mapping[str, Any]) -> list[np.ndarray]:
        """Per-answer Shapley values (nats) of each question, ``(n_b,)`` each, summing to the total where it is
        finite: ``shapley.shapley_values(R)`` (up to ``shapley.EXACT_MAX_N`` answers); for a singular kernel the
        core's ``-inf`` entries or its ``ValueError``, naming the question."""
        return _per_question(
            stats,
            lambda P: entropy.shapley_values(
                kernel_matrix(correlation_matrix(P), self.beta), psd_policy=self.psd_policy, eps=self.eps
            ),
            self.stat,
        )


def _from_cfg(cls: Any, cfg: dict[str, Any], options: tuple[str, ...]) -> Any:
    """``cls(**cfg)`` for one of LM-Polygraph's factories; ``ValueError`` naming the keys that are not ``options``."""
    unknown = sorted(set(cfg) - set(options))
    if unknown:
        raise ValueError(f"unknown {cls.__name__} option(s) {unknown}; use {', '.join(options)}")
    return cls(**cfg)


def load_estimator(cfg: Mapping[str, Any] | None = None) -> ShapleyUncertainty:
    """The estimator for LM-Polygraph's ``FactoryEstimator``: ``cfg`` may set ``beta``, ``psd_policy``, ``eps``
    and ``judge``; other keys raise ``ValueError`` naming them."""
    return _from_cfg(ShapleyUncertainty, dict(cfg or {}), ("beta", "psd_policy", "eps", "judge"))


class OnShapleyMatrices(_Estimator):
    """One of LM-Polygraph's entailment-only estimators (e.g. ``DegMat()``, ``EigValLaplacian()``,
    ``Eccentricity()``, whose only NLI statistic is ``semantic_matrix_entail``) run on
    :class:`ShapleyEntailmentCalculator`'s matrices: it reads ``shapley_semantic_matrix_entail`` and
    ``shapley_entailment_judge`` and hands the peer ``semantic_matrix_entail`` = our (batch, n, n) matrices.
    ``ValueError`` at construction for a peer that reads any other NLI statistic (contradiction, classes, greedy
    matrices: those would come from another judge), naming it; at a call, for a ragged batch (LM-Polygraph's
    estimators index a stacked array), naming the question. Its name is the peer's with ``_shapley_calculator``."""

    def __init__(self, peer: Any) -> None:
        deps = list(peer.stats_dependencies)
        other = [d for d in deps if d != STAT and any(w in d.lower() for w in ("semantic", "entail", "contra", "nli"))]
        if STAT not in deps or other:
            raise ValueError(
                f"{peer} reads {deps}: OnShapleyMatrices takes an estimator whose only NLI statistic is {STAT!r}"
            )
        self.peer = peer
        super().__init__([OUR_STAT, JUDGE_STAT] + [d for d in deps if d != STAT], peer.level)

    def __str__(self) -> str:
        return f"{self.peer}_shapley_calculator"

    def __call__(self, stats: Mapping[str, Any]) -> np.ndarray:
        mats = entail_matrices(stats, OUR_STAT)
        shapes = [m.shape for m in mats]
        for b, shape in enumerate(shapes):
            if shape != shapes[0]:
                raise ValueError(
                    f"stats[{OUR_STAT!r}][{b}] (question {b}) is {shape[0]} x {shape[1]}, question 0 "
                    f"{shapes[0][0]} x {shapes[0][1]}: {self.peer} needs one stacked (batch, n, n) array"
                )
        return self.peer({**stats, STAT: np.stack(mats) if mats else np.zeros((0, 0, 0))})


class ShapleyEntailmentCalculator(_StatCalculator):
    """LM-Polygraph stat calculator: ``shapley_semantic_matrix_entail`` from ``sample_texts`` with one of our
    entailment backends (the matrices our pipeline computes), and ``shapley_entailment_judge``, the backend's name
    per question (:meth:`meta_info`). :class:`ShapleyUncertainty` reads them with ``judge="shapley"``. It writes
    none of LM-Polygraph's statistics, so LM-Polygraph's estimators read LM-Polygraph's own calculators whatever
    the order of estimators (module docstring: a ``polygraph_eval`` entry); :class:`OnShapleyMatrices` runs an
    entailment-only one of them on ours.

    Args:
        entailment: our backend spec: ``"embedding:minilm"`` (packaged all-MiniLM-L6-v2, offline),
            ``"hf:<id|path>"`` (e.g. ``hf:microsoft/deberta-large-mnli``, the paper's), ``"llm:<...>"``.
        cache: our sqlite entailment cache (False: none; True: the default file; or a path).
        with_question: score ``f"{question} {answer}"`` (the batch's input texts) instead of the bare answers.
        backend: an already built backend (then ``entailment`` and ``cache`` are not used).

    ``cache`` and ``with_question`` are checked before anything is built (``"false"`` from a config file is
    refused, not read as true); each call's inputs before any is scored (each question a ``str``, its samples a
    non-empty list of ``str``: :func:`shapley.core.validate.texts`), ``ValueError`` naming the question.

    Output: ``shapley_semantic_matrix_entail``: (batch, n, n) float64 ``P(s_i => s_j)`` (diagonal 1) when every
    input has the same number of samples, else a list of (n_b, n_b) arrays (which :class:`ShapleyUncertainty`
    reads); ``shapley_entailment_judge``: a list of the backend's name, one per question.
    """

    @staticmethod
    def meta_info() -> tuple[list[str], list[str]]:
        """``(["shapley_semantic_matrix_entail", "shapley_entailment_judge"], ["sample_texts"])``: the statistics
        it provides and those it reads, the ``stats`` and ``dependencies`` of its ``polygraph_eval`` entry."""
        return [OUR_STAT, JUDGE_STAT], ["sample_texts"]

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
        return {OUR_STAT: np.stack(mats) if same and mats else mats, JUDGE_STAT: [self.backend.name] * len(mats)}


def load_stat_calculator(cfg: Mapping[str, Any] | None = None, environment: Any = None) -> ShapleyEntailmentCalculator:
    """What LM-Polygraph's ``FactoryStatCalculator`` calls for a builder module: ``cfg`` may set ``entailment``,
    ``cache`` and ``with_question`` (an ``obj`` key, which LM-Polygraph's configs carry, is ignored)."""
    cfg = {k: v for k, v in dict(cfg or {}).items() if k != "obj"}
    return _from_cfg(ShapleyEntailmentCalculator, cfg, ("entailment", "cache", "with_question"))


def stat_calculator_container(entailment: str = "embedding:minilm", **cfg: Any) -> Any:
    """A ``StatCalculatorContainer`` for UEManager's ``available_stat_calculators``, beside LM-Polygraph's defaults
    (``register_default_stat_calculators``), in any position: its statistics (``shapley_semantic_matrix_entail``,
    ``shapley_entailment_judge``) are ours alone, and it replaces none of LM-Polygraph's. A ``polygraph_eval``
    configuration cannot call this; it writes the same container as an entry (module docstring)."""
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
