"""The sample-size tests pair each method with itself across runs: DeLong's paired test on the questions both
runs scored with the same correctness, Holm-adjusted over every test of the table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shapley.companion import paired
from shapley.core import metrics


def _run(tmp_path, name: str, correct: np.ndarray, **methods: np.ndarray):
    d = tmp_path / name
    d.mkdir()
    frame = pd.DataFrame({"id": [f"q{i}" for i in range(correct.size)], "correct": correct, **methods})
    frame.to_csv(d / "scores.csv", index=False)
    return d


def test_sample_size_tests_pair_each_method_with_itself(tmp_path):
    rng = np.random.default_rng(0)
    correct = rng.random(200) < 0.5
    noise = rng.normal(size=200)
    good = np.where(correct, 0.0, 1.0) + 0.3 * noise  # separates the classes
    flipped = correct.copy()
    flipped[0] = not flipped[0]  # question q0 changes correctness: it is not a paired row
    runs = {
        5: _run(tmp_path, "n5", correct, Shap=noise, Ecc=noise, Deg=good),
        10: _run(tmp_path, "n10", flipped, Shap=noise, Ecc=good, Deg=good),  # no Deg-free run: Deg compared
    }
    t = paired.sample_size_tests(runs).set_index("method")
    assert list(t.index) == ["Shap", "Deg", "Ecc"]  # the package's method order
    assert (t["n_a"] == 5).all() and (t["n_b"] == 10).all() and (t["n"] == 199).all()
    assert t.loc["Shap", "delta"] == 0 and t.loc["Shap", "delong_p"] == 1 and not t.loc["Shap", "significant"]
    ok = slice(1, None)
    expected = metrics.auroc(good[ok], correct[ok]) - metrics.auroc(noise[ok], correct[ok])
    assert t.loc["Ecc", "delta"] == pytest.approx(expected) and t.loc["Ecc", "significant"]
    assert t["delong_p_holm"].tolist() == pytest.approx(metrics.holm(t["delong_p"].to_numpy()).tolist())


def test_sample_size_tests_skip_a_method_one_run_lacks(tmp_path):
    correct = np.arange(8) % 2 == 0
    u = np.arange(8, dtype=float)
    runs = {20: _run(tmp_path, "a", correct, Shap=u), 5: _run(tmp_path, "b", correct, Shap=u, Ecc=u)}
    t = paired.sample_size_tests(runs)
    assert t[["method", "n_a", "n_b"]].values.tolist() == [["Shap", 5, 20]]
