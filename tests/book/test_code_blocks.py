"""The pages' command blocks (fenced code outside notebook cells) fit the text column without wrapping.

They do not wrap (``_static/custom.css``): a wrapping block breaks lines at hyphens ("meta-/llama") and leaves a
continuation ``\\`` alone on a line. So each line must fit the column on its own. The column is 740 px at a 1280 px
window; a block's text box is about 654 px of it (padding and margins), and the widest usual monospace font at the
block's 14 px, DejaVu Sans Mono, takes 0.602 em a character: 654 / (0.602 x 14) = 77 characters.
``tests/book/test_book_browser.py`` then measures every block in a browser. Fast: reads sources only.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.book.test_book import toc_pages

ROOT = Path(__file__).resolve().parents[2]
MAX_CHARS = 76
"""The longest line a command block may hold (see the module docstring)."""
PENDING: set[str] = set()  # pages whose command blocks are being reworked (none)
FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


def fenced_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) inside the fenced blocks of a MyST page that are not notebook cells (``{code-cell}``)
    or other directives (``{admonition}``, ...)."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    directive = False
    for no, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence, directive = m.group(1), m.group(2).strip().startswith("{")
            continue
        if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            fence = None
        elif not directive:
            out.append((no, line))
    return out


def too_long(text: str) -> list[str]:
    return [
        f"{no}: {len(line)} characters: {line.strip()[:60]}"
        for no, line in fenced_lines(text)
        if len(line) > MAX_CHARS or line.strip() == "\\"
    ]


def test_command_blocks_fit_the_column():
    bad = [
        f"{page}.md:{line}"
        for page in toc_pages()
        if f"{page}.md" not in PENDING
        for line in too_long((ROOT / f"{page}.md").read_text(encoding="utf-8"))
    ]
    assert bad == [], "\n".join(bad)


def test_the_check_can_fail():
    page = (
        "text\n```bash\n"
        + "x" * (MAX_CHARS + 1)
        + "\n  \\\nshort\n```\n```{code-cell} ipython3\n"
        + "y" * 99
        + "\n```\n"
    )
    assert [s.split(":")[0] for s in too_long(page)] == ["3", "4"]
