"""The three properties for every estimator (issue 11, part 1): small fixed inputs whose answers are known by
hand, the generic machinery checked against the Gaussian-specific one, and the search's reproducibility (the stored
table's short replay: test_estimator_replay.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shapley.core import baselines
from shapley.core.entropy import game_shapley_values
from shapley.theory import axiom_search as axs
from shapley.theory import axioms as ax
from shapley.theory import properties as pr
from shapley.theory import propositions as pv

RESULTS = Path(__file__).resolve().parents[2] / "results" / "axioms"


def test_estimators_cover_the_issue_list() -> None:
    names = [e.name for e in axs.ESTIMATORS]
    assert {"Shap", "SE", "DSE", "NumSet", "EigV", "Deg", "Ecc", "KLE"} <= set(names) and len(names) >= 9
    with pytest.raises(KeyError):
        axs.estimator("nope")


@pytest.mark.parametrize("name", [e.name for e in axs.ESTIMATORS])
def test_estimator_shapley_values_are_efficient(name: str) -> None:
    est = axs.estimator(name)
    rng = np.random.default_rng(3)
    C = np.round(rng.random((4, 4)), 1)
    C = np.triu(C, 1) + np.triu(C, 1).T + np.eye(4)
    p = np.array([0.5, 0.2, 0.2, 0.1]) if est.uses_likelihoods else None
    phi = game_shapley_values(axs.coalition_worths(est, "sentence", C, p))
    assert phi.sum() == pytest.approx(axs.value(est, "sentence", C, p), abs=1e-9)


def test_shap_as_a_set_function_matches_the_gaussian_shapley_values() -> None:
    C = np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.0], [0.2, 0.0, 1.0]])
    from shapley.core.entropy import shapley_values
    from shapley.core.kernel import kernel_matrix

    phi = game_shapley_values(axs.coalition_worths(axs.estimator("Shap"), "sentence", C))
    assert np.allclose(phi, shapley_values(kernel_matrix(C, axs.SENTENCE_BETA)), atol=1e-12)


def test_dse_and_numset_fail_property2_strictly_by_hand() -> None:
    """Two answers judged half-equivalent (C = 0.5) are related, but the strict threshold puts them in two
    clusters; an unrelated replacement leaves two clusters: ln 2 and 2 sets before and after."""
    C = np.array([[1.0, 0.5], [0.5, 1.0]])
    for name, before in (("DSE", math.log(2)), ("NumSet", 2.0)):
        chk = axs.check_property2(axs.estimator(name), "sentence", C)
        assert not chk.holds and chk.rows[0].required == ">"
        assert chk.rows[0].old == pytest.approx(before) and chk.rows[0].new == pytest.approx(before)


def test_property1_duplicate_carries_the_copied_likelihood() -> None:
    """NE ignores C: a duplicate of the argmin answer (the most likely one) can only lower it."""
    C = np.eye(3)
    p = np.array([0.9, 0.3, 0.1])
    chk = axs.check_property1(axs.estimator("NE"), "sentence", C, p)
    assert chk.detail["argmin"] == 0 and chk.holds
    assert chk.rows[2].new == pytest.approx(baselines.predictive_entropy(np.log([0.9, 0.3, 0.9])))


def test_not_applicable_in_the_rv_reading() -> None:
    for name in ("SE", "DSE", "NumSet", "NE"):
        est = axs.estimator(name)
        assert not axs.applicable(est, "rv") and axs.applicable(est, "sentence")
        res = ax.cell_result(est, "1", "rv", 5)
        assert res.verdict == ax.NOT_APPLICABLE and res.examples == 0 and res.example is None
        with pytest.raises(ValueError, match="not applicable"):
            axs.value(est, "rv", np.eye(2))


def test_search_finds_and_shrinks_a_failure() -> None:
    res = ax.cell_result(axs.estimator("NumSet"), "2", "sentence", 50, seed=0)
    assert res.verdict == ax.FAILS and res.check is not None and not res.check.holds
    assert res.example is not None and res.example.n_total == 2  # shrunk to two answers
    ce = ax.describe(res)
    assert ce["required"] == "new > old" and ce["old"] == ce["new"] == 2.0


def test_search_is_seeded_and_a_prefix_of_a_longer_one() -> None:
    est = axs.estimator("KLE")
    short, long = ax.cell_result(est, "1", "sentence", 40, seed=0), ax.cell_result(est, "1", "sentence", 400, seed=0)
    assert short.verdict == ax.FAILS and short.examples <= 40
    assert (long.examples, long.example) == (short.examples, short.example)
    other = ax.cell_result(est, "1", "sentence", 40, seed=1)
    assert other.example != short.example or other.examples != short.examples


def test_no_counterexample_verdict_states_the_size() -> None:
    res = ax.cell_result(axs.estimator("Shap"), "2", "rv", 7, seed=0)  # true in this reading (chain rule)
    assert res.verdict == "no counterexample in 7 examples" and res.example is None and ax.describe(res) == {}


@pytest.fixture(scope="module")
def table5() -> pd.DataFrame:
    return ax.axiom_table(max_examples=5, seed=0)


def test_axiom_table_shape_and_vocabulary(table5) -> None:
    df = table5
    assert list(df.columns[:5]) == ["estimator", "property", "reading", "verdict", "counterexample"]
    assert len(df) == len(axs.ESTIMATORS) * 3 * 2
    ok = {ax.FAILS, ax.NOT_APPLICABLE, ax.UNDEFINED, ax.PROVED, "no counterexample in 5 examples"}
    assert set(df.verdict) <= ok
    assert (df.counterexample != "").eq(df.verdict == ax.FAILS).all()
    for text in df.counterexample[df.verdict == ax.FAILS]:
        assert {"replaced", "old", "new", "required"} <= set(json.loads(text))
    assert df.equals(ax.axiom_table(max_examples=5, seed=0))


def test_write_axiom_table(tmp_path: Path) -> None:
    assert ax.main(["--max-examples", "2", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "axiom_table.csv", keep_default_na=False, dtype={"property": str})
    settings = json.loads((tmp_path / "axiom_settings.json").read_text())
    assert len(table) == len(axs.ESTIMATORS) * 6 and settings["max_examples"] == 2 and settings["seed"] == 0


def test_prefix_mismatches_detects_a_changed_counterexample(table5) -> None:
    short = table5
    full = short.copy()
    assert ax.prefix_mismatches(short, full) == []
    k = int(np.flatnonzero(full.verdict == ax.FAILS)[0])
    full.loc[k, "counterexample"] = "{}"
    assert ax.prefix_mismatches(short, full) == [tuple(full.loc[k, ["estimator", "property", "reading"]])]


# --- cells settled by hand (issue 18, item 3; issue 18, item 2) -------------------------------------


def _stored() -> pd.DataFrame:
    return pd.read_csv(RESULTS / "axiom_table.csv", keep_default_na=False, dtype={"property": str})


@pytest.mark.parametrize(
    ("prop", "example"), [("2", ax.property2_hub_example), ("3", ax.property3_hub_example)], ids=["p2", "p3"]
)
def test_the_hand_built_hub_witnesses_break_shap_in_the_sentence_reading(prop, example) -> None:
    chk = axs.check(axs.estimator("Shap"), prop, example())
    assert chk is not None and not chk.holds
    res = ax.cell_result(axs.estimator("Shap"), prop, "sentence", 5)
    assert res.verdict == ax.FAILS and ax.describe(res)["witness"].endswith("_witness_sentence")


def test_the_property2_hub_lies_inside_the_searched_sizes_but_off_the_grid() -> None:
    ex = ax.property2_hub_example()
    low, high = axs.N_RANGES["2"]
    assert low <= ex.n_total <= high
    off_grid = [v for v in ex.params if round(10 * v) != 10 * v]
    assert off_grid == [0.05]


def test_the_stored_table_shows_the_witnesses_and_the_proofs() -> None:
    """The committed table (``make axioms``) holds every hand-settled cell as the code settles it now."""
    stored = _stored()
    settings = json.loads((RESULTS / "axiom_settings.json").read_text())  # (the replay: test_estimator_replay.py)
    assert len(stored) == len(axs.ESTIMATORS) * 6 and settings == ax.settings(
        settings["max_examples"], settings["seed"]
    )
    table = stored.set_index(["estimator", "property", "reading"])
    for prop in ("2", "3"):
        assert table.loc[("Shap", prop, "sentence"), "verdict"] == ax.FAILS  # the hand-built hub witnesses
    for reading in pr.READINGS:
        for prop in pr.PROPERTIES:
            assert table.loc[("Deg", prop, reading), "verdict"] == ax.PROVED
    assert table.loc[("Shap", "1", "rv"), "verdict"] == ax.UNDEFINED
    for (name, prop, reading), known in ax.KNOWN.items():
        row = table.loc[(name, prop, reading)]
        assert row.verdict == known.kind
        if known.kind == ax.FAILS:
            ce = ax.describe(ax.cell_result(axs.estimator(name), prop, reading, 1))
            assert json.loads(row.counterexample) == json.loads(json.dumps(ce))


def test_an_exact_copy_leaves_shaps_values_undefined_so_the_rv_cell_cannot_be_judged() -> None:
    """The cell used to say 'no counterexample': the new total is -inf for every input, so it could not fail,
    while the Shapley values on that input are (-inf) - (-inf), the case Proposition 3.6 counts against phi."""
    R = pr.random_correlation(4, seed=3)
    R_copy = pr.with_duplicate(R, 0, 1)
    assert pv.undefined_shapley_message(R_copy) is not None
    assert axs.value(axs.estimator("Shap"), "rv", R_copy) == -np.inf
    assert ax.cell_result(axs.estimator("Shap"), "1", "rv", 5).verdict == ax.UNDEFINED


def test_deg_shapley_values_are_affine_and_decreasing_in_the_degree() -> None:
    """The derivation behind the 'proved' Deg cells, symbolic (sympy) and against the package's Deg."""
    symbolic = pytest.importorskip("shapley.theory.symbolic")
    for n in range(2, 6):
        d = symbolic.degree_shapley_affine(n)
        assert d["residual"] == [0] * n and d["decreasing"]
    for n in range(2, 25):
        a, b = symbolic.degree_pair_weights(n)
        assert a < 0 <= b
    rng = np.random.default_rng(0)
    for n in (3, 5, 6):
        W = rng.random((n, n))
        W = (W + W.T) / 2
        np.fill_diagonal(W, 1.0)
        phi = game_shapley_values(axs.coalition_worths(axs.estimator("Deg"), "sentence", W))
        a, b = (float(x) for x in symbolic.degree_pair_weights(n))
        d = W.sum(axis=1) - 1
        T = d.sum() / 2
        np.testing.assert_allclose(phi, (n - 1) / n**2 + b * T + (a - b) * d, atol=1e-12)


@pytest.mark.parametrize("prop", pr.PROPERTIES)
@pytest.mark.parametrize("reading", pr.READINGS)
def test_the_proved_deg_cells_survive_their_search(prop, reading) -> None:
    res = ax.cell_result(axs.estimator("Deg"), prop, reading, 60, seed=1)
    assert res.verdict == ax.PROVED and res.examples == 60


def test_a_proved_cell_that_its_search_refutes_shows_the_counterexample(monkeypatch) -> None:
    """A wrong proof cannot hide: mark a failing cell as proved and the search's counterexample wins."""
    monkeypatch.setitem(ax.KNOWN, ("NumSet", "2", "sentence"), ax.KnownCell(ax.PROVED, "a wrong proof"))
    assert ax.cell_result(axs.estimator("NumSet"), "2", "sentence", 50).verdict == ax.FAILS
