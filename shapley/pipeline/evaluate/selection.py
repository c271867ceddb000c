"""Which answer to return: how often the answer each strategy picks is correct, and whether one strategy beats
another.

The strategies and the per-question choice are the scoring stage's (:mod:`shapley.pipeline.score.choice`): each
score record stores ``selected`` (strategy -> sample index), ``phi`` (the Shapley values in nats),
``sample_correctness`` (each sample's correctness value under the run's metric) and ``answer_source`` (what the
judged answer is), so that :func:`selection_table` recomputes ``selection.csv`` from stored records alone
(``python -m shapley merge`` does so on the union of shards). ``greedy`` is skipped on questions without a greedy
answer (``score-samples`` without an ``answer`` field), and ``selection.csv`` says so in its ``note``.

Is one strategy more accurate than another? :func:`selection_tests` (``selection_tests.csv``) pairs the two
strategies' answers question by question and applies McNemar's exact test: under "equally accurate", each
question where exactly one of the two is correct is equally likely to favour either, so the count favouring the
first is Binomial(discordant, 1/2); the p-value is two-sided and exact, Holm-adjusted over the run's pairs.
Overlapping or separate bootstrap intervals in ``selection.csv`` say nothing about this paired question.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from shapley.core import metrics
from shapley.pipeline.score import correctness
from shapley.pipeline.score.choice import STRATEGIES

SELECTION_COLUMNS: tuple[str, ...] = ("strategy", "accuracy", "n", "lo", "hi", "lo_mcse", "hi_mcse", "n_boot", "note")

TESTS_FILE = "selection_tests.csv"
TEST_COLUMNS: tuple[str, ...] = (
    "strategy_a",
    "strategy_b",
    "n",
    "accuracy_a",
    "accuracy_b",
    "a_only",
    "b_only",
    "p_mcnemar",
    "p_holm",
    "outcome",
    "note",
)
"""Columns of ``selection_tests.csv`` (see :func:`selection_tests`)."""

SIGNIFICANCE = 0.05
"""A strategy is more accurate than another in a run when the Holm-adjusted McNemar p-value is below this."""


#: the answer sources (:data:`shapley.pipeline.score.choice.ANSWER_SOURCES`) under which the judged answer is a
#: greedy answer, so that its stored ``correct`` is ``greedy``'s
GREEDY_SOURCES = ("greedy", "input")


def _picked(records: Sequence[Mapping[str, Any]], strategy: str, threshold: float) -> list[tuple[str, bool]]:
    """(question id, whether the answer ``strategy`` picks is correct) over the questions where it picks one, in
    the order of ``records``."""
    if strategy == "greedy":
        return [(str(r["id"]), bool(r["correct"])) for r in records if r["answer_source"] in GREEDY_SOURCES]
    picks = ((str(r["id"]), r["sample_correctness"], r["selected"][strategy]) for r in records)
    return [(qid, correctness.exceeds(float(values[k]), threshold)) for qid, values, k in picks if k is not None]


def _note(records: Sequence[Mapping[str, Any]], strategy: str, n: int) -> str:
    """Why ``strategy`` picks an answer on only ``n`` of the questions of ``records`` ("" when it picks one on
    every question)."""
    missing = len(records) - n
    if not missing:
        return ""
    if strategy == "greedy":
        return (
            f"no greedy answer on {missing} of {len(records)} questions: the input gives no 'answer' field "
            "(the judged answer is then the first sample, counted under 'first')"
        )
    note = f"no choice on {missing} of {len(records)} questions"
    if strategy == "min_phi":
        why = Counter(str(r.get("phi_note") or "") for r in records if r.get("phi") is None)
        note += "".join(f"; {k} ({v})" for k, v in why.most_common() if k)
    return note


def selection_table(
    records: Sequence[Mapping[str, Any]], *, threshold: float, n_boot: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """``selection.csv``: per strategy, the accuracy of the answers it picks, over ``n`` questions, with a
    percentile bootstrap interval ``[lo, hi]`` of the questions, seeded, the Monte-Carlo standard errors of its
    ends ``lo_mcse``/``hi_mcse`` and the resamples drawn ``n_boot``
    (:func:`shapley.core.metrics.bootstrap_interval`, starting from ``n_boot``, at least
    :data:`shapley.core.metrics.MIN_BOOT`). Intervals only: compare strategies with :func:`selection_tests`.

    A sample counts as correct when its stored correctness value exceeds ``threshold`` (the run's rule for the
    judged answer). A strategy that picks no answer anywhere has ``n = 0``, NaN accuracy and a ``note``.
    """
    rows = []
    for s in STRATEGIES:
        c = [ok for _, ok in _picked(records, s, threshold)]
        row: dict[str, Any] = {"strategy": s, "n": len(c), "n_boot": 0}
        row.update(dict.fromkeys(("accuracy", "lo", "hi", "lo_mcse", "hi_mcse"), math.nan))
        if c:
            arr = np.asarray(c, dtype=bool)
            row["accuracy"] = float(arr.mean())
            ci = metrics.bootstrap_interval(
                metrics.accuracy, np.zeros(arr.size), arr, n_boot=max(n_boot, metrics.MIN_BOOT), seed=seed
            )
            row.update(ci._asdict())
        row["note"] = _note(records, s, len(c))
        rows.append(row)
    return pd.DataFrame(rows, columns=list(SELECTION_COLUMNS))


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (a right and b wrong, and the reverse).

    Under "equally accurate" ``a_only`` is Binomial(a_only + b_only, 1/2); p is the exact two-sided binomial
    p-value, 1 without discordant pairs.

    Examples:
        >>> round(mcnemar_exact(9, 1), 4)  # P(X <= 1 or X >= 9), X ~ Bin(10, 1/2) = 22/1024
        0.0215
        >>> mcnemar_exact(3, 3), mcnemar_exact(0, 0)
        (1.0, 1.0)
    """
    from scipy.stats import binomtest  # scipy.stats takes about a second to import: only where it is used

    return 1.0 if a_only + b_only == 0 else float(binomtest(a_only, a_only + b_only, 0.5).pvalue)


