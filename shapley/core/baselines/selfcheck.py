"""SelfCheckGPT-style token statistics of the judged answer (Manakul et al. 2023): max / mean surprisal and
max / mean next-token entropy (nats)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shapley.core import validate


def selfcheck_maxl(token_logprobs: Sequence[float] | np.ndarray) -> float:
    """Max token surprisal max_t(-ln p_t) (nats) of one answer.

    Manakul, Liusie & Gales (2023, EMNLP) "SelfCheckGPT" (grey-box Max(-log p)). ``token_logprobs``:
    (T,) log-probabilities of the answer's tokens, T >= 1. Direction: higher = more uncertain.

    Examples:
        >>> round(selfcheck_maxl(np.log([0.5, 0.25])), 4)  # -ln 0.25
        1.3863
    """
    return float(np.max(-validate.log_probs(token_logprobs, "token_logprobs")))


def selfcheck_avgl(token_logprobs: Sequence[float] | np.ndarray) -> float:
    """Mean token surprisal mean_t(-ln p_t) (nats/token) of one answer.

    Manakul, Liusie & Gales (2023, EMNLP) "SelfCheckGPT" (grey-box Avg(-log p)). ``token_logprobs``:
    (T,) log-probabilities of the answer's tokens, T >= 1. Direction: higher = more uncertain.

    Examples:
        >>> round(selfcheck_avgl(np.log([0.5, 0.25])), 4)  # (ln 2 + ln 4) / 2
        1.0397
    """
    return float(np.mean(-validate.log_probs(token_logprobs, "token_logprobs")))


def selfcheck_maxe(token_entropies: Sequence[float] | np.ndarray) -> float:
    """Max next-token entropy max_t H_t (nats) along one answer.

    Manakul, Liusie & Gales (2023, EMNLP) "SelfCheckGPT" (grey-box Max(H)). ``token_entropies``:
    (T,) entropies of the predictive distribution at each generated position, T >= 1.
    Direction: higher = more uncertain.

    Examples:
        >>> selfcheck_maxe([0.1, 0.7])
        0.7
    """
    return float(np.max(validate.entropies(token_entropies, "token_entropies")))


def selfcheck_avge(token_entropies: Sequence[float] | np.ndarray) -> float:
    """Mean next-token entropy mean_t H_t (nats) along one answer.

    Manakul, Liusie & Gales (2023, EMNLP) "SelfCheckGPT" (grey-box Avg(H)). ``token_entropies``:
    (T,) entropies of the predictive distribution at each generated position, T >= 1.
    Direction: higher = more uncertain.

    Examples:
        >>> round(selfcheck_avge([0.1, 0.7]), 6)
        0.4
    """
    return float(np.mean(validate.entropies(token_entropies, "token_entropies")))
