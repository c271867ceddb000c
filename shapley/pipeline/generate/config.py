"""The generator's configuration, :class:`GenerationConfig`. See :mod:`shapley.pipeline.generate.generator` for what
the stage computes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shapley.pipeline.config import LARGEST_SEED, GenerationSettings, RunConfig, setting


def stop_strings(stop: Sequence[str]) -> tuple[str, ...]:
    """``stop`` as a tuple; ``ValueError`` unless every item is a non-empty string."""
    if not all(isinstance(s, str) and s for s in stop):
        raise ValueError(f"stop must hold non-empty strings such as '\\n'; got {stop!r}")
    return tuple(stop)


@dataclass(frozen=True)
class GenerationConfig(GenerationSettings):
    """The generator's configuration: a run's generation settings, inherited from
    :class:`shapley.pipeline.config.GenerationSettings` (declared, defaulted and checked there; ``model`` is not
    read here, since :class:`~shapley.pipeline.generate.generator.Generator` is given its model), and how this
    process runs them (declared, and checked when built, the same way). ``n_samples`` may be 0 here (the greedy
    answer alone; a run samples at least one).
    """

    n_samples: int = setting(
        GenerationSettings.n_samples, "sampled answers per question (0: the greedy answer alone)", low=0, high=1000
    )
    seed: int = setting(
        RunConfig.seed, "the run's seed (per-row seeds derive from it)", commands=(), low=0, high=LARGEST_SEED
    )
    batch_size: int | None = setting(
        None,
        "rows per decoding batch when rows_per_batch is unset (None: automatic, see Decoder.batch_rows)",
        commands=(),
        low=1,
    )
    device: str | None = setting(None, "the device the model is loaded on (None: cuda if available)", commands=())
    stop: tuple[str, ...] = setting(
        ("\n",), "answers end at the first of these strings", commands=(), flag="stop strings", convert=stop_strings
    )
    a4c_max_new_tokens: int = setting(10, "length limit of the A4C reply (tokens)", commands=(), low=1)
    hidden_state: bool = setting(True, "keep the greedy answer's last-token hidden state (for ER)", commands=())
    static_cache: bool | None = setting(
        None,
        "decode with a preallocated key-value cache (None: on CUDA only, where it saves the copy that a growing "
        "cache makes at every step; models whose cache cannot be preallocated keep the growing cache)",
        commands=(),
    )
