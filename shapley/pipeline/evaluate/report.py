"""Tables across runs: every run's ``metrics.csv`` stacked (:func:`runs_table`) and the markdown report
(:func:`report`, ``python -m shapley report DIR...``).

Every string that reaches a markdown table (labels from the command line, notes from files) is escaped for a
table cell (:func:`markdown_cell`): ``|``, ``&``, ``<``, ``>`` and line breaks cannot end a cell, start a row or
open raw HTML. ``report`` refuses a run whose ``metrics.csv`` is stale (:mod:`shapley.pipeline.rundir.derived`).
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shapley.pipeline.rundir import derived
from shapley.pipeline.rundir.csvfiles import csv_text, read_csv_ids
from shapley.pipeline.rundir.store import read_config
from shapley.pipeline.score import scores as _score
from shapley.results.records import write_files

METRICS_COLUMNS: tuple[str, ...] = (
    "method",
    "auroc",
    "auroc_lo",
    "auroc_hi",
    "auarc",
    "prr",
    "n",
    "accuracy",
    "model",
    "entailment",
    "dataset",
)
"""The first columns of ``metrics.csv`` (see :mod:`shapley.pipeline.evaluate.metrics`)."""

EXTRA_COLUMNS: tuple[str, ...] = (
    "note",
    "entailment_is_stand_in",
    "n_questions",
    "n_skipped",
    "auroc_lo_mcse",
    "auroc_hi_mcse",
    "n_boot",
)
"""The other columns of ``metrics.csv``, after :data:`METRICS_COLUMNS`."""

#: what a ``note`` of ``metrics.csv`` says where AUROC is undefined: every answer is correct, or none
ONE_CLASS = "one correctness class"
#: a report's cell where the AUROC is undefined, and where there is none (the method scored no question)
UNDEFINED_AUROC = f"undefined ({ONE_CLASS})"
MISSING = "—"


def load_metrics(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """A run's ``metrics.csv`` as a DataFrame (``FileNotFoundError`` naming it where the run has not finished its
    metrics stage)."""
    # labels (model, entailment, dataset) read back exactly, as strings: "NA" or "1e3" is a label, not a value
    return read_csv_ids(Path(run_dir) / "metrics.csv", keep_default_na=True, dtype={"note": str}).fillna({"note": ""})


def runs_table(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """All runs' metrics stacked (at least one run), with ``run_dir``, ``beta``, ``n_samples`` and ``seed`` columns
    appended."""
    frames = []
    for d in run_dirs:
        cfg = read_config(d)
        frames.append(
            load_metrics(d).assign(run_dir=str(d), beta=cfg.scoring.beta, n_samples=cfg.n_samples, seed=cfg.seed)
        )
    return pd.concat(frames, ignore_index=True)


def markdown_cell(text: str) -> str:
    """``text`` safe inside a markdown table cell: ``&``, ``<``, ``>`` as HTML entities, ``|`` escaped, line
    breaks as spaces.

    >>> markdown_cell("a|b\\n<script>&")
    'a\\\\|b &lt;script&gt;&amp;'
    """
    return re.sub(r"\r\n?|\n", " ", html.escape(text, quote=False).replace("|", "\\|"))


def _fmt(v: Any, digits: int = 3) -> str:
    if pd.isna(v):
        return ""
    if isinstance(v, (float, np.floating)):
        return f"{v:.{digits}f}"
    return str(v)


def markdown_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured markdown table (no extra dependency); floats to ``digits`` decimals; every header and
    cell escaped with :func:`markdown_cell`."""
    cols = [markdown_cell(str(c)) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(markdown_cell(_fmt(v, digits)) for v in row) + " |")
    return "\n".join(lines)


def _no_auroc(note: str) -> str:
    """The report's cell for a method without an AUROC, from its ``note``."""
    return UNDEFINED_AUROC if ONE_CLASS in note else MISSING


def _auroc_text(auroc: float, lo: float, hi: float, note: str) -> str:
    if math.isnan(auroc):
        return _no_auroc(note)
    interval = MISSING if math.isnan(lo) or math.isnan(hi) else f"{_fmt(lo)}, {_fmt(hi)}"
    return f"{_fmt(auroc)} [{interval}]"


