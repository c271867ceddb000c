"""The command line's parser: argument types that refuse wrong kinds with a message naming the argument,
the subcommands' arguments (each with help text), and the :class:`~shapley.pipeline.config.RunConfig` built from
them (:func:`config_from_args`). Only light modules are imported here, so that ``--help`` answers at once."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from shapley.pipeline.config import (
    DEFAULT_ENTAILMENT,
    DataSettings,
    EntailmentSettings,
    GenerationSettings,
    RunConfig,
    RuntimeSettings,
    ScoringSettings,
    parse_shard,
)
from shapley.pipeline.data.datasets import DATASETS
from shapley.pipeline.data.samples import REFERENCE_FIELDS

# Only light modules at import time, so that ``--help`` answers at once (issue 18): the pipeline's heavy parts
# (pandas, scipy, torch, transformers) are imported by the command that needs them.
from shapley.pipeline.score import scores as _score

PSD_POLICIES = ("nearest", "clip", "shrink", "raise")
"""The ``--psd-policy`` choices (those of :mod:`shapley.core.psd`)."""

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)


def _number(text: str) -> float:
    """A finite decimal number written with ASCII digits (``0.5``, ``1e-3``); not ``inf``, ``nan``, ``0.2_5``."""
    if not _NUMBER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a decimal number (ASCII digits, e.g. 0.5 or 1e-3)")
    v = float(text)
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is too large")
    return v


def _integer(text: str) -> int:
    """A whole number written with ASCII digits (not ``1.0``, ``1_000`` or other scripts' digits)."""
    if not _INTEGER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (ASCII digits)")
    return int(text)


def _entries(text: str) -> list[str]:
    """The comma-separated entries of a list argument; an empty entry is refused."""
    parts = [part.strip() for part in text.split(",")]
    if any(not part for part in parts):
        raise argparse.ArgumentTypeError(f"empty entry in {text!r} (a doubled comma, or one at the start or end)")
    return parts


def _distinct(values: Sequence[object], texts: Sequence[str]) -> None:
    seen: dict[object, str] = {}
    for v, t in zip(values, texts, strict=True):
        if v in seen:
            again = "" if seen[v] == t else f" (as {seen[v]!r} and {t!r})"
            raise argparse.ArgumentTypeError(f"{t!r} is given twice{again}; each entry must be distinct")
        seen[v] = t


def _methods(text: str) -> list[str]:
    names = _entries(text)
    _distinct(names, names)
    try:
        return list(_score.resolve_methods(names))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


N_BOOT_MAX = 2**16
"""Most bootstrap resamples an option may ask for: :data:`shapley.core.metrics.MAX_BOOT` (not imported here, to
keep ``--help`` light; a test pins the two equal)."""

SIZE_CAPS = {
    "n_samples": 1000,
    "limit": 10**7,
    "max_new_tokens": 8192,
    "batch_size": 65536,
    "top_k": 10**6,
    "n_shots": 100,
    "seed": 2**63 - 1,
}
"""The largest value of each size option (the parser refuses more, before anything runs): beyond these a run
would not finish on any machine (``n_samples``: the entailment pairs grow as n**2 per question) or the value
cannot be stored (``seed``: a 64-bit integer)."""


def _capped(v: int, cap: int, what: str) -> int:
    if v > cap:
        raise argparse.ArgumentTypeError(f"{what} must be at most {cap}; got {v}")
    return v


def _positive_int(text: str) -> int:
    v = _integer(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1; got {v}")
    return v


def _sized(name: str) -> Callable[[str], int]:
    """The type of a positive size option capped at ``SIZE_CAPS[name]``."""

    def check(text: str) -> int:
        return _capped(_positive_int(text), SIZE_CAPS[name], "the value")

    check.__name__ = name
    return check


def _count(name: str) -> Callable[[str], int]:
    """The type of a count option that may be 0, capped at ``SIZE_CAPS[name]``."""

    def check(text: str) -> int:
        v = _integer(text)
        if v < 0:
            raise argparse.ArgumentTypeError(f"must be >= 0; got {v}")
        return _capped(v, SIZE_CAPS[name], "the value")

    check.__name__ = name
    return check


def _seed(text: str) -> int:
    v = _integer(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"a seed must be >= 0; got {v}")
    return _capped(v, SIZE_CAPS["seed"], "a seed")


def _n_boot(text: str) -> int:
    v = _integer(text)
    if v < 2:
        raise argparse.ArgumentTypeError(f"an interval needs at least 2 bootstrap resamples; got {v}")
    return _capped(v, N_BOOT_MAX, "--n-boot (the most resamples an interval draws)")


def _n_boot_or_none(text: str) -> int:
    v = _integer(text)
    if v != 0 and v < 2:
        raise argparse.ArgumentTypeError(f"must be 0 (no intervals) or at least 2 resamples; got {v}")
    return _capped(v, N_BOOT_MAX, "--n-boot (the most resamples an interval draws)")


def _beta(text: str) -> float:
    v = _number(text)
    if not 0.0 < v <= 1.0:
        raise argparse.ArgumentTypeError(f"beta must be in (0, 1]; got {text}")
    return v


def _betas(text: str) -> tuple[float, ...]:
    parts = _entries(text)
    values = []
    for part in parts:
        try:
            values.append(_beta(part))
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"every beta must be a number in (0, 1]: {exc}") from None
    _distinct(values, parts)
    return tuple(values)


def _unit(text: str) -> float:
    v = _number(text)
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1]; got {text}")
    return v


