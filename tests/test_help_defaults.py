"""Every default that ``--help`` or the book's prose states is the declared one (issue 37, item 8).

``run --help`` once said SE's sample log-likelihood is "sum (default)" while ``--se-aggregation`` defaults to mean.
The help texts now derive each default they state from its declaration (:mod:`shapley.pipeline.config`,
:mod:`shapley.cli.args`); these tests read the built parsers and the prose and compare each stated default with the
declaration, and show that editing a declaration changes the help.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import pytest

from shapley.cli.args import build_parser
from shapley.companion import reported
from shapley.pipeline.config import (
    CPU_BATCH_ROWS,
    DEFAULT_ENTAILMENT,
    GROUPS,
    RunConfig,
    ScoringSettings,
    settings_of,
)
from shapley.pipeline.score.correctness import CORRECTNESS_FOR
from shapley.pipeline.score.scores import DEFAULT_METHODS, METHODS

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ("run", "score-samples", "beta-sweep", "merge", "report")
_EXPLICIT = re.compile(r"\(default:? ([^()]+?)\)")
_MARKED = re.compile(r"([\w.-]+) \((?:[^()]*, )?default\)")


def _subparsers(parser: argparse.ArgumentParser | None = None) -> dict[str, argparse.ArgumentParser]:
    parser = parser or build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: action.choices[name] for name in COMMANDS}


def _options(sub: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in sub._actions if a.option_strings and a.help and a.dest != "help"]


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("command", COMMANDS)
def test_a_default_in_an_options_help_is_that_options_default(command):
    """``(default X)`` in an option's help is the option's default, and ``X (default)`` too."""
    checked = 0
    for action in _options(_subparsers()[command]):
        text = _flat(action.help)
        for m in _EXPLICIT.finditer(text):
            if m.group(0).startswith("(default:"):
                continue  # a default in words, checked one by one below
            assert m.group(1) == str(action.default), (action.option_strings, text)
            checked += 1
        for m in _MARKED.finditer(text):
            assert m.group(1) == str(action.default), (action.option_strings, text)
            checked += 1
    assert checked or command in ("merge", "report")


@pytest.mark.parametrize("command", ("run", "score-samples"))
def test_a_default_named_in_the_epilog_is_an_options_default(command):
    """``W (default)`` in the methods' list (the epilog) names the default of an option that offers W."""
    sub = _subparsers()[command]
    for text in (sub.description or "", sub.epilog or ""):
        for m in _MARKED.finditer(_flat(text)):
            offering = [a for a in _options(sub) if a.choices and m.group(1) in a.choices]
            assert offering, f"{m.group(0)!r}: no option offers {m.group(1)!r}"
            assert any(a.default == m.group(1) for a in offering), (m.group(0), [a.default for a in offering])


def test_the_se_aggregation_default_is_stated_once_and_right():
    help_text = _flat(_subparsers()["run"].format_help())
    default = ScoringSettings().se_aggregation
    assert "sum (default)" not in help_text and f"{default} (default)" not in help_text
    assert re.search(r"--se-aggregation \{sum,mean\} .*?\(default (\w+)\)", help_text).group(1) == default


def test_defaults_in_words_follow_their_declarations():
    sub = _subparsers()
    helps = {o: _flat(a.help) for a in _options(sub["run"]) for o in a.option_strings}
    helps |= {f"sweep {o}": _flat(a.help) for a in _options(sub["beta-sweep"]) for o in a.option_strings}
    helps |= {f"samples {o}": _flat(a.help) for a in _options(sub["score-samples"]) for o in a.option_strings}
    # --methods: all of them
    assert DEFAULT_METHODS == tuple(METHODS) and "(default: all)" in helps["--methods"]
    # --correctness-metric: each dataset named gets its own metric, the rest the common one
    said = re.search(r"\(default: (.*)\)", helps["--correctness-metric"]).group(1)
    common = re.search(r"(\w+) otherwise$", said).group(1)
    named = {
        d: m for m, ds in re.findall(r"(\w+) for run's ([\w, ]+?)(?:;|,\s*\w+ otherwise)", said) for d in ds.split(", ")
    }
    assert {d: named.get(d, common) for d in CORRECTNESS_FOR} == CORRECTNESS_FOR, said
    # --batch-size: the CPU rows per batch, as the decoder uses them
    assert f"(default: {CPU_BATCH_ROWS}," in helps["--batch-size"]
    from shapley.pipeline.generate import decode

    assert decode.CPU_BATCH_ROWS == CPU_BATCH_ROWS
    # beta-sweep --n-boot: its bounds are those of --n-boot
    assert settings_of(ScoringSettings)["n_boot"].bounds_text() in helps["sweep --n-boot"]
    # score-samples --model-label: the label a run without one records
    label = re.search(r"\(default: '([^']+)'\)", helps["samples --model-label"]).group(1)
    cfg = RunConfig(command="score-samples", data=GROUPS["data"](dataset="x", source="file", path="x.jsonl"))
    assert cfg.model == label
    # the epilog's default entailment backend
    assert f"The default --entailment {DEFAULT_ENTAILMENT} " in _flat(sub["run"].epilog)


