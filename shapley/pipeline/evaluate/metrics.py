"""Metrics over a run's scores (``scores.csv``, ``metrics.csv``, ``skipped.csv``) and tables across runs.

Per run (written at the end of both pipelines, :mod:`shapley.pipeline.experiment.pipelines`):

* ``scores.csv``: one row per question: ``id, correct, correctness_value, correctness_metric, answer``, one
  column per method (empty where the method was skipped for that question, and on ER's training half),
  then the diagnostics (``shap_psd_repaired``, ``shap_min_eig``, ``n_clusters``, ...).
* ``metrics.csv``: one row per *computed* method, columns exactly :data:`METRICS_COLUMNS` followed by
  :data:`EXTRA_COLUMNS`. ``n`` is the number of questions the method was evaluated on (a method skipped on
  some questions is evaluated on the others; ER on its held-out half) and ``accuracy`` the share of correct
  answers among those n. AUROC is :func:`shapley.core.metrics.auroc` (P(an incorrect answer is more uncertain
  than a correct one)); ``auroc_lo``/``auroc_hi`` its percentile bootstrap interval (95 %, seeded with the run's
  seed; :func:`shapley.core.metrics.bootstrap_interval`: from the run's ``n_boot`` resamples, at least
  :data:`shapley.core.metrics.MIN_BOOT`, doubled until each end's Monte-Carlo standard error
  ``auroc_lo_mcse``/``auroc_hi_mcse`` is at most :data:`shapley.core.metrics.MCSE_TARGET`, at most
  :data:`shapley.core.metrics.MAX_BOOT`; ``n_boot`` says how many). Scores are rounded to 12 significant
  digits before ranking (:func:`shapley.core.metrics.round_scores`). ``+-inf`` scores (e.g. ``Shap`` of a
  singular R) are ranked at the extremes (replaced by min - 1 / max + 1 of the finite scores, which leaves
  every rank-based metric unchanged). ``note`` explains anything unusual.
* ``skipped.csv``: methods that were not computed on some or all questions: ``method, n_skipped,
  n_questions, reason`` (most frequent reason first). A method skipped everywhere appears *only* here, never
  as a row of NaNs in ``metrics.csv``.
* ``comparisons.csv``: is the difference significant: each method against ``Shap``, DeLong's paired test
  (:mod:`shapley.pipeline.evaluate.comparisons`).
* ``derived.json``: the stage-file content each derived file was computed from
  (:mod:`shapley.pipeline.rundir.derived`; :func:`shapley.pipeline.rundir.derived.stale_outputs`).

Ids in CSV files: every CSV output with an ``id`` column is written and read back exactly by
:mod:`shapley.pipeline.rundir.csvfiles`.

Across runs: :func:`shapley.pipeline.evaluate.report.runs_table` and :func:`shapley.pipeline.evaluate.report.report`
(``python -m shapley report DIR...``); :func:`beta_table` recomputes Table 5's beta ablation
from a run's stored entailment matrices and :func:`write_beta_sweep` writes it (``beta_sweep.csv``).
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from shapley.core import metrics, validate
from shapley.pipeline.config import BETA_SWEEP_GRID, RunConfig
from shapley.pipeline.evaluate.comparisons import compare_methods, mcse_note, rankable
from shapley.pipeline.evaluate.report import EXTRA_COLUMNS, METRICS_COLUMNS, ONE_CLASS
from shapley.pipeline.rundir import derived
from shapley.pipeline.rundir.csvfiles import csv_text, read_csv_ids
from shapley.pipeline.rundir.jsonl import STAGE_FILES, JsonlStore
from shapley.pipeline.rundir.store import RunDir, lock_run_dir, read_config, read_record
from shapley.pipeline.score import scores as _score
from shapley.results.records import write_files

SKIPPED_COLUMNS: tuple[str, ...] = ("method", "n_skipped", "n_questions", "reason")
#: what ``metrics.csv`` says of the run on every row (:func:`compute_metrics`'s ``labels``)
LABELS: tuple[str, ...] = ("model", "entailment", "dataset", "entailment_is_stand_in")


#: the betas of the paper's Table 5, the default grid of the beta sweep (declared in :mod:`shapley.pipeline.config`)
TABLE5_BETAS: tuple[float, ...] = BETA_SWEEP_GRID


def _label(value: Any, qid: Any) -> bool:
    """A stored correctness label: a boolean, or the number 0 or 1 (``ValueError`` naming the question else)."""
    if isinstance(value, bool | np.bool_) or (isinstance(value, int | float) and value in (0, 1)):
        return bool(value)
    raise ValueError(f"the stored record of question {qid!r}: 'correct' must be a boolean or 0/1; got {value!r}")


def scores_frame(records: Sequence[Mapping[str, Any]], methods: Sequence[str]) -> pd.DataFrame:
    """Flat DataFrame of stored score records (one row per question, see the module docstring), one column per
    method of ``methods``."""
    copied = ("correctness_value", "correctness_metric", "answer")  # stored fields written as they are
    diag_keys: list[str] = sorted({k for r in records for k in r.get("diagnostics", {})})
    rows = []
    for r in records:
        row: dict[str, Any] = {"id": str(r["id"]), "correct": _label(r.get("correct"), r["id"])}
        row.update({k: r.get(k) for k in copied})
        for m in methods:
            v = r["scores"].get(m)
            row[m] = math.nan if v is None else float(v)
        row.update({k: r.get("diagnostics", {}).get(k) for k in diag_keys})
        rows.append(row)
    return pd.DataFrame(rows, columns=["id", "correct", *copied, *methods, *diag_keys])


def method_metrics(
    uncertainty: Sequence[float] | np.ndarray,
    correct: Sequence[bool] | np.ndarray,
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """AUROC with bootstrap CI (and its ends' MC errors, resamples drawn), AUARC, PRR, n and accuracy of one
    method (NaN scores must be removed; ``n_boot``: the resamples to start from, at least
    :data:`shapley.core.metrics.MIN_BOOT`)."""
    u, n_inf = rankable(np.asarray(uncertainty, dtype=np.float64))
    c = validate.label_vector(correct, "correct")  # booleans or 0/1, never cast ("yes" or 0.5 is refused)
    notes = []
    if n_inf:
        notes.append(f"{n_inf} infinite score(s) ranked at the extremes")
    if c.all() or not c.any():
        notes.append(f"{ONE_CLASS} only: AUROC and PRR undefined")
    with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
        ci = metrics.bootstrap_interval(metrics.auroc, u, c, n_boot=max(int(n_boot), metrics.MIN_BOOT), seed=seed)
        return {
            "auroc": metrics.auroc(u, c),
            "auroc_lo": ci.lo,
            "auroc_hi": ci.hi,
            "auarc": metrics.auarc(u, c),
            "prr": metrics.prr(u, c),
            "n": int(u.size),
            "accuracy": float(c.mean()),
            "auroc_lo_mcse": ci.lo_mcse,
            "auroc_hi_mcse": ci.hi_mcse,
            "n_boot": ci.n_boot,
            "note": "; ".join(n for n in (*notes, mcse_note(ci)) if n),
        }


def compute_metrics(
    scores: pd.DataFrame,
    *,
    methods: Sequence[str],
    skipped: Mapping[str, Counter[str]],
    labels: Mapping[str, Any],
    n_boot: int = 1000,
    seed: int = 0,
    notes: Mapping[str, str],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(metrics, skipped) tables for the method columns of ``scores`` (a :func:`scores_frame`: a column for each of
    ``methods``).

    ``skipped``: method -> Counter of reasons over questions; ``labels``: the :data:`LABELS` (others are
    ignored); ``notes``: extra per-method notes.
    """
    labels = {k: labels.get(k) for k in LABELS}
    n_q = len(scores)
    rows, srows = [], []
    correct = scores["correct"].to_numpy(dtype=bool)
    for m in methods:
        reasons = skipped.get(m, Counter())
        n_sk = int(sum(reasons.values()))
        if n_sk:  # a row of SKIPPED_COLUMNS
            srows.append((m, n_sk, n_q, "; ".join(f"{why} ({k})" for why, k in reasons.most_common())))
        u = scores[m].to_numpy(dtype=np.float64)
        ok = ~np.isnan(u)
        if not ok.any():
            if not n_sk:
                srows.append((m, n_q, n_q, "no scores"))
            continue
        r = method_metrics(u[ok], correct[ok], n_boot=n_boot, seed=seed)
        note = [x for x in (notes.get(m, ""), r.pop("note")) if x]
        if n_sk:
            note.append(f"skipped on {n_sk} of {n_q} questions (see skipped.csv)")
        rows.append({"method": m, **r, **labels, "note": "; ".join(note), "n_questions": n_q, "n_skipped": n_sk})
    metrics = pd.DataFrame(rows, columns=[*METRICS_COLUMNS, *EXTRA_COLUMNS])
    return metrics, pd.DataFrame(srows, columns=list(SKIPPED_COLUMNS))


def _run_labels(config: RunConfig, record: Mapping[str, Any]) -> dict[str, Any]:
    ent = record.get("provenance", {}).get("entailment") or {}
    is_nli = ent.get("is_nli")
    return {
        "model": config.model,
        "entailment": config.entailment.backend,
        "dataset": config.data.dataset,
        "entailment_is_stand_in": None if is_nli is None else (not is_nli),
    }


@contextlib.contextmanager
def run_lock(run: RunDir | str | os.PathLike[str]) -> Any:
    """Hold the lock of a run directory while its derived files and ``derived.json`` are read, computed and
    written: an open :class:`RunDir` holds it already; a path is locked here (``RuntimeError`` "in use" when
    another process holds it, e.g. a resume extending the run)."""
    if isinstance(run, RunDir):
        yield
        return
    path = Path(run)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} is not a run directory (no config.json)")
    fd = lock_run_dir(path)
    try:
        yield
    finally:
        os.close(fd)


