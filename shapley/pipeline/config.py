"""A run's settings, each declared once: :class:`RunConfig`, built once (by the CLI or a notebook) and passed whole.

A run is described by groups of settings, each a frozen dataclass:

* :class:`DataSettings`: which questions (dataset, file and its fingerprint, few-shot count, limit, shard);
* :class:`GenerationSettings`: the LLM and its sampling (``run`` only; ``None`` for ``score-samples``);
* :class:`EntailmentSettings`: the entailment backend;
* :class:`ScoringSettings`: the uncertainty methods, correctness judging and the metrics' bootstrap;
* :class:`RuntimeSettings`: batch size, device, progress bars and the pair cache, which never change a stored number.

**One declaration per setting.** Each setting is a field made by :func:`setting`: its type (the annotation), its
default, its bounds or choices, its command-line flag and help text, the subcommands that take it, and whether it
changes a stored number (``result``; a resumed run must keep those). Everything else is derived from it: the
command line's options, defaults and ``--help`` (:mod:`shapley.cli.args`), the validation (:class:`Settings`,
when a group is built: a bad value raises ``ValueError`` naming the flag), the keys of ``config.json``, the flag
named in a refused resume (:func:`flag_of`), and what a resume compares (:meth:`RunConfig.result_settings`).
Internal code trusts a built configuration and never validates it again.

``config.json`` of a run directory stores ``RunConfig.to_dict()`` under ``"config"`` with ``"schema": 4``
(:data:`CONFIG_SCHEMA`). No other schema is read: an older or edited file is refused, naming it, with the advice
to re-run (:meth:`RunConfig.from_stored`). A new setting that changes stored numbers needs a new schema number.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import types
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from shapley.core.baselines.entropies import CLUSTER_THRESHOLD
from shapley.core.metrics import MAX_BOOT
from shapley.core.psd import PSD_POLICIES
from shapley.pipeline.score.correctness import CORRECTNESS_FOR, METRICS
from shapley.pipeline.score.scores import (
    DEFAULT_METHODS,
    SE_AGGREGATION_DEFAULT,
    SE_AGGREGATIONS,
    resolve_methods,
)

CONFIG_SCHEMA = 4
"""Version of the layout of ``config.json``; the only one read."""

COMMANDS = ("run", "score-samples")
RUN: tuple[str, ...] = ("run",)
SAMPLES: tuple[str, ...] = ("score-samples",)
DATA_SOURCES = ("auto", "local", "online")
"""Where ``run`` reads a dataset (``--source``); a ``score-samples`` run's source is ``"file"``."""
CLUSTER_RULES = ("bidirectional", "non_contradiction")
REFERENCE_FIELDS: tuple[str, ...] = ("references", "answer")
"""Where a score-samples line's reference answers are read from (``--reference-field``): ``references`` (a list of
strings; ``answer``, when present, is the judged answer) or ``answer`` (the UQ-NLG layout of
``triviaqa_llama13b_samples.jsonl.gz``: a string or a list of strings; the judged answer is ``samples[0]``)."""
DEFAULT_ENTAILMENT = "hf:microsoft/deberta-large-mnli"
"""The entailment backend of a run unless ``--entailment`` says otherwise: DeBERTa-large fine-tuned on MNLI (the paper
cites DeBERTa without naming a checkpoint). ``"hf"`` alone means its model."""
NO_CACHE = "none"
"""``--entail-cache none`` (in any case): no entailment pair cache."""
LARGEST_SEED = 2**63 - 1
"""The largest seed ``config.json`` can store and numpy can take (a signed 64-bit integer)."""
EXTERNAL_MODEL = "external"
"""The model name of a ``score-samples`` run whose ``--model-label`` is not given."""
CPU_BATCH_ROWS = 8
"""Generation rows per decoding batch of a new run on a CPU (more when a question has more rows); read by
:mod:`shapley.pipeline.generate.decode`, declared here so that ``--help`` states it from this one site."""
BETA_SWEEP_ROUNDS: tuple[tuple[float, ...], ...] = (
    tuple(k / 10 for k in range(1, 11)),
    tuple(k / 100 for k in range(42, 60, 2)),
)
"""The two rounds of the paper's Table 5: a coarse one (0.1 to 1.0 by 0.1) and a fine one around 0.5 (0.42 to 0.58
by 0.02)."""
BETA_SWEEP_GRID: tuple[float, ...] = tuple(sorted(set().union(*BETA_SWEEP_ROUNDS)))
"""Both rounds of Table 5, the default grid of ``beta-sweep``
(:data:`shapley.pipeline.evaluate.metrics.TABLE5_BETAS`)."""