def _wide(t: pd.DataFrame) -> pd.DataFrame:
    """One row per run (one-class runs included), one AUROC column per method."""
    index = ["dataset", "model", "entailment", "run"]
    order = [m for m in _score.METHODS if m in set(t["method"])]
    cells = t.assign(cell=[_no_auroc(n) if math.isnan(a) else a for a, n in zip(t["auroc"], t["note"], strict=True)])
    wide = cells.groupby([*index, "run_dir"], sort=False, dropna=False)[["method", "cell"]].apply(
        lambda g: pd.Series(dict(zip(g["method"], g["cell"], strict=True)))
    )
    wide = wide.unstack() if isinstance(wide, pd.Series) else wide
    wide = wide.reindex(columns=order).reset_index().drop(columns="run_dir")
    return wide.astype(object).where(wide.notna(), MISSING)


def run_labels(run_dirs: Sequence[str | os.PathLike[str]]) -> dict[str, str]:
    """Each run directory -> its label in a report: the shortest ending of its path that no other of
    ``run_dirs`` shares (``a/run`` and ``b/run`` -> ``a/run``, ``b/run``; a lone ``x/run`` -> ``run``).

    >>> run_labels(["a/run", "b/run", "c/other"])
    {'a/run': 'a/run', 'b/run': 'b/run', 'c/other': 'other'}
    """
    parts = {str(d): Path(os.path.abspath(d)).parts for d in run_dirs}
    out = {}
    for d, p in parts.items():
        k = 1
        while k < len(p) and any(q[-k:] == p[-k:] for e, q in parts.items() if e != d):
            k += 1
        out[d] = "/".join(p[-k:])
    return out


def report_files(output: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(markdown, CSV) paths that :func:`report` writes for ``output``: the markdown at ``output`` and the CSV
    beside it with ``.csv``; when ``output`` itself ends in ``.csv``, the CSV there and the markdown with ``.md``.
    The two are never the same file."""
    out = Path(output)
    if out.suffix.lower() == ".csv":
        return out.with_suffix(".md"), out
    return out, out.with_suffix(".csv")


def report(run_dirs: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str] | None = None) -> str:
    """Markdown report across runs: a wide AUROC table (rows: dataset / model / entailment / run, every run
    included, columns: methods) and the tidy table with CIs. With ``output`` the markdown and the tidy CSV are
    written to :func:`report_files`. Returns the markdown. Refuses (ValueError naming the file) a run whose
    ``metrics.csv`` is stale; runs whose freshness cannot be checked are listed under the tables."""
    unverified = []
    for d in run_dirs:
        status = derived.derived_status(d, ["metrics.csv"]).get("metrics.csv", "no metrics.csv")
        if status.startswith("stale"):
            raise ValueError(f"{Path(d) / 'metrics.csv'}: {status}; recompute it (resume the run)")
        if status != derived.FRESH:
            unverified.append(f"{d}: {status}")
    t = runs_table(run_dirs)
    if t.empty:
        raise ValueError("no metrics found in the given run directories")
    t["run"] = t["run_dir"].map(run_labels(run_dirs))
    t["auroc [95% CI]"] = [
        _auroc_text(float(a), float(lo), float(hi), str(n))
        for a, lo, hi, n in zip(t["auroc"], t["auroc_lo"], t["auroc_hi"], t["note"], strict=True)
    ]
    tidy_cols = [
        "run",
        "dataset",
        "model",
        "entailment",
        "method",
        "auroc [95% CI]",
        "auarc",
        "prr",
        "n",
        "accuracy",
        "note",
    ]
    parts = [
        "# AUROC across runs",
        "Higher is better: P(an incorrect answer is more uncertain than a correct one).",
        markdown_table(_wide(t)),
        "## All metrics",
        markdown_table(t[tidy_cols]),
    ]
    if unverified:
        parts.append("Not checked against their stage files: " + "; ".join(markdown_cell(u) for u in unverified))
    md = "\n\n".join(parts) + "\n"
    if output is not None:
        md_path, csv_path = report_files(output)
        md_path.parent.mkdir(parents=True, exist_ok=True)
        write_files({md_path: md})
        write_files({csv_path: csv_text(t.drop(columns=["auroc [95% CI]", "run"]))})
    return md
