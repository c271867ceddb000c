"""scripts/changed_sentences.py lists the prose sentences a commit range added or changed (issue 37's review step)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "changed_sentences.py"
spec = importlib.util.spec_from_file_location("changed_sentences", SCRIPT)
assert spec and spec.loader
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)

PAGE = """---
kernelspec:
  name: python3
---
# Title

First sentence. Second one
wraps? Third.

```{code-cell} ipython3
:tags: [remove-cell]
glue("x", 1.5)  # not prose. Never listed.
```

| a | b. |
|---|---|

:::{dropdown} Provenance
Inside a dropdown.
:::

- an item. Another sentence of it.
- a second item
"""


def test_prose_keeps_sentences_and_drops_code_tables_and_options():
    assert script.sentences(PAGE) == [
        "# Title",
        "First sentence.",
        "Second one wraps?",
        "Third.",
        "Inside a dropdown.",
        "- an item.",
        "Another sentence of it.",
        "- a second item",
    ]


def test_a_revision_that_does_not_exist_exits_2_with_one_line():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "no-such-revision"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no-such-revision" in done.stderr
