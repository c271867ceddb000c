"""Page records: the committed outcome of each page computation that takes longer than a page should
(``make theory-results``; part of ``make results``), and whether it is still fresh.

A record is declared once, as a :class:`PageRecord` in the module that computes it; ``python -m MODULE`` writes it
(:meth:`PageRecord.main`), and a page only reads it (:meth:`PageRecord.load`) and says whether it is stale
(:meth:`PageRecord.status`). Each record holds a ``freshness`` block: the ``settings`` it ran with, the SHA-256 of
the ``code`` of each module that determines its numbers, and that of each of its ``inputs``, the files it was
computed from (by path under the results folder). Inputs are files git would commit, so that a clean clone finds
every record fresh.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

RESULTS = Path("results")
"""The results folder, relative to the repository root (where ``make`` runs)."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_digests(modules: Iterable[str]) -> dict[str, str]:
    """The SHA-256 of the source file of each of ``modules`` (dotted names), by name.

    Examples:
        >>> [len(sha) for sha in source_digests(["shapley.theory.page_records"]).values()]
        [64]
    """
    digests = {}
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"no source file for module {name!r}")
        digests[name] = _sha256(Path(spec.origin))
    return digests


def committed_files(folder: Path) -> list[str]:
    """The files under ``folder`` (paths relative to it) that git would commit: tracked, or new and not ignored.
    Outside a git repository, every file but hidden ones (a run's ``.lock``)."""
    git = ["git", "-C", str(folder), "ls-files", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(git, capture_output=True, text=True)
    if listed.returncode == 0:
        return sorted(set(listed.stdout.splitlines()))
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name[0] != ".")


def _plain(value: Any) -> Any:
    """A numpy array or scalar as JSON holds it (the ``default`` of ``json.dumps``)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def timed(compute: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    """``compute(*args, **kwargs)`` and the seconds it took (what a record says about its computations)."""
    start = time.perf_counter()
    value = compute(*args, **kwargs)
    return value, time.perf_counter() - start


@dataclass(frozen=True)
class PageRecord:
    """One committed page record: where it lives, what determines it and how it is computed.

    Examples:
        >>> toy = PageRecord("theory/toy.json", "toy", ("shapley.theory.page_records",), lambda settings, results: {},
        ...                  lambda record: "", settings={"x": 1})
        >>> record = {"freshness": toy.freshness(RESULTS)}
        >>> toy.stale_reasons(record, RESULTS), toy.command
        ([], 'python -m toy')
        >>> toy.stale_reasons({"freshness": {**record["freshness"], "settings": {"x": 2}}}, RESULTS)
        ['settings differ: recorded {"x": 2}, now {"x": 1}']
    """

    path: str
    """The record's path under the results folder, e.g. ``theory/psd_searches.json``."""
    module: str
    """The module that declares it, which ``python -m`` runs to write it (``__spec__.name`` there: ``__name__``
    reads ``'__main__'`` under ``python -m``)."""
    modules: tuple[str, ...]
    """The modules whose code determines its numbers."""
    compute: Callable[[Mapping[str, Any], Path], dict[str, Any]]
    """(settings, results folder) -> the record's numbers, ready for JSON."""
    summary: Callable[[Mapping[str, Any]], str]
    """The record -> what ``make`` prints after writing it."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """The settings the committed record must have been computed with."""
    inputs: Callable[[Path], Iterable[str]] = lambda results: ()
    """The results folder -> the committed files (paths under it) the numbers are computed from."""

    @property
    def command(self) -> str:
        """The command that writes the record under ``results``."""
        return f"python -m {self.module}"

    def freshness(self, results: Path, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The freshness block of the record computed now from ``results`` with ``settings`` (default
        :attr:`settings`; as JSON reads them back)."""
        return {
            "settings": json.loads(json.dumps(self.settings if settings is None else settings)),
            "code": source_digests(self.modules),
            "inputs": {path: _sha256(results / path) for path in self.inputs(results)},
        }

    def write(self, results: str | os.PathLike[str] = RESULTS, settings: Mapping[str, Any] | None = None) -> Path:
        """Compute the record from ``results`` with ``settings`` (default :attr:`settings`) and write it, with
        the command, its freshness block and the seconds the computation took, to the file :attr:`path` under
        ``results``."""
        root, settings = Path(results), self.settings if settings is None else settings
        block = self.freshness(root, settings)  # the inputs as they are read
        numbers, seconds = timed(self.compute, settings, root)
        record = {"command": self.command, "freshness": block, "seconds": round(seconds, 1)}
        path = root / self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**record, **numbers}, indent=1, default=_plain) + "\n")
        return path

    def load(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """The record at ``path``: the file itself or the folder holding it. A missing record raises
        ``FileNotFoundError`` naming the command that writes it."""
        p = Path(path)
        p = p / Path(self.path).name if p.is_dir() else p
        if not p.is_file():
            raise FileNotFoundError(f"{p} is missing: run `make theory-results` ({self.command})")
        record: dict[str, Any] = json.loads(p.read_text())
        return record

    def stale_reasons(self, record: Mapping[str, Any], results: str | os.PathLike[str]) -> list[str]:
        """Why ``record`` no longer stands for what the code computes now from the results folder ``results``:
        other settings, or changed code or inputs; [] when it is fresh."""
        was = record.get("freshness")
        if not isinstance(was, Mapping):
            return ["the record has no freshness block"]
        now, reasons = self.freshness(Path(results)), []
        if was.get("settings") != now["settings"]:
            recorded, current = (json.dumps(s, sort_keys=True) for s in (was.get("settings"), now["settings"]))
            reasons.append(f"settings differ: recorded {recorded}, now {current}")
        for part in ("code", "inputs"):
            old, new = was.get(part, {}), now[part]
            changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
            if changed:
                reasons.append(f"{part} changed since the record was computed: {', '.join(changed)}")
        return reasons

    def fresh(self, results: str | os.PathLike[str]) -> dict[str, Any] | None:
        """The record under the results folder ``results`` when it is there and fresh, else None."""
        path = Path(results) / self.path
        record = self.load(path) if path.is_file() else None
        return record if record is not None and not self.stale_reasons(record, results) else None

    def status(self, record: Mapping[str, Any], results: str | os.PathLike[str]) -> str:
        """The line a page prints about ``record``: where it is, the seconds it took, its command, and fresh or
        STALE with the reasons."""
        stale = self.stale_reasons(record, results)
        state = "fresh" if not stale else "STALE (run make theory-results): " + "; ".join(stale)
        return f"results/{self.path} ({record['seconds']:.0f} s when computed; `{record['command']}`): {state}"

    def main(self) -> int:
        """``python -m MODULE``: write the record computed from the results folder (:data:`RESULTS`) to its
        :attr:`path` there, and print the path, the seconds it took and its summary."""
        path = self.write()
        record = self.load(path)
        print(f"wrote {path} in {record['seconds']} s: {self.summary(record)}")
        return 0
