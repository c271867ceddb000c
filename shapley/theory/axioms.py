"""The paper's three properties (Sec. 3.4) for every estimator the package implements on entailment matrices.

Every estimator U is judged by the same rule: its *own* Shapley values, of the set function
``v(S) = U(answers in S)`` with ``v(empty) = 0``, computed exactly from all ``2**n`` coalition worths with
:func:`shapley.core.entropy.game_shapley_values`. Efficiency makes the total ``sum_i phi_i = U(all answers)``,
so Property 2 and the conclusions of Properties 1 and 3 compare values of U itself, while the argmin
answer (Property 1) and the premise (Property 3: g beats s_j in every sub-game) use U's Shapley values.

Readings (as in :mod:`shapley.theory.properties`):

``sentence``
    Every estimator is fed a symmetric entailment matrix C in [0, 1] (unit diagonal). Shap builds the
    kernel at :data:`SENTENCE_BETA`; SE, DSE and NumSet cluster with strict bidirectional entailment at
    :data:`CLUSTER_THRESHOLD`; EigV, Deg, Ecc and KLE take W = C. Likelihoods (SE, NE) are one per
    answer, drawn from {0.1, ..., 0.9}; a duplicate carries the likelihood of the answer it copies, an
    unrelated or new answer g a likelihood of its own (drawn with the example).
    Duplicate: g copies m's row of C and C(g, m) = 1. Unrelated: C = 0 to every answer.
``rv`` (random variables)
    The input is a correlation matrix R. Shap takes any R (Gaussian entropy). EigV, Deg, Ecc and KLE take
    a similarity matrix with entries in [0, 1], so they are fed the correlation matrices with non-negative
    entries. SE, DSE, NumSet (which need entailment probabilities to cluster) and NE (likelihoods) cannot
    take a correlation matrix: "not applicable". Duplicate: an exact copy (correlation 1); unrelated:
    independent (correlation 0).

The search (:func:`~shapley.theory.axiom_search.first_counterexample`) is a seeded random search followed by a
greedy shrink, numpy only, so the table needs neither hypothesis nor a GPU: each (estimator, property, reading)
cell draws from its own ``numpy`` generator seeded by ``(seed, crc32(cell name))``, so a run with fewer examples
replays a prefix of a longer one. Verdicts: ``"fails"`` (with the shrunk counterexample), ``"no counterexample in
N examples"`` (a search is not a proof), ``"not applicable"``, and for the cells settled by hand (:data:`KNOWN`):
``"fails"`` with a hand-built witness the search's grid misses, ``"proved"`` where a derivation settles the cell
(the search still runs, and a counterexample would overrule the proof's verdict, so a wrong proof shows),
``"undefined"`` where the property cannot be judged on any input of the cell.

The estimators, the property checks for one estimator and the search live in :mod:`shapley.theory.axiom_search`;
this module turns the search's findings into verdicts and the table.

Run ``python -m shapley.theory --out results/axioms`` (``make axioms``) for the full-size table.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from shapley.core.baselines.entropies import CLUSTER_THRESHOLD
from shapley.theory import axiom_search as axs
from shapley.theory import properties as pr
from shapley.theory.properties import PROPERTIES, READINGS

if TYPE_CHECKING:
    import pandas as pd

FULL_MAX_EXAMPLES = 2000
"""Examples per cell of the stored full-size table (``make axioms``)."""

FAILS = "fails"
"""Verdict of a cell with a counterexample (found by the search, or a hand-built witness)."""

NOT_APPLICABLE = "not applicable"
"""Verdict of a cell whose estimator cannot take the reading's input."""

PROVED = "proved"
"""Verdict of a cell settled by a derivation (and not refuted by its search)."""

UNDEFINED = "undefined"
"""Verdict of a cell whose property cannot be judged on any of its inputs."""


@dataclass(frozen=True)
class CellResult:
    """One cell of the table: verdict, examples drawn, and the shrunk counterexample (or None)."""

    estimator: str
    prop: str
    reading: str
    verdict: str
    examples: int
    example: axs.Example | None
    check: pr.PropertyCheck | None


# ---------------------------------------------------------------------------------------------------
# Cells settled by hand: witnesses off the search's grid, proofs, and cells that cannot be judged
# ---------------------------------------------------------------------------------------------------


def _sentence_example(C: np.ndarray, j: int = 0) -> axs.Example:
    n = C.shape[0]
    return axs.Example("sentence", n, tuple(float(x) for x in C[np.triu_indices(n, 1)]), None, j)


