"""Shapley uncertainty for natural language generation: a tested reference implementation.

Companion to Zhu, Jin, Huang & Zhang, "Shapley Uncertainty in Natural Language Generation"
(arXiv 2507.21406). This namespace re-exports the maths API of :mod:`shapley.core` (numpy arrays in and
out, entropies in nats). The package has four layers:

* :mod:`shapley.core`: the maths (kernel, PSD, exact Shapley entropy, baselines, metrics);
* :mod:`shapley.theory`: worst cases and the paper's three properties, with their searches;
* :mod:`shapley.pipeline`: data -> generate -> entail -> score -> evaluate, storage, one ``RunConfig``;
* :mod:`shapley.companion`: the paper's reported numbers, Mozart, verdicts, book tables and plots;

and the command line :mod:`shapley.cli` (``python -m shapley --help``). Import rule: core imports nothing
outside core; theory and pipeline import core; companion may import all three; the CLI imports pipeline
and companion (``tests/test_architecture.py``).
"""

from shapley.core import metrics
from shapley.core.entropy import (
    EXACT_MAX_N,
    HALF_LOG_2PIE,
    MC_MAX_SECONDS,
    MC_MEMORY_BYTES,
    NAIVE_MAX_N,
    game_shapley_values,
    gaussian_entropy,
    shapley_uncertainty,
    shapley_values,
    shapley_values_mc,
    subset_entropies,
)
from shapley.core.kernel import correlation_matrix, kernel_matrix
from shapley.core.psd import (
    PSD_POLICIES,
    PSDRepairWarning,
    ensure_psd,
    gershgorin_beta_bound,
    is_psd,
    is_singular,
    min_eigenvalue,
    paper_beta_bound,
)

__version__ = "0.1.0"

__all__ = [
    "EXACT_MAX_N",
    "HALF_LOG_2PIE",
    "MC_MAX_SECONDS",
    "MC_MEMORY_BYTES",
    "NAIVE_MAX_N",
    "PSD_POLICIES",
    "PSDRepairWarning",
    "correlation_matrix",
    "ensure_psd",
    "game_shapley_values",
    "gaussian_entropy",
    "gershgorin_beta_bound",
    "is_psd",
    "is_singular",
    "kernel_matrix",
    "metrics",
    "min_eigenvalue",
    "paper_beta_bound",
    "shapley_uncertainty",
    "shapley_values",
    "shapley_values_mc",
    "subset_entropies",
]
