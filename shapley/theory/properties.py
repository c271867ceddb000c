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

Every check returns a :class:`PropertyCheck` (``holds`` plus the numbers behind it); the rule of each property
is stated once (:func:`judge_property1`, :func:`judge_property2`, :func:`judge_property3`), for Shap here and for
every estimator in :mod:`shapley.theory.axiom_search`. The Hypothesis searches over these predicates live in
:mod:`shapley.theory.search`, the verdicts on Propositions 3.5 and 3.6 in :mod:`shapley.theory.propositions`;
this module imports only numpy and :mod:`shapley.core`. Comparisons use the absolute tolerance :data:`TOL` (nats).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal, cast, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core import validate
from shapley.core.entropy import game_shapley_values, gaussian_entropy, shapley_values
from shapley.core.kernel import kernel_matrix
from shapley.core.psd import gershgorin_beta_bound, is_singular

Reading = Literal["sentence", "rv"]
Matrix = NDArray[np.float64]
READINGS: tuple[str, ...] = get_args(Reading)
"""The two readings of "replace an answer", in display order."""

PROPERTIES = ("1", "2", "3")
"""The paper's three properties (Sec. 3.4), by number."""

TOL = 1e-9
"""Absolute tolerance (nats) for "<=", "<", ">=", ">" between uncertainties and for ties in argmin."""

NEAR_ONE = 1.0 - 1e-6
"""rho used where an exact copy would make Shapley values (-inf) - (-inf): the limit rho -> 1 is read off here."""

TENTHS = 9
"""The searches of :mod:`~shapley.theory.search` and :mod:`~shapley.theory.axiom_search` draw inner values from
the tenths 1/10 ... TENTHS/10 (with a sign for C-vine partial correlations, where +-1 would make R singular: an exact
duplicate, for instance)."""


def tenths_text(signed: bool = False, closed: bool = False) -> str:
    """The tenths the searches draw, as text for the book: up to TENTHS/10, from -TENTHS/10 when ``signed``, and
    -1 and 1 too when ``closed`` (the singular domain).

    Examples:
        >>> tenths_text(), tenths_text(signed=True), tenths_text(signed=True, closed=True)
        ('{0.1, ..., 0.9}', '{-0.9, ..., 0.9}', '{-1, -0.9, ..., 0.9, 1}')
    """
    top = TENTHS / 10
    inner = (f"{-top:g}" if signed else "0.1") + f", ..., {top:g}"
    return "{" + ("-1, " + inner + ", 1" if closed else inner) + "}"


# ---------------------------------------------------------------------------------------------------
# Totals (by efficiency, the total IS the joint entropy), argmin, and the replacements
# ---------------------------------------------------------------------------------------------------


def efficiency_gap(R: ArrayLike) -> float:
    """``sum_i phi_i - h(N(0, R))`` in nats (exact Shapley values; zero up to round-off)."""
    return float(np.sum(shapley_values(R)) - gaussian_entropy(R))


def total_uncertainty(R: ArrayLike) -> float:
    """The paper's ``phi(s) = sum_i phi_i`` (nats) with exact Shapley values; -inf for a singular R.

    For a singular R some Shapley values are (-inf) - (-inf) and undefined, but the total is still the
    joint entropy by efficiency (its limit along any rho -> 1 path), which is -inf.
    """
    if is_singular(R):  # it checks R, as shapley_values does
        return -math.inf
    return float(np.sum(shapley_values(R)))


def argmin_player(R: ArrayLike) -> int:
    """Index of the answer with the smallest Shapley value (lowest index among ties within TOL)."""
    phi = shapley_values(R)
    return int(np.flatnonzero(phi <= phi.min() + TOL)[0])


def checked_correlation(R: ArrayLike) -> NDArray[np.float64]:
    """``R`` as a symmetric float array with unit diagonal (a correlation matrix), else a ValueError."""
    A = validate.symmetric_matrix(R, "R")
    if not np.allclose(np.diag(A), 1.0, atol=1e-12):
        raise ValueError("R must be a correlation matrix (unit diagonal)")
    return A


