"""`make properties` in a reduced mode: the target's commands, the thorough profile, and the report script
on two small searches (the full run takes hours; it is never run by the test-suite)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parents[2]


def _report():
    spec = importlib.util.spec_from_file_location("properties_report", ROOT / "scripts" / "properties_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_properties_runs_the_thorough_profile_then_the_report() -> None:
    out = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "properties", "PROPERTIES_EXAMPLES=7"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "HYPOTHESIS_PROFILE=thorough" in out and "HYPOTHESIS_MAX_EXAMPLES=7" in out
    assert "--hypothesis-show-statistics" in out and "tests/theory/test_properties.py" in out
    assert "PROPERTIES_EXAMPLES=7" in out and "scripts/properties_report.py" in out


def test_thorough_profile_is_large_and_not_derandomized() -> None:
    thorough = settings.get_profile("thorough")
    assert not thorough.derandomize and thorough.database is None and thorough.max_examples >= 1
    assert settings.get_profile("ci").derandomize


def test_report_prints_search_budget_and_finding(monkeypatch, capsys) -> None:
    report = _report()
    monkeypatch.setenv("PROPERTIES_EXAMPLES", "5")
    monkeypatch.setattr(report, "SEARCHES", [("2", "rv", {"n_range": (3, 3)}), ("2", "sentence", {"n_range": (7, 7)})])
    monkeypatch.setattr(report, "STEPS", ["2"])
    assert report.main() == 0
    out = capsys.readouterr().out
    assert "5 Hypothesis examples each, not derandomized" in out
    assert "Property 2, rv reading" in out and "examples run: 5" in out and "none found" in out
    assert "hub(n=7, eps_hub=0.1, eps_rest=0)); re-checked: fails" in out  # the sweep's find, re-checked
    assert "Appendix A step of Property 2" in out


def test_a_bad_example_count_exits_2_with_one_line(monkeypatch, capsys) -> None:
    """Issue 38's class rule: ``PROPERTIES_EXAMPLES=abc`` ended in a ValueError traceback when the script was run
    directly (``make properties`` checks it first)."""
    report = _report()
    for bad in ("abc", "0", "-3", "1e3"):
        monkeypatch.setenv("PROPERTIES_EXAMPLES", bad)
        assert report.main() == 2
        assert capsys.readouterr().err.count("\n") == 1
