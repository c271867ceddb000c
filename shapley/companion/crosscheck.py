"""Tables and records of the LM-Polygraph cross-check for book/integrations (``results/crosscheck/``, written by
``scripts/crosscheck_lm_polygraph.py`` during ``make results``).

* :data:`RECORD`: what determines the three files (the run files and the script they are computed from, the
  pinned LM-Polygraph environment, the package code the script imports), so that the page says it is stale when
  one of them changes (:func:`shapley.companion.htmltable.record_status_html`).
* :func:`ecc_gap`: why LM-Polygraph's AUROC of Ecc differs from ours, pair by pair, computed by the script (it
  needs LM-Polygraph's per-question scores) and stored in ``freshness.json``; :func:`ecc_gap_text` glues it.
* :func:`differences_html`, :func:`uemanager_html`: the two tables, which fit the text column (a run is named by
  its last folder in a heading row, LM-Polygraph's estimator class by a short name; the full names stay in the
  CSVs). A missing CSV gives a sentence that says which file is missing and which command writes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from shapley.companion.htmltable import Html, code, esc, show, titled, word_list
from shapley.core import validate
from shapley.core.ranks import SCORE_DIGITS, round_scores
from shapley.results import records

#: The command that writes ``results/crosscheck`` (``make results`` runs it).
COMMAND = ".venv-lm-polygraph/bin/python scripts/crosscheck_lm_polygraph.py --out results/crosscheck"
#: The script, and the pinned LM-Polygraph environment it runs in (paths relative to the repository root).
SCRIPT, ENVIRONMENT = "scripts/crosscheck_lm_polygraph.py", "constraints-lm-polygraph.txt"
#: The committed runs whose matrices are cross-checked (their compact stage files, under the results folder).
RUN_FILES = "triviaqa_llama13b/*/stages.jsonl.gz"
#: The run the ``UEManager`` replays, beside its ``metrics.csv``, and the one whose ``config.json`` holds the
#: SHA-256 of the samples file it reads (the script refuses a samples file with another digest).
MANAGER_RUN = "triviaqa_llama13b/minilm_n10"
#: The three files the script writes, all together.
OUTPUTS = ("lm_polygraph.csv", "uemanager_triviaqa.csv", "freshness.json")


def run_files(results: Path) -> list[str]:
    """The committed stage files the cross-check reads, as paths under the results folder ``results``."""
    return sorted(p.relative_to(results).as_posix() for p in results.glob(RUN_FILES))


def inputs(results: Path) -> list[str]:
    """Every file the cross-check's numbers depend on besides the package code, as paths under ``results``:
    the run files, the ``UEManager`` run's metrics and config (the samples file's digest), the script and the
    pinned LM-Polygraph environment (these two one folder up, in the repository)."""
    manager = [f"{MANAGER_RUN}/{name}" for name in ("metrics.csv", "config.json")]
    return [*run_files(results), *manager, f"../{SCRIPT}", f"../{ENVIRONMENT}"]


def _written_by_the_script(settings: Mapping[str, Any], results: Path) -> dict[str, Any]:
    raise RuntimeError(f"the cross-check needs LM-Polygraph: run {COMMAND}")


RECORD = records.PageRecord(
    path="crosscheck/freshness.json",
    module="scripts.crosscheck_lm_polygraph",
    compute=_written_by_the_script,
    summary=lambda record: f"{len(record['freshness']['inputs'])} inputs",
    inputs=inputs,
    check=records.has_keys(versions=dict, commit=str),
    command=COMMAND,
)
"""The cross-check's freshness record. The script writes it (:meth:`~shapley.results.records.PageRecord.text`),
with the freshness block of the inputs as it read them; the page reads it with the reasons it is stale
(:meth:`~shapley.results.records.PageRecord.read`)."""


def _pair_wins(u: np.ndarray, incorrect: np.ndarray) -> np.ndarray:
    """(n_incorrect, n_correct): 1 where the incorrect answer is the more uncertain, 1/2 for a tie, else 0."""
    a, b = u[incorrect][:, None], u[~incorrect][None, :]
    return (a > b) + 0.5 * (a == b)


def ecc_gap(peer: ArrayLike, ours: ArrayLike, incorrect: ArrayLike, identical: ArrayLike) -> dict[str, Any]:
    """Why LM-Polygraph's AUROC of a score differs from ours, counted over the (incorrect, correct) pairs.

    Our AUROC ranks the scores rounded to :data:`~shapley.core.ranks.SCORE_DIGITS` significant digits, so that
    round-off never orders scores equal in exact arithmetic; LM-Polygraph ranks the raw floats.

    Args:
        peer: (m,) LM-Polygraph's scores. ours: (m,) our float64 scores, unrounded. incorrect: (m,) booleans.
        identical: (m,) booleans, True for a question whose answers all entail each other with P = 1.

    Returns:
        ``pairs``; ``auroc_peer``, ``auroc_ours`` (rounded scores), ``auroc_unrounded``; ``gap_pairs``, the AUROC
        difference peer - ours times ``pairs`` (a tie counts 1/2); ``differing_pairs``, the pairs whose outcome
        differs, ``differing_tied`` of them tied by our rounding and ``differing_identical`` between two
        identical questions; ``tied_pairs``, the pairs our rounding ties, ``tied_identical`` of them between
        two of the ``identical_questions``, and the rounded values of the other tied groups (``tied_values``);
        ``unrounded_gain_pairs``, what ordering ours by the raw floats moves our AUROC, in pairs.

    Examples:
        >>> gap = ecc_gap([1.0 + 2e-16, 1.0], [1.0, 1.0 + 2e-16], [True, False], [False, False])
        >>> gap["auroc_peer"], gap["auroc_ours"], gap["auroc_unrounded"], gap["tied_values"]
        (1.0, 0.5, 0.0, [1.0])
    """
    p, u = validate.vector(peer, "peer"), validate.vector(ours, "ours")
    y, same = validate.label_vector(incorrect, "incorrect"), validate.label_vector(identical, "identical")
    if not p.shape == u.shape == y.shape == same.shape:
        raise ValueError(f"peer, ours, incorrect, identical must have one length; got {p.size, u.size, y.size}")
    rounded = round_scores(u)
    wins_peer, wins_ours, wins_raw = (_pair_wins(s, y) for s in (p, rounded, u))
    tied = rounded[y][:, None] == rounded[~y][None, :]
    both_identical = same[y][:, None] & same[~y][None, :]
    differ = wins_peer != wins_ours
    return {
        "pairs": int(tied.size),
        "auroc_peer": float(wins_peer.mean()),
        "auroc_ours": float(wins_ours.mean()),
        "auroc_unrounded": float(wins_raw.mean()),
        "gap_pairs": float(wins_peer.sum() - wins_ours.sum()),
        "differing_pairs": int(differ.sum()),
        "differing_tied": int((differ & tied).sum()),
        "differing_identical": int((differ & both_identical).sum()),
        "tied_pairs": int(tied.sum()),
        "identical_questions": int(same.sum()),
        "tied_identical": int((tied & both_identical).sum()),
        "tied_values": sorted(set(rounded[y][(tied & ~both_identical).any(axis=1)].tolist())),
        "unrounded_gain_pairs": float(wins_raw.sum() - wins_ours.sum()),
    }


def _root_label(value: float) -> str:
    """``value`` as ``√k`` when its square is the integer k up to :data:`SCORE_DIGITS` digits, else as is.

    >>> _root_label(1.41421356237), _root_label(3.0), _root_label(0.7)
    ('√2', '3', '0.7')
    """
    k = round(value * value)
    if k == 0 or abs(value * value - k) > 10.0 ** (1 - SCORE_DIGITS) * k:
        return f"{value:g}"
    root = round(k**0.5)
    return str(root) if root * root == k else f"√{k}"


#: The keys :func:`ecc_gap_text` returns, which the page glues.
GAP_TEXT_KEYS = (
    *("pairs", "auroc_peer", "auroc_ours", "auroc_unrounded", "gap_pairs", "differing_pairs", "differing_tied"),
    *("differing_identical", "tied_pairs", "identical_questions", "tied_identical", "tied_others", "tied_values"),
    *("unrounded_gain_pairs", "score_digits"),
)


def ecc_gap_text(results_dir: str | os.PathLike[str]) -> dict[str, str]:
    """The numbers of :func:`ecc_gap` as the page glues them, by :data:`GAP_TEXT_KEYS` (``n/a`` each when
    ``freshness.json`` lacks them)."""
    gap: Any = (RECORD.read(results_dir)[0] or {}).get("ecc_auroc_gap")
    try:
        text = {k: f"{v:.5f}" if k.startswith("auroc") else f"{v:,g}" for k, v in gap.items() if k != "tied_values"}
        text |= {
            "tied_others": f"{gap['tied_pairs'] - gap['tied_identical']:,}",
            "tied_values": word_list([_root_label(v) for v in gap["tied_values"]]),
            "unrounded_gain_pairs": f"{gap['unrounded_gain_pairs']:+,g}",
            "score_digits": str(SCORE_DIGITS),
        }
    except (AttributeError, KeyError, TypeError, ValueError):  # no gap, or an ill-typed one
        return dict.fromkeys(GAP_TEXT_KEYS, "n/a")
    return {k: text.get(k, "n/a") for k in GAP_TEXT_KEYS}


#: LM-Polygraph's estimator compared with each of our methods, by its name there.
PEER_CLASS = {
    "EigValLaplacian_NLI_score_entail": "EigValLaplacian",
    "DegMat_NLI_score_entail": "DegMat",
    "Eccentricity_NLI_score_entail": "Eccentricity",
    "KernelLanguageEntropy": "KernelLanguageEntropy",
    "Shap_beta0.5_nearest": "ours, as an Estimator",
}


def _crosscheck_table(
    results_dir: str | os.PathLike[str],
    name: str,
    group: tuple[str, str, str],
    headers: dict[str, str],
    formats: dict[str, str],
    caption: str,
) -> Html:
    """``<results_dir>/crosscheck/<name>`` under one heading row per run (``group``: its column, the column of its
    count and what the count counts), peers shortened, columns renamed by ``headers`` and their numbers in
    ``formats`` (by header); a sentence naming the missing file when it is absent."""
    path = Path(results_dir) / "crosscheck" / name
    if not path.is_file():
        where = code(path.as_posix())
        return Html(
            f"<p>{esc(name)} <strong>not computed</strong>: {where} is missing (<code>make results</code>).</p>"
        )
    frame = pd.read_csv(path)
    peers = frame["peer"].fillna("").astype(str).map(lambda p: PEER_CLASS.get(p, p))
    frame = frame.assign(peer=peers, method=frame["method"].astype(str).str.replace("_", " "))
    run, count, what = group
    parts, classes = [], []
    for key, part in frame.groupby(run, sort=False):
        folder = str(key).split("/")[-1]  # a run is named by its last folder
        heading = dict.fromkeys(headers, "") | {"method": f"{folder}: {int(part[count].iloc[0])} {what}"}
        parts += [pd.DataFrame([heading]), part[list(headers)]]
        classes += ["group"] + [""] * len(part)
    table = pd.concat(parts, ignore_index=True).rename(columns=headers)
    return show(titled(table, caption, formats=formats, rows=classes))


def differences_html(results_dir: str | os.PathLike[str]) -> Html:
    """Largest absolute difference between LM-Polygraph's estimators and ours, per source and method.

    Reads ``<results_dir>/crosscheck/lm_polygraph.csv``; float64 and float32 inputs in two columns, the Spearman
    correlation of the two score vectors, and our recomputation against the committed scores.
    """
    headers = {
        "method": "method",
        "peer": "LM-Polygraph",
        "max_abs_diff": "max |diff|",
        "max_abs_diff_float32": "float32",
        "spearman": "Spearman",
        "max_abs_diff_vs_committed": "vs committed",
    }
    caption = (
        "Measured: largest absolute difference of scores, ours against LM-Polygraph's "
        "(`results/crosscheck/lm_polygraph.csv`), under a heading row per source (a run under "
        f"`results/{RUN_FILES.split('/')[0]}/`, or seeded random matrices): on float64 matrices, and on "
        "the float32 matrices LM-Polygraph itself builds; the Spearman correlation of the two; last column: our "
        "recomputation against the committed scores (blank for the random matrices)."
    )
    formats = {"max |diff|": ".1e", "float32": ".1e", "Spearman": ".4f", "vs committed": ".1e"}
    return _crosscheck_table(
        results_dir, "lm_polygraph.csv", ("source", "n_matrices", "matrices"), headers, formats, caption
    )


def uemanager_html(results_dir: str | os.PathLike[str]) -> Html:
    """AUROC and PRR of an LM-Polygraph ``UEManager`` run beside ours, per method.

    Reads ``<results_dir>/crosscheck/uemanager_triviaqa.csv``.
    """
    headers = {
        "method": "method",
        "auroc_lm_polygraph": "AUROC, LM-Polygraph",
        "auroc_ours": "AUROC, ours",
        "prr_lm_polygraph": "PRR area, LM-Polygraph",
        "prr_normalized_lm_polygraph": "normalised PRR, LM-Polygraph",
        "prr_ours": "PRR, ours",
    }
    caption = (
        "Measured: LM-Polygraph's `UEManager` metrics beside ours "
        "(`results/crosscheck/uemanager_triviaqa.csv`), under a heading row per run (the run "
        f"`results/{MANAGER_RUN}`)."
    )
    formats = dict.fromkeys(list(headers.values())[1:], ".4f")
    return _crosscheck_table(
        results_dir, "uemanager_triviaqa.csv", ("run", "n_questions", "questions"), headers, formats, caption
    )