def _test_row(a: str, b: str, ca: dict[str, bool], cb: dict[str, bool]) -> dict[str, Any]:
    both = [i for i in ca if i in cb]
    row: dict[str, Any] = {"strategy_a": a, "strategy_b": b, "n": len(both), "note": ""}
    if not both:
        row.update(dict.fromkeys(("accuracy_a", "accuracy_b", "p_mcnemar"), math.nan), a_only=0, b_only=0)
        return {**row, "note": "no question where both strategies pick an answer"}
    x = np.array([ca[i] for i in both], dtype=bool)
    y = np.array([cb[i] for i in both], dtype=bool)
    a_only, b_only = int((x & ~y).sum()), int((~x & y).sum())
    row.update(accuracy_a=float(x.mean()), accuracy_b=float(y.mean()), a_only=a_only, b_only=b_only)
    row["p_mcnemar"] = mcnemar_exact(a_only, b_only)
    return row


def selection_tests(records: Sequence[Mapping[str, Any]], *, threshold: float) -> pd.DataFrame:
    """``selection_tests.csv``: every pair of :data:`STRATEGIES` (in that order, ``strategy_a`` first) on the
    ``n`` questions where both pick an answer: their accuracies there, the discordant counts ``a_only`` (a's
    answer correct, b's not) and ``b_only``, McNemar's exact two-sided ``p_mcnemar`` (:func:`mcnemar_exact`),
    ``p_holm`` (Holm's adjustment over the run's pairs) and ``outcome``: ``a better`` / ``b better`` where
    ``p_holm`` < :data:`SIGNIFICANCE`, ``no significant difference`` otherwise, ``undefined`` without shared
    questions. Deterministic: no resampling.
    """
    correct = {s: dict(_picked(records, s, threshold)) for s in STRATEGIES}
    pairs = [(a, b) for a, b in combinations(STRATEGIES, 2) if correct[a] and correct[b]]
    rows = [_test_row(a, b, correct[a], correct[b]) for a, b in pairs]
    out = pd.DataFrame(rows, columns=list(TEST_COLUMNS))
    if rows:
        out["p_holm"] = metrics.holm(out["p_mcnemar"].to_numpy(dtype=np.float64))
        significant = out["p_holm"] < SIGNIFICANCE
        better = np.where(out["a_only"] > out["b_only"], "a better", "b better")
        out["outcome"] = np.where(significant, better, "no significant difference")
        out.loc[out["p_mcnemar"].isna(), "outcome"] = "undefined"
    return out
