"""One word for one thing in reader-facing prose: the paper's three "properties" are never called "axioms" (the
page that tests them for every estimator keeps its file name, notebooks/axioms.md, which readers never see)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.book.test_prose_numbers import prose_lines

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*ROOT.glob("book/*.md"), *ROOT.glob("notebooks/*.md"), ROOT / "README.md"]
HIDDEN = re.compile(r"`[^`]*`|\{doc\}`[^`]*`|\([^)]*\.md\)|\]\([^)]*\)")


def test_readers_read_properties_not_axioms():
    bad = [
        f"{p.relative_to(ROOT)}:{no}: {line.strip()}"
        for p in PAGES
        for no, line in prose_lines(p.read_text(encoding="utf-8"))
        if re.search(r"\baxiom", HIDDEN.sub("", line), re.I)
    ]
    assert bad == [], "\n".join(bad)
