"""The keys each ``config.json`` schema defines (:mod:`shapley.pipeline.config` reads them): pure data.

A key its schema defines but a file lacks is refused, never filled in with a default; a schema-1 value of the
wrong kind is refused, never coerced.
"""

from __future__ import annotations

from typing import Any


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


SCHEMA_3_KEYS: tuple[str, ...] = (
    "command",
    "seed",
    "data.dataset",
    "data.source",
    "data.path",
    "data.sha256",
    "data.n_shots",
    "data.limit",
    "data.n_samples",
    "data.model_label",
    "data.reference_field",
    "data.shard",
    "generation.model",
    "generation.n_samples",
    "generation.temperature",
    "generation.top_p",
    "generation.top_k",
    "generation.max_new_tokens",
    "generation.chat_template",
    "generation.p_true",
    "generation.a4c",
    "generation.dtype",
    "entailment.backend",
    "entailment.with_question",
    "scoring.methods",
    "scoring.beta",
    "scoring.psd_policy",
    "scoring.cluster_rule",
    "scoring.se_aggregation",
    "scoring.correctness_metric",
    "scoring.threshold",
    "scoring.n_boot",
    "runtime.batch_size",
    "runtime.device",
    "runtime.progress",
    "runtime.entail_cache",
)
"""Every key a schema-3 ``config.json`` holds (``generation.*`` only when ``generation`` is not null). A missing
one is refused (:meth:`shapley.pipeline.config.RunConfig.from_stored`): a default filled in silently could differ
from the value the stored records were computed with. A setting added later belongs to a new schema (bump
:data:`shapley.pipeline.config.CONFIG_SCHEMA` and list the keys it requires), so that older files keep reading."""

SCHEMA_2_OPTIONAL: frozenset[str] = frozenset({"data.reference_field", "data.shard", "runtime.entail_cache"})
"""Keys of :data:`SCHEMA_3_KEYS` that a schema-2 file may lack (written before they existed; documented
migration: ``reference_field`` reads as ``None``, the others as their defaults)."""

SCHEMA_4_KEYS: tuple[str, ...] = (*SCHEMA_3_KEYS, "generation.rows_per_batch", "generation.prefix_cache")
"""Every key a schema-4 ``config.json`` holds: schema 3's and the generation path's recorded settings (rows per
decoding batch, shared-prefix cache), so that a resume and every shard decode the way the run began."""

SCHEMA_3_OPTIONAL: frozenset[str] = frozenset({"generation.rows_per_batch", "generation.prefix_cache"})
"""Keys of :data:`SCHEMA_4_KEYS` that a schema-3 (or 2) file may lack: written before they existed; documented
migration: ``prefix_cache`` reads as ``False`` (whole prompts were prefilled), ``rows_per_batch`` as ``None``."""

_V1_REQUIRED = ("command", "dataset", "entailment")
_V1_TYPES: dict[str, tuple[str, Any]] = {
    "seed": ("an integer", _is_int),
    "with_question": ("true or false", lambda v: isinstance(v, bool)),
    "batch_size": ("an integer or null", lambda v: v is None or _is_int(v)),
    "limit": ("an integer or null", lambda v: v is None or _is_int(v)),
    "n_shots": ("an integer", _is_int),
    "n_samples": ("an integer or null", lambda v: v is None or _is_int(v)),
    "top_k": ("an integer", _is_int),
    "max_new_tokens": ("an integer", _is_int),
    "n_boot": ("an integer", _is_int),
    "chat_template": ("true or false", lambda v: isinstance(v, bool)),
    "p_true": ("true or false", lambda v: isinstance(v, bool)),
    "a4c": ("true or false", lambda v: isinstance(v, bool)),
    "beta": ("a number", _is_number),
    "temperature": ("a number", _is_number),
    "top_p": ("a number", _is_number),
    "threshold": ("a number", _is_number),
    "dataset": ("a string", lambda v: isinstance(v, str)),
    "entailment": ("a string", lambda v: isinstance(v, str)),
    "model": ("a string", lambda v: isinstance(v, str)),
}
