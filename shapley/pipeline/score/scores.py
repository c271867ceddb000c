"""Every uncertainty method on every question: the scoring stage of the pipeline.

A method is a :class:`MethodSpec` in :data:`METHODS` (name -> spec). Its ``needs`` name the per-question
inputs it reads; a method whose inputs are missing for a question is *skipped* for that question, with
the reason recorded (never a crash, never a silent 0). Every score follows one convention: **higher =
more uncertain** (nats for the entropies).

Inputs (:class:`ScoreInputs`, one question):

==================  ========================================================================
``samples``         n sampled answers (``list[str]``, n >= 1; empty strings are kept as answers)
``entail``          (n, n) entailment probabilities, ``entail[i, j] = P(s_i => s_j)``
``contradict``      (n, n) contradiction probabilities (optional; only the clustering rule uses it)
``sample_logprobs`` per-sample token log-probabilities (nats), one list per sample
``answer_logprobs`` token log-probabilities of the judged (most likely) answer
``answer_entropies`` next-token entropies (nats) along the judged answer
``p_true``          the model's probability that the judged answer is true
``a4c_text``        the model's raw ask-for-confidence reply
``embeddings``      one embedding vector of the judged answer (for ``ER``)
==================  ========================================================================

Methods (short names of the paper's tables; Table 3's ``SU`` is :data:`"SE"` here):

* ``Shap``: the paper's Shapley uncertainty = ``shapley.shapley_uncertainty(P, beta)`` (one log-det by
  the efficiency identity). Real entailment matrices can make R non-PSD, so the pipeline's default
  ``psd_policy`` (:class:`shapley.pipeline.config.ScoringSettings`) is ``"nearest"`` (Higham's nearest
  correlation matrix); each
  question records ``shap_psd_repaired`` and ``shap_min_eig`` (minimum eigenvalue of R before repair) in
  its diagnostics, so repaired questions can be counted or excluded later.
* ``SE`` semantic entropy (Kuhn et al.; likelihood of a sample = exp(sum of its token log-probs)),
  ``DSE`` discrete semantic entropy, ``NumSet`` number of semantic sets, ``NE`` predictive (naive)
  entropy, ``LNE`` length-normalised predictive entropy, ``LexSim`` lexical similarity,
  ``EigV``/``Deg``/``Ecc`` (Lin et al.) and ``KLE`` on ``W = (P + P.T) / 2``, ``MaxL``/``AvgL``/
  ``MaxE``/``AvgE`` (SelfCheckGPT-style, from the judged answer's tokens), ``P(T)`` = 1 - p(True),
  ``A4C`` verbalised confidence.
* ``ER`` embedding regression: needs correctness labels of *other* questions, so it is not a per-question
  method; :func:`embedding_regression_scores` fits it on a seeded half of the questions and scores the
  other half (NaN on the training half) at the metrics stage.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import baselines
from shapley.core.baselines.entropies import CLUSTER_THRESHOLD
from shapley.core.entropy import gaussian_entropy
from shapley.core.kernel import correlation_matrix, kernel_matrix
from shapley.core.psd import is_psd, min_eigenvalue

T = TypeVar("T")

SE_AGGREGATIONS = ("sum", "mean")
SE_AGGREGATION_DEFAULT = "mean"
"""How ``SE`` aggregates a sample's token log-probs into its log-likelihood unless told otherwise."""


# --------------------------------------------------------------------------------------------------
# Inputs