def _default_correctness() -> str:
    """``--correctness-metric``'s default in words, from :data:`CORRECTNESS_FOR`: the metric of most datasets, and
    each other dataset's own."""
    common = Counter(CORRECTNESS_FOR.values()).most_common(1)[0][0]
    rare = "; ".join(f"{m} for run's {d}" for d, m in CORRECTNESS_FOR.items() if m != common)
    return f"{rare}, {common} otherwise" if rare else common


@dataclass(frozen=True)
class Setting:
    """How one setting is set and checked: the metadata of its dataclass field (made by :func:`setting`).

    ``low``/``high`` bound a number (``low`` excluded when ``open_low``); ``choices`` list a text's values;
    ``convert`` checks and normalises a value past those checks (e.g. method names to a tuple) and raises
    ``ValueError``; ``read`` turns an option's text into a value where the type alone does not say how (a
    comma-separated list). ``commands`` are the subcommands with a generated option (empty: the command line sets
    it otherwise, see :mod:`shapley.cli.args`, and ``flag`` only names it in messages).
    """

    help: str
    flag: str
    commands: tuple[str, ...]
    result: bool
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    choices: tuple[str, ...] | None = None
    convert: Callable[[Any], Any] | None = None
    read: Callable[[str], Any] | None = None

    def bounds_text(self) -> str:
        """The allowed range in words (``"in (0, 1]"``, ``">= 1"``, ``"in [1, 1000]"``)."""
        if self.high is None:
            return f"{'>' if self.open_low else '>='} {self.low:g}"
        return f"in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"

    def problem(self, value: Any, kind: type, optional: bool) -> str | None:
        """What is wrong with ``value`` for a field of type ``kind`` (``None`` allowed when ``optional``), or None."""
        if value is None:
            return None if optional else "must be given"
        if kind is bool:
            return None if isinstance(value, bool) else "must be true or false"
        if kind is tuple:
            return None if isinstance(value, tuple | list) else "must be a list"
        if kind in (int, float):
            whole = isinstance(value, int) and not isinstance(value, bool)
            if not (whole or (kind is float and isinstance(value, float))):
                return "must be an integer" if kind is int else "must be a number"
            if kind is float and not math.isfinite(value):
                return "must be a finite number"
            too_low = self.low is not None and (value <= self.low if self.open_low else value < self.low)
            if too_low or (self.high is not None and value > self.high):
                return f"must be {'an integer ' if kind is int else ''}{self.bounds_text()}"
            return None
        if not isinstance(value, str) or not value.strip():  # the one kind left: text
            return "must be a non-empty string"
        if self.choices is not None and value not in self.choices:
            return f"must be one of {', '.join(self.choices)}"
        return None


def setting(
    default: Any,
    help: str,
    *,
    flag: str | None = None,
    commands: tuple[str, ...] = COMMANDS,
    result: bool = True,
    **checks: Any,
) -> Any:
    """A settings field: ``default`` and a :class:`Setting` (``help``, ``flag``, ``commands``, ``result`` and the
    checks ``low``, ``high``, ``open_low``, ``choices``, ``convert``, ``read``). ``flag``: the option, by default
    ``--`` and the field's name with dashes (filled in by :class:`Settings`)."""
    return field(default=default, metadata={"setting": Setting(help, flag or "", commands, result, **checks)})


