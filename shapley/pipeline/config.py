"""One run configuration: :class:`RunConfig`, built once (by the CLI or a notebook) and passed whole.

A run is described by groups of settings, each a frozen dataclass:

* :class:`DataSettings`: which questions (dataset, file and its fingerprint, few-shot count, limit);
* :class:`GenerationSettings`: the LLM and its sampling (``run`` only; ``None`` for ``score-samples``);
* :class:`EntailmentSettings`: the entailment backend;
* :class:`ScoringSettings`: the uncertainty methods, correctness judging and the metrics' bootstrap;
* :class:`RuntimeSettings`: batch size, device and progress bars, which never change a stored number.

``config.json`` of a run directory stores ``RunConfig.to_dict()`` under ``"config"`` with
``"schema": 3``. Older layouts are still read, so that older run directories resume
(:func:`RunConfig.from_stored`): schema 1 (a flat ``"settings"`` mapping, written before this module existed)
and schema 2 (the groups, before ``data.reference_field`` existed; such configs read it as ``None``, see
:class:`DataSettings`).

Every value is validated here, once, when the configuration is built: a bad value raises ``ValueError``
naming the command-line flag.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from shapley.core.psd import PSD_POLICIES
from shapley.pipeline.data.samples import REFERENCE_FIELDS
from shapley.pipeline.rundir.schemas import _V1_REQUIRED, _V1_TYPES, SCHEMA_2_OPTIONAL, SCHEMA_3_OPTIONAL, SCHEMA_4_KEYS
from shapley.pipeline.score import scores as score

CONFIG_SCHEMA = 4
"""Version of the layout of ``config.json``; 1 (the flat ``settings`` mapping) and 2 (groups without
``data.reference_field``, invocations without batch sizes) are still read."""

READ_SCHEMAS = (1, 2, 3, CONFIG_SCHEMA)

COMMANDS = ("run", "score-samples")
SOURCES = ("auto", "local", "online", "file")
CORRECTNESS_METRICS = ("rougeL", "bleu")
CLUSTER_RULES = ("bidirectional", "non_contradiction")
DEFAULT_ENTAILMENT = "hf:microsoft/deberta-large-mnli"

NON_RESULT_KEYS: frozenset[str] = frozenset({"data.limit", "data.path"})
"""Dotted keys (besides the whole ``runtime`` group) that may differ when a run is resumed: they change
which questions a call covers or where the file lies, never a stored number."""


OPEN_WHEN_UNSET: frozenset[str] = frozenset({"data.reference_field"})
"""Result settings that a stored configuration written before they existed holds as ``None``; such a run
resumes with any explicit value (see :class:`DataSettings`)."""


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


_SHARD = re.compile(r"^(\d+)/(\d+)$")


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/K"`` -> ``(I, K)``: shard I (counted from 0) of K; ``ValueError`` naming ``--shard`` otherwise.

    Examples:
        >>> parse_shard("2/4")
        (2, 4)
    """
    m = _SHARD.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"--shard must look like I/K (e.g. 0/4: shard 0 of 4); got {text!r}")
    i, k = int(m.group(1)), int(m.group(2))
    _check(k >= 1 and 0 <= i < k, f"--shard I/K needs K >= 1 and 0 <= I < K (shards count from 0); got {text!r}")
    return i, k


