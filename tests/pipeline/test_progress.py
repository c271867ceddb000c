"""Progress bars: never ``tqdm.auto`` directly, which warns (TqdmWarning on stderr) in a Jupyter kernel without
ipywidgets, and so in every executed notebook page."""

from __future__ import annotations

import re
from importlib.util import find_spec
from pathlib import Path

import tqdm.std

from shapley.pipeline import progress

PACKAGE = Path(__file__).resolve().parents[2] / "shapley"


def test_no_module_imports_tqdm_auto_but_the_progress_module():
    pattern = re.compile(r"^\s*(from tqdm(\.auto|\.autonotebook)? import|import tqdm)", re.M)
    offenders = [
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "progress.py" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_without_ipywidgets_the_text_bar_is_used():
    if find_spec("ipywidgets") is None:
        assert progress.tqdm is tqdm.std.tqdm
    else:
        assert issubclass(progress.tqdm, tqdm.std.tqdm)
