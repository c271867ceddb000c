"""The benchmark scripts run (smoke tests on tiny inputs; the timings themselves are not asserted), and the
performance page reads what they write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: packages the GPU machine lacks; bench_gpu.py must run without them
MISSING_ON_GPU = ("rouge_score", "nltk", "gguf", "datasets")


ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def _run(*args: str, env: dict[str, str] = ENV, check: bool = True) -> subprocess.CompletedProcess:
    """``python ARGS`` in the repository, its output captured."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, check=check, capture_output=True, text=True, timeout=900, env=env
    )


def _benchmarks_module(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return __import__(name)
    finally:
        sys.path.pop(0)


def test_bench_shapley_quick(tmp_path, monkeypatch):
    bench = _benchmarks_module("bench_shapley")
    monkeypatch.setattr(sys, "argv", ["bench_shapley.py", "--quick", "--out", str(tmp_path)])
    bench.main()
    meta = json.loads((tmp_path / "bench_shapley.json").read_text())
    assert [r["n"] for r in meta["rows"]] == [4, 6, 8, 10]
    assert all(r["efficiency_error"] < 1e-9 for r in meta["rows"])
    assert meta["trial"] == "quick" and len(meta["load_average_before"]) == len(meta["load_average_after"]) == 3


@pytest.mark.slow
def test_bench_gpu_tiny_on_cpu_without_the_packages_the_gpu_machine_lacks(tmp_path):
    """``--tiny`` writes rows of both engines for generation and NLI (and end to end), each shapley row with its
    ratio, labelled meaningless; it runs with rouge-score, nltk, gguf and datasets made unimportable."""
    stubs = tmp_path / "stubs"
    for name in MISSING_ON_GPU:
        (stubs / name).mkdir(parents=True)
        (stubs / name / "__init__.py").write_text(f"raise ImportError('{name} is not on the GPU machine')\n")
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(stubs), str(ROOT)])}
    out = tmp_path / "bench.json"
    proc = _run("benchmarks/bench_gpu.py", "--tiny", "--output", str(out), env=env)
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
    # the generate stage also runs SQuAD-shaped prompts (a long shared few-shot block): shapley reuses the prefix
    squad = [r for r in rows if r["stage"] == "generate" and r.get("prompts", "").startswith("SQuAD")]
    assert {r["engine"] for r in squad} == {"shapley", "transformers"}
    ours = next(r for r in squad if r["engine"] == "shapley")
    assert ours["generator_stats"]["prefix_tokens_reused"] > 0 and ours["ratio_vs_transformers"] > 0
    assert "generate_squad_shaped_at_least_1.0_of_transformers_static" in meta["targets_met"]


def test_bench_notebooks_times_every_page_and_the_performance_page_shows_its_goals(tmp_path):
    """Issue 23: every executable page, against 10 s (90 s for the experiment page), with the load average; the
    page reads the goals from the JSON (the pages are listed here, not executed)."""
    bn = _benchmarks_module("bench_notebooks")
    from shapley.companion import costs

    pages = bn.pages()
    assert {"notebooks/psd", "notebooks/experiment", "book/claims"} <= set(pages)
    assert bn.target("notebooks/experiment") == 90 and bn.target("notebooks/psd") == 10
    (tmp_path / "bench_notebooks.json").write_text(
        json.dumps(
            {
                "date": "2026-01-01",
                "target_s": 10.0,
                "experiment_page": "notebooks/experiment",
                "experiment_target_s": 90.0,
                "machine": {"cpu": "X", "cores": 2},
                "trial": None,
                "load_average_before": [0.1, 0, 0],
                "load_average_after": [1.1, 0, 0],
                "rows": [{"page": "notebooks/psd", "seconds": 12.5, "target_s": 10.0, "target_met": False}],
            }
        )
    )
    meta, rows = costs.load_benchmark(tmp_path / "bench_notebooks.json")
    assert rows["page"].tolist() == ["notebooks/psd"] and rows["seconds"].tolist() == [12.5]
    assert costs.load_averages(meta)[0] == 0.1


TRIAL_RUNS = {
    "bench_shapley.py": ["--quick", "--out"],
    "bench_nli.py": ["--quick", "--out"],
    "bench_notebooks.py": ["--names", "notebooks/psd", "--out"],
    "bench_generate.py": ["--tiny", "--output"],
    "bench_gpu.py": ["--tiny", "--output"],
}


@pytest.mark.parametrize("script", sorted(TRIAL_RUNS))
def test_a_trial_run_may_not_write_under_results(script, tmp_path):
    """Issue 33, item 14: a smoke, tiny or subset run that names a path under results/ is refused by the parser
    (exit 2, no traceback) before any work, so that it cannot replace a committed measurement."""
    target = "results" if TRIAL_RUNS[script][-1] == "--out" else "results/bench_trial.json"
    before = sorted(p.name for p in (ROOT / "results").iterdir())
    proc = _run(f"benchmarks/{script}", *TRIAL_RUNS[script], target, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "may not write under" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in (ROOT / "results").iterdir()) == before