@dataclass
class ScoreInputs:
    """Everything the methods may read for one question (missing inputs are ``None``), as stored: the methods
    check and convert what they read (:mod:`shapley.core.validate`)."""

    id: str = ""
    samples: list[str] | None = None
    entail: Any = None  # (n, n) probabilities: an array, or nested lists as stored
    contradict: Any = None
    sample_logprobs: list[list[float]] | None = None
    answer_logprobs: list[float] | None = None
    answer_entropies: list[float] | None = None
    p_true: float | None = None
    a4c_text: str | None = None
    embeddings: ArrayLike | None = None

    @classmethod
    def from_generation(
        cls, gen: Any, entail: Any, contradict: Any, embeddings: ArrayLike | None = None
    ) -> ScoreInputs:
        """From a :class:`~shapley.pipeline.rundir.records.Generation` and its stored entailment matrices.

        Empty per-token lists count as missing (a generator that did not record log-probs).
        """
        slp = gen.sample_token_logprobs if len(gen.sample_token_logprobs) == len(gen.samples) else None
        return cls(
            id=str(gen.id),
            samples=list(gen.samples),
            entail=entail,
            contradict=contradict,
            sample_logprobs=slp,
            answer_logprobs=list(gen.answer_token_logprobs) or None,
            answer_entropies=list(gen.answer_token_entropies) or None,
            p_true=gen.p_true,
            a4c_text=gen.a4c_text,
            embeddings=embeddings,
        )

    def has(self, name: str) -> bool:
        """Whether input ``name`` is available (non-empty)."""
        v = getattr(self, name)
        if v is None:
            return False
        if name in ("samples", "answer_logprobs", "answer_entropies"):
            return len(v) > 0
        if name == "sample_logprobs":
            return len(v) > 0 and all(len(t) > 0 for t in v)
        if name == "p_true":
            return not (isinstance(v, float) and math.isnan(v))
        return True

    def missing(self, needs: Iterable[str]) -> list[str]:
        """The subset of ``needs`` that is not available."""
        return [k for k in needs if not self.has(k)]


class MethodSettings(Protocol):
    """What the methods read of the run's scoring settings: a
    :class:`shapley.pipeline.config.ScoringSettings`, where each is declared (default, choices) and checked.

    ``beta``: the kernel scale of ``Shap``; ``psd_policy``: what ``Shap`` does with a non-PSD R; ``cluster_rule``:
    semantic clustering for SE, DSE, NumSet; ``se_aggregation``: a sample's log-likelihood for SE (``"mean"`` or
    ``"sum"`` of its token log-probs).
    """

    @property
    def beta(self) -> float: ...
    @property
    def psd_policy(self) -> str: ...
    @property
    def cluster_rule(self) -> str: ...
    @property
    def se_aggregation(self) -> str: ...


def _req(value: T | None) -> T:
    """An input that the method's ``needs`` guarantee to be present (checked before the method runs)."""
    assert value is not None
    return value


@dataclass
class QuestionContext:
    """One question's inputs and the quantities several methods share, each computed once: ``W = (P + P^T) / 2``,
    the kernel matrix ``R`` of the run's beta, the semantic clusters and the samples' log-likelihoods."""

    x: ScoreInputs
    opts: MethodSettings

    @cached_property
    def W(self) -> NDArray[np.float64]:
        """The symmetrised entailment matrix C (paper eq. 4), (n, n)."""
        return np.asarray(correlation_matrix(_req(self.x.entail)))

    @cached_property
    def R(self) -> NDArray[np.float64]:
        """The kernel matrix of the run's beta (paper eq. 5), (n, n); built once per question."""
        return np.asarray(kernel_matrix(self.W, self.opts.beta))

    @cached_property
    def clusters(self) -> NDArray[np.int64]:
        contradict = self.x.contradict if self.opts.cluster_rule == "non_contradiction" else None
        return np.asarray(
            baselines.semantic_clusters(
                self.x.entail,
                contradict,
                rule=cast(Literal["bidirectional", "non_contradiction"], self.opts.cluster_rule),
                threshold=CLUSTER_THRESHOLD,
            )
        )

    @cached_property
    def log_likelihoods(self) -> NDArray[np.float64]:
        """Sequence log-likelihoods (sum of token log-probs), shape (n,)."""
        return np.array([float(np.sum(t)) for t in _req(self.x.sample_logprobs)])

    @cached_property
    def se_log_likelihoods(self) -> NDArray[np.float64]:
        """Log-likelihoods used by ``SE``: sums or per-token means (``se_aggregation``)."""
        if self.opts.se_aggregation == "mean":
            return np.array([float(np.mean(t)) for t in _req(self.x.sample_logprobs)])
        return self.log_likelihoods


