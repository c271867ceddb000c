"""The theory notebooks and the experiment page (MyST markdown) ran top to bottom on CPU, cleanly.

They are read as the book's build executed them (``_build/jupyter_execute``: each notebook, and the values it
glued beside it), so that ``make test`` runs each page once. How long they take is measured by
benchmarks/bench_notebooks.py (goal: 10 s a page, 90 s for the experiment page), never asserted here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

pytestmark = [pytest.mark.book, pytest.mark.slow]


@pytest.mark.parametrize("name", ["psd", "properties", "mozart", "axioms", "experiment"])
def test_notebook_runs_cleanly(name: str, built: Path) -> None:
    """No error and no warning on stderr; every cell that calls a figure function shows its figure (the axioms
    page has tables only); every glued name in the text was computed. The experiment page (at its book size on
    CPU: the packaged SmolLM2's generation path and the real LLaMA-13B answers' scoring path) holds its
    parameters in its first code cell (papermill); the theory pages give their findings first."""
    executed = built.parent / "jupyter_execute" / "notebooks"
    nb = nbformat.read(executed / f"{name}.ipynb", as_version=4)
    glue = executed / f"{name}.glue.json"
    glued = set(json.loads(glue.read_text(encoding="utf-8"))) if glue.exists() else set()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    stderr = [o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
    assert not [t for t in stderr if "Warning" in t], stderr
    figures = sum("_figure(" in c.source for c in nb.cells if c.cell_type == "code")
    images = sum(o.get("output_type") == "display_data" and "image/png" in o.get("data", {}) for o in outputs)
    assert images >= max(figures, name == "experiment")
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    used = {key.split(":")[0] for key in re.findall(r"\{glue:[a-z]+\}`([^`]*)`", source)}
    assert used <= glued, f"glued in the text but never computed: {sorted(used - glued)}"
    if name == "experiment":
        assert "parameters" in next(c for c in nb.cells if c.cell_type == "code").metadata.get("tags", [])
    else:  # findings first: a glued finding before the first section, and the verdicts link to the claims' rows
        assert "{glue:" in source.split("\n## ", 1)[0] and "claims.html#claim-" in source
