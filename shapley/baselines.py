"""Baseline uncertainty measures for natural language generation, on precomputed inputs.

Every function here works on numbers that a pipeline computed earlier (sequence log-likelihoods,
token log-probabilities and entropies, entailment / similarity matrices, texts, embeddings), so the
whole module runs and is tested without a language model. Conventions shared by all functions:

* **Direction**: every public scorer returns an *uncertainty*: higher = more uncertain. Measures
  that the literature states as a confidence (lexical similarity, p(True), verbalised confidence,
  P(correct) of a classifier) are flipped as ``1 - confidence``.
* **Units**: log-probabilities and entropies are natural-log (nats).
* **Validation**: inputs are checked at the edge; a ``ValueError`` says what was wrong (NaN / inf,
  wrong shape, empty input, probabilities outside [0, 1], ...).
* **No hidden state**: no caches, no module-level models; the only stateful object is the explicit
  :class:`EmbeddingRegression` estimator.

This module belongs to the maths core: it must not import any pipeline module.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import scipy.linalg

from shapley._validate import square_matrix

__all__ = [
    "EmbeddingRegression",
    "degree",
    "discrete_semantic_entropy",
    "eccentricity",
    "eigv",
    "kernel_language_entropy",
    "length_normalised_predictive_entropy",
    "lexical_similarity",
    "likelihood_entropy",
    "num_semantic_sets",
    "p_true_uncertainty",
    "parse_confidence",
    "parse_p_true",
    "predictive_entropy",
    "selfcheck_avge",
    "selfcheck_avgl",
    "selfcheck_maxe",
    "selfcheck_maxl",
    "semantic_clusters",
    "semantic_entropy",
    "train_test_split_indices",
    "verbalised_uncertainty",
]

# Tolerance for "a log-probability must be <= 0" and "a probability must lie in [0, 1]":
# values computed in float32 by a model can overshoot by rounding.
_LOGP_TOL = 1e-6
_PROB_TOL = 1e-9
_SYM_TOL = 1e-8


# ----------------------------------------------------------------------------------------------
# validation helpers (private)
# ----------------------------------------------------------------------------------------------


def _vector(x: Any, name: str, *, min_len: int = 1) -> np.ndarray:
    """1-D float array, finite, with at least ``min_len`` entries."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a sequence of numbers; got {type(x).__name__}") from exc
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {arr.shape}")
    if arr.size < min_len:
        raise ValueError(f"{name} must have at least {min_len} value(s); got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf: {arr.tolist()}")
    return arr


def _log_probs(x: Any, name: str) -> np.ndarray:
    """1-D finite array of log-probabilities (each <= 0, up to rounding)."""
    arr = _vector(x, name)
    if np.any(arr > _LOGP_TOL):
        raise ValueError(
            f"{name} are log-probabilities and must be <= 0; got max {arr.max():.6g} "
            "(did you pass probabilities or logits instead of log-probabilities?)"
        )
    return np.minimum(arr, 0.0)


