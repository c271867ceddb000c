"""Hypothesis searches for counterexamples: to a fixed kernel scale beta (PSD), to the paper's three
properties, and to the Appendix A step of each proof.

Needs the ``theory`` extra (hypothesis). Every search is reproducible: derandomised, no example database,
no deadline (:func:`search_settings`), so it gives the same shrunk example on every machine with the same
Hypothesis version. The predicates being searched live in :mod:`shapley.theory.worstcase` and
:mod:`shapley.theory.properties`, which import only numpy, scipy and :mod:`shapley.core`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import hypothesis
import numpy as np
from hypothesis import given, target
from hypothesis import strategies as st
from numpy.typing import NDArray

from shapley.core.kernel import kernel_matrix
from shapley.core.psd import is_psd, min_eigenvalue
from shapley.theory import properties as pr
from shapley.theory.worstcase import symmetric_from_upper, vertex_C

HYPOTHESIS_MAX_EXAMPLES = 1000
"""Examples per size n in :func:`hypothesis_counterexample` (the PSD notebook and the tests use this value)."""

SEARCH_MAX_EXAMPLES = 400
"""Hypothesis examples per property search (the properties notebook and the tests use the same value)."""

PARTIAL_STEPS = 9
"""C-vine partial correlations of the non-singular random-variable domain: k / 10 for |k| <= 9, i.e.
{-0.9, -0.8, ..., 0.9}. The singular domain allows |k| = 10: a partial correlation of +-1 makes R singular
(an exact duplicate, for instance)."""


def _partials(singular: bool = False) -> Any:
    """Strategy for one partial correlation; it shrinks towards 0 (so shrunk matrices approach the identity)."""
    k = PARTIAL_STEPS + (1 if singular else 0)
    return st.integers(-k, k).map(lambda i: i / 10)


def partial_grid_text(singular: bool = False) -> str:
    """The set the C-vine partial correlations are drawn from, as text for the book.

    Examples:
        >>> partial_grid_text(), partial_grid_text(singular=True)
        ('{-0.9, ..., 0.9}', '{-1, -0.9, ..., 0.9, 1}')
    """
    k = PARTIAL_STEPS / 10
    return "{-1, " + f"{-k:g}, ..., {k:g}" + ", 1}" if singular else "{" + f"{-k:g}, ..., {k:g}" + "}"


def search_settings(max_examples: int) -> Any:
    """Hypothesis settings for the notebooks' searches: reproducible (derandomised, no example database),
    quiet, no deadline and no health checks, so that a search gives the same answer on every machine."""
    return hypothesis.settings(
        max_examples=max_examples,
        database=None,
        derandomize=True,
        deadline=None,
        verbosity=hypothesis.Verbosity.quiet,
        suppress_health_check=list(hypothesis.HealthCheck),
    )


class _Found(Exception):
    pass


_grid_C = symmetric_from_upper


# ---------------------------------------------------------------------------------------------------
# PSD: a counterexample to a given beta
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HypothesisResult:
    """What :func:`hypothesis_counterexample` did: the shrunk C (None if no counterexample), examples run."""

    n: int
    beta: float
    C: NDArray[np.float64] | None
    min_eig_R: float | None
    examples_run: int
    strategy: str


def hypothesis_counterexample(
    n: int, beta: float = 0.5, max_examples: int = HYPOTHESIS_MAX_EXAMPLES, vertices: bool = True
) -> HypothesisResult:
    """Let Hypothesis look for a C of size n with R_beta not PSD, then shrink it.

    Strategy: the n(n-1)/2 upper-triangle entries are drawn from {0, 1} (vertices, where the worst case
    lives; ``vertices=False`` draws from the grid {0, 0.1, ..., 1}); the search is *targeted*
    (``hypothesis.target`` on -lambda_min(R), which makes Hypothesis hill-climb towards bad matrices).
    The returned C is Hypothesis' shrunk example (fewest 1 entries, earliest rows).
    """
    if int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2; got {n!r}")
    m = n * (n - 1) // 2
    values = st.sampled_from([0.0, 1.0]) if vertices else st.integers(0, 10).map(lambda k: k / 10)
    found: list[NDArray[np.float64]] = []
    runs = [0]

    # (the body's source seeds the derandomised search: keep it unchanged to keep the published examples)
    @search_settings(max_examples)
    @given(st.lists(values, min_size=m, max_size=m))
    def probe(v: list[float]) -> None:
        runs[0] += 1
        C = vertex_C(n, v) if vertices else _grid_C(n, v)
        R = kernel_matrix(C, beta)
        target(-min_eigenvalue(R))
        if not is_psd(R):
            found.append(C)
            raise _Found

    grid = "{0, 1}" if vertices else "{0, 0.1, ..., 1}"
    strategy = f"upper-triangle entries of C from {grid}, targeted on -lambda_min(R), derandomized"
    try:
        probe()
    except _Found:
        C = found[-1]  # Hypothesis replays the shrunk example last
        return HypothesisResult(n, beta, C, min_eigenvalue(kernel_matrix(C, beta)), runs[0], strategy)
    return HypothesisResult(n, beta, None, None, runs[0], strategy)


def hypothesis_smallest_failing_n(
    beta: float = 0.5, n_range: tuple[int, int] = (2, 12), max_examples: int = HYPOTHESIS_MAX_EXAMPLES
) -> tuple[HypothesisResult | None, list[HypothesisResult]]:
    """Run :func:`hypothesis_counterexample` for n = n_range[0], ... and stop at the first n where it
    finds a counterexample. Returns (that result or None, every result in order)."""
    results = []
    for n in range(n_range[0], n_range[1] + 1):
        r = hypothesis_counterexample(n, beta, max_examples)
        results.append(r)
        if r.C is not None:
            return r, results
    return None, results


# ---------------------------------------------------------------------------------------------------
# The three properties and the Appendix A steps
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchResult:
    """Outcome of a Hypothesis search: ``found`` False means no counterexample in ``examples_run`` tries."""

    prop: str
    reading: str
    found: bool
    example: dict[str, Any] | None
    check: pr.PropertyCheck | pr.StepCheck | None
    examples_run: int
    strategy: str
    settings: dict[str, Any]


def _vine(n: int, vals: list[float]) -> NDArray[np.float64]:
    P = np.zeros((n, n))
    P[np.triu_indices(n, 1)] = vals
    return pr.corr_from_partials(P)


def _build_sized(
    build: Callable[[int, list[float]], NDArray[np.float64]], n: int, vals: list[float]
) -> NDArray[np.float64]:
    return build(n, vals)


def _matrices_and_index(values: Any, build: Callable[..., Any], n_range: tuple[int, int], extra: int) -> Any:
    """Strategy for (matrix of size n + extra, index in 0..n-1) with n drawn from ``n_range``."""

    def matrices(n: int) -> Any:
        m = (n + extra) * (n + extra - 1) // 2
        return st.lists(values, min_size=m, max_size=m).map(partial(_build_sized, build, n + extra))

    return st.integers(*n_range).flatmap(lambda n: st.tuples(matrices(n), st.integers(0, n - 1)))


def _run_search(
    strategy: Any, body: Callable[[Any], tuple[bool, Any, dict[str, Any], float]], max_examples: int
) -> tuple[bool, Any, dict[str, Any] | None, int]:
    state: dict[str, Any] = {"runs": 0, "last": None}

    # (the body's source seeds the derandomised search: keep it unchanged to keep the published examples)
    @search_settings(max_examples)
    @given(strategy)
    def probe(x: Any) -> None:
        state["runs"] += 1
        ok, check, example, score = body(x)
        if math.isfinite(score):
            target(score)
        if not ok:
            state["last"] = (check, example)
            raise _Found

    try:
        probe()
    except _Found:
        check, example = state["last"]
        return True, check, example, state["runs"]
    return False, None, None, state["runs"]


def _swap_in_g(M: NDArray[np.float64], j: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """From one joint matrix over (answers 0..n-1, g = index n): the old matrix (without g) and the new one
    (g in place of answer j). One joint matrix keeps both configurations valid (PSD in the rv reading)."""
    n = M.shape[0] - 1
    order = [k if k != j else n for k in range(n)]
    return M[:n, :n], M[np.ix_(order, order)]


def _property_body(prop: str, reading: pr.Reading, opts: dict[str, Any]) -> Callable[..., Any]:
    def body(x: tuple[NDArray[np.float64], int]) -> tuple[bool, Any, dict[str, Any], float]:
        M, j = x
        if prop == "1":
            chk = pr.check_property1(M, reading, rho=opts["rho"], beta=opts["beta"])
            ok = all(r.holds for r in chk.rows if r.required == "<") if opts["strict_only"] else chk.holds
            return ok, chk, {"M": M}, pr.violation_score(chk)
        if prop == "2":
            chk = pr.check_property2(M, reading, beta=opts["beta"])
            return chk.holds, chk, {"M": M}, pr.violation_score(chk)
        old, new = _swap_in_g(M, j)
        chk = pr.check_property3(old, new, j, reading, beta=opts["beta"])
        return chk.holds, chk, {"M_old": old, "M_new": new, "j": j}, pr.violation_score(chk)

    return body


def search_counterexample(
    prop: str,
    reading: pr.Reading,
    *,
    n_range: tuple[int, int] = (3, 5),
    beta: pr.BetaSpec = 0.5,
    rho: float = 1.0,
    max_examples: int = SEARCH_MAX_EXAMPLES,
    strict_only: bool = False,
    singular: bool = False,
) -> SearchResult:
    """Let Hypothesis look for (and shrink) an input on which property ``prop`` ("1", "2", "3") fails.

    Strategies (derandomized, no database, so results are reproducible):
      * rv: correlation matrices from C-vine partial correlations drawn from {-0.9, ..., 0.9}
        (:data:`PARTIAL_STEPS`; every draw is positive definite; shrinking pushes towards the identity), or,
        with ``singular=True``, from {-1, -0.9, ..., 0.9, 1} (closed at +-1, so singular R such as an
        exact duplicate pair are reachable; Property 2 only, the one property that needs no Shapley value);
      * sentence: symmetric C with upper-triangle entries from {0, 0.1, ..., 1}, kernel at ``beta``
        (n <= 7 keeps R PSD for beta <= 0.5, see notebooks/psd.md);
      * Property 3: one matrix of size n + 1 (the answers plus g); the old configuration drops g, the
        new one puts g in place of answer j (j drawn too).

    ``strict_only`` (Property 1): count only failures where the replaced answer is not a minimiser (the
    strict "<" part), so that ties cannot be blamed.
    """
    reading = pr._reading(reading)
    if prop not in ("1", "2", "3"):
        raise ValueError(f"prop must be '1', '2' or '3'; got {prop!r}")
    if singular and (prop != "2" or reading != "rv"):
        raise ValueError(
            "singular=True is for Property 2 in the rv reading: Properties 1 and 3 need Shapley "
            "values, which are undefined on a singular R"
        )
    build: Callable[[int, list[float]], NDArray[np.float64]]
    if reading == "rv":
        values, build = _partials(singular), _vine
        desc = "C-vine partial correlations in {" + ("-1, " if singular else "") + "-0.9, ..., 0.9"
        desc += ", 1}" if singular else "}"
    else:
        values, build = st.integers(0, 10).map(lambda k: k / 10), symmetric_from_upper
        desc = "C entries in {0, 0.1, ..., 1}, kernel beta = " + ("1/(n-1)" if isinstance(beta, str) else f"{beta:.4g}")
    strategy = _matrices_and_index(values, build, n_range, 1 if prop == "3" else 0)
    body = _property_body(prop, reading, {"rho": rho, "beta": beta, "strict_only": strict_only})
    found, check, example, runs = _run_search(strategy, body, max_examples)
    described = (
        f"n in {n_range[0]}..{n_range[1]}; {desc}; Property {prop}"
        + (f"; rho = {rho:g}" if prop == "1" and reading == "rv" else "")
        + ("; strict part only" if strict_only and prop == "1" else "")
    )
    return SearchResult(
        prop,
        reading,
        found,
        example,
        check,
        runs,
        described,
        {"max_examples": max_examples, "derandomize": True, "database": None},
    )


def _step_body(prop: str) -> Callable[..., Any]:
    def body(x: tuple[NDArray[np.float64], int]) -> tuple[bool, Any, dict[str, Any], float]:
        M, i = x
        if prop == "1":
            if i == pr.argmin_player(M):
                return True, None, {}, math.nan
            chk = pr.appendix_step_property1(M, i)
            return not chk.wrong_way, chk, {"R": M, "i": i}, pr.step_score(chk)
        if prop == "2":
            chk = pr.appendix_step_property2(M, i)
            return not chk.wrong_way, chk, {"R": M, "i": i}, pr.step_score(chk)
        old, new = _swap_in_g(M, i)
        if not pr.consistency_premise(old, new, i)[0]:
            return True, None, {}, math.nan
        chk = pr.appendix_step_property3(old, new, i)
        return not chk.wrong_way, chk, {"R_old": old, "R_new": new, "j": i}, pr.step_score(chk)

    return body


def search_step_counterexample(
    prop: str, *, n_range: tuple[int, int] = (3, 4), max_examples: int = SEARCH_MAX_EXAMPLES
) -> SearchResult:
    """Hypothesis search (rv reading) for a counterexample to the Appendix A step of Property ``prop``:
    some answer other than the replaced one whose Shapley value moves the way the proof says it cannot.
    For Property 1 the copy has rho = ``NEAR_ONE``; for Property 3 only inputs where the premise holds count.
    """
    if prop not in ("1", "2", "3"):
        raise ValueError(f"prop must be '1', '2' or '3'; got {prop!r}")
    strategy = _matrices_and_index(_partials(), _vine, n_range, 1 if prop == "3" else 0)
    found, check, example, runs = _run_search(strategy, _step_body(prop), max_examples)
    return SearchResult(
        prop,
        "rv",
        found,
        example,
        check,
        runs,
        f"n in {n_range[0]}..{n_range[1]}; C-vine partial correlations in {{-0.9, ..., 0.9}}; "
        f"Appendix A step of Property {prop}",
        {"max_examples": max_examples, "derandomize": True, "database": None},
    )
