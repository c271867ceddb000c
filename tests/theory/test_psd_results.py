"""The PSD page's committed searches (results/theory/psd_searches.json, ``make theory-results``): fresh, and
what they say checked again from the definitions."""

from __future__ import annotations

import numpy as np
import pytest

from shapley.pipeline.rundir.settings import REPO_ROOT
from shapley.theory import page_records, psd_results, worstcase

RESULTS = REPO_ROOT / "results"
RECORD = psd_results.RECORD


def test_the_committed_record_is_fresh():
    assert RECORD.stale_reasons(RECORD.load(RESULTS / "theory"), RESULTS) == []


def test_the_committed_counterexample_is_indefinite_and_agrees_with_the_closed_form():
    rec = RECORD.load(RESULTS / "theory")
    first = rec["hypothesis"]["first"]
    C = np.asarray(first["C"], dtype=float)
    K = np.exp(-((1.0 - C) ** 2) / 2.0)  # the kernel from its definition, not the package's
    R = 0.5 * K
    np.fill_diagonal(R, 1.0)
    assert first["n"] == worstcase.smallest_failing_n(0.5) == C.shape[0]
    assert np.linalg.eigvalsh(R)[0] < 0
    assert 1 + 0.5 * (rec["hypothesis"]["below"]["min_eig_K"] - 1) >= 0
    for row in rec["checks"]:
        assert row["all splits"] == pytest.approx(row["closed form m(n)"], abs=1e-9)


def test_the_record_goes_stale_with_its_settings_or_code(monkeypatch):
    rec = {"freshness": RECORD.freshness(RESULTS, {**RECORD.settings, "beta": 0.4})}
    assert RECORD.stale_reasons(rec, RESULTS)[0].startswith("settings differ")
    rec = {"freshness": RECORD.freshness(RESULTS)}
    monkeypatch.setattr(page_records, "source_digests", lambda modules: dict.fromkeys(modules, "0" * 64))
    assert RECORD.stale_reasons(rec, RESULTS) == [
        f"code changed since the record was computed: {', '.join(RECORD.code_modules)}"
    ]