def test_the_paper_defaults_the_help_claims():
    """``--beta``'s help says it is the paper's default; the paper's threshold is the declared one too."""
    assert "the paper's default" in settings_of(ScoringSettings)["beta"].help
    assert ScoringSettings().beta == reported.HYPERPARAMETERS["beta"]
    assert ScoringSettings().threshold == reported.HYPERPARAMETERS["rougeL_threshold"]


def test_editing_a_declaration_changes_the_help(monkeypatch):
    """The parser reads each default from its dataclass field: another declared default shows up in ``--help``."""
    field = next(f for f in dataclasses.fields(ScoringSettings) if f.name == "se_aggregation")
    other = next(c for c in settings_of(ScoringSettings)["se_aggregation"].choices if c != field.default)
    monkeypatch.setattr(field, "default", other)
    text = _flat(_subparsers(build_parser())["run"].format_help())
    assert re.search(r"--se-aggregation \{sum,mean\} .*?\(default (\w+)\)", text).group(1) == other


# ---------------------------------------------------------------------------------------------------
# Prose: a sentence that states the default of a flag states the declared one (or glues it)


def _prose(path: Path) -> str:
    """The markdown of ``path`` outside code cells and fenced blocks."""
    return re.sub(r"^(```|~~~).*?^\1\s*$", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)


def _scalar_defaults() -> dict[str, str]:
    out = {}
    for cls in (RunConfig, *GROUPS.values()):
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        for name, s in settings_of(cls).items():
            value = defaults[name]
            if s.flag.startswith("--") and isinstance(value, int | float | str) and not isinstance(value, bool):
                out[s.flag] = str(value)
    return out


PROSE = sorted([REPO / "README.md", *(REPO / "book").glob("*.md"), *(REPO / "notebooks").glob("*.md")])


def prose_default_problems(text: str, defaults: dict[str, str]) -> list[str]:
    problems = []
    for sentence in re.split(r"(?<=[.;:])\s+", " ".join(text.split())):
        if "default" not in sentence.lower() or "{glue" in sentence:
            continue
        for flag, value in defaults.items():
            if re.search(rf"{re.escape(flag)}(?![\w-])", sentence) and value not in sentence:
                problems.append(f"{flag} (declared {value}): {sentence}")
        for spec in re.findall(r"\bhf:[\w./-]+", sentence):
            if "entailment" in sentence and spec.rstrip(".") != DEFAULT_ENTAILMENT:
                problems.append(f"--entailment (declared {DEFAULT_ENTAILMENT}): {sentence}")
    return problems


def test_prose_states_declared_defaults():
    defaults = _scalar_defaults()
    problems = [f"{p.relative_to(REPO)}: {q}" for p in PROSE for q in prose_default_problems(_prose(p), defaults)]
    assert not problems, "\n".join(problems)


def test_the_prose_check_can_fail():
    defaults = {"--se-aggregation": "mean", "--beta": "0.5"}
    assert prose_default_problems("By default `--se-aggregation` sums the log-probs.", defaults)
    assert not prose_default_problems("By default `--se-aggregation` is mean.", defaults)
    assert not prose_default_problems("By default `--beta` is {glue:text}`beta`.", defaults)
    assert prose_default_problems("The default entailment is hf:roberta-large-mnli.", defaults)
