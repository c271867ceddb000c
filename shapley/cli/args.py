"""The command line's parser.

The options of ``run`` and ``score-samples`` that set a run setting are derived from the setting's one declaration
(:mod:`shapley.pipeline.config`: flag, type, bounds or choices, default and help; :func:`add_settings`), and
:func:`config_from_args` builds the :class:`~shapley.pipeline.config.RunConfig` from them. This module states only
what is not a run setting: where a command's questions come from (``--dataset``, ``--source``, ``--data-path``,
the input file, ``--dataset-label``), ``--output``, and the other subcommands' arguments. Numbers are read in
ASCII decimal notation only (:func:`read_number`). Only light modules are imported here, so that ``--help``
answers at once; the pipeline's heavy parts are imported by the command that needs them.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shapley.pipeline.config import (
    DATA_SOURCES,
    DEFAULT_ENTAILMENT,
    GROUPS,
    DataSettings,
    RunConfig,
    ScoringSettings,
    Setting,
    field_kinds,
    settings_of,
)
from shapley.pipeline.data.datasets import DATASETS
from shapley.pipeline.score.scores import METHODS

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)


def read_number(text: str, kind: type) -> int | float:
    """``text`` as an ``int`` or ``float`` written in ASCII decimal notation (``0.5``, ``1e-3``, ``12``): not
    ``inf``, ``nan``, ``1_000``, ``0x10`` or other scripts' digits, which Python's ``float()`` and ``int()``
    accept; ``ValueError`` otherwise."""
    if kind is int:
        if not _INTEGER.fullmatch(text):
            raise ValueError(f"{text!r} is not a whole number (ASCII digits)")
        return int(text)
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"{text!r} is not a decimal number (ASCII digits, e.g. 0.5 or 1e-3)")
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"{text!r} is too large")
    return v


def option_reader(cls: type, name: str) -> Callable[[str], Any] | None:
    """The argparse ``type`` of setting ``name`` of the settings class ``cls``: the option's text read as the
    field's type and checked by its declaration (``None`` for a plain text: the settings check it when built)."""
    s: Setting = settings_of(cls)[name]
    kind, optional = field_kinds(cls)[name]
    if s.read is None and s.convert is None and kind not in (int, float):
        return None

    def read(text: str) -> Any:
        try:
            value = s.read(text) if s.read is not None else text if kind is str else read_number(text, kind)
            problem = s.problem(value, kind, optional)
            if problem is not None:
                raise ValueError(f"{problem}; got {text}")
            return s.convert(value) if s.convert is not None else value
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    read.__name__ = name  # argparse names the type in its messages
    return read


def _help(s: Setting, default: Any) -> str:
    shown = isinstance(default, int | float | str)  # a boolean setting is a flag, without a default shown
    return f"{s.help} (default {default})" if shown else s.help


def add_settings(parser: argparse.ArgumentParser, command: str) -> None:
    """One option for every run setting that ``command`` takes, in its group, as its declaration says; each
    option's ``dest`` is the setting's dotted key (``"scoring.beta"``)."""
    for prefix, cls in (("", RunConfig), *((f"{name}.", kind) for name, kind in GROUPS.items())):
        group = parser.add_argument_group(prefix.rstrip(".") or "run")
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        for name, s in settings_of(cls).items():
            if command not in s.commands:
                continue
            key = prefix + name
            if field_kinds(cls)[name][0] is bool:
                action = "store_false" if s.flag.startswith("--no-") else "store_true"
                group.add_argument(s.flag, dest=key, action=action, help=s.help)
                continue
            reader = option_reader(cls, name)
            group.add_argument(
                s.flag,
                dest=key,
                metavar=None if s.choices else name.upper(),
                type=str if reader is None else reader,
                choices=s.choices,
                default=defaults[name],
                help=_help(s, defaults[name]),
            )


def config_from_args(a: argparse.Namespace) -> RunConfig:
    """The one :class:`RunConfig` of a ``run`` or ``score-samples`` command line, built from its options' dotted
    keys (``"scoring.beta"``); a setting not given takes its default."""
    values = {k: v for k, v in vars(a).items() if "." in k}
    if a.command == "score-samples":
        values.update({"data.source": "file", "data.path": a.input})
        values["data.dataset"] = a.dataset_label or Path(a.input).name.split(".")[0]
    groups = {
        name: kind(**{k.partition(".")[2]: v for k, v in values.items() if k.partition(".")[0] == name})
        for name, kind in GROUPS.items()
        if name != "generation" or a.command == "run"
    }
    return RunConfig(command=a.command, seed=a.seed, **groups)


