"""Reader-facing table headers are words, not column names: no snake_case header in a ``rename(columns={...})`` or a
``set_axis([...])`` of the package's or the pages' tables (the frames the package builds are checked rendered, in
tests/companion/test_escaping.py), and no page shows a bare ``pd.DataFrame(...)`` (index column, raw headers)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*ROOT.glob("shapley/companion/*.py"), *ROOT.glob("notebooks/*.md"), *ROOT.glob("book/*.md")]
RENAME = re.compile(r"rename\(\s*columns\s*=\s*\{(.*?)\}\s*\)", re.S)
HEADER = re.compile(r'"[^"]*":\s*(f?)"([^"]*)"')
SET_AXIS = re.compile(r"set_axis\(\s*\[(.*?)\]", re.S)
LABEL = re.compile(r'"([^"]*)"')
PENDING = {"notebooks/psd.md"}  # its tables are reworked on branch i23a (issue 23): drop this line once merged
BARE_FRAME = re.compile(r"^pd\.DataFrame\(.*\)\s*$")
"""A cell line that displays a DataFrame as it is (index column, raw headers); ``.style.hide(axis="index")``
after it, or a table of the companion, is what pages use."""
SNAKE = re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b")


def _without_code(label: str) -> str:
    return re.sub(r"<code>.*?</code>|`[^`]*`|\{[^}]*\}", "", label)


def _headers(text: str) -> list[str]:
    renamed = [m.group(2) for block in RENAME.findall(text) for m in HEADER.finditer(block)]
    return renamed + [m.group(1) for block in SET_AXIS.findall(text) for m in LABEL.finditer(block)]


def test_no_snake_case_column_labels():
    found = {p: _headers(p.read_text(encoding="utf-8")) for p in SOURCES}
    assert sum(map(len, found.values())) > 30  # the check reads the tables' headers
    bad = [f"{p.relative_to(ROOT)}: {h}" for p, hs in found.items() for h in hs if SNAKE.search(_without_code(h))]
    assert bad == [], "\n".join(bad)


def test_no_page_ends_a_cell_with_a_bare_dataframe():
    bad = [
        f"{p.relative_to(ROOT)}:{k + 1}: {line}"
        for p in ROOT.glob("notebooks/*.md")
        if str(p.relative_to(ROOT)) not in PENDING
        for k, line in enumerate(p.read_text(encoding="utf-8").splitlines())
        if BARE_FRAME.match(line) and ".hide(" not in line
    ]
    assert bad == [], "\n".join(bad)


def test_the_header_checks_catch_what_they_should():
    assert SNAKE.search(_without_code("AUROC of beta_table1")) and not SNAKE.search(_without_code("<code>a_b</code>"))
    assert _headers('x.rename(columns={"auroc_lo": "auroc_lo",\n "n": f"{k} n"})') == ["auroc_lo", "{k} n"]
    assert _headers('x.set_axis(\n ["Method", f"{k} auroc_lo"], axis=1)') == ["Method", "{k} auroc_lo"]
    assert BARE_FRAME.match("pd.DataFrame(rows)") and not BARE_FRAME.match("frame = pd.DataFrame(rows)")
