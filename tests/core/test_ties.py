"""Ties: scores equal in exact arithmetic but apart by round-off are ranked as ties by every rank-based metric."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shapley.core import metrics as M

X = 1.7320537945392505  # an Ecc score of the committed runs


def _tied(rel: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores tied between a correct and a wrong answer each, exactly and with the wrong answers' copies moved up
    by ``rel`` (relative, at least one ulp); and the labels."""
    base = np.round(np.random.default_rng(0).normal(size=20), 3)
    exact = np.concatenate([base, base])
    ulps = np.sign(exact[20:]) * np.spacing(np.abs(exact[20:])) * max(1.0, rel / 2.2e-16)
    moved = np.concatenate([base, base + ulps])
    return exact, moved, np.r_[np.ones(20, bool), np.zeros(20, bool)]


@pytest.mark.parametrize("rel", [5e-17 / X, 2.2e-16, 1e-13])
def test_round_off_does_not_order_equal_scores(rel):
    """Fails without rounding: the wrong answers' copies, a few ulps higher, would all rank above."""
    exact, moved, c = _tied(rel)
    assert not np.array_equal(exact, moved)
    assert M.auroc(moved, c) == M.auroc(exact, c) == 0.5
    assert M.auarc(moved, c) == M.auarc(exact, c)
    assert M.prr(moved, c) == M.prr(exact, c)
    assert M.delong_test(moved, exact, c).delta == 0.0
    kw = {"n_boot": 200, "max_boot": 400}
    assert M.bootstrap_interval(M.auroc, moved, c, **kw) == M.bootstrap_interval(M.auroc, exact, c, **kw)
    a = M.paired_interval(M.auroc, moved, exact[::-1], c, n_boot=200, max_boot=400)
    b = M.paired_interval(M.auroc, exact, exact[::-1], c, n_boot=200, max_boot=400)
    assert a == b


def test_ecc_scores_apart_by_5e_17():
    """The case of the issue: two Ecc scores equal in exact arithmetic, 5e-17 apart in floating point."""
    y = X + 2.220446049250313e-16  # the next double above X: about 5e-17 relative... within one ulp
    assert y != X
    assert M.auroc([X, y], [True, False]) == M.auroc([X, X], [True, False]) == 0.5
    z = X * (1 + 1e-13)
    assert M.auroc([X, z], [True, False]) == 0.5


def test_round_scores_is_idempotent_and_keeps_special_values():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=2000) * 10.0 ** rng.integers(-12, 14, 2000), [0.0, -0.0, np.inf, -np.inf]])
    r = M.round_scores(x)
    np.testing.assert_array_equal(M.round_scores(r), r)
    assert np.all(np.abs(r[:2000] - x[:2000]) <= 5.1e-12 * np.abs(x[:2000]))
    assert r[-1] == -np.inf and r[-2] == np.inf and math.copysign(1, r[-3]) == 1.0
    assert np.isnan(M.round_scores([np.nan])[0])


def test_vectorised_resampled_auroc_is_bit_for_bit_the_loop():
    rng = np.random.default_rng(2)
    for m in (5, 37, 200):
        u = M.round_scores(np.round(rng.normal(size=m), 1))  # many ties
        c = rng.random(m) < 0.4
        rows = rng.integers(0, m, (300, m))
        fast = M._resampled(M.auroc, u, c, rows)
        slow = np.array([M.auroc(u[i], c[i]) if 0 < c[i].sum() < m else math.nan for i in rows])
        assert np.isnan(slow).any() == (m == 5)
        np.testing.assert_array_equal(fast, slow)
        np.testing.assert_array_equal(M._resampled(M.accuracy, u, c, rows), [float(np.mean(c[i])) for i in rows])


def test_intervals_reach_their_monte_carlo_target_and_say_so_otherwise():
    rng = np.random.default_rng(3)
    c = rng.random(300) < 0.5
    u = rng.normal(size=300) - c
    r = M.bootstrap_interval(M.auroc, u, c, n_boot=200)
    assert max(r.lo_mcse, r.hi_mcse) <= M.MCSE_TARGET and r.n_boot > 200
    assert r == M.bootstrap_interval(M.auroc, u, c, n_boot=200)  # deterministic for a seed
    capped = M.bootstrap_interval(M.auroc, u[:12], c[:12], n_boot=100, max_boot=400)
    assert capped.n_boot == 400 and max(capped.lo_mcse, capped.hi_mcse) > M.MCSE_TARGET
    for kw in ({"n_boot": 1}, {"n_boot": -5}, {"n_boot": 500, "max_boot": 200}, {"mcse": 0.0}):
        with pytest.raises(ValueError):
            M.bootstrap_interval(M.auroc, u, c, **kw)
