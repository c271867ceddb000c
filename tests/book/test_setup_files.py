"""What the README promises, the Makefile, pyproject.toml, jupytext.toml and .gitignore deliver.

Fast: reads files and asks ``make -n`` (dry run) what it would do; installs and builds nothing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
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


@needs_make
def test_setup_takes_the_torch_requirement_and_index_and_vendors_mathjax(tmp_path):
    default = _dry_run("setup", venv=tmp_path / "v")
    assert '"torch==2.13.0"' in default and "--index-url" not in default
    assert "bash scripts/fetch_mathjax.sh" in default  # MathJax at setup, so `make book` needs no network
    for ask in ("TORCH_CPU=1", f"TORCH_INDEX={CPU_INDEX}"):
        cpu = _dry_run("setup", ask, "TORCH=torch==2.13.0", venv=tmp_path / "v")
        # the CPU index when asked, and PyPI with a message when that index cannot be reached (issue 23)
        tried, fallback = cpu.split(f'--index-url {CPU_INDEX} "torch==2.13.0" || ', 1)
        assert "--retries 1" in tried and "installing it from PyPI instead" in fallback
        assert 'pip install --quiet "torch==2.13.0"; }' in fallback


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
    assert "jupytext --to ipynb --execute" in out
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
    assert README.index("TORCH_CPU=1") < README.index(f"TORCH_INDEX={CPU_INDEX}") < README.index("make book    #")


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
