"""The book's tables of measured AUROCs: the paper's reported numbers beside ours.

This module holds the measured AUROCs in the paper's layout (:func:`comparison_frame`, Tables 3-4 beside
:mod:`shapley.companion.reported`), the measured Table 5 (:func:`beta_ablation`) and single-run tables. The book's
other tables live beside it, along the data's path: :mod:`shapley.companion.htmltable` (the one renderer),
:mod:`shapley.companion.provenance` (what each run was, from its ``config.json``),
:mod:`shapley.companion.paired` (``comparisons.csv``) and :mod:`shapley.companion.costs`
(benchmark files and the paper-scale cost estimate).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from shapley.companion import reported
from shapley.companion.htmltable import Html, esc, titled, with_interval
from shapley.companion.provenance import StrPath, relative_path
from shapley.pipeline.evaluate.metrics import load_skipped
from shapley.pipeline.evaluate.report import load_metrics, runs_table
from shapley.pipeline.rundir.store import read_config
from shapley.pipeline.score.scores import METHODS

# ---------------------------------------------------------------------------------------------------
# Measured AUROCs in the paper's layout
# ---------------------------------------------------------------------------------------------------

PAPER_ALIASES: dict[str, str] = {label: ours for label, (_, _, ours) in reported.METHODS.items() if label != ours}
"""Paper column label -> our method, where they differ (``SU`` and ``NE``: why, in
:data:`shapley.companion.reported.METHODS`); every other paper label is our method name."""


NO_RUN_REASONS: dict[str, str] = {
    "wmt14": "no WMT-14 data offline here (loader tested on a fixture)",
}
"""Why a dataset of the paper's tables has no measurement here, when no run exists."""

#: Marks for a measured cell without a number, explained under each comparison table.
MARKS: Mapping[str, str] = {
    "skipped": "an input the method needs is missing (the reason is in the run's skipped.csv)",
    "not computed": "the run's method list leaves it out",
    "undefined": "AUROC is undefined, every judged answer being in one correctness class",
    "no run": "no run for this dataset",
}


def _mark(name: str) -> str:
    """A measured cell without a number: its mark from :data:`MARKS`."""
    return f'<span class="mark">{name}</span>'


def _standing(metrics: pd.DataFrame, skipped: pd.DataFrame, method: str) -> str:
    """Where ``method`` (our name) stands in one run's ``metrics.csv`` and ``skipped.csv``: ``measured`` (a defined
    AUROC), or the mark of :data:`MARKS` that says why there is no number."""
    row = metrics[metrics["method"] == method]
    if len(row):
        return "undefined" if math.isnan(float(row["auroc"].iloc[0])) else "measured"
    return "skipped" if len(skipped) and method in set(skipped["method"]) else "not computed"


def _measured_cells(run_dir: str, methods: Sequence[str]) -> dict[str, str]:
    """HTML cell per paper method for one run: "AUROC" over a small "[lo, hi]", or a mark from :data:`MARKS`."""
    metrics, skipped = load_metrics(run_dir), load_skipped(run_dir)
    cells = {}
    for m in methods:
        ours = PAPER_ALIASES.get(m, m)
        standing = _standing(metrics, skipped, ours)
        if standing == "measured":
            r = metrics[metrics["method"] == ours].iloc[0]
            cells[m] = with_interval(r["auroc"], r["auroc_lo"], r["auroc_hi"], decimals=3)
        else:
            cells[m] = _mark(standing)
    return cells


