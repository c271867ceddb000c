"""Lexical similarity of the sampled answers (one minus their mean pairwise Rouge-L)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from shapley.core import validate

LEXICAL_MAX_SECONDS = 60.0
"""Largest Rouge-L workload of :func:`lexical_similarity`, in seconds on one core as estimated by
:func:`_lexical_seconds` (about a minute); larger requests are refused naming this limit."""

_LEXICAL_SECONDS = (1.5e-5, 5e-8, 2.5e-6, 4e-7)
"""Cost of Rouge-L (the ``rouge-score`` package, pure Python) per pair of answers, in seconds: ``a`` fixed, ``d``
per character and ``e`` per token of the two texts (each pair tokenises both again), ``b`` per cell of the
longest-common-subsequence table (the product of the two token counts). Measured by
``benchmarks/bench_guards.py`` (``results/bench_guards.json``; one thread, answers of 1 to 200 tokens, and of 1000
and 10000 characters without a token), fitted at or above the slowest of two runs on a shared machine, then raised
by half as a margin for a loaded one."""

_TOKEN = re.compile(r"[a-z0-9]+")
"""A token of Rouge-L's default tokenizer (lower-cased text; every other character separates tokens)."""


def _lexical_seconds(answers: Sequence[str]) -> float:
    """Estimated seconds of Rouge-L over all pairs of ``answers`` (one core), from their lengths alone.

    >>> _lexical_seconds(["Paris"] * 10) < 0.01, _lexical_seconds(["word " * 1000] * 100) > 600
    (True, True)
    """
    a, d, e, b = _LEXICAL_SECONDS
    n = len(answers)
    chars = np.array([len(t) for t in answers], dtype=np.float64)
    tokens = np.array([len(_TOKEN.findall(t.lower())) for t in answers], dtype=np.float64)
    pairs = n * (n - 1) / 2
    cells = (tokens.sum() ** 2 - (tokens**2).sum()) / 2  # sum over pairs i < j of tokens_i * tokens_j
    return float(a * pairs + (n - 1) * (d * chars.sum() + e * tokens.sum()) + b * cells)


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
    cost = _lexical_seconds(answers)
    if cost > LEXICAL_MAX_SECONDS:
        raise ValueError(
            f"lexical_similarity compares all n(n-1)/2 pairs with Rouge-L; n = {n} answers of these lengths need "
            f"about {cost:.3g} s on one core, more than LEXICAL_MAX_SECONDS = {LEXICAL_MAX_SECONDS:g} (about a "
            "minute); pass fewer or shorter answers"
        )
    if n == 1:
        return 0.0
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    sims = [scorer.score(answers[i], answers[j])["rougeL"].fmeasure for i in range(n) for j in range(i + 1, n)]
    return float(min(1.0, max(0.0, 1.0 - float(np.mean(sims)))))