@dataclass(frozen=True)
class DataSettings:
    """Which questions a run covers.

    ``dataset``: the dataset name (``run``) or its label in the tables (``score-samples``). ``source``:
    ``auto`` / ``local`` / ``online`` for ``run``, ``file`` for ``score-samples``. ``path``: the local
    dataset file or the input file (the pipeline stores it relative to the repository, so that no
    machine-specific path is recorded); ``sha256`` its fingerprint (filled in by the pipeline). ``limit``:
    the first K questions. ``n_samples`` (``score-samples``): keep the first N samples of each line.
    ``model_label`` (``score-samples``): the model that generated the input, for the tables.
    ``reference_field`` (``score-samples``): the input field holding the reference answers, ``references``
    or ``answer`` (see :data:`shapley.pipeline.data.samples.REFERENCE_FIELDS`). ``None`` only in configurations
    read from a run directory written before the setting existed (the old implicit fallback: ``references``
    when a line has it, else ``answer``); such a run resumes with either explicit value, since the input's
    fingerprint pins the file and only the value that reproduces the fallback reads it without error.
    ``shard``: ``"I/K"`` keeps only the questions (after ``limit``) whose id falls in shard I of K
    (:func:`shapley.pipeline.experiment.merge.shard_of`); ``python -m shapley merge`` joins the K run directories.
    """

    dataset: str
    source: str = "auto"
    path: str | None = None
    sha256: str | None = None
    n_shots: int = 5
    limit: int | None = None
    n_samples: int | None = None
    model_label: str | None = None
    reference_field: str | None = "references"
    shard: str | None = None

    def __post_init__(self) -> None:
        if self.shard is not None:
            i, k = parse_shard(self.shard)
            object.__setattr__(self, "shard", f"{i}/{k}")
        _check(
            self.reference_field is None or self.reference_field in REFERENCE_FIELDS,
            f"--reference-field must be one of {', '.join(REFERENCE_FIELDS)}; got {self.reference_field!r}",
        )
        _check(isinstance(self.dataset, str) and bool(self.dataset.strip()), "--dataset must be a non-empty name")
        _check(self.source in SOURCES, f"--source must be one of {', '.join(SOURCES)}; got {self.source!r}")
        _check(_is_int(self.n_shots) and self.n_shots >= 0, f"--n-shots must be an integer >= 0; got {self.n_shots!r}")
        _check(
            self.limit is None or (_is_int(self.limit) and self.limit >= 1), f"--limit must be >= 1; got {self.limit!r}"
        )
        _check(
            self.n_samples is None or (_is_int(self.n_samples) and self.n_samples >= 1),
            f"--n-samples must be >= 1; got {self.n_samples!r}",
        )


@dataclass(frozen=True)
class GenerationSettings:
    """The LLM and how it samples (``python -m shapley run``).

    ``model``: ``smollm2`` (packaged), a local path or a hub id. ``temperature`` 0 is greedy; ``top_k`` 0 and
    ``top_p`` 1 switch those filters off. ``p_true`` / ``a4c``: also ask the p(True) and confidence prompts.
    ``chat_template``: wrap prompts in the tokenizer's chat template (default: the raw few-shot string, as in
    the paper). ``dtype``: model dtype (``None``: bf16 on CUDA, fp32 on CPU). ``rows_per_batch``: rows per
    decoding batch (``None``: a new run chooses it automatically and records it; a resume and each shard reuse
    the recorded value). ``prefix_cache``: prefill each dataset's shared few-shot block once (see
    :mod:`shapley.pipeline.generate.prompts`); a run written before these settings existed reads as ``None`` rows and
    no prefix cache. Both move numbers by float round-off only, but a run keeps one value of each.
    """

    model: str = "smollm2"
    n_samples: int = 10
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 32
    chat_template: bool = False
    p_true: bool = True
    a4c: bool = True
    dtype: str | None = None
    rows_per_batch: int | None = None
    prefix_cache: bool = True

    def __post_init__(self) -> None:
        _check(isinstance(self.model, str) and bool(self.model.strip()), "--model must be a non-empty spec")
        _check(
            self.rows_per_batch is None or (_is_int(self.rows_per_batch) and self.rows_per_batch >= 1),
            f"--rows-per-batch must be >= 1; got {self.rows_per_batch!r}",
        )
        _check(isinstance(self.prefix_cache, bool), f"prefix_cache must be true or false; got {self.prefix_cache!r}")
        _check(_is_int(self.n_samples) and self.n_samples >= 1, f"--n-samples must be >= 1; got {self.n_samples!r}")
        _check(
            _is_number(self.temperature) and 0.0 <= self.temperature < float("inf"),
            f"--temperature must be a finite number >= 0; got {self.temperature!r}",
        )
        _check(_is_number(self.top_p) and 0.0 < self.top_p <= 1.0, f"--top-p must be in (0, 1]; got {self.top_p!r}")
        _check(_is_int(self.top_k) and self.top_k >= 0, f"--top-k must be an integer >= 0; got {self.top_k!r}")
        _check(
            _is_int(self.max_new_tokens) and self.max_new_tokens >= 1,
            f"--max-new-tokens must be >= 1; got {self.max_new_tokens!r}",
        )


