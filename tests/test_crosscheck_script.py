"""scripts/crosscheck_lm_polygraph.py checks its inputs and output folder before any work (exit 2, one line, no
traceback, nothing written) and replaces its three output files together (issue 33, item 10). The computation
itself needs LM-Polygraph: tests_integrations and ``make results`` run it."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shapley.companion import crosscheck

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / crosscheck.SCRIPT
spec = importlib.util.spec_from_file_location("crosscheck_script", SCRIPT)
assert spec is not None and spec.loader is not None
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A copy of the cross-check's inputs (``results/`` and the files beside it) and a samples file whose digest
    the run's config records; the old output set in ``results/crosscheck``."""
    results = tmp_path / "results"
    for rel in [*crosscheck.inputs(ROOT / "results"), *(f"crosscheck/{n}" for n in crosscheck.OUTPUTS)]:
        (results / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / "results" / rel, results / rel)
    config = results / crosscheck.MANAGER_RUN / "config.json"
    samples = tmp_path / "samples.jsonl.gz"
    samples.write_bytes(b"samples")
    recorded = json.loads(config.read_text())["config"]["data"]["sha256"]
    config.write_text(config.read_text().replace(recorded, hashlib.sha256(b"samples").hexdigest()))
    return tmp_path


def _outputs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _run(repo: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    out = repo / "results" / "crosscheck"
    before = _outputs(out)
    args = ["--results", str(repo / "results"), "--samples", str(repo / "samples.jsonl.gz"), "--out", str(out)]
    code = script.main([*args, *extra])
    err = capsys.readouterr().err
    assert _outputs(out) == before  # nothing written
    return code, err


def _break(repo: Path, what: str) -> None:
    """One input of the copy ``repo`` made missing or wrong (``what``: a file of the UEManager run, or one of
    ``run files``, ``digest``, ``samples``, ``no samples``)."""
    results, run, samples = repo / "results", repo / "results" / crosscheck.MANAGER_RUN, repo / "samples.jsonl.gz"
    if what in ("metrics.csv", "config.json"):
        (run / what).unlink()
    elif what == "run files":
        for rel in crosscheck.run_files(results):
            (results / rel).unlink()
    elif what == "digest":
        (run / "config.json").write_text("{}")
    elif what == "samples":
        samples.write_bytes(b"other samples")
    else:
        samples.unlink()


@pytest.mark.parametrize(
    ("what", "says"),
    [
        ("metrics.csv", "minilm_n10/metrics.csv is missing"),
        ("config.json", "minilm_n10/config.json is missing"),
        ("run files", "no run files"),
        ("digest", "records no SHA-256"),
        ("samples", "is not the one .*SHA-256"),
        ("no samples", "samples file .* is missing"),
    ],
)
def test_a_missing_or_wrong_input_stops_with_one_line_and_writes_nothing(
    repo: Path, capsys: pytest.CaptureFixture[str], what: str, says: str
):
    _break(repo, what)
    code, err = _run(repo, capsys)
    assert code == 2 and err.count("\n") == 1 and re.search(says, err), err


def test_an_output_path_that_is_a_file_stops(repo: Path, capsys: pytest.CaptureFixture[str]):
    blocker = repo / "a_file"
    blocker.write_text("")
    code, err = _run(repo, capsys, "--out", str(blocker / "crosscheck"))
    assert code == 2 and err.count("\n") == 1 and "cannot be written" in err
    assert blocker.read_text() == ""


def test_the_command_line_exits_2_without_a_traceback(repo: Path):
    # the main environment has no LM-Polygraph: the last check stops it, before any work
    args = ["--results", str(repo / "results"), "--samples", str(repo / "samples.jsonl.gz"), "--out", str(repo / "o")]
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)
    if importlib.util.find_spec("lm_polygraph") is not None:
        pytest.skip("LM-Polygraph is installed here: the script would run")
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert "lm_polygraph is not installed" in done.stderr and not (repo / "o").exists()