INT_TYPES: frozenset[str] = frozenset({*SIZE_CAPS, "_n_boot", "_n_boot_or_none", "_seed"})
"""Names of the argument types that read a whole number; each has a cap (a test walks them)."""

LIST_TYPES: tuple[Callable[[str], object], ...] = (_methods, _betas)
"""Argument types that read a comma-separated list (each entry checked, empty or repeated entries refused)."""

_LIMIT_HELP = (
    "first K questions only. On an existing run the outputs (scores.csv, metrics.csv) then describe these K "
    "questions; a K below what the run already holds is noted and recorded in config.json (outputs)"
)
_BATCH_HELP = (
    "Entailment passes are fixed per question and device kind, so batch sizes never move an entailment probability; "
    "the sizes used are recorded per call"
)


def _add_scoring_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scoring")
    g.add_argument("--beta", type=_beta, default=0.5, help="kernel scale beta in (0, 1] (default 0.5, the paper's)")
    g.add_argument(
        "--psd-policy",
        choices=PSD_POLICIES,
        default=_score.DEFAULT_PSD_POLICY,
        help="what Shap does when R is not PSD (default nearest; each repair is recorded as shap_psd_repaired; "
        "'raise' skips Shap on such questions with the error as reason)",
    )
    g.add_argument(
        "--methods",
        type=_methods,
        default=None,
        help=f"comma-separated methods (default: all but Shap_sum). Known: {','.join(_score.METHODS)}",
    )
    g.add_argument(
        "--cluster-rule",
        choices=("bidirectional", "non_contradiction"),
        default=_score.CLUSTER_RULE,
        help="semantic clustering rule for SE/DSE/NumSet (default bidirectional entailment > 0.5)",
    )
    g.add_argument(
        "--se-aggregation",
        choices=_score.SE_AGGREGATIONS,
        default=_score.SE_AGGREGATION,
        help=f"SE sample log-likelihood: sum of token log-probs or their mean (length-normalised); default "
        f"{_score.SE_AGGREGATION}",
    )
    g.add_argument("--threshold", type=_unit, default=0.3, help="an answer is correct if its score > this (0.3)")
    g.add_argument("--n-boot", type=_n_boot, default=1000, help="bootstrap resamples for the AUROC CI, >= 2 (1000)")
    g.add_argument("--seed", type=_seed, default=0, help="seed of sampling, few-shot choice, ER split, bootstrap (0)")
    g.add_argument("--with-question", action="store_true", help="entailment compares 'question + answer' texts")
    g.add_argument("--device", default=None, help="torch device for the models (default: cuda if available)")
    g.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    _add_fanout_args(p)


