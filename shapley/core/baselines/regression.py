"""Supervised embedding regression (Farquhar et al. 2024): correctness predicted from answer embeddings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from shapley.core import validate


def train_test_split_indices(n: int, test_fraction: float = 0.5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random disjoint (train_idx, test_idx) index arrays covering range(n), each sorted.

    ``test_fraction`` in (0, 1); the test size is round(n * test_fraction), clamped so that both parts
    hold at least one index (n >= 2). Deterministic given ``seed`` (numpy default_rng).

    Examples:
        >>> train, test = train_test_split_indices(6, 0.5, seed=0)
        >>> len(train), len(test), sorted(train.tolist() + test.tolist())
        (3, 3, [0, 1, 2, 3, 4, 5])
    """
    n = validate.integer(n, "n", minimum=2)  # both parts need an index
    f = validate.number(test_fraction, "test_fraction", 0.0, 1.0)
    n_test = min(n - 1, max(1, int(round(n * f))))
    perm = np.random.default_rng(validate.integer(seed, "seed")).permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


class EmbeddingRegression:
    """Supervised uncertainty: logistic regression from answer embeddings to correctness.

    The embedding-regression baseline of Farquhar et al. (2024) "Detecting hallucinations in large language
    models using semantic entropy", whose baselines the paper's Table 4 columns follow (the paper's ER column).
    Features are standardised (scikit-learn ``StandardScaler``) and fed to ``LogisticRegression`` (scikit-learn's
    defaults: L2 with C = 1, lbfgs; seeded, up to 1000 steps).

    ``fit(X_train, correct_train)``: X (m, d) finite features (e.g. hidden states or sentence
    embeddings), correct (m,) booleans / 0-1 labels with both classes present; returns self.
    ``uncertainty(X)``: (m',) array of 1 - P(correct | x).

    Examples:
        >>> X = np.array([[0.0], [0.2], [0.4], [1.6], [1.8], [2.0]])  # large x: wrong answers
        >>> model = EmbeddingRegression().fit(X, [1, 1, 1, 0, 0, 0])
        >>> u = model.uncertainty(np.array([[0.1], [1.9]]))
        >>> bool(u[0] < 0.5 < u[1])
        True
    """

    model_: Any = None  # the fitted pipeline

    @staticmethod
    def _features(X: Any, name: str) -> np.ndarray:
        A = validate.real_array(X, name, "a numeric (m, d) array", ndim=2, dims=" (m samples, d features)")
        if A.size == 0:
            raise ValueError(f"{name} must have at least one row and one column; got shape {A.shape}")
        return validate.finite(A, name)

    def fit(self, X_train: np.ndarray, correct_train: Sequence[bool] | np.ndarray) -> EmbeddingRegression:
        """Fit on (m, d) features and (m,) correctness labels; returns self."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        X = self._features(X_train, "X_train")
        y = validate.label_vector(correct_train, "correct_train").astype(int)
        if y.shape[0] != X.shape[0]:
            raise ValueError(
                f"correct_train must be 1-D with one label per row of X_train ({X.shape[0]}); got shape {y.shape}"
            )
        if np.unique(y).size < 2:
            raise ValueError(
                f"the training answers are {'all correct' if y[0] == 1 else 'all incorrect'}: logistic "
                "regression needs both correct and incorrect examples"
            )
        self.model_ = make_pipeline(
            StandardScaler(),
            LogisticRegression(random_state=0, max_iter=1000),
        ).fit(X, y)
        return self

    def uncertainty(self, X: np.ndarray) -> np.ndarray:
        """(m,) array of 1 - P(correct | x) for the rows of X (m, d)."""
        if self.model_ is None:
            raise ValueError("EmbeddingRegression is not fitted yet: call fit(X_train, correct_train) first")
        A = self._features(X, "X")
        fitted = self.model_.n_features_in_
        if A.shape[1] != fitted:
            raise ValueError(f"X has {A.shape[1]} features but the model was fitted on {fitted}")
        return 1.0 - self.model_.predict_proba(A)[:, 1]  # the columns are classes 0 and 1 (fit needs both)
