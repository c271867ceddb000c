"""Benchmark: what each work guard admits at its limit, on this machine, on one thread.

The guards refuse a call whose estimated cost (a cost model with measured constants) exceeds a limit in
seconds, and their messages promise that what they admit takes about that long ("about a minute"):

* ``nearest_correlation`` (``NEAREST_MAX_SECONDS``; model ``_nearest_seconds``, per iteration),
* ``lexical_similarity`` (``LEXICAL_MAX_SECONDS``; model ``_lexical_seconds``, per pair of answers).

For each, the per-unit cost is timed at a few sizes below the limit (median of repeats) and compared with the
model; ``seconds_at_limit`` is what the largest admitted call at that size would take (the limit times
measured / modelled cost), extrapolated from the per-unit cost (not run: each is about a minute). A ratio
measured / model at or below 1 means the guard keeps its promise at that size.

Writes ``results/bench_guards.json`` (machine, load average before and after, thread settings, per-unit costs,
the time at each limit); ``--quick`` (a smoke test) writes under ``common.TRIAL_DIR`` instead, never under
``results/``. Run: ``python benchmarks/bench_guards.py [--quick] [--out DIR]``. The thread count is
pinned to one (OMP/OpenBLAS/MKL) before numpy loads: the guards speak of one core.
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import common  # noqa: E402
import numpy as np  # noqa: E402

from shapley.core import psd  # noqa: E402
from shapley.core.baselines import lexical  # noqa: E402
from shapley.pipeline.rundir.provenance import git_info  # noqa: E402


def _median_seconds(f: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _row(size: dict[str, Any], measured: float, model: float, limit: float, unit: str) -> dict[str, Any]:
    """One size: measured and modelled seconds per unit, their ratio and the time of what the guard admits."""
    return {
        **size,
        f"measured_s_per_{unit}": measured,
        f"model_s_per_{unit}": model,
        "measured_over_model": measured / model,
        "seconds_at_limit": limit * measured / model,
    }


def _indefinite(n: int, seed: int = 0) -> np.ndarray:
    """A symmetric unit-diagonal matrix far from PSD, so that the alternating projections run many iterations."""
    g = np.random.default_rng(seed).uniform(-1.0, 1.0, size=(n, n))
    R = (g + g.T) / 2.0
    np.fill_diagonal(R, 1.0)
    return R


def _nearest_call(R: np.ndarray, iters: int, repeats: int) -> tuple[float, float]:
    """(median seconds, iterations run) of one nearest_correlation call that may run ``iters`` iterations; the
    iterations are counted as the eigendecompositions made (one each, plus one in the final clip when needed)."""
    real_eigh = np.linalg.eigh
    calls = [0]

    def counted(a: Any, *args: Any, **kw: Any) -> Any:
        calls[0] += 1
        return real_eigh(a, *args, **kw)

    np.linalg.eigh = counted
    try:
        seconds = _median_seconds(lambda: psd.nearest_correlation(R, max_iter=iters, tol=1e-300), repeats)
    finally:
        np.linalg.eigh = real_eigh
    return seconds, calls[0] / repeats


def bench_nearest(sizes: list[int], repeats: int) -> dict[str, Any]:
    """Seconds per iteration: (a call of k iterations - a call of one) / (k - 1), so that the fixed cost of a call
    (validation, the final clip) is not spread over the iterations; tol = 1e-300 stops only at an exact fixed point."""
    rows = []
    for n in sizes:
        R = _indefinite(n)
        iters = max(10, min(300, int(1.5 / psd._nearest_seconds(1, n))))
        one, ran_one = _nearest_call(R, 1, repeats)
        many, ran = _nearest_call(R, iters, repeats)
        if ran <= ran_one:
            continue  # converged at once: nothing to time
        per_iter = max(many - one, 0.0) / (ran - ran_one)
        model = psd._nearest_seconds(1, n) / 3  # one iteration's share of a call of one
        size = {"n": n, "iterations": ran - ran_one + 1}
        rows.append(_row(size, per_iter, model, psd.NEAREST_MAX_SECONDS, "iter"))
    default_n = max(n for n in range(2, 5000) if psd._nearest_seconds(500, n) <= psd.NEAREST_MAX_SECONDS)
    return {
        "limit": "NEAREST_MAX_SECONDS",
        "limit_s": psd.NEAREST_MAX_SECONDS,
        "model": "_nearest_seconds: (iterations + 2) * (a + b n**2 + c n**3)",
        "model_constants": list(psd._NEAREST_SECONDS_PER_ITERATION),
        "largest_n_at_default_500_iterations": default_n,
        "rows": rows,
    }


def _texts(n: int, tokens: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(50)]
    return [" ".join(rng.choice(words, size=tokens)) for _ in range(n)]


def bench_lexical(token_sizes: list[int], char_sizes: list[int], repeats: int) -> dict[str, Any]:
    cases: list[tuple[dict[str, Any], list[str]]] = []
    for k in token_sizes:
        n = max(6, min(40, int(400 / k)))
        cases.append(({"tokens_per_answer": k, "chars_per_answer": None, "n": n}, _texts(n, k, seed=k)))
    for c in char_sizes:  # long answers without a Rouge token (e.g. CJK text): tokenising is the cost
        texts = ["\u6771" * c + f" {i}" for i in range(12)]
        cases.append(({"tokens_per_answer": 1, "chars_per_answer": c + 2, "n": len(texts)}, texts))
    rows = []
    for size, texts in cases:
        seconds = _median_seconds(partial(lexical.lexical_similarity, texts), repeats)
        pairs = len(texts) * (len(texts) - 1) / 2
        model = lexical._lexical_seconds(texts) / pairs
        rows.append(_row(size, seconds / pairs, model, lexical.LEXICAL_MAX_SECONDS, "pair"))
    return {
        "limit": "LEXICAL_MAX_SECONDS",
        "limit_s": lexical.LEXICAL_MAX_SECONDS,
        "model": "_lexical_seconds: per pair a + d (chars_i + chars_j) + e (tokens_i + tokens_j) + b tokens_i tokens_j",
        "model_constants": dict(zip(("a", "d", "e", "b"), lexical._LEXICAL_SECONDS, strict=True)),
        "rows": rows,
    }


def _machine() -> dict[str, Any]:
    cpu = common.cpu_name()
    threads: Any = None
    try:
        from threadpoolctl import threadpool_info

        threads = [{k: d.get(k) for k in ("internal_api", "num_threads", "version")} for d in threadpool_info()]
    except ImportError:
        pass
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "thread_env": {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
        "blas_threads": threads,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few small sizes, one repeat (smoke test)")
    ap.add_argument("--out", type=Path, default=None, help="folder (default: results/; --quick: a temporary one)")
    ap.add_argument("--note", default="", help="a note stored with the results (e.g. that the machine was shared)")
    args = ap.parse_args()
    trial = "quick" if args.quick else None
    out = common.output(ap, args.out, common.RESULTS, trial) / "bench_guards.json"
    reps = 1 if args.quick else 3
    load_before = common.load_average()
    t0 = time.perf_counter()
    guards = {
        "nearest_correlation": bench_nearest([3, 10, 30] if args.quick else [3, 10, 30, 100, 200, 400], reps),
        "lexical_similarity": bench_lexical(
            [1, 5] if args.quick else [1, 5, 20, 80, 200], [] if args.quick else [1000, 10000], reps
        ),
    }
    for g in guards.values():
        g["worst_seconds_at_limit"] = max(r["seconds_at_limit"] for r in g["rows"])
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": git_info(),
        "command": " ".join(["python benchmarks/bench_guards.py", *sys.argv[1:]]),
        "note": args.note,
        **common.provenance(trial, load_before),
        "machine": _machine(),
        "bench_seconds": time.perf_counter() - t0,
        "guards": guards,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(meta, indent=2) + "\n")
    for name, g in guards.items():
        print(f"{name}: worst {g['worst_seconds_at_limit']:.3g} s at the {g['limit']} = {g['limit_s']:g} s limit")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
