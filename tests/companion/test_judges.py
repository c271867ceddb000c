"""The judge-robustness table: the same answers under two entailment backends, on synthetic run directories."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from shapley.companion import judges

TEMPLATE = Path(__file__).resolve().parents[2] / "results" / "triviaqa_llama13b" / "minilm_n10" / "config.json"


def _run(d: Path, aurocs: dict[str, float], delong: dict[str, tuple[float, float]], limit=None) -> Path:
    d.mkdir(parents=True)
    rec = json.loads(TEMPLATE.read_text())
    rec["config"]["data"]["limit"] = limit
    (d / "config.json").write_text(json.dumps(rec))
    pd.DataFrame({"method": list(aurocs), "auroc": list(aurocs.values())}).to_csv(d / "metrics.csv", index=False)
    pd.DataFrame(
        {
            "method": list(delong),
            "reference": "Shap",
            "delta_auroc": [v[0] for v in delong.values()],
            "lo": 0.0,
            "hi": 0.0,
            "delong_p": [v[1] for v in delong.values()],
        }
    ).to_csv(d / "comparisons.csv", index=False)
    return d


def test_judge_robustness_ranks_correlations_and_kept_outcomes(tmp_path):
    a = _run(
        tmp_path / "a",
        {"Shap": 0.80, "SE": 0.70, "Deg": 0.60, "Ecc": 0.50, "P(T)": math.nan},
        {"SE": (-0.10, 0.001), "Deg": (-0.20, 0.001), "Ecc": (-0.30, 0.5)},
    )
    b = _run(
        tmp_path / "b",
        {"Shap": 0.65, "SE": 0.75, "Deg": 0.60, "Ecc": 0.55, "P(T)": 0.9},
        {"SE": (0.10, 0.001), "Deg": (-0.05, 0.001), "Ecc": (-0.10, 0.9)},
    )
    r = judges.judge_robustness(a, b)
    assert list(r.table["method"]) == ["Shap", "SE", "Deg", "Ecc"]  # P(T) undefined under a: left out
    assert r.reference_rank() == (1, 2)
    # outcomes: SE loss -> win (changed), Deg loss -> loss (kept), Ecc tie -> tie (kept)
    assert r.table.set_index("method")["kept"].to_dict() == {"Shap": None, "SE": False, "Deg": True, "Ecc": True}
    assert (r.n_kept, r.n_compared) == (2, 3)
    assert r.spearman == pytest.approx(0.8) and r.kendall == pytest.approx(2 / 3)
    assert r.same_questions
    page = judges.judge_robustness_html(a, b, "MiniLM", "SmolLM2 judge")
    assert "Spearman 0.80" in page and "Kendall 0.67" in page and "the same questions" in page
    words = judges.judge_findings(a, b, "SmolLM2 judge")
    assert "ranks 1 of 4 under the first judge and 2" in words and "holds under one judge only" in words
    assert "2 of 3 paired comparisons" in words


def test_judge_robustness_says_when_the_second_run_is_missing_or_on_other_questions(tmp_path):
    a = _run(tmp_path / "a", {"Shap": 0.8, "SE": 0.7, "Deg": 0.6}, {"SE": (-0.1, 0.01)})
    page = judges.judge_robustness_html(a, tmp_path / "absent", "MiniLM", "SmolLM2 judge")
    assert "not yet run" in page and "make results" in page
    assert "has not been run yet" in judges.judge_findings(a, tmp_path / "absent", "SmolLM2 judge")
    b = _run(tmp_path / "b", {"Shap": 0.9, "SE": 0.7, "Deg": 0.6}, {"SE": (-0.2, 0.01)}, limit=200)
    r = judges.judge_robustness(a, b)
    assert not r.same_questions and "different question sets" in judges.judge_robustness_html(a, b, "x", "y")
    assert "survives the change of judge" in judges.judge_findings(a, b, "y")
    shutil.rmtree(b)
