"""Baseline uncertainty measures for natural language generation, on precomputed inputs.

Every function works on numbers that a pipeline computed earlier (sequence log-likelihoods, token
log-probabilities and entropies, entailment / similarity matrices, texts, embeddings), so the whole
subpackage runs and is tested without a language model. Conventions shared by all functions:

* **Direction**: every public scorer returns an *uncertainty*: higher = more uncertain. Measures that the
  literature states as a confidence (lexical similarity, p(True), verbalised confidence, P(correct) of a
  classifier) are flipped as ``1 - confidence``.
* **Units**: log-probabilities and entropies are natural-log (nats).
* **Validation**: inputs are checked at the edge by :mod:`shapley.core.validate` (a ``ValueError`` says what).
* **No hidden state**: no caches, no module-level models; the only stateful object is the explicit
  :class:`EmbeddingRegression` estimator.

Families: :mod:`.entropies` (likelihood and semantic entropies), :mod:`.lexical`, :mod:`.spectral`
(graph spectra and KLE), :mod:`.selfcheck` (token statistics), :mod:`.verbalised` (p(True), A4C) and
:mod:`.regression` (embedding regression).
"""

from shapley.core.baselines.entropies import discrete_semantic_entropy as discrete_semantic_entropy
from shapley.core.baselines.entropies import (
    length_normalised_predictive_entropy as length_normalised_predictive_entropy,
)
from shapley.core.baselines.entropies import likelihood_entropy as likelihood_entropy
from shapley.core.baselines.entropies import num_semantic_sets as num_semantic_sets
from shapley.core.baselines.entropies import predictive_entropy as predictive_entropy
from shapley.core.baselines.entropies import semantic_clusters as semantic_clusters
from shapley.core.baselines.entropies import semantic_entropy as semantic_entropy
from shapley.core.baselines.entropies import shannon_entropy as shannon_entropy
from shapley.core.baselines.lexical import lexical_similarity as lexical_similarity
from shapley.core.baselines.regression import EmbeddingRegression as EmbeddingRegression
from shapley.core.baselines.regression import train_test_split_indices as train_test_split_indices
from shapley.core.baselines.selfcheck import selfcheck_avge as selfcheck_avge
from shapley.core.baselines.selfcheck import selfcheck_avgl as selfcheck_avgl
from shapley.core.baselines.selfcheck import selfcheck_maxe as selfcheck_maxe
from shapley.core.baselines.selfcheck import selfcheck_maxl as selfcheck_maxl
from shapley.core.baselines.spectral import degree as degree
from shapley.core.baselines.spectral import eccentricity as eccentricity
from shapley.core.baselines.spectral import eigv as eigv
from shapley.core.baselines.spectral import kernel_language_entropy as kernel_language_entropy
from shapley.core.baselines.verbalised import confidence_reading as confidence_reading
from shapley.core.baselines.verbalised import p_true_uncertainty as p_true_uncertainty

# The public names, by family, in the order of the API reference (book/reference/baselines.md documents each).
__all__ = [
    "predictive_entropy",
    "length_normalised_predictive_entropy",
    "likelihood_entropy",
    "shannon_entropy",
    "semantic_clusters",
    "semantic_entropy",
    "discrete_semantic_entropy",
    "num_semantic_sets",
    "lexical_similarity",
    "eigv",
    "degree",
    "eccentricity",
    "kernel_language_entropy",
    "selfcheck_maxl",
    "selfcheck_avgl",
    "selfcheck_maxe",
    "selfcheck_avge",
    "p_true_uncertainty",
    "confidence_reading",
    "EmbeddingRegression",
    "train_test_split_indices",
]
