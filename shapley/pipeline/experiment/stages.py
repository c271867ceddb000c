"""The stage runner and the lazily loaded models of the pipelines (:mod:`shapley.pipeline.experiment.pipelines`).

:func:`run_stage` computes and stores, chunk by chunk, what a stage file does not hold yet; a :class:`LazyModel`
(:class:`EntailmentModel`, :class:`GenerationModel`) loads its model on first use, so that a fully resumed run
never loads one, and records it in the run's provenance.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from shapley.pipeline.config import RunConfig, ScoringSettings
from shapley.pipeline.entail import backends as entail
from shapley.pipeline.generate import generator as generate
from shapley.pipeline.generate.config import GenerationConfig
from shapley.pipeline.rundir.jsonl import CHUNK_KEY, UPSTREAM_KEY, JsonlStore, StaleRecordWarning, fingerprint
from shapley.pipeline.rundir.progress import tqdm
from shapley.pipeline.rundir.store import TEST_CALL_LOG_ENV, TEST_SLEEP_ENV, RunDir

T = TypeVar("T")


ENTAIL_CHUNK = 16
"""Questions whose entailment records are computed and stored together (one write) when no ``--batch-size`` is
given (with one, that many); entailment passes are fixed per question, so the chunk never moves a number."""


def note(message: str) -> None:
    """Print ``message`` as a one-line note on stderr (the run directory keeps it too, where it says so)."""
    print(f"note: {message}", file=sys.stderr)


# --------------------------------------------------------------------------------------------------
# Stage runner


def run_stage(
    store: JsonlStore,
    stage: str,
    items: Sequence[T],
    compute: Callable[[list[T]], list[dict[str, Any]]],
    *,
    key: Callable[[T], str],
    chunk_size: int = 1,
    progress: bool = True,
    upstream: Callable[[T], str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Compute and store the records of ``items`` that ``store`` does not hold yet.

    ``compute(chunk)`` returns one record (with ``"id"``) per item of the chunk, in order. A chunk's records
    are appended together, with one write, and each carries the ids of its chunk (``chunk``, when the chunk
    holds several items), so that a chunk torn by a crash is recomputed whole (see
    :mod:`shapley.pipeline.rundir.store`). ``upstream(item)``: the fingerprint of the item's inputs, stored as
    ``upstream_sha256``; a stored record with another fingerprint is discarded (with a
    :class:`~shapley.pipeline.rundir.jsonl.StaleRecordWarning`) and recomputed. Returns the store's ``{id: record}``.
    """
    ups = {key(it): upstream(it) for it in items} if upstream is not None else {}
    # stored records computed from other inputs (or that do not say from which)
    stale = [k for k, up in ups.items() if k in store and store.records[k].get(UPSTREAM_KEY) != up]
    if stale:
        warnings.warn(
            f"{store.path}: {len(stale)} record(s) were computed from inputs that changed since (e.g. "
            f"{stale[:3]}); recomputing them",
            StaleRecordWarning,
            stacklevel=2,
        )
        store.discard(stale)
    pending = [it for it in items if key(it) not in store]
    sleep = float(os.environ.get(TEST_SLEEP_ENV) or 0.0)
    log_path = os.environ.get(TEST_CALL_LOG_ENV)
    with tqdm(total=len(items), initial=len(items) - len(pending), desc=stage, unit="q", disable=not progress) as bar:
        for start in range(0, len(pending), chunk_size):
            chunk = pending[start : start + chunk_size]
            records = compute(chunk)
            ids = [key(it) for it in chunk]
            for k, rec in zip(ids, records, strict=True):
                if len(chunk) > 1:
                    rec[CHUNK_KEY] = ids
                if upstream is not None:
                    rec[UPSTREAM_KEY] = ups[k]
            if sleep:
                time.sleep(sleep * len(chunk))
            store.append_many(records)
            if log_path:
                with open(log_path, "a", encoding="utf-8") as f:
                    f.write("".join(f"{stage}\t{k}\n" for k in ids))
            bar.update(len(chunk))
    return store.records


# --------------------------------------------------------------------------------------------------
# Lazily loaded models


@contextlib.contextmanager
def quiet_model_loading(quiet: bool) -> Iterator[None]:
    """With ``quiet``: no progress bar (e.g. transformers' "Loading weights") and only errors logged by the
    model libraries while the block runs; their previous settings are restored afterwards."""
    if not quiet:
        yield
        return
    from transformers.utils import logging as hf_logging  # a dependency; imported only here, when quiet

    loggers = [logging.getLogger(name) for name in ("sentence_transformers", "huggingface_hub")]
    levels = [lg.level for lg in loggers]
    bars = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    try:
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
        if bars:
            hf_logging.enable_progress_bar()
        hf_logging.set_verbosity(verbosity)


