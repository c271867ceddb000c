"""The layering rule: the maths core never imports the pipeline."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "shapley"
MATHS = ["_validate", "kernel", "psd", "entropy", "metrics", "baselines", "properties", "mozart", "worstcase", "paper"]
PIPELINE = {"data", "generate", "entail", "correctness", "score", "runs", "report", "cli", "settings", "records"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] == "shapley":
                names.update(parts[1:2] or [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "shapley" and len(parts) > 1:
                    names.add(parts[1])
    return names


@pytest.mark.parametrize("module", [m for m in MATHS if (PKG / f"{m}.py").exists()])
def test_maths_does_not_import_pipeline(module):
    bad = _imports(PKG / f"{module}.py") & PIPELINE
    assert not bad, f"shapley/{module}.py imports pipeline module(s) {sorted(bad)}"


def test_public_api_names():
    import shapley

    for name in ("correlation_matrix", "kernel_matrix", "gaussian_entropy", "shapley_values",
                 "shapley_uncertainty", "is_psd", "min_eigenvalue"):
        assert callable(getattr(shapley, name))
    for name in ("auroc", "auarc", "prr", "bootstrap_ci"):
        assert callable(getattr(shapley.metrics, name))
