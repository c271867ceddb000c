"""Paired comparisons: each run's ``comparisons.csv``, counted and shown for readers.

Significance is DeLong's paired test for correlated AUROCs, Holm-adjusted within each run (the deterministic
test: it cannot depend on a bootstrap seed). The run decides each comparison's outcome once
(:func:`shapley.pipeline.evaluate.comparisons.compare_methods`: ``delong_p_holm`` and ``outcome``) and the book
reads it as written. The bootstrap gives the intervals only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from shapley.companion.provenance import StrPath, relative_path
from shapley.pipeline.evaluate.comparisons import COMPARISON_COLUMNS, OUTCOMES


def load_comparisons(run_dirs: Sequence[StrPath]) -> pd.DataFrame:
    """The ``comparisons.csv`` of every run that has one (columns :data:`~shapley.pipeline.evaluate.comparisons.
    COMPARISON_COLUMNS`, as the run wrote them), stacked, with a ``run`` column (empty if none)."""
    frames = [
        pd.read_csv(Path(d) / "comparisons.csv").assign(run=relative_path(d))
        for d in run_dirs
        if (Path(d) / "comparisons.csv").exists()
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*COMPARISON_COLUMNS, "run"])


def outcome_counts(comparisons: pd.DataFrame) -> dict[str, int]:
    """How many comparisons of ``comparisons.csv`` rows are ``win``, ``tie``, ``loss`` and ``undefined`` (no
    AUROC difference: one correctness class), over all runs; keys in that order."""
    return {k: int((comparisons["outcome"] == k).sum()) for k in OUTCOMES}
