"""Progress bars: never ``tqdm.auto`` directly, which warns (TqdmWarning on stderr) in a Jupyter kernel without
ipywidgets, and so in every executed notebook page."""

from __future__ import annotations

import re
from importlib.util import find_spec
from pathlib import Path

import pytest
import tqdm.std

from shapley.pipeline.rundir import progress

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


_KERNEL = """
import sys, types, warnings
shell = type("ZMQInteractiveShell", (), {})()  # what tqdm.autonotebook takes for a Jupyter kernel
ipython = types.ModuleType("IPython")
ipython.get_ipython = lambda: shell
sys.modules["IPython"] = ipython
sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    if FIRST:
        import shapley.pipeline.rundir.progress
    import huggingface_hub.utils.tqdm  # imports tqdm.auto, as transformers and datasets do
print(sum("IProgress not found" in str(w.message) for w in caught))
"""


def test_in_a_kernel_without_ipywidgets_no_tqdm_warning_once_the_package_is_imported():
    import os
    import subprocess
    import sys

    if find_spec("ipywidgets") is not None:
        pytest.skip("the warning only exists without ipywidgets")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    counts = [
        subprocess.run(
            [sys.executable, "-c", f"FIRST = {first}\n{_KERNEL}"], capture_output=True, text=True, env=env, check=True
        ).stdout.strip()
        for first in (False, True)
    ]
    assert counts == ["1", "0"]  # the simulated kernel does warn without the package's import first
