"""Issue 27: a run's ``metrics.csv`` against numbers computed independently from its stage file.

The invariance, merge and resume tests compare the pipeline with itself; this one recomputes AUROC (scikit-learn),
AUARC and PRR (their textbook definitions), accuracy and n from ``scores.jsonl`` alone, and the correctness of
each answer from its stored Rouge-L value and the paper's strict rule.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from shapley.pipeline.experiment import pipelines as experiment
from shapley.pipeline.rundir import jsonl
from tests import fakes


def _auarc(u: np.ndarray, c: np.ndarray) -> float:
    """Mean accuracy of the k least uncertain answers, k = 1..m, ties counted at their expected value (every
    order within a tie equally likely): brute force over the tie groups."""
    m = u.size
    accs = []
    for k in range(1, m + 1):
        t = np.sort(u)[k - 1]
        below, tied = u < t, u == t
        expected = c[below].sum() + (k - below.sum()) * c[tied].mean()
        accs.append(expected / k)
    return float(np.mean(accs))


def test_metrics_csv_matches_an_independent_recomputation(tmp_path, monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 30, n_samples=4, seed=3)
    out = experiment.score_samples(fakes.samples_config(inp, n_boot=10), tmp_path / "run")
    recs = list(jsonl.JsonlStore(out / "scores.jsonl").load(repair=False).values())
    metrics_csv = pd.read_csv(out / "metrics.csv").set_index("method")
    correct = np.array([r["correctness_value"] > 0.3 for r in recs])
    assert [r["correct"] for r in recs] == correct.tolist()
    assert 0 < correct.sum() < len(recs)  # both classes: AUROC defined
    checked = 0
    for method, row in metrics_csv.iterrows():
        pairs = [(r["scores"].get(method), ok) for r, ok in zip(recs, correct, strict=True)]
        pairs = [(s, ok) for s, ok in pairs if s is not None and not math.isnan(s)]
        if not pairs or any(math.isinf(s) for s, _ in pairs):
            continue
        u = np.round(np.array([s for s, _ in pairs], dtype=np.float64), 9)
        c = np.array([ok for _, ok in pairs], dtype=bool)
        assert row["n"] == c.size and row["accuracy"] == pytest.approx(c.mean()), method
        if c.all() or not c.any():
            continue
        # AUROC: detecting the incorrect answers with the uncertainty score
        assert row["auroc"] == pytest.approx(roc_auc_score(~c, u), abs=1e-12), method
        auarc = _auarc(u, c)
        assert row["auarc"] == pytest.approx(auarc, abs=1e-12), method
        oracle = _auarc((~c).astype(float), c)
        assert row["prr"] == pytest.approx((auarc - c.mean()) / (oracle - c.mean()), abs=1e-9), method
        assert row["auroc_lo"] <= row["auroc"] <= row["auroc_hi"], method
        checked += 1
    assert checked >= 5 and {"Shap"} <= set(metrics_csv.index)