def _labels(x: Any, name: str = "cluster_ids") -> np.ndarray:
    """1-D non-empty array of integer cluster labels (any integer values, order irrelevant)."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)
    raise ValueError(f"{name} must hold integer cluster labels; got dtype {arr.dtype}: {arr.tolist()}")


def _square(W: Any, name: str, *, unit_interval: bool = True, symmetric: bool = False) -> np.ndarray:
    """(n, n) finite float matrix, n >= 1, optionally with entries in [0, 1] and symmetric."""
    M = square_matrix(W, name)
    if unit_interval and (M.min() < -_PROB_TOL or M.max() > 1 + _PROB_TOL):
        raise ValueError(f"{name} entries must lie in [0, 1]; got range [{M.min():.6g}, {M.max():.6g}]")
    if symmetric and not np.allclose(M, M.T, atol=_SYM_TOL, rtol=0.0):
        raise ValueError(
            f"{name} must be symmetric (max |W - W.T| = {np.abs(M - M.T).max():.3g}); "
            "symmetrise it first, e.g. (W + W.T) / 2"
        )
    if unit_interval:
        M = np.clip(M, 0.0, 1.0)
    if symmetric:
        M = (M + M.T) / 2.0
    return M


def _entropy_of(p: np.ndarray) -> float:
    """Shannon entropy -sum p ln p (nats) with 0 ln 0 = 0; ``p`` is not renormalised."""
    p = p[p > 0]
    return float(max(0.0, -np.sum(p * np.log(p))))


def _normalise_log(ll: np.ndarray) -> np.ndarray:
    """Probabilities proportional to exp(ll), computed stably (softmax)."""
    z = ll - ll.max()
    w = np.exp(z)
    return w / w.sum()


# ----------------------------------------------------------------------------------------------
# likelihood-based entropies
# ----------------------------------------------------------------------------------------------


def likelihood_entropy(log_likelihoods: Sequence[float] | np.ndarray) -> float:
    """Entropy (nats) of the answer likelihoods renormalised over the given distinct answers.

    ``log_likelihoods``: (n,) sequence log-probabilities ln p(s_k | x) of n *distinct* answers.
    The likelihoods are normalised to sum to one over the set, p_k = p(s_k|x) / sum_j p(s_j|x), and
    H = -sum_k p_k ln p_k is returned, so 0 <= H <= ln n. This is the "Likelihood" column of the
    paper's Mozart tables (Tables 1-2): for p = (0.5, 0.4, 0.1) it gives about 0.943 nats.

    Direction: higher = more uncertain (mass spread over more answers).
    """
    ll = _log_probs(log_likelihoods, "log_likelihoods")
    return _entropy_of(_normalise_log(ll))


def predictive_entropy(log_likelihoods: Sequence[float] | np.ndarray) -> float:
    """Monte-Carlo predictive entropy -1/n sum_k ln p(s_k | x) (nats).

    Kadavath et al. (2022) "Language models (mostly) know what they know", as used by Kuhn et al.
    (2023, ICLR) "Semantic uncertainty". ``log_likelihoods``: (n,) log-probabilities of n *sampled*
    answers (each the sum of its token log-probs). It is an unbiased estimate of the entropy of the
    output distribution when the answers are samples from the model.

    Direction: higher = more uncertain.
    """
    ll = _log_probs(log_likelihoods, "log_likelihoods")
    return float(max(0.0, -np.mean(ll)))


def _token_arrays(token_values: Any, name: str) -> list[np.ndarray]:
    if isinstance(token_values, np.ndarray) and token_values.ndim == 2:
        rows = list(token_values)
    elif isinstance(token_values, str | bytes) or not isinstance(token_values, Sequence | np.ndarray):
        raise ValueError(
            f"{name} must be a sequence of per-sample token arrays; got {type(token_values).__name__}"
        )
    else:
        rows = list(token_values)
    if len(rows) == 0:
        raise ValueError(f"{name} must hold at least one sample; got an empty list")
    return [_vector(r, f"{name}[{k}]") for k, r in enumerate(rows)]


def length_normalised_predictive_entropy(token_logprobs: Sequence[Sequence[float]] | np.ndarray) -> float:
    """Length-normalised predictive entropy -1/n sum_k (1/T_k sum_t ln p(s_k,t | s_k,<t, x)) (nats/token).

    Malinin & Gales (2021, ICLR) "Uncertainty estimation in autoregressive structured prediction".
    ``token_logprobs``: n samples, sample k a (T_k,) array of token log-probabilities (ragged
    lengths allowed, each T_k >= 1). Each sample's log-likelihood is divided by its length before
    the Monte-Carlo average, which removes the bias towards short answers.

    Direction: higher = more uncertain.
    """
    rows = _token_arrays(token_logprobs, "token_logprobs")
    means = []
    for k, r in enumerate(rows):
        if np.any(r > _LOGP_TOL):
            raise ValueError(
                f"token_logprobs[{k}] are log-probabilities and must be <= 0; got max {r.max():.6g}"
            )
        means.append(np.mean(np.minimum(r, 0.0)))
    return float(max(0.0, -np.mean(means)))


# ----------------------------------------------------------------------------------------------
# semantic clustering and semantic entropies
# ----------------------------------------------------------------------------------------------


def semantic_clusters(
    entail: np.ndarray | None,
    contradict: np.ndarray | None = None,
    *,
    rule: Literal["bidirectional", "non_contradiction"] = "bidirectional",
    threshold: float = 0.5,
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
    """
    if rule not in ("bidirectional", "non_contradiction"):
        raise ValueError(f"rule must be 'bidirectional' or 'non_contradiction'; got {rule!r}")
    if not isinstance(threshold, int | float) or not math.isfinite(threshold) or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be a finite number in [0, 1]; got {threshold!r}")
    if rule == "bidirectional":
        if entail is None:
            raise ValueError("rule='bidirectional' needs the entailment matrix `entail`; got None")
        E = _square(entail, "entail")

        def same(i: int, j: int) -> bool:
            return bool(E[i, j] > threshold and E[j, i] > threshold)

        n = E.shape[0]
    else:
        if contradict is None:
            raise ValueError(
                "rule='non_contradiction' needs the contradiction matrix `contradict` "
                "(an NLI backend's contradiction probabilities); got None"
            )
        Cm = _square(contradict, "contradict")
        if entail is not None:
            E = _square(entail, "entail")
            if E.shape != Cm.shape:
                raise ValueError(
                    f"entail and contradict must have the same shape; got {E.shape} and {Cm.shape}"
                )

        def same(i: int, j: int) -> bool:
            return bool(Cm[i, j] < threshold and Cm[j, i] < threshold)

        n = Cm.shape[0]

    labels = np.empty(n, dtype=np.int64)
    representatives: list[int] = []
    for i in range(n):
        for c, r in enumerate(representatives):
            if same(r, i):
                labels[i] = c
                break
        else:
            labels[i] = len(representatives)
            representatives.append(i)
    return labels


