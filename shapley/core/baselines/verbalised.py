"""What the model says about itself: p(True) (Kadavath et al. 2022) and verbalised confidence (Tian et al. 2023)."""

from __future__ import annotations

import math
import re

from shapley.core import validate


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


_PLAIN = r"(?:\d+(?:\.\d+)?|\.\d+)"
# a number as written, read greedily so that a number that is only partly a plain decimal ("0,8", "1e-1",
# "1.2.3") is seen whole and refused, never read by its first digits
_WRITTEN = r"(?:\d+(?:[.,]\d+)*|\.\d+(?:[.,]\d+)*)(?:[eE][-+]?\d+)?"
_TOKEN = re.compile(
    r"(?<![\w.,])(?P<sign>[-+\u2212]?)(?P<a>" + _WRITTEN + r")"
    r"(?:\s*(?P<range>-|\u2013|\bto\b)\s*(?P<r>" + _WRITTEN + r"))?"
    r"(?:\s*(?:/|\bout\s+of\b)\s*(?P<b>" + _WRITTEN + r"))?"
    r"(?P<pct>\s*(?:%|percent\b))?"
    r"(?P<tail>(?:[\w/]|[.,/](?=\w))*)",
    re.IGNORECASE,
)
# a label, then optionally a parenthesised note such as "(0-1)" or "(True)", then up to 20 other characters
_LABEL = re.compile(
    r"\b(?:confidence|probability|certainty|confident|prob|p)\b"
    r"(?:\s*[(\[][^()\[\]\n]{0,40}[)\]])?[^\d\-+.\u2212]{0,20}?(?=[-+\u2212]?(?:\d|\.\d))",
    re.IGNORECASE,
)
_PLAIN_RE = re.compile(_PLAIN)

PARTLY_READ = (
    "a number in the reply is only partly readable (decimal comma, exponent, several points or a stray suffix)"
)
"""Skip reason of :func:`confidence_reading` for a reply whose candidate number is not a plain decimal."""
NONE_FOUND = "no confidence in [0, 1] (or a percentage, or a ratio a/b) could be read from the reply"
"""Skip reason of :func:`confidence_reading` when no number in the reply reads as a confidence."""


def _as_confidence(value: float, percent: bool, allow_percent_scale: bool) -> float | None:
    if percent:
        return value / 100.0 if 0.0 <= value <= 100.0 else None
    if 0.0 <= value <= 1.0:
        return value
    if allow_percent_scale and 1.0 < value <= 100.0:
        return value / 100.0
    return None


def _read_token(m: re.Match[str], allow_percent_scale: bool) -> float | str | None:
    """A confidence (float), :data:`PARTLY_READ` (str), or None when the number is not a confidence."""
    if m.group("range"):
        return None  # "0-1", "0 to 100": a range (e.g. of the scale), not a value
    a, b = m.group("a"), m.group("b")
    if m.group("tail") or not _PLAIN_RE.fullmatch(a) or (b is not None and not _PLAIN_RE.fullmatch(b)):
        return PARTLY_READ
    if m.group("sign") in ("-", "\u2212"):
        return None
    if b is not None:  # "8/10", "4 out of 5"
        num, den = float(a), float(b)
        if m.group("pct") or den <= 0.0 or not 0.0 <= num <= den:
            return None
        return num / den
    return _as_confidence(float(a), bool(m.group("pct")), allow_percent_scale)


def confidence_reading(text: str) -> tuple[float, str]:
    """A verbalised confidence in [0, 1] read from a model's reply, with the reason when none is read:
    ``(confidence, "")``, or ``(nan, reason)``.

    Ask-for-confidence (A4C) / verbalised probability of Tian et al. (2023, EMNLP) "Just ask for
    calibration" (the paper's A4C column is ``1 - confidence``). Only numbers are read (no words such as
    "certain"). Rules, first match wins:

    1. A number after a label "confidence", "probability", "certainty", "confident", "prob" or "p",
       e.g. "Confidence: 0.75", "Probability = 0.9", "confidence level is 80%". A parenthesised note
       after the label is skipped ("Confidence (0-1): 0.2", "P(True) = 0.65"). A trailing "%" or
       "percent" divides by 100; an unmarked labelled value in (1, 100] is read as a percentage.
    2. Any number with "%" or "percent", e.g. "I am 80% sure", "85 percent".
    3. A reply that is only a number ("0.8", ".8", "85"): values in (1, 100] as percentages.
    4. The first ratio or bare number in [0, 1] anywhere in the text ("I'd say 0.7.").

    Everywhere a ratio ``a/b`` or ``a out of b`` (0 <= a <= b, b > 0) reads as a / b ("8/10", "4 out of 5"),
    and a range ("0-1", "0 to 100") is never a value. A number that is only partly a plain decimal
    ("0,8", "1e-1", "1.2.3") gives NaN rather than its first digits. Negative numbers and values above 100
    (or above 100%) are never read as confidences; nothing parseable (e.g. "", "very sure") gives NaN.

    The reason is one of two fixed sentences (:data:`PARTLY_READ`, :data:`NONE_FOUND`), never the reply
    itself, so that skip notes aggregate over questions.

    Examples:
        >>> confidence_reading("Confidence: 8/10")
        (0.8, '')
        >>> confidence_reading("I'd say 0.7.")[0], confidence_reading("85")[0]
        (0.7, 0.85)
        >>> confidence_reading("0,8")[1] == PARTLY_READ, confidence_reading("I am very sure")[1] == NONE_FOUND
        (True, True)
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str; got {type(text).__name__}")
    # rule 3: a reply that is only a number (values in (1, 100] as percentages)
    m = _TOKEN.match(text.strip())
    if m and re.fullmatch(r"\s*[.!]?\s*", text.strip()[m.end() :]):
        c = _read_token(m, allow_percent_scale=True)
        if isinstance(c, str):
            return math.nan, c
        return (math.nan, NONE_FOUND) if c is None else (c, "")
    # rule 1: a labelled number (unmarked values in (1, 100] as percentages)
    for lab in _LABEL.finditer(text):
        m = _TOKEN.match(text, lab.end())
        if m is None:
            continue
        c = _read_token(m, allow_percent_scale=True)
        if isinstance(c, str):
            return math.nan, c
        if c is not None:
            return c, ""
    tokens = list(_TOKEN.finditer(text))
    # rule 2: a number marked "%" or "percent"
    for m in tokens:
        if m.group("pct") and not m.group("b"):
            c = _read_token(m, allow_percent_scale=False)
            if isinstance(c, str):
                return math.nan, c
            if c is not None:
                return c, ""
    # rule 4: the first ratio a/b or bare number in [0, 1]; a number only partly read refuses the reply when
    # its leading digits alone would have been read as a confidence
    for m in tokens:
        if m.group("pct"):
            continue
        c = _read_token(m, allow_percent_scale=False)
        if isinstance(c, str):
            lead = _PLAIN_RE.match(m.group("a"))
            if m.group("sign") not in ("-", "\u2212") and lead and 0.0 <= float(lead.group(0)) <= 1.0:
                return math.nan, c
            continue
        if c is not None:
            return c, ""
    return math.nan, NONE_FOUND
