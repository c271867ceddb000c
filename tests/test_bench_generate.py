"""benchmarks/bench_generate.py runs in its tiny mode and writes the rows the performance page reads (the
timings themselves are not asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_bench_generate_tiny(tmp_path):
    out = tmp_path / "bench_generate_cpu.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_generate.py", "--tiny", "--questions", "2", "--repeats", "2"]
        + ["--reference-repeats", "2", "--output", str(out)],
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
    assert all("seconds_per_question" in r and r["questions"] == 2 for r in meta["rows"])  # no timing asserted
    assert meta["benchmark_version"] == 2 and meta["repeats"] == meta["reference_repeats"] == 2
    assert meta["total_seconds"] > 0 and "untimed" in meta["warm_up"]
    for r in meta["rows"]:
        runs = r["seconds_per_question_runs"]
        assert len(runs) == r["repeats"] == 2
        assert r["seconds_per_question_min"] == min(runs) and r["seconds_per_question_max"] == max(runs)
        assert r["speedup_vs_transformers_min"] <= r["speedup_vs_transformers"] <= r["speedup_vs_transformers_max"]
    ref = modes["transformers_generate"]["seconds_per_question"]
    setup_per_q = cached["setup_seconds"] / 2
    assert cached["speedup_with_setup"] == pytest.approx(ref / (cached["seconds_per_question"] + setup_per_q))


@pytest.mark.slow
def test_bench_gpu_tiny_has_squad_shaped_generate_rows(tmp_path):
    """bench_gpu.py's generate stage also runs SQuAD-shaped prompts (a long shared few-shot block), whose
    shapley row reuses the shared prefix; ``--tiny`` keeps it runnable on a CPU."""
    out = tmp_path / "bench_gpu.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    subprocess.run(
        [sys.executable, "benchmarks/bench_gpu.py", "--tiny", "--skip-e2e", "--skip-static", "--output", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    meta = json.loads(out.read_text())
    assert meta["errors"] == {}, meta["errors"]
    squad = [r for r in meta["rows"] if r["stage"] == "generate" and r.get("prompts", "").startswith("SQuAD")]
    assert {r["engine"] for r in squad} == {"shapley", "transformers"}
    ours = next(r for r in squad if r["engine"] == "shapley")
    assert ours["generator_stats"]["prefix_tokens_reused"] > 0 and ours["ratio_vs_transformers"] > 0
    assert "generate_squad_shaped_at_least_1.0_of_transformers_static" in meta["targets_met"]
