"""The rank statistics of shapley.core.ranks against scipy.stats, which they replace where scipy.stats' import
(about a second) would dominate a page: midranks (AUROC, DeLong)."""

from __future__ import annotations

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
