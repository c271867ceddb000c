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
    page = judges.judge_robustness_html(a, b, "MiniLM", "SmolLM2 judge")
    assert "on the 80 questions both scored" in page and "Spearman" in page
    words = judges.judge_findings(a, b, "SmolLM2 judge")
    assert "On the 80 questions both judges scored" in words
    status_a = judges.claim_status(dict(zip(t.index, t["outcome_a"], strict=True)))
    status_b = judges.claim_status(dict(zip(t.index, t["outcome_b"], strict=True)))
    assert f"is {status_a} under the first judge" in words and f"and {status_b} under SmolLM2 judge" in words
    assert f"{r.n_kept} of {r.n_compared} paired comparisons" in words and not math.isnan(r.spearman)


def test_judge_robustness_says_when_the_second_run_is_missing(tmp_path):
    a = _run(tmp_path / "a", {"Shap": _informative(1.0), "SE": _informative(0.5)})
    page = judges.judge_robustness_html(a, tmp_path / "absent", "MiniLM", "SmolLM2 judge")
    assert "not yet run" in page and "make results" in page
    assert "has not been run yet" in judges.judge_findings(a, tmp_path / "absent", "SmolLM2 judge")


@pytest.mark.parametrize(
    ("outcomes", "status"),
    [
        ({"SE": "loss", "DSE": "loss", "Shap": "undefined"}, "supported"),  # significant wins over every baseline
        ({"SE": "loss", "DSE": "tie"}, "not supported"),  # one tie is enough
        ({"SE": "tie", "DSE": "tie", "EigV": "win"}, "not supported"),  # a loss outside the paper's baselines
        ({"SE": "loss", "LexSim": "win"}, "contradicted"),  # a baseline named in the paper's Sec. 4 text
        ({"SE": "loss", "DSE": "win"}, "contradicted"),  # a paper baseline significantly better
        ({"EigV": "loss", "SE": "undefined"}, "not tested"),  # no paper baseline with a defined outcome
    ],
)
def test_claim_status_rests_on_the_paired_outcomes_against_the_paper_baselines(outcomes, status):
    assert judges.claim_status(outcomes) == status


def test_judge_findings_names_ties_and_significant_outcomes_from_the_data(tmp_path):
    strong, weak = _informative(3.0), _informative(0.0)  # Shap far better than ER (a paper baseline) under a
    a = _run(tmp_path / "a", {"Shap": strong, "ER": weak, "EigV": _informative(0.1)})
    b = _run(tmp_path / "b", {"Shap": weak, "ER": weak, "EigV": strong})  # under b: ER ties, EigV wins
    r = judges.judge_robustness(a, b)
    t = r.table.set_index("method")
    assert (t.loc["ER", "outcome_a"], t.loc["ER", "outcome_b"], t.loc["EigV", "outcome_b"]) == ("loss", "tie", "win")
    words = judges.judge_findings(a, b, "judge B", "judge A")
    assert "is supported under judge A (Shap: significantly better than EigV (not compared in the paper), ER)" in words
    assert (
        "not supported under judge B (Shap: no significant difference with ER; significantly worse than EigV "
        "(not compared in the paper))" in words
    )


def test_judge_table_names_each_column_by_its_judge(tmp_path):
    """No two columns share a header (issue 37: two columns were each headed "Rank" and "vs Shap")."""
    import re

    a = _run(tmp_path / "a", {"Shap": _informative(2.0), "SE": _informative(1.5), "Ecc": RNG.normal(size=M)})
    b = _run(tmp_path / "b", {"Shap": _informative(1.0), "SE": _informative(1.5), "Ecc": RNG.normal(size=M)})
    page = judges.judge_robustness_html(a, b, "MiniLM", "SmolLM2 judge")
    heads = re.findall(r"<th[^>]*>(.*?)</th>", page.split("</thead>")[0])
    assert len(heads) == len(set(heads)) == 8, heads
    assert "Rank, MiniLM" in heads and "vs Shap, SmolLM2 judge" in heads