def test_trial_runs_default_to_a_private_folder_and_outputs_are_checked_first(tmp_path, monkeypatch):
    """Never a fixed name in the shared temporary folder: trial runs write under the user's cache, and a link or a
    file in place of that folder is refused (exit 2) before anything is written; so is an output that cannot be
    written."""
    import argparse
    import tempfile

    common = _benchmarks_module("common")
    parser = argparse.ArgumentParser(prog="bench")
    assert not common.TRIAL_DIR.is_relative_to(tempfile.gettempdir())
    assert common.output(parser, None, common.RESULTS, None) == common.RESULTS.resolve()
    assert common.output(parser, None, common.RESULTS, "quick") == common.TRIAL_DIR.resolve()
    named = common.RESULTS / "bench_generate_cpu.json"
    assert common.output(parser, None, named, "tiny") == (common.TRIAL_DIR / named.name).resolve()
    assert common.output(parser, tmp_path / "new" / "x.json", named, "tiny") == tmp_path / "new" / "x.json"
    (tmp_path / "file").write_text("")
    for given, default in ((tmp_path, named), (tmp_path / "file", common.RESULTS), (tmp_path / "file" / "x", named)):
        with pytest.raises(SystemExit) as exc:
            common.output(parser, given, default, None)
        assert exc.value.code == 2, given
    monkeypatch.setattr(common, "TRIAL_DIR", tmp_path / "cache" / "shapley" / "benchmark-trials")
    (tmp_path / "cache" / "shapley").mkdir(parents=True)
    common.TRIAL_DIR.symlink_to(tmp_path)
    with pytest.raises(SystemExit) as exc:
        common.output(parser, None, common.RESULTS, "quick")
    assert exc.value.code == 2


@pytest.mark.parametrize("trial", ["quick", "subset", "tiny"])
def test_the_performance_page_refuses_a_trial_file(trial, tmp_path):
    from shapley.companion import costs

    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"trial": trial, "rows": [{"page": "book/experiments", "seconds": 14.0}]}))
    with pytest.raises(ValueError, match="measures nothing"):
        costs.load_benchmark(path)


def test_every_committed_benchmark_file_is_a_measurement_with_its_load_average():
    """Every committed file has today's layout: a measurement (``"trial": None``) with the load average before and
    after its run, which the page reads."""
    from shapley.companion import costs

    files = sorted((ROOT / "results").glob("bench_*.json"))
    assert len(files) >= 4
    for path in files:
        meta, _ = costs.load_benchmark(path)  # raises for a trial run's file
        assert costs.load_note(meta, path.name).split(":")[0] in ("**Busy machine", "Idle machine"), path


def test_the_page_flags_a_busy_machine():
    """Issue 32, section 2, item 4: the page calls a machine idle at a load average of at most IDLE_LOAD_AVERAGE;
    a measurement over it is flagged in bold."""
    from shapley.companion import costs

    idle = costs.IDLE_LOAD_AVERAGE
    busy = {"load_average_before": [idle + 0.5, 1, 1], "load_average_after": [1.0, 1, 1]}
    calm = {"load_average_before": [idle / 2, 0, 0], "load_average_after": [costs.BENCHMARK_OWN_LOAD, 0, 0]}
    late = {"load_average_before": [0.0, 0, 0], "load_average_after": [idle + costs.BENCHMARK_OWN_LOAD + 0.1, 0, 0]}
    assert costs.load_note(busy, "f.json").startswith("**Busy machine:**")
    assert costs.load_note(late, "f.json").startswith("**Busy machine:**")
    assert costs.load_note(calm, "f.json").startswith("Idle machine")


def test_the_generation_tables_fit_the_text_column():
    """Issue 32, section 3: the generation table was 11 columns (892 px against 740); it is two tables of at most
    six columns, every mode's row kept."""
    from shapley.companion import costs

    meta, rows = costs.load_benchmark(ROOT / "results" / "bench_generate_cpu.json")
    tables = costs.generation_frames(rows)
    assert all(len(t.columns) <= 6 for t in tables)
    assert len(tables[1]) == len(rows) and "shapley, prefix cache" in tables[1]["What ran"].tolist()


@pytest.mark.parametrize(
    "args",
    [
        ["bench_generate.py", "--samples", "100000"],
        ["bench_generate.py", "--max-new-tokens", "10000000"],
        ["bench_nli.py", "--samples", "100000"],
        ["bench_nli.py", "--device", "nope"],
        ["bench_gpu.py", "--new-tokens", "10000000"],
        ["bench_gpu.py", "--device", "nope"],
        ["bench_gpu.py", "--tiny", "--device", "cuda:99"],
        ["bench_notebooks.py", "--names", "notebooks/nope"],
    ],
    ids=lambda a: " ".join(a),
)
def test_every_count_and_device_is_checked_by_the_parser(args):
    """Held back from issue 38: a value past what a benchmark can run (or a page the book lacks) is refused by its
    parser (exit 2, one line, no traceback) before any work, not left to end in a memory error or a torch error."""
    proc = _run(f"benchmarks/{args[0]}", *args[1:], check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith(args[0].split(".")[0])


def test_bench_generate_tiny(tmp_path):
    out = tmp_path / "bench_generate_cpu.json"
    tiny = ["--tiny", "--questions", "2", "--repeats", "2", "--reference-repeats", "2", "--output", str(out)]
    proc = _run("benchmarks/bench_generate.py", *tiny)
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
