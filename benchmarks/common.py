"""What every benchmark script shares: where it may write, and the machine's load around a run.

A *trial* run (``--tiny``, ``--quick``, a subset of the pages) checks a script and measures nothing the performance
page may show. It writes under :data:`TRIAL_DIR` unless told otherwise and never under ``results/``, where the
committed measurements live; every file records its mode as ``"trial"`` (``None`` for a measurement), which the
page's reader (:func:`shapley.companion.costs.load_benchmark`) refuses. The output is checked when the arguments
are parsed (exit 2, before any work).
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
TRIAL_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "shapley" / "benchmark-trials"
"""A private folder under the user's cache (never a fixed name in the shared temporary folder); :func:`output`
refuses it when another user owns it or it is a link."""


def _private(parser: argparse.ArgumentParser, folder: Path) -> None:
    """``parser.error`` unless ``folder`` (the trial folder) and its parent under the user's cache are, where they
    exist, real folders the user owns: a link, or another user's folder, could send a trial run's files
    elsewhere."""
    for part in (folder.parent, folder):
        if not os.path.lexists(part):
            continue
        if part.is_symlink() or not part.is_dir():
            parser.error(f"{part} is a link or not a folder; a trial run writes only into a private folder")
        if part.stat().st_uid != os.getuid():
            parser.error(f"{part} is owned by another user; a trial run writes only into the user's own folder")


def output(parser: argparse.ArgumentParser, given: Path | None, default: Path, trial: str | None) -> Path:
    """Where a benchmark writes: ``given``, else ``default`` (under ``results/``), or for a ``trial`` run the same
    name under :data:`TRIAL_DIR`. ``parser.error`` (exit 2) when a trial run would write under ``results/`` or the
    path cannot be written: an existing folder in place of a file (or the reverse, for a folder ``default``), or a
    nearest existing ancestor that is not a writable folder."""
    if given is None:
        if trial:
            _private(parser, TRIAL_DIR)
        given = TRIAL_DIR / default.relative_to(RESULTS) if trial else default
    path = given.resolve()
    if trial and path.is_relative_to(RESULTS):
        parser.error(f"a {trial} run measures nothing: it may not write under {RESULTS} ({path}); omit the path")
    folder = default.suffix == ""
    if path.exists() and path.is_dir() != folder:
        parser.error(f"{path} exists and is not a {'folder' if folder else 'file'}")
    ancestor = path if folder else path.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        parser.error(f"cannot write {path}: {ancestor} is not a writable folder")
    return path


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says of it."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    names = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")]
    return names[0] if names else platform.processor() or platform.machine()


def load_average() -> list[float]:
    """The machine's load average over 1, 5 and 15 minutes (processes running or waiting, all cores together)."""
    return [round(x, 2) for x in os.getloadavg()]


def provenance(trial: str | None, load_before: list[float]) -> dict[str, Any]:
    """The keys every benchmark file carries: its trial mode (``None``: a measurement) and the load average
    before the run and now, after it."""
    return {"trial": trial, "load_average_before": load_before, "load_average_after": load_average()}
