"""Recomputing the paper's "Queen of the Night aria" example (Tables 1 and 2).

The inputs are the printed ones, taken from :mod:`shapley.companion.reported` (:func:`inputs`): three answers with
likelihoods 0.5 / 0.4 / 0.1, the clusters {W. A. Mozart, Mozart} and {third answer}, and a printed 3x3 matrix. The
paper prints a Shapley uncertainty of 0.40 (Beethoven) and 0.51 (da Vinci) without saying how it was computed. This
module computes the paper's stated definition and a list of alternative readings, each a named function with a
one-line rationale, so the notebook can put them side by side.

Nothing here hard-codes a computed number: the printed values are read from :mod:`shapley.companion.reported`.
Entropies are in nats unless a reading says otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from shapley.companion import reported
from shapley.core.baselines import likelihood_entropy, semantic_entropy
from shapley.core.entropy import gaussian_entropy, shapley_values
from shapley.core.kernel import correlation_matrix, kernel_matrix
from shapley.core.psd import paper_beta_bound

PAPER_BETA = 0.5
"""The paper's default kernel scale (Sec. 3.2 and Table 5)."""

Array = NDArray[np.float64]
"""A float64 array: a printed matrix (3, 3), the likelihoods (3,), a kernel matrix or a grid of beta."""

PRINTED_DECIMALS = 2
"""Tables 1-2 print uncertainties with two decimals: a reading 'matches' if it rounds to the printed value."""


def inputs(table: int) -> dict[str, Any]:
    """The printed inputs of Table 1 or 2 (transcribed in :mod:`shapley.companion.reported`): ``answers``, the
    ``likelihoods`` (3,) and ``clusters`` (3,) and the ``matrix`` (3, 3) as arrays, the printed ``uncertainty`` and
    their ``source`` ("reported")."""
    matrix = reported.MOZART_MATRIX_TABLE1 if table == 1 else reported.MOZART_MATRIX_TABLE2
    return {
        "answers": reported.MOZART_ANSWERS_TABLE1 if table == 1 else reported.MOZART_ANSWERS_TABLE2,
        "likelihoods": np.asarray(reported.MOZART_LIKELIHOODS, dtype=np.float64),
        "clusters": np.asarray(reported.MOZART_CLUSTERS, dtype=np.int64),
        "matrix": np.asarray(matrix, dtype=np.float64),
        "uncertainty": dict(reported.MOZART_UNCERTAINTY[f"table{table}"]),
        "source": reported.SOURCE,
    }


def _printed(table: int) -> float:
    """The Shapley uncertainty Table ``table`` (1 or 2) prints (``reported.MOZART_UNCERTAINTY``)."""
    return reported.MOZART_UNCERTAINTY[f"table{table}"]["shapley"]


def baseline_uncertainties(table: int) -> dict[str, float]:
    """Likelihood entropy and semantic entropy (nats) of the table, with the project's baselines."""
    d = inputs(table)
    ll = np.log(d["likelihoods"])
    return {"likelihood": likelihood_entropy(ll), "semantic_likelihood": semantic_entropy(ll, d["clusters"])}


# ---------------------------------------------------------------------------------------------------
# Readings. Each takes (M, p, beta): the printed matrix (3, 3), the likelihoods (3,), the kernel scale.
# ---------------------------------------------------------------------------------------------------


def _R(M: Array, beta: float) -> Array:
    return kernel_matrix(correlation_matrix(M), beta)


def paper_definition(M: Array, p: Array, beta: float) -> float:
    r"""As defined in Sec. 3: printed matrix as $C$, kernel at $\beta$, sum of the Shapley values of the Gaussian
    entropy."""
    return float(np.sum(shapley_values(_R(M, beta))))


def half_logdet(M: Array, p: Array, beta: float) -> float:
    r"""Drop the constant $\tfrac n2 \ln(2\pi e)$: only $\tfrac12 \ln\det R$ (a common shortcut when comparing
    Gaussians)."""
    return float(0.5 * np.linalg.slogdet(_R(M, beta))[1])


def total_in_bits(M: Array, p: Array, beta: float) -> float:
    """The paper's definition in bits instead of nats."""
    return paper_definition(M, p, beta) / math.log(2)


def half_logdet_bits(M: Array, p: Array, beta: float) -> float:
    r"""$\tfrac12 \log_2 \det R$: no constant and base-2 logarithms."""
    return half_logdet(M, p, beta) / math.log(2)


def likelihood_weighted(M: Array, p: Array, beta: float) -> float:
    r"""$\sum_i p_i \phi_i$: the caption says the method 'takes correlation matrix and likelihood into account'."""
    return float(np.sum(p * shapley_values(_R(M, beta))))


