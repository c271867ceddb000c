"""benchmarks/bench_generate.py runs in its tiny mode and writes the rows the performance page reads (the
timings themselves are not asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_generate_tiny(tmp_path):
    out = tmp_path / "bench_generate_cpu.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_generate.py", "--tiny", "--questions", "2", "--output", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert "wrote" in proc.stdout
    meta = json.loads(out.read_text())
    assert "no measurement" in meta["model"] and meta["machine"]["torch_threads"] == 1
    modes = {r["mode"]: r for r in meta["rows"]}
    assert set(modes) == {"shapley_prefix_cache", "shapley_no_prefix_cache", "transformers_generate"}
    assert modes["transformers_generate"]["speedup_vs_transformers"] == 1.0
    cached, plain = modes["shapley_prefix_cache"], modes["shapley_no_prefix_cache"]
    assert cached["prefix_tokens"] > 0 and plain["prefix_tokens"] == 0
    assert cached["prompt_prefills"] == plain["prompt_prefills"] == 2  # one per question
    assert all(r["seconds_per_question"] > 0 and r["questions"] == 2 for r in meta["rows"])
