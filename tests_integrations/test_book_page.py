"""The code blocks of book/integrations.md run in the environment they are written for: a block whose first line
is ``# lm-polygraph`` runs in .venv-lm-polygraph, ``# uqlm`` in .venv-uqlm (each skips elsewhere), and prints
exactly the ``text`` block that follows it on the page.

The book is built in the main environment, which has neither peer, so the page cannot execute these blocks; it
shows the output this test checks instead. After a change that alters an output, rerun with
``SHAPLEY_WRITE_PAGE_OUTPUTS=1`` (``make test-integrations``) to write the printed output into the page.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "book" / "integrations.md"
#: A block, its environment and the output block after it.
BLOCK = re.compile(r"```python\n(# (lm-polygraph|uqlm)\n.*?)```\n\n```text\n(.*?)```", flags=re.S)
BLOCKS = BLOCK.findall(PAGE.read_text(encoding="utf-8"))
PEER = {"lm-polygraph": "lm_polygraph", "uqlm": "uqlm"}


def printed(code: str, env: str) -> str:
    """What ``code`` prints when run on its own."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"{PAGE}:{env}", "exec"), {})
    return out.getvalue()


def test_the_page_has_blocks_for_both_each_followed_by_its_output():
    assert {env for _, env, _ in BLOCKS} == {"lm-polygraph", "uqlm"}
    assert len(BLOCKS) == PAGE.read_text(encoding="utf-8").count("```python\n# "), "a block without an output block"


@pytest.mark.parametrize(("code", "env", "shown"), BLOCKS, ids=[f"{env}-{k}" for k, (_, env, _) in enumerate(BLOCKS)])
def test_code_block_prints_what_the_page_shows(code, env, shown):
    if importlib.util.find_spec(PEER[env]) is None:
        pytest.skip(f"{env} is not installed in this environment")
    out = printed(code, env)
    if os.environ.get("SHAPLEY_WRITE_PAGE_OUTPUTS") == "1" and out != shown:
        text = PAGE.read_text(encoding="utf-8")
        old = f"```python\n{code}```\n\n```text\n{shown}```"
        PAGE.write_text(text.replace(old, f"```python\n{code}```\n\n```text\n{out}```"), encoding="utf-8")
        shown = out
    assert out == shown, f"the block prints\n{out}\nbut the page shows\n{shown}(SHAPLEY_WRITE_PAGE_OUTPUTS=1 writes it)"
