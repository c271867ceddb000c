"""Tables of the LM-Polygraph cross-check for book/integrations (``results/crosscheck/``, written by
``scripts/crosscheck_lm_polygraph.py`` during ``make results``).

Both tables fit the text column: a run is named by its last folder (``minilm_n10``) and LM-Polygraph's
estimator class by a short name; the full names stay in the CSVs. A missing CSV gives a sentence that says
which file is missing and which command writes it, never an empty table.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from shapley.companion.htmltable import Col, Html, code, html_table, pinned_scroll, short_labels

#: The LM-Polygraph estimator each of our methods was compared with, by its class name.
PEER_CLASS = {
    "EigValLaplacian_NLI_score_entail": "EigValLaplacian",
    "DegMat_NLI_score_entail": "DegMat",
    "Eccentricity_NLI_score_entail": "Eccentricity",
    "KernelLanguageEntropy": "KernelLanguageEntropy",
    "Shap_beta0.5_nearest": "ours, as an Estimator",
}


def _missing(path: Path, what: str) -> Html:
    where = code(path.as_posix())
    return Html(f"<p>{what} <strong>not computed</strong>: {where} is missing (<code>make results</code>).</p>")


def _short(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    labels = short_labels(frame[column].astype(str).tolist())
    peers = frame["peer"].fillna("").astype(str)
    short_peers = peers.map(lambda p: PEER_CLASS.get(p, p))
    return frame.assign(**{column: frame[column].astype(str).map(labels)}, peer=short_peers)


def differences_html(results_dir: str | os.PathLike[str]) -> Html:
    """Largest absolute difference between LM-Polygraph's estimators and ours, per source and method.

    Reads ``<results_dir>/crosscheck/lm_polygraph.csv``; float64 and float32 inputs in two columns, and the
    Spearman correlation of the two score vectors.
    """
    path = Path(results_dir) / "crosscheck" / "lm_polygraph.csv"
    if not path.is_file():
        return _missing(path, "Cross-check")
    table = _short(pd.read_csv(path), "source")
    cols = [
        Col("source", "source"),
        Col("method", "method"),
        Col("peer", "LM-Polygraph"),
        Col("n_matrices", "matrices", decimals=0),
        Col("max_abs_diff", "max |diff|", fmt=".1e"),
        Col("max_abs_diff_float32", "max |diff|, float32", fmt=".1e"),
        Col("spearman", "Spearman", decimals=4),
        Col("max_abs_diff_vs_committed", "max |diff|, vs committed", fmt=".1e"),
    ]
    caption = (
        f"Largest absolute difference of scores, ours against LM-Polygraph's ({code(path.name)}; float64 "
        "matrices, and the float32 matrices LM-Polygraph itself builds); last column: our recomputation against "
        "the committed scores (blank for the random matrices)."
    )
    return pinned_scroll(html_table(table, cols, caption=caption))


def uemanager_html(results_dir: str | os.PathLike[str]) -> Html:
    """AUROC and PRR of an LM-Polygraph ``UEManager`` run beside ours, per method.

    Reads ``<results_dir>/crosscheck/uemanager_triviaqa.csv``.
    """
    path = Path(results_dir) / "crosscheck" / "uemanager_triviaqa.csv"
    if not path.is_file():
        return _missing(path, "UEManager run")
    table = _short(pd.read_csv(path), "run")
    cols = [
        Col("run", "run"),
        Col("method", "method"),
        Col("n_questions", "questions", decimals=0),
        Col("auroc_lm_polygraph", "AUROC, LM-Polygraph", decimals=4),
        Col("auroc_ours", "AUROC, ours", decimals=4),
        Col("prr_lm_polygraph", "PRR area, LM-Polygraph", decimals=4),
        Col("prr_normalized_lm_polygraph", "normalised PRR, LM-Polygraph", decimals=4),
        Col("prr_ours", "PRR, ours", decimals=4),
    ]
    caption = f"LM-Polygraph's <code>UEManager</code> metrics beside ours ({code(path.name)})."
    return pinned_scroll(html_table(table, cols, caption=caption))
