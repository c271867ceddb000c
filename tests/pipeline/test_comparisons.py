"""Is the difference significant: ``comparisons.csv``, each method against Shap on the same questions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from shapley.core import metrics as M
from shapley.pipeline.evaluate.comparisons import COMPARISON_COLUMNS, compare_methods


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
    t = compare_methods(df, methods=["Shap", "Good", "Bad", "Twin"], n_boot=500, seed=3).set_index("method")
    assert list(compare_methods(df, methods=["Good"], n_boot=10).columns) == list(COMPARISON_COLUMNS)
    assert "Shap" not in t.index and (t["reference"] == "Shap").all()
    assert t.loc["Good", "outcome"] == "win" and t.loc["Bad", "outcome"] == "loss" and t.loc["Twin", "outcome"] == "tie"
    assert t.loc["Twin", "delta_auroc"] == 0.0 and t.loc["Twin", "delong_p"] == 1.0
    assert "p_value" not in t and "p_holm" not in t  # the bootstrap gives intervals only
    for m in ("Good", "Bad"):
        expected = M.auroc(df[m], df["correct"]) - M.auroc(df["Shap"], df["correct"])
        assert t.loc[m, "delta_auroc"] == pytest.approx(expected)
        assert t.loc[m, "lo"] <= t.loc[m, "delta_auroc"] <= t.loc[m, "hi"]
        # the interval of the core's paired interval with the run's seed, its ends' MC errors within target
        r = M.paired_interval(M.auroc, df[m].to_numpy(), df["Shap"].to_numpy(), df["correct"], n_boot=500, seed=3)
        assert (t.loc[m, "lo"], t.loc[m, "hi"], t.loc[m, "n_boot"]) == (r.lo, r.hi, r.n_boot)
        assert max(t.loc[m, "lo_mcse"], t.loc[m, "hi_mcse"]) <= M.MCSE_TARGET and t.loc[m, "n_boot"] >= 500
        d = M.delong_test(df[m].to_numpy(), df["Shap"].to_numpy(), df["correct"])
        assert (t.loc[m, "delong_p"], t.loc[m, "delong_z"]) == (d.p_value, d.z) and d.p_value < 0.05
    np.testing.assert_array_equal(t["delong_p_holm"], M.holm(t["delong_p"].to_numpy()))


def test_outcome_and_holm_delong_do_not_depend_on_the_bootstrap_seed():
    """A borderline difference: with the bootstrap's Holm p deciding, the outcome followed the seed."""
    rng = np.random.default_rng(5)
    m = 120
    correct = rng.random(m) < 0.5
    signal = np.where(correct, 0.0, 1.0)
    df = pd.DataFrame({"id": [f"q{i}" for i in range(m)], "correct": correct, "Shap": signal + rng.normal(0, 1.2, m)})
    for k in range(6):
        df[f"M{k}"] = signal + rng.normal(0, 0.8 + 0.15 * k, m)
    methods = ["Shap", *[f"M{k}" for k in range(6)]]
    a = compare_methods(df, methods=methods, n_boot=200, seed=1)
    b = compare_methods(df, methods=methods, n_boot=200, seed=2)
    for col in ("outcome", "delong_p", "delong_p_holm", "delta_auroc", "delong_z"):
        assert a[col].tolist() == b[col].tolist()
    assert not np.array_equal(a["lo"], b["lo"])  # the intervals alone follow the seed
    assert (np.abs(a["lo"] - b["lo"]) < 6 * M.MCSE_TARGET).all()  # ... within their Monte-Carlo error


def test_pairs_on_the_questions_both_methods_scored():
    df = _frame()
    df.loc[:29, "Good"] = np.nan  # Good skipped on 30 questions
    df.loc[70:, "Shap"] = np.nan  # Shap skipped on 10 others
    t = compare_methods(df, methods=["Good"], n_boot=200).set_index("method")
    shared = df.iloc[30:70]
    assert t.loc["Good", "n"] == 40
    expected = M.auroc(shared["Good"], shared["correct"]) - M.auroc(shared["Shap"], shared["correct"])
    assert t.loc["Good", "delta_auroc"] == pytest.approx(expected)


def test_infinite_scores_undefined_comparisons_and_no_reference():
    df = _frame(m=20)
    df.loc[0, "Good"] = math.inf  # ranked at the top, as in metrics.csv
    df["OneClass"] = np.where(df["correct"], np.nan, 1.0)  # scored only where wrong
    t = compare_methods(df, methods=["Good", "OneClass", "Twin"], n_boot=100).set_index("method")
    assert "Twin" not in t.index  # a method without scores is not compared (skipped.csv says why)
    assert math.isfinite(t.loc["Good", "delta_auroc"])
    assert math.isnan(t.loc["OneClass", "delong_p"]) and math.isnan(t.loc["OneClass", "delong_p_holm"])
    assert t.loc["OneClass", "outcome"] == "undefined" and "one correctness class" in t.loc["OneClass", "note"]
    empty = compare_methods(df.drop(columns=["Shap"]), methods=["Good"], n_boot=10)
    assert empty.empty and list(empty.columns) == list(COMPARISON_COLUMNS)


@pytest.mark.parametrize("lowest", [0.25, -3.0, -1e20])
def test_infinite_scores_rank_strictly_beyond_the_finite_ones(lowest):
    """Issue 27: -inf is mapped strictly below the lowest finite score and +inf strictly above the highest
    (never onto them: they would tie), even where x - 1 == x in floating point."""
    from shapley.pipeline.evaluate.comparisons import rankable

    u = np.array([0.5, -math.inf, lowest, math.inf, 2.0])
    r, n_inf = rankable(u)
    assert n_inf == 2 and np.isfinite(r).all()
    assert r[1] < r[2] == metrics_round(lowest) and r[3] > r[4]
    np.testing.assert_array_equal(np.argsort(r, kind="stable"), [1, 2, 0, 4, 3])
    # AUROC: -inf on a correct answer, lowest finite on a wrong one: the pair is ordered, not tied
    assert M.auroc(r[[1, 2]], [True, False]) == 1.0


def metrics_round(x: float) -> float:
    return float(M.round_scores(np.array([x]))[0])