def comparison_frame(table: int, run_dirs: Sequence[StrPath], *, reported_rows: str = "models") -> pd.DataFrame:
    """The paper's Table 3 or 4 beside our runs, fitting the text column: per dataset a heading row, the paper's
    rows, then one row per run (AUROC over its 95% interval, or a mark from :data:`MARKS`).

    ``reported_rows``: ``"models"``, one reported row per model of the paper; ``"range"``, one reported row per
    dataset giving each method's lowest and highest AUROC over the paper's models (a table of a third the
    height, for a table with many models)."""
    methods = list(reported.TABLE3_METHODS if table == 3 else reported.TABLE4_METHODS)
    paper_rows = reported.TABLE3_ROWS if table == 3 else reported.TABLE4_ROWS
    measured = runs_table(run_dirs).drop_duplicates("run_dir")  # one row per run: its dataset, model and judge
    lines: list[tuple[str, str, Mapping[str, str]]] = []  # (row class, model cell, one cell per method)
    runs = []
    for dataset in dict.fromkeys(d for d, _ in paper_rows):
        lines.append(("group", f"<strong>{esc(reported.DATASETS.get(dataset, dataset))}</strong>", {}))
        rows_here = [values for (d, _), values in paper_rows.items() if d == dataset]
        if reported_rows == "range":
            cells = {
                m: f"{min(v):.3f}–{max(v):.3f}" for m, v in zip(methods, zip(*rows_here, strict=True), strict=True)
            }
            lines.append(("reported", esc(f"paper, {len(rows_here)} models: lowest–highest"), cells))
        for (d, model), values in paper_rows.items():
            if d == dataset and reported_rows == "models":
                cells = {m: f"{v:.3f}" for m, v in zip(methods, values, strict=True)}
                lines.append(("reported", esc(reported.MODELS[model]), cells))
        mine = measured[measured["dataset"] == dataset]
        if mine.empty:
            reason = NO_RUN_REASONS.get(dataset, "no finished run for this dataset yet")
            lines.append(("measured", esc(f"measured: {reason}"), dict.fromkeys(methods, _mark("no run"))))
        for run_dir, g in mine.groupby("run_dir", sort=True):
            stand_in = " (stand-in entailment)" if bool(g["entailment_is_stand_in"].iloc[0]) else ""
            lines.append(("measured", esc(f"{g['model'].iloc[0]}{stand_in}"), _measured_cells(str(run_dir), methods)))
            runs.append(relative_path(str(run_dir)))
    used = sorted({m for css, _, cells in lines if css == "measured" for m in MARKS if _mark(m) in cells.values()})
    legend = "; ".join(f"*{m}*: {MARKS[m]}" for m in used)
    per_model = "" if reported_rows == "models" else ", each method's lowest and highest over the paper's models"
    caption = (
        f"AUROC, Table {table} of the paper (reported rows{per_model}, from `shapley.companion.reported`) "
        "and our runs (measured rows: AUROC over its 95% bootstrap interval, from each run's "
        f"`metrics.csv`: {', '.join(f'`{x}`' for x in sorted(set(runs))) or 'none yet'})."
        + (f" {legend}." if legend else "")
    )
    frame = pd.DataFrame([{"Model": model, **{m: cells.get(m, "") for m in methods}} for _, model, cells in lines])
    return titled(
        frame, caption, formats=dict.fromkeys(methods, ".3f"), html=list(frame.columns), rows=[c for c, _, _ in lines]
    )


FEW_IN_A_CLASS = 20
"""A run with fewer answers than this in its smaller correctness class (correct or wrong): a significant paired
outcome there rests on few cases, and :func:`row_finding` says so beside it."""


def class_sizes(run_dir: StrPath) -> tuple[int, int]:
    """(correct, judged) answers of a run: its accuracy times its questions, from ``metrics.csv``."""
    m = load_metrics(run_dir)
    judged = int(m["n_questions"].max())
    return int(round(float(m["accuracy"].iloc[0]) * judged)), judged


