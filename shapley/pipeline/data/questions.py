"""The questions a run covers: its data settings' questions under ``--limit`` and ``--shard``, checked, and the
data settings they resolve (:func:`run_questions` for ``run``, :func:`sample_questions` for ``score-samples``;
the run's configuration takes them in :meth:`shapley.pipeline.config.RunConfig.resolved`).

``--shard I/K`` (:attr:`shapley.pipeline.config.DataSettings.shard`) keeps the questions, after ``--limit``, whose
id falls in shard I (from 0) of K: :func:`shard_of`, a SHA-256 of the id (not Python's salted ``hash``), so that
every process, machine and Python version splits alike. Each shard is its own resumable run directory; every
question keeps its position in the unsharded input, so that ``python -m shapley merge``
(:mod:`shapley.pipeline.experiment.merge`) restores the unsharded order.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from shapley.pipeline.config import EXTERNAL_MODEL, DataSettings, RunConfig
from shapley.pipeline.data import datasets
from shapley.pipeline.data.samples import SampleItem, read_samples_file
from shapley.pipeline.rundir.jsonl import fingerprint
from shapley.pipeline.rundir.provenance import repo_relative
from shapley.pipeline.rundir.records import QARecord
from shapley.results.records import sha256_file

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Questions(Sequence[T]):
    """The questions one call covers, in input order, each with its position in the unsharded input (after
    ``--limit``), and how many that input holds (``total``; ``merge`` checks that the shards hold them all)."""

    placed: list[tuple[int, T]]
    total: int

    def __getitem__(self, i: int) -> T:  # type: ignore[override]
        return self.placed[i][1]

    def __len__(self) -> int:
        return len(self.placed)

    def position(self, key: Callable[[T], str]) -> dict[str, int]:
        """Question id (``key``) -> position in the unsharded input."""
        return {key(it): pos for pos, it in self.placed}


def run_questions(config: RunConfig) -> tuple[DataSettings, Questions[QARecord]]:
    """The questions of a ``run`` and its data settings with what they leave to the data filled in: the local file
    (relative to the repository) and its fingerprint. ``ValueError`` for a question that cannot be stored as
    UTF-8."""
    d = config.data  # a run's source is one of DATA_SOURCES (score-samples' "file" is never one)
    records = datasets.dataset_records(
        d.dataset, limit=d.limit, n_shots=d.n_shots, seed=config.seed, source=d.source, path=d.path
    )
    placed = take_shard(records, d.shard, key=lambda r: r.id)
    for _, r in placed:
        try:
            fingerprint(r.to_dict())
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"{d.dataset}: question {r.id!r} holds text that cannot be encoded as UTF-8 "
                f"({exc.reason}: {exc.object[exc.start : exc.end]!r}); fix the data file"
            ) from exc
    local = None if d.source == "online" else datasets.local_path(d.dataset, d.path)
    sha = None if local is None else sha256_file(local)
    data = dataclasses.replace(
        d,
        source=d.source if sha is None else "local",
        path=None if local is None else repo_relative(local),
        sha256=sha,
    )
    return data, Questions(placed, len(records))


def sample_questions(config: RunConfig) -> tuple[DataSettings, Questions[SampleItem]]:
    """The questions of a ``score-samples`` run, read from its input file (``config.data.path``, JSON lines, see
    :func:`shapley.pipeline.data.samples.read_samples_file`), and its data settings with the input's path
    (relative to the repository) and fingerprint filled in, and the model label left open (``external``)."""
    d = config.data
    path = Path(str(d.path))
    every = read_samples_file(path, n_samples=d.n_samples, limit=d.limit, reference_field=d.reference_field)
    placed = take_shard(every, d.shard, key=lambda it: it.id)
    data = dataclasses.replace(
        d,
        path=repo_relative(path),
        sha256=sha256_file(path),
        source="file",
        model_label=d.model_label or EXTERNAL_MODEL,
    )
    return data, Questions(placed, len(every))


def shard_of(qid: str, k: int) -> int:
    """The shard (0..k-1) of question id ``qid``: the first 8 bytes of SHA-256(id, UTF-8), big-endian, mod k
    (``k >= 1``, as the ``--shard`` setting is checked).

    Examples:
        >>> [shard_of(f"q{i}", 3) for i in range(8)]  # fixed: the split never changes between versions
        [0, 1, 2, 1, 2, 0, 1, 1]
        >>> shard_of("anything", 1)
        0
    """
    digest = hashlib.sha256(str(qid).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % k


def take_shard(items: Sequence[T], shard: str | None, key: Callable[[T], str]) -> list[tuple[int, T]]:
    """``(position, item)`` for the items of ``shard`` (``"I/K"``, as the data settings hold it; ``None``: all),
    ``position`` counted in ``items`` (the questions after ``--limit``), order kept."""
    pairs = list(enumerate(items))
    if shard is None:
        return pairs
    i, k = (int(part) for part in shard.split("/"))
    return [(pos, it) for pos, it in pairs if shard_of(key(it), k) == i]
