"""The book's tables: measured AUROCs aligned to the paper's column labels."""

from __future__ import annotations

import pytest

from shapley.companion import tables
from shapley.pipeline import evaluate
from tests import fakes


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        yield fakes.make_two_runs(tmp_path_factory.mktemp("runs"), mp)


def test_measured_table_aligns_to_paper_labels(two_runs):
    a, b = two_runs
    t = tables.measured_table([a, b])
    assert list(t.columns[:8]) == list(tables.MEASURED_COLUMNS)
    assert set(t["method"]) <= set(tables.PAPER_METHODS)
    ta = t[t["run_dir"] == str(a)].set_index("method")
    assert {"Shap", "DSE", "P(T)", "ER"} <= set(ta.index)
    assert "LexSim" not in set(t["method"])
    full = tables.measured_table([a], all_methods=True)
    assert "LexSim" in set(full["method"])
    shap = evaluate.load_metrics(a).set_index("method").loc["Shap"]
    assert ta.loc["Shap", "auroc"] == shap["auroc"] and ta.loc["Shap", "lo"] == shap["auroc_lo"]
