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

from shapley.core import metrics as metrics
from shapley.core.entropy import EXACT_MAX_N as EXACT_MAX_N
from shapley.core.entropy import HALF_LOG_2PIE as HALF_LOG_2PIE
from shapley.core.entropy import game_shapley_values as game_shapley_values
from shapley.core.entropy import gaussian_entropy as gaussian_entropy
from shapley.core.entropy import shapley_uncertainty as shapley_uncertainty
from shapley.core.entropy import shapley_values as shapley_values
from shapley.core.entropy import subset_entropies as subset_entropies
from shapley.core.kernel import correlation_matrix as correlation_matrix
from shapley.core.kernel import kernel_matrix as kernel_matrix
from shapley.core.psd import PSD_POLICIES as PSD_POLICIES
from shapley.core.psd import PSDRepairWarning as PSDRepairWarning
from shapley.core.psd import ensure_psd as ensure_psd
from shapley.core.psd import gershgorin_beta_bound as gershgorin_beta_bound
from shapley.core.psd import is_psd as is_psd
from shapley.core.psd import is_singular as is_singular
from shapley.core.psd import min_eigenvalue as min_eigenvalue
from shapley.core.psd import paper_beta_bound as paper_beta_bound

__version__ = "0.1.0"

# The public names, in the order of the API reference (book/reference/api.md documents each; the reference's
# test, tests/book/test_reference.py, fails when a name is added here or above without its entry).
__all__ = [
    "shapley_uncertainty",
    "shapley_values",
    "game_shapley_values",
    "subset_entropies",
    "gaussian_entropy",
    "correlation_matrix",
    "kernel_matrix",
    "ensure_psd",
    "is_psd",
    "is_singular",
    "min_eigenvalue",
    "paper_beta_bound",
    "gershgorin_beta_bound",
    "PSDRepairWarning",
    "PSD_POLICIES",
    "EXACT_MAX_N",
    "HALF_LOG_2PIE",
    "metrics",
]