def semantic_entropy(
    log_likelihoods: Sequence[float] | np.ndarray,
    cluster_ids: Sequence[int] | np.ndarray,
    *,
    normalise: bool = True,
) -> float:
    """Likelihood-weighted semantic entropy (nats) over meaning clusters.

    Kuhn et al. (2023, ICLR) "Semantic uncertainty". ``log_likelihoods``: (n,) ln p(s_k | x) of the
    answers; ``cluster_ids``: (n,) integer cluster labels (e.g. from :func:`semantic_clusters`).
    The probability of a cluster is the sum of the likelihoods of its members,
    p(C | x) = sum_{s in C} p(s | x), and H = -sum_C p(C|x) ln p(C|x).

    ``normalise=True`` (default) first renormalises the likelihoods to sum to one over the given set
    (the convention of Farquhar et al. 2024's code), giving a proper entropy with 0 <= H <= ln k for k
    clusters. ``normalise=False`` uses the raw likelihoods, as the formula is written in Kuhn et al.
    and in the paper's Section 2; then the answers must be distinct with total likelihood <= 1
    (ValueError otherwise). On the paper's Mozart example (p = 0.5, 0.4, 0.1; clusters {1,2},{3})
    both give about 0.325 nats.

    Direction: higher = more uncertain.
    """
    ll = _log_probs(log_likelihoods, "log_likelihoods")
    ids = _labels(cluster_ids)
    if ids.shape != ll.shape:
        raise ValueError(
            f"cluster_ids must have the same length as log_likelihoods; got {ids.size} and {ll.size}"
        )
    if normalise:
        p = _normalise_log(ll)
    else:
        p = np.exp(ll)
        if p.sum() > 1 + 1e-6:
            raise ValueError(
                "with normalise=False the likelihoods must sum to <= 1 (distinct answers); "
                f"got {p.sum():.6g}. "
                "Use normalise=True for sampled answers that may repeat."
            )
    _, inverse = np.unique(ids, return_inverse=True)
    cluster_p = np.bincount(inverse, weights=p)
    return _entropy_of(cluster_p)


def discrete_semantic_entropy(cluster_ids: Sequence[int] | np.ndarray) -> float:
    """Discrete semantic entropy (nats): entropy of the cluster frequencies counts / n.

    Farquhar et al. (2024, Nature) "Detecting hallucinations in large language models using semantic
    entropy" (a variant that needs no likelihoods). ``cluster_ids``: (n,) integer labels of n sampled
    answers. 0 when all answers share one meaning, ln n when all differ.

    Direction: higher = more uncertain.
    """
    ids = _labels(cluster_ids)
    _, counts = np.unique(ids, return_counts=True)
    return _entropy_of(counts / counts.sum())


