"""The progress-bar class the pipeline uses: tqdm's notebook bar where ``ipywidgets`` is installed, its text bar
otherwise. (``tqdm.auto`` makes the same choice, but in a Jupyter kernel without ``ipywidgets`` it first emits a
``TqdmWarning`` on stderr, which then shows in every executed notebook.)"""

from __future__ import annotations

from importlib.util import find_spec

if find_spec("ipywidgets") is not None:  # pragma: no cover - not installed in the project's environment
    from tqdm.auto import tqdm
else:
    from tqdm.std import tqdm

__all__ = ["tqdm"]
