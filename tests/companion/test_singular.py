"""Shap = -inf at beta = 1 (:mod:`shapley.companion.singular_results`), against independent computations on made-up
cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from shapley.companion import singular_results
from shapley.core import kernel
from shapley.core.entropy import shapley_uncertainty


def _pairwise_auroc(u: list[float], correct: list[bool]) -> float:
    """P(an incorrect answer scores above a correct one), ties half: by counting pairs."""
    wins = [
        1.0 if a > b else 0.5 if a == b else 0.0
        for (a, ca), (b, cb) in itertools.product(zip(u, correct, strict=True), repeat=2)
        if not ca and cb
    ]
    return sum(wins) / len(wins)


def test_two_equal_answers_make_shap_minus_infinity_at_beta_one_only():
    P = np.array([[1.0, 1.0, 0.2], [1.0, 1.0, 0.2], [0.1, 0.1, 1.0]])  # answers 0 and 1 are duplicates
    R = kernel.kernel_matrix(kernel.correlation_matrix(P), beta=1.0)
    assert np.array_equal(R[0], R[1]) and np.linalg.slogdet(R)[0] == 0  # independent: equal rows, det 0
    assert shapley_uncertainty(P, 1.0) == -math.inf
    assert math.isfinite(shapley_uncertainty(P, 0.9))
    # C = 1 with unequal rows: the 2x2 block of ones makes R indefinite instead (repaired, finite)
    Q = np.array([[1.0, 1.0, 0.2], [1.0, 1.0, 0.9], [0.2, 0.9, 1.0]])
    assert np.linalg.eigvalsh(kernel.kernel_matrix(kernel.correlation_matrix(Q), beta=1.0)).min() < 0
    with pytest.warns(Warning, match="not PSD"):
        assert math.isfinite(shapley_uncertainty(Q, 1.0, psd_policy="nearest"))


def test_count_infinite_matches_counting_by_hand():
    ids = [f"q{i}" for i in range(6)]
    shap = [-math.inf, -math.inf, 0.3, 1.2, 0.8, -0.5]
    correct = [True, False, True, False, False, True]
    repaired = [False, False, True, False, True, False]
    per_q = pd.DataFrame({"id": ids, "beta": 1.0, "Shap": shap, "repaired": repaired})
    r = singular_results.count_infinite(per_q, pd.Series(correct, index=ids))
    assert (r.n, r.n_neginf, r.n_neginf_repaired) == (6, 2, 0)
    assert r.auroc_finite == pytest.approx(_pairwise_auroc(shap[2:], correct[2:]))


def test_count_infinite_reports_one_class_as_undefined():
    per_q = pd.DataFrame({"id": ["a", "b", "c"], "beta": 1.0, "Shap": [-math.inf, 0.1, 0.2], "repaired": False})
    ids = ["a", "b", "c"]
    r = singular_results.count_infinite(per_q, pd.Series([False, True, True], index=ids))
    assert math.isnan(r.auroc_finite)


def test_committed_run_counts_match_an_independent_eigenvalue_count():
    """On the committed LLaMA-13B run: a question's Shap is -inf at beta = 1 exactly when its R is PSD and holds
    an off-diagonal 1 (counted here from the stored matrices with numpy alone); none of those is repaired."""
    from pathlib import Path

    from shapley.pipeline.rundir.jsonl import STAGE_FILES, JsonlStore

    run = Path(__file__).resolve().parents[2] / "results" / "triviaqa_llama13b" / "minilm_n10"
    if not (run / "stages.jsonl.gz").exists():
        pytest.skip("the committed run is absent")
    ent = JsonlStore(run / STAGE_FILES["entailment"]).load(repair=False)
    singular_psd = 0
    for rec in ent.values():
        P = np.asarray(rec["entail"], dtype=np.float64)
        C = (P + P.T) / 2
        R = np.exp(-((1 - C) ** 2) / 2)  # beta = 1
        np.fill_diagonal(R, 1.0)
        has_one = (R[~np.eye(len(R), dtype=bool)] >= 1 - 1e-12).any()
        singular_psd += bool(has_one and np.linalg.eigvalsh(R).min() >= -1e-9)
    r = singular_results.recompute(run.resolve(), 1.0)
    assert r.n_neginf == singular_psd and r.n_neginf_repaired == 0
    sweep = pd.read_csv(run / "beta_sweep.csv").set_index("beta")  # the AUROC with the -inf questions
    assert r.n == len(ent) and sweep.loc[1.0, "auroc"] < r.auroc_finite