def num_semantic_sets(cluster_ids: Sequence[int] | np.ndarray) -> float:
    """Number of distinct meaning clusters, as a float (unitless count, 1..n).

    Lin, Trivedi & Sun (2024, TMLR) "Generating with confidence: uncertainty quantification for
    black-box large language models" (U_NumSet). ``cluster_ids``: (n,) integer labels.

    Direction: higher = more uncertain.
    """
    ids = _labels(cluster_ids)
    return float(np.unique(ids).size)


# ----------------------------------------------------------------------------------------------
# lexical similarity
# ----------------------------------------------------------------------------------------------


def lexical_similarity(texts: Sequence[str], scorer: Any | None = None) -> float:
    """One minus the mean pairwise Rouge-L F-measure between the n answers (unitless, in [0, 1]).

    Fomicheva et al. (2020, TACL) "Unsupervised quality estimation for neural machine translation",
    used as an NLG baseline by Kuhn et al. (2023). ``texts``: n answer strings. Rouge-L F is
    symmetric, so the mean runs over the n(n-1)/2 unordered pairs i < j. The Rouge-L implementation
    is the ``rouge-score`` package; ``scorer`` may be a ready ``rouge_scorer.RougeScorer(["rougeL"])``,
    else a fresh one is built for this call (nothing is cached).

    With a single answer there is no pair to compare and no evidence of disagreement: returns 0.0.

    Direction: higher = more uncertain (answers differ lexically); the similarity itself is a confidence.
    """
    if isinstance(texts, str) or not isinstance(texts, Sequence | np.ndarray):
        raise ValueError(f"texts must be a sequence of strings; got {type(texts).__name__}")
    texts = list(texts)
    if len(texts) == 0:
        raise ValueError("texts must hold at least one answer; got an empty list")
    for k, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"texts[{k}] must be a str; got {type(t).__name__}")
    n = len(texts)
    if n == 1:
        return 0.0
    if scorer is None:
        from rouge_score import rouge_scorer

        scorer = rouge_scorer.RougeScorer(["rougeL"])
    sims = [scorer.score(texts[i], texts[j])["rougeL"].fmeasure for i in range(n) for j in range(i + 1, n)]
    return float(min(1.0, max(0.0, 1.0 - float(np.mean(sims)))))


# ----------------------------------------------------------------------------------------------
# graph-spectral measures (Lin et al. 2024) and kernel language entropy (Nikitin et al. 2024)
# ----------------------------------------------------------------------------------------------


def _normalised_laplacian(W: np.ndarray) -> np.ndarray:
    """Symmetric normalised Laplacian I - D^-1/2 W D^-1/2 of a symmetric non-negative W."""
    d = W.sum(axis=1)
    if np.any(d <= 0):
        raise ValueError(
            f"W has a row with zero total similarity (rows {np.flatnonzero(d <= 0).tolist()}); "
            "the normalised Laplacian needs positive degrees (set the diagonal to 1)"
        )
    s = 1.0 / np.sqrt(d)
    L = np.eye(W.shape[0]) - s[:, None] * W * s[None, :]
    return (L + L.T) / 2.0


def eigv(W: np.ndarray) -> float:
    """Sum of eigenvalue gaps U_EigV = sum_k max(0, 1 - lambda_k) (unitless, a soft cluster count).

    Lin, Trivedi & Sun (2024, TMLR) "Generating with confidence". ``W``: (n, n) symmetric similarity
    matrix with entries in [0, 1] (e.g. averaged entailment probabilities, diagonal usually 1);
    lambda_k are the eigenvalues of the symmetric normalised Laplacian L = I - D^-1/2 W D^-1/2,
    D = diag(row sums). Equals the number of connected components for a 0/1 block matrix: 1 when all
    answers agree, n for the identity.

    Direction: higher = more uncertain.
    """
    M = _square(W, "W", symmetric=True)
    lam = np.linalg.eigvalsh(_normalised_laplacian(M))
    return float(np.sum(np.maximum(0.0, 1.0 - lam)))


def degree(W: np.ndarray) -> float:
    """Degree-based uncertainty U_Deg = trace(n I - D) / n^2 = 1 - mean_j(d_j) / n (unitless).

    Lin, Trivedi & Sun (2024, TMLR) "Generating with confidence". ``W``: (n, n) symmetric similarity
    matrix in [0, 1]; d_j = sum_i W[j, i]. 0 when every pair is fully similar, 1 - 1/n for the
    identity (each answer similar only to itself).

    Direction: higher = more uncertain.
    """
    M = _square(W, "W", symmetric=True)
    n = M.shape[0]
    return float(np.trace(n * np.eye(n) - np.diag(M.sum(axis=1))) / n**2)


