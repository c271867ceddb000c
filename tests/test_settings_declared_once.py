"""Each run setting is declared once (issue 31): the kernel scale beta's default and the correctness threshold's are
written at one site of the pipeline, the command line and the integrations, and editing that site changes what
``run --help`` shows and what ``score-samples`` records."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCANNED = ("pipeline", "cli", "integrations")
CONFIG = REPO / "shapley" / "pipeline" / "config.py"


def _constant(node: ast.expr | None) -> bool:
    """A number written as a literal, directly or as the first argument of a call (``setting(0.5, ...)``)."""
    if isinstance(node, ast.Call) and node.args:
        node = node.args[0]
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool)


def declaration_sites(tree: ast.AST, name: str) -> list[int]:
    """Lines where ``tree`` gives ``name`` a literal number: a field or variable (``name`` or ``DEFAULT_NAME``), a
    parameter's default, or a keyword argument."""
    names = {name, f"DEFAULT_{name.upper()}"}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in names:
            lines += [node.lineno] if _constant(node.value) else []
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
            lines += [node.lineno] if _constant(node.value) else []
        elif isinstance(node, ast.keyword) and node.arg == name and _constant(node.value):
            lines.append(node.value.lineno)
        elif isinstance(node, ast.arguments):
            params = [*node.posonlyargs, *node.args]
            pairs = list(zip(params[len(params) - len(node.defaults) :], node.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d is not None]
            lines += [d.lineno for a, d in pairs if a.arg == name and _constant(d)]
    return sorted(lines)


def _sites(name: str) -> list[str]:
    out = []
    for layer in SCANNED:
        for path in sorted((REPO / "shapley" / layer).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            out += [f"{path.relative_to(REPO)}:{line}" for line in declaration_sites(tree, name)]
    return out


@pytest.mark.parametrize("name", ["beta", "threshold"])
def test_the_default_is_declared_at_one_site(name):
    sites = _sites(name)
    assert len(sites) == 1 and sites[0].startswith("shapley/pipeline/config.py:"), sites


def test_the_site_scan_can_fail():
    code = (
        "DEFAULT_BETA = 0.5\ndef f(beta=0.5, *, threshold=0.3): ...\ng(beta=0.4)\n"
        "class S:\n    beta: float = setting(0.5)\n"
    )
    tree = ast.parse(code)
    assert declaration_sites(tree, "beta") == [1, 2, 3, 5] and declaration_sites(tree, "threshold") == [2]
    assert declaration_sites(ast.parse("def f(beta=DEFAULT): ...\nx = S().beta\n"), "beta") == []


@pytest.mark.slow
def test_editing_the_one_declaration_changes_the_help_and_the_record(tmp_path):
    """A copy of the package with beta's default 0.5 -> 0.45 and the threshold's 0.3 -> 0.35 in config.py, and
    nothing else: ``run --help`` shows the new defaults and ``score-samples`` records them in config.json."""
    shutil.copytree(REPO / "shapley", tmp_path / "shapley", ignore=shutil.ignore_patterns("__pycache__"))
    config = tmp_path / "shapley" / "pipeline" / "config.py"
    text = config.read_text()
    edited = re.sub(r"(beta: float = setting\()0\.5,", r"\g<1>0.45,", text)
    edited = re.sub(r"(threshold: float = setting\()0\.3,", r"\g<1>0.35,", edited)
    assert edited.count("0.45,") == text.count("0.45,") + 1 and edited.count("0.35,") == text.count("0.35,") + 1
    config.write_text(edited)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    help_text = subprocess.run(
        [sys.executable, "-m", "shapley", "run", "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    ).stdout
    flat = " ".join(help_text.split())
    assert "(default 0.45)" in flat and "(default 0.35)" in flat, flat
    inp, out = tmp_path / "in.jsonl", tmp_path / "run"
    script = (
        "from tests import fakes\n"
        "fakes.install_fake_entail()\n"
        f"fakes.make_samples_file(__import__('pathlib').Path({str(inp)!r}), 4)\n"
        "from shapley import cli\n"
        f"raise SystemExit(cli.main(['score-samples', {str(inp)!r}, '--entailment', 'fake:', '--output', {str(out)!r},"
        " '--methods', 'Shap', '--no-progress']))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert r.returncode == 0, r.stderr
    scoring = json.loads((out / "config.json").read_text())["config"]["scoring"]
    assert scoring["beta"] == 0.45 and scoring["threshold"] == 0.35


def _literal_sites(match) -> list[str]:
    """``file:line`` of every statement of the package for which ``match(node)`` holds."""
    out = []
    for path in sorted((REPO / "shapley").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out += [f"{path.relative_to(REPO)}:{node.lineno}" for node in ast.walk(tree) if match(node)]
    return out


def _assigns(names: set[str], value) -> object:
    """A matcher: an assignment or annotated field of one of ``names`` whose value (or first argument of a call, as
    ``setting(10, ...)``) satisfies ``value``."""

    def match(node: ast.AST) -> bool:
        if isinstance(node, ast.AnnAssign):
            targets, v = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, v = node.targets, node.value
        else:
            return False
        if isinstance(v, ast.Call) and v.args:
            v = v.args[0]
        return any(isinstance(t, ast.Name) and t.id in names for t in targets) and v is not None and value(v)

    return match


def _number(v: ast.expr) -> bool:
    return isinstance(v, ast.Constant) and isinstance(v.value, int | float) and not isinstance(v.value, bool)


@pytest.mark.parametrize(
    ("what", "match", "site"),
    [
        ("cluster threshold", _assigns({"CLUSTER_THRESHOLD"}, _number), "core/baselines/entropies.py"),
        ("sample count", _assigns({"n_samples"}, _number), "pipeline/config.py"),
        ("seed", _assigns({"seed"}, _number), "pipeline/config.py"),
        (
            "default NLI model",
            lambda n: (
                isinstance(n, ast.Constant)
                and isinstance(n.value, str)
                and "deberta-large-mnli" in n.value
                and "\n" not in n.value
                and " " not in n.value
            ),
            "pipeline/config.py",
        ),
        (
            "correctness metric names",
            lambda n: isinstance(n, ast.Tuple) and [getattr(e, "value", None) for e in n.elts] == ["rougeL", "bleu"],
            "pipeline/score/correctness.py",
        ),
    ],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_issue39_settings_are_declared_at_one_site(what, match, site):
    """Issue 39: the cluster threshold was declared at 3 sites, the sample count, the seed and the metric names at 2,
    the default NLI model at 3; each is now written once and every other place reads that declaration."""
    sites = _literal_sites(match)
    assert len(sites) == 1 and sites[0].startswith(f"shapley/{site}:"), (what, sites)


def test_the_literal_scan_can_fail():
    tree = ast.parse(
        "CLUSTER_THRESHOLD = 0.5\ndef f(threshold: float = 0.5): ...\nclass C:\n    n_samples: int = setting(10)\n"
    )
    found = [n.lineno for n in ast.walk(tree) if _assigns({"CLUSTER_THRESHOLD", "n_samples"}, _number)(n)]
    assert found == [1, 4]  # a parameter default is not an assignment
