"""Theory checks behind notebooks/mozart.md: recomputing Tables 1-2 of the paper."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shapley.companion import mozart as mz
from shapley.companion import reported as paper
from shapley.core.entropy import shapley_values
from shapley.core.kernel import kernel_matrix


def test_inputs_come_from_shapley_paper() -> None:
    for t in (1, 2):
        d = mz.inputs(t)
        assert np.array_equal(
            d["matrix"], np.array(paper.MOZART_MATRIX_TABLE1 if t == 1 else paper.MOZART_MATRIX_TABLE2)
        )
        assert tuple(d["likelihoods"]) == paper.MOZART_LIKELIHOODS
        assert d["source"] == "reported"


@pytest.mark.parametrize("table", [1, 2])
def test_baselines_reproduce_printed_columns(table: int) -> None:
    ours = mz.baseline_uncertainties(table)
    printed = paper.MOZART_UNCERTAINTY[f"table{table}"]
    for key in ("likelihood", "semantic_likelihood"):
        assert mz.matches_printed(ours[key], printed[key])


def test_paper_definition_does_not_give_printed_values() -> None:
    t1, t2 = mz.evaluate("paper", 1), mz.evaluate("paper", 2)
    assert round(t1, 2) == 3.96 and round(t2, 2) == 4.05
    assert not mz.matches_printed(t1, paper.MOZART_UNCERTAINTY["table1"]["shapley"])
    rows = mz.readings_table(0.5)
    assert len(rows) == len(mz.READINGS) == 14
    assert not any(r["matches1"] and r["matches2"] for r in rows)


def test_singular_readings_are_minus_infinity() -> None:
    for key in ("raw", "beta_one"):
        assert mz.evaluate(key, 1) == -math.inf and mz.evaluate(key, 2) == -math.inf


def test_only_likelihood_weighted_fits_both_with_one_beta() -> None:
    fits = mz.fitted_beta_table()
    both = [f for f in fits if f["beta_both"]]
    assert [f["key"] for f in both] == ["likelihood_weighted"]
    ((lo, hi),) = both[0]["beta_both"]
    assert 0 < lo < hi < 1
    # Derived, not typed: the window's ends are where one table's value reaches its rounding boundary
    # (printed +- half a unit of the last printed digit), and just outside the window that table no longer rounds
    # to its printed value, while everywhere inside both do.
    half = 0.5 * 10**-mz.PRINTED_DECIMALS
    printed = {1: paper.MOZART_UNCERTAINTY["table1"]["shapley"], 2: paper.MOZART_UNCERTAINTY["table2"]["shapley"]}

    def value(t: int, beta: float) -> float:
        return mz.evaluate("likelihood_weighted", t, beta)

    for end, step in ((lo, -1e-7), (hi, 1e-7)):
        at_edge = [t for t in (1, 2) if abs(abs(value(t, end) - printed[t]) - half) < 1e-8]
        assert at_edge, f"no table at its rounding boundary at beta = {end}"
        assert not all(mz.matches_printed(value(t, end + step), printed[t]) for t in (1, 2))
    for beta in np.linspace(lo, hi, 21)[1:-1]:
        assert all(mz.matches_printed(value(t, beta), printed[t]) for t in (1, 2))


def test_qualitative_claim_rises_except_total_correlation() -> None:
    for row in mz.readings_table(0.5):
        if row["rises"] is None:
            continue
        assert row["rises"] == (row["key"] != "total_correlation"), row["key"]


def test_per_answer_phi_sums_to_total() -> None:
    rows = mz.per_answer_rows([])
    for t in (1, 2):
        phi = [r["phi"] for r in rows if r["table"] == t]
        assert len(phi) == 3 and sum(phi) == pytest.approx(mz.evaluate("paper", t), abs=1e-10)
        assert phi[0] == pytest.approx(phi[1]) and phi[2] > phi[0]


def test_per_answer_rows_at_the_stated_and_the_fitted_beta() -> None:
    """The figure's data: both tables at beta = 0.5 and, when a reading fits both printed values, at the middle
    of its first window; the values are the paper's definition's Shapley values."""
    fits = [{"key": "a", "beta_both": []}, {"key": "b", "beta_both": [(0.8, 0.9), (0.95, 0.96)]}]
    assert mz.fitted_beta(fits) == pytest.approx(0.85) and mz.fitted_beta(fits[:1]) is None
    rows = mz.per_answer_rows(fits)
    assert [(r["beta"], r["fitted"], r["table"], r["position"]) for r in rows[:4]] == [
        (0.5, False, 1, 0),
        (0.5, False, 1, 1),
        (0.5, False, 1, 2),
        (0.5, False, 2, 0),
    ]
    assert len(rows) == 12 and [r["beta"] for r in rows[6:]] == pytest.approx([0.85] * 6)
    assert all(r["fitted"] for r in rows[6:])
    phi = shapley_values(kernel_matrix(mz.inputs(2)["matrix"], rows[-1]["beta"]))
    assert [r["phi"] for r in rows[-3:]] == pytest.approx(list(phi))
    assert rows[-1]["answer"] == mz.inputs(2)["answers"][2]
    assert [r["short"] for r in rows[3:6]] == ["W. A. Mozart", "Mozart", "da Vinci"]
    assert len(mz.per_answer_rows(fits[:1])) == 6


def test_rationales_are_one_liners() -> None:
    for r in mz.READINGS:
        assert r.rationale and "\n" not in r.rationale
    with pytest.raises(KeyError):
        mz.reading("nope")


def test_verdict_facts() -> None:
    """What the verdict may cite: the printed values are not reproduced at beta = 0.5 by any of the readings
    tried, and the one beta-free fit is one among that many readings."""
    fits = mz.fitted_beta_table()
    facts = mz.verdict_facts(fits=fits)
    assert facts["moz_n_readings"] == len(mz.READINGS)
    assert (facts["rep_moz_shap1"], facts["rep_moz_shap2"]) == (0.40, 0.51) and facts["moz_n_match"] == 0
    assert [f["key"] for f in fits if f["beta_both"]] == ["likelihood_weighted"] and facts["moz_n_fit"] == 1
    assert [round(facts[k], 2) for k in ("moz_paper1", "moz_paper2")] == [3.96, 4.05] and facts["moz_rises"]
    assert mz.verdict_facts()["moz_n_fit"] is None  # without the fits, not computed here
