"""The book's figures draw only what is defined: no empty legend entries, no lines across undefined points."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd

from shapley.companion import plots

matplotlib.use("Agg")


def _ablation() -> pd.DataFrame:
    rows = []
    for source, aurocs, not_psd in (
        ("defined", [0.70, 0.71, math.nan, 0.69], [0.0, 0.0, 0.0, 0.2]),
        ("undefined everywhere", [math.nan] * 4, [0.0, 0.0, 0.0, 0.5]),
        ("always PSD", [0.60, 0.62, 0.61, 0.60], [0.0] * 4),
    ):
        for beta, a, f in zip([0.3, 0.5, 0.7, 1.0], aurocs, not_psd, strict=True):
            rows.append({"source": source, "beta": beta, "auroc": a, "frac_not_psd": f})
    return pd.DataFrame(rows)


def test_beta_figure_legends_list_only_drawn_sources():
    fig = plots.beta_figure(_ablation(), pd.DataFrame({"beta": [0.3, 0.5, 1.0], "auroc": [0.78, 0.79, 0.77]}))
    left, right = fig.axes[:2]
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["defined", "always PSD", "reported (paper)"]
    assert [t.get_text() for t in right.get_legend().get_texts()] == ["defined", "undefined everywhere"]
    line = next(ln for ln in left.get_lines() if ln.get_label() == "defined")
    y = np.asarray(line.get_ydata(), dtype=float)
    assert np.isnan(y[2]), "an undefined AUROC must break the line, not be skipped over"
    assert y[1] == 0.0  # drawn relative to beta = 0.5


def test_auroc_grid_says_when_a_run_is_undefined():
    ok = pd.DataFrame({"method": ["Shap", "SE"], "auroc": [0.7, 0.6], "auroc_lo": [0.6, 0.5], "auroc_hi": [0.8, 0.7]})
    bad = ok.assign(auroc=math.nan)
    fig = plots.auroc_grid({"a": ok, "b": bad})
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("undefined" in t for t in texts)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["a", "b"]
