"""Baseline uncertainty measures for natural language generation, on precomputed inputs.

Every function works on numbers that a pipeline computed earlier (sequence log-likelihoods, token
log-probabilities and entropies, entailment / similarity matrices, texts, embeddings), so the whole
subpackage runs and is tested without a language model. Conventions shared by all functions:

* **Direction**: every public scorer returns an *uncertainty*: higher = more uncertain. Measures that the
  literature states as a confidence (lexical similarity, p(True), verbalised confidence, P(correct) of a
  classifier) are flipped as ``1 - confidence``.
* **Units**: log-probabilities and entropies are natural-log (nats).
* **Validation**: inputs are checked at the edge by :mod:`shapley.core.validate`; a ``ValueError`` says
  what was wrong (NaN / inf, wrong shape, empty input, probabilities outside [0, 1], ...).
* **No hidden state**: no caches, no module-level models; the only stateful object is the explicit
  :class:`EmbeddingRegression` estimator.

Families: :mod:`.entropies` (likelihood and semantic entropies), :mod:`.lexical`, :mod:`.spectral`
(graph spectra and KLE), :mod:`.selfcheck` (token statistics), :mod:`.verbalised` (p(True), A4C) and
:mod:`.regression` (embedding regression).
"""

from shapley.core.baselines.entropies import (
    discrete_semantic_entropy,
    length_normalised_predictive_entropy,
    likelihood_entropy,
    num_semantic_sets,
    predictive_entropy,
    semantic_clusters,
    semantic_entropy,
    shannon_entropy,
)
from shapley.core.baselines.lexical import lexical_similarity
from shapley.core.baselines.regression import EmbeddingRegression, train_test_split_indices
from shapley.core.baselines.selfcheck import selfcheck_avge, selfcheck_avgl, selfcheck_maxe, selfcheck_maxl
from shapley.core.baselines.spectral import degree, eccentricity, eigv, kernel_language_entropy
from shapley.core.baselines.verbalised import (
    p_true_uncertainty,
    parse_confidence,
    parse_p_true,
    verbalised_uncertainty,
)

__all__ = [
    "EmbeddingRegression",
    "degree",
    "discrete_semantic_entropy",
    "eccentricity",
    "eigv",
    "kernel_language_entropy",
    "length_normalised_predictive_entropy",
    "lexical_similarity",
    "likelihood_entropy",
    "num_semantic_sets",
    "p_true_uncertainty",
    "parse_confidence",
    "parse_p_true",
    "predictive_entropy",
    "selfcheck_avge",
    "selfcheck_avgl",
    "selfcheck_maxe",
    "selfcheck_maxl",
    "semantic_clusters",
    "semantic_entropy",
    "shannon_entropy",
    "train_test_split_indices",
    "verbalised_uncertainty",
]
