"""The paper's three uncertainty properties (Sec. 3.4) as executable predicates, in two readings.

The paper's total uncertainty is the sum of Shapley values, ``phi(s) = sum_i phi_i``. Efficiency makes it
equal to the joint differential entropy ``h(N(0, R))`` (:func:`efficiency_gap`; the identity itself is
derived symbolically by :func:`shapley.theory.symbolic.efficiency_symbolic`), so every property is really
a statement about a Gaussian log-determinant.

Two readings of "replace answer s_i by a new answer g":

``reading="rv"`` (random variables)
    R is any correlation matrix (PSD, unit diagonal) and g is a random variable. Property 1's g is a
    *noisy copy* of the argmin answer m, ``g = rho s_m + sqrt(1 - rho**2) z`` with z independent noise
    (rho = 1: an exact copy); Property 2's g is independent of everything (a zero row and column).
``reading="sentence"`` (what the pipeline computes)
    The input is the symmetrised entailment matrix C in [0, 1]; g is a new *answer*: a semantic duplicate
    of m (g's C row equals m's, and C(g, m) = 1) or an unrelated answer (C = 0 to all), and R is then
    built with the kernel of eq. 5 at a given beta, as the pipeline does.

Property 3 compares two configurations that differ in one answer (old s_j, new g). Its premise compares
Shapley values inside every sub-game: for each non-empty X not containing j, the value of g in the game
on X + {g} must exceed the value of s_j in the game on X + {s_j}.

Every check returns a :class:`PropertyCheck` (``holds`` plus the numbers behind it). The Hypothesis
searches over these predicates live in :mod:`shapley.theory.search`; this module imports only numpy and
:mod:`shapley.core`. The verdict on each reading of Propositions 3.5 and 3.6, with its witness, is computed
by :func:`prop35_readings` and :func:`prop36_readings`. Comparisons use the absolute tolerance :data:`TOL` (nats).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import validate
from shapley.core.entropy import HALF_LOG_2PIE, gaussian_entropy, shapley_values
from shapley.core.kernel import kernel_matrix
from shapley.core.psd import gershgorin_beta_bound, is_singular

Reading = Literal["rv", "sentence"]
READINGS: tuple[str, ...] = ("rv", "sentence")

TOL = 1e-9
"""Absolute tolerance (nats) for "<=", "<", ">=", ">" between uncertainties and for ties in argmin."""

NEAR_ONE = 1.0 - 1e-6
"""rho used where an exact copy would make Shapley values (-inf) - (-inf): the limit rho -> 1 is read off here."""


# ---------------------------------------------------------------------------------------------------
# Efficiency: the total IS the joint entropy
# ---------------------------------------------------------------------------------------------------


def efficiency_gap(R: ArrayLike) -> float:
    """``sum_i phi_i - h(N(0, R))`` in nats (exact Shapley values; zero up to round-off)."""
    return float(np.sum(shapley_values(R, "exact")) - gaussian_entropy(R))


# ---------------------------------------------------------------------------------------------------
# Totals, argmin, and the replacements
# ---------------------------------------------------------------------------------------------------


def total_uncertainty(R: ArrayLike) -> float:
    """The paper's ``phi(s) = sum_i phi_i`` (nats) with exact Shapley values; -inf for a singular R.

    For a singular R some Shapley values are (-inf) - (-inf) and undefined, but the total is still the
    joint entropy by efficiency (its limit along any rho -> 1 path), which is -inf.
    """
    A = validate.symmetric_matrix(R, "R")
    if is_singular(A):
        return -math.inf
    return float(np.sum(shapley_values(A, "exact")))


def argmin_player(R: ArrayLike) -> int:
    """Index of the answer with the smallest Shapley value (lowest index among ties within TOL)."""
    phi = shapley_values(R, "exact")
    return int(np.flatnonzero(phi <= phi.min() + TOL)[0])


def _corr(R: ArrayLike) -> NDArray[np.float64]:
    A = validate.symmetric_matrix(R, "R")
    if not np.allclose(np.diag(A), 1.0, atol=1e-12):
        raise ValueError("R must be a correlation matrix (unit diagonal)")
    return A


def _unit(C: ArrayLike) -> NDArray[np.float64]:
    A = validate.probability_matrix(C, "C")
    return validate.symmetric_matrix(A, "C")


def rv_duplicate(R: ArrayLike, i: int, m: int, rho: float = 1.0) -> NDArray[np.float64]:
    """Correlation matrix after replacing variable i by ``g = rho s_m + sqrt(1 - rho**2) z`` (z independent).

    ``Cov(g, s_k) = rho R[m, k]`` for every remaining k (and ``rho`` with s_m itself when i != m). The
    result is always PSD because (s, g) is a valid joint Gaussian. rho = 1 gives an exact copy of s_m.
    """
    A = _corr(R)
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [0, 1]; got {rho!r}")
    out = A.copy()
    row = rho * A[m]
    out[i, :] = row
    out[:, i] = row
    out[i, i] = 1.0
    return out


def rv_independent(R: ArrayLike, i: int) -> NDArray[np.float64]:
    """Correlation matrix after replacing variable i by one independent of all others (row/column e_i)."""
    out = _corr(R).copy()
    out[i, :] = 0.0
    out[:, i] = 0.0
    out[i, i] = 1.0
    return out


def sentence_duplicate(C: ArrayLike, i: int, m: int) -> NDArray[np.float64]:
    """C after replacing answer i by a semantic duplicate of answer m (copy m's row; C(g, m) = 1).

    For i == m the duplicate stands in for m itself and C is unchanged.
    """
    A = _unit(C)
    out = A.copy()
    out[i, :] = A[m]
    out[:, i] = A[m]
    out[i, i] = 1.0
    if i != m:
        out[i, m] = out[m, i] = 1.0
    return out


def sentence_unrelated(C: ArrayLike, i: int) -> NDArray[np.float64]:
    """C after replacing answer i by an answer unrelated to all others (C = 0 off the diagonal)."""
    out = _unit(C).copy()
    out[i, :] = 0.0
    out[:, i] = 0.0
    out[i, i] = 1.0
    return out


def rv_r_squared(R: ArrayLike) -> NDArray[np.float64]:
    """Squared multiple correlation of each variable with all the others: ``1 - 1 / (R^{-1})_ii``."""
    A = _corr(R)
    return 1.0 - 1.0 / np.diag(np.linalg.inv(A))


# ---------------------------------------------------------------------------------------------------
# The property checks
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replacement:
    """One replacement: answer ``i`` replaced by g; totals (nats) before/after and the required relation."""

    i: int
    old: float
    new: float
    required: str
    holds: bool


@dataclass(frozen=True)
class PropertyCheck:
    """Outcome of checking one property on one input. ``holds`` is the property's verdict on this input."""

    prop: str
    reading: str
    holds: bool
    rows: tuple[Replacement, ...]
    detail: dict[str, Any] = field(default_factory=dict)

    def failures(self) -> tuple[Replacement, ...]:
        """The replacements that violate the property."""
        return tuple(r for r in self.rows if not r.holds)


def _relation(old: float, new: float, required: str) -> bool:
    if required == "<=":
        return new <= old + TOL
    if required == "<":
        return new < old - TOL
    if required == ">=":
        return new >= old - TOL
    if required == ">":
        return new > old + TOL
    raise ValueError(required)  # pragma: no cover


def _reading(reading: str) -> Reading:
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {READINGS}; got {reading!r}")
    return reading  # type: ignore[return-value]


BetaSpec = float | str


def resolve_beta(beta: BetaSpec, n: int) -> float:
    """A kernel scale: a number in (0, 1], or ``"gershgorin"`` for the guaranteed-safe 1/(n - 1) of size n."""
    if isinstance(beta, str):
        if beta != "gershgorin":
            raise ValueError(f"beta must be a number in (0, 1] or 'gershgorin'; got {beta!r}")
        return gershgorin_beta_bound(n)
    return float(beta)


def _beta_R(C: NDArray[np.float64], beta: BetaSpec) -> NDArray[np.float64]:
    return kernel_matrix(C, resolve_beta(beta, C.shape[0]))


def check_property1(M: ArrayLike, reading: Reading = "rv", *, rho: float = 1.0, beta: BetaSpec = 0.5) -> PropertyCheck:
    """Property 1 (minimal uncertainty): replacing any answer by a copy of the argmin answer m must not
    raise the total, and must lower it strictly unless the replaced answer is itself a minimiser.

    Args:
        M: a correlation matrix R (``reading="rv"``) or a symmetric entailment matrix C (``"sentence"``).
        rho: correlation of the copy with s_m (rv reading; 1 = exact copy, total -inf).
        beta: kernel scale (sentence reading): a number or ``"gershgorin"`` (1/(n-1)).
    """
    reading = _reading(reading)
    if reading == "rv":
        R = _corr(M)
    else:
        C = _unit(M)
        R = _beta_R(C, beta)
    if is_singular(R):
        raise ValueError(
            "R is singular: some Shapley values are (-inf) - (-inf), so the argmin answer of Property 1 is "
            "undefined (see degenerate_witness and prop36_readings)"
        )
    phi = shapley_values(R, "exact")
    m = argmin_player(R)
    old = float(np.sum(phi))
    rows = []
    for i in range(R.shape[0]):
        if reading == "rv":
            new = total_uncertainty(rv_duplicate(R, i, m, rho))
        else:
            new = total_uncertainty(_beta_R(sentence_duplicate(C, i, m), beta))
        required = "<" if phi[i] > phi[m] + TOL else "<="
        rows.append(Replacement(i, old, new, required, _relation(old, new, required)))
    return PropertyCheck("1", reading, all(r.holds for r in rows), tuple(rows), {"argmin": m, "phi": phi})


def check_property2(M: ArrayLike, reading: Reading = "rv", *, beta: BetaSpec = 0.5) -> PropertyCheck:
    """Property 2 (maximal uncertainty): replacing any answer by an unrelated one must not lower the total,
    and must raise it strictly if the replaced answer was related to another one (rv: some R[i, k] != 0;
    sentence: some C[i, k] > 0)."""
    reading = _reading(reading)
    rows = []
    if reading == "rv":
        R = _corr(M)
        old = total_uncertainty(R)
        for i in range(R.shape[0]):
            related = bool(np.any(np.abs(np.delete(R[i], i)) > TOL))
            new = total_uncertainty(rv_independent(R, i))
            req = ">" if related else ">="
            rows.append(Replacement(i, old, new, req, _relation(old, new, req)))
    else:
        C = _unit(M)
        old = total_uncertainty(_beta_R(C, beta))
        for i in range(C.shape[0]):
            related = bool(np.any(np.delete(C[i], i) > TOL))
            new = total_uncertainty(_beta_R(sentence_unrelated(C, i), beta))
            req = ">" if related else ">="
            rows.append(Replacement(i, old, new, req, _relation(old, new, req)))
    return PropertyCheck("2", reading, all(r.holds for r in rows), tuple(rows))


def _player_value(R: NDArray[np.float64], players: tuple[int, ...], who: int) -> float:
    sub = R[np.ix_(players, players)]
    return float(shapley_values(sub, "exact")[players.index(who)])


def consistency_premise(R_old: ArrayLike, R_new: ArrayLike, j: int) -> tuple[bool, float, tuple[int, ...]]:
    """Property 3's premise on correlation matrices that differ only in row/column j (old s_j, new g).

    Returns (premise holds, smallest margin phi_g - phi_{s_j} over all non-empty X, the X attaining it).
    """
    A, B = _corr(R_old), _corr(R_new)
    n = A.shape[0]
    keep = [k for k in range(n) if k != j]
    if B.shape != A.shape or not np.allclose(A[np.ix_(keep, keep)], B[np.ix_(keep, keep)], atol=1e-12):
        raise ValueError("R_old and R_new must agree outside row/column j")
    worst, worst_X = math.inf, cast(tuple[int, ...], ())
    for k in range(1, n):
        for X in combinations(keep, k):
            players = tuple(sorted(X + (j,)))
            margin = _player_value(B, players, j) - _player_value(A, players, j)
            if margin < worst:
                worst, worst_X = margin, X
    return bool(worst > TOL), float(worst), worst_X


def check_property3(
    M_old: ArrayLike, M_new: ArrayLike, j: int, reading: Reading = "rv", *, beta: BetaSpec = 0.5
) -> PropertyCheck:
    """Property 3 (consistency): if g beats s_j in every sub-game (premise), replacing s_j by g must raise
    the total. ``M_old``/``M_new`` are correlation matrices (rv) or entailment matrices C (sentence) that
    differ only in row/column j. ``holds`` is ``not premise or conclusion``."""
    reading = _reading(reading)
    if reading == "rv":
        A, B = _corr(M_old), _corr(M_new)
    else:
        A, B = _beta_R(_unit(M_old), beta), _beta_R(_unit(M_new), beta)
    premise, margin, X = consistency_premise(A, B, j)
    old, new = total_uncertainty(A), total_uncertainty(B)
    conclusion = _relation(old, new, ">")
    row = Replacement(j, old, new, ">" if premise else "(premise false)", conclusion or not premise)
    return PropertyCheck(
        "3",
        reading,
        row.holds,
        (row,),
        {
            "premise": premise,
            "premise_margin": margin,
            "tightest_X": X,
            "conclusion": conclusion,
            "R_old": A,
            "R_new": B,
        },
    )


def property1_rv_rho_condition(R: ArrayLike) -> dict[str, Any]:
    """Exact condition for Property 1 in the rv reading with a noisy copy at correlation rho < 1.

    For i != m, the new total is ``h(rest) + 0.5 ln(2 pi e (1 - rho**2))`` and the old one
    ``h(rest) + h(s_i | rest)``, so the property holds iff ``rho**2 >= R2_i`` (squared multiple correlation
    of s_i on the others). For i == m the total changes by ``0.5 ln(rho**2 + (1 - rho**2) / v)`` with
    ``v = 1 - R2_m``, which is > 0 for every rho < 1 unless s_m is uncorrelated with all others.

    Returns a dict: argmin ``m``, ``r2`` (n,), ``rho_min`` = sqrt(max_{i != m} R2_i), and
    ``fails_at_m_for_rho_below_1`` (bool).
    """
    A = _corr(R)
    m = argmin_player(A)
    r2 = rv_r_squared(A)
    others = np.delete(r2, m)
    return {
        "m": m,
        "r2": r2,
        "rho_min": float(math.sqrt(max(0.0, float(others.max())))) if others.size else 0.0,
        "fails_at_m_for_rho_below_1": bool(r2[m] > TOL),
    }


# ---------------------------------------------------------------------------------------------------
# The Appendix A step "every other answer's Shapley value moves the right way"
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepCheck:
    """Per-answer Shapley values before/after a replacement and the answers that move the wrong way."""

    phi_old: NDArray[np.float64]
    phi_new: NDArray[np.float64]
    replaced: int
    wrong_way: tuple[int, ...]
    direction: str


def appendix_step_property1(R: ArrayLike, i: int, rho: float = NEAR_ONE) -> StepCheck:
    """Appendix A (Property 1) claims ``phi_k(new) <= phi_k(old)`` for every k != i when s_i is replaced
    by a copy of the argmin m. Lists the k (other than i and m) whose value goes UP instead.
    ``rho`` slightly below 1 keeps every value finite (the exact copy gives (-inf) - (-inf) for m and g)."""
    A = _corr(R)
    m = argmin_player(A)
    if i == m:
        raise ValueError("i must differ from the argmin m (the appendix step is about i != m)")
    old = shapley_values(A, "exact")
    new = shapley_values(rv_duplicate(A, i, m, rho), "exact")
    bad = tuple(k for k in range(A.shape[0]) if k not in (i, m) and new[k] > old[k] + TOL)
    return StepCheck(old, new, i, bad, "claimed phi_k(new) <= phi_k(old)")


def appendix_step_property3(R_old: ArrayLike, R_new: ArrayLike, j: int) -> StepCheck:
    """Appendix A (Property 3) claims ``phi_k(new) >= phi_k(old)`` for every k != j. Lists violators."""
    A, B = _corr(R_old), _corr(R_new)
    old, new = shapley_values(A, "exact"), shapley_values(B, "exact")
    bad = tuple(k for k in range(A.shape[0]) if k != j and new[k] < old[k] - TOL)
    return StepCheck(old, new, j, bad, "claimed phi_k(new) >= phi_k(old)")


def appendix_step_property2(R: ArrayLike, i: int) -> StepCheck:
    """Appendix A (Property 2) claims ``phi_k(new) >= phi_k(old)`` for k != i when s_i becomes independent.
    This one is TRUE (entropy is submodular: dropping s_i from the conditioning sets can only raise each
    marginal contribution of s_k). Lists violators (expected: none)."""
    A = _corr(R)
    old, new = shapley_values(A, "exact"), shapley_values(rv_independent(A, i), "exact")
    bad = tuple(k for k in range(A.shape[0]) if k != i and new[k] < old[k] - TOL)
    return StepCheck(old, new, i, bad, "claimed phi_k(new) >= phi_k(old)")


# ---------------------------------------------------------------------------------------------------
# Hand-made witnesses (explained in the notebook)
# ---------------------------------------------------------------------------------------------------


def corr_from_partials(P: ArrayLike) -> NDArray[np.float64]:
    """Correlation matrix from C-vine partial correlations (Lewandowski, Kurowicka & Joe 2009).

    ``P[k, i]`` (k < i) is the partial correlation of variables k and i given 0..k-1; any values in
    (-1, 1) give a positive definite correlation matrix, and P = 0 gives the identity. Values of exactly
    +-1 are allowed and give a singular (still PSD) matrix, the limit of positive definite ones: e.g.
    ``P[0, 1] = 1`` makes variable 1 an exact copy of variable 0. Only the strict upper triangle of the
    (n, n) array P is read.

    Examples:
        >>> corr_from_partials(np.array([[0, 1.0, 0.5], [0, 0, 0.3], [0, 0, 0]]))
        array([[1. , 1. , 0.5],
               [1. , 1. , 0.5],
               [0.5, 0.5, 1. ]])
    """
    Pm = np.asarray(P, dtype=np.float64)
    if Pm.ndim != 2 or Pm.shape[0] != Pm.shape[1]:
        raise ValueError(f"P must be square; got shape {Pm.shape}")
    n = Pm.shape[0]
    iu = np.triu_indices(n, 1)
    if np.any(np.abs(Pm[iu]) > 1):
        raise ValueError("partial correlations must lie in [-1, 1]")
    R = np.eye(n)
    for k in range(n - 1):
        for i in range(k + 1, n):
            p = Pm[k, i]
            for h in range(k - 1, -1, -1):
                p = p * math.sqrt((1 - Pm[h, i] ** 2) * (1 - Pm[h, k] ** 2)) + Pm[h, i] * Pm[h, k]
            R[k, i] = R[i, k] = p
    return R


def random_correlation(n: int, seed: int = 0, max_partial: float = 0.95) -> NDArray[np.float64]:
    """A random PD correlation matrix: C-vine partial correlations uniform in (-max_partial, max_partial)."""
    rng = np.random.default_rng(seed)
    P = np.zeros((n, n))
    P[np.triu_indices(n, 1)] = rng.uniform(-max_partial, max_partial, n * (n - 1) // 2)
    return corr_from_partials(P)


def property3_witness_rv() -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """A hand-made counterexample to Property 3 in the rv reading: (R_old, R_new, j=2).

    s_1, s_2 correlate 0.5; the old s_3 correlates 0.6 with each. The new g correlates 0.58 with s_1 and
    -0.1 with s_2: weaker than s_3 against each one alone, so g wins every sub-game, yet together s_1 and
    s_2 predict g better than they predict s_3 (a suppressor effect) and the total goes down.
    """
    R_old = np.array([[1.0, 0.5, 0.6], [0.5, 1.0, 0.6], [0.6, 0.6, 1.0]])
    R_new = np.array([[1.0, 0.5, 0.58], [0.5, 1.0, -0.1], [0.58, -0.1, 1.0]])
    return R_old, R_new, 2


def hub_C(n: int, eps_hub: float = 0.05, eps_rest: float = 0.0, g_row: bool = False) -> NDArray[np.float64]:
    """The 'hub' entailment pattern that breaks Properties 2 and 3 in the sentence reading (n >= 3).

    Answers 0..n-2 are the *rest*: answer 0 (the hub) is judged equivalent to each of 1..n-2 (C = 1),
    which are mutually unrelated (C = 0). The last answer s (index n-1) relates weakly to the hub
    (C = ``eps_hub``) and to the others (C = ``eps_rest``). With ``g_row=True`` the last answer is instead
    the unrelated g (C = 0 everywhere), i.e. the matrix after Property 2's replacement.

    Why it matters: with beta = 0.5 the rest's kernel matrix S makes the hub's entry of S^{-1} 1 negative
    from n = 6 on (the hub is 'explained' by the others), so a little extra similarity to the hub makes
    s *less* predictable from the rest, not more.
    """
    if int(n) != n or n < 3:
        raise ValueError(f"n must be an integer >= 3; got {n!r}")
    C = np.zeros((n, n))
    C[0, 1 : n - 1] = C[1 : n - 1, 0] = 1.0
    if not g_row:
        C[n - 1, 1 : n - 1] = C[1 : n - 1, n - 1] = eps_rest
        C[0, n - 1] = C[n - 1, 0] = eps_hub
    np.fill_diagonal(C, 1.0)
    return C


def hub_weight(n: int, beta: BetaSpec = 0.5) -> float:
    """The hub's entry of ``S^{-1} 1`` for the rest's kernel matrix S of :func:`hub_C` (negative means the
    hub pattern can break Property 2 in the sentence reading)."""
    C = hub_C(n)
    S = _beta_R(C, resolve_beta(beta, n))[: n - 1, : n - 1]
    return float(np.linalg.solve(S, np.ones(n - 1))[0])


def property1_witness_sentence() -> NDArray[np.float64]:
    """C on which Property 1 fails in its strict part in the sentence reading at beta = 0.5.

    This is the example that ``shapley.theory.search.search_counterexample("1", "sentence",
    n_range=(3, 6), strict_only=True)`` finds and shrinks (the tests check that it still does): answer 1
    is related to answers 0, 2 and 4; replacing it by a duplicate of the least-uncertain answer raises
    the total, although answer 1 is not itself a minimiser.
    """
    C = np.zeros((5, 5))
    for (a, b), c in {(0, 1): 0.3, (1, 2): 0.1, (1, 4): 0.8, (3, 4): 0.4}.items():
        C[a, b] = C[b, a] = c
    np.fill_diagonal(C, 1.0)
    return C


def property2_witness_sentence(n: int = 6, eps_hub: float = 0.05) -> NDArray[np.float64]:
    """C on which Property 2 fails in the sentence reading at beta = 0.5 (replace the last answer)."""
    return hub_C(n, eps_hub)


def property3_witness_sentence(
    n: int = 7, eps_hub: float = 0.1, eps_rest: float = 0.005
) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """(C_old, C_new, j) on which Property 3 fails in the sentence reading at beta = 0.5: g is the
    unrelated answer, s_j the last answer of :func:`hub_C` with a small similarity to everyone."""
    return hub_C(n, eps_hub, eps_rest), hub_C(n, g_row=True), n - 1


# ---------------------------------------------------------------------------------------------------
# Propositions 3.5 and 3.6, reading by reading: verdict and witness
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadingVerdict:
    """One reading of a claim: its verdict, the reason in one sentence, and the input that decides it."""

    claim: str
    reading: str
    verdict: str
    reason: str
    witness: dict[str, Any]


def degenerate_witness(rho_other: float = 0.5) -> NDArray[np.float64]:
    """The paper's own example for Proposition 3.5: answers 0 and 1 with correlation 1 (an exact duplicate),
    answer 2 correlated ``rho_other`` with both. R is singular (PSD, one zero eigenvalue).

    Examples:
        >>> degenerate_witness()
        array([[1. , 1. , 0.5],
               [1. , 1. , 0.5],
               [0.5, 0.5, 1. ]])
    """
    if not -1.0 < rho_other < 1.0:
        raise ValueError(f"rho_other must lie in (-1, 1); got {rho_other!r}")
    return corr_from_partials(np.array([[0.0, 1.0, rho_other], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))


def degenerate_property1_rows(R: ArrayLike) -> tuple[Replacement, ...]:
    """Property 1's strict part on a singular R, for EVERY choice of the answer m that g copies (the argmin
    is undefined there): rows (i != m) with old and new totals; ``holds`` is False when -inf < -inf fails."""
    A = _corr(R)
    old = total_uncertainty(A)
    rows = []
    for m in range(A.shape[0]):
        for i in range(A.shape[0]):
            if i != m:
                new = total_uncertainty(rv_duplicate(A, i, m, 1.0))
                rows.append(Replacement(i, old, new, "<", _relation(old, new, "<")))
    return tuple(rows)


def undefined_shapley_message(R: ArrayLike) -> str | None:
    """The core's error message if the Shapley values of R are undefined ((-inf) - (-inf)), else None."""
    try:
        shapley_values(_corr(R), "exact")
    except ValueError as exc:
        return str(exc)
    return None


def chain_rule_check(n_matrices: int = 200, seed: int = 0, n_range: tuple[int, int] = (3, 6)) -> dict[str, Any]:
    """Properties 1 (exact copy) and 2 for h on seeded random positive definite correlation matrices, with
    Property 2's change compared with the chain rule ``h(new) - h(old) = -1/2 ln(1 - R2_i)``.

    Returns a dict: ``matrices`` checked, ``property1_failures``, ``property2_failures``, ``max_chain_rule_error``
    (nats) and ``smallest_strict_gain`` (nats, the smallest rise when the replaced answer was correlated).
    """
    rng = np.random.default_rng(seed)
    p1 = p2 = 0
    err, gain = 0.0, math.inf
    for k in range(n_matrices):
        n = int(rng.integers(n_range[0], n_range[1] + 1))
        R = random_correlation(n, seed=int(rng.integers(2**31)) + k, max_partial=0.9)
        p1 += not check_property1(R, "rv").holds
        chk = check_property2(R, "rv")
        p2 += not chk.holds
        r2 = rv_r_squared(R)
        for row in chk.rows:
            err = max(err, abs((row.new - row.old) + 0.5 * math.log(1.0 - r2[row.i])))
            if row.required == ">":
                gain = min(gain, row.new - row.old)
    return {
        "matrices": n_matrices,
        "property1_failures": p1,
        "property2_failures": p2,
        "max_chain_rule_error": err,
        "smallest_strict_gain": gain,
    }


def prop35_readings(n_matrices: int = 200, seed: int = 0) -> tuple[ReadingVerdict, ReadingVerdict]:
    """Proposition 3.5 ("h violates Properties 1 and 2"), reading by reading.

    * non-singular R: contradicted. Chain rule: replacing s_i by an independent g changes h by
      ``-1/2 ln(1 - R2_i) >= 0``, strictly positive when s_i is correlated with the rest (conditioning
      reduces entropy); an exact copy makes h = -inf. Witness: :func:`chain_rule_check`.
    * the paper's degenerate witness (:func:`degenerate_witness`, a pair with rho = 1): the strict parts
      fail for h (-inf is not greater, or smaller, than -inf), as the paper says; but the Shapley values
      are undefined on the same input (see :func:`prop36_readings`), so it cannot separate h from phi.
    """
    check = chain_rule_check(n_matrices, seed)
    R = degenerate_witness()
    p2 = check_property2(R, "rv")
    p1_rows = degenerate_property1_rows(R)
    nonsingular = ReadingVerdict(
        "prop-3.5",
        "random variables, non-singular R",
        "contradicted",
        "h satisfies Property 2 (conditioning reduces entropy: the total rises by -1/2 ln(1 - R2_i) >= 0) "
        "and Property 1 (an exact copy sends h to -inf)",
        check,
    )
    degenerate = ReadingVerdict(
        "prop-3.5",
        "the paper's degenerate example (a pair with rho = 1)",
        "reproduced",
        "h is -inf before and after the replacement, so the strict parts of Properties 1 and 2 fail; the "
        "Shapley values are undefined on the same input, so Proposition 3.6 fails there too",
        {
            "R": R,
            "property2": p2,
            "property2_failures": p2.failures(),
            "property1_strict_failures": tuple(r for r in p1_rows if not r.holds),
            "property1_rows": p1_rows,
            "shapley_error": undefined_shapley_message(R),
        },
    )
    return nonsingular, degenerate


def sentence_premise_bounds(beta: float = 0.5) -> dict[str, float]:
    """What the formal premises of Properties 1-2 become through the kernel at ``beta``.

    A semantic duplicate (C = 1) gets ``R = beta`` (Property 1 asks for correlation 1), and an unrelated
    answer (C = 0) keeps ``R = beta exp(-1/2) > 0`` (Property 2 asks for correlation 0). Unless beta = 1
    neither premise can occur, so sentence-reading counterexamples to Properties 1-2 test the pipeline's
    notion of duplicate / unrelated, not the formal properties.

    Examples:
        >>> b = sentence_premise_bounds(0.5)
        >>> b["duplicate_R"], round(b["unrelated_R"], 4)
        (0.5, 0.3033)
    """
    R = kernel_matrix(np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), float(beta))
    return {"beta": float(beta), "duplicate_R": float(R[0, 1]), "unrelated_R": float(R[0, 2])}


def prop36_readings(beta: float = 0.5) -> tuple[ReadingVerdict, ...]:
    """Proposition 3.6 ("phi satisfies Properties 1, 2 and 3"), reading by reading, with witnesses:
    Property 3 fails in both readings (:func:`property3_witness_rv`, :func:`property3_witness_sentence`),
    the Shapley values are undefined on the degenerate example (:func:`degenerate_witness`), and the
    sentence-reading counterexamples to Properties 1-2 (:func:`property1_witness_sentence`,
    :func:`property2_witness_sentence`) break the properties' intent, not their formal statement
    (:func:`sentence_premise_bounds`)."""
    R_old, R_new, j = property3_witness_rv()
    C_old, C_new, js = property3_witness_sentence()
    R = degenerate_witness()
    p1 = check_property1(property1_witness_sentence(), "sentence", beta=beta)
    p2 = check_property2(property2_witness_sentence(), "sentence", beta=beta)
    return (
        ReadingVerdict(
            "prop-3.6",
            "random variables, non-singular R",
            "contradicted",
            "Property 3 fails (a suppressor effect: g beats s_j in every sub-game, yet the total falls); "
            "Property 2 holds there, but only because the Shapley total equals h; Property 1 is undefined with "
            "an exact copy (the new R is singular, as in the degenerate example) and fails with a near copy",
            {"property3": check_property3(R_old, R_new, j, "rv"), "R_old": R_old, "R_new": R_new, "j": j},
        ),
        ReadingVerdict(
            "prop-3.6",
            "random variables, the paper's degenerate example (a pair with rho = 1)",
            "contradicted",
            "the Shapley values are (-inf) - (-inf), undefined, so phi satisfies no property on this input",
            {"R": R, "shapley_error": undefined_shapley_message(R)},
        ),
        ReadingVerdict(
            "prop-3.6",
            f"sentences through the kernel (beta = {beta:g}), Property 3",
            "contradicted",
            "g is less similar than s_j to every answer and wins every sub-game, yet the total falls",
            {"property3": check_property3(C_old, C_new, js, "sentence", beta=beta), "C_old": C_old, "j": js},
        ),
        ReadingVerdict(
            "prop-3.6",
            f"sentences through the kernel (beta = {beta:g}), Properties 1-2",
            "intent broken, formal premises unreachable",
            "a duplicate gets R = beta (never 1) and an unrelated answer R = beta e^(-1/2) (never 0), so the "
            "formal premises cannot occur; with the pipeline's duplicate and unrelated answers the total "
            "moves the wrong way",
            {"property1": p1, "property2": p2, "premises": sentence_premise_bounds(beta)},
        ),
    )


# ---------------------------------------------------------------------------------------------------
# Search targets (how close an input is to a violation; used by shapley.theory.search)
# ---------------------------------------------------------------------------------------------------


def violation_score(check: PropertyCheck) -> float:
    """How close ``check`` is to failing (nats; > 0 means it fails): used as Hypothesis' search target.

    Properties 1-2: the largest move of a total in the forbidden direction. Property 3: the smaller of
    the premise margin and the drop of the total (both must be positive for a counterexample).
    """
    if check.prop == "3":
        r = check.rows[0]
        drop = r.old - r.new
        return float(min(check.detail["premise_margin"], drop)) if math.isfinite(drop) else math.nan
    moves = []
    for r in check.rows:
        if not (math.isfinite(r.old) and math.isfinite(r.new)):
            continue
        moves.append(r.new - r.old if r.required in ("<=", "<") else r.old - r.new)
    return float(max(moves)) if moves else math.nan


def step_score(step: StepCheck) -> float:
    """Largest wrong-way move of a Shapley value in an Appendix A step (nats; > 0 means the step fails)."""
    d = step.phi_new - step.phi_old
    sign = 1.0 if "<=" in step.direction else -1.0
    mask = np.ones(d.size, dtype=bool)
    mask[step.replaced] = False
    vals = sign * d[mask]
    vals = vals[np.isfinite(vals)]
    return float(vals.max()) if vals.size else math.nan


def summarize(check: PropertyCheck) -> list[dict[str, Any]]:
    """Rows (one per replacement) for display: i, old total, new total, required relation, holds."""
    return [
        {
            "replaced": r.i,
            "old_total": r.old,
            "new_total": r.new,
            "required": f"new {r.required} old" if r.required in ("<=", "<", ">=", ">") else r.required,
            "holds": r.holds,
        }
        for r in check.rows
    ]


def entropy_unit() -> float:
    """Entropy of one standard normal variable, 0.5 ln(2 pi e) nats (the value of an independent answer)."""
    return HALF_LOG_2PIE
