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


#: the largest value each count-like argument of the benchmarks takes (the pipeline's own bounds where it has one:
#: ``n_samples`` <= 1000, ``max_new_tokens`` <= 8192); beyond it a run would end in a memory error, not a measurement
UPPER_BOUNDS = {
    "questions": 10_000,
    "nli_questions": 10_000,
    "e2e_questions": 10_000,
    "samples": 1000,
    "nli_samples": 1000,
    "max_new_tokens": 8192,
    "new_tokens": 8192,
    "repeats": 100,
    "reference_repeats": 100,
    "rows_per_batch": 65_536,
    "batch_size": 65_536,
    "threads": os.cpu_count() or 1,
}


def check_counts(parser: argparse.ArgumentParser, args: argparse.Namespace, low: dict[str, int]) -> None:
    """``parser.error`` (exit 2, one line) unless each argument ``low`` names (dest -> least value) is unset or in
    ``low[dest]..UPPER_BOUNDS[dest]``; called before any work."""
    for dest, least in low.items():
        value = getattr(args, dest)
        high = UPPER_BOUNDS[dest]
        if value is not None and not least <= value <= high:
            parser.error(f"--{dest.replace('_', '-')} must be in {least}..{high}; got {value}")


def check_device(parser: argparse.ArgumentParser, device: str | None) -> None:
    """``parser.error`` unless ``device`` is None or a torch device this machine has (``cpu``, ``cuda``,
    ``cuda:N`` within the GPUs present, ``mps`` where available)."""
    if device is None:
        return
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        parser.error(f"--device must be a torch device such as cpu or cuda; got {device!r}")
    if dev.type == "cuda" and (not torch.cuda.is_available() or (dev.index or 0) >= torch.cuda.device_count()):
        parser.error(f"--device {device}: no such CUDA device on this machine")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        parser.error(f"--device {device}: MPS is not available on this machine")
    if dev.type not in ("cpu", "cuda", "mps"):
        parser.error(f"--device must be cpu, cuda or mps; got {device!r}")


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