@dataclass(frozen=True)
class EntailmentSettings:
    """The entailment backend: ``hf:<id|path>`` (NLI), ``embedding:<name|path>`` (stand-in) or ``llm:<spec>``
    (judge); ``with_question`` compares "question answer" texts instead of bare answers."""

    backend: str = DEFAULT_ENTAILMENT
    with_question: bool = False

    def __post_init__(self) -> None:
        _check(
            isinstance(self.backend, str) and ":" in self.backend,
            "--entailment must look like 'hf:<id|path>', 'embedding:<name|path>' or 'llm:<spec>'; "
            f"got {self.backend!r}",
        )
        _check(
            isinstance(self.with_question, bool), f"--with-question must be true or false; got {self.with_question!r}"
        )


@dataclass(frozen=True)
class ScoringSettings:
    """The uncertainty methods, how correctness is judged, and the metrics' bootstrap.

    ``methods``: method names (default: all but ``Shap_sum``). ``beta``: the kernel scale. ``psd_policy``: what
    ``Shap`` does with a non-PSD R. ``correctness_metric`` (``None``: BLEU for WMT-14, Rouge-L otherwise) and
    ``threshold``: an answer is correct when its score exceeds the threshold. ``n_boot``: bootstrap resamples.
    """

    methods: tuple[str, ...] = score.DEFAULT_METHODS
    beta: float = 0.5
    psd_policy: str = score.DEFAULT_PSD_POLICY
    cluster_rule: str = score.CLUSTER_RULE
    se_aggregation: str = score.SE_AGGREGATION
    correctness_metric: str | None = None
    threshold: float = 0.3
    n_boot: int = 1000

    def __post_init__(self) -> None:
        object.__setattr__(self, "methods", tuple(score.resolve_methods(self.methods)))
        _check(_is_number(self.beta) and 0.0 < self.beta <= 1.0, f"--beta must be in (0, 1]; got {self.beta!r}")
        _check(
            self.psd_policy in PSD_POLICIES,
            f"--psd-policy must be one of {', '.join(PSD_POLICIES)}; got {self.psd_policy!r}",
        )
        _check(
            self.cluster_rule in CLUSTER_RULES,
            f"--cluster-rule must be one of {', '.join(CLUSTER_RULES)}; got {self.cluster_rule!r}",
        )
        _check(
            self.se_aggregation in score.SE_AGGREGATIONS,
            f"--se-aggregation must be one of {', '.join(score.SE_AGGREGATIONS)}; got {self.se_aggregation!r}",
        )
        _check(
            self.correctness_metric is None or self.correctness_metric in CORRECTNESS_METRICS,
            f"--correctness-metric must be rougeL or bleu; got {self.correctness_metric!r}",
        )
        _check(
            _is_number(self.threshold) and 0.0 <= self.threshold <= 1.0,
            f"--threshold must be in [0, 1]; got {self.threshold!r}",
        )
        _check(_is_int(self.n_boot) and self.n_boot >= 1, f"--n-boot must be >= 1; got {self.n_boot!r}")

    def options(self) -> score.ScoreOptions:
        """The methods' settings as :class:`shapley.pipeline.score.scores.ScoreOptions`."""
        return score.ScoreOptions(
            beta=self.beta,
            psd_policy=self.psd_policy,
            cluster_rule=self.cluster_rule,
            se_aggregation=self.se_aggregation,
        )