def eccentricity(W: np.ndarray, k: int | None = None, *, eigv_threshold: float = 0.9) -> float:
    """Eccentricity U_Ecc: spread of the answers' spectral embeddings around their centroid (unitless).

    Lin, Trivedi & Sun (2024, TMLR) "Generating with confidence". ``W``: (n, n) symmetric similarity
    matrix in [0, 1]. Take the eigenvectors u_1..u_k of the k smallest eigenvalues of the symmetric
    normalised Laplacian L = I - D^-1/2 W D^-1/2; answer j is embedded as v_j = (u_1[j], ..., u_k[j]).
    With v_bar the mean embedding, U_Ecc = ||[v_1 - v_bar, ..., v_n - v_bar]||_2, i.e. the Frobenius
    norm (square root of the summed squared distances to the centroid); it is invariant to the choice
    of basis inside the selected eigenspace.

    ``k=None`` keeps every eigenvector whose eigenvalue is below ``eigv_threshold`` (0.9, the choice of
    Lin et al.'s code; at least one is always kept), otherwise the k smallest (1 <= k <= n).
    The centring is across answers, as in the paper's definition. 0 when all answers agree; sqrt(n-1)
    for the identity W.

    Direction: higher = more uncertain.
    """
    M = _square(W, "W", symmetric=True)
    n = M.shape[0]
    if not isinstance(eigv_threshold, int | float) or not math.isfinite(eigv_threshold):
        raise ValueError(f"eigv_threshold must be a finite number; got {eigv_threshold!r}")
    lam, U = np.linalg.eigh(_normalised_laplacian(M))
    if k is None:
        kk = max(1, int(np.sum(lam < eigv_threshold)))
    else:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= n:
            raise ValueError(f"k must be an integer in [1, n={n}]; got {k!r}")
        kk = int(k)
    V = U[:, :kk]  # row j = embedding v_j of answer j
    centred = V - V.mean(axis=0, keepdims=True)
    return float(np.linalg.norm(centred, "fro"))


def kernel_language_entropy(
    W: np.ndarray,
    t: float = 0.3,
    *,
    normalisation: Literal["trace", "diagonal"] = "trace",
) -> float:
    """Kernel language entropy (nats): von Neumann entropy of a heat kernel on the answer graph.

    Nikitin et al. (2024, NeurIPS) "Kernel language entropy: fine-grained uncertainty quantification
    for LLMs from semantic similarities". ``W``: (n, n) symmetric similarity matrix in [0, 1];
    L = D - W is its (unnormalised) graph Laplacian and K = expm(-t L) the heat kernel (t > 0, the
    diffusion time). K is turned into a density matrix rho (PSD, unit trace):

    * ``"trace"`` (default): rho = K / tr K.
    * ``"diagonal"``: rho = D_K^-1/2 K D_K^-1/2 / n (unit diagonal, then divided by n), the scaling of
      the KLE reference code.

    KLE = -tr(rho ln rho) = -sum_i mu_i ln mu_i over the eigenvalues mu_i of rho (tiny negative
    eigenvalues from rounding clipped to 0, 0 ln 0 = 0), so 0 <= KLE <= ln n; ln n for the identity W.

    Direction: higher = more uncertain.
    """
    M = _square(W, "W", symmetric=True)
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t <= 0:
        raise ValueError(f"t (heat-kernel diffusion time) must be a finite number > 0; got {t!r}")
    if normalisation not in ("trace", "diagonal"):
        raise ValueError(f"normalisation must be 'trace' or 'diagonal'; got {normalisation!r}")
    L = np.diag(M.sum(axis=1)) - M
    K = scipy.linalg.expm(-float(t) * L)
    K = (K + K.T) / 2.0
    if normalisation == "trace":
        rho = K / np.trace(K)
    else:
        s = 1.0 / np.sqrt(np.diag(K))
        rho = s[:, None] * K * s[None, :] / K.shape[0]
    mu = np.clip(np.linalg.eigvalsh(rho), 0.0, None)
    mu = mu / mu.sum()
    return float(min(_entropy_of(mu), math.log(M.shape[0])))