def property2_hub_example() -> axs.Example:
    """The Property 2 hub (:func:`shapley.theory.properties.property2_witness_sentence`: n = 6, link 0.05)
    as a search example. Its size lies inside the search's range, but 0.05 lies off the tenths grid."""
    return _sentence_example(pr.property2_witness_sentence())


def property3_hub_example() -> axs.Example:
    """The Property 3 hub (:func:`shapley.theory.properties.property3_witness_sentence`: n = 7, links 0.1 and
    0.005) as a joint matrix over (answers 0..n-1, g = n): g is the unrelated answer
    (:func:`~shapley.theory.properties.with_unrelated_g`; its (s_j, g) entry, which no coalition uses, is 0 too).
    Both its size and 0.005 lie outside the search's domain."""
    C_old, _, j = pr.property3_witness_sentence()
    return _sentence_example(pr.with_unrelated_g(C_old), j)


@dataclass(frozen=True)
class KnownCell:
    """A cell settled by hand. ``kind``: ``FAILS`` (``witness`` builds the example), ``PROVED`` (``source``
    names the derivation) or ``UNDEFINED``."""

    kind: str
    source: str
    witness: Any = None


KNOWN: dict[tuple[str, str, str], KnownCell] = {
    # hand-built hub witness (n = 6, link 0.05): inside the searched sizes, off the tenths grid
    ("Shap", "2", "sentence"): KnownCell(
        FAILS, "shapley.theory.properties.property2_witness_sentence", property2_hub_example
    ),
    # hand-built hub witness (n = 7, links 0.1 and 0.005): beyond the searched sizes and off the grid
    ("Shap", "3", "sentence"): KnownCell(
        FAILS, "shapley.theory.properties.property3_witness_sentence", property3_hub_example
    ),
    # an exact copy makes the new R singular, so its Shapley values are (-inf) - (-inf), undefined, as on the
    # degenerate example of Proposition 3.6; the cell cannot fail by construction (the total is -inf)
    ("Shap", "1", "rv"): KnownCell(UNDEFINED, "shapley.theory.propositions.undefined_shapley_message"),
    # each answer's Shapley value for Deg is affine and decreasing in its degree, so a copy of the highest-degree
    # answer never lowers the total degree (Property 1), an unrelated answer removes the replaced answer's links
    # (Property 2), and the premise on every singleton sub-game already forces the total degree down (Property 3)
    **{
        ("Deg", prop, reading): KnownCell(PROVED, "shapley.theory.symbolic.degree_shapley_affine")
        for reading in READINGS
        for prop in PROPERTIES
    },
}
"""Cells settled by hand, keyed by (estimator, property, reading)."""


def cell_result(est: axs.Estimator, prop: str, reading: str, max_examples: int, seed: int = 0) -> CellResult:
    """The cell's result: the first of up to ``max_examples`` seeded examples that fails, shrunk
    (:func:`~shapley.theory.axiom_search.first_counterexample`, verdict ``"fails"``), overruled by :data:`KNOWN`
    where a witness, a proof or the cell's construction settles it. A known witness is checked here (it must
    fail); a proved cell keeps its search's counterexample if the search finds one."""
    known = KNOWN.get((est.name, prop, reading))
    if known is not None and known.kind == FAILS:
        ex = known.witness()
        chk = axs.check(est, prop, ex)
        if chk is None or chk.holds:
            raise AssertionError(f"the known witness {known.source} no longer breaks {est.name}, Property {prop}")
        return CellResult(est.name, prop, reading, FAILS, 0, ex, chk)
    if known is not None and known.kind == UNDEFINED:
        return CellResult(est.name, prop, reading, UNDEFINED, 0, None, None)
    if not axs.applicable(est, reading):
        return CellResult(est.name, prop, reading, NOT_APPLICABLE, 0, None, None)
    found = axs.first_counterexample(est, prop, reading, max_examples, seed)
    if found is not None:
        return CellResult(est.name, prop, reading, FAILS, *found)
    verdict = PROVED if known is not None and known.kind == PROVED else f"no counterexample in {max_examples} examples"
    return CellResult(est.name, prop, reading, verdict, max_examples, None, None)


# ---------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------


def _num(x: float) -> float | str:
    return float(f"{x:.6g}") if math.isfinite(x) else str(x)


