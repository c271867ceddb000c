"""Edge cases of the maths core found by an outside attack (issue 12, items 8, 9 and 14).

8: one singularity rule, relative to R's scale, shared by the entropy and the Shapley values, so that
   efficiency (sum phi == h(R)) holds whenever both are finite and both are -inf / undefined together.
9: the eigenvalue floor ``eps`` is validated by every function that takes it.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import shapley
from shapley.core import entropy, psd
from tests.strategies import correlation_matrices

NEAR_SINGULAR = np.array([[1.0, 1.0 - 1e-12], [1.0 - 1e-12, 1.0]])  # eigenvalues 2 - 1e-12 and 1e-12


def _consistent(R: np.ndarray) -> dict[str, float]:
    """h(R) and the sum of the Shapley values (NaN where refused with a ValueError): efficiency when h(R) is
    finite (one elimination: equal up to the round-off of the Shapley weights); -inf or refused when it is -inf."""
    totals = {"entropy": shapley.gaussian_entropy(R)}
    try:
        totals["exact"] = float(shapley.shapley_values(R).sum())
    except ValueError:
        totals["exact"] = math.nan
    h = totals["entropy"]
    if math.isfinite(h):
        assert totals["exact"] == pytest.approx(h, rel=1e-12, abs=1e-12), totals
    else:
        assert h == -math.inf
        assert not math.isfinite(totals["exact"]), totals  # -inf, or undefined (refused)
    return totals


# --- 8: one singularity rule ----------------------------------------------------------------------


def test_near_singular_matrix_is_finite_and_efficient():
    """The attack's case: gaussian_entropy said -inf while the Shapley values summed to -10.63."""
    h = shapley.gaussian_entropy(NEAR_SINGULAR)
    expected = 2 * shapley.HALF_LOG_2PIE + 0.5 * math.log(1.0 - (1.0 - 1e-12) ** 2)
    assert h == pytest.approx(expected, abs=1e-4)  # the stored 1 - 1e-12 is itself rounded (relative 1e-4)
    assert round(h, 2) == -10.63
    _consistent(NEAR_SINGULAR)
    assert not psd.is_singular(NEAR_SINGULAR)
    assert shapley.subset_entropies(NEAR_SINGULAR)[-1] == pytest.approx(h, abs=1e-12)


def test_tiny_but_well_conditioned_matrix_is_positive_definite():
    """1e-300 * I is positive definite; an absolute tolerance called it singular (-inf)."""
    R = np.eye(3) * 1e-300
    h = shapley.gaussian_entropy(R)
    assert h == pytest.approx(3 * shapley.HALF_LOG_2PIE + 1.5 * math.log(1e-300), rel=1e-12)
    phi = shapley.shapley_values(R)
    np.testing.assert_allclose(phi, shapley.HALF_LOG_2PIE + 0.5 * math.log(1e-300), rtol=1e-12)
    _consistent(R)


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e-8, 1.0, 1e8, 1e150, 1e300])
def test_the_rule_is_scale_free(scale):
    """h(c R) = h(R) + n/2 ln c, and c R is singular exactly when R is, at any scale."""
    R = np.array([[1.0, 0.5, 0.2], [0.5, 1.0, 0.3], [0.2, 0.3, 1.0]])
    assert shapley.gaussian_entropy(scale * R) == pytest.approx(
        shapley.gaussian_entropy(R) + 1.5 * math.log(scale), rel=1e-12, abs=1e-9
    )
    _consistent(scale * R)
    singular = np.ones((3, 3))
    assert shapley.gaussian_entropy(scale * singular) == -math.inf
    _consistent(scale * singular)


def test_tiny_negative_definite_matrix_is_not_psd():
    """-1e-300 * I has negative eigenvalues; an absolute PSD tolerance accepted it as 'singular PSD'."""
    R = -1e-300 * np.eye(2)
    assert not shapley.is_psd(R)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        shapley.gaussian_entropy(R)


def test_psd_tolerance_is_relative():
    R = np.array([[1.0, 0.3], [0.3, 1.0]])
    assert psd.psd_tolerance(1e-200 * R) == pytest.approx(1e-200 * psd.psd_tolerance(R), rel=1e-12)
    assert psd.psd_tolerance(np.zeros((2, 2))) == 0.0


@pytest.mark.parametrize("k", range(1, 17))
def test_rho_towards_one_finite_or_minus_inf_together(k):
    """Along rho = 1 - 10**-k the Shapley values agree with h(R): the same value, or all -inf / undefined."""
    rho = 1.0 - 10.0**-k
    R = np.array([[1.0, rho, 0.3], [rho, 1.0, 0.3], [0.3, 0.3, 1.0]])
    totals = _consistent(R)
    assert math.isfinite(totals["entropy"]) == (not psd.is_singular(R))