@cache
def field_kinds(cls: type) -> dict[str, tuple[type, bool]]:
    """Field name -> (type, whether ``None`` is allowed), read from ``cls``'s annotations."""
    out = {}
    for name, hint in typing.get_type_hints(cls).items():
        optional = isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)
        if optional:
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        out[name] = (typing.get_origin(hint) or hint, optional)
    return out


def settings_of(cls: type) -> dict[str, Setting]:
    """Field name -> its :class:`Setting` (flag filled in), for the setting fields of ``cls``."""
    out = {}
    for f in dataclasses.fields(cls):
        s = f.metadata.get("setting")
        if s is not None:
            out[f.name] = dataclasses.replace(s, flag=s.flag or "--" + f.name.replace("_", "-"))
    return out


class Settings:
    """Base of the settings groups: builds check every setting field (:meth:`Setting.problem`, then its
    ``convert``), raising ``ValueError`` that names the flag and the value."""

    def __post_init__(self) -> None:
        kinds = field_kinds(type(self))  # type: ignore[arg-type]  # a class is hashable
        for name, s in settings_of(type(self)).items():
            value = getattr(self, name)
            problem = s.problem(value, *kinds[name])
            if problem is not None:
                what = s.flag if s.flag == "--" + name.replace("_", "-") else f"{name} ({s.flag})"
                raise ValueError(f"{what} {problem}; got {value!r}")
            if s.convert is not None and value is not None:
                object.__setattr__(self, name, s.convert(value))


def _normal_shard(text: str) -> str:
    """``"I/K"``, shard I (counted from 0) of K, written without spaces or leading zeros; ``ValueError`` naming
    ``--shard`` otherwise."""
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    i, k = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    if not i < k:  # the digits are >= 0, so K >= 1
        raise ValueError(
            f"--shard must look like I/K with 0 <= I < K (e.g. 0/4: shard 0 of 4, counted from 0); got {text!r}"
        )
    return f"{i}/{k}"


def _method_list(text: str) -> tuple[str, ...]:
    """The comma-separated method names of ``--methods`` (an empty or repeated entry refused)."""
    names = [part.strip() for part in text.split(",")]
    if any(not name for name in names):
        raise ValueError(f"empty entry in {text!r} (a doubled comma, or one at the start or end)")
    return resolve_methods(names)


@dataclass(frozen=True)
class DataSettings(Settings):
    """Which questions a run covers. ``dataset``, ``source`` and ``path`` depend on the command (the command line
    sets them, see :mod:`shapley.cli.args`); ``sha256`` is filled in by the pipeline."""

    dataset: str = setting(None, "the dataset (run) or its label in the tables (score-samples)", commands=())
    source: str = setting("auto", "where the dataset is read from", choices=(*DATA_SOURCES, "file"), commands=())
    path: str | None = setting(
        None,
        "the local dataset file or the input file, stored relative to the repository",
        commands=(),
        flag="--data-path / the input file",
        result=False,
    )
    sha256: str | None = setting(None, "the data file's fingerprint", commands=(), flag="the data file's content")
    n_shots: int = setting(5, "few-shot examples per prompt", commands=RUN, low=0, high=100)
    limit: int | None = setting(
        None,
        "first K questions only. On an existing run the outputs (scores.csv, metrics.csv) then describe these K "
        "questions; a K below what the run already holds is noted and recorded in config.json (outputs)",
        low=1,
        high=10**7,
        result=False,
    )
    n_samples: int | None = setting(
        None, "use the first N samples of each line (default: all)", commands=SAMPLES, low=1, high=1000
    )
    model_label: str | None = setting(
        None, f"model name in metrics.csv (default: '{EXTERNAL_MODEL}')", commands=SAMPLES
    )
    reference_field: str = setting(
        "references",
        "the field holding the reference answers: 'references' ('answer' is then the judged answer) or 'answer' "
        "(the UQ-NLG layout, e.g. triviaqa_llama13b_samples.jsonl.gz; the judged answer is then the first sample)",
        commands=SAMPLES,
        choices=REFERENCE_FIELDS,
    )
    shard: str | None = setting(
        None,
        "only the questions (after --limit) of shard I of K (I = 0..K-1, split by a hash of the id); run each shard "
        "into its own --output, then 'python -m shapley merge' them",
        convert=_normal_shard,
    )


