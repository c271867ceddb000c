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


def _too_small(fig) -> list[str]:
    """Each text of ``fig`` drawn smaller than :data:`plots.MIN_FONT_PT` once the figure is scaled to the column."""
    scale = min(1.0, plots.COLUMN_WIDTH_IN / fig.get_size_inches()[0])
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    return [
        f"{t.get_text()!r}: {t.get_fontsize() * scale:.1f} pt"
        for t in texts
        if t.get_fontsize() * scale < plots.MIN_FONT_PT
    ]


def _comparisons() -> pd.DataFrame:
    rows = [
        ("r1", "A", 0.05, 0.01, "win"),
        ("r1", "B", -0.03, 0.6, "tie"),
        ("r2", "A", 0.02, 0.4, "tie"),
        ("r2", "B", -0.08, 0.001, "loss"),
        ("r3", "A", math.nan, math.nan, "undefined"),
    ]  # B is not compared in r3
    return pd.DataFrame(rows, columns=["run", "method", "delta_auroc", "delong_p_holm", "outcome"]).assign(
        reference="Shap"
    )


def test_delta_heatmap_marks_exactly_the_significant_differences():
    fig = plots.delta_heatmap(_comparisons(), {"r1": "run one", "r2": "run two", "r3": "run three"})
    ax = fig.axes[0]
    cells = [t.get_text() for t in ax.texts]
    assert sorted(t for t in cells if t.endswith("*")) == ["+0.05*", "-0.08*"]  # the win and the loss, no tie
    assert "na" in cells and len(cells) == 5  # undefined shown as na; not compared: no text
    assert [t.get_text() for t in ax.get_xticklabels()] == ["run one", "run two", "run three"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["A", "B"]  # net significant wins first
    boxes = [p for p in ax.patches if not p.get_fill()]
    assert len(boxes) == 2
    assert _too_small(fig) == []
