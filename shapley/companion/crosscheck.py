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


def _crosscheck_table(
    results_dir: str | os.PathLike[str], name: str, what: str, run_column: str, cols: list[Col], caption: str
) -> Html:
    """``<results_dir>/crosscheck/<name>`` with runs (``run_column``) and peers shortened, in a scroll box; a
    sentence naming the missing file when it is absent."""
    path = Path(results_dir) / "crosscheck" / name
    if not path.is_file():
        where = code(path.as_posix())
        return Html(f"<p>{what} <strong>not computed</strong>: {where} is missing (<code>make results</code>).</p>")
    frame = pd.read_csv(path)
    labels = short_labels(frame[run_column].astype(str).tolist())
    peers = frame["peer"].fillna("").astype(str).map(lambda p: PEER_CLASS.get(p, p))
    table = frame.assign(**{run_column: frame[run_column].astype(str).map(labels)}, peer=peers)
    return pinned_scroll(html_table(table, cols, caption=caption))


def differences_html(results_dir: str | os.PathLike[str]) -> Html:
    """Largest absolute difference between LM-Polygraph's estimators and ours, per source and method.

    Reads ``<results_dir>/crosscheck/lm_polygraph.csv``; float64 and float32 inputs in two columns, and the
    Spearman correlation of the two score vectors.
    """
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
        "Largest absolute difference of scores, ours against LM-Polygraph's (<code>lm_polygraph.csv</code>; float64 "
        "matrices, and the float32 matrices LM-Polygraph itself builds); last column: our recomputation against "
        "the committed scores (blank for the random matrices)."
    )
    return _crosscheck_table(results_dir, "lm_polygraph.csv", "Cross-check", "source", cols, caption)


def uemanager_html(results_dir: str | os.PathLike[str]) -> Html:
    """AUROC and PRR of an LM-Polygraph ``UEManager`` run beside ours, per method.

    Reads ``<results_dir>/crosscheck/uemanager_triviaqa.csv``.
    """
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
    caption = "LM-Polygraph's <code>UEManager</code> metrics beside ours (<code>uemanager_triviaqa.csv</code>)."
    return _crosscheck_table(results_dir, "uemanager_triviaqa.csv", "UEManager run", "run", cols, caption)
