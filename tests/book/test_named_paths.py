"""Every repository path and every ``shapley.…`` name that the prose or a docstring names exists.

Prose: the book's chapters (``book/*.md``), the notebooks (``notebooks/*.md``), ``README.md`` and
``CONTRIBUTING.md``; docstrings: every module, class and function docstring under ``shapley/`` and ``tests/``.
A path is a token that starts with one of the repository's top-level folders and names a file or folder; a
name is a dotted ``shapley.`` name, resolved by importing its module and reading its attributes. Patterns
(``*``, ``{a,b}``, ``<run>``) and outputs that a command writes (under ``results/`` or ``_build/``, named in a
command) are not names of existing things and are left out.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOP = ("shapley", "tests", "book", "notebooks", "scripts", "benchmarks", "results", "_static")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOP) + r")/[\w./-]*[\w/])")
NAME = re.compile(r"(?<![\w./-])(shapley(?:\.[A-Za-z_]\w*)+)")
#: Paths that name what a command will write, not what the repository holds.
WRITTEN = ("results/regeneration.json",)


def _prose() -> list[tuple[str, str]]:
    files = sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "notebooks").glob("*.md"))
    files += [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    return [(str(f.relative_to(ROOT)), f.read_text(encoding="utf-8")) for f in files if f.exists()]


def _docstrings() -> list[tuple[str, str]]:
    out = []
    for folder in ("shapley", "tests"):
        for f in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(f.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    doc = ast.get_docstring(node)
                    if doc:
                        out.append((f"{f.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}", doc))
    return out


def _paths(text: str) -> set[str]:
    found = set()
    for m in PATH.finditer(text):
        p = m.group(1).rstrip("./")
        after = text[m.end(1) : m.end(1) + 1]
        before = text[max(0, m.start(1) - 12) : m.start(1)]
        if any(c in p for c in "*{}<>") or after in ("*", "{", "<"):
            continue
        if re.search(r"(--output|--out|-o|>)\s*$", before):  # what a command writes
            continue
        found.add(p)
    return found


def _names(text: str) -> set[str]:
    return {m.group(1).rstrip(".") for m in NAME.finditer(text)}


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _missing(sources: list[tuple[str, str]]) -> list[str]:
    bad = []
    for where, text in sources:
        for p in sorted(_paths(text)):
            if p in WRITTEN:
                continue
            if not (ROOT / p).exists() and not (ROOT / f"{p}.md").exists():  # a path, or a page's doc name
                bad.append(f"{where}: path {p}")
        for n in sorted(_names(text)):
            if not _resolves(n):
                bad.append(f"{where}: name {n}")
    return bad


@pytest.mark.parametrize("kind", ["prose", "docstrings"])
def test_every_named_path_and_name_exists(kind: str) -> None:
    missing = _missing(_prose() if kind == "prose" else _docstrings())
    assert not missing, "\n".join(missing)


def test_the_scan_finds_what_it_should() -> None:
    text = (
        "see `tests/test_paper.py`, shapley/paper.py and shapley.companion.nope; `shapley/core/*` is a pattern; "
        "`report --output results/new.md` writes a file"
    )
    assert _paths(text) == {"tests/test_paper.py", "shapley/paper.py"}
    assert _missing([("x", text)]) == [
        "x: path shapley/paper.py",
        "x: path tests/test_paper.py",
        "x: name shapley.companion.nope",
    ]
    assert _missing([("y", "`shapley/companion/htmltable.py` and shapley.companion.htmltable.show")]) == []