def _shard(text: str) -> str:
    try:
        i, k = parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return f"{i}/{k}"


def _add_fanout_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("many processes (see 'merge')")
    g.add_argument(
        "--shard",
        type=_shard,
        default=None,
        metavar="I/K",
        help="only the questions (after --limit) of shard I of K (I = 0..K-1, split by a hash of the id); "
        "run each shard into its own --output, then 'python -m shapley merge' them",
    )
    g.add_argument(
        "--entail-cache",
        default=None,
        metavar="PATH",
        help="sqlite file of the entailment pair cache (default: the shared one under SHAPLEY_CACHE_DIR; "
        "'none': no cache). Give each concurrent process its own file: sqlite on a network file system is "
        "not safe for concurrent writers",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m shapley``."""
    parser = argparse.ArgumentParser(
        prog="python -m shapley",
        description="Shapley uncertainty for NLG (arXiv 2507.21406): experiments, scoring and reports.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run_parser(sub)
    _add_score_samples_parser(sub)
    _add_merge_parser(sub)
    _add_report_parsers(sub)
    return parser


def _add_run_parser(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser(
        "run",
        help="whole experiment: data -> generate -> entail -> score -> metrics (resumable)",
        description="Run the whole experiment into a run directory. Rerunning the same command resumes it: "
        "valid stored records are kept, torn or corrupt ones recomputed; a different result-affecting "
        "setting is refused.",
    )
    run.add_argument("--dataset", required=True, choices=DATASETS, help="dataset name")
    run.add_argument("--model", default="smollm2", help="LLM: 'smollm2' (packaged), a local path or a hub id")
    run.add_argument(
        "--entailment",
        default=DEFAULT_ENTAILMENT,
        help="entailment backend spec: hf:<id|path> (NLI), embedding:<name|path> (stand-in), llm:<spec> "
        f"(default {DEFAULT_ENTAILMENT})",
    )
    run.add_argument("--n-samples", type=_sized("n_samples"), default=10, help="sampled answers per question (10)")
    run.add_argument("--limit", type=_sized("limit"), default=None, help=_LIMIT_HELP)
    run.add_argument("--output", required=True, help="run directory (created, or resumed)")
    run.add_argument("--temperature", type=_number, default=1.0, help="sampling temperature (1.0; 0 = greedy)")
    run.add_argument("--top-p", type=_number, default=1.0, help="nucleus sampling p (1.0 = off)")
    run.add_argument("--top-k", type=_count("top_k"), default=0, help="top-k sampling (0 = off)")
    run.add_argument("--max-new-tokens", type=_sized("max_new_tokens"), default=32, help="answer length limit (32)")
    run.add_argument(
        "--batch-size",
        type=_sized("batch_size"),
        default=None,
        help="generation rows per decoding batch for a new run, like --rows-per-batch (default: 8, or a question's "
        "rows when more, on a CPU; from free memory on a GPU). " + _BATCH_HELP,
    )
    run.add_argument(
        "--rows-per-batch",
        type=_sized("batch_size"),
        default=None,
        help="generation rows per decoding batch, recorded in config.json; a resume and every shard reuse the "
        "recorded value (other sizes round differently, so a different value is refused on resume)",
    )
    run.add_argument(
        "--no-prefix-cache",
        action="store_true",
        help="prefill each whole prompt instead of reusing the dataset's shared few-shot block (recorded setting)",
    )
    run.add_argument("--dtype", default=None, help="model dtype, e.g. float32, bfloat16 (default: per device)")
    run.add_argument("--n-shots", type=_count("n_shots"), default=5, help="few-shot examples per prompt (5)")
    run.add_argument(
        "--chat-template",
        action="store_true",
        help="wrap the prompt in the tokenizer's chat template (default: the raw few-shot string, as in the paper)",
    )
    run.add_argument("--source", choices=("auto", "local", "online"), default="auto", help="data source (auto)")
    run.add_argument("--data-path", default=None, help="local dataset file (default: SHAPLEY_DATA_DIR/<file>)")
    run.add_argument(
        "--correctness-metric",
        choices=("rougeL", "bleu"),
        default=None,
        help="default: bleu for wmt14, rougeL otherwise",
    )
    run.add_argument("--no-p-true", action="store_true", help="skip the p(True) prompt (P(T) is then skipped)")
    run.add_argument("--no-a4c", action="store_true", help="skip the ask-for-confidence prompt (A4C is then skipped)")
    _add_scoring_args(run)


def _add_score_samples_parser(sub: argparse._SubParsersAction) -> None:
    ss = sub.add_parser(
        "score-samples",
        help="score answers generated elsewhere (JSON lines, .jsonl or .jsonl.gz)",
        description='Score sampled answers from a JSON-lines file. Each line: {"id", "question", '
        '"references": [...], "samples": [...], "answer"? (judged answer; default samples[0]), '
        '"sample_logprobs"?: [[...], ...], "answer_token_logprobs"?, "answer_token_entropies"?, '
        '"p_true"?, "a4c_text"?, "embedding"?}. UQ-NLG layout (e.g. triviaqa_llama13b_samples.jsonl.gz): '
        "'samples_cleaned' is preferred over 'samples', and --reference-field answer reads the references "
        "from 'answer'. A field that looks like a misspelt known one is refused; other unknown fields are "
        "ignored with a note. The whole input is validated before the output directory is created. Methods "
        "whose inputs are absent (e.g. log-probabilities) are skipped with a note.",
    )
    ss.add_argument("input", metavar="FILE.jsonl", help="input file (.jsonl or .jsonl.gz)")
    ss.add_argument("--entailment", default=DEFAULT_ENTAILMENT, help=f"entailment backend spec ({DEFAULT_ENTAILMENT})")
    ss.add_argument("--output", required=True, help="run directory (created, or resumed)")
    ss.add_argument("--n-samples", type=_sized("n_samples"), default=None, help="use the first N samples of each line")
    ss.add_argument("--limit", type=_sized("limit"), default=None, help=_LIMIT_HELP)
    ss.add_argument(
        "--batch-size",
        type=_sized("batch_size"),
        default=None,
        help="kept for older scripts: entailment pairs per forward pass are fixed per question and device kind "
        "(at most 32 on a CPU). " + _BATCH_HELP,
    )
    ss.add_argument(
        "--reference-field",
        choices=REFERENCE_FIELDS,
        default="references",
        help="the field holding the reference answers: 'references' (default; 'answer' is then the judged "
        "answer) or 'answer' (the UQ-NLG layout, e.g. triviaqa_llama13b_samples.jsonl.gz; the judged answer "
        "is then the first sample)",
    )
    ss.add_argument(
        "--correctness-metric", choices=("rougeL", "bleu"), default="rougeL", help="rougeL (default) or bleu"
    )
    ss.add_argument("--dataset-label", default=None, help="dataset name in metrics.csv (default: file name stem)")
    ss.add_argument("--model-label", default="external", help="model name in metrics.csv (default 'external')")
    _add_scoring_args(ss)


def _add_merge_parser(sub: argparse._SubParsersAction) -> None:
    mg = sub.add_parser(
        "merge",
        help="join the K shard directories of a run made with --shard I/K",
        description="Merge the run directories of shards 0/K .. K-1/K into one run directory that equals the "
        "unsharded run: stage files in the unsharded order, then scores.csv, metrics.csv, skipped.csv, "
        "selection.csv recomputed on the union (bootstrap intervals, the ER fit). Refused, before anything is "
        "written, for shards of different settings, a missing, repeated or unfinished shard, or overlapping "
        "questions. DIR may be new, empty, or an earlier merge output (rewritten).",
    )
    mg.add_argument("shard_dirs", nargs="+", metavar="SHARD_DIR", help="the run directories of all K shards")
    mg.add_argument("--output", required=True, metavar="DIR", help="the merged run directory")


def _add_report_parsers(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser("report", help="AUROC tables across run directories", description="Tables across runs.")
    rp.add_argument("run_dirs", nargs="+", metavar="DIR", help="run directories (with metrics.csv)")
    rp.add_argument("--output", default=None, help="write markdown here (and the tidy CSV next to it, .csv)")

    bs = sub.add_parser(
        "beta-sweep",
        help="Table 5: AUROC of Shap for several beta from a run's stored entailment",
        description="Recompute Shap for each beta from DIR's stored entailment matrices and report AUROC, and how "
        "many questions have a non-PSD R at each beta.",
    )
    bs.add_argument(
        "run_dir",
        metavar="DIR",
        help="a run directory with its entailment and score records: entailment.jsonl and scores.jsonl, or the "
        "compact stages.jsonl.gz that stands in for them (as in the committed runs)",
    )
    bs.add_argument(
        "--betas",
        type=_betas,
        default=None,
        help="comma-separated, distinct betas in (0, 1] (default: the paper's two grids, 0.1..1.0 and 0.42..0.58)",
    )
    bs.add_argument(
        "--psd-policy",
        choices=PSD_POLICIES,
        default=None,
        help="what Shap does when R is not PSD at a beta (default: the run's own --psd-policy, from config.json)",
    )
    bs.add_argument(
        "--n-boot", type=_n_boot_or_none, default=0, help="bootstrap resamples for CIs: 0 (none, default) or >= 2"
    )
    bs.add_argument(
        "--output",
        default=None,
        help="CSV for the summary (default: DIR/beta_sweep.csv); the per-question table goes next to it "
        "(<name>_per_question.csv)",
    )


def _scoring(a: argparse.Namespace) -> ScoringSettings:
    return ScoringSettings(
        methods=tuple(a.methods) if a.methods is not None else _score.DEFAULT_METHODS,
        beta=a.beta,
        psd_policy=a.psd_policy,
        cluster_rule=a.cluster_rule,
        se_aggregation=a.se_aggregation,
        correctness_metric=a.correctness_metric,
        threshold=a.threshold,
        n_boot=a.n_boot,
    )


def config_from_args(a: argparse.Namespace) -> RunConfig:
    """The one :class:`RunConfig` of a ``run`` or ``score-samples`` command line."""
    runtime = RuntimeSettings(
        batch_size=a.batch_size, device=a.device, progress=not a.no_progress, entail_cache=a.entail_cache
    )
    entailment = EntailmentSettings(backend=a.entailment, with_question=a.with_question)
    if a.command == "score-samples":
        data = DataSettings(
            dataset=a.dataset_label or Path(a.input).name.split(".")[0],
            source="file",
            path=a.input,
            limit=a.limit,
            n_samples=a.n_samples,
            model_label=a.model_label,
            reference_field=a.reference_field,
            shard=a.shard,
        )
        return RunConfig("score-samples", data, None, entailment, _scoring(a), runtime, a.seed)
    data = DataSettings(
        dataset=a.dataset, source=a.source, path=a.data_path, n_shots=a.n_shots, limit=a.limit, shard=a.shard
    )
    generation = GenerationSettings(
        model=a.model,
        n_samples=a.n_samples,
        temperature=a.temperature,
        top_p=a.top_p,
        top_k=a.top_k,
        max_new_tokens=a.max_new_tokens,
        chat_template=a.chat_template,
        p_true=not a.no_p_true,
        a4c=not a.no_a4c,
        dtype=a.dtype,
        rows_per_batch=a.rows_per_batch,
        prefix_cache=not a.no_prefix_cache,
    )
    return RunConfig("run", data, generation, entailment, _scoring(a), runtime, a.seed)
