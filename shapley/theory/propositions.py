"""Propositions 3.5 and 3.6 of the paper, reading by reading: the verdict, the reason, and the witness.

Proposition 3.5 says the joint entropy h violates Properties 1 and 2; Proposition 3.6 says the Shapley total phi
satisfies Properties 1, 2 and 3. :func:`prop35_readings` and :func:`prop36_readings` decide each claim in each
reading of :mod:`shapley.theory.properties` (random variables, sentences through the kernel) and on the paper's
own degenerate example (:func:`degenerate_witness`), from the property checks of that module. Imports only numpy
and :mod:`shapley.core`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from shapley.core.entropy import shapley_values
from shapley.core.kernel import kernel_matrix
from shapley.theory import properties as pr


@dataclass(frozen=True)
class ReadingVerdict:
    """One reading of a claim: its verdict, the reason in one sentence, and the input that decides it."""

    claim: str
    reading: str
    verdict: str
    reason: str
    witness: dict[str, Any]


def degenerate_witness() -> NDArray[np.float64]:
    """The paper's own example for Proposition 3.5: answers 0 and 1 with correlation 1 (an exact duplicate),
    answer 2 correlated 0.5 with both. R is singular (PSD, one zero eigenvalue).

    Examples:
        >>> degenerate_witness()
        array([[1. , 1. , 0.5],
               [1. , 1. , 0.5],
               [0.5, 0.5, 1. ]])
    """
    return pr.corr_from_partials(np.array([[0.0, 1.0, 0.5], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))


def degenerate_property1_rows(R: ArrayLike) -> tuple[pr.Replacement, ...]:
    """Property 1's strict part on a singular R, for EVERY choice of the answer m that g copies (the argmin
    is undefined there): rows (i != m) with old and new totals; ``holds`` is False when -inf < -inf fails."""
    A = pr.checked_correlation(R)
    old, n = pr.total_uncertainty(A), A.shape[0]
    pairs = [(i, m) for m in range(n) for i in range(n) if i != m]
    return tuple(pr.Replacement(i, old, pr.total_uncertainty(pr.with_duplicate(A, i, m)), "<") for i, m in pairs)


def undefined_shapley_message(R: ArrayLike) -> str | None:
    """The core's error message if the Shapley values of R are undefined ((-inf) - (-inf)), else None."""
    try:
        shapley_values(pr.checked_correlation(R))
    except ValueError as exc:
        return str(exc)
    return None


def chain_rule_check(n_matrices: int = 200, seed: int = 0) -> dict[str, Any]:
    """Properties 1 (exact copy) and 2 for h on seeded random positive definite correlation matrices, with
    Property 2's change compared with the chain rule ``h(new) - h(old) = -1/2 ln(1 - R2_i)``.

    Returns a dict: ``matrices`` checked, ``property1_failures``, ``property2_failures``, ``max_chain_rule_error``
    (nats) and ``smallest_strict_gain`` (nats, the smallest rise when the replaced answer was correlated).
    """
    rng = np.random.default_rng(seed)
    p1 = p2 = 0
    err, gain = 0.0, math.inf
    for k in range(n_matrices):
        n = int(rng.integers(3, 7))  # 3 to 6 answers
        R = pr.random_correlation(n, seed=int(rng.integers(2**31)) + k, max_partial=0.9)
        p1 += not pr.check_property1(R, "rv").holds
        chk = pr.check_property2(R, "rv")
        p2 += not chk.holds
        r2 = pr.rv_r_squared(R)
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


def prop35_readings(
    n_matrices: int = 200, seed: int = 0, chain: dict[str, Any] | None = None
) -> tuple[ReadingVerdict, ReadingVerdict]:
    """Proposition 3.5 ("h violates Properties 1 and 2"), reading by reading, each verdict with its reason and
    witness: :func:`chain_rule_check` on non-singular R, and the paper's own :func:`degenerate_witness`.
    ``chain``: a stored ``chain_rule_check(n_matrices, seed)`` (the committed record of
    :mod:`shapley.theory.hypothesis_results`) instead of computing it again.
    """
    check = chain_rule_check(n_matrices, seed) if chain is None else dict(chain)
    R = degenerate_witness()
    p2 = pr.check_property2(R, "rv")
    p1_rows = degenerate_property1_rows(R)
    verdict = partial(ReadingVerdict, "prop-3.5")
    nonsingular = verdict(
        "random variables, non-singular R",
        "contradicted",
        "h satisfies Property 2 (conditioning reduces entropy: the total rises by -1/2 ln(1 - R2_i) >= 0) "
        "and Property 1 (an exact copy sends h to -inf)",
        check,
    )
    degenerate = verdict(
        "the paper's degenerate example (a pair with rho = 1)",
        "reproduced",
        "h is -inf before and after the replacement, so the strict parts of Properties 1 and 2 fail; the "
        "Shapley values are undefined on the same input, so Proposition 3.6 fails there too",
        {
            "R": R,
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
    """Proposition 3.6 ("phi satisfies Properties 1, 2 and 3"), reading by reading, each verdict with its reason
    and witnesses (the hand-made witnesses of :mod:`shapley.theory.properties`, :func:`degenerate_witness` and
    :func:`sentence_premise_bounds`)."""
    R_old, R_new, j = pr.property3_witness_rv()
    C_old, C_new, js = pr.property3_witness_sentence()
    R = degenerate_witness()
    p1 = pr.check_property1(pr.property1_witness_sentence(), "sentence", beta=beta)
    p2 = pr.check_property2(pr.property2_witness_sentence(), "sentence", beta=beta)
    verdict = partial(ReadingVerdict, "prop-3.6")
    return (
        verdict(
            "random variables, non-singular R",
            "contradicted",
            "Property 3 fails (a suppressor effect: g beats s_j in every sub-game, yet the total falls); "
            "Property 2 holds there, but only because the Shapley total equals h; Property 1 is undefined with "
            "an exact copy (the new R is singular, as in the degenerate example); a near copy (rho < 1, outside the "
            "premise) can raise the total, by an amount that vanishes as rho -> 1",
            {"property3": pr.check_property3(R_old, R_new, j, "rv"), "R_old": R_old, "R_new": R_new, "j": j},
        ),
        verdict(
            "random variables, the paper's degenerate example (a pair with rho = 1)",
            "contradicted",
            "the Shapley values are (-inf) - (-inf), undefined, so phi satisfies no property on this input",
            {"R": R, "shapley_error": undefined_shapley_message(R)},
        ),
        verdict(
            f"sentences through the kernel (beta = {beta:g}), Property 3",
            "contradicted",
            "g is less similar than s_j to every answer and wins every sub-game, yet the total falls",
            {"property3": pr.check_property3(C_old, C_new, js, "sentence", beta=beta), "C_old": C_old, "j": js},
        ),
        verdict(
            f"sentences through the kernel (beta = {beta:g}), Properties 1-2",
            "intent broken, formal premises unreachable",
            "a duplicate gets R = beta (never 1) and an unrelated answer R = beta e^(-1/2) (never 0), so the "
            "formal premises cannot occur; with the pipeline's duplicate and unrelated answers the total "
            "moves the wrong way",
            {"property1": p1, "property2": p2, "premises": sentence_premise_bounds(beta)},
        ),
    )