# --------------------------------------------------------------------------------------------------
# Method registry


@dataclass(frozen=True)
class MethodSpec:
    """One uncertainty method: ``func(ctx) -> float`` (higher = more uncertain) and the inputs it needs; ``func`` is
    None for a method that is not computed per question (``ER``, at the metrics stage)."""

    name: str
    func: Callable[[QuestionContext], float] | None
    needs: tuple[str, ...]
    description: str


def _shap(c: QuestionContext) -> float:
    """``shapley_uncertainty(P, beta)``: the entropy of N(0, R), one log-det by efficiency."""
    # PSD repairs are recorded in the diagnostics
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        return float(gaussian_entropy(c.R, psd_policy=c.opts.psd_policy))


METHODS: dict[str, MethodSpec] = {
    s.name: s
    for s in (
        MethodSpec("Shap", _shap, ("entail",), "Shapley uncertainty h(N(0, R)), R = kernel(beta) of (P+P^T)/2"),
        MethodSpec(
            "SE",
            lambda c: baselines.semantic_entropy(c.se_log_likelihoods, c.clusters),
            ("samples", "entail", "sample_logprobs"),
            "semantic entropy (Kuhn et al. 2023); sample log-likelihood = "
            f"{SE_AGGREGATION_DEFAULT} of token log-probs"
            + "".join(f", or their {a} (--se-aggregation {a})" for a in SE_AGGREGATIONS if a != SE_AGGREGATION_DEFAULT),
        ),
        MethodSpec(
            "DSE",
            lambda c: baselines.discrete_semantic_entropy(c.clusters),
            ("samples", "entail"),
            "discrete semantic entropy (cluster frequencies)",
        ),
        MethodSpec(
            "NumSet",
            lambda c: baselines.num_semantic_sets(c.clusters),
            ("samples", "entail"),
            "number of semantic sets",
        ),
        MethodSpec(
            "NE",
            lambda c: baselines.predictive_entropy(c.log_likelihoods),
            ("samples", "sample_logprobs"),
            "predictive entropy, -mean over samples of the summed token log-probs (not length-normalised)",
        ),
        MethodSpec(
            "LNE",
            lambda c: baselines.length_normalised_predictive_entropy(_req(c.x.sample_logprobs)),
            ("samples", "sample_logprobs"),
            "length-normalised predictive entropy",
        ),
        MethodSpec(
            "LexSim",
            lambda c: baselines.lexical_similarity(_req(c.x.samples)),
            ("samples",),
            "1 - mean pairwise Rouge-L of the samples",
        ),
        MethodSpec(
            "EigV",
            lambda c: baselines.eigv(c.W),
            ("entail",),
            "sum over the eigenvalues lambda_k of the normalised graph Laplacian of W (the symmetrised entailment "
            "matrix) of max(0, 1 - lambda_k): a soft cluster count",
        ),
        MethodSpec(
            "Deg", lambda c: baselines.degree(c.W), ("entail",), "1 - mean_j(d_j) / n, d_j the degree (row sum) of W"
        ),
        MethodSpec("Ecc", lambda c: baselines.eccentricity(c.W), ("entail",), "eccentricity of the spectral embedding"),
        MethodSpec("KLE", lambda c: baselines.kernel_language_entropy(c.W), ("entail",), "kernel language entropy"),
        MethodSpec(
            "MaxL",
            lambda c: baselines.selfcheck_maxl(_req(c.x.answer_logprobs)),
            ("answer_logprobs",),
            "max over tokens of -log p",
        ),
        MethodSpec(
            "AvgL",
            lambda c: baselines.selfcheck_avgl(_req(c.x.answer_logprobs)),
            ("answer_logprobs",),
            "mean over tokens of -log p",
        ),
        MethodSpec(
            "MaxE",
            lambda c: baselines.selfcheck_maxe(_req(c.x.answer_entropies)),
            ("answer_entropies",),
            "max token entropy",
        ),
        MethodSpec(
            "AvgE",
            lambda c: baselines.selfcheck_avge(_req(c.x.answer_entropies)),
            ("answer_entropies",),
            "mean token entropy",
        ),
        MethodSpec("P(T)", lambda c: baselines.p_true_uncertainty(_req(c.x.p_true)), ("p_true",), "1 - p(True)"),
        MethodSpec(
            "A4C",
            lambda c: _a4c_uncertainty(_req(c.x.a4c_text)),
            ("a4c_text",),
            "1 - verbalised confidence (ask for confidence)",
        ),
    )
}
METHODS["ER"] = MethodSpec(
    "ER",
    None,
    ("embeddings",),
    "embedding regression: logistic regression on answer embeddings, fit on a seeded half of the "
    "questions (computed at the metrics stage: embedding_regression_scores)",
)

