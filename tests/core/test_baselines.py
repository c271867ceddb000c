"""Tests for shapley.core.baselines: worked examples, invariants (hypothesis) and every ValueError path."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from shapley.core import baselines as B

MOZART_P = np.array([0.5, 0.4, 0.1])  # Tables 1-2: Mozart, "Mozart", Beethoven / da Vinci
MOZART_LL = np.log(MOZART_P)


def _h(p) -> float:
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-np.sum(p * np.log(p)))


# ---------------------------------------------------------------------------- likelihood entropies


def test_likelihood_entropy_mozart():
    exact = -(0.5 * math.log(0.5) + 0.4 * math.log(0.4) + 0.1 * math.log(0.1))
    v = B.likelihood_entropy(MOZART_LL)
    assert v == pytest.approx(exact, abs=1e-12)
    assert round(v, 2) == 0.94


def test_likelihood_entropy_renormalises():
    # only relative likelihoods matter: halving every probability leaves it unchanged
    assert B.likelihood_entropy(MOZART_LL + math.log(0.5)) == pytest.approx(B.likelihood_entropy(MOZART_LL))
    assert B.likelihood_entropy([-3.0]) == 0.0
    assert B.likelihood_entropy(np.log([0.25, 0.25])) == pytest.approx(math.log(2))


def test_predictive_entropy():
    assert B.predictive_entropy([-1.0, -2.0, -3.0]) == pytest.approx(2.0)
    assert B.predictive_entropy([0.0, 0.0]) == 0.0


def test_length_normalised_predictive_entropy():
    lp = [[-1.0, -3.0], [-0.5], [-2.0, -2.0, -2.0]]  # per-sample means -2, -0.5, -2
    assert B.length_normalised_predictive_entropy(lp) == pytest.approx(1.5)
    # equals predictive entropy when every answer has one token
    ll = [-0.3, -1.2, -2.2]
    assert B.length_normalised_predictive_entropy([[x] for x in ll]) == pytest.approx(B.predictive_entropy(ll))
    assert B.length_normalised_predictive_entropy(np.array([[-1.0, -2.0]])) == pytest.approx(1.5)


@given(arrays(float, st.integers(1, 12), elements=st.floats(-30, 0)))
def test_likelihood_entropy_bounds(ll):
    v = B.likelihood_entropy(ll)
    assert 0.0 <= v <= math.log(ll.size) + 1e-9


@given(arrays(float, st.integers(1, 12), elements=st.floats(-30, 0)))
def test_predictive_entropy_nonnegative_and_mean(ll):
    v = B.predictive_entropy(ll)
    assert v >= 0.0
    assert v == pytest.approx(-ll.mean(), abs=1e-9)


# ---------------------------------------------------------------------------- clustering


def test_clusters_bidirectional_mozart():
    # Mozart / "Mozart" entail each other; Beethoven entails neither
    E = np.array([[1.0, 0.9, 0.05], [0.8, 1.0, 0.1], [0.02, 0.1, 1.0]])
    np.testing.assert_array_equal(B.semantic_clusters(E), [0, 0, 1])


def test_clusters_one_way_entailment_is_not_enough():
    E = np.array([[1.0, 0.9], [0.2, 1.0]])  # 0 => 1 but not 1 => 0
    np.testing.assert_array_equal(B.semantic_clusters(E), [0, 1])
    # strict inequality: exactly at the threshold is not equivalent
    E2 = np.array([[1.0, 0.5], [0.5, 1.0]])
    np.testing.assert_array_equal(B.semantic_clusters(E2, threshold=0.5), [0, 1])
    np.testing.assert_array_equal(B.semantic_clusters(E2, threshold=0.49), [0, 0])


def test_clusters_rules_differ_on_neutral_pairs():
    # answers 0 and 1 neither entail nor contradict each other (neutral), 2 contradicts both
    E = np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 0.0], [0.0, 0.0, 1.0]])
    C = np.array([[0.0, 0.1, 0.9], [0.1, 0.0, 0.8], [0.9, 0.95, 0.0]])
    np.testing.assert_array_equal(B.semantic_clusters(E, C, rule="bidirectional"), [0, 1, 2])
    np.testing.assert_array_equal(B.semantic_clusters(E, C, rule="non_contradiction"), [0, 0, 1])
    # non_contradiction does not need entail
    np.testing.assert_array_equal(B.semantic_clusters(None, C, rule="non_contradiction"), [0, 0, 1])


def test_clusters_one_sided_contradiction_splits():
    C = np.array([[0.0, 0.7], [0.1, 0.0]])
    np.testing.assert_array_equal(B.semantic_clusters(None, C, rule="non_contradiction"), [0, 1])


def test_clusters_greedy_uses_representative():
    # 1 ~ 0, 2 ~ 1 but 2 !~ 0: the representative of cluster 0 is answer 0, so 2 opens a new cluster
    E = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.9], [0.1, 0.9, 1.0]])
    np.testing.assert_array_equal(B.semantic_clusters(E), [0, 0, 1])
    # labels follow first appearance
    E = np.eye(4)
    E[1, 3] = E[3, 1] = 1.0
    np.testing.assert_array_equal(B.semantic_clusters(E), [0, 1, 2, 1])


@given(st.integers(1, 8), st.integers(0, 2**31 - 1))
def test_clusters_labels_are_canonical(n, seed):
    rng = np.random.default_rng(seed)
    E = rng.uniform(size=(n, n))
    labels = B.semantic_clusters(E)
    assert labels.shape == (n,)
    assert labels[0] == 0
    # labels 0..k-1 in order of first appearance
    first = [int(np.flatnonzero(labels == c)[0]) for c in range(labels.max() + 1)]
    assert first == sorted(first)
    assert set(labels.tolist()) == set(range(labels.max() + 1))


# ---------------------------------------------------------------------------- semantic entropies


def test_semantic_entropy_mozart():
    exact = -(0.9 * math.log(0.9) + 0.1 * math.log(0.1))
    v = B.semantic_entropy(MOZART_LL, [0, 0, 1])
    assert v == pytest.approx(exact, abs=1e-12)
    assert round(v, 2) == 0.33
    # label values themselves do not matter
    assert B.semantic_entropy(MOZART_LL, [7, 7, -2]) == pytest.approx(exact)


def test_semantic_entropy_renormalises_when_mass_missing():
    ll = np.log([0.3, 0.2])  # 0.5 of the mass is on unseen answers
    assert B.semantic_entropy(ll, [0, 1]) == pytest.approx(_h([0.6, 0.4]))


def test_semantic_entropy_single_cluster_is_zero():
    assert B.semantic_entropy(MOZART_LL, [0, 0, 0]) == 0.0
    assert B.semantic_entropy(MOZART_LL, [0, 1, 2]) == pytest.approx(B.likelihood_entropy(MOZART_LL))


@given(
    st.integers(1, 10).flatmap(
        lambda n: st.tuples(
            arrays(float, n, elements=st.floats(-20, 0)),
            arrays(np.int64, n, elements=st.integers(0, 4)),
        )
    )
)
def test_semantic_entropy_bounds(args):
    ll, ids = args
    v = B.semantic_entropy(ll, ids)
    k = np.unique(ids).size
    assert 0.0 <= v <= math.log(k) + 1e-9
    # merging answers into clusters never increases entropy
    assert v <= B.likelihood_entropy(ll) + 1e-9


def test_discrete_semantic_entropy_values():
    assert B.discrete_semantic_entropy([0, 0, 1, 1]) == pytest.approx(math.log(2))
    assert B.discrete_semantic_entropy([0, 0, 0, 1]) == pytest.approx(_h([0.75, 0.25]))


@given(st.integers(1, 30))
def test_discrete_semantic_entropy_extremes(n):
    assert B.discrete_semantic_entropy(np.arange(n)) == pytest.approx(math.log(n))
    assert B.discrete_semantic_entropy(np.zeros(n, dtype=int)) == 0.0


@given(arrays(np.int64, st.integers(1, 20), elements=st.integers(0, 6)))
def test_discrete_semantic_entropy_bounds(ids):
    v = B.discrete_semantic_entropy(ids)
    assert 0.0 <= v <= math.log(ids.size) + 1e-9


def test_num_semantic_sets():
    v = B.num_semantic_sets([0, 0, 1, 2, 1])
    assert v == 3.0 and isinstance(v, float)
    assert B.num_semantic_sets(np.array([4.0, 4.0])) == 1.0


# ---------------------------------------------------------------------------- lexical similarity


def test_lexical_similarity():
    assert B.lexical_similarity(["Mozart"]) == 0.0
    assert B.lexical_similarity(["Wolfgang Amadeus Mozart"] * 3) == pytest.approx(0.0)
    assert B.lexical_similarity(["Mozart", "Beethoven"]) == pytest.approx(1.0)
    # "wolfgang amadeus mozart" vs "mozart": LCS 1, P = 1/3, R = 1, F = 0.5
    assert B.lexical_similarity(["Wolfgang Amadeus Mozart", "Mozart"]) == pytest.approx(0.5)
    # three answers: pairs (0,1) F=0.5, (0,2) F=0, (1,2) F=0  ->  1 - 0.5/3
    v = B.lexical_similarity(["Wolfgang Amadeus Mozart", "Mozart", "Ludwig van Beethoven"])
    assert v == pytest.approx(1 - 0.5 / 3)


# ---------------------------------------------------------------------------- spectral measures


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_spectral_identity_vs_full(n):
    I, J = np.eye(n), np.ones((n, n))
    assert B.eigv(I) == pytest.approx(n)
    assert B.eigv(J) == pytest.approx(1.0)
    assert B.degree(I) == pytest.approx(1 - 1 / n)
    assert B.degree(J) == pytest.approx(0.0)
    assert B.eccentricity(I) == pytest.approx(math.sqrt(n - 1))
    assert B.eccentricity(J) == pytest.approx(0.0, abs=1e-9)
    for f in (B.eigv, B.degree, B.eccentricity, B.kernel_language_entropy):
        assert f(J) < f(I), f.__name__


def test_eigv_counts_blocks():
    # two disjoint fully-similar groups behave like two semantic sets
    W = np.zeros((5, 5))
    W[:3, :3] = 1.0
    W[3:, 3:] = 1.0
    assert B.eigv(W) == pytest.approx(2.0)
    assert B.degree(W) == pytest.approx(1 - (3 * 3 + 2 * 2) / 25)


def test_the_diagonal_counts_in_the_degree_and_cancels_in_kle():
    """Degree: 1 - (sum over all n^2 pairs (i, j), i = j included) / n^2, computed pair by pair on a W whose
    diagonal is not 1 (leaving the diagonal out gives another value); KLE: the diagonal cancels in L = D - W."""
    W = np.array([[0.6, 0.8, 0.1], [0.8, 0.3, 0.5], [0.1, 0.5, 0.9]])
    n = len(W)
    with_diagonal = 1 - sum(W[i, j] for i in range(n) for j in range(n)) / n**2
    without = 1 - sum(W[i, j] for i in range(n) for j in range(n) if i != j) / n**2
    assert B.degree(W) == pytest.approx(with_diagonal) and with_diagonal != pytest.approx(without)
    other = W.copy()
    np.fill_diagonal(other, 1.0)
    assert B.kernel_language_entropy(other) == pytest.approx(B.kernel_language_entropy(W), rel=1e-12)
    assert B.degree(other) != pytest.approx(B.degree(W))


def test_eccentricity_of_two_blocks():
    W = np.zeros((4, 4))
    W[:2, :2] = 1.0
    W[2:, 2:] = 1.0
    # two zero eigenvalues (indicator vectors of the blocks), the two kept: embeddings are +-1/sqrt(2) per block
    assert B.eccentricity(W) == pytest.approx(1.0)  # ||centred V||_F^2 = k - ||V^T 1||^2 / n = 2 - 4/4


@st.composite
def similarity_matrices(draw, max_n=7):
    n = draw(st.integers(1, max_n))
    A = draw(arrays(float, (n, n), elements=st.floats(0, 1)))
    W = (A + A.T) / 2
    np.fill_diagonal(W, 1.0)
    return W


@settings(max_examples=60)
@given(similarity_matrices())
def test_spectral_ranges(W):
    n = W.shape[0]
    assert 1.0 - 1e-9 <= B.eigv(W) <= n + 1e-9
    assert -1e-12 <= B.degree(W) <= 1 - 1 / n + 1e-12
    assert 0.0 <= B.eccentricity(W) <= math.sqrt(max(n - 1, 0)) + 1e-9
    for norm in ("trace", "diagonal"):
        v = B.kernel_language_entropy(W, normalisation=norm)
        assert -1e-12 <= v <= math.log(n) + 1e-9


def test_kle_values():
    n = 4
    assert B.kernel_language_entropy(np.eye(n)) == pytest.approx(math.log(n))
    # one answer: a single pure state
    assert B.kernel_language_entropy([[1.0]]) == 0.0
    # full similarity: K = e^{-tn}(I - J/n) + J/n, eigenvalues 1 and e^{-tn} (n-1 times)
    t = 0.3
    lam = np.array([1.0] + [math.exp(-t * n)] * (n - 1))
    mu = lam / lam.sum()
    assert B.kernel_language_entropy(np.ones((n, n)), t=t) == pytest.approx(_h(mu))
    # longer diffusion smooths more: entropy falls for the full graph
    assert B.kernel_language_entropy(np.ones((n, n)), t=2.0) < B.kernel_language_entropy(np.ones((n, n)), t=0.3)


# ---------------------------------------------------------------------------- SelfCheckGPT


def test_selfcheck_hand_examples():
    lp = np.log([0.9, 0.5, 0.8])
    assert B.selfcheck_maxl(lp) == pytest.approx(math.log(2))
    assert B.selfcheck_avgl(lp) == pytest.approx(-(math.log(0.9) + math.log(0.5) + math.log(0.8)) / 3)
    H = [0.1, 1.2, 0.5, 0.2]
    assert B.selfcheck_maxe(H) == pytest.approx(1.2)
    assert B.selfcheck_avge(H) == pytest.approx(0.5)
    assert B.selfcheck_maxl([0.0]) == 0.0


@given(arrays(float, st.integers(1, 20), elements=st.floats(-20, 0)))
def test_selfcheck_max_dominates_mean(lp):
    assert B.selfcheck_maxl(lp) >= B.selfcheck_avgl(lp) - 1e-12 >= -1e-12


# ---------------------------------------------------------------------------- p(True) and A4C


def test_p_true():
    assert B.p_true_uncertainty(0.8) == pytest.approx(0.2)


def _confidence(text: str) -> float:
    return B.confidence_reading(text)[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.8", 0.8),
        (".9", 0.9),
        ("1", 1.0),
        ("0", 0.0),
        ("80%", 0.8),
        ("80 %", 0.8),
        ("85", 0.85),
        ("Confidence: 0.75", 0.75),
        ("confidence: 75%", 0.75),
        ("Probability: 0.9", 0.9),
        ("Probability = 0.35.", 0.35),
        ("My confidence level is 80 percent.", 0.8),
        ("Confidence: 85", 0.85),
        ("I am 90% confident.", 0.9),
        ("Guess: 1990\nProbability: 0.8", 0.8),
        ("The answer is 1756; confidence 0.6", 0.6),
        ("P(True) = 0.65", 0.65),
        ("I'd say 0.7.", 0.7),
        ("Mozart, 0.95", 0.95),
    ],
)
def test_parse_confidence_formats(text, expected):
    assert _confidence(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "very sure",
        "I think it is Mozart",
        "Confidence: high",
        "Confidence: -0.5",
        "Confidence: 150",
        "250%",
        "It was written in 1791",
        "version 1.2.3",
    ],
)
def test_parse_confidence_unparseable_is_nan(text):
    assert math.isnan(_confidence(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Confidence: 8/10", 0.8),
        ("8/10", 0.8),
        ("4 out of 5", 0.8),
        ("Confidence: 4 out of 5", 0.8),
        ("Confidence (0-1): 0.2", 0.2),
        ("Confidence [0 to 100]: 85", 0.85),
        ("Confidence (0-1): 1/4", 0.25),
    ],
)
def test_parse_confidence_ratios_and_scale_notes(text, expected):
    """issue 38 (6): "8/10" gave 0.08, "4 out of 5" 0.04 and "Confidence (0-1): 0.2" gave 0."""
    assert _confidence(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text", ["0,8", "1e-1", "Confidence: 1e-1", "Confidence: 0,8", "Probability 0.5.5", "1/4/2024"]
)
def test_parse_confidence_partly_read_number_is_nan_with_reason(text):
    """issue 38 (6): "0,8" gave 0 and "1e-1" gave 1.0 (their first digits); now NaN, with a fixed reason."""
    value, reason = B.confidence_reading(text)
    assert math.isnan(value) and reason == B.verbalised.PARTLY_READ


@given(st.text(max_size=60))
def test_parse_confidence_never_out_of_range(text):
    c = _confidence(text)
    assert math.isnan(c) or 0.0 <= c <= 1.0


# ---------------------------------------------------------------------------- embedding regression


def test_embedding_regression_orders_separable_problem():
    rng = np.random.default_rng(0)
    X0 = rng.normal(loc=-2.0, size=(40, 3))
    X1 = rng.normal(loc=+2.0, size=(40, 3))
    X = np.vstack([X0, X1])
    y = np.r_[np.zeros(40, dtype=bool), np.ones(40, dtype=bool)]
    tr, te = B.train_test_split_indices(80, test_fraction=0.5, seed=1)
    model = B.EmbeddingRegression().fit(X[tr], y[tr])
    u = model.uncertainty(X[te])
    assert u.shape == (te.size,)
    assert np.all((u >= 0) & (u <= 1))
    # every incorrect (class 0) test point is more uncertain than every correct one: AUROC = 1
    assert u[~y[te]].min() > u[y[te]].max()
    # deterministic
    u2 = B.EmbeddingRegression().fit(X[tr], y[tr]).uncertainty(X[te])
    np.testing.assert_array_equal(u, u2)
    # accepts 0/1 integer labels
    B.EmbeddingRegression().fit(X[tr], y[tr].astype(int))


def test_train_test_split_indices():
    tr, te = B.train_test_split_indices(10, test_fraction=0.3, seed=0)
    assert te.size == 3 and tr.size == 7
    assert sorted(np.r_[tr, te].tolist()) == list(range(10))
    tr2, te2 = B.train_test_split_indices(10, test_fraction=0.3, seed=0)
    np.testing.assert_array_equal(te, te2)
    assert B.train_test_split_indices(2, test_fraction=0.01)[1].size == 1
    assert B.train_test_split_indices(2, test_fraction=0.99)[0].size == 1


# ---------------------------------------------------------------------------- ValueError paths
# One case per check: a validator that several functions share (shapley.core.validate) is tried through one of
# them (the matrix checks through correlation_matrix in test_core.py, kinds in tests/test_wrong_kinds.py).


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: B.likelihood_entropy([]), "at least 1"),
        (lambda: B.likelihood_entropy([-1.0, np.nan]), "NaN or inf"),
        (lambda: B.likelihood_entropy([-1.0, -np.inf]), "NaN or inf"),
        (lambda: B.likelihood_entropy([0.5, 0.4]), "must be <= 0"),
        (lambda: B.likelihood_entropy([[-1.0]]), "1-D"),
        (lambda: B.length_normalised_predictive_entropy([]), "at least one sample"),
        (lambda: B.length_normalised_predictive_entropy([[-1.0], []]), r"token_logprobs\[1\]"),
        (lambda: B.length_normalised_predictive_entropy([[-1.0, np.nan]]), "NaN or inf"),
        (lambda: B.length_normalised_predictive_entropy([[0.3]]), "must be <= 0"),
        (lambda: B.length_normalised_predictive_entropy("abc"), "sequence of per-sample"),
        (lambda: B.semantic_clusters(np.array([[1.0, 1.5], [0, 1]])), r"\[0, 1\]"),
        (lambda: B.semantic_clusters(np.eye(2), rule="bogus"), "rule"),
        (lambda: B.semantic_clusters(np.eye(2), threshold=1.5), "threshold"),
        (lambda: B.semantic_clusters(np.eye(2), threshold=float("nan")), "threshold"),
        (lambda: B.semantic_clusters(None), "needs the entailment matrix"),
        (lambda: B.semantic_clusters(np.eye(2), rule="non_contradiction"), "needs the contradiction matrix"),
        (lambda: B.semantic_clusters(np.eye(2), np.eye(3), rule="non_contradiction"), "same shape"),
        (lambda: B.semantic_entropy(MOZART_LL, [0, 1]), "same length"),
        (lambda: B.semantic_entropy(MOZART_LL, [0.5, 1, 1]), "integer cluster labels"),
        (lambda: B.discrete_semantic_entropy([]), "empty"),
        (lambda: B.discrete_semantic_entropy([[0, 1]]), "1-D"),
        (lambda: B.lexical_similarity([]), "at least one"),
        (lambda: B.eigv(np.array([[1.0, 0.9], [0.1, 1.0]])), "symmetric"),
        (lambda: B.eigv(np.array([[1.0, -0.5], [-0.5, 1.0]])), r"\[0, 1\]"),
        (lambda: B.eigv(np.zeros((2, 2))), "zero total similarity"),
        (lambda: B.kernel_language_entropy(np.eye(3), t=0.0), "t "),
        (lambda: B.kernel_language_entropy(np.eye(3), t=float("inf")), "t "),
        (lambda: B.kernel_language_entropy(np.eye(3), normalisation="max"), "normalisation"),
        (lambda: B.selfcheck_maxe([]), "at least 1"),
        (lambda: B.selfcheck_maxe([-0.5]), ">= 0"),
        (lambda: B.selfcheck_avge([np.inf]), "NaN or inf"),
        (lambda: B.p_true_uncertainty(1.2), r"\[0, 1\]"),
        (lambda: B.p_true_uncertainty(float("nan")), r"\[0, 1\]"),
        (lambda: B.train_test_split_indices(1), "n must be"),
        (lambda: B.train_test_split_indices(10, test_fraction=0.0), "test_fraction"),
        (lambda: B.train_test_split_indices(10, test_fraction=1.0), "test_fraction"),
        (lambda: B.train_test_split_indices(10, seed=0.5), "seed"),
        (lambda: B.EmbeddingRegression().fit(np.ones((4, 2)), [1, 1, 1, 1]), "training answers are all correct"),
        (lambda: B.EmbeddingRegression().fit(np.ones((4, 2)), [0, 0, 0, 0]), "training answers are all incorrect"),
        (lambda: B.EmbeddingRegression().fit(np.ones((4, 2)), [0, 1, 2, 1]), "0/1 labels"),
        (lambda: B.EmbeddingRegression().fit(np.ones((4, 2)), [0, 1, 1]), "one label per row"),
        (lambda: B.EmbeddingRegression().fit(np.ones(4), [0, 1, 1, 0]), "2-D"),
        (lambda: B.EmbeddingRegression().fit(np.full((2, 2), np.nan), [0, 1]), "NaN or inf"),
        (lambda: B.EmbeddingRegression().fit(np.zeros((0, 2)), []), "at least one row"),
        (lambda: B.EmbeddingRegression().uncertainty(np.ones((2, 2))), "not fitted"),
        (
            lambda: B.EmbeddingRegression().fit(np.eye(2), [0, 1]).uncertainty(np.ones((2, 3))),
            "3 features",
        ),
    ],
)
def test_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("transpose", [False, True])
def test_clusters_need_both_directions_whichever_fails(transpose):
    """Issue 27: a pair where only one direction contradicts (or entails) splits, in either orientation, so
    a rule that checks one direction only fails one of the two cases."""
    C = np.array([[0.0, 0.7], [0.1, 0.0]])
    E = np.array([[1.0, 0.9], [0.2, 1.0]])
    if transpose:
        C, E = C.T, E.T
    np.testing.assert_array_equal(B.semantic_clusters(None, C, rule="non_contradiction"), [0, 1])
    np.testing.assert_array_equal(B.semantic_clusters(E, rule="bidirectional"), [0, 1])
    # and neither direction failing joins them
    np.testing.assert_array_equal(B.semantic_clusters(None, np.minimum(C, 0.2), rule="non_contradiction"), [0, 0])
    np.testing.assert_array_equal(B.semantic_clusters(np.maximum(E, 0.8), rule="bidirectional"), [0, 0])