class ParagraphsFormatter(argparse.HelpFormatter):
    """argparse's formatter, but a description or epilog keeps its paragraphs (separated by blank lines), and a
    paragraph that starts indented (a list) as it is written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        fill = super()._fill_text
        return "\n\n".join(p if p.startswith(" ") else fill(p, width, indent) for p in text.split("\n\n"))


def scoring_epilog() -> str:
    """The methods ``--methods`` names, each with what it is, and what the default entailment backend needs. Each
    method is a name line and its indented description, which reStructuredText reads as a definition list (the
    command-line reference renders the epilog as such)."""
    methods = "\n".join(
        f"  {name}\n" + textwrap.fill(spec.description, 79, initial_indent=" " * 6, subsequent_indent=" " * 6)
        for name, spec in METHODS.items()
    )
    return (
        f"The methods (each an uncertainty: higher = more uncertain):\n\n{methods}\n\nThe default --entailment "
        f"{DEFAULT_ENTAILMENT} is downloaded from the Hugging Face hub on first use, which needs the internet; "
        "without it, pass a packaged stand-in: --entailment embedding:minilm or llm:smollm2 (neither is an NLI model)."
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m shapley``."""
    parser = argparse.ArgumentParser(
        prog="python -m shapley",
        description="Shapley uncertainty for NLG (arXiv 2507.21406): experiments, scoring and reports.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="whole experiment: data -> generate -> entail -> score -> metrics (resumable)",
        description="Run the whole experiment into a run directory. Rerunning the same command resumes it: "
        "valid stored records are kept, torn or corrupt ones recomputed; a different result-affecting "
        "setting is refused.",
        epilog=scoring_epilog(),
        formatter_class=ParagraphsFormatter,
    )
    run.add_argument("--dataset", dest="data.dataset", required=True, choices=DATASETS, help="dataset name")
    source = next(f.default for f in dataclasses.fields(DataSettings) if f.name == "source")
    run.add_argument(
        "--source", dest="data.source", choices=DATA_SOURCES, default=source, help=f"data source (default {source})"
    )
    run.add_argument("--data-path", dest="data.path", help="local dataset file (default: SHAPLEY_DATA_DIR/<file>)")
    run.add_argument("--output", required=True, help="run directory (created, or resumed)")
    add_settings(run, "run")
    _add_score_samples_parser(sub)
    _add_merge_parser(sub)
    _add_report_parsers(sub)
    return parser


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
        epilog=scoring_epilog(),
        formatter_class=ParagraphsFormatter,
    )
    ss.add_argument("input", metavar="FILE.jsonl", help="input file (.jsonl or .jsonl.gz)")
    ss.add_argument("--dataset-label", default=None, help="dataset name in metrics.csv (default: file name stem)")
    ss.add_argument("--output", required=True, help="run directory (created, or resumed)")
    add_settings(ss, "score-samples")


def _add_merge_parser(sub: argparse._SubParsersAction) -> None:
    mg = sub.add_parser(
        "merge",
        help="join the K shard directories of a run made with --shard I/K",
        description="Merge the run directories of shards 0/K .. K-1/K into one run directory that equals the "
        "unsharded run: stage files in the unsharded order, then scores.csv, metrics.csv, skipped.csv, "
        "comparisons.csv recomputed on the union (bootstrap intervals, the ER fit). Refused, before anything is "
        "written, for shards of different settings, a missing, repeated or unfinished shard, or overlapping "
        "questions. DIR may be new, empty, or an earlier merge output (rewritten).",
    )
    mg.add_argument("shard_dirs", nargs="+", metavar="SHARD_DIR", help="the run directories of all K shards")
    mg.add_argument("--output", required=True, metavar="DIR", help="the merged run directory")


SWEEP_NO_BOOT = 0
"""``beta-sweep --n-boot``'s default: no bootstrap intervals."""


def read_sweep_boot(text: str) -> int:
    """``beta-sweep --n-boot``: :data:`SWEEP_NO_BOOT` (no intervals), or resamples as ``--n-boot`` allows them."""
    read_boot = option_reader(ScoringSettings, "n_boot")
    assert read_boot is not None
    return SWEEP_NO_BOOT if text.strip() == str(SWEEP_NO_BOOT) else int(read_boot(text))


def _add_report_parsers(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser("report", help="AUROC tables across run directories", description="Tables across runs.")
    rp.add_argument("run_dirs", nargs="+", metavar="DIR", help="run directories (with metrics.csv)")
    rp.add_argument("--output", default=None, help="write markdown here (and the tidy CSV next to it, .csv)")

    bs = sub.add_parser(
        "beta-sweep",
        help="Table 5: AUROC of Shap for several beta from a run's stored entailment",
        description="Recompute Shap for each beta of the paper's Table 5 grid from DIR's stored entailment matrices "
        "and report AUROC, and how many questions have a non-PSD R at each beta (under the run's own --psd-policy), "
        "into DIR/beta_sweep.csv and, per question, DIR/beta_sweep_per_question.csv.",
    )
    bs.add_argument(
        "run_dir",
        metavar="DIR",
        help="a run directory with its entailment and score records: entailment.jsonl and scores.jsonl, or the "
        "compact stages.jsonl.gz that stands in for them (as in the committed runs)",
    )
    boot_bounds = settings_of(ScoringSettings)["n_boot"]
    bs.add_argument(
        "--n-boot",
        type=read_sweep_boot,
        default=SWEEP_NO_BOOT,
        help=f"bootstrap resamples for CIs: {SWEEP_NO_BOOT} (none, default) or {boot_bounds.bounds_text()}",
    )
