"""The judge-robustness table: the same answers under two entailment backends, on synthetic run directories."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shapley.companion import judges
from shapley.core import metrics

RNG = np.random.default_rng(7)
M = 120
CORRECT = RNG.random(M) < 0.5
IDS = [f"q{i:03d}" for i in range(M)]


def _informative(strength: float) -> np.ndarray:
    """Scores that are higher on incorrect answers, by ``strength`` standard deviations."""
    return RNG.normal(size=M) + strength * (~CORRECT)


def _run(d: Path, scores: dict[str, np.ndarray], rows: slice = slice(None)) -> Path:
    d.mkdir(parents=True)
    frame = pd.DataFrame({"id": IDS, "correct": CORRECT, **scores}).iloc[rows]
    frame.to_csv(d / "scores.csv", index=False)
    pd.DataFrame({"method": list(scores), "auroc": 0.5}).to_csv(d / "metrics.csv", index=False)
    return d


def test_judge_robustness_recomputes_on_the_questions_both_runs_scored(tmp_path):
    shap, good, flat = _informative(2.0), _informative(1.5), RNG.normal(size=M)
    a = _run(tmp_path / "a", {"Shap": shap, "SE": good, "Ecc": flat, "P(T)": np.full(M, np.nan)})
    b_scores = {"Shap": _informative(0.2), "SE": good, "Ecc": flat, "P(T)": _informative(1.0)}
    b = _run(tmp_path / "b", b_scores, rows=slice(0, 80))  # the first 80 questions only, like --limit
    r = judges.judge_robustness(a, b)
    assert r.n_questions == 80
    assert set(r.table["method"]) == {"Shap", "SE", "Ecc"}  # P(T) undefined under a: left out
    t = r.table.set_index("method")
    c = CORRECT[:80]
    assert t.loc["SE", "auroc_a"] == pytest.approx(metrics.auroc(good[:80], c))
    assert t.loc["Shap", "auroc_b"] == pytest.approx(metrics.auroc(b_scores["Shap"][:80], c))
    d = metrics.delong_test(flat[:80], shap[:80], c)
    p = metrics.holm([metrics.delong_test(good[:80], shap[:80], c).p_value, d.p_value])[1]
    assert t.loc["Ecc", "outcome_a"] == ("loss" if p < 0.05 and d.delta < 0 else "tie")
    assert t.loc["Shap", "rank_a"] == 1 and t.loc["Shap", "rank_b"] > 1
    caption = judges.judge_robustness_frame(a, b, "MiniLM", "SmolLM2 judge").attrs["caption"]
    assert "on the 80 questions both scored" in caption and "Spearman" in caption and not math.isnan(r.spearman)


def test_judge_robustness_refuses_a_missing_second_run(tmp_path):
    a = _run(tmp_path / "a", {"Shap": _informative(1.0), "SE": _informative(0.5)})
    with pytest.raises(FileNotFoundError):
        judges.judge_robustness_frame(a, tmp_path / "absent", "MiniLM", "SmolLM2 judge")


def test_judge_table_names_each_column_by_its_judge(tmp_path):
    """No two columns share a header (issue 37: two columns were each headed "Rank" and "vs Shap")."""
    a = _run(tmp_path / "a", {"Shap": _informative(2.0), "SE": _informative(1.5), "Ecc": RNG.normal(size=M)})
    b = _run(tmp_path / "b", {"Shap": _informative(1.0), "SE": _informative(1.5), "Ecc": RNG.normal(size=M)})
    heads = list(judges.judge_robustness_frame(a, b, "MiniLM", "SmolLM2 judge").columns)
    assert len(heads) == len(set(heads)) == 8, heads
    assert "Rank, MiniLM" in heads and "vs Shap, SmolLM2 judge" in heads
