"""The doctests of every module are collected, and none compares an expression with itself (issue 20).

pytest runs with ``--doctest-modules`` over ``testpaths``; this checks that those paths cover every module
of the package, and scans every doctest example (doctest's own parser, then ast) for ``x == x``.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import pkgutil
import tomllib
from pathlib import Path

import shapley

ROOT = Path(__file__).resolve().parent.parent


def _modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(shapley.__path__, "shapley.")]


def test_every_module_is_under_a_doctest_path() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in cfg["addopts"].split()
    paths = [ROOT / p for p in cfg["testpaths"]]
    files = sorted((ROOT / "shapley").rglob("*.py"))
    assert files
    uncovered = [f for f in files if not any(f == p or p in f.parents for p in paths)]
    assert uncovered == []


def _self_comparisons(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Eq, ast.Is)):
            if ast.dump(node.left) == ast.dump(node.comparators[0]):
                return True
    return False


def tautologies(module_name: str) -> set[str]:
    """Names of the doctests in ``module_name`` with an example that compares an expression with itself."""
    finder = doctest.DocTestFinder()
    module = importlib.import_module(module_name)
    return {t.name for t in finder.find(module) if any(_self_comparisons(e.source) for e in t.examples)}


def test_no_doctest_is_a_tautology() -> None:
    found = set().union(*(tautologies(m) for m in _modules() if not m.endswith("__main__")))
    assert found == set()


def test_the_scan_sees_a_tautology() -> None:
    assert _self_comparisons('shard_of("q1", 4) == shard_of("q1", 4)')
    assert not _self_comparisons('shard_of("q1", 4) == shard_of("q2", 4)')
