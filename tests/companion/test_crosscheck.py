"""The LM-Polygraph cross-check tables of book/integrations: every row of the CSV, short names, no empty table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from shapley.companion import crosscheck

ROOT = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, name: str, frame: pd.DataFrame) -> Path:
    (tmp_path / "crosscheck").mkdir(exist_ok=True)
    frame.to_csv(tmp_path / "crosscheck" / name, index=False)
    return tmp_path


def test_the_differences_table_names_runs_and_peers_shortly_and_keeps_every_row(tmp_path: Path):
    frame = pd.DataFrame(
        {
            "source": ["triviaqa_llama13b/minilm_n10", "random (3 x n=4, seed 0)"],
            "method": ["EigV", "Shap"],
            "peer": ["EigValLaplacian_NLI_score_entail", "Shap_beta0.5_nearest"],
            "n_matrices": [200, 3],
            "max_abs_diff": [4.9e-15, 0.0],
            "max_abs_diff_float32": [3.2e-07, 6.3e-09],
            "spearman": [1.0, 0.99079],
            "max_abs_diff_vs_committed": [0.0, float("nan")],
        }
    )
    html = crosscheck.differences_html(_write(tmp_path, "lm_polygraph.csv", frame))
    assert html.startswith('<div class="scroll-pinned">')
    assert html.count("<tr>") == 1 + 2  # header and one row per CSV row
    assert "minilm_n10" in html and "triviaqa_llama13b/" not in html
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
    assert "0.8337" in html and "0.8334" in html and ">500<" in html


def test_a_missing_csv_says_which_file_and_command(tmp_path: Path):
    for table in (crosscheck.differences_html, crosscheck.uemanager_html):
        html = table(tmp_path)
        assert "not computed" in html and "make results" in html and "<table" not in html


def test_the_committed_csvs_render():
    assert "<table" in crosscheck.differences_html(ROOT / "results")
    assert "<table" in crosscheck.uemanager_html(ROOT / "results")
