"""The theory layer's optional dependencies stay where they are declared (issue 8).

hypothesis and sympy (the ``theory`` extra) may be imported only by :mod:`shapley.theory.search` and
:mod:`shapley.theory.symbolic`, at the top of those modules; every other module of the package, the rest of
the theory layer included, must import without them. (The theory layer's doctests run with the package's:
``--doctest-modules`` over ``shapley``, pyproject.toml.)
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "shapley"
OPTIONAL = {"hypothesis": "search.py", "sympy": "symbolic.py"}


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(PKG.parent)))
def test_optional_theory_dependencies_only_in_their_modules(path: Path) -> None:
    for dep, home in OPTIONAL.items():
        if dep in _imported_roots(path):
            assert path == PKG / "theory" / home, f"{path.name} imports {dep}; only theory/{home} may"


def test_theory_core_modules_import_without_the_extra() -> None:
    """Block hypothesis and sympy, then import the rest of the theory layer in a fresh interpreter."""
    code = (
        "import sys\n"
        "sys.modules['hypothesis'] = None\n"
        "sys.modules['sympy'] = None\n"
        "import shapley.theory, shapley.theory.worstcase, shapley.theory.properties, shapley.theory.axioms\n"
        "import shapley.theory.cosine, shapley.theory.propositions\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PKG.parent)
    assert out.returncode == 0, out.stderr
