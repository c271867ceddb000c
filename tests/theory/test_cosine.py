"""How indefinite R can get under the clipped-cosine (embedding stand-in) judge: ``shapley.theory.cosine``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import check_grad

from shapley.core.kernel import kernel_matrix
from shapley.core.psd import is_psd
from shapley.theory import cosine, worstcase


def test_cosine_C_is_the_embedding_judges_formula():
    """entail.py: P = clip(cos(e_i, e_j), 0, 1) on L2-normalised embeddings (symmetric, so C = P)."""
    X = np.random.default_rng(0).normal(size=(6, 384))
    E = X / np.linalg.norm(X, axis=1, keepdims=True)
    P = np.clip(E @ E.T, 0.0, 1.0)
    np.testing.assert_allclose(cosine.cosine_C(X), P, atol=1e-12)


def test_the_gradient_of_the_smallest_eigenvalue_is_right():
    n = 6
    x = np.random.default_rng(1).normal(size=n * n)
    err = check_grad(lambda v: cosine._value_and_grad(v, n, 0.5)[0], lambda v: cosine._value_and_grad(v, n, 0.5)[1], x)
    assert err < 1e-5


def test_the_search_returns_an_attained_value_that_no_general_C_beats():
    s = cosine.search_min_eigenvalue(8, 0.5, n_starts=4, seed=0)
    assert s.min_eig_R == pytest.approx(cosine.cosine_min_eigenvalue(s.X, 0.5), abs=1e-12)
    np.testing.assert_allclose(np.linalg.norm(s.X, axis=1), 1.0)
    general = 1 + 0.5 * (worstcase.min_kernel_eigenvalue(8) - 1)  # the proved worst case over every C
    assert general < 0 < s.min_eig_R


def test_the_circle_is_exact_and_its_first_indefinite_n_is_the_first():
    for n in (3, 8, 13, 40):
        direct = np.linalg.eigvalsh(kernel_matrix(cosine.cosine_C(cosine.circle_vectors(n)), 0.5))[0]
        assert cosine.circle_min_eigenvalue(n, 0.5) == pytest.approx(direct, abs=1e-10)
    n = cosine.circle_first_indefinite_n(0.5)
    assert n is not None
    assert cosine.circle_min_eigenvalue(n, 0.5) < 0 <= cosine.circle_min_eigenvalue(n - 1, 0.5)
    assert not is_psd(kernel_matrix(cosine.cosine_C(cosine.circle_vectors(n)), 0.5))
    # the minimum keeps falling: no n-independent guarantee for this judge either
    assert cosine.circle_min_eigenvalue(1000, 0.5) < -5


def _independent_min_eigenvalue(X: np.ndarray, beta: float) -> float:
    """lambda_min(R_beta) written out from the definitions, without the package's kernel or cosine code."""
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    C = np.clip(U @ U.T, 0.0, 1.0)
    R = beta * np.exp(-((1.0 - C) ** 2) / 2.0)
    np.fill_diagonal(R, 1.0)
    return float(np.linalg.eigvalsh(R)[0])


def test_the_softmin_gradient_is_right_and_the_softmin_is_below_the_smallest_eigenvalue():
    n, t = 6, 0.01
    x = np.random.default_rng(2).normal(size=n * 3)
    f = lambda v: cosine._softmin_value_and_grad(v, n, 0.5, t)  # noqa: E731
    assert check_grad(lambda v: f(v)[0], lambda v: f(v)[1], x) < 1e-5
    lam = cosine.cosine_min_eigenvalue(x.reshape(n, 3), 0.5)
    assert lam - t * np.log(n) - 1e-12 <= f(x)[0] <= lam


def test_the_committed_witness_is_indefinite():
    """results/theory/cosine_search.json: the witness's vectors give an indefinite R (checked from scratch; the
    record's freshness, which keeps it what the seeded searches find now: tests/test_results_clean.py). Issue 23:
    the clipped-cosine judge can be indefinite at n = 20 in 6 dimensions; the sweep in R^n falls with n
    (interlacing, warm starts) and finds an indefinite R by n = 30."""
    from shapley.pipeline.rundir.settings import REPO_ROOT
    from shapley.theory import cosine_results

    record = cosine_results.RECORD.load(REPO_ROOT / "results" / "theory")
    X = cosine_results.witness_vectors(record)
    lam = _independent_min_eigenvalue(X, record["witness"]["beta"])
    assert lam < 0 and lam == pytest.approx(record["witness"]["min_eig_R"], abs=1e-9)
    assert X.shape == (record["witness"]["n"], record["witness"]["dim"]) == (20, 6)
    assert [r["n"] for r in record["sweep"]] == list(range(8, 31))
    values = [r["min_eig_R"] for r in record["sweep"]]
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:], strict=False))
    assert 20 < next(r["n"] for r in record["sweep"] if r["min_eig_R"] < 0) <= 30
    # not a trivial search: at n = 16 it goes below the circle witness and far below random unit vectors
    rng = np.random.default_rng(0)
    random_best = min(cosine.cosine_min_eigenvalue(rng.normal(size=(16, 16)), 0.5) for _ in range(200))
    assert values[16 - 8] < cosine.circle_min_eigenvalue(16, 0.5) < random_best