# ----------------------------------------------------------------------------------------------
# SelfCheckGPT-style token statistics (Manakul et al. 2023)
# ----------------------------------------------------------------------------------------------


def _token_logprobs_1d(token_logprobs: Any) -> np.ndarray:
    arr = _vector(token_logprobs, "token_logprobs")
    if np.any(arr > _LOGP_TOL):
        raise ValueError(f"token_logprobs are log-probabilities and must be <= 0; got max {arr.max():.6g}")
    return np.minimum(arr, 0.0)


def _token_entropies_1d(token_entropies: Any) -> np.ndarray:
    arr = _vector(token_entropies, "token_entropies")
    if np.any(arr < -_LOGP_TOL):
        raise ValueError(f"token_entropies must be >= 0 (entropies, nats); got min {arr.min():.6g}")
    return np.maximum(arr, 0.0)


def selfcheck_maxl(token_logprobs: Sequence[float] | np.ndarray) -> float:
    """Max token surprisal max_t(-ln p_t) (nats) of one answer.

    Manakul, Liusie & Gales (2023, EMNLP) "SelfCheckGPT" (grey-box Max(-log p)). ``token_logprobs``:
    (T,) log-probabilities of the answer's tokens, T >= 1. Direction: higher = more uncertain.
    """
    return float(np.max(-_token_logprobs_1d(token_logprobs)))


def selfcheck_avgl(token_logprobs: Sequence[float] | np.ndarray) -> float:
    """Mean token surprisal mean_t(-ln p_t) (nats/token) of one answer.

    Manakul, Liusie & Gales (2023, EMNLP) "SelfCheckGPT" (grey-box Avg(-log p)). ``token_logprobs``:
    (T,) log-probabilities of the answer's tokens, T >= 1. Direction: higher = more uncertain.
    """
    return float(np.mean(-_token_logprobs_1d(token_logprobs)))


def selfcheck_maxe(token_entropies: Sequence[float] | np.ndarray) -> float:
    """Max next-token entropy max_t H_t (nats) along one answer.

    Manakul, Liusie & Gales (2023, EMNLP) "SelfCheckGPT" (grey-box Max(H)). ``token_entropies``:
    (T,) entropies of the predictive distribution at each generated position, T >= 1.
    Direction: higher = more uncertain.
    """
    return float(np.max(_token_entropies_1d(token_entropies)))


def selfcheck_avge(token_entropies: Sequence[float] | np.ndarray) -> float:
    """Mean next-token entropy mean_t H_t (nats) along one answer.

    Manakul, Liusie & Gales (2023, EMNLP) "SelfCheckGPT" (grey-box Avg(H)). ``token_entropies``:
    (T,) entropies of the predictive distribution at each generated position, T >= 1.
    Direction: higher = more uncertain.
    """
    return float(np.mean(_token_entropies_1d(token_entropies)))


# ----------------------------------------------------------------------------------------------
# p(True) and verbalised confidence
# ----------------------------------------------------------------------------------------------


def _scalar(x: Any, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a real number; got {type(x).__name__}")
    return float(x)


def parse_p_true(logprob_true: float, logprob_false: float) -> float:
    """Probability of "True" from the log-probabilities of the "True" / "False" answer tokens.

    Kadavath et al. (2022) "Language models (mostly) know what they know" (p(True)). Returns
    exp(a) / (exp(a) + exp(b)) for a = ``logprob_true``, b = ``logprob_false`` (a softmax restricted
    to the two options, computed stably). Only the difference a - b matters, so raw logits work too.
    One of the two may be -inf (probability 0); NaN, +inf or both -inf raise ValueError.
    Returns a probability in [0, 1] (a confidence, not an uncertainty: see :func:`p_true_uncertainty`).
    """
    a = _scalar(logprob_true, "logprob_true")
    b = _scalar(logprob_false, "logprob_false")
    for name, v in (("logprob_true", a), ("logprob_false", b)):
        if math.isnan(v) or v == math.inf:
            raise ValueError(f"{name} must be finite or -inf; got {v}")
    if a == -math.inf and b == -math.inf:
        raise ValueError("logprob_true and logprob_false are both -inf: no probability mass on either option")
    if a == -math.inf:
        return 0.0
    if b == -math.inf:
        return 1.0
    d = b - a
    # 1 / (1 + exp(b - a)), stable for large |d|
    if d >= 0:
        e = math.exp(-d)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(d))


