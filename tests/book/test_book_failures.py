"""A page whose execution failed fails every build: ``scripts/book_failures.py`` finds it in the jupyter-cache.

jupyter-book caches only successful executions; a failure leaves a traceback on the page's project record,
while Sphinx keeps the failed page and would serve it on the next incremental build (issue 23). The detector
must name the page and the cell; ``scripts/build_book.sh`` runs it before and after every build.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
DETECTOR = ROOT / "scripts" / "book_failures.py"

PAGE = """---
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A page

```{code-cell} ipython3
x = 1
```

```{code-cell} ipython3
y = x + 1
raise KeyboardInterrupt("stands in for a cell stopped at the timeout")
```
"""


def _failed_cache(tmp_path: Path) -> tuple[Path, Path]:
    """A jupyter-cache holding one page whose real execution (nbclient, as myst-nb runs it) failed."""
    from jupyter_cache import get_cache
    from jupyter_cache.cache.db import NbProjectRecord
    from jupyter_cache.executors.utils import single_nb_execution

    page = tmp_path / "page.md"
    page.write_text(PAGE)
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(PAGE.split("```")[3].split("\n", 1)[1])]
    result = single_nb_execution(nb, cwd=str(tmp_path), timeout=60, allow_errors=False)
    assert result.err is not None and result.exc_string
    cache = get_cache(str(tmp_path / "cache"))
    record = cache.add_nb_to_project(str(page), read_data={"name": "jupytext", "type": "plugin"})
    NbProjectRecord.set_traceback(record.uri, result.exc_string, cache.db)
    return page, tmp_path / "cache"


def _detect(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(DETECTOR), "--cache", str(cache), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_a_failed_page_is_reported_with_its_cell_and_touched(tmp_path):
    page, cache = _failed_cache(tmp_path)
    os.utime(page, (1, 1))
    out = _detect(cache, "--touch")
    assert out.returncode == 1, out.stdout + out.stderr
    line = PAGE.splitlines().index("y = x + 1") + 1  # the failing cell's first line in the page
    assert f"page.md:{line} failed in the cell starting 'y = x + 1': KeyboardInterrupt: stands in" in out.stdout
    assert page.stat().st_mtime > 1  # touched: the next build reads and executes it again
    from jupyter_cache import get_cache
    from jupyter_cache.cache.db import NbProjectRecord

    NbProjectRecord.remove_tracebacks(
        [r.pk for r in get_cache(str(cache)).list_project_records()], get_cache(str(cache)).db
    )
    again = _detect(cache)  # a later successful execution clears the traceback
    assert again.returncode == 0 and again.stdout == ""


def test_no_cache_is_no_failure(tmp_path):
    assert _detect(tmp_path / "absent").returncode == 0


def test_the_build_script_checks_the_cache_after_the_build_and_fails_last():
    script = (ROOT / "scripts" / "build_book.sh").read_text()
    build = script.index('"$JB" build')
    assert script.index("book_failures.py") < build < script.index('"${FAILURES[@]}" >"$ROOT/_build/failed_pages.txt"')
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        assert f"{var}=${{{var}:-1}}" in script


def test_a_timed_out_cell_is_named_with_the_timeout(tmp_path):
    """The issue's case: a cell stopped at the execution timeout (nbclient's CellTimeoutError, for real)."""
    from jupyter_cache.executors.utils import single_nb_execution

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import book_failures
    finally:
        sys.path.pop(0)
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nb.cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(60)")]
    result = single_nb_execution(nb, cwd=str(tmp_path), timeout=1, allow_errors=False)
    page = tmp_path / "slow.md"
    page.write_text("# Slow\n\n```{code-cell} ipython3\nimport time\ntime.sleep(60)\n```\n")
    f = book_failures.parse_failure(page, result.exc_string)
    assert (f.line, f.cell) == (4, "import time")
    assert f.error.startswith("nbclient.exceptions.CellTimeoutError: A cell timed out")


def test_a_cache_that_is_a_file_or_no_database_exits_2_with_one_line(tmp_path):
    """Issue 38's class rule (every argument checked by its parser; no traceback): ``--cache`` naming a file was
    accepted and ended in a database traceback."""
    a_file = tmp_path / "cache"
    a_file.write_text("not a folder")
    refused = _detect(a_file)
    assert refused.returncode == 2 and "is not a folder" in refused.stderr and "Traceback" not in refused.stderr
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / "global.db").write_text("not a database")
    unreadable = _detect(folder)
    assert unreadable.returncode == 2 and unreadable.stderr.count("\n") == 1 and "cannot read" in unreadable.stderr