def per_answer_mean(M: Array, p: Array, beta: float) -> float:
    """The total divided by $n$ (average uncertainty per answer)."""
    return paper_definition(M, p, beta) / M.shape[0]


def phi_odd_answer(M: Array, p: Array, beta: float) -> float:
    """Shapley value of the third answer alone (Beethoven / da Vinci), the one the example is about."""
    return float(shapley_values(_R(M, beta))[2])


def raw_matrix(M: Array, p: Array, beta: float) -> float:
    r"""Printed matrix used directly as $R$, no kernel (the two Mozart rows are identical: $-\infty$)."""
    return gaussian_entropy(np.asarray(M, dtype=np.float64))


def beta_one(M: Array, p: Array, beta: float) -> float:
    r"""Kernel with $\beta = 1$ (the top of the allowed range)."""
    return float(gaussian_entropy(_R(M, 1.0)))


def beta_paper_bound(M: Array, p: Array, beta: float) -> float:
    r"""Kernel with the paper's guaranteed-PSD $\beta = 1/(n+1) = 0.25$ for $n = 3$."""
    return paper_definition(M, p, paper_beta_bound(M.shape[0]))


def _von_neumann(A: Array) -> float:
    """-sum mu ln mu over the eigenvalues mu of A / n, those below 1e-15 (zero, up to rounding) left out."""
    mu = np.linalg.eigvalsh(A) / A.shape[0]
    mu = mu[mu > 1e-15]
    return float(-np.sum(mu * np.log(mu)))


def von_neumann_kernel(M: Array, p: Array, beta: float) -> float:
    r"""Von Neumann entropy $-\sum \mu \ln \mu$ of the eigenvalues $\mu$ of $R / n$ (a density-matrix reading
    of $R$)."""
    return _von_neumann(_R(M, beta))


def von_neumann_raw(M: Array, p: Array, beta: float) -> float:
    r"""Von Neumann entropy of the printed matrix $/\,n$, no kernel (semantic-kernel entropies work this way)."""
    return _von_neumann(np.asarray(M, dtype=np.float64))


def likelihood_scaled_covariance(M: Array, p: Array, beta: float) -> float:
    r"""Gaussian entropy of the covariance $\operatorname{diag}(\sqrt p)\, R\, \operatorname{diag}(\sqrt p)$:
    likelihoods as variances."""
    D = np.diag(np.sqrt(p))
    return float(gaussian_entropy(D @ _R(M, beta) @ D))


def total_correlation(M: Array, p: Array, beta: float) -> float:
    r"""Total correlation $\sum_i h(s_i) - h(s) = -\tfrac12 \ln\det R$ (redundancy rather than uncertainty)."""
    return -half_logdet(M, p, beta)


@dataclass(frozen=True)
class Reading:
    """A named way to turn a table's inputs into one number.

    ``label`` and :attr:`rationale` are text with maths in TeX between dollar signs
    (:func:`shapley.companion.htmltable.tex_html` renders them).
    """

    key: str
    label: str
    fn: Callable[[Array, Array, float], float]
    uses_beta: bool
    unit: str = "nats"

    @property
    def rationale(self) -> str:
        """The reading's rationale on one line (its function's docstring, first paragraph)."""
        return " ".join((self.fn.__doc__ or "").strip().split("\n\n")[0].split())


READINGS: tuple[Reading, ...] = (
    Reading("paper", r"paper's definition: $\sum_i \phi_i$", paper_definition, True),
    Reading("half_logdet", r"without $\tfrac n2 \ln(2\pi e)$: $\tfrac12 \ln\det R$", half_logdet, True),
    Reading("bits", "paper's definition in bits", total_in_bits, True, "bits"),
    Reading("half_logdet_bits", r"$\tfrac12 \log_2 \det R$", half_logdet_bits, True, "bits"),
    Reading("likelihood_weighted", r"$\sum_i p_i \phi_i$", likelihood_weighted, True),
    Reading("per_answer", r"total $/\,n$", per_answer_mean, True),
    Reading("phi_odd", r"$\phi$ of the third answer only", phi_odd_answer, True),
    Reading("raw", "printed matrix as $R$ (no kernel)", raw_matrix, False),
    Reading("beta_one", r"kernel with $\beta = 1$", beta_one, False),
    Reading("beta_paper_bound", r"kernel with $\beta = 1/(n+1) = 0.25$", beta_paper_bound, False),
    Reading("von_neumann_kernel", "von Neumann entropy of $R/n$", von_neumann_kernel, True),
    Reading("von_neumann_raw", r"von Neumann entropy of printed matrix $/\,n$", von_neumann_raw, False),
    Reading(
        "scaled_cov",
        r"Gaussian entropy of $\operatorname{diag}(\sqrt p)\, R\, \operatorname{diag}(\sqrt p)$",
        likelihood_scaled_covariance,
        True,
    ),
    Reading("total_correlation", r"total correlation $-\tfrac12 \ln\det R$", total_correlation, True),
)
"""Every reading tried, in display order. The matrix-as-P reading is not listed separately: the printed
matrices are symmetric, so (P + P.T)/2 = P and it coincides with ``paper``."""


