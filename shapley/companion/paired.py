"""Paired comparisons: each run's ``comparisons.csv``, counted and shown for readers.

Significance is DeLong's paired test for correlated AUROCs, Holm-adjusted within each run (the deterministic
test: it cannot depend on a bootstrap seed). The run decides each comparison's outcome once
(:func:`shapley.pipeline.evaluate.comparisons.compare_methods`: ``delong_p_holm`` and ``outcome``) and the book
reads it as written. The bootstrap gives the intervals only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from shapley.companion.provenance import relative_path
from shapley.pipeline.evaluate.comparisons import OUTCOMES

COMPARISON_COLUMNS = ("method", "reference", "delta_auroc", "lo", "hi", "delong_p_holm", "outcome")
"""Columns the book needs in every ``comparisons.csv`` (other columns are kept as read): ``delong_p_holm``, the
Holm-adjusted DeLong p-value, and the ``outcome`` it decides (:data:`OUTCOMES`)."""


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
    """The ``comparisons.csv`` of every run that has one, stacked, with a ``run`` column (empty if none)."""
    return _read_csvs(run_dirs, "comparisons.csv", COMPARISON_COLUMNS)


def outcome_counts(comparisons: pd.DataFrame) -> dict[str, int]:
    """How many comparisons of ``comparisons.csv`` rows are ``win``, ``tie``, ``loss`` and ``undefined`` (no
    AUROC difference: one correctness class), over all runs; keys in that order."""
    return {k: int((comparisons["outcome"] == k).sum()) for k in OUTCOMES}
