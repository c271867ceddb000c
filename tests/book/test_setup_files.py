"""What the README promises, the Makefile, pyproject.toml, jupytext.toml and .gitignore deliver.

Fast: reads files and asks ``make -n`` (dry run) what it would do; installs and builds nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.book.test_book import toc_pages

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")


def _dry_run(target: str, *overrides: str, venv: Path) -> str:
    proc = subprocess.run(
        ["make", "-n", target, f"VENV={venv}", *overrides],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return proc.stdout


def test_readme_lists_every_cli_subcommand():
    from shapley.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name in sub.choices:
        assert re.search(rf"^- `{re.escape(name)}`:", README, flags=re.M), f"README does not list `{name}`"


def test_readme_names_the_setup_commands_prerequisites_and_the_cpu_torch_index():
    needles = ("make book", "make test", "make notebooks", "make lab", "make properties", "npm", "TORCH_CPU=1")
    for needle in (*needles, f"TORCH_INDEX={CPU_INDEX}", "installs the same version from PyPI"):
        assert needle in README, needle
    assert "make book TORCH_CPU=1   #" in README  # the code block does what the sentence above it says
    assert re.search(r"^make test +# ruff and mypy first, then the whole test-suite", README, flags=re.M)


def test_readme_package_snippet_prints_when_run_as_a_script():
    """Pasted into a script, the README's snippet prints its results (bare expressions printed nothing)."""
    snippet = README.split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120, cwd=ROOT, check=True
    )
    assert len(proc.stdout.splitlines()) == snippet.count("print(") >= 2


@needs_make
def test_setup_takes_the_torch_requirement_and_index_and_vendors_mathjax(tmp_path):
    default = _dry_run("setup", venv=tmp_path / "v")
    assert 'pip install --quiet "torch==2.13.0"' in default and "--index-url" not in default
    assert "bash scripts/fetch_mathjax.sh" in default  # MathJax at setup, so `make book` needs no network
    for ask in ("TORCH_CPU=1", "TORCH_CPU=yes", f"TORCH_INDEX={CPU_INDEX}"):
        cpu = _dry_run("setup", ask, "TORCH=torch==2.13.0", venv=tmp_path / "v")
        # the CPU index when asked, and PyPI with a message when that index cannot be reached (issue 23)
        probe, tried = cpu.split(f'--index-url "{CPU_INDEX}" "torch==2.13.0"', 1)
        assert f'"{CPU_INDEX}" 2>/dev/null; then' in probe and "--retries 1" in probe
        assert tried.count("installing torch==2.13.0 from PyPI instead") == 2  # install failed / index unreachable


