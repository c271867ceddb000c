"""The layering rule, read from the code (AST), relative imports included.

core imports nothing outside core; theory imports core; pipeline imports core; companion may import core,
theory and pipeline; the CLI imports pipeline and companion; the results layer imports nothing of the package, and
every layer but core may import it. No module imports the package's own modules
through importlib, and there is no import circle between the package's modules. Inside the pipeline, a stage
package imports the run directory, the run configuration and earlier stages only (data < generate < entail <
score < evaluate); there is no mixin, at most 8 parts at its top, and no folder spells a sub-folder in file names.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "shapley"

ALLOWED: dict[str, set[str]] = {
    "core": {"core"},
    "results": {"results"},
    "theory": {"core", "results", "theory"},
    "pipeline": {"core", "results", "pipeline"},
    "companion": {"core", "results", "theory", "pipeline", "companion"},
    "cli": {"pipeline", "companion", "cli"},
    # the LM-Polygraph and uqlm integrations: core and pipeline in, nothing of the package imports them
    "integrations": {"core", "pipeline", "integrations"},
    "__main__": {"cli"},
    "__init__": {"core"},
}
LAYERS = ("core", "results", "theory", "pipeline", "companion")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(path: Path, node: ast.ImportFrom) -> list[str]:
    """Absolute module names an ``from X import a, b`` statement may refer to (X itself and X.a, X.b)."""
    if node.level:
        base = _module_name(path).split(".")
        is_pkg = path.name == "__init__.py"
        base = base[: len(base) - node.level + (1 if is_pkg else 0)]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    return [mod] + [f"{mod}.{a.name}" for a in node.names]


def package_imports(path: Path) -> set[str]:
    """The package's own modules that ``path`` imports (absolute dotted names)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            names = _resolve(path, node)
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out.update(n for n in names if n == "shapley" or n.startswith("shapley."))
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _existing(module: str) -> str | None:
    """``module`` if it is a file or package of the package, else its parent (``from pkg import name``)."""
    p = PKG.parent.joinpath(*module.split("."))
    if p.with_suffix(".py").is_file() or (p / "__init__.py").is_file():
        return module
    return module.rsplit(".", 1)[0] if "." in module else None


FILES = sorted(PKG.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG.parent)))
def test_imports_follow_the_layer_rule(path):
    me = _layer(_module_name(path))
    allowed = ALLOWED[me]
    bad = sorted(m for m in package_imports(path) if m != "shapley" and _layer(m) not in allowed)
    if me != "__init__" and "shapley" in package_imports(path):
        bad.append("shapley (the top-level namespace; import from its layer instead)")
    assert not bad, f"{path.relative_to(PKG.parent)} ({me}) imports {bad}; {me} may import only {sorted(allowed)}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PKG.parent)))
def test_no_importlib_for_own_modules(path):
    text = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
            "spec_from_file_location",
        ):
            arg = node.args[0] if node.args else None
            literal = arg.value if isinstance(arg, ast.Constant) else ""
            assert not str(literal).startswith(("shapley", ".")), (
                f"{path.relative_to(PKG.parent)}:{node.lineno} loads the package's own module {literal!r} "
                "through importlib; use a plain import"
            )


def test_no_import_circle():
    graph: dict[str, set[str]] = {}
    for path in FILES:
        me = _module_name(path)
        graph[me] = {m for m in (_existing(x) for x in package_imports(path)) if m and m != me}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            # a package's __init__ that re-exports its own submodules is not a circle
            if nxt in graph and node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(nxt) :] + [nxt]))
            if state.get(nxt) is None and nxt in graph:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if state.get(node) is None:
            visit(node)


def test_each_layer_is_a_subpackage():
    for layer in LAYERS:
        assert (PKG / layer / "__init__.py").is_file(), f"shapley/{layer}/ is missing"
    flat = sorted(p.name for p in PKG.glob("*.py"))
    assert flat == ["__init__.py", "__main__.py"], f"modules outside the four layers and the CLI: {flat}"
    assert (PKG / "cli" / "__init__.py").is_file(), "shapley/cli/ is missing"


def test_the_rule_checker_sees_relative_and_absolute_imports(tmp_path):
    """The checker itself: a relative import that crosses a layer is caught."""
    fake = PKG / "core" / "kernel.py"
    node = ast.parse("from ..pipeline import store\nfrom . import psd\n").body
    got = [_resolve(fake, n) for n in node]  # type: ignore[arg-type]
    assert "shapley.pipeline" in got[0] and "shapley.pipeline.store" in got[0]
    assert _layer("shapley.pipeline.rundir.store") == "pipeline" and "pipeline" not in ALLOWED["core"]
    assert "shapley.core.psd" in got[1]


def test_public_api_names():
    import shapley

    for name in (
        "correlation_matrix",
        "kernel_matrix",
        "gaussian_entropy",
        "shapley_values",
        "shapley_uncertainty",
        "is_psd",
        "min_eigenvalue",
    ):
        assert callable(getattr(shapley, name))
    for name in ("auroc", "auarc", "prr", "bootstrap_interval"):
        assert callable(getattr(shapley.metrics, name))


# --- the pipeline's stage packages -------------------------------------------------------------------------------

PIPELINE = PKG / "pipeline"
#: the stages in the order the data flows; a stage may import the run directory, the run configuration and
#: earlier stages, never a later one. ``experiment`` (the orchestration) may import every stage.
STAGES = ("data", "generate", "entail", "score", "evaluate")
#: what the other parts of pipeline/ may import: the run directory imports no stage (only the run
#: configuration, which config.json stores); ``config`` declares every stage's settings and checks the method
#: names against the score stage's registry, which imports nothing of the pipeline: no arrow runs back up.
OTHERS: dict[str, set[str]] = {
    "rundir": {"rundir", "config"},
    "config": {"config", "score"},
    "experiment": {"rundir", "config", *STAGES, "experiment"},
    "": {""},
}


