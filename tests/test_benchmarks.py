"""The benchmark scripts run (smoke tests on tiny inputs; the timings themselves are not asserted)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: packages the GPU machine lacks; bench_gpu.py must run without them
MISSING_ON_GPU = ("rouge_score", "nltk", "gguf", "datasets")


def _run(args: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, check=True, capture_output=True, text=True, timeout=900, env=env
    )


def test_bench_shapley_quick(tmp_path):
    _run(["benchmarks/bench_shapley.py", "--quick", "--out", str(tmp_path)], tmp_path)
    meta = json.loads((tmp_path / "bench_shapley.json").read_text())
    rows = {r["n"]: r for r in meta["rows"]}
    assert rows[10]["max_abs_naive_minus_exact"] < 1e-9
    assert all(r["efficiency_error"] < 1e-9 for r in rows.values())
    assert math.isfinite(meta["speedup_exact_vs_naive_n10"])  # reported; the target is the benchmark's, not a test's


def test_bench_guards_quick_records_each_guard_its_model_and_the_machine(tmp_path):
    """The guards' benchmark runs and records, per guard, its limit, the model's constants and, per size, the
    measured and modelled cost and the time at the limit (the numbers themselves are not asserted)."""
    _run(["benchmarks/bench_guards.py", "--quick", "--out", str(tmp_path)], tmp_path)
    meta = json.loads((tmp_path / "bench_guards.json").read_text())
    guards = meta["guards"]
    assert set(guards) == {"nearest_correlation", "lexical_similarity", "shapley_values_mc", "shapley_values_naive"}
    from shapley.core import entropy, psd
    from shapley.core.baselines import lexical

    assert guards["nearest_correlation"]["model_constants"] == list(psd._NEAREST_SECONDS_PER_ITERATION)
    assert guards["lexical_similarity"]["model_constants"] == dict(zip("adeb", lexical._LEXICAL_SECONDS, strict=True))
    assert guards["shapley_values_mc"]["model_constants"][:3] == list(entropy._MC_SECONDS_PER_PERMUTATION)
    for name in ("nearest_correlation", "lexical_similarity", "shapley_values_mc"):
        rows = guards[name]["rows"]
        assert rows and all(math.isfinite(r["seconds_at_limit"]) for r in rows), name
    assert meta["machine"]["thread_env"]["OMP_NUM_THREADS"] == "1" and len(meta["machine"]["load_average_before"]) == 3


@pytest.mark.slow
def test_bench_gpu_tiny_on_cpu_without_the_packages_the_gpu_machine_lacks(tmp_path):
    """``--tiny`` writes rows of both engines for generation and NLI (and end to end), each shapley row with its
    ratio, labelled meaningless; it runs with rouge-score, nltk, gguf and datasets made unimportable."""
    stubs = tmp_path / "stubs"
    for name in MISSING_ON_GPU:
        (stubs / name).mkdir(parents=True)
        (stubs / name / "__init__.py").write_text(f"raise ImportError('{name} is not on the GPU machine')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stubs), str(ROOT)]), "OMP_NUM_THREADS": "1"}
    out = tmp_path / "bench.json"
    proc = _run(["benchmarks/bench_gpu.py", "--tiny", "--output", str(out)], tmp_path, env)
    meta = json.loads(out.read_text())
    assert meta["tiny"] and meta["numbers_meaningless"] and "meaningless" in meta["note"]
    assert out.with_suffix(".csv").is_file() and "wrote" in proc.stdout
    assert meta["errors"] == {}, meta["errors"]
    rows = meta["rows"]
    for stage in ("generate", "nli", "end_to_end"):
        engines = {r["engine"] for r in rows if r["stage"] == stage}
        assert engines == {"shapley", "transformers"}, stage
        ours = next(r for r in rows if r["stage"] == stage and r["engine"] == "shapley")
        assert ours["ratio_vs_transformers"] > 0
    gen = {r["engine"]: r for r in rows if r["stage"] == "generate" and "dynamic" in r["variant"]}
    assert gen["shapley"]["tokens"] > 0 and gen["transformers"]["tokens"] > 0
    assert gen["shapley"]["ratio_vs_transformers"] == pytest.approx(
        gen["shapley"]["tokens_per_s"] / gen["transformers"]["tokens_per_s"]
    )
    nli = next(r for r in rows if r["stage"] == "nli" and r["engine"] == "shapley")
    assert nli["max_abs_diff_vs_plain"] < 1e-5  # same model, same pairs, same numbers (fp32 on a CPU)
    e2e = next(r for r in rows if r["stage"] == "end_to_end" and r["engine"] == "shapley")
    assert e2e["correctness_metric"].startswith("bleu") and "LexSim" not in e2e["methods"]
    assert set(meta["targets_met"].values()) == {None}  # no verdict from a tiny run


def test_bench_notebooks_times_every_page_and_the_performance_page_shows_its_goals(tmp_path):
    """Issue 23: every executable page, against 10 s (90 s for the experiment page), with the load average; the
    page reads the goals from the JSON (the pages are listed here, not executed)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_notebooks as bn
    finally:
        sys.path.pop(0)
    from shapley.companion import costs

    pages = bn.pages()
    assert {"notebooks/psd", "notebooks/experiment", "book/claims"} <= set(pages)
    assert bn.target("notebooks/experiment") == 90 and bn.target("notebooks/psd") == 10
    assert costs.page_times(tmp_path) is None and "not measured yet" in costs.page_times_html(tmp_path)
    (tmp_path / "bench_notebooks.json").write_text(
        json.dumps(
            {
                "date": "2026-01-01",
                "target_s": 10.0,
                "experiment_page": "notebooks/experiment",
                "experiment_target_s": 90.0,
                "machine": {"cpu": "X", "cores": 2, "load_average_before": [0.1, 0, 0]},
                "rows": [{"page": "notebooks/psd", "seconds": 12.5, "target_s": 10.0, "target_met": False}],
            }
        )
    )
    html = costs.page_times_html(tmp_path)
    assert "notebooks/psd" in html and "12.5" in html and "load average 0.1" in html