@dataclass(frozen=True)
class GenerationSettings(Settings):
    """The LLM and how it samples (``python -m shapley run``). ``rows_per_batch`` and ``prefix_cache`` move numbers
    by float round-off only, but a run keeps one value of each: a resume and every shard reuse the recorded one."""

    model: str = setting("smollm2", "LLM: 'smollm2' (packaged), a local path or a hub id", commands=RUN)
    n_samples: int = setting(10, "sampled answers per question", commands=RUN, low=1, high=1000)
    temperature: float = setting(1.0, "sampling temperature (0 = greedy)", commands=RUN, low=0.0)
    top_p: float = setting(1.0, "nucleus sampling p (1 = off)", commands=RUN, low=0.0, high=1.0, open_low=True)
    top_k: int = setting(0, "top-k sampling (0 = off)", commands=RUN, low=0, high=10**6)
    max_new_tokens: int = setting(32, "answer length limit in tokens", commands=RUN, low=1, high=8192)
    chat_template: bool | None = setting(
        False,
        "wrap the prompt in the tokenizer's chat template (default: the raw few-shot string, as in the paper; "
        "None, from Python only: when the tokenizer has one)",
        commands=RUN,
    )
    p_true: bool = setting(True, "skip the p(True) prompt (P(T) is then skipped)", commands=RUN, flag="--no-p-true")
    a4c: bool = setting(True, "skip the ask-for-confidence prompt (A4C is then skipped)", commands=RUN, flag="--no-a4c")
    dtype: str | None = setting(None, "model dtype, e.g. float32, bfloat16 (default: per device)", commands=RUN)
    rows_per_batch: int | None = setting(
        None,
        "generation rows per decoding batch, recorded in config.json (default: chosen by a new run); a resume and "
        "every shard reuse the recorded value (other sizes round differently, so a different value is refused)",
        commands=RUN,
        low=1,
        high=65536,
    )
    prefix_cache: bool = setting(
        True,
        "prefill each whole prompt instead of reusing the dataset's shared few-shot block (recorded setting)",
        commands=RUN,
        flag="--no-prefix-cache",
    )


def _backend_spec(spec: str) -> str:
    if ":" not in spec:
        raise ValueError(
            f"--entailment must look like 'hf:<id|path>', 'embedding:<name|path>' or 'llm:<spec>'; got {spec!r}"
        )
    return spec


@dataclass(frozen=True)
class EntailmentSettings(Settings):
    """The entailment backend and what it compares."""

    backend: str = setting(
        DEFAULT_ENTAILMENT,
        "entailment backend: hf:<id|path> (NLI), embedding:<name|path> (stand-in) or llm:<spec> (judge)",
        flag="--entailment",
        convert=_backend_spec,
    )
    with_question: bool = setting(False, "entailment compares 'question + answer' texts")


@dataclass(frozen=True)
class ScoringSettings(Settings):
    """The uncertainty methods, how correctness is judged, and the metrics' bootstrap. What the methods read of it
    is :class:`shapley.pipeline.score.scores.MethodSettings`."""

    methods: tuple[str, ...] = setting(
        DEFAULT_METHODS,
        "comma-separated methods (default: all)",
        convert=resolve_methods,
        read=_method_list,
    )
    beta: float = setting(0.5, "kernel scale beta of R, the paper's default", low=0.0, high=1.0, open_low=True)
    psd_policy: str = setting(
        "nearest",
        "what Shap does when R is not PSD (each repair is recorded as shap_psd_repaired; 'raise' skips Shap on such "
        "questions with the error as reason)",
        choices=PSD_POLICIES,
    )
    cluster_rule: str = setting(
        "bidirectional",
        f"semantic clustering rule for SE/DSE/NumSet (entailment > {CLUSTER_THRESHOLD:g})",
        choices=CLUSTER_RULES,
    )
    se_aggregation: str = setting(
        SE_AGGREGATION_DEFAULT,
        "SE sample log-likelihood: sum of token log-probs, or their mean (length-normalised)",
        choices=SE_AGGREGATIONS,
    )
    correctness_metric: str | None = setting(
        None,
        f"{' or '.join(METRICS)} (default: {_default_correctness()})",
        choices=METRICS,
    )
    threshold: float = setting(0.3, "an answer is correct if its score exceeds this", low=0.0, high=1.0)
    n_boot: int = setting(1000, "bootstrap resamples for the AUROC interval", low=2, high=MAX_BOOT)


