"""Habits of the code base, checked from the source: small functions with short parameter lists."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "shapley"
MAX_LINES = 80
MAX_PARAMS = 10


def _functions() -> list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((path, node))
    return out


def _n_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return len([n for n in names if n not in ("self", "cls")])


def test_no_function_is_longer_than_80_lines_or_takes_more_than_10_parameters():
    too_long = []
    for path, node in _functions():
        where = f"{path.relative_to(PKG.parent)}:{node.lineno} {node.name}"
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        if lines > MAX_LINES:
            too_long.append(f"{where}: {lines} lines")
        if _n_params(node) > MAX_PARAMS:
            too_long.append(f"{where}: {_n_params(node)} parameters")
    assert not too_long, "\n".join(too_long)


def test_the_size_check_can_fail():
    node = ast.parse("def f(" + ", ".join(f"a{i}" for i in range(11)) + "):\n" + "    pass\n" * 81).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert _n_params(node) == 11 and node.end_lineno - node.lineno + 1 == 82
