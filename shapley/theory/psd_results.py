"""The committed worst-case searches of the PSD page (``make theory-results``; part of ``make results``).

``python -m shapley.theory.psd_results [--out results/theory]`` runs the searches of ``notebooks/psd.md`` that
take more than a few seconds and writes ``psd_searches.json``: their outcome, the seconds they took and a
freshness record (:mod:`shapley.theory.freshness`). The page only reads it (:func:`load`) and says whether it is
stale (:func:`stale_reasons`).

* ``checks``: for n = 2..14, the closed form ``m(n)`` beside every vertex (n <= 7), every two-group split, a
  local search over vertices (n >= 4) and random C in [0, 1] (:mod:`shapley.theory.worstcase`);
* ``hypothesis``: :func:`shapley.theory.search.hypothesis_smallest_failing_n` at beta = 0.5 (derandomised),
  and ``below``: every vertex matrix one size below its first failing n.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shapley.theory import freshness, worstcase
from shapley.theory import search as se

RECORD_FILE = "psd_searches.json"
MODULES = ("shapley.theory.worstcase", "shapley.theory.search", "shapley.core.kernel", "shapley.core.validate")
"""The modules whose code determines the record's numbers (their digest is in the freshness block)."""

SETTINGS: dict[str, Any] = {
    "beta": 0.5,
    "checks": {"n_min": 2, "n_max": 14, "local_starts": 30, "random_draws": 20_000, "seed": 0},
    "hypothesis": {"n_min": 2, "n_max": 12, "max_examples": se.HYPOTHESIS_MAX_EXAMPLES},
}
COMMAND = "python -m shapley.theory.psd_results --out results/theory"


def _nan_to_none(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def check_rows(settings: Mapping[str, Any] = SETTINGS) -> list[dict[str, Any]]:
    """One row per n: the closed form and each search's smallest ``lambda_min(K)`` (None: not run at that n)."""
    c = settings["checks"]
    rows = []
    for n in range(c["n_min"], c["n_max"] + 1):
        exhaustive = worstcase.exhaustive_vertex_search(n).min_eig_K if n <= worstcase.EXHAUSTIVE_MAX_N else math.nan
        local = worstcase.local_search(n, n_starts=c["local_starts"], seed=c["seed"]).min_eig_K if n >= 4 else math.nan
        rows.append(
            {
                "n": n,
                "closed form m(n)": float(worstcase.min_kernel_eigenvalue(n)),
                "all vertices": _nan_to_none(exhaustive),
                "all splits": float(worstcase.partition_search(n).min_eig_K),
                "local search (heuristic)": _nan_to_none(local),
                "random C in [0,1]": float(
                    worstcase.random_search(n, n_samples=c["random_draws"], seed=c["seed"]).min_eig_K
                ),
            }
        )
    return rows


def hypothesis_record(settings: Mapping[str, Any] = SETTINGS) -> dict[str, Any]:
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
        out["first"] = {"n": first.n, "min_eig_R": first.min_eig_R, "strategy": first.strategy, "C": first.C.tolist()}
        below = worstcase.exhaustive_vertex_search(first.n - 1)
        out["below"] = {"n": first.n - 1, "n_checked": below.n_checked, "min_eig_K": float(below.min_eig_K)}
    return out


def compute(settings: Mapping[str, Any] = SETTINGS) -> dict[str, Any]:
    start = time.perf_counter()
    record = {"checks": check_rows(settings), "hypothesis": hypothesis_record(settings)}
    return {
        "command": COMMAND,
        "freshness": freshness.freshness(settings, MODULES),
        "seconds": round(time.perf_counter() - start, 1),
        **record,
    }


def load(path: str | Path) -> dict[str, Any]:
    """The record at ``path`` (a ``psd_searches.json`` or the folder holding it)."""
    return freshness.load_record(path, RECORD_FILE, COMMAND)


def stale_reasons(record: Mapping[str, Any]) -> list[str]:
    """Why the record is stale against the current :data:`SETTINGS` and code; [] when fresh."""
    return freshness.stale_reasons(record, SETTINGS, MODULES)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("results/theory"), help="folder (default results/theory)")
    args = parser.parse_args(argv)
    record = compute()
    path = freshness.write_record(args.out / RECORD_FILE, record)
    first = record["hypothesis"]["first"]
    print(f"wrote {path} in {record['seconds']} s: first failing n = {first['n'] if first else None}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
