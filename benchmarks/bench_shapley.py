"""Benchmark: exact Shapley values, n = 4..20.

Writes ``results/bench_shapley.csv`` and ``results/bench_shapley.json`` (machine, versions, targets, the load
average before and after); ``--quick`` (a smoke test) writes under ``common.TRIAL_DIR`` instead, never under
``results/``. Run: ``python benchmarks/bench_shapley.py [--quick] [--out DIR]``. Timings are wall-clock medians
over repeats.
Target (issue 2): exact at n = 20 under 10 s on a 2-core CPU.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats (smoke test)")
    ap.add_argument("--out", type=Path, default=None, help="folder (default: results/; --quick: a temporary one)")
    args = ap.parse_args()
    trial = "quick" if args.quick else None
    out = common.output(ap, args.out, common.RESULTS, trial)
    load_before = common.load_average()
    sizes = [4, 6, 8, 10] if args.quick else list(range(4, 21))
    rows = []
    for n in sizes:
        R = _matrix(n, seed=n)
        reps = 3 if n <= 16 else 1
        t_exact, phi = _timed(lambda R=R: shapley.shapley_values(R), reps)
        rows.append({"n": n, "exact_s": t_exact, "efficiency_error": abs(phi.sum() - shapley.gaussian_entropy(R))})
        print(f"n={n:2d} exact {t_exact * 1e3:9.2f} ms", flush=True)
    by_n = {r["n"]: r for r in rows}
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": git_info(),  # the commit the numbers come from, and whether the source was clean
        "device": f"CPU: {platform.processor() or platform.machine()} ({os.cpu_count()} logical cores)",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "shapley": shapley.__version__,
        "command": " ".join(["python benchmarks/bench_shapley.py", *sys.argv[1:]]),
        "exact_n20_s": by_n[20]["exact_s"] if 20 in by_n else None,
        "target_exact_n20_s": 10,
        **common.provenance(trial, load_before),
        "rows": rows,
    }
    # the speed target is checked here, by the benchmark, never by a timed unit test
    meta["targets_met"] = {
        "exact_n20": None if meta["exact_n20_s"] is None else bool(meta["exact_n20_s"] <= meta["target_exact_n20_s"]),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_shapley.json").write_text(json.dumps(meta, indent=2) + "\n")
    with open(out / "bench_shapley.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"exact n=20: {meta['exact_n20_s']}")
    print("targets met:", meta["targets_met"])
    print(f"wrote {out / 'bench_shapley.json'}")


if __name__ == "__main__":
    main()
