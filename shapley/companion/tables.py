"""The book's tables: the paper's reported numbers beside our measured ones, and what each run was.

:func:`comparison_table` interleaves the paper's Tables 3-4 (:mod:`shapley.companion.reported`) with our
measured AUROCs; :func:`measured_table` aligns our method names to the paper's column labels;
:func:`beta_ablation`, :func:`n_sweep` and :func:`provenance_table` read run directories for the results
chapter, and :func:`load_benchmark` the benchmark files.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from pandas.io.formats.style import Styler

from shapley.companion import reported
from shapley.pipeline.evaluate import load_metrics, load_skipped, runs_table
from shapley.pipeline.settings import REPO_ROOT
from shapley.pipeline.store import read_config, read_record

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


def load_benchmark(path: str | os.PathLike[str]) -> tuple[dict[str, Any], pd.DataFrame]:
    """Read a benchmark JSON written by ``benchmarks/*.py``: (metadata without rows, rows as a DataFrame)."""
    meta = json.loads(Path(path).read_text())
    rows = meta.pop("rows", [])
    return meta, pd.DataFrame(rows)


#: Why a (dataset, method) cell of the paper's tables has no measurement here, when no run exists.


NO_RUN_REASONS: dict[str, str] = {
    "wmt14": "no WMT-14 data offline here (loader tested on a fixture)",
}


def _cell(auroc: float, lo: float, hi: float) -> str:
    if any(map(math.isnan, (auroc, lo, hi))):
        return f"{auroc:.3f}"
    return f"{auroc:.3f} [{lo:.2f}, {hi:.2f}]"


def comparison_table(table: int, run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """The paper's Table 3 or 4 with our measured rows interleaved, one row per (dataset, model, source).

    Reported rows come from :mod:`shapley.companion.reported`. Each measured row carries "AUROC [95% CI]" per
    method, or the reason the cell is empty (method skipped in the run, or no run for the dataset). Columns:
    Dataset, Model, Source ("reported" or "measured"), one per method of the table, Entailment, Run.
    """
    if table not in (3, 4):
        raise ValueError(f"table must be 3 or 4; got {table!r}")
    methods = list(reported.TABLE3_METHODS if table == 3 else reported.TABLE4_METHODS)
    paper_rows = reported.table3() if table == 3 else reported.table4()
    measured = measured_table(run_dirs)
    rows: list[dict[str, Any]] = []
    for dataset in dict.fromkeys(paper_rows["dataset"]):
        name = reported.DATASETS.get(dataset, dataset)
        rep = paper_rows[paper_rows["dataset"] == dataset]
        for model, g in rep.groupby("model", sort=False):
            vals = dict(zip(g["method"], g["auroc"], strict=True))
            rows.append(
                {
                    "Dataset": name,
                    "Model": reported.MODELS.get(model, model),
                    "Source": "reported",
                    **{m: f"{vals[m]:.3f}" for m in methods},
                    "Entailment": "DeBERTa-large-MNLI (paper)",
                    "Run": f"arXiv {reported.ARXIV_ID}, Table {table}",
                }
            )
        mine = measured[measured["dataset"] == dataset]
        if mine.empty:
            reason = NO_RUN_REASONS.get(dataset, "no finished run for this dataset yet")
            rows.append(
                {
                    "Dataset": name,
                    "Model": "-",
                    "Source": "measured",
                    **dict.fromkeys(methods, "n/a"),
                    "Entailment": "-",
                    "Run": f"not measured: {reason}",
                }
            )
            continue
        for run_dir, g in mine.groupby("run_dir", sort=True):
            skipped = load_skipped(run_dir)
            why = dict(zip(skipped["method"], skipped["reason"], strict=True)) if len(skipped) else {}
            got = {
                r["method"]: _cell(r["auroc"], r["lo"], r["hi"])
                if not math.isnan(r["auroc"])
                else "undefined (one correctness class)"
                for _, r in g.iterrows()
            }
            cells = {}
            for m in methods:
                ours = PAPER_ALIASES.get(m, m)
                cells[m] = got.get(m) or (f"skipped ({why[ours]})" if ours in why else "not computed in this run")
            stand_in = bool(g["entailment_is_stand_in"].iloc[0])
            ent = str(g["entailment"].iloc[0]) + (" (stand-in, not NLI)" if stand_in else "")
            rows.append(
                {
                    "Dataset": name,
                    "Model": str(g["model"].iloc[0]),
                    "Source": "measured",
                    **cells,
                    "Entailment": ent,
                    "Run": _relative(run_dir),
                }
            )
    return pd.DataFrame(rows)


def _relative(path: str | os.PathLike[str]) -> str:
    p = Path(path).resolve()
    try:
        return str(p.relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def style_comparison(df: pd.DataFrame) -> Styler:
    """A pandas Styler that gives every cell its row's ``Source`` ("reported" / "measured") as CSS class."""
    classes = pd.DataFrame([[src] * df.shape[1] for src in df["Source"]], index=df.index, columns=df.columns)
    return df.style.hide(axis="index").set_td_classes(classes)


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


def n_sweep(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """AUROC per method across runs that differ in the number of samples (``RunConfig.n_samples``)."""
    frames = []
    for d in run_dirs:
        f = load_metrics(d)
        f.insert(0, "n_samples", read_config(d).n_samples)
        f["run_dir"] = _relative(d)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def discover_runs(root: str | os.PathLike[str]) -> list[Path]:
    """Run directories under ``root`` (any depth) that have finished their metrics stage, sorted."""
    return sorted(p.parent for p in Path(root).rglob("metrics.csv") if (p.parent / "config.json").exists())


def provenance_table(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """One row per run: where it is, the command that produced it, and what it covered."""
    rows = []
    for d in run_dirs:
        cfg = read_config(d)
        prov = (read_record(d) or {}).get("provenance", {})
        m = load_metrics(d)
        git = prov.get("git") or {}
        rows.append(
            {
                "run": _relative(d),
                "dataset": cfg.data.dataset,
                "model": cfg.model,
                "entailment": cfg.entailment.backend,
                "questions": int(m["n_questions"].max()) if "n_questions" in m and len(m) else None,
                "samples": cfg.n_samples,
                "accuracy": float(m["accuracy"].iloc[0]) if len(m) else math.nan,
                "git commit": (git.get("commit") or "")[:10] + (" (dirty)" if git.get("dirty") else ""),
                "created": prov.get("created", "")[:16],
                "command": prov.get("command_line", ""),
            }
        )
    return pd.DataFrame(rows)
