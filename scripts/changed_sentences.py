"""List the prose sentences of the book's pages that a commit range added or changed, page by page, for review.

    python scripts/changed_sentences.py BASE [HEAD]      # e.g. python scripts/changed_sentences.py main~5

A sentence is listed when the page at HEAD has it and the page at BASE does not (a reworded sentence counts as
new). Prose is a page's Markdown outside front matter, code cells, fenced blocks, directives' options, tables and
HTML comments; sentences end at '.', '!' or '?' followed by white space. The reviewer recomputes each listed
sentence's numbers from results/ with their own code and tries to break each claim at the edge of its scope.
Exit 2, with one line, when a revision does not exist.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

PAGES = ("book", "notebooks")


def prose(markdown: str) -> str:
    """The prose of a MyST page, one paragraph or list item per block: front matter, backtick and tilde fences
    (code cells included), tables, directive and option lines, labels and comments dropped. The text inside
    ``:::`` directives (admonitions, dropdowns) is prose and kept."""
    text = re.sub(r"\A---\n.*?\n---\n", "", markdown, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    kept, fence = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if fence:
            fence = "" if stripped == fence else fence
            continue
        if stripped.startswith(("```", "~~~")):
            fence = re.match(r"`+|~+", stripped).group(0)  # type: ignore[union-attr]
            continue
        if stripped.startswith(("|", ":::", "(")) or re.match(r":\w+:", stripped):
            continue
        if re.match(r"([-*+]|\d+[.)]|:)\s", stripped):
            kept.append("")  # a list item or definition starts a block of its own
        kept.append(stripped)
    return "\n".join(kept)


def sentences(markdown: str) -> list[str]:
    """The sentences of a page's prose, white space folded.

    >>> sentences("---\\nk: v\\n---\\n# T\\n\\nOne two. Three\\nfour?\\n\\n```{code-cell} ipython3\\nx = 1. \\n```\\n")
    ['# T', 'One two.', 'Three four?']
    """
    paragraphs = re.split(r"\n\s*\n", prose(markdown))
    out: list[str] = []
    for p in paragraphs:
        flat = " ".join(p.split())
        out += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*_`{\[$(\"'])", flat) if s]
    return out


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def page_at(rev: str, path: str) -> str:
    """The page's text at ``rev``, or "" where it did not exist."""
    done = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the revision before the change")
    parser.add_argument("head", nargs="?", default="HEAD", help="the revision after it (default HEAD)")
    args = parser.parse_args(argv)
    for rev in (args.base, args.head):
        if subprocess.run(["git", "rev-parse", "--verify", "-q", f"{rev}^{{commit}}"], capture_output=True).returncode:
            parser.exit(2, f"changed_sentences: {rev!r} is not a revision of this repository\n")
    changed = git("diff", "--name-only", args.base, args.head, "--", *PAGES).split()
    total = 0
    for path in sorted(p for p in changed if p.endswith(".md")):
        before = set(sentences(page_at(args.base, path)))
        new = [s for s in dict.fromkeys(sentences(page_at(args.head, path))) if s not in before]
        if new:
            print(f"## {path} ({len(new)} new or changed)")
            print("\n".join(f"- {s}" for s in new), end="\n\n")
            total += len(new)
    print(f"{total} sentences to review")
    return 0


if __name__ == "__main__":
    sys.exit(main())