def p_true_uncertainty(p: float) -> float:
    """Uncertainty 1 - p(True) (unitless, in [0, 1]); Kadavath et al. (2022).

    ``p``: the model's probability that its answer is true, in [0, 1].
    Direction: higher = more uncertain.
    """
    v = _scalar(p, "p")
    if not math.isfinite(v) or not -_PROB_TOL <= v <= 1 + _PROB_TOL:
        raise ValueError(f"p must be a probability in [0, 1]; got {v}")
    return float(min(1.0, max(0.0, 1.0 - v)))


_NUM = r"(?<![\w.\-])(\d+(?:\.\d+)?|\.\d+)"
_LABELLED = re.compile(
    r"\b(?:confidence|probability|certainty|confident|prob|p)\b[^\d\-.]{0,20}?"
    + _NUM
    + r"(\s*(?:%|percent\b))?",
    re.IGNORECASE,
)
_PERCENT = re.compile(_NUM + r"\s*(?:%|percent\b)", re.IGNORECASE)
_BARE = re.compile(_NUM + r"(?!\w|\.\d)")
_ONLY_NUMBER = re.compile(r"^\s*" + r"(\d+(?:\.\d+)?|\.\d+)" + r"\s*(%|percent)?\s*[.!]?\s*$", re.IGNORECASE)


def _as_confidence(value: float, percent: bool, allow_percent_scale: bool) -> float | None:
    if percent:
        return value / 100.0 if 0.0 <= value <= 100.0 else None
    if 0.0 <= value <= 1.0:
        return value
    if allow_percent_scale and 1.0 < value <= 100.0:
        return value / 100.0
    return None