def reading(key: str) -> Reading:
    """Look a reading up by key (KeyError for an unknown one)."""
    return {r.key: r for r in READINGS}[key]


def evaluate(key: str, table: int, beta: float = PAPER_BETA) -> float:
    """Value of reading ``key`` on Table ``table`` (1 or 2) at kernel scale ``beta``."""
    d = inputs(table)
    return float(reading(key).fn(d["matrix"], d["likelihoods"], beta))


def matches_printed(value: float, printed: float) -> bool:
    """True if ``value`` rounds to the printed number at the printed precision (:data:`PRINTED_DECIMALS`)."""
    return bool(math.isfinite(value) and abs(value - printed) <= 0.5 * 10**-PRINTED_DECIMALS + 1e-12)


def readings_table(beta: float = PAPER_BETA) -> list[dict[str, Any]]:
    """One row per reading: table1, table2, printed values, whether each matches, whether Table 2 > Table 1.

    ``rises`` is None when a value is not finite (e.g. -inf for a singular matrix).
    """
    printed1, printed2 = _printed(1), _printed(2)
    rows = []
    for r in READINGS:
        t1, t2 = evaluate(r.key, 1, beta), evaluate(r.key, 2, beta)
        finite = math.isfinite(t1) and math.isfinite(t2)
        rows.append(
            {
                "reading": r.label,
                "key": r.key,
                "unit": r.unit,
                "table1": t1,
                "table2": t2,
                "printed1": printed1,
                "printed2": printed2,
                "matches1": matches_printed(t1, printed1),
                "matches2": matches_printed(t2, printed2),
                "rises": (t2 > t1) if finite else None,
                "rationale": r.rationale,
            }
        )
    return rows


def matching_beta_intervals(key: str, table: int, printed: float, grid: Array) -> list[tuple[float, float]]:
    """Intervals of beta in (0, 1) on which reading ``key`` rounds to ``printed`` on Table ``table``.

    The band ``|value - printed| <= 0.005`` is located on ``grid`` (:func:`beta_grid`) and each end is refined with
    Brent's method, so the endpoints are exact to ~1e-10 (a band narrower than one grid cell, entered and
    left between two grid points, would be missed).
    """
    from scipy.optimize import brentq

    half = 0.5 * 10**-PRINTED_DECIMALS

    def g(b: float) -> float:
        v = evaluate(key, table, b)
        return abs(v - printed) - half if math.isfinite(v) else math.inf

    betas = np.asarray(grid, dtype=np.float64)
    inside = np.array([g(float(b)) <= 0 for b in betas], dtype=np.int8)
    edges = np.flatnonzero(np.diff(np.r_[0, inside, 0]))  # each run of grid points inside: its start, end + 1
    intervals: list[tuple[float, float]] = []
    for first, last in zip(edges[::2], edges[1::2] - 1, strict=True):
        lo = brentq(g, betas[first - 1], betas[first], xtol=1e-12) if first > 0 else float(betas[0])
        hi = brentq(g, betas[last], betas[last + 1], xtol=1e-12) if last + 1 < betas.size else float(betas[-1])
        intervals.append((float(lo), float(hi)))
    return intervals