def _replaced(A: NDArray[np.float64], i: int, row: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """A copy of the symmetric ``A`` whose row and column i are ``row`` (unit diagonal kept)."""
    out = A.copy()
    out[i, :] = row
    out[:, i] = row
    out[i, i] = 1.0
    return out


def with_duplicate(M: NDArray[np.float64], i: int, m: int, rho: float = 1.0) -> NDArray[np.float64]:
    """``M`` after replacing answer i by a copy of answer m: row and column i become ``rho`` times m's row.

    Random variables: g = ``rho s_m + sqrt(1 - rho**2) z`` (z independent), so ``Cov(g, s_k) = rho R[m, k]`` for every
    remaining k (and ``rho`` with s_m itself when i != m); the result is PSD because (s, g) is a valid joint Gaussian,
    and rho = 1 gives an exact copy. Sentences (rho = 1): a semantic duplicate copies m's row of C, so C(g, m) =
    C(m, m) = 1. For i == m the copy stands in for m itself (unchanged at rho = 1).
    """
    return _replaced(M, i, rho * M[m])


def with_unrelated(M: NDArray[np.float64], i: int) -> NDArray[np.float64]:
    """``M`` after replacing answer i by an unrelated one: a zero row and column (unit diagonal kept), i.e. a
    variable independent of all others, or an answer with C = 0 to all."""
    return _replaced(M, i, 0.0)


def rv_r_squared(R: ArrayLike) -> NDArray[np.float64]:
    """Squared multiple correlation of each variable with all the others: ``1 - 1 / (R^{-1})_ii``."""
    A = checked_correlation(R)
    return 1.0 - 1.0 / np.diag(np.linalg.inv(A))


# ---------------------------------------------------------------------------------------------------
# The property checks: each property's rule, stated once, and its two readings for Shap
# ---------------------------------------------------------------------------------------------------

PREMISE_FALSE = "(premise false)"
"""The required relation of a Property 3 replacement whose premise is false: it holds whatever the totals."""


def relation_holds(old: float, new: float, required: str) -> bool:
    """Whether ``new required old`` (``"<="``, ``"<"``, ``">="`` or ``">"``) holds within :data:`TOL`."""
    return {"<=": new <= old + TOL, "<": new < old - TOL, ">=": new >= old - TOL, ">": new > old + TOL}[required]


@dataclass(frozen=True)
class Replacement:
    """One replacement: answer ``i`` replaced by g; totals (nats) before/after and the required relation."""

    i: int
    old: float
    new: float
    required: str

    @property
    def holds(self) -> bool:
        """Whether the totals stand in the required relation (always, for :data:`PREMISE_FALSE`)."""
        return self.required == PREMISE_FALSE or relation_holds(self.old, self.new, self.required)


@dataclass(frozen=True)
class PropertyCheck:
    """Outcome of checking one property on one input: one row per replacement, and the numbers behind them."""

    prop: str
    reading: str
    rows: tuple[Replacement, ...]
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        """The property's verdict on this input: every replacement holds."""
        return all(r.holds for r in self.rows)

    def failures(self) -> tuple[Replacement, ...]:
        """The replacements that violate the property."""
        return tuple(r for r in self.rows if not r.holds)


def judge_property1(
    reading: str, phi: NDArray[np.float64], old: float, duplicate_total: Callable[[int, int], float]
) -> PropertyCheck:
    """Property 1's rule: the argmin m of the Shapley values ``phi`` (n,) is the lowest index among ties within
    TOL; replacing answer i by a duplicate of m (total ``duplicate_total(i, m)``) must not raise the total ``old``,
    and must lower it strictly unless answer i is itself a minimiser."""
    m = int(np.flatnonzero(phi <= phi.min() + TOL)[0])
    rows = (Replacement(i, old, duplicate_total(i, m), "<" if phi[i] > phi[m] + TOL else "<=") for i in range(phi.size))
    return PropertyCheck("1", reading, tuple(rows), {"argmin": m, "phi": phi})


def judge_property2(
    reading: str, M: NDArray[np.float64], old: float, unrelated_total: Callable[[int], float]
) -> PropertyCheck:
    """Property 2's rule: replacing answer i of the (n, n) matrix ``M`` by an unrelated one (total
    ``unrelated_total(i)``) must not lower the total ``old``, and must raise it strictly if answer i was related to
    another one (some off-diagonal entry of its row is non-zero)."""
    related = [bool(np.any(np.abs(np.delete(M[i], i)) > TOL)) for i in range(M.shape[0])]
    rows = (Replacement(i, old, unrelated_total(i), ">" if rel else ">=") for i, rel in enumerate(related))
    return PropertyCheck("2", reading, tuple(rows))


def judge_property3(
    reading: str, j: int, old: float, new: float, margin: float, tightest_X: tuple[int, ...]
) -> PropertyCheck:
    """Property 3's rule: if g beats s_j in every sub-game (the smallest margin ``margin`` exceeds TOL, attained
    at ``tightest_X``), g in place of s_j must raise the total (``new > old``)."""
    premise = margin > TOL
    row = Replacement(j, old, new, ">" if premise else PREMISE_FALSE)
    conclusion = relation_holds(old, new, ">")
    facts = {"premise": premise, "premise_margin": margin, "tightest_X": tightest_X, "conclusion": conclusion}
    return PropertyCheck("3", reading, (row,), facts)


def checked_reading(reading: str) -> Reading:
    """``reading`` itself if it is one of :data:`READINGS`, else a ValueError naming them."""
    return validate.choice(reading, READINGS, "reading")  # type: ignore[return-value]


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


def _reading_input(M: ArrayLike, reading: str, beta: BetaSpec) -> tuple[NDArray[np.float64], Callable[..., float]]:
    """The validated input of ``reading`` (R, or C) and the total of such an input (C through the kernel at beta)."""
    if checked_reading(reading) == "rv":
        return checked_correlation(M), total_uncertainty
    return validate.similarity_matrix(M, "C"), lambda C: total_uncertainty(_beta_R(C, beta))


def check_property1(M: ArrayLike, reading: Reading = "rv", *, rho: float = 1.0, beta: BetaSpec = 0.5) -> PropertyCheck:
    """Property 1 (minimal uncertainty; the rule: :func:`judge_property1`) for the Shapley total.

    Args:
        M: a correlation matrix R (``reading="rv"``) or a symmetric entailment matrix C (``"sentence"``).
        rho: correlation of the copy with s_m (rv reading; 1 = exact copy, total -inf).
        beta: kernel scale (sentence reading): a number or ``"gershgorin"`` (1/(n-1)).
    """
    A, total = _reading_input(M, reading, beta)
    R = A if reading == "rv" else _beta_R(A, beta)
    if is_singular(R):
        raise ValueError(
            "R is singular: some Shapley values are (-inf) - (-inf), so the argmin answer of Property 1 is "
            "undefined (see degenerate_witness and prop36_readings)"
        )
    phi = shapley_values(R)
    return judge_property1(reading, phi, float(np.sum(phi)), lambda i, m: total(with_duplicate(A, i, m, rho)))


def check_property2(M: ArrayLike, reading: Reading = "rv", *, beta: BetaSpec = 0.5) -> PropertyCheck:
    """Property 2 (maximal uncertainty; the rule: :func:`judge_property2`) for the Shapley total of ``M``, R or C
    as in :func:`check_property1`."""
    A, total = _reading_input(M, reading, beta)
    return judge_property2(reading, A, total(A), lambda i: total(with_unrelated(A, i)))


def coalition_worths(worth: Callable[[list[int]], float], n: int, apart: tuple[int, int] | None = None) -> Matrix:
    """``v(S) = worth(indices in S)`` for all ``2**n`` coalitions S of n answers, indexed by bitmask; ``v(empty) = 0``.

    ``apart=(a, b)``: leave every coalition holding both a and b as NaN (Property 3 never puts the old answer and
    g together, and their joint matrix need not be a valid input).
    """
    v = np.zeros(2**n)
    both = 0 if apart is None else (1 << apart[0]) | (1 << apart[1])
    for mask in range(1, 2**n):
        if both and mask & both == both:
            v[mask] = math.nan
            continue
        v[mask] = worth([k for k in range(n) if mask >> k & 1])
    return v


def subgame_value(worths: Matrix, players: Sequence[int], who: int) -> float:
    """Shapley value of ``who`` in the sub-game on ``players`` (global indices into the ``worths`` masks)."""
    local = np.zeros(2 ** len(players))
    for mask in range(1, local.size):
        local[mask] = worths[sum(1 << players[k] for k in range(len(players)) if mask >> k & 1)]
    return float(game_shapley_values(local)[list(players).index(who)])


def consistency_premise(worths: Matrix, j: int) -> tuple[float, tuple[int, ...]]:
    """Property 3's premise on the coalition worths of a joint game over (answers 0..n-1, g = n) that never puts
    s_j and g together: the smallest margin ``phi_g - phi_{s_j}`` over the sub-games on X + {g} and X + {s_j}, for
    every non-empty X of the other answers, and the X attaining it."""
    g = int(worths.size).bit_length() - 2
    others = [k for k in range(g) if k != j]
    worst, worst_X = math.inf, cast(tuple[int, ...], ())
    for size in range(1, g):
        for X in combinations(others, size):
            margin = subgame_value(worths, sorted((*X, g)), g) - subgame_value(worths, sorted((*X, j)), j)
            if margin < worst:
                worst, worst_X = margin, X
    return float(worst), worst_X


def check_property3(
    M_old: ArrayLike, M_new: ArrayLike, j: int, reading: Reading = "rv", *, beta: BetaSpec = 0.5
) -> PropertyCheck:
    """Property 3 (consistency; the rule: :func:`judge_property3`) for the Shapley total. ``M_old``/``M_new``:
    correlation matrices (rv) or entailment matrices C (sentence) that differ only in row/column j."""
    if checked_reading(reading) == "rv":
        A, B = checked_correlation(M_old), checked_correlation(M_new)
    else:
        A, B = (_beta_R(validate.similarity_matrix(M, "C"), beta) for M in (M_old, M_new))
    n = A.shape[0]
    keep = [k for k in range(n) if k != j]
    if B.shape != A.shape or not np.allclose(A[np.ix_(keep, keep)], B[np.ix_(keep, keep)], atol=1e-12):
        raise ValueError("M_old and M_new must agree outside row/column j")
    joint = with_unrelated_g(A)  # g's row is the new row of s_j; its entry with s_j is never used
    joint[n, keep] = joint[keep, n] = B[j, keep]
    worths = coalition_worths(lambda idx: gaussian_entropy(joint[np.ix_(idx, idx)]), n + 1, apart=(j, n))
    margin, X = consistency_premise(worths, j)
    return judge_property3(reading, j, total_uncertainty(A), total_uncertainty(B), margin, X)


def property1_rv_rho_condition(R: ArrayLike) -> dict[str, Any]:
    """Exact condition for Property 1 in the rv reading with a noisy copy at correlation rho < 1.

    For i != m, the new total is ``h(rest) + 0.5 ln(2 pi e (1 - rho**2))`` and the old one
    ``h(rest) + h(s_i | rest)``, so the property holds iff ``rho**2 >= R2_i`` (squared multiple correlation
    of s_i on the others). For i == m the total changes by ``0.5 ln(rho**2 + (1 - rho**2) / v)`` with
    ``v = 1 - R2_m``, which is > 0 for every rho < 1 unless s_m is uncorrelated with all others.

    Returns a dict: argmin ``m``, ``r2`` (n,) and ``fails_at_m_for_rho_below_1`` (bool).
    """
    A = checked_correlation(R)
    m = argmin_player(A)
    r2 = rv_r_squared(A)
    return {"m": m, "r2": r2, "fails_at_m_for_rho_below_1": bool(r2[m] > TOL)}


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


def _step(
    R_old: NDArray[np.float64], R_new: NDArray[np.float64], replaced: int, exempt: tuple[int, ...], falls: bool
) -> StepCheck:
    """The step's claim that every Shapley value but the ``exempt`` answers' falls (``falls``) or rises."""
    old, new = shapley_values(R_old), shapley_values(R_new)
    wrong = [new[k] > old[k] + TOL if falls else new[k] < old[k] - TOL for k in range(old.size)]
    bad = tuple(k for k in range(old.size) if k not in exempt and wrong[k])
    return StepCheck(old, new, replaced, bad, f"claimed phi_k(new) {'<=' if falls else '>='} phi_k(old)")


def appendix_step_property1(R: ArrayLike, i: int, rho: float = NEAR_ONE) -> StepCheck:
    """Appendix A (Property 1) claims ``phi_k(new) <= phi_k(old)`` for every k != i when s_i is replaced
    by a copy of the argmin m. Lists the k (other than i and m) whose value goes UP instead.
    ``rho`` slightly below 1 keeps every value finite (the exact copy gives (-inf) - (-inf) for m and g)."""
    A = checked_correlation(R)
    m = argmin_player(A)
    if i == m:
        raise ValueError("i must differ from the argmin m (the appendix step is about i != m)")
    return _step(A, with_duplicate(A, i, m, rho), i, (i, m), falls=True)


def appendix_step_property3(R_old: ArrayLike, R_new: ArrayLike, j: int) -> StepCheck:
    """Appendix A (Property 3) claims ``phi_k(new) >= phi_k(old)`` for every k != j. Lists violators."""
    return _step(checked_correlation(R_old), checked_correlation(R_new), j, (j,), falls=False)


def appendix_step_property2(R: ArrayLike, i: int) -> StepCheck:
    """Appendix A (Property 2) claims ``phi_k(new) >= phi_k(old)`` for k != i when s_i becomes independent.
    This one is TRUE (entropy is submodular: dropping s_i from the conditioning sets can only raise each
    marginal contribution of s_k). Lists violators (expected: none)."""
    A = checked_correlation(R)
    return _step(A, with_unrelated(A, i), i, (i,), falls=False)


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
    n = Pm.shape[0]
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
    S = _beta_R(C, beta)[: n - 1, : n - 1]
    return float(np.linalg.solve(S, np.ones(n - 1))[0])


def with_unrelated_g(C: NDArray[np.float64]) -> NDArray[np.float64]:
    """Joint matrix for Property 3: the answers of C plus g (last index), unrelated to all (C = 0)."""
    M = np.pad(C, (0, 1))
    M[-1, -1] = 1.0
    return M


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
