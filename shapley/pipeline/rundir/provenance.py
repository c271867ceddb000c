"""What produced a run: time, command line, package versions, git state (source-only dirt) and device.

What :mod:`shapley.pipeline.rundir.store` records in a run's ``config.json`` (``provenance`` and each invocation).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import importlib.metadata
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from shapley.pipeline.rundir.settings import REPO_ROOT

VERSIONED_PACKAGES = ("numpy", "scipy", "torch", "transformers", "sentence-transformers", "shapley-uncertainty")

SOURCE_PATHS: tuple[str, ...] = (
    "shapley",
    "pyproject.toml",
    "constraints.txt",
    "environment.yml",
    "Makefile",
    "scripts",
    "benchmarks",
)
"""What "the package's source" means for provenance (paths relative to the repository): a run is *dirty*
when ``git status`` reports a change to one of these, tracked or untracked (but not git-ignored). Everything
else (``results/``, where runs write, the book, notebooks, tests) never makes a run dirty."""

DIRTY_PATHS_SHOWN = 20
"""How many changed source paths provenance lists (``git.dirty_paths``, for diagnosis)."""

GIT_RUN: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 10}
"""How provenance runs git: output captured as text, at most 10 seconds a call."""


def package_versions(names: Iterable[str] = VERSIONED_PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (None if not installed)."""
    out: dict[str, str | None] = dict.fromkeys(names)
    for name in out:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out[name] = importlib.metadata.version(name)
    return out


def git_info(repo: str | os.PathLike[str] = REPO_ROOT) -> dict[str, Any]:
    """``{"commit", "dirty", "dirty_paths"}`` of the source checkout (None where git is unavailable).

    ``dirty`` is True when the package's source (:data:`SOURCE_PATHS`) differs from the commit: a tracked
    file changed, or a file git does not ignore was added there. Files elsewhere (the run's own outputs under
    ``results/`` included) never count. ``dirty_paths``: the first changed paths, for diagnosis.
    """
    out: dict[str, Any] = {"commit": None, "dirty": None, "dirty_paths": []}
    if not (Path(repo) / ".git").exists():
        return out
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        r = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], **GIT_RUN)
        if r.returncode == 0:
            out["commit"] = r.stdout.strip()
        status = ["status", "--porcelain", "--untracked-files=all", "--", *SOURCE_PATHS]
        s = subprocess.run(["git", "-C", str(repo), *status], **GIT_RUN)
        if s.returncode == 0:
            changed = [line[3:] for line in s.stdout.splitlines() if line.strip()]
            out["dirty"] = bool(changed)
            out["dirty_paths"] = changed[:DIRTY_PATHS_SHOWN]
    return out


def repo_relative(path: str | os.PathLike[str], repo: str | os.PathLike[str] = REPO_ROOT) -> str:
    """``path`` relative to the source checkout ``repo`` (``..`` where it lies outside it), so that provenance
    names no machine-specific absolute path; unchanged when ``repo`` is not a source checkout."""
    if not (Path(repo) / "pyproject.toml").exists():
        return str(path)
    # Lexical (abspath, not resolve): a data folder reached through a symbolic link keeps the name it was given.
    return os.path.relpath(os.path.abspath(path), os.path.abspath(repo))


def device_info() -> dict[str, Any]:
    """CPU model and count; CUDA device names when torch is already imported (it is never imported here)."""
    cpu = platform.processor() or None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    info: dict[str, Any] = {"cpu": cpu, "cpu_count": os.cpu_count(), "platform": platform.platform()}
    torch = sys.modules.get("torch")
    info["cuda"] = "not queried (torch not imported)"
    if torch is not None:
        try:
            cuda = torch.cuda
            info["cuda"] = [cuda.get_device_name(i) for i in range(cuda.device_count())] if cuda.is_available() else []
        except Exception as exc:  # noqa: BLE001 - provenance must never break a run
            info["cuda"] = f"error: {exc}"
    return info


def provenance(argv: Sequence[str] | None) -> dict[str, Any]:
    """What produced a run: time, command line ``argv`` (None: ``sys.argv``), versions, git commit, device; ``cwd``
    relative to the repository (:func:`repo_relative`)."""
    argv = list(sys.argv if argv is None else argv)
    return {
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "argv": argv,
        "command_line": shlex.join(argv),
        "cwd": repo_relative(os.getcwd()),
        "python": sys.version.split()[0],
        "versions": package_versions(),
        "git": git_info(),
        "device": device_info(),
    }
