"""The PSD page's committed searches (results/theory/psd_searches.json, ``make theory-results``): what they say,
checked again from the definitions (their freshness: tests/test_results_clean.py; the searches are derandomised,
so the fresh record pins what they find)."""

from __future__ import annotations

import numpy as np
import pytest

from shapley.pipeline.rundir.settings import REPO_ROOT
from shapley.theory import psd_results, worstcase

RESULTS = REPO_ROOT / "results"
RECORD = psd_results.RECORD


def test_the_committed_counterexample_is_indefinite_and_agrees_with_the_closed_form():
    rec = RECORD.load(RESULTS / "theory")
    first = rec["hypothesis"]["first"]
    C = np.asarray(first["C"], dtype=float)
    K = np.exp(-((1.0 - C) ** 2) / 2.0)  # the kernel from its definition, not the package's
    R = 0.5 * K
    np.fill_diagonal(R, 1.0)
    assert first["n"] == worstcase.smallest_failing_n(0.5) == C.shape[0]
    assert np.linalg.eigvalsh(R)[0] < 0 and first["min_eig_R"] < 0
    # small: no more related pairs than the worst 4 + 4 split (16 of the 28 pairs)
    assert np.count_nonzero(np.triu(C, 1)) <= np.count_nonzero(np.triu(worstcase.two_group_C(4, 4), 1))
    runs = rec["hypothesis"]["runs"]  # Hypothesis searched every size up to the first failing one
    assert [r["n"] for r in runs] == list(range(2, 9)) and [r["found"] for r in runs] == [False] * 6 + [True]
    assert 1 + 0.5 * (rec["hypothesis"]["below"]["min_eig_K"] - 1) >= 0
    for row in rec["checks"]:
        assert row["all splits"] == pytest.approx(row["closed form m(n)"], abs=1e-9)
