"""The maths core: kernel, PSD handling, entropy and Shapley values."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, target
from hypothesis import strategies as st
from scipy.stats import multivariate_normal

import shapley
from shapley.core import psd
from tests.strategies import correlation_matrices, entailment_matrices

MOZART_C1 = np.array([[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [0.5, 0.5, 1.0]])


# --- kernel ---------------------------------------------------------------------------------------


def test_correlation_matrix_symmetrises():
    P = np.array([[1.0, 0.2], [0.6, 1.0]])
    np.testing.assert_allclose(shapley.correlation_matrix(P), [[1.0, 0.4], [0.4, 1.0]])


def test_kernel_matrix_formula():
    C = np.array([[1.0, 0.3], [0.3, 1.0]])
    R = shapley.kernel_matrix(C, beta=0.7)
    assert R[0, 0] == R[1, 1] == 1.0
    assert R[0, 1] == pytest.approx(0.7 * math.exp(-(0.7**2) / 2))


@given(entailment_matrices(max_n=10), st.floats(0.01, 1.0))
def test_kernel_range(P, beta):
    R = shapley.kernel_matrix(shapley.correlation_matrix(P), beta)
    off = R[~np.eye(len(R), dtype=bool)]
    assert np.all(np.diag(R) == 1.0)
    assert np.all(off <= beta + 1e-15) and np.all(off >= beta * math.exp(-0.5) - 1e-15)
    np.testing.assert_array_equal(R, R.T)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (np.array([[np.nan, 0.0], [0.0, 1.0]]), "NaN or inf"),
        (np.array([[np.inf, 0.0], [0.0, 1.0]]), "NaN or inf"),
        (np.ones((2, 3)), "square"),
        (np.ones(3), "2-D"),
        (np.ones((2, 2, 2)), "2-D"),
        (np.zeros((0, 0)), "n = 0"),
        (np.array([[1.0, 1.2], [0.0, 1.0]]), r"\[0, 1\]"),
        (np.array([[1.0, -0.1], [0.0, 1.0]]), r"\[0, 1\]"),
        ([["a", "b"], ["c", "d"]], "numeric"),
    ],
)
def test_bad_entailment_input(bad, match):
    with pytest.raises(ValueError, match=match):
        shapley.correlation_matrix(bad)  # shapley_uncertainty's check (it calls correlation_matrix first)


def test_kernel_rejects_asymmetric_and_bad_beta():
    with pytest.raises(ValueError, match="symmetric"):
        shapley.kernel_matrix(np.array([[1.0, 0.2], [0.6, 1.0]]))
    for beta in (0.0, -0.1, 1.5, float("nan"), "x"):
        with pytest.raises(ValueError, match="beta"):
            shapley.kernel_matrix(np.eye(2), beta=beta)


def test_entropy_rejects_asymmetric_R():
    with pytest.raises(ValueError, match="symmetric"):
        shapley.gaussian_entropy(np.array([[1.0, 0.3], [0.1, 1.0]]))
    with pytest.raises(ValueError, match="symmetric"):
        shapley.shapley_values(np.array([[1.0, 0.3], [0.1, 1.0]]))


def test_n_equals_one_is_valid_and_finite():
    assert shapley.shapley_uncertainty([[1.0]]) == pytest.approx(shapley.HALF_LOG_2PIE)
    np.testing.assert_allclose(shapley.shapley_values([[1.0]]), [shapley.HALF_LOG_2PIE])


# --- entropy --------------------------------------------------------------------------------------


@given(correlation_matrices(max_n=8))
def test_gaussian_entropy_matches_scipy(R):
    assert shapley.gaussian_entropy(R) == pytest.approx(multivariate_normal(cov=R).entropy(), rel=1e-9, abs=1e-9)


def test_singular_to_round_off_is_minus_inf():
    """A duplicated variable in a random correlation matrix: slogdet's sign is noise, the answer is -inf."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        A = rng.normal(size=(5, 3))
        S = A @ A.T
        d = np.sqrt(np.diag(S))
        R = S / np.outer(d, d)
        R[4, :] = R[0, :]
        R[:, 4] = R[:, 0]
        R[4, 4] = 1.0
        assert shapley.gaussian_entropy(R) == -math.inf


def test_singular_psd_gives_minus_inf_never_nan():
    R = np.ones((3, 3))
    assert shapley.gaussian_entropy(R) == -math.inf
    phi2 = shapley.shapley_values(np.ones((2, 2)))
    assert np.all(phi2 == -math.inf)
    with pytest.raises(ValueError, match="undefined"):
        shapley.shapley_values(R)  # (-inf) - (-inf) marginal contributions


