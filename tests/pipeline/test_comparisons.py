"""Is the difference significant: ``comparisons.csv``, each method against Shap on the same questions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from shapley.core import metrics as M
from shapley.pipeline import evaluate, experiment
from tests import fakes


def _frame(m: int = 80, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    correct = np.arange(m) % 2 == 0
    signal = np.where(correct, 0.0, 1.0)
    return pd.DataFrame(
        {
            "id": [f"q{i}" for i in range(m)],
            "correct": correct,
            "Shap": signal + rng.normal(0, 1.5, m),  # weak
            "Good": signal + rng.normal(0, 0.2, m),  # near perfect: better than Shap
            "Bad": -signal + rng.normal(0, 0.2, m),  # reversed: worse than Shap
            "Twin": np.nan,
        }
    )


def test_wins_losses_and_ties_against_shap():
    df = _frame()
    df["Twin"] = df["Shap"]  # the same scores: no difference at all
    t = evaluate.compare_methods(df, methods=["Shap", "Good", "Bad", "Twin"], n_boot=500, seed=3).set_index("method")
    assert list(evaluate.compare_methods(df, methods=["Good"], n_boot=10).columns) == list(evaluate.COMPARISON_COLUMNS)
    assert "Shap" not in t.index and (t["reference"] == "Shap").all()
    assert t.loc["Good", "outcome"] == "win" and t.loc["Bad", "outcome"] == "loss" and t.loc["Twin", "outcome"] == "tie"
    assert t.loc["Twin", "delta_auroc"] == 0.0 and t.loc["Twin", "p_value"] == 1.0
    for m in ("Good", "Bad"):
        expected = M.auroc(df[m], df["correct"]) - M.auroc(df["Shap"], df["correct"])
        assert t.loc[m, "delta_auroc"] == pytest.approx(expected)
        assert t.loc[m, "lo"] <= t.loc[m, "delta_auroc"] <= t.loc[m, "hi"]
        # the same resamples as the core's paired bootstrap with the run's seed
        r = M.paired_bootstrap(M.auroc, df[m].to_numpy(), df["Shap"].to_numpy(), df["correct"], n_boot=500, seed=3)
        assert (t.loc[m, "lo"], t.loc[m, "hi"], t.loc[m, "p_value"]) == pytest.approx((r.lo, r.hi, r.p_value))
        assert 0 <= t.loc[m, "delong_p"] < 0.05
    np.testing.assert_allclose(t["p_holm"], M.holm(t["p_value"].to_numpy()))
    assert (t["p_holm"] >= t["p_value"]).all()


def test_pairs_on_the_questions_both_methods_scored():
    df = _frame()
    df.loc[:29, "Good"] = np.nan  # Good skipped on 30 questions
    df.loc[70:, "Shap"] = np.nan  # Shap skipped on 10 others
    t = evaluate.compare_methods(df, methods=["Good"], n_boot=200).set_index("method")
    shared = df.iloc[30:70]
    assert t.loc["Good", "n"] == 40
    expected = M.auroc(shared["Good"], shared["correct"]) - M.auroc(shared["Shap"], shared["correct"])
    assert t.loc["Good", "delta_auroc"] == pytest.approx(expected)


def test_infinite_scores_undefined_comparisons_and_no_reference():
    df = _frame(m=20)
    df.loc[0, "Good"] = math.inf  # ranked at the top, as in metrics.csv
    df["OneClass"] = np.where(df["correct"], np.nan, 1.0)  # scored only where wrong
    t = evaluate.compare_methods(df, methods=["Good", "OneClass", "Twin"], n_boot=100).set_index("method")
    assert "Twin" not in t.index  # a method without scores is not compared (skipped.csv says why)
    assert math.isfinite(t.loc["Good", "delta_auroc"])
    assert math.isnan(t.loc["OneClass", "p_value"]) and math.isnan(t.loc["OneClass", "p_holm"])
    assert t.loc["OneClass", "outcome"] == "tie" and "one correctness class" in t.loc["OneClass", "note"]
    empty = evaluate.compare_methods(df.drop(columns=["Shap"]), methods=["Good"], n_boot=10)
    assert empty.empty and list(empty.columns) == list(evaluate.COMPARISON_COLUMNS)


def test_score_samples_writes_comparisons(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 30)
    out = experiment.score_samples(fakes.samples_config(inp, n_boot=100), tmp_path / "run")
    t = pd.read_csv(out / "comparisons.csv")
    m = pd.read_csv(out / "metrics.csv")
    assert set(t["method"]) == set(m["method"]) - {"Shap"}
    assert set(t["outcome"]) <= {"win", "tie", "loss"}
    assert ((t["outcome"] != "tie") == (t["p_holm"] < 0.05)).all()