def beta_grid(n_points: int = 600) -> Array:
    """Grid of beta in (0.01, 0.9999), half linear, half dense near 1 where the readings change fastest."""
    return np.unique(np.r_[np.linspace(0.01, 0.9, n_points // 2), 1 - np.logspace(-4, math.log10(0.1), n_points // 2)])


def fitted_beta_table(grid: Array | None = None) -> list[dict[str, Any]]:
    """For each beta-dependent reading: the beta intervals that reproduce the Shapley uncertainty printed in
    Table 1 and in Table 2 separately, and their overlap (one beta explaining both printed numbers), or empty
    lists. ``grid``: the scan (default :func:`beta_grid`). Several seconds: the book reads it from the committed
    record of :mod:`shapley.companion.mozart_results`."""
    grid = beta_grid() if grid is None else grid
    rows = []
    for r in READINGS:
        if not r.uses_beta:
            continue
        i1 = matching_beta_intervals(r.key, 1, _printed(1), grid)
        i2 = matching_beta_intervals(r.key, 2, _printed(2), grid)
        both = [(max(a[0], b[0]), min(a[1], b[1])) for a in i1 for b in i2 if max(a[0], b[0]) <= min(a[1], b[1])]
        rows.append({"reading": r.label, "key": r.key, "beta_table1": i1, "beta_table2": i2, "beta_both": both})
    return rows


def short_answer(answer: str) -> str:
    """``answer`` shortened for a figure: "Wolfgang Amadeus" becomes "W. A.", "Ludwig van " and "Leonardo " go.

    >>> short_answer("Ludwig van Beethoven"), short_answer("Wolfgang Amadeus Mozart")
    ('Beethoven', 'W. A. Mozart')
    """
    return answer.replace("Wolfgang Amadeus", "W. A.").replace("Ludwig van ", "").replace("Leonardo ", "")


def fitted_beta(fits: list[dict[str, Any]]) -> float | None:
    """The middle of the first window of beta in which one reading reproduces both printed values (rows of
    :func:`fitted_beta_table`, in their order), or None if no reading has one."""
    for row in fits:
        if row["beta_both"]:
            lo, hi = row["beta_both"][0]
            return float(np.mean([lo, hi]))
    return None


def per_answer_rows(fits: list[dict[str, Any]], beta: float = PAPER_BETA) -> list[dict[str, Any]]:
    """Per-answer Shapley values (nats) of both tables under the paper's definition, at the stated ``beta`` and,
    where ``fits`` (rows of :func:`fitted_beta_table`) has one, at :func:`fitted_beta`.

    Returns:
        one dict per (beta, table, answer): beta, fitted (False at the stated beta), table (1 or 2),
        position (0-based), answer, short (:func:`short_answer`), phi.
    """
    fitted = fitted_beta(fits)
    rows = []
    for b, is_fit in [(beta, False)] + ([(fitted, True)] if fitted is not None else []):
        for t in (1, 2):
            d = inputs(t)
            phi = shapley_values(_R(d["matrix"], b))
            for k, (a, v) in enumerate(zip(d["answers"], phi, strict=True)):
                rows.append(
                    {
                        "beta": b,
                        "fitted": is_fit,
                        "table": t,
                        "position": k,
                        "answer": a,
                        "short": short_answer(a),
                        "phi": float(v),
                    }
                )
    return rows


def verdict_facts(beta: float = PAPER_BETA, fits: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The facts the claims on the example cite (:mod:`shapley.companion.claims`), all computed here at ``beta``.

    ``rep_`` names a number as printed (:mod:`shapley.companion.reported`). ``moz_like`` and ``moz_sem``: the two
    entropy baselines (nats), printed as ``rep_moz_like`` and ``rep_moz_sem``; ``moz_paper1`` and ``moz_paper2``:
    the paper's definition on Tables 1 and 2 (nats), printed as ``rep_moz_shap1`` and ``rep_moz_shap2``;
    ``moz_rises``: whether it rises from Table 1 to Table 2; ``moz_n_readings``: the readings tried (the
    definition included); ``moz_n_match``: how many of them give both printed values at ``beta`` (none: the
    printed values are not reproduced at the stated beta by any reading tried); ``moz_n_fit``: for how many
    beta-dependent readings one beta gives both (a one-parameter fit to two numbers, among the readings tried
    only), None without ``fits``; ``moz_n_rise`` of the ``moz_n_finite`` other readings with finite values on both
    tables rise.

    ``fits``: rows of :func:`fitted_beta_table` already computed (the committed record's,
    :func:`shapley.companion.mozart_results.fits`; computing them takes several seconds).
    """
    rows = readings_table(beta)
    base = baseline_uncertainties(1)
    printed = reported.MOZART_UNCERTAINTY["table1"]
    paper = (evaluate("paper", 1, beta), evaluate("paper", 2, beta))
    others = [r for r in rows if r["key"] != "paper" and r["rises"] is not None]  # finite on both tables
    return {
        "moz_like": base["likelihood"],
        "moz_sem": base["semantic_likelihood"],
        "rep_moz_like": printed["likelihood"],
        "rep_moz_sem": printed["semantic_likelihood"],
        "rep_moz_shap1": _printed(1),
        "rep_moz_shap2": _printed(2),
        "moz_paper1": paper[0],
        "moz_paper2": paper[1],
        "moz_rises": bool(paper[1] > paper[0]),
        "moz_n_readings": len(READINGS),
        "moz_n_match": sum(bool(r["matches1"] and r["matches2"]) for r in rows),
        "moz_n_fit": None if fits is None else sum(bool(f["beta_both"]) for f in fits),
        "moz_n_rise": sum(r["rises"] is True for r in others),
        "moz_n_finite": len(others),
    }