@dataclass(frozen=True)
class RuntimeSettings:
    """How a call runs, not which quantity it computes: ``batch_size`` (rows or pairs per forward pass; ``None``:
    automatic, 8 generation rows and 32 entailment pairs on a CPU, from the free memory on CUDA), ``device``
    (``None``: CUDA when available), ``progress`` (progress bars; off also silences the model libraries'
    loading bars and info logs) and ``entail_cache`` (the entailment pair cache: ``None`` for the shared
    default file, ``"none"`` for no cache, else the path of a sqlite file; give each concurrent shard its own,
    since sqlite on a network file system is unsafe with several writers).

    Batch sizes do not move numbers: entailment forward passes hold one question's pairs alone, cut by fixed
    limits per device kind (:mod:`shapley.pipeline.entail.base`), and generation decodes each question's rows on
    their own, in the run's recorded rows per batch (``generation.rows_per_batch``; other sizes round
    differently, so a resume reuses it). A run still records, per invocation, the batch sizes its models used
    (``batch_sizes`` in ``config.json``), and a resume with other sizes is noted there (see
    :meth:`shapley.pipeline.rundir.store.RunDir.record_batch_sizes`).
    """

    batch_size: int | None = None
    device: str | None = None
    progress: bool = True
    entail_cache: str | None = None

    def __post_init__(self) -> None:
        _check(
            self.batch_size is None or (_is_int(self.batch_size) and self.batch_size >= 1),
            f"--batch-size must be >= 1; got {self.batch_size!r}",
        )
        _check(isinstance(self.progress, bool), f"--no-progress: progress must be true or false; got {self.progress!r}")
        _check(
            self.entail_cache is None or (isinstance(self.entail_cache, str) and bool(self.entail_cache.strip())),
            f"--entail-cache must be a file path or 'none'; got {self.entail_cache!r}",
        )

    def entail_cache_arg(self) -> bool | str:
        """The ``cache`` argument of :func:`shapley.pipeline.entail.backends.load_backend` for this setting."""
        if self.entail_cache is None:
            return True
        return False if self.entail_cache.strip().lower() == "none" else self.entail_cache