@given(correlation_matrices(max_n=9))
def test_subset_entropies_match_direct_logdets(R):
    n = len(R)
    h = shapley.subset_entropies(R)
    assert h[0] == 0.0
    rng = np.random.default_rng(n)
    for mask in rng.integers(1, 2**n, size=min(20, 2**n - 1)):
        idx = [j for j in range(n) if mask >> j & 1]
        assert h[mask] == pytest.approx(shapley.gaussian_entropy(R[np.ix_(idx, idx)]), abs=1e-9)


# --- PSD ------------------------------------------------------------------------------------------


def test_bounds():
    assert psd.paper_beta_bound(7) == pytest.approx(1 / 8)
    assert psd.gershgorin_beta_bound(7) == pytest.approx(1 / 6)
    assert psd.gershgorin_beta_bound(2) == 1.0
    for n in range(2, 30):
        assert psd.gershgorin_beta_bound(n) > psd.paper_beta_bound(n)
    with pytest.raises(ValueError):
        psd.paper_beta_bound(0)


def _fraction():
    """Where beta sits below the bound: at it, just below it, or anywhere (a wrong bound shows at the edge)."""
    return st.one_of(st.just(1.0), st.floats(0.9, 1.0), st.floats(1e-3, 1.0))


@settings(max_examples=60)
@given(entailment_matrices(min_n=2, max_n=14, binary=True), _fraction())
def test_gershgorin_bound_keeps_R_psd(P, frac):
    n = len(P)
    R = shapley.kernel_matrix(shapley.correlation_matrix(P), frac * psd.gershgorin_beta_bound(n))
    target(-shapley.min_eigenvalue(R))
    assert shapley.is_psd(R)


def _gershgorin_class_property(bound, max_examples: int = 100):
    """Gershgorin's statement on its own class, as a runnable property: for every symmetric M with unit
    diagonal and off-diagonal entries in [-1, 1], I + beta (M - I) is PSD when beta <= bound(n). (Over
    kernel matrices, entries in [exp(-1/2), 1], the bound is loose: see tests/theory/test_worstcase.py.)"""

    @settings(max_examples=max_examples, database=None)
    @given(
        st.integers(2, 12).flatmap(
            lambda n: st.lists(
                st.one_of(st.sampled_from([-1.0, 1.0]), st.floats(-1.0, 1.0)),
                min_size=n * (n - 1) // 2,
                max_size=n * (n - 1) // 2,
            )
        ),
        _fraction(),
    )
    def prop(vals, frac):
        n = int(round((1 + math.sqrt(1 + 8 * len(vals))) / 2))
        M = np.eye(n)
        iu = np.triu_indices(n, 1)
        M[iu] = vals
        M[iu[1], iu[0]] = vals
        R = np.eye(n) + frac * bound(n) * (M - np.eye(n))
        target(-shapley.min_eigenvalue(R))
        assert shapley.is_psd(R)

    return prop


def test_gershgorin_bound_on_its_own_class():
    _gershgorin_class_property(lambda n: psd.gershgorin_beta_bound(n))()


def test_gershgorin_property_catches_a_doubled_bound(monkeypatch):
    real = psd.gershgorin_beta_bound
    monkeypatch.setattr(psd, "gershgorin_beta_bound", lambda n: min(1.0, 2 * real(n)))
    with pytest.raises(AssertionError):
        _gershgorin_class_property(lambda n: psd.gershgorin_beta_bound(n))()


def _adversarial_C(n: int) -> np.ndarray:
    """Complete-bipartite entailment (C = 1 across two halves, 0 within): indefinite at beta = 0.5 for n >= 8.

    With a = exp(-1/2) the beta = 1 kernel has eigenvalue (1 - a)(1 - n/2) on the +1/-1 half vector, so
    beta = 0.5 needs (1 - a)(n/2 - 1) <= 1, i.e. n/2 <= 3.54.
    """
    g = np.arange(n) < n // 2
    C = (g[:, None] != g[None, :]).astype(float)
    np.fill_diagonal(C, 1.0)
    return C


def test_beta_half_is_not_psd_for_adversarial_pattern():
    assert shapley.is_psd(shapley.kernel_matrix(_adversarial_C(6), 0.5))
    R = shapley.kernel_matrix(_adversarial_C(8), 0.5)
    assert not shapley.is_psd(R)
    a = math.exp(-0.5)
    assert shapley.min_eigenvalue(R) == pytest.approx(1 + 0.5 * ((1 - a) * (1 - 4) - 1))


