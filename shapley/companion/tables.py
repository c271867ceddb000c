"""The book's tables: the paper's reported numbers beside our measured ones, and what each run was.

Every table the book shows is built here as HTML by :func:`html_table`: human column headers, numbers
right-aligned with a fixed number of decimals, and a caption saying what the table shows and where its
numbers come from. Tables are narrow enough for the book's text column; a table that cannot be is wrapped
in :func:`pinned_scroll` (a deliberate scroll box whose first column stays in view).

:func:`comparison_html` interleaves the paper's Tables 3-4 (:mod:`shapley.companion.reported`) with our
measured AUROCs; :func:`beta_pivot` is the measured Table 5; :func:`provenance_table` and
:func:`recorded_invocations` say what each run was, from its ``config.json``; :func:`comparison_summary` and
:func:`selection_pivot` read the ``comparisons.csv`` and ``selection.csv`` of the runs; :func:`cost_estimate`
is the paper-scale cost estimate of the reproduction chapter.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from shapley.companion import reported
from shapley.pipeline.evaluate import SIGNIFICANCE, load_metrics, load_skipped, runs_table
from shapley.pipeline.settings import REPO_ROOT
from shapley.pipeline.store import RunHistory, read_config, read_record, run_history

# ---------------------------------------------------------------------------------------------------
# HTML tables for readers
# ---------------------------------------------------------------------------------------------------


class Html(str):
    """A string of HTML that Jupyter displays as HTML (``_repr_html_``)."""

    def _repr_html_(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Col:
    """One column of :func:`html_table`: the frame's key, its header, and how cells are written.

    ``decimals``: a number column (right-aligned, fixed decimals; NaN is written ``na``); ``fmt``: a format
    spec instead (e.g. ``".1e"``); ``raw``: the cells are already HTML (otherwise they are escaped).
    """

    key: str
    header: str
    decimals: int | None = None
    na: str = "–"
    raw: bool = False
    fmt: str | None = None

    @property
    def numeric(self) -> bool:
        return self.decimals is not None or self.fmt is not None


def _cell(value: Any, col: Col) -> tuple[str, str]:
    """(text, css class) of one cell."""
    if col.numeric:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return html.escape(col.na), "num"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return format(value, col.fmt or f".{col.decimals}f"), "num"
    text = "" if value is None else str(value)
    return (text if col.raw else html.escape(text)), ("num" if col.numeric else "")


def html_table(
    rows: pd.DataFrame | Sequence[Mapping[str, Any]],
    cols: Sequence[Col],
    *,
    caption: str,
    row_classes: Sequence[str] | None = None,
    css: str = "",
) -> Html:
    """A table for readers: ``cols`` in order, ``caption`` above (HTML allowed), optional class per row
    (class ``group``: a heading row, its first column's cell across the table)."""
    records: list[Mapping[str, Any]] = (
        [{str(k): v for k, v in r.items()} for r in rows.to_dict("records")]
        if isinstance(rows, pd.DataFrame)
        else list(rows)
    )
    head = "".join(f'<th class="{"num" if c.numeric else ""}">{html.escape(c.header)}</th>' for c in cols)
    body = []
    for k, r in enumerate(records):
        if row_classes is not None and row_classes[k] == "group":  # a heading row across the whole table
            text, _ = _cell(r.get(cols[0].key), cols[0])
            body.append(f'<tr class="group"><td colspan="{len(cols)}">{text}</td></tr>')
            continue
        cells = []
        for c in cols:
            text, cls = _cell(r.get(c.key), c)
            cells.append(f'<td class="{cls}">{text}</td>')
        rc = f' class="{row_classes[k]}"' if row_classes is not None and row_classes[k] else ""
        body.append(f"<tr{rc}>{''.join(cells)}</tr>")
    return Html(
        f'<table class="companion {css}"><caption>{caption}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def pinned_scroll(table: str) -> Html:
    """Wrap a table that cannot fit the column in a horizontal scroll box whose first column stays in view."""
    return Html(f'<div class="scroll-pinned">{table}</div>')


# ---------------------------------------------------------------------------------------------------
# Measured AUROCs in the paper's layout
# ---------------------------------------------------------------------------------------------------

MEASURED_COLUMNS: tuple[str, ...] = ("dataset", "method", "auroc", "lo", "hi", "model", "entailment", "run_dir")


PAPER_ALIASES: dict[str, str] = {"SU": "SE", "NE": "LNE"}
"""Paper column label -> our method, where they differ. Table 3's ``SU`` is semantic entropy; Table 4's
``NE`` ("naive entropy" of Farquhar et al. 2024) is the length-normalised predictive entropy (as in
``shapley.companion.reported.METHODS``). Every other paper label is our method name."""


PAPER_METHODS: tuple[str, ...] = ("MaxL", "AvgL", "MaxE", "AvgE", "SU", "A4C", "SE", "DSE", "NE", "P(T)", "ER", "Shap")


def measured_table(run_dirs: Sequence[str | os.PathLike[str]], *, all_methods: bool = False) -> pd.DataFrame:
    """Measured AUROCs in the layout of the paper's reported tables (``shapley.companion.reported.reported_auroc``).

    Columns :data:`MEASURED_COLUMNS` plus ``our_method`` and ``entailment_is_stand_in``. ``method`` is the
    paper's label (:data:`PAPER_ALIASES`: ``SU`` and ``SE`` both come from our ``SE``, ``NE`` from ``LNE``);
    with ``all_methods`` our other methods are included under their own names.
    """
    t = runs_table(run_dirs)
    rows = []
    for _, r in t.iterrows():
        labels = [p for p in PAPER_METHODS if PAPER_ALIASES.get(p, p) == r["method"]]
        if not labels and all_methods:
            labels = [r["method"]]
        for lab in labels:
            rows.append(
                {
                    "dataset": r["dataset"],
                    "method": lab,
                    "auroc": r["auroc"],
                    "lo": r["auroc_lo"],
                    "hi": r["auroc_hi"],
                    "model": r["model"],
                    "entailment": r["entailment"],
                    "run_dir": r["run_dir"],
                    "our_method": r["method"],
                    "entailment_is_stand_in": r.get("entailment_is_stand_in"),
                }
            )
    return pd.DataFrame(rows, columns=[*MEASURED_COLUMNS, "our_method", "entailment_is_stand_in"])


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


def _with_interval(value: float, lo: float, hi: float, *, decimals: int) -> str:
    """HTML cell text: ``value`` over a small "[lo, hi]" (2 decimals), the interval left out when ``lo`` is NaN."""
    ci = "" if math.isnan(lo) else f'<br><span class="ci">[{lo:.2f}, {hi:.2f}]</span>'
    return f"{value:.{decimals}f}{ci}"


def _measured_cells(g: pd.DataFrame, run_dir: str, methods: Sequence[str]) -> dict[str, str]:
    """HTML cell per method for one run: "AUROC" over a small "[lo, hi]", or a mark from :data:`MARKS`."""
    skipped = load_skipped(run_dir)
    why = set(skipped["method"]) if len(skipped) else set()
    got = {r["method"]: r for _, r in g.iterrows()}
    cells = {}
    for m in methods:
        r = got.get(m)
        if r is not None and not math.isnan(r["auroc"]):
            cells[m] = _with_interval(r["auroc"], r["lo"], r["hi"], decimals=3)
        elif r is not None:
            cells[m] = '<span class="mark">undefined</span>'
        elif PAPER_ALIASES.get(m, m) in why:
            cells[m] = '<span class="mark">skipped</span>'
        else:
            cells[m] = '<span class="mark">not computed</span>'
    return cells


def comparison_rows(table: int, run_dirs: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Rows of the paper's Table 3 or 4 with our measured rows interleaved, dataset by dataset.

    Each row: ``dataset`` (as printed), ``model``, ``source`` ("reported" / "measured"), one HTML cell per
    method of the table, and ``run`` (the run directory, or the paper's table).
    """
    if table not in (3, 4):
        raise ValueError(f"table must be 3 or 4; got {table!r}")
    methods = list(reported.TABLE3_METHODS if table == 3 else reported.TABLE4_METHODS)
    paper_rows = reported.TABLE3_ROWS if table == 3 else reported.TABLE4_ROWS
    measured = measured_table(run_dirs)
    rows: list[dict[str, Any]] = []
    for dataset in dict.fromkeys(d for d, _ in paper_rows):
        name = reported.DATASETS.get(dataset, dataset)
        for (d, model), values in paper_rows.items():
            if d == dataset:
                cells = {m: f"{v:.3f}" for m, v in zip(methods, values, strict=True)}
                rows.append({"dataset": name, "model": reported.MODELS[model], "source": "reported", **cells})
        mine = measured[measured["dataset"] == dataset]
        if mine.empty:
            reason = NO_RUN_REASONS.get(dataset, "no finished run for this dataset yet")
            no_run = dict.fromkeys(methods, '<span class="mark">no run</span>')
            rows.append({"dataset": name, "model": f"measured: {reason}", "source": "measured", **no_run})
            continue
        for run_dir, g in mine.groupby("run_dir", sort=True):
            stand_in = " (stand-in entailment)" if bool(g["entailment_is_stand_in"].iloc[0]) else ""
            rows.append(
                {
                    "dataset": name,
                    "model": f"{g['model'].iloc[0]}{stand_in}",
                    "source": "measured",
                    **_measured_cells(g, str(run_dir), methods),
                    "run": _relative(str(run_dir)),
                }
            )
    return rows


def comparison_html(table: int, run_dirs: Sequence[str | os.PathLike[str]]) -> Html:
    """The paper's Table 3 or 4 beside our runs, one block of rows per dataset, fitting the text column."""
    methods = list(reported.TABLE3_METHODS if table == 3 else reported.TABLE4_METHODS)
    rows = comparison_rows(table, run_dirs)
    out, classes = [], []
    for k, r in enumerate(rows):
        if k == 0 or r["dataset"] != rows[k - 1]["dataset"]:
            out.append({"model": f"<strong>{html.escape(r['dataset'])}</strong>"})
            classes.append("group")
        out.append({**r, "model": html.escape(r["model"])})
        classes.append(r["source"])
    used = sorted({m for r in rows if r["source"] == "measured" for m in MARKS if f">{m}<" in "".join(r.values())})
    legend = "; ".join(f"<em>{m}</em>: {html.escape(MARKS[m])}" for m in used)
    runs = sorted({r["run"] for r in rows if r.get("run")})
    caption = (
        f"AUROC, Table {table} of the paper (reported rows, from <code>shapley.companion.reported</code>) and "
        "our runs (measured rows: AUROC over its 95% bootstrap interval, from each run's "
        f"<code>metrics.csv</code>: {', '.join(f'<code>{html.escape(x)}</code>' for x in runs) or 'none yet'})."
        + (f" {legend}." if legend else "")
    )
    cols = [Col("model", "Model", raw=True)] + [Col(m, m, decimals=3, raw=True) for m in methods]
    return html_table(out, cols, caption=caption, row_classes=classes, css="comparison")


# ---------------------------------------------------------------------------------------------------
# Table 5: the beta sweep
# ---------------------------------------------------------------------------------------------------


def beta_ablation(run_dirs: Mapping[str, str | os.PathLike[str]]) -> pd.DataFrame:
    """Measured Table 5: each run's ``beta_sweep.csv`` stacked, labelled by the mapping's key.

    Columns: source, beta, auroc, auroc_lo, auroc_hi, n, n_not_psd, frac_not_psd, min_eig_min, run_dir.
    """
    frames = []
    for label, d in run_dirs.items():
        path = Path(d) / "beta_sweep.csv"
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: run `python -m shapley beta-sweep {d}` first")
        f = pd.read_csv(path)
        f.insert(0, "source", label)
        f["frac_not_psd"] = f["n_not_psd"] / f["n"].where(f["n"] > 0)
        f["run_dir"] = _relative(d)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def beta_pivot(ablation: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Compact measured Table 5: one row per beta, one column per source (AUROC), and the sources left out.

    A source whose AUROC is undefined at every beta is left out (returned second). Each cell is the AUROC to
    3 decimals, marked with the number of questions whose R is not PSD at that beta (``0.812 (5)``).
    """
    keep = [s for s, g in ablation.groupby("source", sort=False) if g["auroc"].notna().any()]
    dropped = [s for s in dict.fromkeys(ablation["source"]) if s not in keep]
    a = ablation[ablation["source"].isin(keep)]

    def cell(r: pd.Series) -> str:
        text = "undefined" if math.isnan(r["auroc"]) else f"{r['auroc']:.3f}"
        return text + (f'<br><span class="not-psd">({int(r["n_not_psd"])})</span>' if r["n_not_psd"] > 0 else "")

    a = a.assign(cell=a.apply(cell, axis=1))
    wide = a.pivot(index="beta", columns="source", values="cell").reindex(columns=keep).reset_index()
    return wide, dropped


def beta_pivot_html(ablation: pd.DataFrame, labels: Mapping[str, str] | None = None) -> Html:
    """:func:`beta_pivot` as a table for readers; ``labels`` maps a source to a short column header."""
    wide, dropped = beta_pivot(ablation)
    labels = labels or {}
    sources = [c for c in wide.columns if c != "beta"]
    cols = [Col("beta", "β", decimals=2)] + [Col(s, labels.get(s, s), decimals=3, raw=True) for s in sources]
    left_out = f" Left out (AUROC undefined at every β): {', '.join(dropped)}." if dropped else ""
    caption = (
        "Measured AUROC of Shap at each β, recomputed from each run's stored entailment matrices by "
        "<code>python -m shapley beta-sweep</code> (each run's <code>beta_sweep.csv</code>). "
        '<span class="not-psd">(k)</span>: k questions whose R is not PSD at that β, repaired by the run\'s '
        f"PSD policy.{left_out}"
    )
    return html_table(wide, cols, caption=caption, css="measured-table")


def psd_at_beta(run_dirs: Iterable[str | os.PathLike[str]], beta: float) -> dict[str, int]:
    """Kernel matrices that are not PSD at ``beta``, over the runs with a ``beta_sweep.csv`` at that beta.

    Returns ``{"n": questions, "n_not_psd": of those not PSD, "runs": runs counted}``.
    """
    out = {"n": 0, "n_not_psd": 0, "runs": 0}
    for d in run_dirs:
        path = Path(d) / "beta_sweep.csv"
        if not path.exists():
            continue
        f = pd.read_csv(path)
        row = f[(f["beta"] - beta).abs() < 1e-9]
        if row.empty:
            continue
        out["n"] += int(row["n"].iloc[0])
        out["n_not_psd"] += int(row["n_not_psd"].iloc[0])
        out["runs"] += 1
    return out


def reported_table5_html() -> Html:
    """The paper's Table 5, both rounds side by side (β and AUROC as printed)."""
    r1, r2 = reported.TABLE5_ROUND1, reported.TABLE5_ROUND2
    rows = [{"b1": b1, "a1": a1, "b2": b2, "a2": a2} for (b1, a1), (b2, a2) in zip(r1, r2, strict=True)]
    cols = [
        Col("b1", "β, round 1", decimals=1),
        Col("a1", "AUROC", decimals=4),
        Col("b2", "β, round 2", decimals=2),
        Col("a2", "AUROC", decimals=5),
    ]
    caption = (
        "Reported: the paper's Table 5 (LLaMA2-7B on TriviaQA), from <code>shapley.companion.reported</code>, "
        "with the decimals it prints."
    )
    return html_table(rows, cols, caption=caption, row_classes=["reported"] * len(rows))


def n_sweep(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """AUROC per method across runs that differ in the number of samples (``RunConfig.n_samples``)."""
    frames = []
    for d in run_dirs:
        f = load_metrics(d)
        f.insert(0, "n_samples", read_config(d).n_samples)
        f["run_dir"] = _relative(d)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------------------------------------------
# Runs and their provenance
# ---------------------------------------------------------------------------------------------------


def _relative(path: str | os.PathLike[str]) -> str:
    p = Path(path).resolve()
    try:
        return str(p.relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def discover_runs(root: str | os.PathLike[str]) -> list[Path]:
    """Run directories under ``root`` (any depth) that have finished their metrics stage, sorted."""
    return sorted(p.parent for p in Path(root).rglob("metrics.csv") if (p.parent / "config.json").exists())


def question_count(run_dir: str | os.PathLike[str]) -> int | None:
    """Questions scored in a run (``n_questions`` of its ``metrics.csv``), None when it does not say."""
    m = load_metrics(run_dir)
    return int(m["n_questions"].max()) if "n_questions" in m and len(m) else None


def recorded_invocations(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every invocation recorded in a run's ``config.json``, first to last, resumes included.

    Each: ``time``, ``command`` (the recorded command line, never rebuilt: ``run_history(d).commands``),
    ``resumed``, ``commit`` and ``dirty`` (the source tree's state for that invocation; the run's creation
    provenance when the invocation does not record it, as in schema-1 files).
    """
    rec = read_record(run_dir) or {}
    prov = rec.get("provenance", {})
    git0 = prov.get("git") or {}
    invs = rec.get("invocations") or [{"time": prov.get("created"), "command_line": prov.get("command_line")}]
    commands = run_history(rec).commands
    out = []
    for k, (inv, command) in enumerate(zip(invs, commands, strict=True)):
        git = inv.get("git") or (git0 if k == 0 else {})
        out.append(
            {
                "time": (inv.get("time") or "")[:16].replace("T", " "),
                "command": command,
                "resumed": bool(inv.get("resumed", k > 0)),
                "commit": git.get("commit"),
                "dirty": git.get("dirty"),
            }
        )
    return out


def provenance_flags(history: RunHistory) -> list[str]:
    """What a reader must know about how a run was made (from ``shapley.pipeline.store.run_history``):
    ``dirty`` (some invocation ran from a source tree that differed from its commit), ``multi-commit``
    (invocations at different commits), ``commit unknown`` (no invocation recorded its commit)."""
    flags = []
    if history.dirty:
        flags.append("dirty")
    if history.multi_commit:
        flags.append("multi-commit")
    if not history.commits:
        flags.append("commit unknown")
    return flags


def provenance_table(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """One row per run: where it is, what it covered, the commit(s) it ran from, and its flags.

    Columns: run, dataset, model, entailment, questions, samples, accuracy, commits, invocations, flags
    (a list: see :func:`provenance_flags`).
    """
    rows = []
    for d in run_dirs:
        cfg = read_config(d)
        m = load_metrics(d)
        history = run_history(d)
        commits = [c[:7] for c in history.commits]
        rows.append(
            {
                "run": _relative(d),
                "dataset": cfg.data.dataset,
                "model": cfg.model,
                "entailment": cfg.entailment.backend,
                "questions": question_count(d),
                "samples": cfg.n_samples,
                "accuracy": float(m["accuracy"].iloc[0]) if len(m) else math.nan,
                "commits": ", ".join(commits),
                "invocations": len(history.commands),
                "flags": provenance_flags(history),
            }
        )
    return pd.DataFrame(rows)


def provenance_html(run_dirs: Sequence[str | os.PathLike[str]]) -> Html:
    """:func:`provenance_table` for readers; a flagged run is marked in its row."""
    t = provenance_table(run_dirs)
    t["run_html"] = [html.escape(r.removeprefix("results/")).replace("/", "/<wbr>") for r in t["run"]]
    t["flag_text"] = [
        "<br>".join(f'<span class="flag">{html.escape(f)}</span>' for f in fl) or "clean" for fl in t["flags"]
    ]
    t["commits"] = [c.replace(", ", "<br>") for c in t["commits"]]
    cols = [
        Col("run_html", "Run (under results/)", raw=True),
        Col("model", "Model"),
        Col("questions", "Questions", decimals=0),
        Col("samples", "Samples", decimals=0),
        Col("accuracy", "Accuracy", decimals=2),
        Col("commits", "Commit(s)", raw=True),
        Col("flag_text", "Flags", raw=True),
    ]
    caption = (
        "The runs this page reads, from each run's <code>config.json</code> and <code>metrics.csv</code>; "
        "every invocation is listed below the table. "
        "Accuracy: share of judged answers counted correct. <em>dirty</em>: an invocation ran from a source "
        "tree that differed from its commit; <em>multi-commit</em>: the run was resumed at another commit."
    )
    classes = ["flagged" if fl else "" for fl in t["flags"]]
    return html_table(t, cols, caption=caption, row_classes=classes, css="provenance")


def commands_html(run_dirs: Sequence[str | os.PathLike[str]]) -> Html:
    """Every recorded invocation of every run, as recorded: a folding list per run, resumes marked."""
    items = []
    for d in run_dirs:
        lines = []
        for inv in recorded_invocations(d):
            state = "resumed" if inv["resumed"] else "created"
            commit = f", commit {html.escape(str(inv['commit'])[:7])}" if inv["commit"] else ""
            dirty = " (dirty)" if inv["dirty"] else ""
            lines.append(
                f'<li><span class="when">{html.escape(inv["time"])}, {state}{commit}{dirty}</span><br>'
                f'<code class="cmd">{html.escape(inv["command"])}</code></li>'
            )
        n = len(lines)
        items.append(
            f"<details><summary><code>{html.escape(_relative(d))}</code>: {n} invocation{'s' * (n != 1)}"
            f"</summary><ul>{''.join(lines)}</ul></details>"
        )
    return Html(f'<div class="commands">{"".join(items)}</div>')


# ---------------------------------------------------------------------------------------------------
# Measured metrics of single runs, and the settings the runs share
# ---------------------------------------------------------------------------------------------------


def metrics_html(run_dir: str | os.PathLike[str], caption: str) -> Html:
    """One run's ``metrics.csv`` for readers: method, AUROC with its interval, AUARC and PRR, best AUROC first."""
    m = load_metrics(run_dir).sort_values("auroc", ascending=False)
    cols = [
        Col("method", "Method"),
        Col("auroc", "AUROC", decimals=3),
        Col("auroc_lo", "95% low", decimals=3),
        Col("auroc_hi", "95% high", decimals=3),
        Col("auarc", "AUARC", decimals=3),
        Col("prr", "PRR", decimals=3),
    ]
    where = f" From <code>{html.escape(_relative(run_dir))}/metrics.csv</code>."
    return html_table(m, cols, caption=caption + where, css="measured-table")


def pivot_html(frame: pd.DataFrame, *, index: str, columns: str, values: str, caption: str, decimals: int = 3) -> Html:
    """A pivot (``index`` rows x ``columns`` columns of ``values``) for readers; NaN shown as "undefined"."""
    wide = frame.pivot_table(index=index, columns=columns, values=values, dropna=False).reset_index()
    heads = [c for c in wide.columns if c != index]
    cols = [Col(index, index.replace("_", " ").capitalize())]
    cols += [Col(str(c), str(c), decimals=decimals, na="undefined") for c in heads]
    wide.columns = [str(c) for c in wide.columns]
    return html_table(wide, cols, caption=caption, css="measured-table")


def mozart_html(beta: float = 0.5) -> Html:
    """Every reading of the Mozart example tried in ``shapley.companion.mozart``, at ``beta``, for readers."""
    from shapley.companion import mozart

    rows = mozart.readings_table(beta=beta)
    yes_no = {True: "yes", False: "no", None: "undefined"}
    for r in rows:
        r["both"] = yes_no[bool(r["matches1"] and r["matches2"])]
        r["higher"] = yes_no[r["rises"]]
    cols = [
        Col("reading", "Reading"),
        Col("unit", "Unit"),
        Col("table1", "Table 1", decimals=3, na="undefined"),
        Col("table2", "Table 2", decimals=3, na="undefined"),
        Col("both", "Both printed values?"),
        Col("higher", "Table 2 higher?"),
    ]
    printed = reported.MOZART_UNCERTAINTY
    caption = (
        f"Measured: each reading of <code>shapley.companion.mozart.READINGS</code> on the printed inputs at "
        f"β = {beta:g} (minus infinity: a singular matrix). <em>Both printed values?</em>: whether it rounds to "
        f"the paper's {printed['table1']['shapley']:.2f} and {printed['table2']['shapley']:.2f} "
        "(reported, Tables 1-2)."
    )
    return html_table(rows, cols, caption=caption, css="measured-table")


def settings_summary(run_dirs: Sequence[str | os.PathLike[str]]) -> dict[str, str]:
    """The generation and scoring settings of ``run_dirs`` as recorded in their ``config.json``: each setting's
    distinct values, joined ("0.5" or "5, 10"). Settings of ``score-samples`` runs (no generation) are skipped."""
    seen: dict[str, list[Any]] = {}
    for d in run_dirs:
        cfg = read_config(d)
        values: dict[str, Any] = {"beta": cfg.scoring.beta, "psd_policy": cfg.scoring.psd_policy}
        values["n_samples"] = cfg.n_samples
        if cfg.generation is not None:
            g = cfg.generation
            values.update(temperature=g.temperature, max_new_tokens=g.max_new_tokens, top_p=g.top_p)
            values.update(chat_template=g.chat_template, n_shots=cfg.data.n_shots)
        for k, v in values.items():
            if v not in seen.setdefault(k, []):
                seen[k].append(v)

    def ordered(vs: list[Any]) -> list[Any]:
        try:
            return sorted(vs)
        except TypeError:
            return vs

    return {k: ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in ordered(vs)) for k, vs in seen.items()}


# ---------------------------------------------------------------------------------------------------
# Paired comparisons and answer selection (comparisons.csv, selection.csv of each run)
# ---------------------------------------------------------------------------------------------------

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
            frames.append(f.assign(run=_relative(d)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*columns, "run"])


def load_comparisons(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """The ``comparisons.csv`` of every run that has one, stacked, with columns ``run`` and ``n_boot`` (the run's
    bootstrap resamples from its config.json, NaN where unknown); empty if no run has one."""
    frames = _read_csvs(run_dirs, "comparisons.csv", COMPARISON_COLUMNS)
    resamples = {_relative(d): _n_boot(d) for d in run_dirs if (Path(d) / "comparisons.csv").exists()}
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
                "–" if math.isnan(r["accuracy"]) else _with_interval(r["accuracy"], r["lo"], r["hi"], decimals=2)
            )
        rows.append(row)
    cols = [Col("run", "Run")] + [Col(s, s, raw=True, decimals=2) for s in strategies]
    caption = (
        "Accuracy of the one answer each strategy returns per question, with its 95% bootstrap interval (each "
        "run's <code>selection.csv</code>). – : the strategy does not apply to that run (the file's note says why)."
    )
    return html_table(rows, cols, caption=caption, css="measured-table")


# ---------------------------------------------------------------------------------------------------
# Benchmarks and the paper-scale cost estimate
# ---------------------------------------------------------------------------------------------------


def load_benchmark(path: str | os.PathLike[str]) -> tuple[dict[str, Any], pd.DataFrame]:
    """Read a benchmark JSON written by ``benchmarks/*.py``: (metadata without rows, rows as a DataFrame)."""
    meta = json.loads(Path(path).read_text())
    rows = meta.pop("rows", [])
    return meta, pd.DataFrame(rows)


@dataclass(frozen=True)
class Gpu:
    """A GPU's published peaks and the share of them we assume a run reaches."""

    name: str
    bf16_tflops: float  # dense bf16 peak, TFLOP/s
    bandwidth_tbs: float  # memory bandwidth, TB/s
    memory_gb: float
    compute_share: float = 0.4  # of the peak, when reading prompts
    bandwidth_share: float = 0.7  # of the peak, when decoding


A100 = Gpu("A100-80GB", 312.0, 2.039, 80.0)
H100 = Gpu("H100-SXM", 989.0, 3.35, 80.0)
GPU_SIZES_GB = (24.0, 40.0, 80.0)
"""Memory of the GPUs one would pick from (RTX 4090, A100-40GB, A100/H100-80GB)."""

#: Parameters (billions) of the paper's models, from their model cards.
MODEL_PARAMS_B: Mapping[str, float] = {
    "L-7B": 6.74,
    "F-7B": 7.22,
    "M-7B": 7.24,
    "L-8B": 8.03,
    "D-8B": 8.03,
    "G-7B": 8.54,
    "L-13B": 13.0,
    "Q-14B": 14.7,
}


@dataclass(frozen=True)
class Workload:
    """What one question costs in model passes (our pipeline's defaults)."""

    prompt_copies: int = 13  # 10 samples + greedy + p(True) + ask-for-confidence
    decode_steps: int = 96  # at most 32 new tokens in each of 3 sequential generate calls
    memory_headroom: float = 1.2  # weights x this must fit: key-value cache and activations
    short_prompt_tokens: int = 200  # closed-book few-shot prompt
    long_prompt_tokens: int = 700  # few-shot prompt with a passage (CoQA, SQuAD)


def seconds_per_question(params_b: float, prompt_tokens: int, gpu: Gpu, w: Workload = Workload()) -> float:
    """Estimated seconds per question: reading the prompt copies (compute-bound) plus decoding (bandwidth-bound).

    Reading costs ``2 * params * tokens`` FLOPs per copy; each decoding step reads every weight (bf16, 2 bytes).
    """
    prefill = 2 * params_b * 1e9 * prompt_tokens * w.prompt_copies / (gpu.bf16_tflops * 1e12 * gpu.compute_share)
    decode = w.decode_steps * 2 * params_b * 1e9 / (gpu.bandwidth_tbs * 1e12 * gpu.bandwidth_share)
    return prefill + decode


def cost_estimate(models: Sequence[Sequence[str]], questions: int, w: Workload = Workload()) -> pd.DataFrame:
    """Planning estimate per group of models: weights, the smallest GPU that holds them, seconds per
    question on an A100 and an H100 (short to long prompts) and hours for ``questions`` questions on an A100.

    Computed from :data:`MODEL_PARAMS_B`, :class:`Gpu` and :class:`Workload`; nothing here is measured.
    """
    rows = []
    for group in models:
        params = [MODEL_PARAMS_B[m] for m in group]
        gb = [2 * p for p in params]
        fits = next(s for s in GPU_SIZES_GB if max(gb) * w.memory_headroom <= s)
        a_lo = min(seconds_per_question(p, w.short_prompt_tokens, A100, w) for p in params)
        a_hi = max(seconds_per_question(p, w.long_prompt_tokens, A100, w) for p in params)
        h_lo = min(seconds_per_question(p, w.short_prompt_tokens, H100, w) for p in params)
        h_hi = max(seconds_per_question(p, w.long_prompt_tokens, H100, w) for p in params)
        rows.append(
            {
                "models": ", ".join(reported.MODELS[m] for m in group),
                "weights": f"{min(gb):.1f}–{max(gb):.1f}" if min(gb) != max(gb) else f"{gb[0]:.1f}",
                "gpu_gb": fits,
                "a100_s": f"{a_lo:.1f}–{a_hi:.1f}",
                "h100_s": f"{h_lo:.1f}–{h_hi:.1f}",
                "a100_h": f"{a_lo * questions / 3600:.1f}–{a_hi * questions / 3600:.1f}",
            }
        )
    return pd.DataFrame(rows)


def cost_estimate_html(models: Sequence[Sequence[str]], questions: int) -> Html:
    """:func:`cost_estimate` for readers."""
    cols = [
        Col("models", "Models (bf16)"),
        Col("weights", "Weights (GB)", decimals=1),
        Col("gpu_gb", "Smallest GPU (GB)", decimals=0),
        Col("a100_s", "A100 (s per question)", decimals=1),
        Col("h100_s", "H100 (s per question)", decimals=1),
        Col("a100_h", f"A100 hours, {questions} questions", decimals=1),
    ]
    caption = (
        "Estimate, not measured: computed by <code>shapley.companion.tables.cost_estimate</code> from parameter "
        "counts, published GPU peaks and the assumed shares of them (ranges: closed-book to passage prompts)."
    )
    return html_table(cost_estimate(models, questions), cols, caption=caption)
