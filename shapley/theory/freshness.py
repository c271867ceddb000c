"""Freshness records for committed results: what a result was computed from, so that a page or a test can tell
whether it is stale.

A record holds the ``settings`` a computation ran with and a ``code_digest``: the SHA-256 of the source files
of the modules that determine its numbers. A result is fresh when both match the current ones;
:func:`stale_reasons` says, in words, what differs. JSON in, JSON out (no numbers of their own).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def module_digest(modules: Sequence[str]) -> str:
    """SHA-256 over the source bytes of ``modules`` (dotted names, in the given order), with their names.

    Examples:
        >>> len(module_digest(["shapley.theory.freshness"]))
        64
    """
    h = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"no source file for module {name!r}")
        h.update(name.encode() + b"\0" + Path(spec.origin).read_bytes() + b"\0")
    return h.hexdigest()


def freshness(settings: Mapping[str, Any], modules: Sequence[str]) -> dict[str, Any]:
    """The freshness block of a record: the settings (as JSON would round-trip them), the modules and their
    digest."""
    return {
        "settings": json.loads(json.dumps(settings)),
        "modules": list(modules),
        "code_digest": module_digest(modules),
    }


def stale_reasons(record: Mapping[str, Any], settings: Mapping[str, Any], modules: Sequence[str]) -> list[str]:
    """Why ``record`` (a dict with a ``freshness`` block) is stale against these settings and modules; [] when
    it is fresh.

    Examples:
        >>> mods = ["shapley.theory.freshness"]
        >>> rec = {"freshness": freshness({"seed": 0}, mods)}
        >>> stale_reasons(rec, {"seed": 0}, mods), stale_reasons(rec, {"seed": 1}, mods)
        ([], ['settings differ: recorded {"seed": 0}, now {"seed": 1}'])
    """
    block = record.get("freshness")
    if not isinstance(block, Mapping):
        return ["the record has no freshness block"]
    reasons = []
    now = json.loads(json.dumps(settings))
    if block.get("settings") != now:
        was, new = json.dumps(block.get("settings"), sort_keys=True), json.dumps(now, sort_keys=True)
        reasons.append(f"settings differ: recorded {was}, now {new}")
    if list(block.get("modules", [])) != list(modules):
        reasons.append(f"modules differ: recorded {block.get('modules')}, now {list(modules)}")
    elif block.get("code_digest") != module_digest(modules):
        reasons.append(f"the code of {', '.join(modules)} changed since the record was computed")
    return reasons


def load_record(path: str | Path, record_file: str, command: str) -> dict[str, Any]:
    """The JSON record at ``path``: the file itself or the folder holding ``record_file``.

    A missing record raises ``FileNotFoundError`` naming the file and the ``command`` that writes it.
    """
    p = Path(path)
    p = p / record_file if p.is_dir() else p
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: run `make theory-results` ({command})")
    record: dict[str, Any] = json.loads(p.read_text())
    return record


def write_record(path: str | Path, record: Mapping[str, Any]) -> Path:
    """Write ``record`` as indented JSON to ``path`` (its folder made when missing); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(record, indent=1) + "\n")
    return p


def results_folder_main(
    argv: Sequence[str] | None,
    doc: str | None,
    compute: Callable[[Path], Mapping[str, Any]],
    record_path: str,
    summary: Callable[[Mapping[str, Any]], str],
) -> int:
    """The command line of a record computed from a results folder: ``--results FOLDER`` (default ``results``),
    ``compute(FOLDER)`` written to ``FOLDER/record_path``, one line printed: the path, the seconds, ``summary``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--results", type=Path, default=Path("results"), help="results folder (default results)")
    args = parser.parse_args(argv)
    record = compute(args.results)
    path = write_record(args.results / record_path, record)
    print(f"wrote {path} in {record['seconds']} s: {summary(record)}")
    return 0
