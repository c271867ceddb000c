"""Metrics over a run's scores, and tables across runs.

Per run (written by the pipelines, see :mod:`shapley.runs`):

* ``scores.csv``: one row per question: ``id, correct, correctness_value, correctness_metric, answer``, one
  column per method (empty where the method was skipped for that question, and on ER's training half),
  then the diagnostics (``shap_psd_repaired``, ``shap_min_eig``, ``n_clusters``, ...).
* ``metrics.csv``: one row per *computed* method, columns exactly :data:`METRICS_COLUMNS` followed by
  :data:`EXTRA_COLUMNS`. ``n`` is the number of questions the method was evaluated on (a method skipped on
  some questions is evaluated on the others; ER on its held-out half) and ``accuracy`` the share of correct
  answers among those n. AUROC is ``shapley.metrics.auroc`` (P(an incorrect answer is more uncertain than a
  correct one)); ``auroc_lo``/``auroc_hi`` its percentile bootstrap interval (``n_boot`` resamples,
  95 %, seeded with the run's seed). ``+-inf`` scores (e.g. ``Shap`` of a singular R) are ranked at the
  extremes (replaced by min - 1 / max + 1 of the finite scores, which leaves every rank-based metric
  unchanged). ``note`` explains anything unusual.
* ``skipped.csv``: methods that were not computed on some or all questions: ``method, n_skipped,
  n_questions, reason`` (most frequent reason first). A method skipped everywhere appears *only* here, never
  as a row of NaNs in ``metrics.csv``.

Across runs: :func:`runs_table`, :func:`measured_table` (aligned to the paper's Tables 3-4) and
:func:`report` (``python -m shapley report DIR...``); :func:`beta_table` recomputes Table 5's beta ablation
from a run's stored entailment matrices.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from shapley import score as _score

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from shapley.runs import RunDir

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
EXTRA_COLUMNS: tuple[str, ...] = ("note", "entailment_is_stand_in", "n_questions", "n_skipped")
SKIPPED_COLUMNS: tuple[str, ...] = ("method", "n_skipped", "n_questions", "reason")
MEASURED_COLUMNS: tuple[str, ...] = ("dataset", "method", "auroc", "lo", "hi", "model", "entailment", "run_dir")

PAPER_ALIASES: dict[str, str] = {"SU": "SE", "NE": "LNE"}
"""Paper column label -> our method, where they differ. Table 3's ``SU`` is semantic entropy; Table 4's
``NE`` ("naive entropy" of Farquhar et al. 2024) is the length-normalised predictive entropy (as in
``shapley.paper.METHODS``). Every other paper label is our method name."""

PAPER_METHODS: tuple[str, ...] = ("MaxL", "AvgL", "MaxE", "AvgE", "SU", "A4C", "SE", "DSE", "NE", "P(T)", "ER", "Shap")

TABLE5_BETAS: tuple[float, ...] = (
    0.1,
    0.2,
    0.3,
    0.4,
    0.42,
    0.44,
    0.46,
    0.48,
    0.5,
    0.52,
    0.54,
    0.56,
    0.58,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
)


def _pd() -> Any:
    import pandas as pd

    return pd


# --------------------------------------------------------------------------------------------------
# Per-run tables


def scores_frame(records: Sequence[Mapping[str, Any]], methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Flat DataFrame of stored score records (one row per question, see the module docstring)."""
    names = list(_score.METHODS) if methods is None else list(methods)
    diag_keys: list[str] = sorted({k for r in records for k in r.get("diagnostics", {})})
    rows = []
    for r in records:
        row: dict[str, Any] = {
            "id": str(r["id"]),
            "correct": bool(r["correct"]),
            "correctness_value": r.get("correctness_value"),
            "correctness_metric": r.get("correctness_metric"),
            "answer": r.get("answer"),
        }
        for m in names:
            v = r["scores"].get(m)
            row[m] = math.nan if v is None else float(v)
        for k in diag_keys:
            row[k] = r.get("diagnostics", {}).get(k)
        rows.append(row)
    cols = ["id", "correct", "correctness_value", "correctness_metric", "answer", *names, *diag_keys]
    return _pd().DataFrame(rows, columns=cols)


