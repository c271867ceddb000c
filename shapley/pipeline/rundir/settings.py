"""Where the package finds local data and keeps its caches.

Both are plain settings read from environment variables, so that nothing is hidden:

* ``SHAPLEY_DATA_DIR``: folder with the local dataset files (see ``../shared/data/SOURCES.md``).
  Default: ``<repo>/../shared/data`` when it exists.
* ``SHAPLEY_CACHE_DIR``: folder for model conversions and entailment caches.
  Default: ``<repo>/.cache`` for a source checkout, else ``~/.cache/shapley``.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
"""The source checkout (or site-packages) folder that holds the ``shapley`` package."""


def data_dir() -> Path:
    """Folder holding the local dataset files; raises ``FileNotFoundError`` naming the setting."""
    env = os.environ.get("SHAPLEY_DATA_DIR")
    path = Path(env) if env else (REPO_ROOT.parent / "shared" / "data")
    if not path.is_dir():
        raise FileNotFoundError(
            f"local data folder {path} does not exist; set SHAPLEY_DATA_DIR to the folder with the "
            "dataset files, or load from the online source instead"
        )
    return path


def cache_dir() -> Path:
    """Folder for caches (created on demand)."""
    env = os.environ.get("SHAPLEY_CACHE_DIR")
    if env:
        path = Path(env)
    elif (REPO_ROOT / "pyproject.toml").exists():
        path = REPO_ROOT / ".cache"
    else:
        path = Path.home() / ".cache" / "shapley"
    where = f"SHAPLEY_CACHE_DIR={env}" if env else "the cache folder"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"{where}: {path} (or a folder above it) is a file, not a folder; name a folder") from None
    except OSError as exc:
        raise ValueError(f"{where}: cannot create {path} ({exc.strerror or exc})") from None
    return path
