"""The code blocks of book/integrations.md run in the environment they are written for: a block whose first line
is ``# lm-polygraph`` runs in .venv-lm-polygraph, ``# uqlm`` in .venv-uqlm (each skips elsewhere)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "book" / "integrations.md"
BLOCKS = re.findall(r"```python\n(# (lm-polygraph|uqlm)\n.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
PEER = {"lm-polygraph": "lm_polygraph", "uqlm": "uqlm"}


def test_the_page_has_blocks_for_both():
    assert {env for _, env in BLOCKS} == {"lm-polygraph", "uqlm"}


@pytest.mark.parametrize(("code", "env"), BLOCKS, ids=[f"{env}-{k}" for k, (_, env) in enumerate(BLOCKS)])
def test_code_block_runs(code, env):
    if importlib.util.find_spec(PEER[env]) is None:
        pytest.skip(f"{env} is not installed in this environment")
    exec(compile(code, f"{PAGE}:{env}", "exec"), {})
