"""Paired comparisons and answer selection: each run's ``comparisons.csv`` and ``selection.csv``, counted and
shown for readers."""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from shapley.companion.htmltable import Col, Html, html_table, pinned_scroll, with_interval
from shapley.companion.provenance import relative_path
from shapley.pipeline.evaluate import SIGNIFICANCE
from shapley.pipeline.store import read_config

COMPARISON_COLUMNS = ("method", "reference", "delta_auroc", "lo", "hi", "p_value", "p_holm", "outcome")
SELECTION_COLUMNS = ("strategy", "accuracy", "n", "lo", "hi")


def _read_csvs(run_dirs: Sequence[str | os.PathLike[str]], name: str, columns: Sequence[str]) -> pd.DataFrame:
    frames = []
    for d in run_dirs:
        path = Path(d) / name
        if path.exists():
            f = pd.read_csv(path)
            missing = [c for c in columns if c not in f.columns]
            if missing:
                raise ValueError(f"{path}: missing columns {missing} (expected {list(columns)})")
            frames.append(f.assign(run=relative_path(d)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*columns, "run"])


def load_comparisons(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """The ``comparisons.csv`` of every run that has one, stacked, with columns ``run`` and ``n_boot`` (the run's
    bootstrap resamples from its config.json, NaN where unknown); empty if no run has one."""
    frames = _read_csvs(run_dirs, "comparisons.csv", COMPARISON_COLUMNS)
    resamples = {relative_path(d): _n_boot(d) for d in run_dirs if (Path(d) / "comparisons.csv").exists()}
    return frames.assign(n_boot=[resamples.get(r, math.nan) for r in frames["run"]])


def _n_boot(run_dir: str | os.PathLike[str]) -> float:
    try:
        return float(read_config(run_dir).scoring.n_boot)
    except (OSError, ValueError, KeyError, TypeError):
        return math.nan


def p_value_text(p: float, n_boot: float) -> str:
    """A bootstrap p-value for readers, 3 decimals; 0 (no resample on the far side of zero) is written as below
    the test's resolution, ``< 2/n_boot``, since the smallest p it can give above 0 is 2/n_boot.

    >>> p_value_text(0.0, 1000), p_value_text(0.0123, 1000), p_value_text(float("nan"), 1000)
    ('< 0.002', '0.012', '–')
    """
    if math.isnan(p):
        return "–"
    if p == 0 and n_boot > 0:
        return f"< {2 / n_boot:.3g}"
    return f"{p:.3f}"


def load_selection(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """The ``selection.csv`` of every run that has one, stacked, with a ``run`` column (empty if none)."""
    return _read_csvs(run_dirs, "selection.csv", SELECTION_COLUMNS)


def _outcomes(comparisons: pd.DataFrame) -> pd.Series:
    """Each row's outcome as written, but ``undefined`` where its AUROC difference is undefined (NaN)."""
    return comparisons["outcome"].where(comparisons["delta_auroc"].notna(), "undefined")


def comparison_summary(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Wins, ties and losses of each method against its reference, counted over runs.

    ``outcome`` is read as written in ``comparisons.csv`` (``win``, ``tie`` or ``loss`` of ``method``
    against ``reference``, a win or loss meaning a Holm-adjusted p-value below 0.05), except that a comparison
    whose ``delta_auroc`` is undefined (one correctness class; its ``note`` says so) counts as ``undefined``, not
    as a tie. Columns: method, reference, runs, win, tie, loss, undefined; sorted by wins minus losses, best first.
    """
    cols = ["method", "reference", "runs", "win", "tie", "loss", "undefined"]
    if comparisons.empty:
        return pd.DataFrame(columns=cols)
    bad = set(comparisons["outcome"]) - {"win", "tie", "loss"}
    if bad:
        raise ValueError(f"comparisons.csv: unknown outcome(s) {sorted(bad)}; expected win, tie or loss")
    counts = pd.crosstab([comparisons["method"], comparisons["reference"]], _outcomes(comparisons))
    counts = counts.reindex(columns=cols[3:], fill_value=0).reset_index()
    counts.insert(2, "runs", counts[cols[3:]].sum(axis=1))
    order = (counts["win"] - counts["loss"]).sort_values(ascending=False, kind="stable").index
    return counts.loc[order, cols].reset_index(drop=True)


def comparison_summary_html(comparisons: pd.DataFrame) -> Html:
    """:func:`comparison_summary` for readers."""
    s = comparison_summary(comparisons)
    cols = [
        Col("method", "Method"),
        Col("reference", "Against"),
        Col("runs", "Runs", decimals=0),
        Col("win", "Better", decimals=0),
        Col("tie", "No significant difference", decimals=0),
        Col("loss", "Worse", decimals=0),
        Col("undefined", "Undefined", decimals=0),
    ]
    caption = (
        "Paired comparisons on the same questions, counted over the runs (each run's "
        "<code>comparisons.csv</code>): <em>better</em> or <em>worse</em> only where the Holm-adjusted "
        f"p-value of the paired bootstrap is below {SIGNIFICANCE:g}; <em>undefined</em>: the run's answers are "
        "all correct or all wrong, so no AUROC exists."
    )
    return html_table(s, cols, caption=caption, css="measured-table")


def comparisons_html(comparisons: pd.DataFrame, run: str) -> Html:
    """One run's paired differences: method minus reference AUROC, its interval and the Holm-adjusted p."""
    c = comparisons[comparisons["run"] == run].copy()
    c["outcome_text"] = [f'<span class="outcome-{html.escape(o)}">{html.escape(o)}</span>' for o in c["outcome"]]
    n_boot = c["n_boot"] if "n_boot" in c else pd.Series(math.nan, index=c.index)
    c["p_text"] = [p_value_text(float(p), float(b)) for p, b in zip(c["p_holm"], n_boot, strict=True)]
    cols = [
        Col("method", "Method"),
        Col("reference", "Against"),
        Col("delta_auroc", "Δ AUROC", decimals=3),
        Col("lo", "95% low", decimals=3),
        Col("hi", "95% high", decimals=3),
        Col("p_text", "Holm p", decimals=3),  # text already formatted by p_value_text; numeric alignment
        Col("outcome_text", "Outcome", raw=True),
    ]
    caption = (
        f"Paired AUROC differences in <code>{html.escape(run)}</code> (its <code>comparisons.csv</code>). "
        "A p-value written <em>&lt; 2/B</em>: no bootstrap resample of the B crossed zero."
    )
    return html_table(c, cols, caption=caption, css="measured-table")


def comparison_grid(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Each method's AUROC minus its reference's, one row per method, one column per run, with the run's outcome.

    Cells are ``(delta_auroc, outcome)`` pairs (None where the run has no such comparison); rows keep the order of
    :func:`comparison_summary` (wins minus losses, best first).
    """
    if comparisons.empty:
        return pd.DataFrame(columns=["method"])
    runs = list(dict.fromkeys(comparisons["run"]))
    cells = {
        (m, run): (float(d), str(o))
        for m, run, d, o in zip(
            comparisons["method"], comparisons["run"], comparisons["delta_auroc"], comparisons["outcome"], strict=True
        )
    }
    methods = list(comparison_summary(comparisons)["method"])
    return pd.DataFrame([{"method": m, **{run: cells.get((m, run)) for run in runs}} for m in methods])


_OUTCOME_MARK = {"win": "▲", "loss": "▼", "tie": ""}


def comparison_grid_html(comparisons: pd.DataFrame, labels: Mapping[str, str] | None = None) -> Html:
    """:func:`comparison_grid` for readers: Δ AUROC to 3 decimals, ▲/▼ (and bold) where the method is
    significantly better/worse than the reference; ``labels``: short run headers."""
    grid = comparison_grid(comparisons)
    labels = labels or {}
    runs = [c for c in grid.columns if c != "method"]
    rows = []
    for rec in grid.to_dict("records"):
        row = {"method": rec["method"]}
        for run in runs:
            cell = rec[run]
            if cell is None or (isinstance(cell, float) and math.isnan(cell)):
                row[run] = "–"
                continue
            delta, outcome = cell
            shown = round(delta, 3)
            text = "na" if math.isnan(delta) else (f"{shown:+.3f}" if shown else "0.000")
            text += _OUTCOME_MARK.get(outcome, "")
            row[run] = f'<span class="outcome-{html.escape(outcome)}">{html.escape(text)}</span>'
        rows.append(row)
    reference = ", ".join(sorted(set(comparisons["reference"]))) if not comparisons.empty else "Shap"
    cols = [Col("method", "Method")] + [Col(r, labels.get(r, r), raw=True) for r in runs]
    caption = (
        f"AUROC of each method minus that of {html.escape(reference)}, per run, on the same questions. "
        f"▲ / ▼ (bold): significantly better / worse (paired bootstrap, Holm-adjusted p below {SIGNIFICANCE:g}); "
        "unmarked: no significant difference; na: undefined (the run's answers are all correct or all wrong); "
        "– : not compared in that run."
    )
    return pinned_scroll(html_table(rows, cols, caption=caption, css="measured-table"))


def selection_pivot(selection: pd.DataFrame) -> pd.DataFrame:
    """Accuracy of the answer each strategy returns, one row per strategy, one column per run."""
    if selection.empty:
        return pd.DataFrame(columns=["strategy"])
    wide = selection.pivot(index="strategy", columns="run", values="accuracy")
    order = list(dict.fromkeys(selection["strategy"]))
    return wide.reindex(order).reset_index()


def outcome_counts(comparisons: pd.DataFrame) -> dict[str, int]:
    """How many comparisons of ``comparisons.csv`` rows are ``win``, ``tie``, ``loss`` and ``undefined`` (no
    AUROC difference: one correctness class), over all runs; keys in that order."""
    outcome = _outcomes(comparisons)
    return {k: int((outcome == k).sum()) for k in ("win", "tie", "loss", "undefined")}


def selection_head_to_head(selection: pd.DataFrame, strategy: str = "min_phi") -> pd.DataFrame:
    """``strategy``'s accuracy against each other strategy over the runs where both apply (point estimates).

    Columns: against, runs, higher, equal, lower (counts of runs where ``strategy`` is higher, equal or lower),
    overlapping (runs where the two bootstrap intervals overlap, so the difference is not established).
    """
    wide = selection.dropna(subset=["accuracy"]).set_index(["run", "strategy"])
    rows = []
    for other in dict.fromkeys(selection["strategy"]):
        if other == strategy:
            continue
        runs = [r for r in dict.fromkeys(selection["run"]) if (r, strategy) in wide.index and (r, other) in wide.index]
        a = [wide.loc[(r, strategy)] for r in runs]
        b = [wide.loc[(r, other)] for r in runs]
        d = [x["accuracy"] - y["accuracy"] for x, y in zip(a, b, strict=True)]
        overlap = sum(bool(x["lo"] <= y["hi"] and y["lo"] <= x["hi"]) for x, y in zip(a, b, strict=True))
        rows.append(
            {
                "against": other,
                "runs": len(runs),
                "higher": sum(v > 1e-12 for v in d),
                "equal": sum(abs(v) <= 1e-12 for v in d),
                "lower": sum(v < -1e-12 for v in d),
                "overlapping": overlap,
            }
        )
    return pd.DataFrame(rows, columns=["against", "runs", "higher", "equal", "lower", "overlapping"])


def selection_html(selection: pd.DataFrame, labels: Mapping[str, str] | None = None) -> Html:
    """The accuracy of each strategy's answer for readers: one row per run (``labels``: short run names), one
    column per strategy, accuracy to 2 decimals with its bootstrap interval below."""
    labels = labels or {}
    strategies = list(dict.fromkeys(selection["strategy"]))
    rows = []
    for run, group in selection.groupby("run", sort=False):
        row: dict[str, Any] = {"run": labels.get(str(run), str(run))}
        for r in group.to_dict("records"):
            row[r["strategy"]] = (
                "–" if math.isnan(r["accuracy"]) else with_interval(r["accuracy"], r["lo"], r["hi"], decimals=2)
            )
        rows.append(row)
    cols = [Col("run", "Run")] + [Col(s, s, raw=True, decimals=2) for s in strategies]
    caption = (
        "Accuracy of the one answer each strategy returns per question, with its 95% bootstrap interval (each "
        "run's <code>selection.csv</code>). – : the strategy does not apply to that run (the file's note says why)."
    )
    return html_table(rows, cols, caption=caption, css="measured-table")
