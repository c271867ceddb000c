"""AUROC, AUARC, PRR, bootstrap intervals, and paired comparisons (paired interval, Holm, DeLong)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

from shapley.core import metrics


@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=2, max_size=60))
def test_auroc_matches_sklearn_with_ties(pairs):
    u = np.array([p[0] for p in pairs], dtype=float)
    c = np.array([p[1] for p in pairs])
    assume(c.any() and not c.all())  # AUROC needs both classes
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


def test_auarc_with_partial_ties_is_the_mean_over_every_order_of_the_ties():
    """The rejection curve's order rule: the k most certain answers, a tie group in expectation over its orders,
    computed here by enumerating every order within the tie groups (ties that straddle a cut-off change it)."""
    u = np.array([2.0, 1.0, 0.0, 1.0, 2.0, 1.0])
    c = np.array([True, False, True, True, False, False])
    curves = []
    for order in itertools.permutations(range(u.size)):
        if all(u[a] <= u[b] for a, b in itertools.pairwise(order)):  # most certain (lowest u) first
            kept = c[list(order)].astype(float)
            curves.append(np.mean(np.cumsum(kept) / np.arange(1, u.size + 1)))
    assert len(curves) == 3 * 2 * 2  # the tie groups' orders: 3! * 2!
    assert metrics.auarc(u, c) == pytest.approx(np.mean(curves), rel=1e-12)
    assert len(set(np.round(curves, 12))) > 1  # the tie rule matters here


def test_bad_inputs():
    with pytest.raises(ValueError, match="same length"):
        metrics.auroc([0.1, 0.2], [1])
    with pytest.raises(ValueError, match="NaN"):
        metrics.auroc([np.nan, 0.2], [1, 0])
    with pytest.raises(ValueError, match="empty"):
        metrics.auarc([], [])
    with pytest.raises(ValueError, match="0/1"):
        metrics.auroc([0.1, 0.2], [2, 0])


def test_bootstrap_interval_is_the_percentile_interval_of_the_resampled_metric():
    """The ends are the alpha/2 and 1 - alpha/2 quantiles of the metric on the seeded resamples, computed here by a
    plain loop (bootstrap_interval and paired_interval share the quantile step, so their agreement alone cannot test
    it); an ``mcse`` of 1 stops at the first ``n_boot`` resamples."""
    rng = np.random.default_rng(5)
    c = rng.random(40) < 0.5
    u = np.round(rng.normal(size=40) - c, 1)
    rows = np.random.default_rng(3).integers(0, 40, (200, 40))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s = np.array([metrics.auroc(u[r], c[r]) for r in rows])
    s = s[np.isfinite(s)]
    for alpha in (0.05, 0.2):
        expected = tuple(float(x) for x in np.quantile(s, [alpha / 2.0, 1.0 - alpha / 2.0]))
        r = metrics.bootstrap_interval(metrics.auroc, u, c, n_boot=200, alpha=alpha, seed=3, mcse=1.0)
        assert (r.lo, r.hi, r.n_boot) == (*expected, 200)
    undefined = metrics.bootstrap_interval(metrics.auroc, [0.1, 0.2], [True, True], n_boot=100)
    assert all(math.isnan(x) for x in undefined[:4])


def _linear_quantile(x, q: float) -> float:
    """The q-quantile of x by linear interpolation between order statistics at position (m - 1) q (numpy's default,
    Hyndman & Fan's type 7), written out."""
    x, h = sorted(x), (len(x) - 1) * q
    k = math.floor(h)
    return x[k] if k + 1 == len(x) else x[k] + (h - k) * (x[k + 1] - x[k])


def test_bootstrap_interval_ends_interpolate_between_order_statistics():
    """With 101 resamples and alpha = 0.05 the ends sit half-way between two order statistics (positions 2.5 and
    97.5): another index or rounding rule (nearest, lower, (m + 1) q) gives other ends."""
    rng = np.random.default_rng(5)
    c = rng.random(40) < 0.5
    u = rng.normal(size=40) - c
    rows = np.random.default_rng(3).integers(0, 40, (101, 40))
    s = [metrics.auroc(u[r], c[r]) for r in rows]
    lo, hi = metrics.bootstrap_interval(metrics.auroc, u, c, n_boot=101, alpha=0.05, seed=3, mcse=1.0)[:2]
    assert (lo, hi) == pytest.approx((_linear_quantile(s, 0.025), _linear_quantile(s, 0.975)), rel=1e-12)
    assert sorted(s)[2] < lo < sorted(s)[3] and sorted(s)[97] < hi < sorted(s)[98]


# --- paired comparisons (issue 11, part 2) ----------------------------------------------------------


def test_paired_interval_uses_one_resample_for_both_methods():
    rng = np.random.default_rng(0)
    c = rng.random(60) < 0.5
    u = rng.normal(size=60) - c
    r = metrics.paired_interval(metrics.auroc, u, 3.0 * u + 1.0, c, n_boot=200)  # same ranking, same AUROC
    assert (r.delta, r.lo, r.hi) == (0.0, 0.0, 0.0)


def test_paired_interval_draws_the_resamples_of_bootstrap_interval():
    """With the same seed: against a constant score (AUROC 1/2 in every defined resample) the interval is
    bootstrap_interval's shifted by 1/2."""
    rng = np.random.default_rng(1)
    c = rng.random(80) < 0.6
    u = rng.normal(size=80) - c
    r = metrics.paired_interval(metrics.auroc, u, np.zeros(80), c, n_boot=300, seed=7, mcse=1.0)
    one = metrics.bootstrap_interval(metrics.auroc, u, c, n_boot=300, seed=7, mcse=1.0)
    assert r.lo + 0.5 == pytest.approx(one.lo, abs=1e-15) and r.hi + 0.5 == pytest.approx(one.hi, abs=1e-15)


def test_paired_interval_undefined_and_bad_scores():
    r = metrics.paired_interval(metrics.auroc, [0.1, 0.2], [0.2, 0.1], [True, True])
    assert math.isnan(r.delta) and all(math.isnan(x) for x in r[1:5])
    with pytest.raises(ValueError, match="u_b and correct must have the same length"):
        metrics.paired_interval(metrics.auroc, [0.1, 0.2], [0.1], [True, False])
    with pytest.raises(ValueError, match="u_a contains NaN"):
        metrics.paired_interval(metrics.auroc, [np.nan, 0.2], [0.1, 0.2], [True, False])


def test_holm_hand_example():
    # sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 = 0.04 -> raised to 0.06 (monotone)
    np.testing.assert_allclose(metrics.holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02], rtol=1e-15)
    # NaN passes through and does not count: k = 4 as above
    out = metrics.holm([0.01, np.nan, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(out[[0, 2, 3, 4]], [0.03, 0.06, 0.06, 0.02], rtol=1e-15)
    assert np.isnan(out[1])
    np.testing.assert_array_equal(metrics.holm([0.5, 0.6]), [1.0, 1.0])  # capped at 1
    np.testing.assert_array_equal(metrics.holm([0.02, 0.02]), [0.04, 0.04])  # ties get equal values
    assert metrics.holm([]).shape == (0,)
    assert metrics.holm([0.3]).tolist() == [0.3]


@given(st.lists(st.one_of(st.floats(0.0, 1.0), st.just(math.nan)), max_size=12))
def test_holm_properties(ps):
    raw = np.array(ps, dtype=float)
    adj = metrics.holm(raw)
    ok = ~np.isnan(raw)
    np.testing.assert_array_equal(np.isnan(adj), ~ok)
    assert np.all(adj[ok] >= raw[ok]) and np.all(adj[ok] <= 1.0)
    r, a = raw[ok], adj[ok]
    assert all(a[i] <= a[j] for i in range(r.size) for j in range(r.size) if r[i] <= r[j])  # monotone
    k = r.size
    for i in range(k):  # the definition, one p-value at a time
        ranks = sorted(range(k), key=lambda j: (r[j], j))
        pos = ranks.index(i)
        assert a[i] == pytest.approx(min(1.0, max((k - q) * r[ranks[q]] for q in range(pos + 1))), abs=1e-15)


@pytest.mark.parametrize("bad", [[0.1, 1.2], [-0.1], [[0.1, 0.2]], ["x"], [math.inf]])
def test_holm_validation(bad):
    with pytest.raises(ValueError, match="p_values"):
        metrics.holm(bad)


def _delong_by_definition(u_a, u_b, c):
    """DeLong et al. (1988) from the pairwise kernel psi, O(m n): structural components, covariances, z, p."""
    c = np.asarray(c, dtype=bool)

    def components(u):
        u = np.asarray(u, dtype=float)
        X, Y = u[~c], u[c]  # incorrect answers are the "positives"
        psi = (X[:, None] > Y[None, :]) + 0.5 * (X[:, None] == Y[None, :])
        return psi.mean(axis=1), psi.mean(axis=0)

    (v10a, v01a), (v10b, v01b) = components(u_a), components(u_b)
    m, n = v10a.size, v01a.size

    def cov(x, y):
        return float(np.sum((x - x.mean()) * (y - y.mean())) / (x.size - 1))

    var = (cov(v10a, v10a) + cov(v10b, v10b) - 2 * cov(v10a, v10b)) / m
    var += (cov(v01a, v01a) + cov(v01b, v01b) - 2 * cov(v01a, v01b)) / n
    delta = float(v10a.mean() - v10b.mean())
    if var <= 0.0:
        raise ZeroDivisionError("zero variance")
    z = delta / math.sqrt(var)
    return delta, z, 2 * norm.sf(abs(z))


@st.composite
def _delong_inputs(draw):
    """(u_a, u_b, c): two drawn score vectors (tied integer levels, or free floats) and correctness labels
    with at least two answers in each class."""
    m = draw(st.integers(4, 40))
    c = np.array(draw(st.lists(st.booleans(), min_size=m, max_size=m)))
    assume(c.sum() >= 2 and (~c).sum() >= 2)
    scores = st.integers(0, 3).map(float) if draw(st.booleans()) else st.floats(-5.0, 5.0)
    u_a, u_b = (np.array(draw(st.lists(scores, min_size=m, max_size=m))) for _ in range(2))
    return u_a, u_b, c


@settings(max_examples=50)
@given(_delong_inputs())
@example((np.zeros(4), np.array([0.0, 5.0, 0.0, np.nextafter(5.0, 0.0)]), np.array([False, False, True, True])))
def test_delong_matches_its_definition(inputs):
    u_a, u_b, c = inputs
    r = metrics.delong_test(u_a, u_b, c)
    assert r.delta == pytest.approx(metrics.auroc(u_a, c) - metrics.auroc(u_b, c), abs=1e-12)
    # The references see the scores as every rank-based metric does: rounded to 12 significant digits, so that
    # 5.0 and the float just below it tie (by design, see shapley.core.ranks).
    u_a, u_b = metrics.round_scores(u_a), metrics.round_scores(u_b)
    assert r.delta == pytest.approx(roc_auc_score(~c, u_a) - roc_auc_score(~c, u_b), abs=1e-12)
    try:
        delta, z, p = _delong_by_definition(u_a, u_b, c)
    except ZeroDivisionError:
        assert r.p_value in (0.0, 1.0)  # zero variance: the documented limits
        return
    assert r.z == pytest.approx(z, rel=1e-9) and r.p_value == pytest.approx(p, rel=1e-9, abs=1e-15)


def test_delong_hand_example():
    """a perfect (components all 1); b: V10 = (2/3, 1/3, 1), V01 = (1, 1/3, 2/3). Both difference vectors have
    sample variance 1/9, so var = 1/27 + 1/27 and z = (1/3) / sqrt(2/27) = sqrt(3/2)."""
    c = [True, True, True, False, False, False]
    r = metrics.delong_test([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [0.1, 0.8, 0.3, 0.7, 0.2, 0.9], c)
    assert r.delta == pytest.approx(1 / 3, abs=1e-15)
    assert r.z == pytest.approx(math.sqrt(1.5), rel=1e-12)
    assert r.p_value == pytest.approx(2 * norm.sf(math.sqrt(1.5)), rel=1e-12)
    swapped = metrics.delong_test([0.1, 0.8, 0.3, 0.7, 0.2, 0.9], [0.1, 0.2, 0.3, 0.7, 0.8, 0.9], c)
    assert swapped.z == pytest.approx(-r.z, rel=1e-12) and swapped.p_value == pytest.approx(r.p_value, rel=1e-12)


def test_delong_degenerate_cases():
    c = [True, True, False, False]
    assert metrics.delong_test([0.1, 0.2, 0.8, 0.9], [1.0, 2.0, 8.0, 9.0], c) == (0.0, 0.0, 1.0)
    r = metrics.delong_test([0.1, 0.2, 0.8, 0.9], [0.5, 0.5, 0.5, 0.5], c)  # perfect against constant
    assert r.delta == 0.5 and r.z == math.inf and r.p_value == 0.0
    with pytest.warns(RuntimeWarning, match="at least two"):
        r = metrics.delong_test([0.1, 0.2, 0.9], [0.2, 0.1, 0.9], [True, True, False])
    assert all(math.isnan(x) for x in r)
    with pytest.raises(ValueError, match="u_b and correct"):
        metrics.delong_test([0.1, 0.2], [0.1], [True, False])


def test_bootstrap_and_delong_agree_on_a_clear_difference():
    rng = np.random.default_rng(3)
    c = rng.random(300) < 0.5
    strong, weak = rng.normal(size=300) - 2.0 * c, rng.normal(size=300) - 0.3 * c
    assert metrics.delong_test(strong, weak, c).p_value < 1e-6
    assert metrics.paired_interval(metrics.auroc, strong, weak, c, n_boot=300).lo > 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_quantile_mcse_matches_scipy_maritz_jarrett(seed):
    """Issue 27: the Monte-Carlo standard error of a quantile against an independent implementation,
    scipy.stats.mstats.mjci (the Maritz-Jarrett estimate, same M and weights), not only its shape."""
    from scipy.stats.mstats import mjci

    x = np.random.default_rng(seed).gamma(2.0, size=400)  # skewed: the centring term matters
    for q in (0.025, 0.1, 0.5, 0.9, 0.975):
        assert metrics.quantile_mcse(x, q) == pytest.approx(float(mjci(x, prob=[q])[0]), rel=1e-9), q


@pytest.mark.parametrize(("n", "q"), [(401, 0.5), (404, 0.125), (404, 0.875), (9, 0.5), (10, 0.25)])
def test_quantile_mcse_rounds_the_order_statistic_half_up(n, q):
    """The rounding rule of the order statistic M = floor(q n + 1/2), checked against scipy's mjci at sizes where
    q n is a whole number and a half exactly (rounding half to even, or down, picks another M there)."""
    from scipy.stats.mstats import mjci

    assert (q * n) % 1 == 0.5
    x = np.random.default_rng(n).gamma(2.0, size=n)
    assert metrics.quantile_mcse(x, q) == pytest.approx(float(mjci(x, prob=[q])[0]), rel=1e-9)
