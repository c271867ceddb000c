"""Habits of the code base, checked from the source: small functions with short parameter lists, small classes and
small modules."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "shapley"
MAX_LINES = 80
MAX_PARAMS = 10
MAX_CLASS_LINES = 300
MAX_MODULE_LINES = 600


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


def _too_big(path: Path, tree: ast.Module, root: Path = PKG.parent) -> list[str]:
    where = path.relative_to(root)
    out = []
    n_lines = len(path.read_text(encoding="utf-8").splitlines())
    if n_lines > MAX_MODULE_LINES:
        out.append(f"{where}: {n_lines} lines (module limit {MAX_MODULE_LINES})")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_CLASS_LINES:
                out.append(f"{where}:{node.lineno} class {node.name}: {lines} lines (class limit {MAX_CLASS_LINES})")
    return out


def test_no_module_is_longer_than_600_lines_and_no_class_longer_than_300():
    too_big = []
    for path in sorted(PKG.rglob("*.py")):
        too_big += _too_big(path, ast.parse(path.read_text(encoding="utf-8")))
    assert not too_big, "\n".join(too_big)


def test_the_module_and_class_check_can_fail(tmp_path):
    body = "class Big:\n" + "    x = 1\n" * 300 + "\n" * 300
    path = tmp_path / "big.py"
    path.write_text(body, encoding="utf-8")
    found = _too_big(path, ast.parse(body), root=tmp_path)
    assert len(found) == 2 and "module limit" in found[0] and "class Big" in found[1]
