"""The search behind :mod:`shapley.theory.axioms`: every estimator as a set function, the three properties
for one estimator and one input, and the seeded random search with its greedy shrinker.

The readings, the rule (each estimator judged by its *own* Shapley values) and the verdicts are described in
:mod:`shapley.theory.axioms`, which builds the table from :func:`first_counterexample`. The properties' rules
are those of :mod:`shapley.theory.properties` (:func:`~shapley.theory.properties.judge_property1` and its
siblings), applied to each estimator's own totals and Shapley values.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from shapley.core import baselines
from shapley.core.baselines.entropies import CLUSTER_THRESHOLD
from shapley.core.entropy import game_shapley_values, gaussian_entropy
from shapley.core.kernel import kernel_matrix
from shapley.theory import properties as pr
from shapley.theory.worstcase import symmetric_from_upper

SENTENCE_BETA = 0.5
"""Kernel scale of Shap in the sentence reading (the paper's default; R is PSD for every C up to n = 7)."""


N_RANGES: dict[str, tuple[int, int]] = {"1": (3, 6), "2": (3, 6), "3": (3, 5)}
"""Number of answers drawn per property (Property 3 adds g: joint matrices up to 6 x 6)."""

SHRINK_BUDGET = 400
"""Most property checks the greedy shrinker may spend on one counterexample."""

Matrix = NDArray[np.float64]


# ---------------------------------------------------------------------------------------------------
# Estimators as set functions
# ---------------------------------------------------------------------------------------------------


def _clusters(C: Matrix) -> NDArray[np.int64]:
    return baselines.semantic_clusters(C, rule="bidirectional", threshold=CLUSTER_THRESHOLD)


def _loglik(p: NDArray[np.float64] | None) -> NDArray[np.float64]:
    assert p is not None, "this estimator needs likelihoods"
    return np.log(p)


@dataclass(frozen=True)
class Estimator:
    """An uncertainty estimator as a function of a matrix (and likelihoods), per reading.

    ``sentence(C, p)`` takes a symmetric entailment matrix C (n, n) and likelihoods p (n,) or None;
    ``rv(R)`` takes a correlation matrix, or is None when the estimator cannot ("not applicable");
    ``rv_nonnegative``: the rv reading is restricted to correlation matrices with entries in [0, 1].
    """

    name: str
    sentence: Callable[[Matrix, NDArray[np.float64] | None], float]
    rv: Callable[[Matrix], float] | None
    uses_likelihoods: bool
    rv_nonnegative: bool


ESTIMATORS: tuple[Estimator, ...] = (
    Estimator("Shap", lambda C, p: gaussian_entropy(kernel_matrix(C, SENTENCE_BETA)), gaussian_entropy, False, False),
    Estimator("SE", lambda C, p: baselines.semantic_entropy(_loglik(p), _clusters(C)), None, True, False),
    Estimator("DSE", lambda C, p: baselines.discrete_semantic_entropy(_clusters(C)), None, False, False),
    Estimator("NumSet", lambda C, p: baselines.num_semantic_sets(_clusters(C)), None, False, False),
    Estimator("EigV", lambda C, p: baselines.eigv(C), baselines.eigv, False, True),
    Estimator("Deg", lambda C, p: baselines.degree(C), baselines.degree, False, True),
    Estimator("Ecc", lambda C, p: baselines.eccentricity(C), baselines.eccentricity, False, True),
    Estimator("KLE", lambda C, p: baselines.kernel_language_entropy(C), baselines.kernel_language_entropy, False, True),
    Estimator("NE", lambda C, p: baselines.predictive_entropy(_loglik(p)), None, True, False),
)
"""Every estimator judged, in display order: Shap (Gaussian entropy of the kernel matrix), SE (semantic entropy),
DSE (discrete SE), NumSet (number of semantic sets), EigV (sum of Laplacian eigen-gaps), Deg (1 - mean degree / n),
Ecc (eccentricity), KLE (kernel language entropy) and NE (predictive entropy; lexical similarity needs texts,
which no entailment matrix provides)."""


def estimator(name: str) -> Estimator:
    """Look an estimator up by name (``KeyError`` naming the known ones)."""
    for e in ESTIMATORS:
        if e.name == name:
            return e
    raise KeyError(f"unknown estimator {name!r}; known: {[e.name for e in ESTIMATORS]}")


def applicable(est: Estimator, reading: str) -> bool:
    """Whether ``est`` can be judged in ``reading`` (every estimator takes an entailment matrix)."""
    return reading == "sentence" or est.rv is not None


def value(est: Estimator, reading: str, M: Matrix, p: NDArray[np.float64] | None = None) -> float:
    """U of the answers whose matrix is ``M`` (and likelihoods ``p``) in ``reading``."""
    if reading == "sentence":
        return float(est.sentence(M, p))
    if est.rv is None:
        raise ValueError(f"{est.name} cannot take a correlation matrix (not applicable in the rv reading)")
    return float(est.rv(M))


def coalition_worths(
    est: Estimator, reading: str, M: Matrix, p: NDArray[np.float64] | None = None, apart: tuple[int, int] | None = None
) -> Matrix:
    """``v(S) = U(answers in S)`` for all ``2**n`` coalitions S, indexed by bitmask; ``v(empty) = 0``.

    ``apart=(a, b)``: leave every coalition holding both a and b as NaN (Property 3 never puts the old
    answer and g together, and their joint matrix need not be a valid input).

    Examples:
        >>> v = coalition_worths(estimator("NumSet"), "sentence", np.array([[1.0, 1.0], [1.0, 1.0]]))
        >>> v.tolist()  # both answers in one semantic set
        [0.0, 1.0, 1.0, 1.0]
        >>> game_shapley_values(v).tolist()  # U's own Shapley values, which sum to U(all answers)
        [0.5, 0.5]
    """

    def worth(idx: list[int]) -> float:
        return value(est, reading, M[np.ix_(idx, idx)], None if p is None else p[idx])

    return pr.coalition_worths(worth, M.shape[0], apart)


# ---------------------------------------------------------------------------------------------------
# The three properties for one estimator and one input
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One input of a search. ``params``: the upper triangle of C (sentence) or of the C-vine partial
    correlations (rv), over n answers (n + 1 for Property 3, whose last answer is g); ``p``: likelihoods
    (n, or n + 1 with g's last for Properties 2 and 3) or None; ``j``: Property 3's replaced answer."""

    reading: str
    n_total: int
    params: tuple[float, ...]
    p: tuple[float, ...] | None
    j: int

    def matrix(self) -> Matrix:
        """The matrix the estimator sees: C itself (sentence) or the correlation matrix (rv)."""
        upper = symmetric_from_upper(self.n_total, self.params)
        return pr.corr_from_partials(upper) if self.reading == "rv" else upper


def _with(p: NDArray[np.float64] | None, i: int, q: float | None) -> NDArray[np.float64] | None:
    if p is None or q is None:
        return p
    out = p.copy()
    out[i] = q
    return out


def check_property1(est: Estimator, reading: str, M: Matrix, p: NDArray[np.float64] | None = None) -> pr.PropertyCheck:
    """Property 1 (the rule: :func:`~shapley.theory.properties.judge_property1`) for U and its own Shapley values.
    ``M``: C (sentence) or R (rv), (n, n); ``p``: likelihoods (n,) or None; the duplicate carries ``p[m]``."""
    worths = coalition_worths(est, reading, M, p)

    def duplicate_total(i: int, m: int) -> float:
        q = None if p is None else float(p[m])
        return value(est, reading, pr.with_duplicate(M, i, m), _with(p, i, q))

    return pr.judge_property1(reading, game_shapley_values(worths), float(worths[-1]), duplicate_total)


def check_property2(est: Estimator, reading: str, M: Matrix, p: NDArray[np.float64] | None = None) -> pr.PropertyCheck:
    """Property 2 (the rule: :func:`~shapley.theory.properties.judge_property2`) for U. ``M``: C or R, (n, n);
    ``p``: (n + 1,) likelihoods, the unrelated answer's last, or None."""
    p_ans, q = (None, None) if p is None else (p[:-1], float(p[-1]))
    old = value(est, reading, M, p_ans)
    return pr.judge_property2(
        reading, M, old, lambda i: value(est, reading, pr.with_unrelated(M, i), _with(p_ans, i, q))
    )


def check_property3(
    est: Estimator, reading: str, M: Matrix, j: int, p: NDArray[np.float64] | None = None
) -> pr.PropertyCheck:
    """Property 3 (the rule: :func:`~shapley.theory.properties.judge_property3`) for U on one joint matrix over
    (answers 0..n-1, g = n), (n + 1, n + 1). ``p``: (n + 1,) likelihoods or None."""
    n = M.shape[0] - 1
    worths = coalition_worths(est, reading, M, p, apart=(j, n))
    margin, tightest = pr.consistency_premise(worths, j)
    old = float(worths[(1 << n) - 1])
    new = float(worths[((1 << n) - 1) & ~(1 << j) | (1 << n)])
    return pr.judge_property3(reading, j, old, new, margin, tightest)


def check(est: Estimator, prop: str, ex: Example) -> pr.PropertyCheck | None:
    """Property ``prop`` for ``est`` on ``ex``; None when U's Shapley values are undefined there."""
    M, p = ex.matrix(), None if ex.p is None else np.asarray(ex.p, dtype=np.float64)
    try:
        if prop == "1":
            return check_property1(est, ex.reading, M, p)
        if prop == "2":
            return check_property2(est, ex.reading, M, p)
        return check_property3(est, ex.reading, M, ex.j, p)
    except ValueError as exc:
        if "undefined" not in str(exc):
            raise
        return None  # a marginal (-inf) - (-inf): the property cannot be judged on this input


# ---------------------------------------------------------------------------------------------------
# Seeded random search and greedy shrinking
# ---------------------------------------------------------------------------------------------------


def _draw(rng: np.random.Generator, est: Estimator, prop: str, reading: str, n_range: tuple[int, int]) -> Example:
    """One random example. Sentence entries: 0 or 1 with probability 1/4 each, else uniform on
    {0.1, ..., 0.9}; rv partial correlations: 0 with probability 1/4, else uniform on {-0.9, ..., 0.9}
    ({0.1, ..., 0.9} for the non-negative domain); likelihoods uniform on {0.1, ..., 0.9}."""
    n = int(rng.integers(n_range[0], n_range[1] + 1))
    n_total = n + (prop == "3")
    m = n_total * (n_total - 1) // 2
    if reading == "sentence":
        kind = rng.integers(0, 4, m)
        vals = np.where(kind == 0, 0, np.where(kind == 1, 10, rng.integers(1, pr.TENTHS + 1, m)))
    else:
        mags = rng.integers(1, pr.TENTHS + 1, m)
        signs = np.ones(m, dtype=np.int64) if est.rv_nonnegative else rng.choice([-1, 1], m)
        vals = np.where(rng.integers(0, 4, m) == 0, 0, mags * signs)
    n_lik = n_total if prop == "3" else n + (prop == "2")
    p = tuple(rng.integers(1, pr.TENTHS + 1, n_lik) / 10) if est.uses_likelihoods else None
    j = int(rng.integers(0, n)) if prop == "3" else 0
    return Example(reading, n_total, tuple(vals / 10), p, j)


def _rank_param(v: float, reading: str) -> int:
    k = round(10 * v)
    if reading == "sentence":
        return {0: 0, 10: 1, 5: 2}.get(k, 3 + k)
    return 2 * abs(k) + (k < 0)


def _complexity(ex: Example) -> tuple[int, int, int, int]:
    lik = 0 if ex.p is None else sum(2 * abs(round(10 * q) - 5) + (q < 0.5) for q in ex.p)
    return ex.n_total, sum(_rank_param(v, ex.reading) for v in ex.params), lik, ex.j


def _drop(ex: Example, k: int, prop: str) -> Example:
    """``ex`` without answer k (a row and column of the parameter matrix, and its likelihood)."""
    n = ex.n_total
    keep = [i for i in range(n) if i != k]
    sub = symmetric_from_upper(n, ex.params)[np.ix_(keep, keep)]
    # (Property 2 stores g's likelihood last, after the n answers' ones.)
    p = None if ex.p is None else tuple(q for i, q in enumerate(ex.p) if i != k)
    j = ex.j - (k < ex.j) if prop == "3" else 0
    return replace(ex, n_total=n - 1, params=tuple(sub[np.triu_indices(n - 1, 1)]), p=p, j=j)


def _candidates(ex: Example, prop: str) -> Iterator[Example]:
    """Simpler variants of ``ex``, in the order the shrinker tries them."""
    n_answers = ex.n_total - (prop == "3")
    if n_answers > 2:
        for k in range(n_answers):
            if not (prop == "3" and k == ex.j):
                yield _drop(ex, k, prop)
    for idx, v in enumerate(ex.params):
        options = [0.0, 1.0, 0.5] if ex.reading == "sentence" else [0.0, -v]
        options.append(round(v - math.copysign(0.1, v), 1) if v else 0.0)
        for w in options:
            yield replace(ex, params=ex.params[:idx] + (w,) + ex.params[idx + 1 :])
    if ex.p is not None:
        for idx, q in enumerate(ex.p):
            for w in (0.5, round(q + math.copysign(0.1, 0.5 - q), 1)):
                yield replace(ex, p=ex.p[:idx] + (w,) + ex.p[idx + 1 :])
    for j in range(ex.j):
        yield replace(ex, j=j)


def _fails(est: Estimator, prop: str, ex: Example) -> pr.PropertyCheck | None:
    if ex.reading == "rv" and est.rv_nonnegative and min(ex.params, default=0.0) < 0:
        return None
    if ex.p is not None and not all(0.0 < q <= 1.0 for q in ex.p):
        return None
    chk = check(est, prop, ex)
    return chk if chk is not None and not chk.holds else None


def shrink(est: Estimator, prop: str, ex: Example) -> tuple[Example, pr.PropertyCheck]:
    """Greedy shrink: repeatedly take the first simpler variant (fewer answers, entries nearer 0 / 1 / 0.5,
    likelihoods nearer 0.5, smaller j) that still fails, until none does or :data:`SHRINK_BUDGET` checks are spent.
    Every accepted step lowers :func:`_complexity`, so it terminates."""
    found = _fails(est, prop, ex)
    if found is None:
        raise ValueError("shrink needs a failing example")
    spent, improved = 0, True
    while improved and spent < SHRINK_BUDGET:
        improved = False
        for cand in _candidates(ex, prop):
            if _complexity(cand) >= _complexity(ex):
                continue
            spent += 1
            chk = _fails(est, prop, cand)
            if chk is not None:
                ex, found, improved = cand, chk, True
                break
            if spent >= SHRINK_BUDGET:
                break
    return ex, found


def first_counterexample(
    est: Estimator, prop: str, reading: str, max_examples: int, seed: int = 0
) -> tuple[int, Example, pr.PropertyCheck] | None:
    """Draw up to ``max_examples`` seeded examples of the cell; the first that fails, as (how many examples were
    drawn, the shrunk example, its check), or None if none fails. ``est`` must be applicable in ``reading``."""
    # the cell's own generator, seeded by (seed, crc32 of the cell's name): independent of the other cells
    rng = np.random.default_rng([int(seed), zlib.crc32(f"{est.name}|{prop}|{reading}".encode())])
    for k in range(1, max_examples + 1):
        ex = _draw(rng, est, prop, reading, N_RANGES[prop])
        if _fails(est, prop, ex) is not None:
            return (k, *shrink(est, prop, ex))
    return None
