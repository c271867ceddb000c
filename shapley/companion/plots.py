"""Figures for the book. Each function takes tidy data and returns a matplotlib Figure, closed in pyplot
(:func:`closed`: no global state is left behind), which a page shows with ``display(fig)``."""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMN_WIDTH_IN = 7.4
"""The book's text column (740 px at a 1280 px window) in inches at the figures' 100 dpi: a wider figure is
scaled down to it, and its text with it."""
MIN_FONT_PT = 9.0
"""The smallest text a figure of the column width may hold (12.5 px at 100 dpi)."""


def plain(text: object) -> str:
    """A string read from a file (a method, a run label), written so matplotlib draws it literally: its dollar
    signs escaped, so that no pair of them is parsed as mathtext (which draws it wrongly or fails to draw).

    >>> print(plain("$x$ <b>"))
    \\$x\\$ <b>
    """
    return str(text).replace("$", r"\$")


def pyplot():
    """pyplot with whatever backend is active (inline in the book's notebooks, Agg in scripts and tests)."""
    import matplotlib.pyplot as plt

    return plt


def closed(fig):
    """``fig`` closed in pyplot: it still draws, saves and displays (``display(fig)``), but nothing redraws or
    shows it at a cell's end. An open figure is drawn twice in a notebook, once by pyplot's end-of-cell redraw
    of stale figures and once for display (0.2 to 0.5 s a figure)."""
    pyplot().close(fig)
    return fig


def beta_figure(ablation: pd.DataFrame, reported: pd.DataFrame | None = None, *, at: float = 0.5):
    """Two panels against beta: AUROC of Shap minus its value at ``at`` (left), share of questions whose R is
    not PSD (right).

    A source whose AUROC is undefined at every beta is left out of the left panel, and one that is PSD at every
    beta out of the right, so the legends list only what is drawn; an undefined point breaks its line.

    Args:
        ablation: columns source, beta, auroc, frac_not_psd.
        reported: optional columns beta, auroc (the paper's Table 5, drawn dashed in black).
    """
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.0, 3.8), sharex=True)
    for k, (source, g) in enumerate(ablation.groupby("source", sort=False)):
        g = g.sort_values("beta")
        colour = f"C{k % 10}"
        ref = g.loc[(g["beta"] - at).abs() < 1e-9, "auroc"]
        if g["auroc"].notna().any() and len(ref) and not np.isnan(ref.iloc[0]):
            ax.plot(g["beta"], g["auroc"] - ref.iloc[0], "o-", ms=3, color=colour, label=plain(source))
        if (g["frac_not_psd"] > 0).any():
            ax2.plot(g["beta"], g["frac_not_psd"], "o-", ms=3, color=colour, label=plain(source))
    if reported is not None:
        r = reported.sort_values("beta").drop_duplicates("beta")
        ref = r.loc[(r["beta"] - at).abs() < 1e-9, "auroc"]
        if len(ref):
            ax.plot(r["beta"], r["auroc"] - ref.iloc[0], "k--", lw=1.2, label="reported (paper)")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.axvline(at, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(r"kernel scale $\beta$")
    ax.set_ylabel(rf"AUROC minus AUROC at $\beta$ = {at:g}")
    ax.legend(fontsize=7, loc="lower left")
    ax.grid(True, alpha=0.3)
    ax2.set_xlabel(r"kernel scale $\beta$")
    ax2.set_ylabel("share of questions with R not PSD")
    ax2.set_ylim(-0.02, 1.02)
    if ax2.get_legend_handles_labels()[0]:
        ax2.legend(fontsize=7, loc="upper left")
    ax2.grid(True, alpha=0.3)
    fig.tight_layout()
    return closed(fig)


def delta_heatmap(
    comparisons: pd.DataFrame,
    labels: dict[str, str] | None = None,
):
    """One heatmap of every paired AUROC difference against the reference: methods as rows (most significant
    wins minus losses first, then by mean difference), runs as columns (``labels``: run -> short name, in that
    order; default the runs' order in ``comparisons``). Each cell is the method's AUROC minus the reference's on
    the same questions (``delta_auroc`` of ``comparisons.csv``), written to 2 decimals on a diverging colour
    scale; a cell whose ``outcome`` the run decided as significant (``win`` or ``loss``: DeLong's paired test,
    Holm-adjusted within the run, p below :data:`shapley.pipeline.evaluate.comparisons.SIGNIFICANCE`) is boxed
    and its value marked ``*``. An undefined difference (one correctness class) reads ``na`` on grey; a method a
    run does not compare is left blank.

    Args:
        comparisons: :func:`shapley.companion.paired.load_comparisons` (columns run, method, reference,
            delta_auroc, outcome).
    """
    import matplotlib.patches as mpatches

    from shapley.pipeline.evaluate.comparisons import SIGNIFICANCE

    plt = pyplot()
    labels = dict(labels) if labels else {r: str(r) for r in dict.fromkeys(comparisons["run"])}
    runs = [r for r in labels if r in set(comparisons["run"])]
    c = comparisons[comparisons["run"].isin(runs)]
    significant = c["outcome"].isin(["win", "loss"]) & c["delta_auroc"].notna()
    score = (np.sign(c["delta_auroc"]) * significant).groupby(c["method"]).sum()
    mean = c.groupby("method")["delta_auroc"].mean()
    methods = sorted(score.index, key=lambda m: (-score[m], -np.nan_to_num(mean[m], nan=-np.inf), str(m)))
    grid = np.full((len(methods), len(runs)), np.nan)
    cells = {(r["method"], r["run"]): r for r in c.to_dict("records")}
    limit = float(np.nanmax(np.abs(c["delta_auroc"]))) if c["delta_auroc"].notna().any() else 0.1
    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, 0.34 * len(methods) + 2.2))
    for i, m in enumerate(methods):
        for j, run in enumerate(runs):
            r = cells.get((m, run))
            if r is None:
                continue
            delta = float(r["delta_auroc"])
            if np.isnan(delta):
                ax.add_patch(mpatches.Rectangle((j - 0.5, i - 0.5), 1, 1, color="0.85"))
                ax.text(j, i, "na", ha="center", va="center", fontsize=MIN_FONT_PT, color="0.4")
                continue
            grid[i, j] = delta
            star = r["outcome"] in ("win", "loss")
            shown = round(delta, 2)
            text = (f"{shown:+.2f}" if shown else "0.00") + ("*" if star else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=MIN_FONT_PT, fontweight="bold" if star else "normal")
            if star:
                ax.add_patch(mpatches.Rectangle((j - 0.47, i - 0.47), 0.94, 0.94, fill=False, lw=1.8, ec="black"))
    image = ax.imshow(grid, cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
    ax.set_xticks(np.arange(len(runs)), [plain(labels[r]) for r in runs], rotation=40, ha="right")
    ax.set_yticks(np.arange(len(methods)), [plain(m) for m in methods])
    ax.tick_params(labelsize=MIN_FONT_PT, length=0)
    ax.set_xticks(np.arange(len(runs) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(methods) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", lw=1)
    ax.tick_params(which="minor", length=0)
    reference = ", ".join(sorted(set(c["reference"]))) or "reference"
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.set_label(f"AUROC minus {plain(reference)}'s", fontsize=MIN_FONT_PT)
    bar.ax.tick_params(labelsize=MIN_FONT_PT)
    ax.set_title(f"* boxed: Holm-adjusted DeLong p < {SIGNIFICANCE:g}", fontsize=MIN_FONT_PT, loc="left")
    fig.tight_layout()
    return closed(fig)