@dataclass(frozen=True)
class RuntimeSettings(Settings):
    """How a call runs, not which quantity it computes; none of these moves a stored number.

    Entailment forward passes hold one question's pairs alone, cut by fixed limits per device kind
    (:mod:`shapley.pipeline.entail.base`), and generation decodes each question's rows on their own in the run's
    recorded rows per batch (``generation.rows_per_batch``). A run still records, per invocation, the batch sizes
    its models used (``batch_sizes`` in ``config.json``; see
    :meth:`shapley.pipeline.rundir.store.RunDir.record_batch_sizes`).
    """

    batch_size: int | None = setting(
        None,
        f"run: generation rows per decoding batch of a new run, like --rows-per-batch (default: {CPU_BATCH_ROWS}, "
        "or a question's rows when more, on a CPU; from free memory on a GPU); entailment pairs per pass are fixed "
        "per question and device kind, so batch sizes never move a number; the sizes used are recorded per call",
        low=1,
        high=65536,
        result=False,
    )
    device: str | None = setting(None, "torch device for the models (default: cuda if available)", result=False)
    progress: bool = setting(
        True, "hide the progress bars (and the model libraries' loading bars)", flag="--no-progress", result=False
    )
    entail_cache: str | None = setting(
        None,
        f"sqlite file of the entailment pair cache (default: the shared one under SHAPLEY_CACHE_DIR; '{NO_CACHE}': no "
        "cache). Give each concurrent process its own file: sqlite on a network file system is not safe for "
        "concurrent writers",
        result=False,
        convert=lambda text: NO_CACHE if text.strip().lower() == NO_CACHE else text,
    )

    def entail_cache_arg(self) -> bool | str:
        """The ``cache`` argument of :func:`shapley.pipeline.entail.backends.load_backend` for this setting: True
        (the shared cache), False (``none``) or the file's path."""
        return True if self.entail_cache is None else self.entail_cache != NO_CACHE and self.entail_cache


GROUPS: dict[str, type] = {
    "data": DataSettings,
    "generation": GenerationSettings,
    "entailment": EntailmentSettings,
    "scoring": ScoringSettings,
    "runtime": RuntimeSettings,
}
"""The groups of a :class:`RunConfig`, by the name of their key in ``config.json``."""