def _embedding_regression(
    df: pd.DataFrame,
    ids: Sequence[str],
    embeddings: Mapping[str, Sequence[float]] | None,
    seed: int,
    skipped: dict[str, Counter[str]],
) -> str:
    """Fill ``df["ER"]`` (fit on a seeded half of the questions with embeddings); returns the metrics note."""
    vectors = embeddings or {}
    have = [i for i in ids if i in vectors]
    if len(have) < len(ids):
        skipped["ER"]["missing input: embeddings"] += len(ids) - len(have)
    if not have:
        return ""
    rows = [ids.index(i) for i in have]
    try:
        er = _score.embedding_regression_scores(
            np.asarray([vectors[i] for i in have], dtype=np.float64),
            df["correct"].to_numpy(dtype=bool)[rows],
            seed=seed,
        )
    except ValueError as exc:
        skipped["ER"][_score.skip_reason(exc)] += len(have)
        return ""
    df.loc[rows, "ER"] = er
    n_test = int((~np.isnan(er)).sum())
    return f"fitted on {len(er) - n_test} questions, evaluated on the other {n_test}"


def write_run_outputs(
    run: RunDir | str | os.PathLike[str],
    ids: Sequence[str] | None = None,
    *,
    embeddings: Mapping[str, Sequence[float]] | None = None,
) -> Path:
    """Write ``scores.csv``, ``metrics.csv``, ``skipped.csv`` and ``comparisons.csv`` of a run (for ``ids``;
    default: all stored), in the order of ``ids``.

    ``embeddings`` (id -> vector) enables ``ER`` (fit on a seeded half, see
    :func:`shapley.pipeline.score.scores.embedding_regression_scores`). Returns the run directory.
    """
    with run_lock(run):
        if isinstance(run, RunDir):
            path, config, record, recs = run.path, run.config, run.record, run.store("scores").records
        else:  # a path, locked by run_lock, which found its config.json
            path, stored = Path(run), read_record(run)
            assert stored is not None
            config, record = RunConfig.from_stored(stored), stored
            recs = JsonlStore(path / STAGE_FILES["scores"]).load(repair=False)
        ids = list(recs) if ids is None else [str(i) for i in ids]
        missing = [i for i in ids if i not in recs]
        if missing:
            raise ValueError(f"{path}: no stored scores for {len(missing)} question(s), e.g. {missing[:3]}")
        records = [recs[i] for i in ids]
        methods = list(config.scoring.methods)
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
                notes["Shap"] = f"R not PSD and repaired (psd_policy={config.scoring.psd_policy}) on {k} question(s)"
        if "ER" in methods:
            notes["ER"] = _embedding_regression(df, ids, embeddings, config.seed, skipped)
        metrics, skipped_df = compute_metrics(
            df,
            methods=methods,
            skipped=skipped,
            labels=_run_labels(config, record),
            n_boot=config.scoring.n_boot,
            seed=config.seed,
            notes=notes,
        )
        compared = compare_methods(df, methods=methods, n_boot=config.scoring.n_boot, seed=config.seed)
        texts = {
            "scores.csv": csv_text(df),
            "metrics.csv": csv_text(metrics),
            "skipped.csv": csv_text(skipped_df),
            "comparisons.csv": csv_text(compared),
        }
        for name, text in texts.items():
            write_files({path / name: text})
        derived.record(path, texts, stages=("scores",), ids=ids, read_records={"scores": recs})
        stale = [n for n in derived.stale_outputs(path) if n in derived.SWEEP_OUTPUTS]
        if stale:
            derived.forget(path, list(derived.SWEEP_OUTPUTS))
            warnings.warn(
                f"{path}: removed {', '.join(stale)}: computed from other stage-file content; rerun beta-sweep",
                UserWarning,
                stacklevel=2,
            )
        return path


