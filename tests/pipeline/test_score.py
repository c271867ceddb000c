"""Scoring stage: every method on one question, skipping rules, PSD diagnostics, beta sweep, ER."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import shapley
from shapley.core.metrics import auroc
from shapley.pipeline.config import ScoringSettings as S
from shapley.pipeline.score import scores as score


def _bipartite(n: int = 8) -> np.ndarray:
    """Entailment pattern that makes R(beta=0.5) indefinite: two camps, each answer agreeing only with the
    other camp. For n = 8: lambda_min = 1 + 3 * 0.5 e^{-1/2} - 4 * 0.5 < 0."""
    half = n // 2
    P = np.zeros((n, n))
    P[:half, half:] = 1.0
    P[half:, :half] = 1.0
    np.fill_diagonal(P, 1.0)
    return P


def scored(x: score.ScoreInputs | dict, settings: S, **kw) -> score.QuestionScores:
    """score_question on inputs given as ScoreInputs or as a mapping of its fields."""
    x = x if isinstance(x, score.ScoreInputs) else score.ScoreInputs(**x)
    return score.score_question(score.QuestionContext(x, settings), **kw)


def _full_inputs(n: int = 5, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    P = rng.uniform(size=(n, n))
    np.fill_diagonal(P, 1.0)
    samples = ["Paris", "paris", "Lyon", "Paris, France", "Nice"][:n]
    return {
        "id": "q1",
        "samples": samples,
        "entail": P,
        "contradict": 1.0 - P,
        "sample_logprobs": [list(-rng.uniform(0.01, 2.0, size=k + 1)) for k in range(n)],
        "answer_logprobs": [-0.1, -2.0, -0.5],
        "answer_entropies": [0.3, 1.2, 0.1],
        "p_true": 0.8,
        "a4c_text": "Confidence: 70%",
    }


def test_registry_names_and_needs():
    inputs = {f.name for f in dataclasses.fields(score.ScoreInputs)}
    assert inputs >= {n for s in score.METHODS.values() for n in s.needs}
    for name in (
        "Shap",
        "SE",
        "DSE",
        "NumSet",
        "NE",
        "LNE",
        "LexSim",
        "EigV",
        "Deg",
        "Ecc",
        "KLE",
        "MaxL",
        "AvgL",
        "MaxE",
        "AvgE",
        "P(T)",
        "A4C",
        "ER",
    ):
        assert name in score.METHODS
    assert score.METHODS["ER"].func is None


def test_every_per_question_method_computed_with_full_inputs():
    r = scored(_full_inputs(), S(), methods=list(score.METHODS))
    expected = {m for m, s in score.METHODS.items() if s.func is not None}
    assert set(r.scores) == expected
    assert r.skipped == {}
    assert all(math.isfinite(v) for v in r.scores.values())
    assert r.diagnostics["n_samples"] == 5
    assert r.diagnostics["shap_psd"] is True and r.diagnostics["shap_psd_repaired"] is False


def test_shap_is_core_shapley_uncertainty():
    x = _full_inputs()
    r = scored(x, S(beta=0.4), methods=["Shap"]).scores
    assert r["Shap"] == pytest.approx(shapley.shapley_uncertainty(x["entail"], 0.4), abs=1e-12)


def test_missing_inputs_are_skipped_with_reason_not_zero():
    x = _full_inputs()
    for k in ("sample_logprobs", "answer_logprobs", "answer_entropies", "p_true", "a4c_text"):
        del x[k]
    r = scored(x, S())
    for m in ("SE", "NE", "LNE"):
        assert m not in r.scores
        assert "sample_logprobs" in r.skipped[m]
    assert "answer_logprobs" in r.skipped["MaxL"] and "answer_entropies" in r.skipped["AvgE"]
    assert "p_true" in r.skipped["P(T)"] and "a4c_text" in r.skipped["A4C"]
    assert {"Shap", "DSE", "NumSet", "LexSim", "EigV", "Deg", "Ecc", "KLE"} <= set(r.scores)
    assert "ER" not in r.scores and "ER" not in r.skipped  # metrics-stage method


def test_no_entailment_skips_entailment_methods():
    r = scored({"id": "x", "samples": ["a", "b"]}, S())
    assert set(r.scores) == {"LexSim"}
    assert "entail" in r.skipped["Shap"]


def test_unparseable_a4c_is_skipped_not_nan():
    x = _full_inputs()
    x["a4c_text"] = "I am quite sure"
    r = scored(x, S(), methods=["A4C", "P(T)"])
    assert "A4C" not in r.scores and "NaN" in r.skipped["A4C"]
    assert r.scores["P(T)"] == pytest.approx(0.2)


def test_a4c_partly_read_number_is_skipped_with_an_aggregate_reason():
    """issue 38 (6): "0,8" and "1e-1" were read as 0 and 1; the skip reason names no reply, so notes aggregate."""
    reasons = set()
    for reply in ("0,8", "Confidence: 1e-1", "confidence 0,75"):
        x = _full_inputs()
        x["a4c_text"] = reply
        r = scored(x, S(), methods=["A4C"])
        assert "A4C" not in r.scores
        reasons.add(r.skipped["A4C"])
    assert len(reasons) == 1
    assert "partly readable" in next(iter(reasons))


def test_non_psd_kernel_is_repaired_and_recorded():
    P = _bipartite(8)
    R = shapley.kernel_matrix(shapley.correlation_matrix(P), 0.5)
    assert shapley.min_eigenvalue(R) < 0
    x = {"id": "b", "samples": [f"s{i}" for i in range(8)], "entail": P}
    r = scored(x, S(), methods=["Shap"])
    assert math.isfinite(r.scores["Shap"])
    assert r.diagnostics["shap_psd"] is False and r.diagnostics["shap_psd_repaired"] is True
    assert r.diagnostics["shap_min_eig"] == pytest.approx(shapley.min_eigenvalue(R))
    raised = scored(x, S(psd_policy="raise"), methods=["Shap"])
    assert "Shap" not in raised.scores
    assert "not positive semi-definite" in raised.skipped["Shap"]
    assert raised.diagnostics["shap_psd_repaired"] is False


def test_higher_means_more_uncertain():
    n = 6
    same = {"id": "s", "samples": ["Paris"] * n, "entail": np.ones((n, n))}
    diff = {"id": "d", "samples": ["Paris", "Rome", "Oslo", "Lima", "Bern", "Kyiv"], "entail": np.eye(n)}
    a = scored(same, S()).scores
    b = scored(diff, S()).scores
    for m in ("Shap", "DSE", "NumSet", "LexSim", "EigV", "Deg", "Ecc", "KLE"):
        assert b[m] > a[m], m


def test_single_sample_is_valid_and_finite():
    r = scored({"id": "one", "samples": ["Mozart"], "entail": [[1.0]]}, S())
    assert r.scores["Shap"] == pytest.approx(shapley.HALF_LOG_2PIE)
    assert r.scores["DSE"] == 0.0 and r.scores["NumSet"] == 1.0 and r.scores["LexSim"] == 0.0
    assert all(math.isfinite(v) for v in r.scores.values())


def test_empty_answers_and_unicode_are_scored():
    x = {"id": "u", "samples": ["", "Zürich", "東京", ""], "entail": np.eye(4)}
    r = scored(x, S())
    assert r.diagnostics["n_empty_samples"] == 2
    assert math.isfinite(r.scores["Shap"]) and math.isfinite(r.scores["LexSim"])


def test_unknown_method_names_are_refused():
    with pytest.raises(ValueError, match="unknown method"):
        scored({"id": "q", "samples": ["a"]}, S(), methods=["Shapley"])


def test_from_generation_treats_empty_token_lists_as_missing():
    from shapley.pipeline.rundir.records import Generation

    g = Generation(id="g", samples=["a", "b"], answer="a", p_true=0.5)
    x = score.ScoreInputs.from_generation(g, np.eye(2), None)
    assert not x.has("sample_logprobs") and not x.has("answer_logprobs") and x.has("p_true")
    r = scored(x, S())
    assert "SE" in r.skipped and "P(T)" in r.scores


def test_beta_sweep_marks_where_R_stops_being_psd():
    P = _bipartite(8)
    bound = shapley.gershgorin_beta_bound(8)
    sweep = score.beta_sweep(P, [bound, 0.3, 0.5, 1.0], psd_policy="nearest")
    assert [d["beta"] for d in sweep] == [bound, 0.3, 0.5, 1.0]
    assert sweep[0]["psd"] is True and sweep[0]["repaired"] is False
    assert sweep[2]["psd"] is False and sweep[2]["repaired"] is True
    assert all(math.isfinite(d["Shap"]) for d in sweep)
    raised = score.beta_sweep(P, [0.1, 0.5], psd_policy="raise")
    assert math.isfinite(raised[0]["Shap"]) and math.isnan(raised[1]["Shap"])
    P2 = _full_inputs()["entail"]
    for d in score.beta_sweep(P2, [0.2, 0.5], psd_policy="nearest"):
        assert d["Shap"] == pytest.approx(shapley.shapley_uncertainty(P2, d["beta"]))


def test_embedding_regression_scores_half_split_and_signal():
    rng = np.random.default_rng(0)
    m = 200
    correct = rng.random(m) < 0.5
    X = rng.normal(size=(m, 4))
    X[:, 0] += np.where(correct, 1.5, -1.5)  # informative feature
    er = score.embedding_regression_scores(X, correct, seed=3)
    test = ~np.isnan(er)
    assert test.sum() == m // 2
    assert auroc(er[test], correct[test]) > 0.8
    again = score.embedding_regression_scores(X, correct, seed=3)
    np.testing.assert_array_equal(np.isnan(er), np.isnan(again))
    np.testing.assert_allclose(er[test], again[test])
    with pytest.raises(ValueError):
        score.embedding_regression_scores(X, correct[:-1])


def test_se_aggregation_sum_or_mean():
    x = {"id": "q", "samples": ["a", "b c d e"], "entail": np.eye(2), "sample_logprobs": [[-1.0], [-1.0] * 4]}
    by_sum = scored(x, S(se_aggregation="sum"), methods=["SE"]).scores["SE"]
    by_mean = scored(x, S(), methods=["SE"]).scores["SE"]  # the default is the per-token mean
    assert by_mean == pytest.approx(math.log(2))  # equal per-token likelihoods: two equally likely clusters
    p = np.exp([-1.0, -4.0]) / np.exp([-1.0, -4.0]).sum()
    assert by_sum == pytest.approx(-(p * np.log(p)).sum())
    with pytest.raises(ValueError, match="--se-aggregation must be one of sum, mean"):
        S(se_aggregation="max")
