"""Issue 38, 5: text from benchmark files (CPU name, device, date, command) is escaped where it meets the book's
Markdown (:mod:`shapley.companion.costs`); its tables are escaped by the one renderer (test_escaping.py)."""

from __future__ import annotations

import re

import pytest

from shapley.companion import costs
from tests.companion.test_escaping import HOSTILE

MARKDOWN_HOSTILE = ("**bold**", "[link](http://x)", "`code`", "{math}`x`", "<img src=x onerror=alert(1)>", "a\n\n# H")


def _unescaped(md: str) -> str:
    """``md`` with the code spans and backslash escapes removed: what would be read as markup."""
    md = re.sub(r"\\.", "", md)  # (no test value holds a backslash: the escapes are all ours)
    return re.sub(r"(`+) .*? \1|(`+)[^` ].*?\2", "", md)


@pytest.mark.parametrize("text", HOSTILE + MARKDOWN_HOSTILE)
def test_markdown_from_benchmark_fields_renders_as_text(text):
    assert costs.md_text(text).count("\n") == 0 and "<" not in _unescaped(costs.md_text(text))
    assert re.sub(r"[^<>\[\]{}`*_&!#|~$()]", "", _unescaped(costs.md_text(text))) == ""
    code = costs.md_code(text)
    assert code.startswith("`") and "\n" not in code and _unescaped(code) == ""


def test_a_load_average_that_is_not_a_number_is_refused():
    with pytest.raises(ValueError, match="'<b>'"):
        costs.load_note({"load_average_before": ["<b>"]}, "f.json")