@dataclass(frozen=True)
class RunConfig(Settings):
    """Everything that defines a run (see the module docstring); frozen, built once, passed whole.

    ``command`` is ``"run"`` (generation included, ``generation`` required) or ``"score-samples"`` (answers
    read from a file, ``generation`` is ``None``).

    Examples:
        >>> cfg = RunConfig(command="run", data=DataSettings(dataset="triviaqa"), generation=GenerationSettings())
        >>> cfg.scoring.beta, cfg.n_samples, cfg.model
        (0.5, 10, 'smollm2')
        >>> RunConfig.from_dict(cfg.to_dict()) == cfg
        True
    """

    command: str
    data: DataSettings
    generation: GenerationSettings | None = None
    entailment: EntailmentSettings = field(default_factory=EntailmentSettings)
    scoring: ScoringSettings = field(default_factory=ScoringSettings)
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    seed: int = setting(0, "seed of sampling, few-shot choice, ER split and bootstrap", low=0, high=LARGEST_SEED)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.command not in COMMANDS:
            raise ValueError(f"command must be one of {COMMANDS}; got {self.command!r}")
        if (self.command == "run") != (self.generation is not None):
            raise ValueError("a 'run' configuration needs generation settings, a 'score-samples' one has none")
        if self.command == "run" and self.data.reference_field != "references":
            raise ValueError("--reference-field is a score-samples setting (run reads the references of its dataset)")
        cache = self.runtime.entail_cache_arg()
        if isinstance(cache, str) and self.data.path is not None:
            same = Path(cache).expanduser().resolve() == Path(self.data.path).expanduser().resolve()
            if same:
                raise ValueError(
                    f"--entail-cache {cache} is the input file {self.data.path}; give the cache its own path"
                )

    @property
    def n_samples(self) -> int | None:
        """Samples per question: generated (``run``) or kept from the input (``score-samples``; None = all)."""
        return self.generation.n_samples if self.generation is not None else self.data.n_samples

    @property
    def model(self) -> str:
        """The model that produced the answers (its spec, or the input's label)."""
        return self.generation.model if self.generation is not None else self.data.model_label or EXTERNAL_MODEL

    def resolved(self, data: DataSettings, stored: Mapping[str, Any] | None = None) -> RunConfig:
        """This configuration for one call, with what it leaves open filled in: the data settings its questions
        resolved (:mod:`shapley.pipeline.data.questions`), the correctness metric (``None``: the dataset's own,
        :data:`shapley.pipeline.score.correctness.CORRECTNESS_FOR`, for ``run``; Rouge-L for ``score-samples``)
        and, resuming the run whose parsed ``config.json`` is ``stored``, how it decoded: the recorded rows per
        batch and prefix-cache setting where this one leaves them at their defaults (an explicit
        ``--no-prefix-cache`` or ``--rows-per-batch`` is kept, and refused by the resume check when it differs from
        the record, since other sizes round differently)."""
        own = CORRECTNESS_FOR.get(data.dataset, "rougeL") if self.command == "run" else "rougeL"
        config = self.replace(
            data=data,
            scoring=dataclasses.replace(self.scoring, correctness_metric=self.scoring.correctness_metric or own),
        )
        recorded = None if stored is None else RunConfig.from_stored(stored).generation
        if config.generation is None or recorded is None:
            return config
        rows = config.generation.rows_per_batch or recorded.rows_per_batch
        prefix = recorded.prefix_cache and config.generation.prefix_cache
        generation = dataclasses.replace(config.generation, rows_per_batch=rows, prefix_cache=prefix)
        return config.replace(generation=generation)

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with whole groups or top-level fields replaced (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready mapping (tuples as lists); :meth:`from_dict` reads it back to an equal config."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, d: Any) -> RunConfig:
        """Inverse of :meth:`to_dict`. Every key must be there and no other (``ValueError`` naming it): a default
        filled in silently could differ from the value a stored run's records were computed with."""
        groups = json_object(d, "a run configuration")
        _same_keys(groups, ["command", *GROUPS, "seed"], "the run configuration")
        kw = dict(groups)
        for name, kind in GROUPS.items():
            if name == "generation" and groups[name] is None:  # a score-samples run's
                continue
            values = json_object(groups[name], f"run configuration group {name!r}")
            _same_keys(values, [f.name for f in dataclasses.fields(kind)], f"group {name!r}", prefix=f"{name}.")
            kw[name] = kind(**values)
        return cls(**kw)

    @classmethod
    def from_stored(cls, stored: Any) -> RunConfig:
        """The configuration of a parsed ``config.json``; any schema but :data:`CONFIG_SCHEMA` is refused."""
        record = json_object(stored, "config.json")
        if record.get("schema") != CONFIG_SCHEMA:
            raise ValueError(
                f"config.json has schema {record.get('schema')!r}; this version reads schema {CONFIG_SCHEMA} only "
                "and does not migrate older run directories: run the command again into a new --output directory"
            )
        return cls.from_dict(record.get("config"))

    def flat(self) -> dict[str, Any]:
        """Dotted key -> value for every setting (``"scoring.beta"``, ``"seed"``, ...; ``"generation"``: None, the
        null group of a score-samples run)."""
        out: dict[str, Any] = {}
        for key, value in self.to_dict().items():
            if isinstance(value, dict):
                out |= {f"{key}.{name}": v for name, v in value.items()}
            else:
                out[key] = value
        return out

    def result_settings(self) -> dict[str, Any]:
        """The settings that change a stored number (``result=True``); two configs with equal result settings may
        share a run directory."""
        return {k: v for k, v in self.flat().items() if k == "command" or setting_of(k).result}

    def run_record(
        self, output: object, stored: Mapping[str, Any] | None, provenance: Mapping[str, Any], extra: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The ``config.json`` record of a call with this configuration: a new run's (``stored`` None) or ``stored``,
        the parsed record of the run it resumes, with this invocation appended and the settings it changed
        (``changed_settings``). A resume whose result settings differ from the stored ones is refused
        (``ValueError`` naming ``output``, the run directory, then the first such setting, its flag and both values).
        ``provenance``: this call's (:func:`shapley.pipeline.rundir.provenance.provenance`); ``extra``: what the
        caller adds to the record's provenance (e.g. a merge's ``merged_from``)."""
        record = stored or {"schema": CONFIG_SCHEMA, "config": None, "provenance": provenance, "invocations": []}
        invocation = {
            "time": provenance["created"],
            **{k: provenance[k] for k in ("command_line", "cwd", "git")},
            "resumed": stored is not None,
        }
        if stored is not None:
            old = RunConfig.from_stored(stored)
            a, b = old.result_settings(), self.result_settings()
            for key in sorted(set(a) | set(b)):
                if a.get(key) != b.get(key):
                    raise ValueError(
                        f"cannot resume {output}: setting {key!r} ({flag_of(key)}) differs (stored "
                        f"{a.get(key)!r}, now {b.get(key)!r}); use a new --output directory, or the stored setting"
                    )
            was = old.flat()
            changed = {k: [was.get(k), v] for k, v in self.flat().items() if was.get(k) != v}
            invocation |= {"versions": provenance["versions"], "changed_settings": changed}
        return {
            **record,
            "config": self.to_dict(),
            "provenance": {**record["provenance"], **extra},
            "invocations": [*record["invocations"], invocation],
        }


def setting_of(key: str) -> Setting:
    """The :class:`Setting` of the dotted key ``key`` (``"scoring.beta"``; ``"seed"``; ``"generation"``, the
    null group of a score-samples run, counts as a result setting)."""
    group, _, name = key.rpartition(".")
    if not group and name in GROUPS:
        return Setting(f"the {name} settings", f"the {name} settings", (), True)
    return settings_of(GROUPS[group] if group else RunConfig)[name]


def flag_of(key: str) -> str:
    """The command-line flag that sets the dotted setting ``key`` (e.g. ``"scoring.beta"`` -> ``"--beta"``)."""
    return "the subcommand" if key == "command" else setting_of(key).flag


def json_object(value: Any, what: str) -> Mapping[str, Any]:
    """``value`` when it is a JSON object (a mapping); ``ValueError`` naming ``what`` otherwise."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be a JSON object; got {type(value).__name__}")
    return value


def _same_keys(values: Mapping[str, Any], names: list[str], where: str, prefix: str = "") -> None:
    """Refuse a missing or an unknown key of ``values`` (``ValueError`` naming it, and its flag)."""
    missing = [n for n in names if n not in values]
    if missing:
        key = prefix + missing[0]
        raise ValueError(
            f"{where} lacks the key {key!r} ({flag_of(key)}); its records may have been computed with another value "
            "than the default, so it is not filled in: restore the key, or run again into a new --output directory"
        )
    extra = sorted(set(values) - set(names))
    if extra:
        raise ValueError(f"unknown key(s) {extra} in {where}")
