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
    assert meta["repeats"] == meta["reference_repeats"] == 2
    assert "total_seconds" in meta and "untimed" in meta["warm_up"]
    assert meta["trial"] == "tiny" and "--tiny" in meta["command"] and len(meta["load_average_before"]) == 3
    assert not any("speedup_vs_before" in r for r in meta["rows"])  # no hand-typed "before" figure (issue 32)
    reference = modes["transformers_generate"]
    for r in meta["rows"]:
        runs = r["seconds_per_question_runs"]
        assert len(runs) == r["repeats"] == 2
        assert r["seconds_per_question_min"] == min(runs) and r["seconds_per_question_max"] == max(runs)
        # the range pairs the extremes: the reference's fastest run over this mode's slowest, and back
        low = reference["seconds_per_question_min"] / r["seconds_per_question_max"]
        high = reference["seconds_per_question_max"] / r["seconds_per_question_min"]
        assert (r["speedup_vs_transformers_min"], r["speedup_vs_transformers_max"]) == pytest.approx((low, high))
    ref = modes["transformers_generate"]["seconds_per_question"]
    setup_per_q = cached["setup_seconds"] / 2
    assert cached["speedup_with_setup"] == pytest.approx(ref / (cached["seconds_per_question"] + setup_per_q))


def _rows(**prefix: float) -> list[dict]:
    ours = {"dataset": "squad", "mode": "shapley_prefix_cache", "questions": 4, "repeats": 3, "setup_seconds": 3.4}
    ours |= {"seconds_per_question": 4.0, "seconds_per_question_min": 3.9, "seconds_per_question_max": 4.4}
    ours |= {"speedup_vs_transformers": 12.5, "speedup_vs_transformers_min": 11.4, "speedup_vs_transformers_max": 12.8}
    ours |= {"speedup_with_setup": 10.3, **prefix}
    ref = {"dataset": "squad", "mode": "transformers_generate", "questions": 4, "repeats": 1}
    ref |= {"seconds_per_question": 50.0, "seconds_per_question_min": 50.0, "seconds_per_question_max": 50.0}
    return [ours, ref]


def test_performance_page_states_the_claim_from_the_file():
    import pandas as pd

    from shapley.companion import costs

    text = costs.generation_finding(pd.DataFrame(_rows()))
    assert "4.00 s per question (median of 3 runs, 3.90 to 4.40)" in text and "one-off 3.4 s" in text
    assert "50.0 s per question (1 run)" in text and "12.5 times faster (from 11.4 to 12.8" in text
    assert "10.3 times with the prefix prefill charged" in text and "meets the target of 12 times" in text
    assert "misses the target" in costs.generation_finding(pd.DataFrame(_rows(speedup_vs_transformers=9.2)))
    committed = costs.load_benchmark(ROOT / "results" / "bench_generate_cpu.json")[1]
    assert "times faster" in costs.generation_finding(committed)