def load_scores(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """A run's per-question scores, ``scores.csv``."""
    return read_csv_ids(Path(run_dir) / "scores.csv")


def load_skipped(run_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """A run's ``skipped.csv`` (written with ``metrics.csv``: :data:`SKIPPED_COLUMNS`)."""
    return pd.read_csv(Path(run_dir) / "skipped.csv")


def beta_table(
    run_dir: str | os.PathLike[str],
    betas: Sequence[float] = TABLE5_BETAS,
    *,
    n_boot: int = 0,
    stores: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Recompute ``Shap`` for each beta from a run's ``entailment.jsonl`` and its correctness labels.

    Returns ``(summary, per_question)``: summary has one row per beta with ``beta, auroc, auroc_lo,
    auroc_hi, n, n_not_psd, n_repaired, min_eig_min`` (CI only when ``n_boot > 0``); per_question has
    ``id, beta, Shap, psd, min_eig, repaired``, under the run's ``psd_policy``. ``n_boot``: 0 (no
    interval) or the resamples to start from, raised to :data:`shapley.core.metrics.MIN_BOOT` as everywhere in
    a run (the interval is never drawn from fewer; it comes with ``auroc_lo_mcse``, ``auroc_hi_mcse`` and the
    resamples drawn, ``n_boot``). ``stores``: the (entailment, scores) records, when the caller read them.
    """
    cfg = read_config(run_dir)
    policy = cfg.scoring.psd_policy
    ent, sc = stores if stores is not None else _sweep_stores(run_dir)
    # the questions the run's outputs describe, in their order: those scores.csv was computed for (as recorded in
    # derived.json; a resume with a smaller --limit describes fewer than it stores), else (no outputs yet) all stored
    described = (derived.read(run_dir) or {}).get("files", {}).get("scores.csv", {})
    ids = [i for i in described.get("ids") or sc if i in ent]
    if not ids:
        raise ValueError(f"{run_dir}: no questions with both entailment and scores")
    rows = []
    for i in ids:
        for d in _score.beta_sweep(np.asarray(ent[i]["entail"], dtype=np.float64), betas, psd_policy=policy):
            rows.append({"id": i, **d})
    per_q = pd.DataFrame(rows, columns=["id", "beta", "Shap", "psd", "min_eig", "repaired"])
    correct = {i: _label(sc[i].get("correct"), i) for i in ids}
    interval = ("auroc_lo", "auroc_hi", "auroc_lo_mcse", "auroc_hi_mcse")
    summary = []
    for b, at_beta in per_q.groupby("beta", sort=True):
        scored = at_beta[~at_beta["Shap"].isna()]
        c = np.array([correct[i] for i in scored["id"]], dtype=bool)
        row: dict[str, Any] = {"beta": float(b)}  # type: ignore[arg-type]
        row.update(auroc=math.nan, **dict.fromkeys(interval, math.nan), n_boot=0)
        if len(scored) and n_boot:
            r = method_metrics(scored["Shap"].to_numpy(), c, n_boot=n_boot, seed=cfg.seed)
            row.update({k: r[k] for k in ("auroc", *interval, "n_boot")})
        elif len(scored):
            with warnings.catch_warnings(action="ignore", category=RuntimeWarning):
                row["auroc"] = metrics.auroc(rankable(scored["Shap"].to_numpy())[0], c)
        row.update(
            n=int(len(scored)),
            n_not_psd=int((~at_beta["psd"].astype(bool)).sum()),
            n_repaired=int(at_beta["repaired"].astype(bool).sum()),
            min_eig_min=float(at_beta["min_eig"].min()),
        )
        summary.append(row)
    columns = ["beta", "auroc", *interval, "n_boot", "n", "n_not_psd", "n_repaired", "min_eig_min"]
    return pd.DataFrame(summary, columns=columns), per_q


def _sweep_stores(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The (entailment, scores) records a beta sweep reads."""
    return tuple(JsonlStore(Path(run_dir) / STAGE_FILES[s]).load(repair=False) for s in ("entailment", "scores"))  # type: ignore[return-value]


def write_beta_sweep(
    run_dir: str | os.PathLike[str], betas: Sequence[float] = TABLE5_BETAS, *, n_boot: int = 0
) -> tuple[pd.DataFrame, list[Path]]:
    """:func:`beta_table` written to the run directory (:data:`shapley.pipeline.rundir.derived.SWEEP_OUTPUTS`: the
    summary, ``beta_sweep.csv``, and the per-question table) and recorded in ``derived.json``
    (:mod:`shapley.pipeline.rundir.derived`), so that a later change of the stage files marks them stale and the next
    metrics stage removes them. Returns (summary, paths written).

    The whole sweep (reading, computing, writing and recording) holds the run's lock (:func:`run_lock`: "in use"
    while a resume extends the run), and ``derived.json`` records the digest of the records that were read."""
    with run_lock(run_dir):
        ent, sc = _sweep_stores(run_dir)
        summary, per_q = beta_table(run_dir, betas, n_boot=n_boot, stores=(ent, sc))
        ids = per_q["id"].unique().tolist()  # in their order
        texts = dict(zip(derived.SWEEP_OUTPUTS, [csv_text(summary), csv_text(per_q)], strict=True))
        paths = [Path(run_dir) / name for name in texts]
        for f, text in zip(paths, texts.values(), strict=True):
            write_files({f: text})  # a failure names the output, not the temporary file written first
        # psd_policy None: the run's own (the key is kept so that a sweep records the args the committed ones do)
        args = {"betas": [float(b) for b in betas], "psd_policy": None, "n_boot": int(n_boot)}
        read = {"entailment": ent, "scores": sc}
        derived.record(run_dir, texts, stages=("entailment", "scores"), ids=ids, args=args, read_records=read)
        return summary, paths
