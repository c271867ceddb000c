"""The rank statistics of shapley.core.ranks against scipy.stats, which they replace where scipy.stats' import
(about a second) would dominate a page: midranks (AUROC, DeLong), Spearman's rho and Kendall's tau-b (the
judges' agreement)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from shapley.core import metrics as M
from shapley.core import ranks


def _pairs(seed: int, count: int = 400):
    """Vectors with many ties, infinities and plain floats, lengths 1..40."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        m = int(rng.integers(1, 41))
        x = rng.integers(0, 6, m).astype(float)
        x[rng.random(m) < 0.1] = -np.inf
        y = rng.random(m) if i % 3 == 0 else rng.integers(0, 4, m).astype(float)
        yield x, y


def test_midranks_are_scipys_average_ranks_bit_for_bit():
    for x, y in _pairs(0):
        np.testing.assert_array_equal(ranks.midranks(x), stats.rankdata(x))
        np.testing.assert_array_equal(ranks.midranks(y), stats.rankdata(y))
    assert ranks.midranks([]).shape == (0,)


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
def test_rank_correlations_match_scipy():
    compared = 0
    for x, y in _pairs(1):
        if x.size < 2:
            continue
        rho, tau = stats.spearmanr(x, y).statistic, stats.kendalltau(x, y).statistic
        if np.isnan(rho):
            assert math.isnan(ranks.spearman_rho(x, y)) and math.isnan(ranks.kendall_tau_b(x, y))
            continue
        assert ranks.spearman_rho(x, y) == pytest.approx(rho, abs=1e-12)
        assert ranks.kendall_tau_b(x, y) == pytest.approx(tau, abs=1e-14)
        compared += 1
    assert compared > 300


def test_rank_correlations_of_an_order_and_its_reverse():
    x = np.arange(7.0)
    assert ranks.spearman_rho(x, x**3) == 1.0 and ranks.kendall_tau_b(x, x**3) == 1.0
    assert ranks.spearman_rho(x, -x) == -1.0 and ranks.kendall_tau_b(x, -x) == -1.0


def test_delong_p_value_is_scipys_normal_tail():
    rng = np.random.default_rng(2)
    for _ in range(50):
        c = rng.random(60) < 0.5
        a, b = rng.normal(size=60) - c, rng.normal(size=60) - 0.5 * c
        r = M.delong_test(a, b, c)
        assert r.p_value == 2.0 * stats.norm.sf(abs(r.z)) == 2.0 * special.ndtr(-abs(r.z))


def test_rank_functions_refuse_what_has_no_rank():
    with pytest.raises(ValueError, match="x contains NaN"):
        ranks.midranks([1.0, np.nan])
    with pytest.raises(ValueError, match="x must be 1-D"):
        ranks.midranks(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="one length of at least 2"):
        ranks.spearman_rho([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="one length of at least 2"):
        ranks.kendall_tau_b([1.0], [2.0])
    with pytest.raises(ValueError, match="y contains NaN"):
        ranks.kendall_tau_b([1.0, 2.0], [1.0, np.nan])