_GROUPS: dict[str, type] = {
    "data": DataSettings,
    "generation": GenerationSettings,
    "entailment": EntailmentSettings,
    "scoring": ScoringSettings,
    "runtime": RuntimeSettings,
}


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run (see the module docstring); frozen, built once, passed whole.

    ``command`` is ``"run"`` (generation included, ``generation`` required) or ``"score-samples"`` (answers
    read from a file, ``generation`` is ``None``). ``seed`` seeds sampling, the few-shot choice, the ER split
    and the bootstrap.

    Examples:
        >>> cfg = RunConfig(command="run", data=DataSettings(dataset="triviaqa"), generation=GenerationSettings())
        >>> cfg.scoring.beta, cfg.n_samples, cfg.model
        (0.5, 10, 'smollm2')
        >>> RunConfig.from_dict(cfg.to_dict()) == cfg
        True
    """

    command: Literal["run", "score-samples"]
    data: DataSettings
    generation: GenerationSettings | None = None
    entailment: EntailmentSettings = field(default_factory=EntailmentSettings)
    scoring: ScoringSettings = field(default_factory=ScoringSettings)
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    seed: int = 0

    def __post_init__(self) -> None:
        _check(self.command in COMMANDS, f"command must be one of {COMMANDS}; got {self.command!r}")
        _check(_is_int(self.seed), f"--seed must be an integer; got {self.seed!r}")
        if self.command == "run":
            _check(self.generation is not None, "a 'run' configuration needs generation settings")
            _check(
                self.data.reference_field in (None, "references"),
                "--reference-field is a score-samples setting (run reads the references of its dataset)",
            )
        else:
            _check(self.generation is None, "a 'score-samples' configuration has no generation settings")
        cache = self.runtime.entail_cache_arg()
        if isinstance(cache, str) and self.data.path is not None:
            same = Path(cache).expanduser().resolve() == Path(self.data.path).expanduser().resolve()
            _check(not same, f"--entail-cache {cache} is the input file {self.data.path}; give the cache its own path")

    # --- derived labels ---------------------------------------------------------------------------
    @property
    def n_samples(self) -> int | None:
        """Samples per question: generated (``run``) or kept from the input (``score-samples``; None = all)."""
        return self.generation.n_samples if self.generation is not None else self.data.n_samples

    @property
    def model(self) -> str:
        """The model that produced the answers (its spec, or the input's label)."""
        if self.generation is not None:
            return self.generation.model
        return self.data.model_label or "external"

    def replace(self, **groups: Any) -> RunConfig:
        """A copy with whole groups or top-level fields replaced (``dataclasses.replace``)."""
        return dataclasses.replace(self, **groups)

    # --- (de)serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready mapping (tuples as lists); :meth:`from_dict` reads it back to an equal config."""
        d = dataclasses.asdict(self)
        return json.loads(json.dumps(d))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunConfig:
        """Inverse of :meth:`to_dict`; unknown keys are refused (``ValueError`` naming them)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"a run configuration must be a JSON object; got {type(d).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        extra = sorted(set(d) - known)
        _check(not extra, f"unknown run-configuration key(s) {extra}")
        kw: dict[str, Any] = {k: v for k, v in d.items() if k not in _GROUPS}
        for name, kind in _GROUPS.items():
            if d.get(name) is None:
                continue
            group = d[name]
            if not isinstance(group, Mapping):
                raise ValueError(f"run configuration group {name!r} must be a JSON object; got {type(group).__name__}")
            fields = {f.name for f in dataclasses.fields(kind)}
            bad = sorted(set(group) - fields)
            _check(not bad, f"unknown key(s) {bad} in run configuration group {name!r}")
            values = dict(group)
            if name == "data":
                values.setdefault("reference_field", None)  # written before the setting existed (schema <= 2)
            if name == "generation":
                values.setdefault("prefix_cache", False)  # written before the prefix cache existed: whole prompts
            if name == "scoring" and "methods" in values:
                values["methods"] = tuple(values["methods"])
            kw[name] = kind(**values)
        return cls(**kw)

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> RunConfig:
        """The configuration of a parsed ``config.json`` (schema 4, 3 or 2, or the flat schema 1).

        A key that the file's schema defines but that the file lacks is refused (``ValueError`` naming it,
        see :data:`SCHEMA_4_KEYS`); a schema-3 file may lack the keys of :data:`SCHEMA_3_OPTIONAL`, a schema-2 file
        those and the keys of :data:`SCHEMA_2_OPTIONAL`."""
        if not isinstance(stored, Mapping):
            raise ValueError(f"config.json must hold a JSON object; got {type(stored).__name__}")
        schema = stored.get("schema", 1)
        if schema in (2, 3, CONFIG_SCHEMA):
            if "config" not in stored:
                raise ValueError(f"config.json (schema {schema}) has no 'config' object")
            _check_schema_keys(stored["config"], schema)
            return cls.from_dict(stored["config"])
        if schema == 1:
            settings = stored.get("settings")
            if not isinstance(settings, Mapping):
                raise ValueError("config.json (schema 1) has no 'settings' object")
            return cls.from_v1_settings(settings)
        raise ValueError(
            f"config.json has schema {schema!r}; this version reads schemas {', '.join(map(str, READ_SCHEMAS))}"
        )

    @classmethod
    def from_v1_settings(cls, s: Mapping[str, Any]) -> RunConfig:
        """Map the flat ``settings`` of a schema-1 ``config.json`` onto the groups."""
        command = s.get("command")
        if command not in COMMANDS:
            raise ValueError(f"schema-1 settings name no known command ({command!r})")
        _check_v1_types(s)
        run = command == "run"
        data = DataSettings(
            dataset=s["dataset"],
            source=s.get("source", "auto") if run else "file",
            path=s.get("data_path") if run else s.get("input_path"),
            sha256=s.get("data_sha256") if run else s.get("input_sha256"),
            n_shots=s.get("n_shots", 5) if run else 5,
            limit=s.get("limit"),
            n_samples=None if run else s.get("n_samples"),
            model_label=None if run else s.get("model"),
            reference_field=None,
        )
        gen = None
        if run:
            gen = GenerationSettings(
                **{
                    k: s[k]
                    for k in (
                        "n_samples",
                        "temperature",
                        "top_p",
                        "top_k",
                        "max_new_tokens",
                        "chat_template",
                        "p_true",
                        "a4c",
                        "dtype",
                    )
                    if k in s
                },
                model=s["model"],
                prefix_cache=False,  # schema 1 runs prefilled whole prompts
            )
        scoring = ScoringSettings(
            methods=tuple(s["methods"]) if s.get("methods") else score.DEFAULT_METHODS,
            **{
                k: s[k]
                for k in (
                    "beta",
                    "psd_policy",
                    "cluster_rule",
                    "se_aggregation",
                    "correctness_metric",
                    "threshold",
                    "n_boot",
                )
                if k in s
            },
        )
        return cls(
            command=command,
            data=data,
            generation=gen,
            entailment=EntailmentSettings(backend=s["entailment"], with_question=s.get("with_question", False)),
            scoring=scoring,
            runtime=RuntimeSettings(batch_size=s.get("batch_size") or 8, device=s.get("device")),
            seed=s.get("seed", 0),
        )

    # --- resume checks ----------------------------------------------------------------------------
    def flat(self) -> dict[str, Any]:
        """Dotted key -> value for every setting (``"scoring.beta"``, ``"seed"``, ...)."""
        return dict(_flatten(self.to_dict()))

    def result_settings(self) -> dict[str, Any]:
        """The settings that change a stored number: :meth:`flat` without ``runtime.*`` and
        :data:`NON_RESULT_KEYS`. Two configs with equal result settings may share a run directory."""
        return {k: v for k, v in self.flat().items() if not k.startswith("runtime.") and k not in NON_RESULT_KEYS}

    def differences(self, other: RunConfig) -> dict[str, tuple[Any, Any]]:
        """Result settings that differ: dotted key -> (this value, other value).

        ``self`` is the stored configuration: a key of :data:`OPEN_WHEN_UNSET` that it leaves ``None`` (written
        before the setting existed) matches any value of ``other``."""
        a, b = self.result_settings(), other.result_settings()
        return {
            k: (a.get(k), b.get(k))
            for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k) and not (k in OPEN_WHEN_UNSET and a.get(k) is None)
        }


def _check_v1_types(s: Mapping[str, Any]) -> None:
    """Refuse a schema-1 ``settings`` mapping with a missing required key or a value of the wrong kind, naming
    the key (nothing is coerced: a seed of 0.9 is not 0, the string "false" is not true)."""
    required = (*_V1_REQUIRED, "model") if s.get("command") == "run" else _V1_REQUIRED
    for key in required:
        if key not in s:
            raise ValueError(f"config.json (schema 1): 'settings' lacks the key {key!r}")
    for key, (kind, ok) in _V1_TYPES.items():
        if key in s and not ok(s[key]):
            raise ValueError(f"config.json (schema 1): settings key {key!r} must be {kind}; got {s[key]!r}")


def _check_schema_keys(config: Any, schema: int) -> None:
    """Refuse a schema-2/3/4 ``config`` object that lacks a key its schema defines (``ValueError`` naming it)."""
    if not isinstance(config, Mapping):
        raise ValueError(f"a run configuration must be a JSON object; got {type(config).__name__}")
    optional = {2: SCHEMA_2_OPTIONAL | SCHEMA_3_OPTIONAL, 3: SCHEMA_3_OPTIONAL}.get(schema, frozenset())
    for key in SCHEMA_4_KEYS:
        group, _, name = key.rpartition(".")
        if key in optional or (group and config.get(group) is None and group == "generation"):
            continue
        holder = config.get(group) if group else config
        if not isinstance(holder, Mapping) or name not in holder:
            raise ValueError(
                f"config.json (schema {schema}) lacks the key {key!r} ({flag_of(key)}); its records may have been "
                "computed with another value than the default, so it is not filled in: restore the key"
            )


_FLAG_NAMES = {
    "entailment.backend": "--entailment",
    "data.path": "--data-path / the input file",
    "data.sha256": "the data file's content",
    "data.model_label": "--model-label",
    "generation.p_true": "--no-p-true",
    "generation.a4c": "--no-a4c",
    "generation.prefix_cache": "--no-prefix-cache",
}


def flag_of(key: str) -> str:
    """The command-line flag that sets the dotted setting ``key`` (e.g. ``"scoring.beta"`` -> ``"--beta"``)."""
    return _FLAG_NAMES.get(key, "--" + key.rsplit(".", 1)[-1].replace("_", "-"))


def _flatten(d: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            yield from _flatten(v, key + ".")
        else:
            yield key, v
