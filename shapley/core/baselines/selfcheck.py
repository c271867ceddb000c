"""SelfCheckGPT-style token statistics of the judged answer (Manakul, Liusie & Gales 2023, EMNLP, "SelfCheckGPT",
its grey-box Max / Avg(-log p) and Max / Avg(H)): surprisal of the answer's T >= 1 tokens and entropy of the
next-token distribution at each of its positions (nats)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shapley.core import validate


def selfcheck_maxl(token_logprobs: Sequence[float] | np.ndarray) -> float:
    """Max token surprisal max_t(-ln p_t) (nats) of one answer's (T,) token log-probabilities (Max(-log p)).

    Examples:
        >>> round(selfcheck_maxl(np.log([0.5, 0.25])), 4)  # -ln 0.25
        1.3863
    """
    return float(np.max(-validate.log_probs(token_logprobs, "token_logprobs")))


def selfcheck_avgl(token_logprobs: Sequence[float] | np.ndarray) -> float:
    """Mean token surprisal mean_t(-ln p_t) (nats/token) of one answer's (T,) token log-probabilities (Avg(-log p)).

    Examples:
        >>> round(selfcheck_avgl(np.log([0.5, 0.25])), 4)  # (ln 2 + ln 4) / 2
        1.0397
    """
    return float(np.mean(-validate.log_probs(token_logprobs, "token_logprobs")))


def selfcheck_maxe(token_entropies: Sequence[float] | np.ndarray) -> float:
    """Max next-token entropy max_t H_t (nats) of one answer's (T,) next-token entropies (Max(H)).

    Examples:
        >>> selfcheck_maxe([0.1, 0.7])
        0.7
    """
    return float(np.max(validate.entropies(token_entropies, "token_entropies")))


def selfcheck_avge(token_entropies: Sequence[float] | np.ndarray) -> float:
    """Mean next-token entropy mean_t H_t (nats) of one answer's (T,) next-token entropies (Avg(H)).

    Examples:
        >>> round(selfcheck_avge([0.1, 0.7]), 6)
        0.4
    """
    return float(np.mean(validate.entropies(token_entropies, "token_entropies")))