def parse_confidence(text: str) -> float:
    """Extract a verbalised confidence in [0, 1] from a model's reply; NaN if none can be read.

    Ask-for-confidence (A4C) / verbalised probability of Tian et al. (2023, EMNLP) "Just ask for
    calibration". Only numbers are read (no words such as "certain"). Rules, first match wins:

    1. A number after a label "confidence", "probability", "certainty", "confident", "prob" or "p",
       e.g. "Confidence: 0.75", "Probability = 0.9", "confidence level is 80%". A trailing "%" or
       "percent" divides by 100; an unmarked labelled value in (1, 100] is read as a percentage.
    2. Any number with "%" or "percent", e.g. "I am 80% sure", "85 percent".
    3. A reply that is only a number ("0.8", ".8", "85"): values in (1, 100] as percentages.
    4. The first bare number in [0, 1] anywhere in the text ("I'd say 0.7.").

    Negative numbers and values above 100 (or above 100%) are never read as confidences. Returns a
    float in [0, 1], or ``float("nan")`` when nothing parseable is found (e.g. "", "very sure").
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str; got {type(text).__name__}")
    m = _ONLY_NUMBER.match(text)
    if m:
        c = _as_confidence(float(m.group(1)), bool(m.group(2)), allow_percent_scale=True)
        return float("nan") if c is None else c
    for m in _LABELLED.finditer(text):
        c = _as_confidence(float(m.group(1)), bool(m.group(2)), allow_percent_scale=True)
        if c is not None:
            return c
    for m in _PERCENT.finditer(text):
        c = _as_confidence(float(m.group(1)), True, allow_percent_scale=False)
        if c is not None:
            return c
    for m in _BARE.finditer(text):
        c = _as_confidence(float(m.group(1)), False, allow_percent_scale=False)
        if c is not None:
            return c
    return float("nan")


def verbalised_uncertainty(text: str) -> float:
    """Uncertainty 1 - parse_confidence(text) (unitless, in [0, 1]); NaN when no confidence is found.

    Tian et al. (2023, EMNLP) "Just ask for calibration" (the paper's A4C column).
    Direction: higher = more uncertain.
    """
    c = parse_confidence(text)
    return float("nan") if math.isnan(c) else 1.0 - c


# ----------------------------------------------------------------------------------------------
# supervised embedding regression (Liu et al. 2024)
# ----------------------------------------------------------------------------------------------


def train_test_split_indices(
    n: int, test_fraction: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Random disjoint (train_idx, test_idx) index arrays covering range(n), each sorted.

    ``test_fraction`` in (0, 1); the test size is round(n * test_fraction), clamped so that both parts
    hold at least one index (n >= 2). Deterministic given ``seed`` (numpy default_rng).
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ValueError(f"n must be an integer >= 2 (both parts need an index); got {n!r}")
    f = _scalar(test_fraction, "test_fraction")
    if not 0.0 < f < 1.0:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1; got {f}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer; got {seed!r}")
    n = int(n)
    n_test = min(n - 1, max(1, int(round(n * f))))
    perm = np.random.default_rng(int(seed)).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


class EmbeddingRegression:
    """Supervised uncertainty: logistic regression from answer embeddings to correctness.

    Liu et al. (2024) "Uncertainty estimation and quantification for LLMs: a simple supervised
    approach" (the paper's ER column). Features are standardised (scikit-learn ``StandardScaler``)
    and fed to ``LogisticRegression`` (L2, ``C``, lbfgs, fixed ``random_state``).

    ``fit(X_train, correct_train)``: X (m, d) finite features (e.g. hidden states or sentence
    embeddings), correct (m,) booleans / 0-1 labels with both classes present; returns self.
    ``uncertainty(X)``: (m',) array of 1 - P(correct | x). Direction: higher = more uncertain.
    """

    def __init__(self, C: float = 1.0, random_state: int = 0, max_iter: int = 1000) -> None:
        c = _scalar(C, "C")
        if not math.isfinite(c) or c <= 0:
            raise ValueError(f"C (inverse regularisation strength) must be > 0; got {C!r}")
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
        self.C = c
        self.random_state = random_state
        self.max_iter = max_iter
        self.model_: Any = None
        self.n_features_: int | None = None

    @staticmethod
    def _features(X: Any, name: str) -> np.ndarray:
        try:
            A = np.asarray(X, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a numeric (m, d) array; got {type(X).__name__}") from exc
        if A.ndim != 2:
            raise ValueError(f"{name} must be 2-D (m samples, d features); got shape {A.shape}")
        if A.shape[0] == 0 or A.shape[1] == 0:
            raise ValueError(f"{name} must have at least one row and one column; got shape {A.shape}")
        if not np.all(np.isfinite(A)):
            raise ValueError(f"{name} contains NaN or inf")
        return A

    def fit(self, X_train: np.ndarray, correct_train: Sequence[bool] | np.ndarray) -> EmbeddingRegression:
        """Fit on (m, d) features and (m,) correctness labels; returns self."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        X = self._features(X_train, "X_train")
        y_raw = np.asarray(correct_train)
        if y_raw.ndim != 1 or y_raw.shape[0] != X.shape[0]:
            raise ValueError(
                f"correct_train must be 1-D with one label per row of X_train ({X.shape[0]}); "
                f"got shape {y_raw.shape}"
            )
        try:
            y_f = y_raw.astype(float)
        except (TypeError, ValueError) as exc:
            raise ValueError("correct_train must hold booleans or 0/1 labels") from exc
        if not np.all(np.isin(y_f, (0.0, 1.0))):
            raise ValueError(
                f"correct_train must hold booleans or 0/1 labels; got values {np.unique(y_f).tolist()}"
            )
        y = y_f.astype(int)
        if np.unique(y).size < 2:
            raise ValueError(
                f"correct_train holds a single class ({'all correct' if y[0] == 1 else 'all incorrect'}); "
                "logistic regression needs both correct and incorrect examples"
            )
        model = make_pipeline(
            StandardScaler(),
            LogisticRegression(C=self.C, random_state=self.random_state, max_iter=self.max_iter),
        )
        model.fit(X, y)
        self.model_ = model
        self.n_features_ = X.shape[1]
        return self

    def uncertainty(self, X: np.ndarray) -> np.ndarray:
        """(m,) array of 1 - P(correct | x) for the rows of X (m, d)."""
        if self.model_ is None:
            raise ValueError("EmbeddingRegression is not fitted yet: call fit(X_train, correct_train) first")
        A = self._features(X, "X")
        if A.shape[1] != self.n_features_:
            raise ValueError(f"X has {A.shape[1]} features but the model was fitted on {self.n_features_}")
        classes = list(self.model_.classes_)
        p_correct = self.model_.predict_proba(A)[:, classes.index(1)]
        return 1.0 - p_correct