def compute_kind(obj: Any) -> dict[str, str | None]:
    """How a loaded model computes: its ``dtype`` and the kind of its ``device`` (``cpu``, ``cuda``, ...), read
    from the object or the first parameter of its ``model`` (``None`` where neither says). Part of the model
    information in provenance (:meth:`shapley.pipeline.rundir.store.RunDir.record_fingerprint`): a resume in another
    dtype or on another device kind would mix records computed two ways, and is refused."""
    dtype, device = getattr(obj, "dtype", None), getattr(obj, "device", None)
    with contextlib.suppress(Exception):  # no torch module as ``model``: nothing more to read
        param = next(obj.model.parameters())
        dtype, device = dtype or param.dtype, device or param.device
    kind = getattr(device, "type", device)  # a torch.device's type; a text or None as it is
    return {
        "dtype": None if dtype is None else str(dtype).removeprefix("torch."),
        "device_kind": None if kind is None else str(kind).split(":")[0],
    }


def scoring_fingerprint(scoring: ScoringSettings) -> str:
    """The fingerprint of the scoring settings that change a score record (all but ``n_boot``, which only the
    metrics use): part of every score record's ``upstream_sha256``, so that a score computed with other
    settings is recomputed, whatever ``config.json`` says."""
    d = dataclasses.asdict(scoring)
    d.pop("n_boot")
    return fingerprint(d)


class LazyModel:
    """A model loaded on first use (a fully resumed run never loads one); :meth:`record` stores what it is in the
    run's provenance under :attr:`kind` once per call, and :meth:`record_batch_sizes` the batch sizes it used.
    A subclass says how it loads (:meth:`load`) and what provenance records of it (:meth:`info`)."""

    kind = ""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self._model: Any = None
        self._recorded = False

    def load(self) -> Any:
        raise NotImplementedError

    def info(self, model: Any) -> dict[str, Any]:
        raise NotImplementedError

    def get(self) -> Any:
        if self._model is None:
            with quiet_model_loading(not self.config.runtime.progress):
                self._model = self.load()
        return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def record(self, run: RunDir) -> None:
        """Store the model's information in ``run``'s provenance (:meth:`RunDir.record_fingerprint`, which refuses
        another model than a resumed run's), loading it if needed; once per call."""
        if not self._recorded:
            run.record_fingerprint(self.kind, self.info(self.get()))
            self._recorded = True

    def record_batch_sizes(self, run: RunDir, stage: str, chunk: int) -> None:
        """Keep the batch sizes ``stage`` used in this call in the run's record, if loaded: the batch size the model
        reports having used, ``stats["batch_size"]``, when it keeps one (it may be chosen from free memory), else the
        run's ``--batch-size`` (the generator's own setting), and the questions per stored chunk."""
        if self.loaded:
            used = getattr(self._model, "stats", {}).get("batch_size")
            size = self.config.runtime.batch_size if used is None else used
            run.record_batch_sizes(stage, {"batch_size": size, "chunk": chunk})


class EntailmentModel(LazyModel):
    """The run's entailment backend (:func:`shapley.pipeline.entail.backends.load_backend`), loaded on first use."""

    kind = "entailment"

    def load(self) -> Any:
        runtime = self.config.runtime
        return entail.load_backend(
            self.config.entailment.backend,
            device=runtime.device,
            cache=runtime.entail_cache_arg(),
            progress=None if runtime.progress else False,
        )

    def info(self, model: Any) -> dict[str, Any]:
        spec = self.config.entailment.backend
        return {
            "spec": spec,
            "name": getattr(model, "name", spec),
            "fingerprint": getattr(model, "fingerprint", None),
            "is_nli": bool(getattr(model, "is_nli", False)),
            "computation": getattr(model, "computation", None),
            **compute_kind(model),
        }


class GenerationModel(LazyModel):
    """The run's generator (:class:`shapley.pipeline.generate.generator.Generator` on the run's generation
    settings, seed and runtime), loaded on first use (``run_stage`` shows the progress bar)."""

    kind = "model"

    def load(self) -> Any:
        config = self.config
        assert config.generation is not None
        settings = GenerationConfig(
            **dataclasses.asdict(config.generation),
            seed=config.seed,
            batch_size=config.runtime.batch_size,
            device=config.runtime.device,
        )
        return generate.Generator(settings.model, settings)

    def info(self, model: Any) -> dict[str, Any]:
        return {
            "spec": self.config.model,
            "fingerprint": getattr(model, "fingerprint", None),
            **compute_kind(model),
        }
