"""Benchmark: exact vs naive vs Monte-Carlo Shapley values, n = 4..20.

Writes ``results/bench_shapley.csv`` and ``results/bench_shapley.json`` (machine, versions, targets, the load
average before and after); ``--quick`` (a smoke test) writes under ``common.TRIAL_DIR`` instead, never under
``results/``. Run: ``python benchmarks/bench_shapley.py [--quick] [--out DIR]``. Timings are wall-clock medians
over repeats.
Targets (issue 2): exact at n = 10 at least 100x faster than naive in the same run; exact at n = 20
under 10 s on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import common
import numpy as np

import shapley
from shapley.pipeline.rundir.provenance import git_info


def _timed(f, repeats: int) -> tuple[float, np.ndarray]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _matrix(n: int, seed: int) -> np.ndarray:
    """A realistic kernel matrix: random entailment probabilities, beta = 0.5, PSD-checked."""
    rng = np.random.default_rng(seed)
    P = rng.uniform(0.0, 1.0, size=(n, n))
    np.fill_diagonal(P, 1.0)
    R = shapley.kernel_matrix(shapley.correlation_matrix(P), 0.5)
    if not shapley.is_psd(R):
        R = shapley.kernel_matrix(shapley.correlation_matrix(P), shapley.gershgorin_beta_bound(n))
    return R


MAX_MC_PERMUTATIONS = 1_000_000
"""The most orders ``--mc-permutations`` takes: about a minute per size at n = 20; more ends in a memory error."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats (smoke test)")
    ap.add_argument(
        "--naive-max-n", type=int, default=11, help=f"largest n for the naive reference (at most {shapley.NAIVE_MAX_N})"
    )
    ap.add_argument(
        "--mc-permutations", type=int, default=2000, help=f"orders sampled by Monte-Carlo (2..{MAX_MC_PERMUTATIONS})"
    )
    ap.add_argument("--out", type=Path, default=None, help="folder (default: results/; --quick: a temporary one)")
    args = ap.parse_args()
    if not 1 <= args.naive_max_n <= shapley.NAIVE_MAX_N:
        ap.error(f"--naive-max-n must be in 1..{shapley.NAIVE_MAX_N}; got {args.naive_max_n}")
    if not 2 <= args.mc_permutations <= MAX_MC_PERMUTATIONS:
        ap.error(f"--mc-permutations must be in 2..{MAX_MC_PERMUTATIONS}; got {args.mc_permutations}")
    trial = "quick" if args.quick else None
    out = common.output(ap, args.out, common.RESULTS, trial)
    load_before = common.load_average()
    sizes = [4, 6, 8, 10] if args.quick else list(range(4, 21))
    rows = []
    for n in sizes:
        R = _matrix(n, seed=n)
        reps = 3 if n <= 16 else 1
        t_exact, phi = _timed(lambda R=R: shapley.shapley_values(R), reps)
        row = {
            "n": n,
            "exact_s": t_exact,
            "naive_s": None,
            "mc_s": None,
            "mc_permutations": args.mc_permutations,
            "max_abs_naive_minus_exact": None,
            "max_abs_mc_minus_exact": None,
            "mc_max_stderr": None,
            "efficiency_error": abs(phi.sum() - shapley.gaussian_entropy(R)),
        }
        if n <= args.naive_max_n:
            t_naive, phi_naive = _timed(lambda R=R: shapley.shapley_values(R, method="naive"), 1)
            row["naive_s"] = t_naive
            row["max_abs_naive_minus_exact"] = float(np.abs(phi_naive - phi).max())
        t_mc, (phi_mc, se) = _timed(
            lambda R=R: shapley.shapley_values_mc(R, n_permutations=args.mc_permutations, seed=0), reps
        )
        row["mc_s"] = t_mc
        row["max_abs_mc_minus_exact"] = float(np.abs(phi_mc - phi).max())
        row["mc_max_stderr"] = float(se.max())
        rows.append(row)
        print(
            f"n={n:2d} exact {t_exact * 1e3:9.2f} ms  naive {row['naive_s'] or float('nan'):9.3f} s  "
            f"mc {t_mc * 1e3:8.1f} ms",
            flush=True,
        )
    by_n = {r["n"]: r for r in rows}
    speedup_10 = by_n[10]["naive_s"] / by_n[10]["exact_s"] if 10 in by_n and by_n[10]["naive_s"] else None
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": git_info(),  # the commit the numbers come from, and whether the source was clean
        "device": f"CPU: {platform.processor() or platform.machine()} ({os.cpu_count()} logical cores)",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "shapley": shapley.__version__,
        "command": " ".join(["python benchmarks/bench_shapley.py", *sys.argv[1:]]),
        "speedup_exact_vs_naive_n10": speedup_10,
        "target_speedup_n10": 100,
        "exact_n20_s": by_n[20]["exact_s"] if 20 in by_n else None,
        "target_exact_n20_s": 10,
        **common.provenance(trial, load_before),
        "rows": rows,
    }
    # speed targets are checked here, by the benchmark, never by a timed unit test
    meta["targets_met"] = {
        "exact_faster_than_naive_n10": None if speedup_10 is None else bool(speedup_10 > 1),
        "speedup_n10": None if speedup_10 is None else bool(speedup_10 >= meta["target_speedup_n10"]),
        "exact_n20": None if meta["exact_n20_s"] is None else bool(meta["exact_n20_s"] <= meta["target_exact_n20_s"]),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_shapley.json").write_text(json.dumps(meta, indent=2) + "\n")
    with open(out / "bench_shapley.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    shown = "not measured (--naive-max-n below 10)" if speedup_10 is None else f"{speedup_10:.0f}x"
    print(f"speed-up exact vs naive at n=10: {shown}; exact n=20: {meta['exact_n20_s']}")
    print("targets met:", meta["targets_met"])
    print(f"wrote {out / 'bench_shapley.json'}")


if __name__ == "__main__":
    main()