def test_non_psd_raises_with_fix_named():
    R = shapley.kernel_matrix(_adversarial_C(10), 0.5)
    for f in (shapley.gaussian_entropy, shapley.shapley_values, shapley.subset_entropies):
        with pytest.raises(ValueError, match="not positive semi-definite.*psd_policy"):
            f(R)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        shapley.shapley_uncertainty(_adversarial_C(10), 0.5)


@pytest.mark.parametrize("policy", ["shrink", "nearest"])
def test_repair_policies_warn_and_give_psd(policy):
    R = shapley.kernel_matrix(_adversarial_C(10), 0.5)
    with pytest.warns(shapley.PSDRepairWarning, match=policy):
        A, report = shapley.ensure_psd(R, policy)
    assert not report.was_psd and report.min_eigenvalue < 0
    np.testing.assert_allclose(np.diag(A), 1.0, atol=1e-9)
    assert np.linalg.eigvalsh(A)[0] >= psd.DEFAULT_EPS / 2  # the final clip rescales the diagonal
    with pytest.warns(shapley.PSDRepairWarning):
        h = shapley.gaussian_entropy(R, psd_policy=policy)
    assert np.isfinite(h)


def test_shrink_equals_lower_beta():
    C = _adversarial_C(10)
    R = shapley.kernel_matrix(C, 0.5)
    with pytest.warns(shapley.PSDRepairWarning):
        A, report = shapley.ensure_psd(R, "shrink")
    np.testing.assert_allclose(A, shapley.kernel_matrix(C, 0.5 * report.shrink_factor), atol=1e-12)


def test_unknown_policy():
    with pytest.raises(ValueError, match="psd_policy"):
        shapley.gaussian_entropy(np.eye(2), psd_policy="ignore")