def _with_smallest_eigenvalue(G: np.ndarray, scales: list[float], ratio: float) -> np.ndarray:
    """A PSD (n, n) matrix with eigenvectors from the QR of the drawn G, eigenvalues ``scales``, and its
    smallest eigenvalue then set to ``ratio * psd_tolerance`` of it."""
    Q, _ = np.linalg.qr(G)
    A = (Q * np.asarray(scales)) @ Q.T
    A = (A + A.T) / 2
    w, V = np.linalg.eigh(A)
    w[0] = ratio * psd.psd_tolerance(A)
    A = (V * w) @ V.T
    return (A + A.T) / 2


@st.composite
def _basis_and_scales(draw):
    n = draw(st.integers(2, 7))
    G = draw(arrays(np.float64, (n, n), elements=st.floats(-2.0, 2.0)))
    assume(abs(np.linalg.det(G)) > 1e-3)  # a proper basis
    return G, draw(st.lists(st.floats(0.1, 2.0), min_size=n, max_size=n))


@settings(max_examples=60)
@given(_basis_and_scales(), st.sampled_from([0.0, 0.5, 0.9, 1.1, 2.0, 10.0]))
def test_efficiency_at_the_threshold(basis, ratio):
    """Around the threshold (smallest eigenvalue near psd_tolerance) the values never disagree with h(R)."""
    R = _with_smallest_eigenvalue(*basis, ratio)
    assume(shapley.is_psd(R))  # the rebuilt matrix may round to a hair below -tol; nothing to decide then
    _consistent(R)


@given(correlation_matrices(max_n=8))
def test_gaussian_entropy_is_the_full_subset_entropy(R):
    """h(R) and v(N) come from the same elimination: equal to round-off, whatever the conditioning."""
    assert shapley.subset_entropies(R)[-1] == pytest.approx(shapley.gaussian_entropy(R), rel=1e-13, abs=1e-13)


# --- 9: eps ---------------------------------------------------------------------------------------

_HALVES = np.arange(10) < 5
_C = (_HALVES[:, None] != _HALVES[None, :]).astype(float)  # entailment across two halves only
np.fill_diagonal(_C, 1.0)
NOT_PSD = shapley.kernel_matrix(_C, 0.5)  # indefinite at beta = 0.5 (tests/core/test_core.py)

EPS_CALLS = {
    "ensure_psd": lambda eps: psd.ensure_psd(NOT_PSD, "shrink", eps),
    "nearest_correlation": lambda eps: psd.nearest_correlation(NOT_PSD, eps),
    "gaussian_entropy": lambda eps: shapley.gaussian_entropy(NOT_PSD, psd_policy="shrink", eps=eps),
    "subset_entropies": lambda eps: shapley.subset_entropies(NOT_PSD, psd_policy="shrink", eps=eps),
    "shapley_values": lambda eps: shapley.shapley_values(NOT_PSD, psd_policy="nearest", eps=eps),
    "shapley_uncertainty": lambda eps: shapley.shapley_uncertainty(np.eye(2), 0.5, psd_policy="shrink", eps=eps),
}


def test_not_psd_fixture_is_not_psd():
    assert not shapley.is_psd(NOT_PSD)


def test_every_function_taking_eps_is_covered():
    modules = (psd, entropy)
    taking_eps = {
        name
        for mod in modules
        for name, f in inspect.getmembers(mod, inspect.isfunction)
        if f.__module__ == mod.__name__
        and not name.startswith("_")
        and not name.endswith("_checked")  # the core's internal helpers (shapley.core.validate)
        and "eps" in inspect.signature(f).parameters
    }
    assert taking_eps == set(EPS_CALLS)


@pytest.mark.parametrize("name", sorted(EPS_CALLS))
@pytest.mark.parametrize("eps", [math.nan, math.inf, -1e-6, 0.0, 1.0, 2.0, True, "0.1", None])
def test_bad_eps_is_refused_naming_it(name, eps):
    """Also the attack's cases: eps = nan gave NaN entropies, eps = 2 a negative shrink factor."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", shapley.PSDRepairWarning)
        with pytest.raises(ValueError, match="eps"):
            EPS_CALLS[name](eps)


@pytest.mark.parametrize("name", sorted(EPS_CALLS))
def test_good_eps_is_accepted(name):
    """A valid eps gives a result, and every number in it is finite (the repaired NOT_PSD is not singular)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", shapley.PSDRepairWarning)
        out = EPS_CALLS[name](1e-3)
    parts = out if isinstance(out, tuple) else (out,)
    numbers = [np.asarray(p, dtype=float) for p in parts if isinstance(p, (float, np.floating, np.ndarray))]
    assert numbers and all(np.all(np.isfinite(x)) for x in numbers)


def test_other_nearest_correlation_settings_are_checked():
    with pytest.raises(ValueError, match="max_iter"):
        psd.nearest_correlation(NOT_PSD, max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        psd.nearest_correlation(NOT_PSD, tol=math.nan)
