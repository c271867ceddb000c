"""The PSD page's worst-case searches, committed as a page record (:data:`RECORD`,
``results/theory/psd_searches.json``, written by ``python -m shapley.theory.psd_results``).

* ``checks``: for n = 2..14, the closed form ``m(n)`` beside every vertex (n <= 7), every two-group split and
  random C in [0, 1] (:mod:`shapley.theory.worstcase`);
* ``hypothesis``: :func:`shapley.theory.search.hypothesis_smallest_failing_n` at beta = 0.5 (derandomised),
  and ``below``: every vertex matrix one size below its first failing n.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shapley.results import records
from shapley.theory import search as se
from shapley.theory import worstcase as wc


def check_rows(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per n: the closed form and each search's smallest ``lambda_min(K)`` (None: not run at that n)."""
    c = settings["checks"]
    return [
        {
            "n": n,
            "closed form m(n)": wc.min_kernel_eigenvalue(n),
            "all vertices": wc.exhaustive_vertex_search(n).min_eig_K if n <= wc.EXHAUSTIVE_MAX_N else None,
            "all splits": wc.partition_search(n).min_eig_K,
            "random C in [0,1]": wc.random_search(n, n_samples=c["random_draws"], seed=c["seed"]).min_eig_K,
        }
        for n in range(c["n_min"], c["n_max"] + 1)
    ]


def hypothesis_record(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The Hypothesis search for the smallest failing n, and every vertex one size below it."""
    h = settings["hypothesis"]
    first, runs = se.hypothesis_smallest_failing_n(
        beta=settings["beta"], n_range=(h["n_min"], h["n_max"]), max_examples=h["max_examples"]
    )
    out: dict[str, Any] = {
        "runs": [{"n": r.n, "examples_run": r.examples_run, "found": r.C is not None} for r in runs],
        "first": None,
        "below": None,
    }
    if first is not None and first.C is not None:
        out["first"] = {"n": first.n, "min_eig_R": first.min_eig_R, "strategy": first.strategy, "C": first.C}
        below = wc.exhaustive_vertex_search(first.n - 1)
        out["below"] = {"n": first.n - 1, "n_checked": below.n_checked, "min_eig_K": below.min_eig_K}
    return out


RECORD = records.PageRecord(
    path="theory/psd_searches.json",
    module=__spec__.name,
    compute=lambda settings, results: {"checks": check_rows(settings), "hypothesis": hypothesis_record(settings)},
    check=records.has_keys(checks=list, hypothesis=dict),
    summary=lambda record: f"first failing n = {(record['hypothesis']['first'] or {}).get('n')}",
    settings={
        "beta": 0.5,
        "checks": {"n_min": 2, "n_max": 14, "random_draws": 20_000, "seed": 0},
        "hypothesis": {"n_min": 2, "n_max": 12, "max_examples": se.HYPOTHESIS_MAX_EXAMPLES},
    },
)

if __name__ == "__main__":
    raise SystemExit(RECORD.main())