@settings(max_examples=40)
@given(entailment_matrices(min_n=2, max_n=12, binary=True))
def test_never_a_silent_nan(P):
    """Whatever the entailment pattern, beta = 0.5 gives a number or a ValueError, never NaN."""
    try:
        h = shapley.shapley_uncertainty(P, 0.5)
    except ValueError as exc:
        assert "not positive semi-definite" in str(exc)
    else:
        assert not math.isnan(h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", shapley.PSDRepairWarning)
        for policy in ("shrink", "nearest"):
            assert np.isfinite(shapley.shapley_uncertainty(P, 0.5, psd_policy=policy))


# --- Shapley values -------------------------------------------------------------------------------


@given(correlation_matrices(max_n=10))
def test_efficiency(R):
    phi = shapley.shapley_values(R)
    assert phi.sum() == pytest.approx(shapley.gaussian_entropy(R), abs=1e-9)


@given(entailment_matrices(max_n=7), st.floats(0.05, 1.0))
def test_shapley_uncertainty_is_the_sum_of_shapley_values(P, beta):
    """The identity the paper misses: sum_i phi_i = h(N(0, R)), one log-det."""
    R = shapley.kernel_matrix(shapley.correlation_matrix(P), beta)
    # An indefinite R has no Gaussian entropy, and a singular R (e.g. P all ones at beta = 1: every answer
    # a copy) has undefined Shapley values, refused with a ValueError
    # (test_singular_psd_gives_minus_inf_never_nan); the identity is about the defined case.
    assume(shapley.min_eigenvalue(R) > 1e-9)
    total = shapley.shapley_uncertainty(P, beta)
    assert shapley.shapley_values(R).sum() == pytest.approx(total, abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(correlation_matrices(max_n=5))
def test_exact_equals_the_mean_marginal_over_every_order(R):
    """The literal definition (brute force over all n! orders, numpy's slogdet) as the oracle."""
    np.testing.assert_allclose(shapley.shapley_values(R), _marginals_over_every_order(R).mean(axis=0), atol=1e-9)


@given(correlation_matrices(min_n=2, max_n=8), st.data())
def test_permutation_equivariance(R, data):
    n = len(R)
    perm = np.array(data.draw(st.permutations(range(n))))
    phi = shapley.shapley_values(R)
    np.testing.assert_allclose(shapley.shapley_values(R[np.ix_(perm, perm)]), phi[perm], atol=1e-9)


@given(
    st.integers(3, 8).flatmap(lambda n: st.lists(st.floats(0.0, 0.45), min_size=n - 2, max_size=n - 2)),
    st.floats(-0.2, 0.9),
)
def test_symmetry_equal_rows_equal_values(row, rho):
    """Answers 0 and 1 are exchangeable (same correlations with everyone else): equal phi."""
    n = len(row) + 2
    R = np.eye(n)
    R[0, 1] = R[1, 0] = rho
    R[0, 2:] = R[1, 2:] = row
    R[2:, 0] = R[2:, 1] = row
    assume(shapley.min_eigenvalue(R) >= 1e-8)  # the Shapley values exist
    phi = shapley.shapley_values(R)
    assert phi[0] == pytest.approx(phi[1], abs=1e-9)


def test_independent_answers_each_get_the_standard_normal_entropy():
    np.testing.assert_allclose(shapley.shapley_values(np.eye(5)), shapley.HALF_LOG_2PIE)


def test_the_size_limit_names_the_total_that_has_none():
    with pytest.raises(ValueError, match="EXACT_MAX_N = 22 .*shapley_uncertainty"):
        shapley.shapley_values(np.eye(shapley.EXACT_MAX_N + 1))


def test_mozart_as_written():
    """The paper's formula on Table 1's printed matrix: about 3.96 nats (the paper prints 0.40)."""
    R = shapley.kernel_matrix(MOZART_C1, 0.5)
    assert shapley.gaussian_entropy(R) == pytest.approx(3.9627, abs=1e-4)


def _marginals_over_every_order(R: np.ndarray) -> np.ndarray:
    """(n!, n) marginal contributions h(S + i) - h(S) of each answer along every order (brute force)."""
    import itertools

    n = R.shape[0]

    def h(S: tuple[int, ...]) -> float:
        if not S:
            return 0.0
        return len(S) * shapley.HALF_LOG_2PIE + 0.5 * np.linalg.slogdet(R[np.ix_(S, S)])[1]

    rows = []
    for order in itertools.permutations(range(n)):
        row = np.zeros(n)
        for k, i in enumerate(order):
            row[i] = h(tuple(sorted(order[: k + 1]))) - h(tuple(sorted(order[:k])))
        rows.append(row)
    return np.array(rows)


def test_beyond_the_exact_limit_the_entropy_matches_slogdet():
    """Issue 27: n = 30 > EXACT_MAX_N takes the LAPACK branch of the entropy; h from numpy's slogdet."""
    n = shapley.EXACT_MAX_N + 8
    rho = 0.3
    R = np.full((n, n), rho)
    np.fill_diagonal(R, 1.0)
    h = n * shapley.HALF_LOG_2PIE + 0.5 * np.linalg.slogdet(R)[1]
    assert shapley.gaussian_entropy(R) == pytest.approx(h, rel=1e-12)
    # a general PD R at the same size
    X = np.random.default_rng(3).normal(size=(n, 2 * n))
    C = np.corrcoef(X)
    assert shapley.gaussian_entropy(C) == pytest.approx(n * shapley.HALF_LOG_2PIE + 0.5 * np.linalg.slogdet(C)[1])


def test_repairs_beyond_the_exact_limit_match_independent_values():
    """Issue 27: an indefinite R at n = 30 (> EXACT_MAX_N) repaired by 'shrink' and by 'nearest': the entropy
    against the repair (computed here for 'shrink') and numpy's slogdet; the nearest matrix, which ends with a
    clip, has a unit diagonal to round-off and its eigenvalues at least eps."""
    n, eps = shapley.EXACT_MAX_N + 8, 1e-3
    R = np.full((n, n), 0.6)
    np.fill_diagonal(R, 1.0)
    R[0, 1] = R[1, 0] = -0.9
    w = np.linalg.eigvalsh(R)
    assert w[0] < 0
    t = (1 - eps) / (1 - w[0])  # largest t with lambda_min(I + t (R - I)) = eps
    shrunk = np.eye(n) + t * (R - np.eye(n))
    nearest = psd.nearest_correlation(R, eps)
    np.testing.assert_allclose(np.diag(nearest), 1.0, rtol=0, atol=1e-14)
    assert np.linalg.eigvalsh(nearest)[0] >= eps * (1 - 1e-6)
    for policy, A in (("shrink", shrunk), ("nearest", nearest)):
        with pytest.warns(psd.PSDRepairWarning):
            h = shapley.gaussian_entropy(R, psd_policy=policy, eps=eps)
        assert h == pytest.approx(n * shapley.HALF_LOG_2PIE + 0.5 * np.linalg.slogdet(A)[1], rel=1e-10), policy
