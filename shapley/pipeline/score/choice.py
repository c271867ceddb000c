"""Which sample each answer-selection strategy picks for one question, chosen at the scoring stage.

Strategies (:data:`STRATEGIES`), each choosing among the n sampled answers of a question unless said otherwise:

* ``first``: the first sample.
* ``greedy``: the judged answer when it is a greedy (most likely) answer: always in ``run`` (the generator's
  greedy answer); in ``score-samples`` only when the input line gives an ``answer`` field. Without one the
  judged answer is the first sample, so ``greedy`` is *skipped* there (it would only repeat ``first``).
* ``largest_cluster``: a member of the biggest semantic cluster (the run's clustering rule; among clusters of
  equal size the one met first). Its most likely member when the samples' log-probabilities exist (the
  log-likelihood ``SE`` uses, see ``--se-aggregation``), else its first member in sample order.
* ``medoid``: the sample with the highest mean similarity ``W = (P + P^T) / 2`` to the other samples (its
  similarity to itself, the diagonal, does not count).
* ``min_phi``: the sample with the smallest exact Shapley value of the run's kernel matrix R (the run's beta
  and PSD policy), i.e. the one that adds least uncertainty. Skipped for n > :data:`PHI_MAX_N` (2**n subset
  entropies) or when R cannot be used (``psd_policy="raise"`` on an indefinite R).

Ties go to the first sample in order (``numpy.argmax`` / ``argmin``), after rounding the compared values to 12
significant digits (:func:`shapley.core.metrics.round_scores`), so that values equal in exact arithmetic tie.
:func:`choose` reads the question's :class:`~shapley.pipeline.score.scores.QuestionContext`, which the methods
share (R, W and the clusters are computed once per question); each score record stores its result, from which
:mod:`shapley.pipeline.evaluate.selection` tallies the strategies' accuracy.
"""

from __future__ import annotations

import warnings

import numpy as np

from shapley.core import metrics
from shapley.core.entropy import shapley_values
from shapley.pipeline.score.scores import QuestionContext, skip_reason

STRATEGIES: tuple[str, ...] = ("first", "greedy", "largest_cluster", "medoid", "min_phi")
SAMPLE_STRATEGIES: tuple[str, ...] = ("first", "largest_cluster", "medoid", "min_phi")
"""The strategies that pick one of the samples (``greedy`` is the judged answer instead)."""

PHI_MAX_N = 20
"""Largest n for which ``min_phi`` computes the exact Shapley values (2**n log-determinants per question: the
paper's n = 10 costs about a thousand, n = 20 about a million)."""

ANSWER_SOURCES = ("greedy", "input", "first_sample")
"""What the judged answer of a score record is: the generator's greedy answer (``run``), the input's ``answer``
field (``score-samples``), or the first sample (``score-samples`` without an ``answer`` field)."""


def _phi(ctx: QuestionContext) -> tuple[list[float] | None, str]:
    n = len(ctx.x.entail if ctx.x.entail is not None else ())
    if n > PHI_MAX_N:
        return None, f"n = {n} > {PHI_MAX_N} samples: exact Shapley values not computed"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            phi = shapley_values(ctx.R, "exact", psd_policy=ctx.opts.psd_policy)
    except (ValueError, np.linalg.LinAlgError) as exc:
        return None, skip_reason(exc)
    if np.isnan(phi).any():
        return None, "Shapley values are NaN"
    return [float(v) for v in phi], ""


def _largest_cluster(ctx: QuestionContext) -> int | None:
    x = ctx.x
    if ctx.opts.cluster_rule == "non_contradiction" and x.contradict is None:
        return None
    labels = ctx.clusters
    members = np.flatnonzero(labels == int(np.argmax(np.bincount(labels))))  # clusters numbered by first member
    if x.sample_logprobs is None or not x.has("sample_logprobs"):
        return int(members[0])
    ll = metrics.round_scores(ctx.se_log_likelihoods[members])
    return int(members[int(np.argmax(ll))])


def _medoid(W: np.ndarray) -> int:
    """The answer with the highest mean of W over the n - 1 others (the diagonal does not count), the first of
    equal ones."""
    n = W.shape[0]
    if n == 1:
        return 0
    mean_to_others = (W.sum(axis=1) - np.diag(W)) / (n - 1)
    return int(np.argmax(metrics.round_scores(mean_to_others)))


def choose(ctx: QuestionContext) -> tuple[dict[str, int | None], list[float] | None, str]:
    """The sample each strategy of :data:`SAMPLE_STRATEGIES` picks for one question, and the exact Shapley values.

    Returns ``(selected, phi, phi_note)``: ``selected`` maps strategy -> sample index (``None`` where it cannot
    choose, e.g. without an entailment matrix); ``phi`` is the (n,) list of per-answer Shapley values (nats) of
    the run's R, or ``None`` where they are not computed, ``phi_note`` then saying why (see the module
    docstring); ``phi_note`` is empty when ``phi`` is computed.
    """
    x = ctx.x
    n = 0 if x.samples is None else len(x.samples)
    selected: dict[str, int | None] = dict.fromkeys(SAMPLE_STRATEGIES)
    if n == 0:
        return selected, None, "no samples"
    selected["first"] = 0
    if x.entail is None:
        return selected, None, "no entailment matrix"
    selected["largest_cluster"] = _largest_cluster(ctx)
    selected["medoid"] = _medoid(ctx.W)
    phi, why = _phi(ctx)
    if phi is not None:
        selected["min_phi"] = int(np.argmin(metrics.round_scores(np.asarray(phi))))
    return selected, phi, why
