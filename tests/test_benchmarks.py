"""The benchmark scripts run (smoke tests on tiny inputs; the timings themselves are not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, *args, "--out", str(tmp_path)], cwd=ROOT, check=True, capture_output=True, timeout=600
    )


def test_bench_shapley_quick(tmp_path):
    _run(["benchmarks/bench_shapley.py", "--quick"], tmp_path)
    meta = json.loads((tmp_path / "bench_shapley.json").read_text())
    rows = {r["n"]: r for r in meta["rows"]}
    assert rows[10]["max_abs_naive_minus_exact"] < 1e-9
    assert all(r["efficiency_error"] < 1e-9 for r in rows.values())
    assert meta["speedup_exact_vs_naive_n10"] > 1


@pytest.mark.slow
def test_bench_gpu_tiny_on_cpu(tmp_path):
    _run(
        [
            "benchmarks/bench_gpu.py",
            "--tiny",
            "--device",
            "cpu",
            "--nli-batch",
            "4",
            "--prompts",
            "2",
            "--samples",
            "2",
            "--prompt-len",
            "8",
            "--new-tokens",
            "3",
        ],
        tmp_path,
    )
    meta = json.loads((tmp_path / "bench_gpu_tiny_cpu.json").read_text())
    assert meta["tiny"] and not (tmp_path / "bench_gpu.json").exists()
    assert {r["stage"] for r in meta["rows"]} == {"nli", "generate"}
