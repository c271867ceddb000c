"""Shapley uncertainty for natural language generation: a tested reference implementation.

Companion to Zhu, Jin, Huang & Zhang, "Shapley Uncertainty in Natural Language Generation"
(arXiv 2507.21406). The maths core (this namespace) takes and returns numpy arrays; entropies are in
nats. The experiment pipeline lives in the stage modules ``data``, ``generate``, ``entail``,
``correctness``, ``score``, ``runs`` and ``report`` (``python -m shapley --help``).
"""

from shapley import metrics
from shapley.entropy import (
    EXACT_MAX_N,
    HALF_LOG_2PIE,
    gaussian_entropy,
    log_principal_minors,
    shapley_uncertainty,
    shapley_values,
    shapley_values_mc,
    subset_entropies,
)
from shapley.kernel import correlation_matrix, kernel_matrix
from shapley.psd import (
    PSD_POLICIES,
    PSDRepairWarning,
    ensure_psd,
    gershgorin_beta_bound,
    is_psd,
    min_eigenvalue,
    paper_beta_bound,
)

__version__ = "0.1.0"

__all__ = [
    "EXACT_MAX_N",
    "HALF_LOG_2PIE",
    "PSD_POLICIES",
    "PSDRepairWarning",
    "correlation_matrix",
    "ensure_psd",
    "gaussian_entropy",
    "gershgorin_beta_bound",
    "is_psd",
    "kernel_matrix",
    "log_principal_minors",
    "metrics",
    "min_eigenvalue",
    "paper_beta_bound",
    "shapley_uncertainty",
    "shapley_values",
    "shapley_values_mc",
    "subset_entropies",
]
