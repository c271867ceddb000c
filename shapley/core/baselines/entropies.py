"""Likelihood and meaning-cluster entropies: predictive entropy, length-normalised predictive entropy,
semantic clustering, semantic entropy, discrete semantic entropy and the number of semantic sets (nats)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from shapley.core import validate


def shannon_entropy(p: NDArray[np.float64]) -> float:
    """Shannon entropy ``-sum p ln p`` (nats) of a (k,) probability vector, with 0 ln 0 = 0 (not renormalised).

    Examples:
        >>> round(shannon_entropy(np.array([0.5, 0.5])), 6)
        0.693147
        >>> shannon_entropy(np.array([1.0, 0.0]))
        0.0
    """
    q = validate.vector(p, "p")
    if np.any(q < -validate.PROB_TOL) or np.any(q > 1.0 + validate.PROB_TOL):
        raise ValueError(f"p must hold probabilities in [0, 1]; got values in [{q.min():.4g}, {q.max():.4g}]")
    q = q[q > 0]
    return float(max(0.0, -np.sum(q * np.log(q))))


def _normalise_log(ll: NDArray[np.float64]) -> NDArray[np.float64]:
    """Probabilities proportional to exp(ll), computed stably (softmax)."""
    z = ll - ll.max()
    w = np.exp(z)
    return w / w.sum()


def likelihood_entropy(log_likelihoods: Sequence[float] | np.ndarray) -> float:
    """Entropy (nats) of the answer likelihoods renormalised over the given distinct answers.

    ``log_likelihoods``: (n,) sequence log-probabilities ln p(s_k | x) of n *distinct* answers.
    The likelihoods are normalised to sum to one over the set, p_k = p(s_k|x) / sum_j p(s_j|x), and
    H = -sum_k p_k ln p_k is returned, so 0 <= H <= ln n. This is the "Likelihood" column of the
    paper's Mozart tables (Tables 1-2).

    Examples:
        >>> round(likelihood_entropy(np.log([0.5, 0.4, 0.1])), 3)  # the Mozart answers
        0.943
        >>> round(likelihood_entropy(np.log([0.3, 0.3])), 6)  # only relative likelihoods matter: ln 2
        0.693147
    """
    ll = validate.log_probs(log_likelihoods, "log_likelihoods")
    return shannon_entropy(_normalise_log(ll))


def predictive_entropy(log_likelihoods: Sequence[float] | np.ndarray) -> float:
    """Monte-Carlo predictive entropy -1/n sum_k ln p(s_k | x) (nats).

    Kadavath et al. (2022) "Language models (mostly) know what they know", as used by Kuhn et al.
    (2023, ICLR) "Semantic uncertainty". ``log_likelihoods``: (n,) log-probabilities of n *sampled*
    answers (each the sum of its token log-probs). It is an unbiased estimate of the entropy of the
    output distribution when the answers are samples from the model.

    Examples:
        >>> round(predictive_entropy(np.log([0.5, 0.4, 0.1])), 4)  # -(ln 0.5 + ln 0.4 + ln 0.1) / 3
        1.304
    """
    ll = validate.log_probs(log_likelihoods, "log_likelihoods")
    return max(0.0, -float(np.mean(ll)))


def length_normalised_predictive_entropy(token_logprobs: Sequence[Sequence[float]] | np.ndarray) -> float:
    """Length-normalised predictive entropy -1/n sum_k (1/T_k sum_t ln p(s_k,t | s_k,<t, x)) (nats/token).

    Malinin & Gales (2021, ICLR) "Uncertainty estimation in autoregressive structured prediction".
    ``token_logprobs``: n samples, sample k a (T_k,) array of token log-probabilities (ragged
    lengths allowed, each T_k >= 1). Each sample's log-likelihood is divided by its length before
    the Monte-Carlo average, which removes the bias towards short answers.

    Examples:
        >>> tokens = [np.log([0.5, 0.5]), np.log([0.25])]  # per-token ln 0.5 and ln 0.25
        >>> round(length_normalised_predictive_entropy(tokens), 4)  # (ln 2 + ln 4) / 2
        1.0397
    """
    rows = validate.ragged_rows(token_logprobs, "token_logprobs", validate.log_probs)
    means = [np.mean(r) for r in rows]
    return float(max(0.0, -np.mean(means)))


CLUSTER_THRESHOLD = 0.5
"""Entailment probability above which two answers share a semantic cluster (SE, DSE, NumSet): the default of
:func:`semantic_clusters`, of a run (``--cluster-rule``) and of the axioms search."""


def semantic_clusters(
    entail: np.ndarray | None,
    contradict: np.ndarray | None = None,
    *,
    rule: Literal["bidirectional", "non_contradiction"] = "bidirectional",
    threshold: float = CLUSTER_THRESHOLD,
) -> np.ndarray:
    """Greedy semantic-equivalence clustering of n answers; returns (n,) int labels 0..k-1.

    ``entail[i, j]`` = P(s_i entails s_j) and ``contradict[i, j]`` = P(s_i contradicts s_j), both
    (n, n) in [0, 1] (diagonals ignored). The greedy scheme of Kuhn et al. (2023, ICLR) is used:
    answers are visited in order; answer i joins the first existing cluster whose *representative*
    (its first member) is equivalent to it, otherwise it opens a new cluster. Labels therefore number
    clusters in order of first appearance.

    Equivalence rules:

    * ``"bidirectional"`` (strict bidirectional entailment; Kuhn et al. 2023, "Semantic uncertainty",
      ICLR): i ~ j iff ``entail[i, j] > threshold`` and ``entail[j, i] > threshold``. The paper under
      study writes the condition with ">= t"; the two only differ on exact ties. ``contradict`` is
      not used.
    * ``"non_contradiction"`` (relaxed rule): i ~ j iff neither direction is predicted to be a
      contradiction, ``contradict[i, j] < threshold`` and ``contradict[j, i] < threshold``. This is
      the clustering of Kuhn et al.'s released code (an argmax-contradiction check in either
      direction splits the pair); Farquhar et al. (2024, Nature) "Detecting hallucinations in large
      language models using semantic entropy" use a related non-strict variant that additionally
      splits pairs judged neutral in both directions. Requires ``contradict``.

    The rules are not transitive, so the result depends on the answer order (as in the originals).

    Examples:
        >>> E = np.array([[1.0, 0.9, 0.1], [0.8, 1.0, 0.2], [0.1, 0.3, 1.0]])
        >>> semantic_clusters(E).tolist()  # answers 0 and 1 entail each other
        [0, 0, 1]
        >>> contradict = np.array([[0.0, 0.1, 0.9], [0.1, 0.0, 0.8], [0.7, 0.9, 0.0]])
        >>> semantic_clusters(None, contradict, rule="non_contradiction").tolist()
        [0, 0, 1]
    """
    validate.choice(rule, ("bidirectional", "non_contradiction"), "rule")
    threshold = validate.number(threshold, "threshold", 0.0, 1.0, closed="both")
    # each matrix given is validated, whatever the rule: a wrong input is refused even where unused
    E = None if entail is None else validate.probability_matrix(entail, "entail")
    Cm = None if contradict is None else validate.probability_matrix(contradict, "contradict")
    if rule == "bidirectional":
        if E is None:
            raise ValueError("rule='bidirectional' needs the entailment matrix `entail`; got None")
        same = (E > threshold) & (E > threshold).T  # each of the two entails the other
    else:
        if Cm is None:
            raise ValueError(
                "rule='non_contradiction' needs the contradiction matrix `contradict` "
                "(an NLI backend's contradiction probabilities); got None"
            )
        if E is not None and E.shape != Cm.shape:
            raise ValueError(f"entail and contradict must have the same shape; got {E.shape} and {Cm.shape}")
        same = (Cm < threshold) & (Cm < threshold).T  # neither contradicts the other

    labels = np.empty(same.shape[0], dtype=np.int64)
    representatives: list[int] = []
    for i in range(same.shape[0]):
        for c, r in enumerate(representatives):
            if same[r, i]:
                labels[i] = c
                break
        else:
            labels[i] = len(representatives)
            representatives.append(i)
    return labels


def semantic_entropy(
    log_likelihoods: Sequence[float] | np.ndarray,
    cluster_ids: Sequence[int] | np.ndarray,
) -> float:
    """Likelihood-weighted semantic entropy (nats) over meaning clusters.

    Kuhn et al. (2023, ICLR) "Semantic uncertainty". ``log_likelihoods``: (n,) ln p(s_k | x) of the
    answers; ``cluster_ids``: (n,) integer cluster labels (e.g. from :func:`semantic_clusters`).
    The probability of a cluster is the sum of the likelihoods of its members,
    p(C | x) = sum_{s in C} p(s | x), and H = -sum_C p(C|x) ln p(C|x).

    The likelihoods are first renormalised to sum to one over the given set (the convention of Farquhar et al.
    2024's code), giving a proper entropy with 0 <= H <= ln k for k clusters. The formula as written in Kuhn et
    al. and in the paper's Section 2 uses the raw likelihoods of distinct answers; the two agree when those sum
    to one, as on the paper's Mozart example (below).

    Examples:
        >>> ll = np.log([0.5, 0.4, 0.1])  # Mozart, "Mozart", Beethoven
        >>> round(semantic_entropy(ll, [0, 0, 1]), 3)
        0.325
    """
    ll = validate.log_probs(log_likelihoods, "log_likelihoods")
    ids = validate.cluster_labels(cluster_ids)
    if ids.shape != ll.shape:
        raise ValueError(f"cluster_ids must have the same length as log_likelihoods; got {ids.size} and {ll.size}")
    _, inverse = np.unique(ids, return_inverse=True)
    cluster_p = np.bincount(inverse, weights=_normalise_log(ll)).astype(np.float64)
    return shannon_entropy(cluster_p)


def discrete_semantic_entropy(cluster_ids: Sequence[int] | np.ndarray) -> float:
    """Discrete semantic entropy (nats): entropy of the cluster frequencies counts / n.

    Farquhar et al. (2024, Nature) "Detecting hallucinations in large language models using semantic
    entropy" (a variant that needs no likelihoods). ``cluster_ids``: (n,) integer labels of n sampled
    answers. 0 when all answers share one meaning, ln n when all differ.

    Examples:
        >>> round(discrete_semantic_entropy([0, 0, 1, 2]), 4)  # frequencies 1/2, 1/4, 1/4
        1.0397
        >>> discrete_semantic_entropy([3, 3, 3])
        0.0
    """
    ids = validate.cluster_labels(cluster_ids)
    _, counts = np.unique(ids, return_counts=True)
    return shannon_entropy(counts.astype(np.float64) / counts.sum())


def num_semantic_sets(cluster_ids: Sequence[int] | np.ndarray) -> float:
    """Number of distinct meaning clusters, as a float (unitless count, 1..n).

    Lin, Trivedi & Sun (2024, TMLR) "Generating with confidence: uncertainty quantification for
    black-box large language models" (U_NumSet). ``cluster_ids``: (n,) integer labels.

    Examples:
        >>> num_semantic_sets([0, 0, 1, 2])
        3.0
    """
    ids = validate.cluster_labels(cluster_ids)
    return float(np.unique(ids).size)