def row_finding(run_dir: StrPath, methods: Sequence[str] | None = None, *, reference: str = "Shap") -> str:
    """One plain-text sentence (no HTML, for ``{glue:text}``) on one measured row: ``reference``'s AUROC, the
    row's highest AUROC when another method has it, and what the run's paired tests against ``reference``
    (``comparisons.csv``: DeLong, Holm-adjusted within the run) support among ``methods`` (labels of the paper's
    tables, mapped through :data:`PAPER_ALIASES`; default: every method of the run): the significant ones, or
    that none is, with the smallest Holm-adjusted p. A significant outcome on a run with fewer than
    :data:`FEW_IN_A_CLASS` answers in a correctness class carries that count.

    For instance: "Shap 0.589, below MaxL 0.644 (the row's highest); no difference with Shap is significant
    (Holm-adjusted DeLong p ≥ 0.286)".
    """
    from shapley.companion import paired
    from shapley.pipeline.evaluate.comparisons import SIGNIFICANCE

    metrics = load_metrics(run_dir).set_index("method")
    labels = list(methods) if methods is not None else list(metrics.index)
    ours = {label: PAPER_ALIASES.get(label, label) for label in labels}
    ref_label = next((label for label, m in ours.items() if m == reference), reference)
    correct, judged = class_sizes(run_dir)
    of_method: dict[Any, float] = metrics["auroc"].astype(float).to_dict()
    defined = {label: of_method[m] for label, m in ours.items() if not math.isnan(of_method.get(m, math.nan))}
    if math.isnan(of_method.get(reference, math.nan)):
        return f"AUROC undefined: {correct} of {judged} answers judged correct"
    shap = of_method[reference]
    best = max(defined, key=lambda k: (defined[k], k == ref_label))
    head = (
        f"{ref_label} {shap:.3f}, the row's highest"
        if best == ref_label
        else f"{ref_label} {shap:.3f}, below {best} {defined[best]:.3f} (the row's highest)"
    )
    comp = paired.load_comparisons([run_dir])
    comp = comp[comp["method"].isin(set(ours.values()) - {reference}) & comp["outcome"].isin(["win", "tie", "loss"])]
    back = {m: label for label, m in ours.items()}
    above = [back[m] for m in comp.loc[comp["outcome"] == "win", "method"]]
    below = [back[m] for m in comp.loc[comp["outcome"] == "loss", "method"]]
    parts = []
    if above:
        parts.append(f"{' and '.join(above)} significantly above {ref_label}")
    if below:
        parts.append(f"{' and '.join(below)} significantly below {ref_label}")
    if parts:
        tail = "; ".join(parts) + f" (Holm-adjusted DeLong p < {SIGNIFICANCE:g})"
        few = min(correct, judged - correct)
        if few < FEW_IN_A_CLASS:
            tail += f", on only {correct} correct answers of {judged}: few cases, read with caution"
    elif len(comp):
        p_min = float(comp["delong_p_holm"].min())
        bound = "= 1 for each" if round(p_min, 3) >= 1 else f"≥ {p_min:.3f}"
        tail = f"no difference with {ref_label} is significant (Holm-adjusted DeLong p {bound})"
    else:
        tail = f"no paired comparison with {ref_label} recorded"
    return f"{head}; {tail}"


def glossary_id(method: str) -> str:
    """The HTML anchor of ``method``'s entry in the book's glossary (:func:`method_glossary_html`).

    >>> glossary_id("P(T)"), glossary_id("Shap")
    ('glossary-p-t', 'glossary-shap')
    """
    return "glossary-" + re.sub(r"[^a-z0-9]+", "-", method.lower()).strip("-")


def method_glossary_html() -> Html:
    """The book's one method glossary: each of our methods (:data:`shapley.pipeline.score.scores.METHODS`, in
    its order) with its declared description, then each label of the paper's tables that is not one of ours, with
    its description, source and the method of ours measured under it
    (:data:`shapley.companion.reported.METHODS`). Each entry is a ``<dt>`` whose id is :func:`glossary_id`.
    """

    def paper(label: str) -> str:
        description, source, ours = reported.METHODS[label]
        return f"in the paper's tables, {esc(label)} is {esc(description)} ({esc(source)}), measured as our {esc(ours)}"

    entries = [
        (m, esc(spec.description) + (f". Note: {paper(m)}" if m in PAPER_ALIASES else ""))
        for m, spec in METHODS.items()
    ]
    entries += [(label, paper(label)) for label in reported.METHODS if label not in METHODS]
    items = "".join(f'<dt id="{glossary_id(m)}"><strong>{esc(m)}</strong></dt><dd>{text}</dd>' for m, text in entries)
    return Html(f'<dl class="method-glossary">{items}</dl>')


# ---------------------------------------------------------------------------------------------------
# Table 5: the beta sweep
# ---------------------------------------------------------------------------------------------------