DEFAULT_METHODS: tuple[str, ...] = tuple(METHODS)
"""Methods computed when none are named: all of them."""


def resolve_methods(methods: Iterable[str]) -> tuple[str, ...]:
    """Validate method names; ValueError names the unknown ones."""
    out = tuple(methods)
    unknown = [m for m in out if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; known: {list(METHODS)}")
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate method names in {list(out)}")
    return out


def _a4c_uncertainty(text: str) -> float:
    """1 - the verbalised confidence; NaN for a reply with none ("method returned NaN"), and a ValueError with
    the parser's fixed reason for a reply whose number is only partly readable."""
    c, reason = baselines.confidence_reading(text)
    if reason == baselines.verbalised.PARTLY_READ:
        raise ValueError(reason)
    return 1.0 - c


_VALUES = re.compile(r";\s*got\b.*\Z", re.DOTALL)
_INDEX = re.compile(r"\[\d+\]")


def skip_reason(exc: BaseException) -> str:
    """A method's error as a skip reason that aggregates over questions: the message without the values it
    names (the ``; got ...`` tail of every check in :mod:`shapley.core.validate`) and with ``[k]`` for indices.

    Examples:
        >>> skip_reason(ValueError("token_logprobs[3] are log-probabilities and must be <= 0; got max 0.5 (hint)"))
        'error: token_logprobs[k] are log-probabilities and must be <= 0'
    """
    return "error: " + _INDEX.sub("[k]", _VALUES.sub("", str(exc))).strip()


# --------------------------------------------------------------------------------------------------
# Scoring


@dataclass
class QuestionScores:
    """Result for one question: ``scores`` (method -> float; only computed methods), ``skipped``
    (method -> reason) and ``diagnostics`` (e.g. ``shap_psd_repaired``, ``shap_min_eig``, ``n_clusters``)."""

    id: str
    scores: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)


def psd_diagnostics(R: NDArray[np.float64], psd_policy: str) -> dict[str, Any]:
    """Whether the kernel matrix R is PSD and whether ``psd_policy`` would repair it.

    Returns ``{"shap_psd": bool, "shap_psd_repaired": bool, "shap_min_eig": float}``.
    """
    lam = float(min_eigenvalue(R))
    psd = bool(is_psd(R))
    return {"shap_psd": psd, "shap_psd_repaired": (not psd) and psd_policy != "raise", "shap_min_eig": lam}


