"""No number typed by hand: every decimal number in the book's prose comes from a computation or the paper.

Scanned: the markdown of every page of ``_toc.yml`` outside code cells and fenced code blocks (inline code
and math included), and the note templates of the claims (``shapley.companion.claims``). A decimal
number there must be

* inserted from the cell that computes it: ``{glue:text}`key``` (MyST-NB glue), or printed by a cell;
* a number of the paper, marked ``[0.755]{.reported}`` and held in ``shapley.companion.reported``;
* a reference to a place in the paper ("Proposition 3.5", "Section 3.4", "Sec. 4"); or
* on the allow-list :data:`ALLOWED`, with its reason.

Also checked: headings carry no hand-made numbers (the book numbers them; "2.1.1. 1." is a double number).
Fast: reads sources only, builds nothing.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from tests.book.test_book import _reported_numbers, toc_pages

ROOT = Path(__file__).resolve().parents[2]

#: Decimal numbers allowed in prose as typed, each with its reason. Keep this list short.
ALLOWED: dict[str, str] = {
    "0.5": "beta = 0.5, the paper's default kernel scale (a setting); AUROC 0.5, chance (a definition)",
}

DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?!\.?\d|\w)")
"""A decimal number standing alone: not part of a version (2.13.0), a name (1.3B) or a dotted heading number."""

REPORTED_MARK = re.compile(r"\[([^\]]*)\]\{\.reported\}")
GLUE = re.compile(r"\{glue(?::\w+)?\}`[^`]*`")
PAPER_PLACE = re.compile(
    r"\b(?:Propositions?|Prop\.|Sections?|Sec\.|Appendix|Equations?|Eqs?\.|Properties|Property)\s+"
    r"\d+(?:\.\d+)*(?:\s*(?:,|and|or|–|-)\s*\d+(?:\.\d+)*)*"
)
HREF = re.compile(r'href="[^"]*"')
"""A link target (``claims.html#claim-prop-3.6``): a name, not a number."""
NUMBERED_HEADING = re.compile(r"^#{1,6}\s+\d+(?:\.\d+)*\.?\s")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of the prose of a MyST page: front matter, code cells and fenced blocks removed."""
    lines = text.splitlines()
    out: list[tuple[int, str]] = []
    start = 0
    if lines and lines[0].strip() == "---":
        start = next(k for k in range(1, len(lines)) if lines[k].strip() == "---") + 1
    fence: str | None = None
    for k in range(start, len(lines)):
        line = lines[k]
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
                fence = None
            continue
        out.append((k + 1, line))
    return out


def _blank(m: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))  # same length, line breaks kept: offsets still map to lines


def offending(text: str, known: set[float]) -> list[tuple[int, str]]:
    """(offset, number) of each decimal number of ``text`` that is neither glued, marked reported (and known),
    a place in the paper, nor allowed. A marked number the paper does not print is given as ``marked:<x>``."""
    bad = []
    for m in REPORTED_MARK.finditer(text):
        for tok in re.findall(r"-?\d+(?:\.\d+)?", m.group(1)):
            if not any(math.isclose(float(tok), k, abs_tol=1e-9) for k in known):
                bad.append((m.start(), f"marked:{tok}"))
    rest = PAPER_PLACE.sub(_blank, GLUE.sub(_blank, REPORTED_MARK.sub(_blank, HREF.sub(_blank, text))))
    bad += [(m.start(), m.group(0)) for m in DECIMAL.finditer(rest) if m.group(0).lstrip("-") not in ALLOWED]
    return sorted(bad)


def offending_numbers(text: str, known: set[float]) -> list[str]:
    """The offending numbers of :func:`offending`, in order."""
    return [tok for _, tok in offending(text, known)]


def _page_findings(page: str) -> list[str]:
    known = _reported_numbers()
    source = (ROOT / f"{page}.md").read_text(encoding="utf-8")
    kept = dict(prose_lines(source))
    lines = [kept.get(no, "") for no in range(1, len(source.splitlines()) + 1)]
    findings = []
    for no, line in kept.items():
        if NUMBERED_HEADING.match(line):
            findings.append(f"{page}.md:{no}: numbered heading (the book numbers headings): {line.strip()}")
    text = "\n".join(lines)  # whole paragraphs: "Proposition\n3.6" is still a place in the paper
    for offset, tok in offending(text, known):
        no = text.count("\n", 0, offset) + 1
        findings.append(f"{page}.md:{no}: {tok} typed by hand: {lines[no - 1].strip()[:100]}")
    return findings


@pytest.mark.parametrize("page", toc_pages())
def test_prose_numbers_are_glued_reported_or_allowed(page: str):
    findings = _page_findings(page)
    assert not findings, "\n".join(findings)


def test_verdict_notes_have_no_typed_numbers():
    from shapley.companion import claims

    known = _reported_numbers()
    findings = []
    for claim in claims.CLAIMS:
        readings = claim.all_readings()
        texts = [claim.note, *(r.note for r in readings), *(r.name for r in readings)]
        for text in texts:
            findings += [f"{claim.id}: {tok}: {text[:80]}" for tok in offending_numbers(text, known)]
    assert not findings, "\n".join(findings)


def test_the_scanner_catches_what_it_should():
    known = _reported_numbers()
    assert offending_numbers("the gap is 0.014 AUROC", known) == ["0.014"]
    assert offending_numbers("a drop to -0.090 here", known) == ["-0.090"]
    assert offending_numbers("it took 1.8% longer", known) == ["1.8"]
    assert offending_numbers("$\\lambda \\approx -0.09$", known) == ["-0.09"]
    assert offending_numbers("at $\\beta = 0.5$ and AUROC {glue:text}`auroc` (13.5 GB)", known) == ["13.5"]
    assert offending_numbers("printed [0.755]{.reported}, Proposition 3.5 and 3.6, Sec. 3.4", known) == []
    assert offending_numbers("marked [0.123]{.reported}", known) == ["marked:0.123"]
    assert offending_numbers("torch==2.13.0, OPT 1.3B, heading 2.1.1", known) == []
    assert offending_numbers("Proposition\n3.6 holds; 2.5 does not", known) == ["2.5"]
    lines = prose_lines("---\na: 1.5\n---\ntext 1.25\n```{code-cell}\nx = 2.5\n```\n```bash\nrun 3.5\n```\nend")
    assert [t for _, t in lines] == ["text 1.25", "end"] and lines[0][0] == 4
    assert NUMBERED_HEADING.match("## 1. Efficiency") and not NUMBERED_HEADING.match("## Table 3: CoQA")