def _rankable(u: np.ndarray) -> tuple[np.ndarray, int]:
    """Replace +-inf by max+1 / min-1 of the finite values (rank-preserving); returns (array, n_inf)."""
    u = np.asarray(u, dtype=np.float64).copy()
    inf = np.isinf(u)
    if inf.any():
        fin = u[~inf]
        lo, hi = (float(fin.min()), float(fin.max())) if fin.size else (0.0, 0.0)
        u[np.isneginf(u)] = lo - 1.0
        u[np.isposinf(u)] = hi + 1.0
    return u, int(inf.sum())


def method_metrics(
    uncertainty: Sequence[float] | np.ndarray,
    correct: Sequence[bool] | np.ndarray,
    *,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict[str, Any]:
    """AUROC with bootstrap CI, AUARC, PRR, n and accuracy of one method (NaN scores must be removed)."""
    from shapley import metrics as M

    u, n_inf = _rankable(np.asarray(uncertainty, dtype=np.float64))
    c = np.asarray(correct, dtype=bool)
    notes = []
    if n_inf:
        notes.append(f"{n_inf} infinite score(s) ranked at the extremes")
    if c.all() or not c.any():
        notes.append("one correctness class only: AUROC and PRR undefined")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        auroc = M.auroc(u, c)
        lo, hi = M.bootstrap_ci(M.auroc, u, c, n_boot=n_boot, alpha=alpha, seed=seed)
        out = {
            "auroc": auroc,
            "auroc_lo": lo,
            "auroc_hi": hi,
            "auarc": M.auarc(u, c),
            "prr": M.prr(u, c),
            "n": int(u.size),
            "accuracy": float(c.mean()),
        }
    out["note"] = "; ".join(notes)
    return out


def compute_metrics(
    scores: pd.DataFrame,
    *,
    methods: Sequence[str],
    skipped: Mapping[str, Counter[str]] | None = None,
    labels: Mapping[str, Any] | None = None,
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
    notes: Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(metrics, skipped) tables for the method columns of ``scores`` (a :func:`scores_frame`).

    ``skipped``: method -> Counter of reasons over questions; ``labels``: model, entailment, dataset,
    entailment_is_stand_in; ``notes``: extra per-method notes.
    """
    pd = _pd()
    labels = dict(labels or {})
    skipped = skipped or {}
    n_q = len(scores)
    rows, srows = [], []
    correct = scores["correct"].to_numpy(dtype=bool)
    for m in methods:
        reasons = skipped.get(m, Counter())
        n_sk = int(sum(reasons.values()))
        if n_sk:
            srows.append(
                {
                    "method": m,
                    "n_skipped": n_sk,
                    "n_questions": n_q,
                    "reason": "; ".join(f"{why} ({k})" for why, k in reasons.most_common()),
                }
            )
        u = scores[m].to_numpy(dtype=np.float64) if m in scores else np.full(n_q, np.nan)
        ok = ~np.isnan(u)
        if not ok.any():
            if not n_sk:
                srows.append({"method": m, "n_skipped": n_q, "n_questions": n_q, "reason": "no scores"})
            continue
        r = method_metrics(u[ok], correct[ok], n_boot=n_boot, alpha=alpha, seed=seed)
        note = [x for x in ((notes or {}).get(m, ""), r.pop("note")) if x]
        if n_sk:
            note.append(f"skipped on {n_sk} of {n_q} questions (see skipped.csv)")
        rows.append(
            {
                "method": m,
                **r,
                "model": labels.get("model"),
                "entailment": labels.get("entailment"),
                "dataset": labels.get("dataset"),
                "note": "; ".join(note),
                "entailment_is_stand_in": labels.get("entailment_is_stand_in"),
                "n_questions": n_q,
                "n_skipped": n_sk,
            }
        )
    metrics = pd.DataFrame(rows, columns=[*METRICS_COLUMNS, *EXTRA_COLUMNS])
    return metrics, pd.DataFrame(srows, columns=list(SKIPPED_COLUMNS))


def _run_labels(config: Mapping[str, Any]) -> dict[str, Any]:
    s, prov = config["settings"], config.get("provenance", {})
    ent = prov.get("entailment") or {}
    is_nli = ent.get("is_nli")
    return {
        "model": s.get("model"),
        "entailment": s.get("entailment"),
        "dataset": s.get("dataset"),
        "entailment_is_stand_in": None if is_nli is None else (not is_nli),
    }


def write_run_outputs(
    run: RunDir | str | os.PathLike[str],
    ids: Sequence[str] | None = None,
    *,
    embeddings: Mapping[str, Sequence[float]] | None = None,
) -> Path:
    """Write ``scores.csv``, ``metrics.csv``, ``skipped.csv`` of a run (for ``ids``; default: all stored).

    ``embeddings`` (id -> vector) enables ``ER`` (fit on a seeded half, see
    :func:`shapley.score.embedding_regression_scores`). Returns the run directory.
    """
    from shapley.runs import STAGE_FILES, JsonlStore, RunDir, atomic_write_text

    if isinstance(run, RunDir):
        path, config = run.path, run.config
        recs = run.store("scores").records
    else:
        path = Path(run)
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        st = JsonlStore(path / STAGE_FILES["scores"])
        recs = st.load(repair=False)
    settings = config["settings"]
    ids = list(recs) if ids is None else [str(i) for i in ids]
    missing = [i for i in ids if i not in recs]
    if missing:
        raise ValueError(f"{path}: no stored scores for {len(missing)} question(s), e.g. {missing[:3]}")
    records = [recs[i] for i in ids]
    methods = list(settings.get("methods") or _score.DEFAULT_METHODS)
    df = scores_frame(records, methods)
    skipped: dict[str, Counter[str]] = {m: Counter() for m in methods}
    for r in records:
        for m, why in r["skipped"].items():
            if m in skipped:
                skipped[m][why] += 1
    notes: dict[str, str] = {}
    if "Shap" in methods and "shap_psd_repaired" in df:
        k = int(df["shap_psd_repaired"].fillna(False).astype(bool).sum())
        if k:
            notes["Shap"] = f"R not PSD and repaired (psd_policy={settings.get('psd_policy')}) on {k} question(s)"
    if "ER" in methods:
        have = [i for i in ids if embeddings is not None and i in embeddings]
        for i in ids:
            if embeddings is None or i not in embeddings:
                skipped["ER"]["missing input: embeddings"] += 1
        if have:
            rows = [ids.index(i) for i in have]
            try:
                er = _score.embedding_regression_scores(
                    np.asarray([embeddings[i] for i in have], dtype=np.float64),  # type: ignore[index]
                    df["correct"].to_numpy(dtype=bool)[rows],
                    seed=int(settings.get("seed", 0)),
                )
                df.loc[rows, "ER"] = er
                n_test = int((~np.isnan(er)).sum())
                notes["ER"] = f"fitted on {len(er) - n_test} questions, evaluated on the other {n_test}"
            except ValueError as exc:
                skipped["ER"][f"error: {exc}"] += len(have)
    metrics, skipped_df = compute_metrics(
        df,
        methods=methods,
        skipped=skipped,
        labels=_run_labels(config),
        n_boot=int(settings.get("n_boot", 1000)),
        seed=int(settings.get("seed", 0)),
        notes=notes,
    )
    atomic_write_text(path / "scores.csv", df.to_csv(index=False))
    atomic_write_text(path / "metrics.csv", metrics.to_csv(index=False))
    atomic_write_text(path / "skipped.csv", skipped_df.to_csv(index=False))
    return path


# --------------------------------------------------------------------------------------------------
# Loaders


def _read_config(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    f = Path(run_dir) / "config.json"
    if not f.is_file():
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.json)")
    return json.loads(f.read_text(encoding="utf-8"))


def load_metrics(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """A run's ``metrics.csv`` as a DataFrame."""
    f = Path(run_dir) / "metrics.csv"
    if not f.is_file():
        raise FileNotFoundError(f"{run_dir}: no metrics.csv (the run has not finished its metrics stage)")
    return _pd().read_csv(f, keep_default_na=True, dtype={"note": str}).fillna({"note": ""})


def load_scores(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """A run's per-question scores: ``scores.csv`` if written, else built from ``scores.jsonl``."""
    f = Path(run_dir) / "scores.csv"
    if f.is_file():
        return _pd().read_csv(f, dtype={"id": str})
    from shapley.runs import STAGE_FILES, JsonlStore

    recs = JsonlStore(Path(run_dir) / STAGE_FILES["scores"]).load(repair=False)
    cfg = _read_config(run_dir)
    return scores_frame(list(recs.values()), cfg["settings"].get("methods"))


def load_skipped(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """A run's ``skipped.csv`` (empty frame with :data:`SKIPPED_COLUMNS` if absent)."""
    f = Path(run_dir) / "skipped.csv"
    if not f.is_file():
        return _pd().DataFrame(columns=list(SKIPPED_COLUMNS))
    return _pd().read_csv(f)


def runs_table(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """All runs' metrics stacked, with ``run_dir``, ``beta``, ``n_samples`` and ``seed`` columns appended."""
    pd = _pd()
    frames = []
    for d in run_dirs:
        df = load_metrics(d)
        s = _read_config(d)["settings"]
        df["run_dir"] = str(d)
        df["beta"] = s.get("beta")
        df["n_samples"] = s.get("n_samples")
        df["seed"] = s.get("seed")
        frames.append(df)
    if not frames:
        return pd.DataFrame(columns=[*METRICS_COLUMNS, *EXTRA_COLUMNS, "run_dir", "beta", "n_samples", "seed"])
    return pd.concat(frames, ignore_index=True)


def measured_table(run_dirs: Sequence[str | os.PathLike[str]], *, all_methods: bool = False) -> pd.DataFrame:
    """Measured AUROCs in the layout of the paper's reported tables (``shapley.paper.reported_auroc``).

    Columns :data:`MEASURED_COLUMNS` plus ``our_method`` and ``entailment_is_stand_in``. ``method`` is the
    paper's label (:data:`PAPER_ALIASES`: ``SU`` and ``SE`` both come from our ``SE``, ``NE`` from ``LNE``);
    with ``all_methods`` our other methods are included under their own names.
    """
    pd = _pd()
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


# --------------------------------------------------------------------------------------------------
# Cross-run report


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, (float, np.floating)):
        return f"{v:.{digits}f}"
    return str(v)


def markdown_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured markdown table (no extra dependency); floats to ``digits`` decimals."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v, digits).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines)


def report(run_dirs: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str] | None = None) -> str:
    """Markdown report across runs: a wide AUROC table (rows: dataset / model / entailment / run, columns:
    methods) and the tidy table with CIs. With ``output`` (``.md``) the markdown is written there and the
    tidy table to the same name with ``.csv``. Returns the markdown."""
    t = runs_table(run_dirs)
    if t.empty:
        raise ValueError("no metrics found in the given run directories")
    t = t.copy()
    t["run"] = [Path(d).name for d in t["run_dir"]]
    order = [m for m in _score.METHODS if m in set(t["method"])]
    wide = t.pivot_table(
        index=["dataset", "model", "entailment", "run"], columns="method", values="auroc", aggfunc="first"
    )
    wide = wide[[m for m in order if m in wide.columns]].reset_index()
    t["auroc [95% CI]"] = [
        f"{_fmt(a)} [{_fmt(lo)}, {_fmt(hi)}]"
        for a, lo, hi in zip(t["auroc"], t["auroc_lo"], t["auroc_hi"], strict=True)
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
    md = "\n\n".join(
        [
            "# AUROC across runs",
            "Higher is better: P(an incorrect answer is more uncertain than a correct one).",
            markdown_table(wide),
            "## All metrics",
            markdown_table(t[tidy_cols]),
        ]
    )
    md += "\n"
    if output is not None:
        from shapley.runs import atomic_write_text

        out = Path(output)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out, md)
        atomic_write_text(out.with_suffix(".csv"), t.drop(columns=["auroc [95% CI]", "run"]).to_csv(index=False))
    return md


# --------------------------------------------------------------------------------------------------
# Table 5: beta ablation from stored entailment matrices


def beta_table(
    run_dir: str | os.PathLike[str],
    betas: Sequence[float] = TABLE5_BETAS,
    *,
    psd_policy: str | None = None,
    n_boot: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Recompute ``Shap`` for each beta from a run's ``entailment.jsonl`` and its correctness labels.

    Returns ``(summary, per_question)``: summary has one row per beta with ``beta, auroc, auroc_lo,
    auroc_hi, n, n_not_psd, n_repaired, min_eig_min`` (CI only when ``n_boot > 0``); per_question has
    ``id, beta, Shap, psd, min_eig, repaired``. ``psd_policy`` defaults to the run's.
    """
    from shapley.runs import STAGE_FILES, JsonlStore

    pd = _pd()
    cfg = _read_config(run_dir)
    policy = psd_policy or cfg["settings"].get("psd_policy", _score.DEFAULT_PSD_POLICY)
    ent = JsonlStore(Path(run_dir) / STAGE_FILES["entailment"]).load(repair=False)
    sc = JsonlStore(Path(run_dir) / STAGE_FILES["scores"]).load(repair=False)
    ids = [i for i in sc if i in ent]
    if not ids:
        raise ValueError(f"{run_dir}: no questions with both entailment and scores")
    rows = []
    for i in ids:
        for d in _score.beta_sweep(np.asarray(ent[i]["entail"], dtype=np.float64), betas, psd_policy=policy):
            rows.append({"id": i, **d})
    per_q = pd.DataFrame(rows, columns=["id", "beta", "Shap", "psd", "min_eig", "repaired"])
    correct = {i: bool(sc[i]["correct"]) for i in ids}
    summary = []
    seed = int(cfg["settings"].get("seed", 0))
    for b, g in per_q.groupby("beta", sort=True):
        g = g[~g["Shap"].isna()]
        c = np.array([correct[i] for i in g["id"]], dtype=bool)
        row: dict[str, Any] = {"beta": float(b)}
        if len(g):
            r = method_metrics(g["Shap"].to_numpy(), c, n_boot=max(1, n_boot), seed=seed)
            row.update(
                auroc=r["auroc"],
                auroc_lo=r["auroc_lo"] if n_boot else math.nan,
                auroc_hi=r["auroc_hi"] if n_boot else math.nan,
            )
        else:
            row.update(auroc=math.nan, auroc_lo=math.nan, auroc_hi=math.nan)
        all_b = per_q[per_q["beta"] == b]
        row.update(
            n=int(len(g)),
            n_not_psd=int((~all_b["psd"].astype(bool)).sum()),
            n_repaired=int(all_b["repaired"].astype(bool).sum()),
            min_eig_min=float(all_b["min_eig"].min()),
        )
        summary.append(row)
    return pd.DataFrame(summary), per_q


def load_benchmark(path: str | os.PathLike[str]) -> tuple[dict[str, Any], pd.DataFrame]:
    """Read a benchmark JSON written by ``benchmarks/*.py``: (metadata without rows, rows as a DataFrame)."""
    meta = json.loads(Path(path).read_text())
    rows = meta.pop("rows", [])
    return meta, _pd().DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# Reported beside measured: the book's tables


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

    Reported rows come from :mod:`shapley.paper`. Each measured row carries "AUROC [95% CI]" per method, or the
    reason the cell is empty (method skipped in the run, or no run for the dataset). Columns: Dataset, Model,
    Source ("reported" or "measured"), one per method of the table, Entailment, Run.
    """
    from shapley import paper

    pd = _pd()
    if table not in (3, 4):
        raise ValueError(f"table must be 3 or 4; got {table!r}")
    methods = list(paper.TABLE3_METHODS if table == 3 else paper.TABLE4_METHODS)
    reported = paper.table3() if table == 3 else paper.table4()
    measured = measured_table(run_dirs)
    rows: list[dict[str, Any]] = []
    for dataset in dict.fromkeys(reported["dataset"]):
        name = paper.DATASETS.get(dataset, dataset)
        rep = reported[reported["dataset"] == dataset]
        for model, g in rep.groupby("model", sort=False):
            vals = dict(zip(g["method"], g["auroc"], strict=True))
            rows.append({"Dataset": name, "Model": paper.MODELS.get(model, model), "Source": "reported",
                         **{m: f"{vals[m]:.3f}" for m in methods}, "Entailment": "DeBERTa-large-MNLI (paper)",
                         "Run": f"arXiv {paper.ARXIV_ID}, Table {table}"})
        mine = measured[measured["dataset"] == dataset]
        if mine.empty:
            reason = NO_RUN_REASONS.get(dataset, "no finished run for this dataset yet")
            rows.append({"Dataset": name, "Model": "-", "Source": "measured", **dict.fromkeys(methods, "n/a"),
                         "Entailment": "-", "Run": f"not measured: {reason}"})
            continue
        for run_dir, g in mine.groupby("run_dir", sort=True):
            skipped = load_skipped(run_dir)
            why = dict(zip(skipped["method"], skipped["reason"], strict=True)) if len(skipped) else {}
            got = {r["method"]: _cell(r["auroc"], r["lo"], r["hi"]) if not math.isnan(r["auroc"])
                   else "undefined (one correctness class)" for _, r in g.iterrows()}
            cells = {}
            for m in methods:
                ours = PAPER_ALIASES.get(m, m)
                cells[m] = got.get(m) or (f"skipped ({why[ours]})" if ours in why else "not computed in this run")
            stand_in = bool(g["entailment_is_stand_in"].iloc[0])
            ent = str(g["entailment"].iloc[0]) + (" (stand-in, not NLI)" if stand_in else "")
            rows.append({"Dataset": name, "Model": str(g["model"].iloc[0]), "Source": "measured", **cells,
                         "Entailment": ent, "Run": _relative(run_dir)})
    return pd.DataFrame(rows)


def _relative(path: str | os.PathLike[str]) -> str:
    p = Path(path).resolve()
    try:
        return str(p.relative_to(Path(__file__).resolve().parent.parent))
    except ValueError:
        return str(p)


def style_comparison(df: pd.DataFrame):
    """A pandas Styler that gives every cell its row's ``Source`` ("reported" / "measured") as CSS class."""
    pd = _pd()
    classes = pd.DataFrame([[src] * df.shape[1] for src in df["Source"]], index=df.index, columns=df.columns)
    return df.style.hide(axis="index").set_td_classes(classes)


def beta_ablation(run_dirs: Mapping[str, str | os.PathLike[str]]) -> pd.DataFrame:
    """Measured Table 5: each run's ``beta_sweep.csv`` stacked, labelled by the mapping's key.

    Columns: source, beta, auroc, auroc_lo, auroc_hi, n, n_not_psd, frac_not_psd, min_eig_min, run_dir.
    """
    pd = _pd()
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
    """AUROC per method across runs that differ in the number of samples (``settings.n_samples``)."""
    pd = _pd()
    frames = []
    for d in run_dirs:
        f = load_metrics(d)
        f.insert(0, "n_samples", int(_read_config(d)["settings"]["n_samples"]))
        f["run_dir"] = _relative(d)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def discover_runs(root: str | os.PathLike[str]) -> list[Path]:
    """Run directories under ``root`` (any depth) that have finished their metrics stage, sorted."""
    return sorted(p.parent for p in Path(root).rglob("metrics.csv") if (p.parent / "config.json").exists())


def provenance_table(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """One row per run: where it is, the command that produced it, and what it covered."""
    pd = _pd()
    rows = []
    for d in run_dirs:
        cfg = _read_config(d)
        s, prov = cfg["settings"], cfg.get("provenance", {})
        m = load_metrics(d)
        git = prov.get("git") or {}
        rows.append({
            "run": _relative(d),
            "dataset": s.get("dataset"),
            "model": s.get("model"),
            "entailment": s.get("entailment"),
            "questions": int(m["n_questions"].max()) if "n_questions" in m and len(m) else None,
            "samples": s.get("n_samples"),
            "accuracy": float(m["accuracy"].iloc[0]) if len(m) else math.nan,
            "git commit": (git.get("commit") or "")[:10] + (" (dirty)" if git.get("dirty") else ""),
            "created": prov.get("created", "")[:16],
            "command": prov.get("command_line", ""),
        })
    return pd.DataFrame(rows)
