"""Lexical similarity of the sampled answers (one minus their mean pairwise Rouge-L)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shapley.core import validate


def lexical_similarity(texts: Sequence[str]) -> float:
    """One minus the mean pairwise Rouge-L F-measure between the n answers (unitless, in [0, 1]).

    Fomicheva et al. (2020, TACL) "Unsupervised quality estimation for neural machine translation",
    used as an NLG baseline by Kuhn et al. (2023). ``texts``: n answer strings. Rouge-L F is
    symmetric, so the mean runs over the n(n-1)/2 unordered pairs i < j. The Rouge-L implementation
    is the ``rouge-score`` package, a fresh ``RougeScorer`` for each call (nothing is cached).

    With a single answer there is no pair to compare and no evidence of disagreement: returns 0.0.

    Examples:
        >>> lexical_similarity(["Paris", "Paris"])  # identical answers
        0.0
        >>> round(lexical_similarity(["the capital is Paris", "Paris"]), 4)  # Rouge-L F = 2 * (1/4 * 1) / (1/4 + 1)
        0.6
    """
    answers = validate.texts(texts)
    n = len(answers)
    if n == 1:
        return 0.0
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    sims = [scorer.score(answers[i], answers[j])["rougeL"].fmeasure for i in range(n) for j in range(i + 1, n)]
    return float(min(1.0, max(0.0, 1.0 - float(np.mean(sims)))))