def beta_ablation(run_dirs: Mapping[str, StrPath]) -> pd.DataFrame:
    """Measured Table 5: each run's ``beta_sweep.csv`` stacked, labelled by the mapping's key.

    Columns: source, beta, auroc, auroc_lo, auroc_hi, n, n_not_psd, frac_not_psd, min_eig_min.
    """
    frames = []
    for label, d in run_dirs.items():
        path = Path(d) / "beta_sweep.csv"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: run `python -m shapley beta-sweep {d}` first")
        f = pd.read_csv(path)
        f.insert(0, "source", label)
        f["frac_not_psd"] = f["n_not_psd"] / f["n"].where(f["n"] > 0)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def beta_spans(ablation: pd.DataFrame, betas: Iterable[float]) -> dict[str, float]:
    """Per source of :func:`beta_ablation`: how far Shap's AUROC moves (highest minus lowest) over those of
    ``betas`` at which every kernel matrix of the source is PSD (NaN where none is, or the AUROC is undefined)."""
    grid = [float(b) for b in betas]
    on = ablation[ablation["beta"].apply(lambda b: any(abs(b - g) < 1e-9 for g in grid))]
    ok = on[on["n_not_psd"] == 0]
    return {
        str(src): float(g["auroc"].max() - g["auroc"].min()) if g["auroc"].notna().any() else math.nan
        for src, g in ok.groupby("source", sort=False)
    }


def psd_at_beta(run_dirs: Iterable[StrPath], beta: float) -> dict[str, int]:
    """Kernel matrices that are not PSD at ``beta``, over the runs with a ``beta_sweep.csv`` at that beta.

    Returns ``{"n": questions, "n_not_psd": of those not PSD, "runs": runs counted}``.
    """
    swept = {str(d): d for d in run_dirs if (Path(d) / "beta_sweep.csv").exists()}
    sweeps = beta_ablation(swept) if swept else pd.DataFrame(columns=["source", "beta", "n", "n_not_psd"])
    at = sweeps[(sweeps["beta"] - beta).abs() < 1e-9]
    return {"n": int(at["n"].sum()), "n_not_psd": int(at["n_not_psd"].sum()), "runs": at["source"].nunique()}


def psd_at_beta_by_judge(run_dirs: Iterable[StrPath], beta: float) -> dict[str, dict[str, int]]:
    """:func:`psd_at_beta` per entailment backend (from each run's config.json), judges in first-seen order."""
    groups: dict[str, list[StrPath]] = {}
    for d in run_dirs:  # by the entailment backend each used: embedding:minilm, llm:smollm2, ...
        groups.setdefault(str(read_config(d).entailment.backend), []).append(d)
    counts = {judge: psd_at_beta(dirs, beta) for judge, dirs in groups.items()}
    return {judge: c for judge, c in counts.items() if c["runs"]}


# ---------------------------------------------------------------------------------------------------
# Measured metrics of single runs, and the settings the runs share
# ---------------------------------------------------------------------------------------------------


def metrics_frame(run_dir: StrPath, caption: str) -> pd.DataFrame:
    """One run's ``metrics.csv`` for readers: method, AUROC with its interval, AUARC and PRR, best AUROC first."""
    m = load_metrics(run_dir).sort_values("auroc", ascending=False)
    frame = m[["method", "auroc", "auroc_lo", "auroc_hi", "auarc", "prr"]].set_axis(
        ["Method", "AUROC", "95% low", "95% high", "AUARC", "PRR"], axis=1
    )
    where = f" From `{relative_path(run_dir)}/metrics.csv`."
    return titled(frame, caption + where, formats=dict.fromkeys(frame.columns[1:], ".3f"))


def method_coverage(run_dirs: Sequence[StrPath], method: str) -> dict[str, list[str]]:
    """Where ``method`` has a number: runs (repository-relative) by what their files say about it.

    Keys: ``measured`` (a defined AUROC in ``metrics.csv``), ``undefined`` (a row, AUROC undefined: one
    correctness class), ``skipped`` (in ``skipped.csv`` for every question, no row), ``not computed`` (the run's
    method list leaves it out). Statements in the book about which runs hold which method are computed from this.
    """
    out: dict[str, list[str]] = {"measured": [], "undefined": [], "skipped": [], "not computed": []}
    for d in run_dirs:
        out[_standing(load_metrics(d), load_skipped(d), method)].append(relative_path(d))
    return out