def _make_dry(target: str, assignment: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``make -n TARGET ASSIGNMENT`` with a venv path under ``tmp_path`` (nothing is built; no "Entering
    directory" lines on stdout when the tests run under make)."""
    return subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={tmp_path / 'v'}", assignment],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@needs_make
@pytest.mark.parametrize(
    ("assignment", "says"),
    [
        *((f"TORCH_CPU={v}", "is not a value make accepts: TORCH_CPU=1 (or yes)") for v in ["0", "no", "false"]),
        *((f"TORCH_CPU={v}", "is not a value make accepts: TORCH_CPU=1 (or yes)") for v in ["2", "1 1", "y"]),
        *((f"PROPERTIES_EXAMPLES={v}", "is not a whole number of at least 1") for v in ("0", "5x", "050", "-5")),
        ("TORCH_INDEX=cpu", "is not a URL"),
    ],
)
def test_make_variables_take_explicit_values_only(assignment, says, tmp_path):
    """Issue 33, item 15: any non-empty TORCH_CPU used to count as yes (TORCH_CPU=0 installed the CPU build)."""
    proc = _make_dry("properties", assignment, tmp_path)
    assert proc.returncode == 2 and proc.stdout == "" and f"{assignment} {says}" in proc.stderr


@needs_make
def test_make_properties_passes_its_count_on(tmp_path):
    assert "HYPOTHESIS_MAX_EXAMPLES=50 " in _dry_run("properties", "PROPERTIES_EXAMPLES=50", venv=tmp_path / "v")


FAKE_PYTHON = """#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$*" in
  *urllib*) exit "$PROBE_RC" ;;
  *"version('torch')"*) echo "make setup: torch 2.13.0+cpu is installed" ;;
  *"pip install"*"--index-url"*) exit "$PIP_RC" ;;
esac
"""


@needs_make
@pytest.mark.parametrize(
    ("probe", "pip", "says"),
    [
        (0, 0, "torch==2.13.0 from https://download.pytorch.org/whl/cpu"),
        (1, 0, "cannot be reached from here (or lists no torch); installing torch==2.13.0 from PyPI instead"),
        (0, 1, "pip could not install it from there; installing torch==2.13.0 from PyPI instead"),
    ],
)
def test_setup_prints_only_where_torch_comes_from(probe, pip, says, tmp_path):
    """Issue 32: `make setup` echoed its whole fallback one-liner, "could not install torch" included, even when
    nothing failed; and an unreachable index went unsaid when pip still found the wheel. Run the torch step with a
    fake python: the output is the lines that say what happened, and no command."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(FAKE_PYTHON)
    (bin_dir / "python").chmod(0o755)
    extra = tmp_path / "torch.mk"
    extra.write_text("torch-step:\n\t$(call TORCH_INSTALL_IN,$(FAKE_BIN))\n")
    env = {**os.environ, "FAKE_LOG": str(tmp_path / "log"), "PROBE_RC": str(probe), "PIP_RC": str(pip)}
    proc = subprocess.run(
        ["make", "-s", "-f", "Makefile", "-f", str(extra), "torch-step", "TORCH_CPU=1", f"FAKE_BIN={bin_dir}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    lines = proc.stdout.splitlines()
    assert all(line.startswith("make setup: ") for line in lines) and says in lines[-2]
    assert len(lines) == 2 + pip and lines[-1] == "make setup: torch 2.13.0+cpu is installed"
    log = (tmp_path / "log").read_text().splitlines()
    assert not any("import torch" in ln for ln in log)  # before numpy is installed, torch warns when imported
    installs = [ln for ln in log if "pip install" in ln]
    assert len(installs) == (1 if probe == 1 or pip == 0 else 2)


@needs_make
def test_make_lab_passes_allow_root_as_root_only(tmp_path):
    out = _dry_run("lab", venv=tmp_path / "v")
    assert '$([ "$(id -u)" = 0 ] && echo --allow-root)' in out


@needs_make
def test_make_book_and_theory_results_pin_one_thread(tmp_path):
    for target in ("book", "theory-results", "bench-notebooks"):
        out = _dry_run(target, venv=tmp_path / "v")
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            assert f"{var}=${{{var}:-1}}" in out, (target, var)


@needs_make
def test_make_notebooks_executes_every_myst_notebook_into_its_pair(tmp_path):
    out = _dry_run("notebooks", venv=tmp_path / "v")
    assert "--quiet --to ipynb --execute" in out and "/bin/jupytext" in out  # not 14 "Notebook is not trusted" lines
    assert "notebooks" in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for page in toc_pages():
        text = (ROOT / f"{page}.md").read_text(encoding="utf-8")
        if re.search(r"^kernelspec:", text, flags=re.M):
            assert f"{page}.md" in out, f"make notebooks skips {page}.md"


def test_notebooks_are_paired_and_their_ipynb_ignored():
    config = tomllib.loads((ROOT / "jupytext.toml").read_text())
    assert set(config["formats"].split(",")) == {"ipynb", "md:myst"}
    pages = [p for p in toc_pages() if "kernelspec:" in (ROOT / f"{p}.md").read_text(encoding="utf-8")]
    assert "notebooks/results" in pages and "book/claims" in pages
    if shutil.which("git") and (ROOT / ".git").exists():
        paths = [f"{p}.ipynb" for p in pages]
        ignored = subprocess.run(
            ["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.split()
        assert sorted(ignored) == sorted(paths), "every paired .ipynb must be ignored by git"


def test_the_notebooks_extra_brings_jupyterlab_pinned_in_constraints():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = [re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].lower() for r in extras["notebooks"]]
    assert {"jupyterlab", "jupytext", "nbconvert"} <= set(names)
    pins = {
        ln.split("==")[0].lower().replace("_", "-")
        for ln in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in ln
    }
    for name in names:
        assert name.replace("_", "-") in pins, f"{name} (notebooks extra) has no exact version in constraints.txt"


def test_system_deps_install_the_minimum():
    makefile = (ROOT / "Makefile").read_text()
    installs = [line for line in makefile.splitlines() if "apt-get install" in line]
    assert installs and all("--no-install-recommends" in line for line in installs)
    assert not any("apt-get upgrade" in line or "dist-upgrade" in line for line in makefile.splitlines())


def test_readme_offers_the_torch_choice_before_the_commands_that_install_it():
    assert (
        README.index("TORCH_CPU=1")
        < README.index(f"TORCH_INDEX={CPU_INDEX}")
        < README.index("make book TORCH_CPU=1   #")
    )


def test_the_book_never_reads_an_environment_folder_the_makefile_creates():
    """`make integrations` creates .venv-lm-polygraph and .venv-uqlm in the repository root; their packages ship
    Markdown templates whose front matter is not YAML, and a book that read them failed to build."""
    import fnmatch

    import yaml

    patterns = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["exclude_patterns"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    folders = {".venv"} | {
        f".venv-{name}" for name in re.findall(r"\.venv-\$\*|\.venv-([a-z][a-z_-]+)", makefile) if name
    }
    assert {".venv-lm-polygraph", ".venv-uqlm"} <= folders, folders
    for folder in sorted(folders):
        assert any(fnmatch.fnmatch(folder, p) for p in patterns), f"{folder} is not in _config.yml exclude_patterns"


EDITABLE_BUILD = """
import sys, warnings
import setuptools.build_meta as backend
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    backend.build_editable(sys.argv[1])
for w in caught:
    print(f"caught warning {w.category.__name__}: {str(w.message).splitlines()[0]}")
"""


def test_an_editable_install_draws_no_boxed_setuptools_warning(tmp_path):
    """Issue 32: every `pip install -e .` showed setuptools' boxed "Editable installation" notice (pip relays it as
    a BuildBackendWarning): with the package at the root and no package-dir, setuptools installed an import hook
    and warned about it. The build backend, run as pip runs it, now warns of nothing."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "shapley", src / "shapley", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    (tmp_path / "wheel").mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", EDITABLE_BUILD, str(tmp_path / "wheel")],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert [ln for ln in proc.stdout.splitlines() if ln.startswith("caught warning")] == []
    assert [p.suffix for p in (tmp_path / "wheel").iterdir()] == [".whl"]
