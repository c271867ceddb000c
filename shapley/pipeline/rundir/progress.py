"""The progress-bar class the pipeline uses: tqdm's notebook bar where ``ipywidgets`` is installed, its text bar
otherwise.

``tqdm.auto`` makes the same choice, but in a Jupyter kernel without ``ipywidgets`` it first emits a
``TqdmWarning`` ("IProgress not found") on stderr, which then shows in every executed notebook page. The
libraries the pipeline loads (huggingface_hub, transformers, datasets) import ``tqdm.auto`` themselves, so this
module imports it once, with that one warning (the text bar is the intended fallback) silenced; later imports
reuse the module and warn no more.
"""

from __future__ import annotations

import warnings
from importlib.util import find_spec

from tqdm.std import TqdmWarning, tqdm

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
    from tqdm import auto as _auto

if find_spec("ipywidgets") is not None:  # pragma: no cover - not installed in the project's environment
    tqdm = _auto.tqdm

__all__ = ["tqdm"]
