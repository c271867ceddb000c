"""The mutant list of ``scripts/mutants.py`` (``make mutants``) does not rot: each snippet occurs exactly once in
the package, each mutant changes it, and each names a test selection that exists."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _mutants():
    spec = importlib.util.spec_from_file_location("mutants_script", ROOT / "scripts" / "mutants.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mutants_script"] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    return mod


MOD = _mutants()


def test_the_list_is_large_and_spans_the_layers():
    ids = [m.id for m in MOD.MUTANTS]
    assert len(ids) == len(set(ids)) and len(ids) >= 40
    assert {m.layer for m in MOD.MUTANTS} == {"core", "theory", "pipeline", "companion"}


@pytest.mark.parametrize("mutant", MOD.MUTANTS, ids=lambda m: m.id)
def test_each_snippet_occurs_exactly_once_and_is_changed(mutant):
    assert MOD.occurrences(mutant.before) == 1, f"{mutant.id}: {mutant.before!r}"
    assert len(MOD.locate(mutant.before)) == 1
    assert mutant.after != mutant.before
    paths = [t for t in mutant.tests if t.startswith("tests/")]
    assert paths and all((ROOT / p.split("::")[0]).is_file() for p in paths), mutant.tests


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--only", "kernel-no-half", "--layer", "pipeline"], "kernel-no-half is in layer core"),
        (["--only", "no-such-mutant"], "unknown mutant id(s): no-such-mutant"),
        (["--only", "kernel-no-half", "no-such-mutant", "--layer", "core"], "unknown mutant id(s): no-such-mutant"),
    ],
)
def test_the_parser_refuses_ids_it_cannot_run_and_says_why(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        MOD.main([*argv, "--list"])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_a_known_id_in_its_own_layer_is_listed(capsys):
    assert MOD.main(["--only", "kernel-no-half", "--layer", "core", "--list"]) == 0
    assert "kernel-no-half" in capsys.readouterr().out
