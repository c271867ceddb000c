"""AUROC, AUARC, PRR and bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from shapley.core import metrics


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=60))
def test_auroc_matches_sklearn_with_ties(pairs):
    u = np.array([p[0] for p in pairs], dtype=float)
    c = np.array([p[1] for p in pairs])
    if c.all() or not c.any():
        return
    assert metrics.auroc(u, c) == pytest.approx(roc_auc_score(~c, u))


def test_auroc_direction_and_extremes():
    u = [0.1, 0.2, 0.8, 0.9]
    assert metrics.auroc(u, [1, 1, 0, 0]) == 1.0  # incorrect answers are the more uncertain ones
    assert metrics.auroc(u, [0, 0, 1, 1]) == 0.0
    assert metrics.auroc([1, 1, 1, 1], [1, 0, 1, 0]) == 0.5


@pytest.mark.parametrize("f", [metrics.auroc, metrics.prr])
def test_one_class_is_nan_with_warning(f):
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert np.isnan(f([0.1, 0.5, 0.2], [True, True, True]))
    with pytest.warns(RuntimeWarning, match="incorrect"):
        assert np.isnan(f([0.1, 0.5], [0, 0]))


def test_auarc_and_prr():
    c = np.array([1, 1, 1, 0, 0], dtype=bool)
    perfect = np.array([0, 1, 2, 3, 4.0])
    assert metrics.auarc(perfect, c) == pytest.approx(np.mean([1, 1, 1, 3 / 4, 3 / 5]))
    assert metrics.prr(perfect, c) == pytest.approx(1.0)
    assert metrics.prr(-perfect, c) < 0
    assert metrics.prr(np.zeros(5), c) == pytest.approx(0.0)  # all tied = random order in expectation
    assert metrics.auarc(np.zeros(5), c) == pytest.approx(c.mean())
    assert metrics.auarc([0.0], [True]) == 1.0


def test_bad_inputs():
    with pytest.raises(ValueError, match="same length"):
        metrics.auroc([0.1, 0.2], [1])
    with pytest.raises(ValueError, match="NaN"):
        metrics.auroc([np.nan, 0.2], [1, 0])
    with pytest.raises(ValueError, match="empty"):
        metrics.auarc([], [])
    with pytest.raises(ValueError, match="0/1"):
        metrics.auroc([0.1, 0.2], [2, 0])


def test_bootstrap_ci():
    rng = np.random.default_rng(0)
    c = rng.random(300) < 0.6
    u = rng.normal(size=300) - c * 1.0
    point = metrics.auroc(u, c)
    lo, hi = metrics.bootstrap_ci(metrics.auroc, u, c, n_boot=300, seed=1)
    assert lo < point < hi and 0.5 < lo and hi - lo < 0.2
    assert (lo, hi) == metrics.bootstrap_ci(metrics.auroc, u, c, n_boot=300, seed=1)
    with pytest.warns(RuntimeWarning):
        assert np.isnan(metrics.auroc(u[:1], c[:1]))
    assert all(np.isnan(metrics.bootstrap_ci(metrics.auroc, [0.1, 0.2], [True, True], n_boot=10)))
    with pytest.raises(ValueError, match="alpha"):
        metrics.bootstrap_ci(metrics.auroc, u, c, alpha=1.5)
