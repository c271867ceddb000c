"""The theory notebooks and the experiment page (MyST markdown) ran top to bottom on CPU, cleanly.

They are read as the book's build executed them (its execution cache, ``_build/.jupyter_cache``), so that
``make test`` runs each page once. How long they take is measured by benchmarks/bench_notebooks.py (goal: 10 s a
page, 90 s for the experiment page), never asserted here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.book.test_book import ROOT

pytestmark = [pytest.mark.book, pytest.mark.slow]


@pytest.mark.parametrize("name", ["psd", "properties", "mozart", "axioms", "experiment"])
def test_notebook_runs_cleanly(name: str, built: Path) -> None:
    """No error and no warning on stderr; every cell that calls a figure function shows its figure (the axioms
    page has tables only); every glued name in the text was computed. The experiment page (at its book size on
    CPU: the packaged SmolLM2's generation path and the real LLaMA-13B answers' scoring path) holds its
    parameters in its first code cell (papermill); the theory pages give their findings first."""
    import jupytext
    from jupyter_cache import get_cache

    page = jupytext.read(ROOT / "notebooks" / f"{name}.md")  # the text and the cells' tags: the cache keeps outputs
    cache = get_cache(str(built.parent / ".jupyter_cache"))
    record = cache.get_cached_project_nb(str(ROOT / "notebooks" / f"{name}.md"))
    assert record is not None, f"notebooks/{name}.md has no successful execution in the book's cache"
    nb = cache.get_cache_bundle(record.pk).nb
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    stderr = [o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stderr"]
    assert not [t for t in stderr if "Warning" in t], stderr
    figures = sum("_figure(" in c.source for c in page.cells if c.cell_type == "code")
    images = sum(o.get("output_type") == "display_data" and "image/png" in o.get("data", {}) for o in outputs)
    assert images >= max(figures, name == "experiment")
    source = "\n".join(c.source for c in page.cells if c.cell_type == "markdown")
    glued = {o["metadata"]["scrapbook"]["name"] for o in outputs if "scrapbook" in o.get("metadata", {})}
    used = {key.split(":")[0] for key in re.findall(r"\{glue:[a-z]+\}`([^`]*)`", source)}
    assert used <= glued, f"glued in the text but never computed: {sorted(used - glued)}"
    if name == "experiment":
        assert "parameters" in next(c for c in page.cells if c.cell_type == "code").metadata.get("tags", [])
    else:  # findings first: a glued finding before the first section, and the verdicts link to the claims' rows
        assert "{glue:" in source.split("\n## ", 1)[0] and "claims.html#claim-" in source


def test_the_cache_was_executed_with_this_code_and_these_results(built: Path) -> None:
    """The execution cache keys a page on its code cells only; the build records the digest of shapley/ and results/
    it executed with (scripts/build_book.sh) and starts clean when they change, so no page shows what older code or
    results computed."""
    import subprocess

    digest = subprocess.run(
        ["bash", "-c", "{ git ls-files -s shapley results; git diff HEAD --binary -- shapley results; } | sha256sum"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert (built.parent / ".inputs_digest").read_text().strip() == digest
