"""Issue 38, 5: text from benchmark files (CPU name, device, date, command, targets_met keys) is escaped where it
meets the book's HTML or Markdown (:mod:`shapley.companion.costs`)."""

from __future__ import annotations

import json
import re

import pytest

from shapley.companion import costs
from tests.companion.test_escaping import HOSTILE, _assert_inert

MARKDOWN_HOSTILE = ("**bold**", "[link](http://x)", "`code`", "{math}`x`", "<img src=x onerror=alert(1)>", "a\n\n# H")


def _page_file(tmp_path, text: str) -> None:
    meta = {
        "date": text,
        "machine": {"cpu": text, "cores": text},
        "command": text,
        "trial": None,
        "load_average_before": [0.1, 0.1, 0.1],
        "load_average_after": [1.1, 0.1, 0.1],
        "rows": [{"page": text, "seconds": 1.0, "target_s": 60, "target_met": True}],
    }
    (tmp_path / costs.PAGE_TIMES_FILE).write_text(json.dumps(meta))


@pytest.mark.parametrize("text", HOSTILE)
def test_page_times_html_escapes_the_date_cpu_and_cores_of_the_file(tmp_path, text):
    _page_file(tmp_path, text)
    html = costs.page_times_html(tmp_path)
    _assert_inert(html)
    assert "<!--" not in html and "<script>" not in html and "<style>" not in html


def _unescaped(md: str) -> str:
    """``md`` with the code spans and backslash escapes removed: what would be read as markup."""
    md = re.sub(r"\\.", "", md)  # (no test value holds a backslash: the escapes are all ours)
    return re.sub(r"(`+) .*? \1|(`+)[^` ].*?\2", "", md)


@pytest.mark.parametrize("text", HOSTILE + MARKDOWN_HOSTILE)
def test_markdown_from_benchmark_fields_renders_as_text(text):
    def sentence(value: str) -> str:
        meta = {
            "device": value,
            "date": value,
            "command": value,
            "load_average_before": [0.1],
            "load_average_after": [1.1],
        }
        return costs.measured_on(meta, "results/x.json", "python benchmarks/x.py")

    def markup(md: str) -> str:  # the markup characters left once code spans and escaped characters are taken out
        return re.sub(r"[^<>\[\]{}`*_&!#|~$()]", "", _unescaped(md))

    md = sentence(text)
    assert "\n" not in md and markup(md) == markup(sentence("x")), md
    assert costs.md_text(text).count("\n") == 0 and "<" not in _unescaped(costs.md_text(text))
    code = costs.md_code(text)
    assert code.startswith("`") and _unescaped(code) == ""


@pytest.mark.parametrize("text", HOSTILE)
def test_targets_met_keys_are_escaped(text):
    html = costs.targets_met_html({"targets_met": {text: True, "x": text}})
    _assert_inert(f"<p>{html}</p>")
    assert "<" not in html


def test_a_load_average_that_is_not_a_number_is_refused_naming_it():
    with pytest.raises(ValueError, match="load average.*'<b>'"):
        costs.load_note({"load_average_before": ["<b>"]}, "f.json")