def score_question(ctx: QuestionContext, *, methods: Iterable[str] = DEFAULT_METHODS) -> QuestionScores:
    """Run every requested per-question method on one question, through its :class:`QuestionContext` (which the
    caller may share, so that R is built once).

    A method is skipped (reason in ``.skipped``) when an input it needs is missing, when it raises a
    ``ValueError``/``ArithmeticError``/``LinAlgError`` (e.g. ``psd_policy="raise"`` on a non-PSD R), or when
    it returns NaN. ``+-inf`` is kept (a valid ranking value, e.g. ``Shap`` of a singular R). ``ER`` is
    never computed here (see :func:`embedding_regression_scores`).
    """
    x = ctx.x
    out = QuestionScores(id=x.id)
    if x.samples is not None:
        out.diagnostics["n_samples"] = len(x.samples)
        out.diagnostics["n_empty_samples"] = sum(1 for s in x.samples if not s.strip())
    names = resolve_methods(methods)
    if x.has("entail") and any("entail" in METHODS[m].needs for m in names):
        try:
            out.diagnostics.update(psd_diagnostics(ctx.R, ctx.opts.psd_policy))
        except (ValueError, np.linalg.LinAlgError) as exc:
            out.diagnostics["shap_error"] = str(exc)
    for name in names:
        spec = METHODS[name]
        if spec.func is None:
            continue
        miss = x.missing(spec.needs)
        if miss:
            out.skipped[name] = "missing input: " + ", ".join(miss)
            continue
        try:
            value = float(spec.func(ctx))
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            out.skipped[name] = skip_reason(exc)
            continue
        if math.isnan(value):
            out.skipped[name] = "method returned NaN"
            continue
        out.scores[name] = value
    if "clusters" in ctx.__dict__:
        out.diagnostics["n_clusters"] = int(len(np.unique(ctx.clusters)))
    return out


# --------------------------------------------------------------------------------------------------
# Beta sweep (Table 5) and embedding regression


def beta_sweep(P: ArrayLike, betas: Sequence[float], *, psd_policy: str) -> list[dict[str, Any]]:
    """``Shap`` of one entailment matrix for each beta, recording whether R(beta) is PSD.

    Returns one dict per beta: ``beta``, ``Shap`` (NaN when ``psd_policy="raise"`` and R is not PSD),
    ``psd`` (R(beta) PSD before any repair), ``min_eig`` (its minimum eigenvalue) and ``repaired``.
    """
    C = correlation_matrix(P)
    out = []
    for b in betas:
        R = kernel_matrix(C, float(b))
        d = psd_diagnostics(R, psd_policy)
        try:
            with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
                value = float(gaussian_entropy(R, psd_policy=psd_policy))
        except ValueError:
            value = math.nan
        out.append(
            {
                "beta": float(b),
                "Shap": value,
                "psd": d["shap_psd"],
                "min_eig": d["shap_min_eig"],
                "repaired": d["shap_psd_repaired"],
            }
        )
    return out


def embedding_regression_scores(embeddings: ArrayLike, correct: ArrayLike, *, seed: int = 0) -> NDArray[np.float64]:
    """``ER`` uncertainty for every question: fit on a seeded random split of the questions, score the rest.

    The split is ``baselines.train_test_split_indices(m, 0.5, seed)``: half the questions; training rows get NaN,
    so they never enter the AUROC (the metrics' ``n`` counts the test half only).

    Args:
        embeddings: (m, d) one embedding per question (of the judged answer).
        correct: (m,) booleans (correctness of the judged answers).
        seed: seed of the split.

    Raises:
        ValueError: shape mismatch, fewer than 2 questions, or a training split with a single class.
    """
    X = np.asarray(embeddings, dtype=np.float64)
    y = np.asarray(correct, dtype=bool)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"embeddings must be (m, d) and correct (m,); got {X.shape} and {y.shape}")
    train, test = baselines.train_test_split_indices(X.shape[0], 0.5, seed)
    model = baselines.EmbeddingRegression().fit(X[train], y[train])
    out = np.full(X.shape[0], np.nan)
    out[test] = np.asarray(model.uncertainty(X[test]), dtype=np.float64)
    return out