def allowed_parts(part: str) -> set[str]:
    """The parts of pipeline/ (sub-package names, or ``config``) that ``part`` may import."""
    if part in STAGES:
        return {"rundir", "config", *STAGES[: STAGES.index(part) + 1]}
    return OTHERS[part]


def _part(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["shapley", "pipeline"]:
        return None
    return parts[2] if len(parts) > 2 else ""


def stage_violations(imports: dict[str, set[str]]) -> list[str]:
    """``module imports target`` for every import (module -> the package's modules it imports) that breaks the
    stage order."""
    bad = []
    for module, targets in sorted(imports.items()):
        me = _part(module)
        if me is None:
            continue
        for target in sorted(targets):
            other = _part(target)
            if other is not None and other != "" and other not in allowed_parts(me):
                bad.append(f"{module} imports {target}")
    return bad


def test_stages_import_only_earlier_stages():
    imports = {_module_name(p): package_imports(p) for p in sorted(PIPELINE.rglob("*.py"))}
    assert {_part(m) for m in imports} <= {*STAGES, *OTHERS}, "a part of pipeline/ the stage rule does not know"
    assert not stage_violations(imports), stage_violations(imports)


def test_the_stage_checker_sees_a_later_stage():
    """The checker itself: an entail module importing evaluate, or the run directory importing a stage, fails."""
    fake = PIPELINE / "entail" / "fake.py"
    source = ast.parse("from ..evaluate import metrics\nfrom shapley.pipeline.generate import models\n").body
    imports = {"shapley.pipeline.entail.fake": {n for node in source for n in _resolve(fake, node)}}  # type: ignore[arg-type]
    imports["shapley.pipeline.rundir.fake"] = {"shapley.pipeline.score.scores"}
    imports["shapley.pipeline.experiment.fake"] = {"shapley.pipeline.evaluate.metrics"}
    bad = stage_violations(imports)
    assert "shapley.pipeline.entail.fake imports shapley.pipeline.evaluate.metrics" in bad
    assert "shapley.pipeline.rundir.fake imports shapley.pipeline.score.scores" in bad
    assert not [b for b in bad if "generate" in b or "experiment" in b], bad


def test_pipeline_top_level_shows_the_stages():
    top = sorted(p.name for p in PIPELINE.iterdir() if p.name != "__init__.py" and not p.name.startswith((".", "_")))
    assert len(top) <= 8, f"pipeline/ holds {len(top)} modules and packages besides __init__.py: {top}"
    assert {*STAGES, "rundir", "experiment"} <= {p.removesuffix(".py") for p in top}


def crowded_prefixes(names: list[str]) -> dict[str, list[str]]:
    """First-three-letter prefixes shared by 3 or more of ``names`` (module names without ``.py``)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name[:3], []).append(name)
    return {k: sorted(v) for k, v in groups.items() if len(v) >= 3}


@pytest.mark.parametrize(
    "folder", sorted({p.parent for p in PKG.rglob("*.py")}), ids=lambda p: str(p.relative_to(PKG.parent))
)
def test_no_folder_spells_a_subfolder_in_file_names(folder):
    names = [p.stem for p in folder.glob("*.py") if p.name != "__init__.py"]
    assert not crowded_prefixes(names), f"{folder.relative_to(PKG.parent)}: {crowded_prefixes(names)}; make a package"


def test_the_prefix_checker_sees_a_crowd():
    assert crowded_prefixes(["genconfig", "gendecode", "generate", "models"]) == {
        "gen": ["genconfig", "gendecode", "generate"]
    }
    assert crowded_prefixes(["base", "cache", "nli"]) == {}


def _mixin_classes(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            if node.name.endswith("Mixin") or any(b.endswith("Mixin") for b in bases):
                out.append(node.name)
    return out


def test_no_mixins_in_the_pipeline():
    found = {
        str(p.relative_to(PKG.parent)): _mixin_classes(ast.parse(p.read_text(encoding="utf-8")))
        for p in PIPELINE.rglob("*.py")
    }
    assert not {k: v for k, v in found.items() if v}, found
    assert _mixin_classes(ast.parse("class A(PromptsMixin, B):\n    pass\nclass C:\n    pass\n")) == ["A"]


# --- no private name crosses a module ----------------------------------------------------------------------------


def private_crossings(path: Path, tree: ast.AST) -> list[str]:
    """A private name imported from one of the package's modules (``from ... import _name``), or read as
    ``module._name`` (``module`` an imported module of the package), in ``tree``: used outside its module."""
    where = path.relative_to(PKG.parent) if path.is_relative_to(PKG.parent) else path
    out, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("shapley"):
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"{where}:{node.lineno} imports {node.module}.{a.name}")
                modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("shapley"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            if node.attr.startswith("_") and not node.attr.startswith("__"):
                out.append(f"{where}:{node.lineno} uses {node.value.id}.{node.attr}")
    return out


def test_no_private_name_crosses_a_module():
    found = [line for path in FILES for line in private_crossings(path, ast.parse(path.read_text(encoding="utf-8")))]
    assert not found, "\n".join(found)


def test_the_private_name_check_can_fail():
    tree = ast.parse("from shapley.core.psd import _scaled\nfrom shapley.theory import worstcase as wc\nwc._grid()\n")
    found = private_crossings(Path("x.py"), tree)
    assert len(found) == 2 and "_scaled" in found[0] and "wc._grid" in found[1]
