"""The LM-Polygraph cross-check of book/integrations: its tables (every row of the CSV, short names, no empty
table, no scroll box), its freshness record (STALE when an input or the code changes), and the decomposition of
Ecc's AUROC difference."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shapley.companion import crosscheck
from shapley.core.metrics import auroc
from tests.test_architecture import package_imports

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"


def _write(tmp_path: Path, name: str, frame: pd.DataFrame) -> Path:
    (tmp_path / "crosscheck").mkdir(exist_ok=True)
    frame.to_csv(tmp_path / "crosscheck" / name, index=False)
    return tmp_path


def test_the_differences_table_names_runs_and_peers_shortly_and_keeps_every_row(tmp_path: Path):
    frame = pd.DataFrame(
        {
            "source": ["triviaqa_llama13b/minilm_n10", "random (3 x n=4, seed 0)"],
            "method": ["EigV", "KLE_their_definition"],
            "peer": ["EigValLaplacian_NLI_score_entail", "KernelLanguageEntropy"],
            "n_matrices": [200, 3],
            "max_abs_diff": [4.9e-15, 0.0],
            "max_abs_diff_float32": [3.2e-07, 6.3e-09],
            "spearman": [1.0, 0.99079],
            "max_abs_diff_vs_committed": [0.0, float("nan")],
        }
    )
    html = crosscheck.differences_html(_write(tmp_path, "lm_polygraph.csv", frame))
    assert "scroll" not in html  # it fits the text column (issue 32): no scroll box
    assert html.count("<tr") == 1 + 2 + 2  # header, a heading row per source and one row per CSV row
    # the row names the run by its last folder; the caption names the folder of the runs once
    assert ">minilm_n10: 200 matrices<" in html and "triviaqa_llama13b/minilm_n10" not in html
    assert ">random (3 x n=4, seed 0): 3 matrices<" in html and ">KLE their definition<" in html
    assert ">EigValLaplacian<" in html and "NLI_score_entail" not in html
    assert "4.9e-15" in html and "0.9908" in html


def test_the_uemanager_table_shows_both_aurocs(tmp_path: Path):
    frame = pd.DataFrame(
        {
            "run": ["triviaqa_llama13b/minilm_n10"],
            "method": ["Ecc"],
            "peer": ["Eccentricity_NLI_score_entail"],
            "n_questions": [500],
            "auroc_lm_polygraph": [0.83368],
            "auroc_ours": [0.83337],
            "prr_lm_polygraph": [0.797],
            "prr_normalized_lm_polygraph": [0.7097],
            "prr_ours": [0.7055],
        }
    )
    html = crosscheck.uemanager_html(_write(tmp_path, "uemanager_triviaqa.csv", frame))
    assert "0.8337" in html and "0.8334" in html and ">minilm_n10: 500 questions<" in html


def test_a_missing_csv_says_which_file_and_command(tmp_path: Path):
    for table in (crosscheck.differences_html, crosscheck.uemanager_html):
        html = table(tmp_path)
        assert "not computed" in html and "make results" in html and "<table" not in html


def test_the_committed_record_is_fresh_and_its_tables_render():
    assert crosscheck.RECORD.read(RESULTS)[1] == []
    assert "<table" in crosscheck.differences_html(RESULTS)
    assert "<table" in crosscheck.uemanager_html(RESULTS)


def test_the_record_digests_every_file_git_tracks_that_the_numbers_come_from():
    record = json.loads((RESULTS / crosscheck.RECORD.path).read_text())
    hashed = set(record["freshness"]["inputs"])
    repo = {os.path.normpath(f"results/{p}") for p in hashed}  # paths in the repository
    assert {crosscheck.SCRIPT, crosscheck.ENVIRONMENT, f"results/{crosscheck.MANAGER_RUN}/metrics.csv"} <= repo
    assert {f"results/{p}" for p in crosscheck.run_files(RESULTS)} <= repo
    tracked = set(subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True).stdout.split())
    assert repo <= tracked, sorted(repo - tracked)


def test_the_record_digests_the_code_the_script_imports():
    script = ROOT / crosscheck.SCRIPT
    imported = {m for m in package_imports(script) if (ROOT / (m.replace(".", "/") + ".py")).is_file()}
    assert imported and imported <= set(crosscheck.RECORD.code_modules)


def _copy(tmp_path: Path) -> Path:
    """A copy of the repository's files the cross-check depends on under ``tmp_path``, with a fresh record; its
    results folder."""
    results = tmp_path / "results"
    for rel in [*crosscheck.inputs(RESULTS), *(f"crosscheck/{name}" for name in crosscheck.OUTPUTS)]:
        (results / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(RESULTS / rel, results / rel)
    record = json.loads((results / crosscheck.RECORD.path).read_text())
    record["freshness"] = crosscheck.RECORD.freshness(results)  # fresh, whatever the committed record says
    (results / crosscheck.RECORD.path).write_text(json.dumps(record))
    return results


@pytest.mark.parametrize("changed", ["triviaqa_llama13b/minilm_n5/stages.jsonl.gz", "../constraints-lm-polygraph.txt"])
def test_the_page_says_stale_when_an_input_changes(tmp_path: Path, changed: str):
    results = _copy(tmp_path)
    assert crosscheck.RECORD.read(results)[1] == []
    shutil.copyfile(RESULTS / "triviaqa_llama13b/minilm_n10/stages.jsonl.gz", results / changed)  # other content
    assert changed in "; ".join(crosscheck.RECORD.read(results)[1])
    assert "<table" in crosscheck.differences_html(results) and "<table" in crosscheck.uemanager_html(results)
    (results / changed).unlink()
    assert crosscheck.RECORD.read(results)[1]


def test_the_page_says_stale_when_the_record_is_torn(tmp_path: Path):
    results = _copy(tmp_path)
    path = results / crosscheck.RECORD.path
    record = json.loads(path.read_text())
    for torn in ("{", json.dumps({**record, "seconds": "68"}), "[]"):  # a torn or ill-typed record is no record
        path.write_text(torn)
        assert "as good as missing" in "; ".join(crosscheck.RECORD.read(results)[1])
        assert set(crosscheck.ecc_gap_text(results).values()) == {"n/a"}
    path.write_text(json.dumps({**record, "ecc_auroc_gap": {"pairs": "many"}}))
    assert set(crosscheck.ecc_gap_text(results).values()) == {"n/a"}


def test_names_from_the_files_are_escaped(tmp_path: Path):
    frame = pd.DataFrame({"source": ["<b>x"], "method": ["<i>"], "peer": ["&"], "n_matrices": [1]})
    frame = frame.assign(max_abs_diff=0.0, max_abs_diff_float32=0.0, spearman=1.0, max_abs_diff_vs_committed=0.0)
    html = crosscheck.differences_html(_write(tmp_path, "lm_polygraph.csv", frame))
    assert "<b>" not in html and "<i>" not in html and "&lt;b&gt;x: 1 matrices" in html


def test_ecc_gap_counts_the_pairs_round_off_decides():
    # two questions with identical answers (the same Ecc, 0 up to round-off), a pair at sqrt(2) that round-off
    # splits by one unit in the last place, and clear pairs
    zero, root2 = 1.24e-16, np.sqrt(2.0)
    ours = np.array([zero, zero, root2, np.nextafter(root2, 2.0), 0.5, 0.9])
    incorrect = np.array([True, False, True, False, False, True])
    identical = np.array([True, True, False, False, False, False])
    gap = crosscheck.ecc_gap(ours, ours, incorrect, identical)  # a peer that ranks our raw floats
    assert gap["pairs"] == 3 * 3
    assert gap["auroc_ours"] == auroc(ours, ~incorrect)  # the pages' metric, which rounds
    assert gap["auroc_peer"] == gap["auroc_unrounded"] == gap["auroc_ours"] - 0.5 / 9
    assert (gap["tied_pairs"], gap["tied_identical"], gap["tied_values"]) == (2, 1, [round(root2, 11)])
    assert (gap["differing_pairs"], gap["differing_tied"], gap["differing_identical"]) == (1, 1, 0)
    assert gap["gap_pairs"] == gap["unrounded_gain_pairs"] == -0.5  # the sqrt(2) pair: a tie (1/2) -> 0
    peer = ours.copy()
    peer[0] = 2 * zero  # round-off orders the identical questions the other way
    gap = crosscheck.ecc_gap(peer, ours, incorrect, identical)
    assert (gap["differing_pairs"], gap["differing_tied"], gap["differing_identical"], gap["gap_pairs"]) == (2, 2, 1, 0)


def test_ecc_gap_refuses_vectors_of_different_lengths():
    with pytest.raises(ValueError, match="one length"):
        crosscheck.ecc_gap([1.0, 2.0], [1.0], [True, False], [False, False])


def test_the_committed_gap_agrees_with_the_committed_metrics_and_reads_as_roots():
    gap = json.loads((RESULTS / crosscheck.RECORD.path).read_text())["ecc_auroc_gap"]
    metrics = pd.read_csv(RESULTS / crosscheck.MANAGER_RUN / "metrics.csv").set_index("method")
    manager = pd.read_csv(RESULTS / "crosscheck" / "uemanager_triviaqa.csv").set_index("method")
    assert gap["auroc_ours"] == pytest.approx(metrics.loc["Ecc", "auroc"], abs=1e-15)
    assert gap["auroc_peer"] == pytest.approx(manager.loc["Ecc", "auroc_lm_polygraph"], abs=1e-15)
    assert gap["gap_pairs"] == pytest.approx((gap["auroc_peer"] - gap["auroc_ours"]) * gap["pairs"], abs=1e-6)
    text = crosscheck.ecc_gap_text(RESULTS)
    assert set(text) == set(crosscheck.GAP_TEXT_KEYS) and "n/a" not in text.values()
    assert text["tied_values"].startswith("1, √2, √3")
    assert set(crosscheck.ecc_gap_text(Path("/nonexistent")).values()) == {"n/a"}
