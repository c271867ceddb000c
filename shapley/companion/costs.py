"""Benchmark files and the paper-scale cost estimate of the reproduction chapter."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from shapley.companion import reported
from shapley.companion.htmltable import titled
from shapley.pipeline.generate.config import GenerationConfig

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~$:<>&-])")


def md_text(value: Any) -> str:
    r"""``value`` (text read from a benchmark file: a CPU or device name, a date, a key) as Markdown text that
    renders as itself: one line, every Markdown and MyST markup character backslash-escaped (``<`` and ``&``
    included, so that no HTML passes through).

    >>> md_text("**x** <script>")
    '\\*\\*x\\*\\* \\<script\\>'
    """
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(value).split()))


def md_code(value: Any) -> str:
    """``value`` (a command read from a file) as a Markdown inline code span that renders as itself: one line, the
    fence longer than any run of backticks in it (a code span's content is literal, HTML included).

    >>> md_code("a `b` <i>")
    '``a `b` <i>``'
    >>> md_code("`x")
    '`` `x ``'
    """
    text = " ".join(str(value).split())
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def load_benchmark(path: str | os.PathLike[str]) -> tuple[dict[str, Any], pd.DataFrame]:
    """Read a benchmark JSON written by ``benchmarks/*.py``: (metadata without rows, rows as a DataFrame).
    ``ValueError`` for a trial run's file (its ``"trial"`` mode: ``"tiny"``, ``"quick"`` or ``"subset"``; None for a
    measurement): it measures nothing a page may show."""
    meta = json.loads(Path(path).read_text())
    trial = meta["trial"]
    if trial is not None:
        raise ValueError(
            f"{path} was written by a {trial} run ({meta.get('command', 'command not recorded')}), which checks "
            "the script and measures nothing: rerun the benchmark without it (the committed file is in git)"
        )
    rows = meta.pop("rows", [])
    return meta, pd.DataFrame(rows)


IDLE_LOAD_AVERAGE = 0.5
"""What the performance page calls an idle machine: a 1-minute load average (processes running or waiting, all
cores together) of at most this from other work, before a benchmark starts and, less
:data:`BENCHMARK_OWN_LOAD`, when it ends."""

BENCHMARK_OWN_LOAD = 1.0
"""The load a benchmark adds itself while it runs: one process on one thread (the page's benchmarks pin one)."""


def load_averages(meta: Mapping[str, Any]) -> tuple[float, float]:
    """The 1-minute load averages a benchmark file recorded before and after its run."""
    return float(meta["load_average_before"][0]), float(meta["load_average_after"][0])


def busy_machine(meta: Mapping[str, Any]) -> bool:
    """Whether a benchmark ran on a machine busier than :data:`IDLE_LOAD_AVERAGE` (before, or after less
    :data:`BENCHMARK_OWN_LOAD`).

    >>> busy_machine({"load_average_before": [1.0, 1.0, 1.0], "load_average_after": [1.0, 1.0, 1.0]})
    True
    >>> busy_machine({"load_average_before": [0.2, 0.3, 0.3], "load_average_after": [1.1, 0.6, 0.4]})
    False
    """
    before, after = load_averages(meta)
    return before > IDLE_LOAD_AVERAGE or after - BENCHMARK_OWN_LOAD > IDLE_LOAD_AVERAGE


def busy_flag(meta: Mapping[str, Any]) -> str:
    """A Markdown sentence to append to a finding measured on a busy machine (:func:`busy_machine`), else ``""``.

    >>> busy_flag({"load_average_before": [9.5, 9.0, 8.0], "load_average_after": [9.0, 9.0, 8.0]})
    ' **Measured on a busy machine** (load average 9.50 before the run): see Provenance.'
    """
    if not busy_machine(meta):
        return ""
    return (
        f" **Measured on a busy machine** (load average {load_averages(meta)[0]:.2f} before the run): see Provenance."
    )


def load_note(meta: Mapping[str, Any], file: str) -> str:
    """One Markdown sentence on the machine's load while ``file`` was measured, flagged in bold when it was
    busier than the page's idle machine (:func:`busy_machine`)."""
    before, after = load_averages(meta)
    shown = f"{before:.2f} before the run and {after:.2f} after it ({md_code(file)})"
    idle = f"the page calls a machine idle at a load average of at most {IDLE_LOAD_AVERAGE:g}"
    if busy_machine(meta):
        return f"**Busy machine:** load average {shown}, while {idle}: its times may be longer than on idle cores."
    return f"Idle machine: load average {shown}; {idle}."


@dataclass(frozen=True)
class Gpu:
    """A GPU's published peaks and the share of them we assume a run reaches."""

    name: str
    bf16_tflops: float  # dense bf16 peak, TFLOP/s
    bandwidth_tbs: float  # memory bandwidth, TB/s
    compute_share: float = 0.4  # of the peak, when reading prompts
    bandwidth_share: float = 0.7  # of the peak, when decoding


A100 = Gpu("A100-80GB", 312.0, 2.039)
H100 = Gpu("H100-SXM", 989.0, 3.35)
GPU_SIZES_GB = (24.0, 40.0, 80.0)
"""Memory of the GPUs one would pick from (RTX 4090, A100-40GB, A100/H100-80GB)."""

#: Parameters (billions) of the paper's models, from their model cards.
MODEL_PARAMS_B: Mapping[str, float] = {
    "L-7B": 6.74,
    "F-7B": 7.22,
    "M-7B": 7.24,
    "L-8B": 8.03,
    "D-8B": 8.03,
    "G-7B": 8.54,
    "L-13B": 13.0,
    "Q-14B": 14.7,
}


_GENERATION_DEFAULTS: Mapping[str, Any] = {f.name: f.default for f in dataclasses.fields(GenerationConfig)}


@dataclass(frozen=True)
class Workload:
    """What one question costs in model passes, as the generator runs it (:mod:`shapley.pipeline.generate.generator`;
    sample count and length limits are :class:`~shapley.pipeline.generate.config.GenerationConfig`'s defaults): one
    prefill of the question's prompt, from which the greedy answer and the samples decode together; one forward pass
    of the p(True) prompt; one prefill of the ask-for-confidence (A4C) prompt and its short reply."""

    n_samples: int = _GENERATION_DEFAULTS["n_samples"]
    max_new_tokens: int = _GENERATION_DEFAULTS["max_new_tokens"]
    a4c_max_new_tokens: int = _GENERATION_DEFAULTS["a4c_max_new_tokens"]
    self_eval_tokens: int = 64  # question and instructions of a p(True) or A4C prompt, besides the answers it quotes
    memory_headroom: float = 1.2  # weights x this must fit: key-value cache and activations
    short_prompt_tokens: int = 200  # closed-book few-shot prompt
    long_prompt_tokens: int = 700  # few-shot prompt with a passage (CoQA, SQuAD)

    def prefill_tokens(self, prompt_tokens: int) -> int:
        """Prompt tokens read per question, at most: the question's prompt once (with the prefix cache only its
        suffix), the p(True) prompt (quoting the greedy answer and every sample) and the A4C prompt (quoting the
        greedy answer), each answer at its length limit."""
        p_true = self.self_eval_tokens + (1 + self.n_samples) * self.max_new_tokens
        a4c = self.self_eval_tokens + self.max_new_tokens
        return prompt_tokens + p_true + a4c

    @property
    def decode_steps(self) -> int:
        """Sequential decoding steps per question, at most, when its ``1 + n_samples`` rows fit one batch: the
        answers' length limit, then the A4C reply's."""
        return self.max_new_tokens + self.a4c_max_new_tokens


def seconds_per_question(params_b: float, prompt_tokens: int, gpu: Gpu, w: Workload = Workload()) -> float:
    """Estimated seconds per question: reading the prompts (compute-bound) plus decoding (bandwidth-bound).

    Reading costs ``2 * params * tokens`` FLOPs (:meth:`Workload.prefill_tokens`); each decoding step reads every
    weight (bf16, 2 bytes).
    """
    prefill = 2 * params_b * 1e9 * w.prefill_tokens(prompt_tokens) / (gpu.bf16_tflops * 1e12 * gpu.compute_share)
    decode = w.decode_steps * 2 * params_b * 1e9 / (gpu.bandwidth_tbs * 1e12 * gpu.bandwidth_share)
    return prefill + decode


def _seconds_range(params: Sequence[float], gpu: Gpu, w: Workload) -> tuple[float, float]:
    """Seconds per question on ``gpu``: the smallest of ``params`` on closed-book prompts, the largest on passages."""
    lo = min(seconds_per_question(p, w.short_prompt_tokens, gpu, w) for p in params)
    return lo, max(seconds_per_question(p, w.long_prompt_tokens, gpu, w) for p in params)


def cost_estimate(models: Sequence[Sequence[str]], questions: int, w: Workload = Workload()) -> pd.DataFrame:
    """Planning estimate per group of models: weights, the smallest GPU that holds them, seconds per
    question on an A100 and an H100 (short to long prompts) and hours for ``questions`` questions on an A100.

    Computed from :data:`MODEL_PARAMS_B`, :class:`Gpu` and :class:`Workload`; nothing here is measured.
    """
    rows = []
    for group in models:
        params = [MODEL_PARAMS_B[m] for m in group]
        gb = [2 * p for p in params]  # bf16: 2 bytes a weight
        a_lo, a_hi = _seconds_range(params, A100, w)
        h_lo, h_hi = _seconds_range(params, H100, w)
        rows.append(
            {
                "models": ", ".join(reported.MODELS[m] for m in group),
                "weights": f"{min(gb):.1f}–{max(gb):.1f}" if min(gb) != max(gb) else f"{gb[0]:.1f}",
                "gpu_gb": next(s for s in GPU_SIZES_GB if max(gb) * w.memory_headroom <= s),
                "a100_s": f"{a_lo:.1f}–{a_hi:.1f}",
                "h100_s": f"{h_lo:.1f}–{h_hi:.1f}",
                "a100_h": f"{a_lo * questions / 3600:.1f}–{a_hi * questions / 3600:.1f}",
            }
        )
    return pd.DataFrame(rows)


def cost_estimate_frame(models: Sequence[Sequence[str]], questions: int) -> pd.DataFrame:
    """:func:`cost_estimate` for readers."""
    frame = cost_estimate(models, questions).set_axis(
        [
            "Models (bf16)",
            "Weights (GB)",
            "Smallest GPU (GB)",
            "A100 (s per question)",
            "H100 (s per question)",
            f"A100 hours, {questions} questions",
        ],
        axis=1,
    )
    caption = (
        "Estimate, not measured: computed by `shapley.companion.costs.cost_estimate` from parameter "
        "counts, published GPU peaks and the assumed shares of them (ranges: closed-book to passage prompts)."
    )
    formats = dict(zip(frame.columns[1:], (".1f", ".0f", ".1f", ".1f", ".1f"), strict=True))
    return titled(frame, caption, formats=formats)


GENERATION_TARGET_VS_TRANSFORMERS = 12.0
"""Issue 19's target for the generation stage on SQuAD (CPU, one thread, prefix cache on): at least this many
times faster than transformers ``generate`` doing the same work, measured in the same benchmark run."""


def generation_finding(rows: pd.DataFrame, dataset: str = "squad") -> str:
    """One sentence on the prefix-cached generator against transformers ``generate`` on ``dataset``, from the
    benchmark file's rows: medians, their spread over the repeats, the one-off prefix prefill and the
    question count."""
    by_mode: dict[str, dict[Any, Any]] = {
        str(r["mode"]): r for r in rows[rows["dataset"] == dataset].to_dict("records")
    }
    if not {"shapley_prefix_cache", "transformers_generate"} <= set(by_mode):
        return f"Generation on a CPU: {md_text(dataset)} not measured."
    ours, ref = by_mode["shapley_prefix_cache"], by_mode["transformers_generate"]
    target = GENERATION_TARGET_VS_TRANSFORMERS
    ratio = ours["speedup_vs_transformers"]
    questions = f"{int(ours['questions'])} question{'' if int(ours['questions']) == 1 else 's'}"

    def runs(r: Mapping[str, Any]) -> str:
        n = int(r["repeats"])
        if n == 1:
            return "1 run"
        return f"median of {n} runs, {r['seconds_per_question_min']:.2f} to {r['seconds_per_question_max']:.2f}"

    return (
        f"Generation ({md_text(dataset)}, {questions}, CPU, one thread, each mode after an "
        f"untimed warm-up call) with the prefix cache: {ours['seconds_per_question']:.2f} s per question "
        f"({runs(ours)}), plus a one-off {ours['setup_seconds']:.1f} s per run to prefill the shared "
        f"few-shot prefix; transformers `generate` doing the same work: {ref['seconds_per_question']:.1f} s "
        f"per question ({runs(ref)}). That is {ratio:.1f} times faster (from "
        f"{ours['speedup_vs_transformers_min']:.1f} to {ours['speedup_vs_transformers_max']:.1f} "
        f"over the runs; {ours['speedup_with_setup']:.1f} times with the prefix prefill charged to the "
        f"{questions}), which {'meets' if ratio >= target else 'misses'} the target of "
        f"{target:.0f} times."
    )


GENERATION_MODES: Mapping[str, str] = {
    "shapley_prefix_cache": "shapley, prefix cache",
    "shapley_no_prefix_cache": "shapley, no prefix cache",
    "transformers_generate": "transformers generate",
}
"""The generation benchmark's modes, as the performance page names them."""


def generation_frames(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The generation benchmark (``results/bench_generate_cpu.json``, current version) as two narrow tables: the
    prompts of each dataset, then each mode's seconds per question (median, min–max over the runs) and speed-up."""
    prompts = rows.loc[
        rows["mode"] == "shapley_prefix_cache",
        ["dataset", "questions", "prompt_tokens_mean", "prefix_tokens", "setup_seconds"],
    ].set_axis(["Dataset", "Questions", "Prompt tokens", "Shared prefix", "Prefix prefill (s)"], axis=1)
    timed = pd.DataFrame(
        {
            "Dataset": rows["dataset"],
            "What ran": rows["mode"].map(GENERATION_MODES),
            "s per question": rows["seconds_per_question"],
            "min–max": [
                f"{lo:.2f}–{hi:.2f}"
                for lo, hi in zip(rows["seconds_per_question_min"], rows["seconds_per_question_max"], strict=True)
            ],
            "Runs": rows["repeats"],
            "Speed-up": rows["speedup_vs_transformers"],
        }
    )
    first = (
        "Measured: the prompts of the generation benchmark (`results/bench_generate_cpu.json`): "
        "mean tokens per prompt, the few-shot tokens every prompt shares, and the one-off seconds per run to "
        "prefill them with the prefix cache, which the per-question times below leave out."
    )
    second = (
        "Measured: seconds per question of the generation stage on a CPU, one thread (median over the runs, "
        "and its range), with and without the shared-prefix cache, against transformers `generate` "
        "doing the same work, each mode after one untimed warm-up call; speed-up over transformers."
    )
    counts = dict.fromkeys(prompts.columns[1:4], ".0f")
    return (
        titled(prompts, first, formats={**counts, "Prefix prefill (s)": ".2f"}),
        titled(timed, second, formats={"s per question": ".2f", "Runs": ".0f", "Speed-up": ".1f"}),
    )
