"""What the model says about itself: p(True) (Kadavath et al. 2022) and verbalised confidence (Tian et al. 2023)."""

from __future__ import annotations

import math
import re

from shapley.core import validate


def parse_p_true(logprob_true: float, logprob_false: float) -> float:
    """Probability of "True" from the log-probabilities of the "True" / "False" answer tokens.

    Kadavath et al. (2022) "Language models (mostly) know what they know" (p(True)). Returns
    exp(a) / (exp(a) + exp(b)) for a = ``logprob_true``, b = ``logprob_false`` (a softmax restricted
    to the two options, computed stably). Only the difference a - b matters, so raw logits work too.
    One of the two may be -inf (probability 0); NaN, +inf or both -inf raise ValueError.
    Returns a probability in [0, 1] (a confidence, not an uncertainty: see :func:`p_true_uncertainty`).

    Examples:
        >>> round(parse_p_true(math.log(0.8), math.log(0.2)), 6)
        0.8
        >>> parse_p_true(-math.inf, -1.0)
        0.0
    """
    a = validate.real_number(logprob_true, "logprob_true")
    b = validate.real_number(logprob_false, "logprob_false")
    for name, v in (("logprob_true", a), ("logprob_false", b)):
        if math.isnan(v) or v == math.inf:
            raise ValueError(f"{name} must be finite or -inf; got {v}")
    if a == -math.inf and b == -math.inf:
        raise ValueError("logprob_true and logprob_false are both -inf: no probability mass on either option")
    d = b - a
    # 1 / (1 + exp(b - a)), stable for large |d| (and exact for d = +-inf: 0 and 1)
    if d >= 0:
        e = math.exp(-d)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(d))


def p_true_uncertainty(p: float) -> float:
    """Uncertainty 1 - p(True) (unitless, in [0, 1]); Kadavath et al. (2022).

    ``p``: the model's probability that its answer is true, in [0, 1].

    Examples:
        >>> round(p_true_uncertainty(0.8), 6)
        0.2
    """
    v = validate.real_number(p, "p")
    if not math.isfinite(v) or not -validate.PROB_TOL <= v <= 1 + validate.PROB_TOL:
        raise ValueError(f"p must be a probability in [0, 1]; got {v}")
    return float(min(1.0, max(0.0, 1.0 - v)))


_NUM = r"(?<![\w.\-])(\d+(?:\.\d+)?|\.\d+)"
_LABELLED = re.compile(
    r"\b(?:confidence|probability|certainty|confident|prob|p)\b[^\d\-.]{0,20}?" + _NUM + r"(\s*(?:%|percent\b))?",
    re.IGNORECASE,
)
_PERCENT = re.compile(_NUM + r"\s*(?:%|percent\b)", re.IGNORECASE)
_BARE = re.compile(_NUM + r"(?!\w|\.\d)")
_ONLY_NUMBER = re.compile(r"^\s*" + r"(\d+(?:\.\d+)?|\.\d+)" + r"\s*(%|percent)?\s*[.!]?\s*$", re.IGNORECASE)


def _as_confidence(value: float, percent: bool, allow_percent_scale: bool) -> float | None:
    if percent:
        return value / 100.0 if 0.0 <= value <= 100.0 else None
    if 0.0 <= value <= 1.0:
        return value
    if allow_percent_scale and 1.0 < value <= 100.0:
        return value / 100.0
    return None


def parse_confidence(text: str) -> float:
    """Extract a verbalised confidence in [0, 1] from a model's reply; NaN if none can be read.

    Ask-for-confidence (A4C) / verbalised probability of Tian et al. (2023, EMNLP) "Just ask for
    calibration". Only numbers are read (no words such as "certain"). Rules, first match wins:

    1. A number after a label "confidence", "probability", "certainty", "confident", "prob" or "p",
       e.g. "Confidence: 0.75", "Probability = 0.9", "confidence level is 80%". A trailing "%" or
       "percent" divides by 100; an unmarked labelled value in (1, 100] is read as a percentage.
    2. Any number with "%" or "percent", e.g. "I am 80% sure", "85 percent".
    3. A reply that is only a number ("0.8", ".8", "85"): values in (1, 100] as percentages.
    4. The first bare number in [0, 1] anywhere in the text ("I'd say 0.7.").

    Negative numbers and values above 100 (or above 100%) are never read as confidences. Returns a
    float in [0, 1], or ``float("nan")`` when nothing parseable is found (e.g. "", "very sure").

    Examples:
        >>> parse_confidence("Confidence: 80%"), parse_confidence("I'd say 0.7."), parse_confidence("85")
        (0.8, 0.7, 0.85)
        >>> parse_confidence("I am very sure")
        nan
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str; got {type(text).__name__}")
    m = _ONLY_NUMBER.match(text)
    if m:
        c = _as_confidence(float(m.group(1)), bool(m.group(2)), allow_percent_scale=True)
        return float("nan") if c is None else c
    # rules 1, 2 and 4: (pattern, percentage or not (None: the match's "%" group says), (1, 100] read as percent)
    for pattern, percent, percent_scale in ((_LABELLED, None, True), (_PERCENT, True, False), (_BARE, False, False)):
        for m in pattern.finditer(text):
            c = _as_confidence(float(m.group(1)), bool(m.group(2)) if percent is None else percent, percent_scale)
            if c is not None:
                return c
    return float("nan")


def verbalised_uncertainty(text: str) -> float:
    """Uncertainty 1 - parse_confidence(text) (unitless, in [0, 1]); NaN when no confidence is found.

    Tian et al. (2023, EMNLP) "Just ask for calibration" (the paper's A4C column).

    Examples:
        >>> round(verbalised_uncertainty("Probability: 0.9"), 6)
        0.1
    """
    c = parse_confidence(text)
    return float("nan") if math.isnan(c) else 1.0 - c