def describe(result: CellResult) -> dict[str, Any]:
    """The shrunk counterexample as a JSON-able dict: the matrix (``C`` or ``R``, 4 decimals), the likelihoods,
    the replacement that fails, the totals before and after (6 significant digits) and their change."""
    ex, chk = result.example, result.check
    if ex is None or chk is None:
        return {}
    M = ex.matrix()
    out: dict[str, Any] = {"C" if ex.reading == "sentence" else "R": np.round(M, 4).tolist()}
    if ex.p is not None:
        out["p"] = [float(q) for q in ex.p]
    row = chk.failures()[0]
    if result.prop == "1":
        out["argmin"] = chk.detail["argmin"]
    if result.prop == "3":
        out["g"] = ex.n_total - 1
        out["premise_margin"] = float(f"{chk.detail['premise_margin']:.3g}")
    out.update({"replaced": row.i, "required": f"new {row.required} old", "old": _num(row.old)})
    out.update({"new": _num(row.new), "change": _num(row.new - row.old)})
    known = KNOWN.get((result.estimator, result.prop, result.reading))
    if known is not None and known.kind == FAILS:
        out["witness"] = known.source
    return out


def axiom_table(max_examples: int = 100, seed: int = 0) -> pd.DataFrame:
    """The tidy table, one row per (estimator, property, reading): columns ``estimator``, ``property`` ("1", "2",
    "3"), ``reading`` ("sentence", "rv"), ``verdict`` (the module docstring's), ``counterexample`` (compact JSON of
    the shrunk example, :func:`describe`, or empty) and ``examples`` (examples drawn until the first
    counterexample, or N), for every estimator of :data:`~shapley.theory.axiom_search.ESTIMATORS`. Needs pandas
    (installed with the pipeline, test and book extras).
    """
    import pandas as pd

    rows = []
    for reading, est, prop in product(READINGS, axs.ESTIMATORS, PROPERTIES):
        res = cell_result(est, prop, reading, max_examples, seed)
        ce = describe(res)
        rows.append(
            {
                "estimator": est.name,
                "property": prop,
                "reading": reading,
                "verdict": res.verdict,
                "counterexample": json.dumps(ce, separators=(",", ":")) if ce else "",
                "examples": res.examples,
            }
        )
    return pd.DataFrame(rows)


def prefix_mismatches(short: pd.DataFrame, full: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Cells where a short run (N examples) disagrees with a longer one of the same seed. Each cell's search
    replays the same draws, so a failure found in N examples must be the longer run's failure, with the same
    counterexample and example count, and a cell with none in N must have none in the longer run or a first
    counterexample after example N. Returns the (estimator, property, reading) keys that break this."""
    keys = ["estimator", "property", "reading"]
    merged = short.merge(full, on=keys, suffixes=("", "_full"))
    bad = []
    for _, r in merged.iterrows():
        if r.verdict == FAILS:
            same = (r.verdict_full, r.counterexample_full, r.examples_full) == (FAILS, r.counterexample, r.examples)
        elif r.verdict == NOT_APPLICABLE:
            same = r.verdict_full == NOT_APPLICABLE
        else:
            same = r.verdict_full != FAILS or r.examples_full > r.examples
        if not same:
            bad.append((r.estimator, r.property, r.reading))
    if len(merged) != len(short):
        raise ValueError("the short table has cells that the full table lacks")
    return bad


def settings(max_examples: int, seed: int) -> dict[str, Any]:
    """Everything that fixes the table's numbers, stored beside it."""
    return {
        "max_examples": int(max_examples),
        "seed": int(seed),
        "n_ranges": {k: list(v) for k, v in axs.N_RANGES.items()},
        "sentence_beta": axs.SENTENCE_BETA,
        "cluster_threshold": CLUSTER_THRESHOLD,
        "shrink_budget": axs.SHRINK_BUDGET,
        "estimators": [e.name for e in axs.ESTIMATORS],
        "rv_nonnegative": [e.name for e in axs.ESTIMATORS if e.rv is not None and e.rv_nonnegative],
        "not_applicable_rv": [e.name for e in axs.ESTIMATORS if e.rv is None],
        "search": "seeded random search (numpy), greedy shrink of the first counterexample",
    }


def write_axiom_table(out_dir: str | Path, max_examples: int = FULL_MAX_EXAMPLES, seed: int = 0) -> Path:
    """Compute the table and write ``axiom_table.csv`` and ``axiom_settings.json`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    axiom_table(max_examples, seed).to_csv(out / "axiom_table.csv", index=False)
    (out / "axiom_settings.json").write_text(json.dumps(settings(max_examples, seed), indent=2) + "\n")
    return out / "axiom_table.csv"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shapley.theory [--max-examples N] [--seed S] [--out DIR]`` (see ``shapley/theory/__main__.py``)."""
    parser = argparse.ArgumentParser(
        prog="python -m shapley.theory", description="The paper's three properties for every estimator."
    )
    parser.add_argument("--max-examples", type=int, default=FULL_MAX_EXAMPLES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/axioms")
    args = parser.parse_args(argv)
    print(write_axiom_table(args.out, args.max_examples, args.seed))
    return 0
