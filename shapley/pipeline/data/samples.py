"""The input of ``score-samples``: answers generated elsewhere, one JSON object per line.

:func:`read_samples_file` reads and validates a whole file before anything is written; a bad line raises
``ValueError`` naming the file, the line number and the field. Nothing is guessed: a field whose name looks
like a misspelling of a known one (``reference``, ``sample``, ``sample_logprob``, ...) is refused, other
unknown fields are kept aside (:attr:`SampleItem.extra_fields`, reported once as a note), and which field holds
the reference answers is a setting (``reference_field``, ``--reference-field``), never a fallback.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import math
import os
from typing import Any

from shapley.core import validate
from shapley.pipeline.data.files import check_input_file, iter_json_lines

NUMBER_FIELDS: tuple[str, ...] = ("answer_token_logprobs", "answer_token_entropies", "embedding")
"""The optional fields of a line that hold a list of finite numbers."""

MISSPELLING_CUTOFF = 0.8
"""``difflib`` similarity above which an unknown field is taken for a misspelt known one and refused."""


@dataclasses.dataclass
class SampleItem:
    """One validated line of a score-samples input file.

    ``extra_fields``: the line's unknown fields (not misspellings of known ones), ignored.
    """

    id: str
    question: str
    references: list[str]
    samples: list[str]
    answer: str
    lineno: int
    sample_logprobs: list[list[float]] | None = None
    answer_token_logprobs: list[float] | None = None
    answer_token_entropies: list[float] | None = None
    p_true: float | None = None
    a4c_text: str | None = None
    embedding: list[float] | None = None
    extra_fields: tuple[str, ...] = ()
    answer_given: bool = False
    """Whether the line gave the judged answer (``answer`` beside ``references``); else it is ``samples[0]``."""


KNOWN_FIELDS: tuple[str, ...] = (
    "samples_cleaned",
    *(f.name for f in dataclasses.fields(SampleItem) if f.name not in ("lineno", "extra_fields", "answer_given")),
)
"""Every field a score-samples line may use: :class:`SampleItem`'s fields but those that say how the line was read,
and ``samples_cleaned`` (read instead of ``samples``); anything else is unknown (see :func:`read_samples_file`)."""


def _str_list(v: Any, where: str, name: str, *, allow_string: bool = False) -> list[str]:
    if isinstance(v, str):
        if not allow_string:
            raise ValueError(
                f"{where}: field {name!r} must be a list of strings, not a single string (write [{json.dumps(v)}])"
            )
        v = [v]
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise ValueError(f"{where}: field {name!r} must be a list of strings")
    if not v:
        raise ValueError(f"{where}: field {name!r} is empty")
    return list(v)


def _check_fields(row: dict[str, Any], where: str) -> tuple[str, ...]:
    """Refuse misspelt fields and text that cannot be written as UTF-8; return the unknown fields."""
    extra = []
    for name in (n for n in row if n not in KNOWN_FIELDS):
        close = difflib.get_close_matches(name.lower(), KNOWN_FIELDS, n=1, cutoff=MISSPELLING_CUTOFF)
        if close:
            raise ValueError(
                f"{where}: unknown field {name!r} looks like a misspelling of {close[0]!r}; "
                "rename it (a misspelt field would be ignored and change what is judged)"
            )
        extra.append(name)
    for name, value in row.items():
        try:
            json.dumps({name: value}, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"{where}: field {name!r} holds text that cannot be encoded as UTF-8 "
                f"({exc.reason}: {exc.object[exc.start : exc.end]!r}, e.g. a lone surrogate escape)"
            ) from exc
    return tuple(extra)


def _references(row: dict[str, Any], where: str, reference_field: str, samples: list[str]) -> tuple[list[str], str]:
    """(references, judged answer) of a line, read as ``reference_field`` says."""
    if reference_field == "answer":
        if "references" in row:
            raise ValueError(
                f"{where}: the line has a 'references' field, but --reference-field answer reads the references "
                "from 'answer'; drop one of them"
            )
        if "answer" not in row:
            raise ValueError(f"{where}: missing field 'answer' (--reference-field answer)")
        return _str_list(row["answer"], where, "answer", allow_string=True), samples[0]
    if "references" not in row:
        hint = ""
        if "answer" in row:
            hint = "; this line has 'answer': pass --reference-field answer to use it as the reference"
        raise ValueError(f"{where}: missing field 'references'{hint}")
    refs = _str_list(row["references"], where, "references")
    answer = row.get("answer", samples[0])
    if not isinstance(answer, str):
        raise ValueError(f"{where}: field 'answer' (the judged answer) must be a string")
    return refs, answer.strip()


def _num_list(v: Any, where: str, name: str) -> list[float]:
    if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise ValueError(f"{where}: field {name!r} must be a list of numbers")
    try:
        out = [float(x) for x in v]
    except OverflowError:  # an integer literal beyond float range, e.g. 10**400
        raise ValueError(f"{where}: field {name!r} holds a number out of range") from None
    if not all(math.isfinite(x) for x in out):
        raise ValueError(f"{where}: field {name!r} holds NaN or inf (or a number out of range, e.g. 1e400)")
    return out


def _signed(values: list[float], where: str, name: str) -> list[float]:
    """``values`` of a field whose sign is fixed: log-probabilities <= 0, entropies >= 0 (within
    :data:`shapley.core.validate.LOGP_TOL`). A slipped sign (token NLLs given as log-probabilities) is refused
    here, naming the file, line and field, rather than skipping every method that reads it on every question."""
    if "logprob" in name and any(v > validate.LOGP_TOL for v in values):
        raise ValueError(
            f"{where}: field {name!r} holds log-probabilities, which must be <= 0; it has a positive value "
            "(negative log-likelihoods? negate them)"
        )
    if "entrop" in name and any(v < -validate.LOGP_TOL for v in values):
        raise ValueError(f"{where}: field {name!r} holds entropies (nats), which must be >= 0; it has a negative value")
    return values


def _parse_line(
    row: dict[str, Any], where: str, lineno: int, n_samples: int | None, reference_field: str
) -> SampleItem:
    """Validate one decoded input line (see :func:`read_samples_file` for the accepted fields)."""
    extra = _check_fields(row, where)
    for name in ("id", "question"):
        if name not in row:
            raise ValueError(f"{where}: missing field {name!r}")
    if not isinstance(row["id"], (str, int)) or isinstance(row["id"], bool):
        raise ValueError(f"{where}: field 'id' must be a string or an integer")
    if not isinstance(row["question"], str):
        raise ValueError(f"{where}: field 'question' must be a string")
    given = {name: _str_list(row[name], where, name) for name in ("samples_cleaned", "samples") if name in row}
    if not given:
        raise ValueError(f"{where}: missing field 'samples'")
    samples = [s.strip() for s in next(iter(given.values()))]  # samples_cleaned (the UQ-NLG layout) when present
    refs, answer = _references(row, where, reference_field, samples)
    if not any(r.strip() for r in refs):
        raise ValueError(f"{where}: field {reference_field!r} holds only blank strings")
    slp = None
    if row.get("sample_logprobs") is not None:
        v = row["sample_logprobs"]
        if not isinstance(v, list) or len(v) != len(samples):
            raise ValueError(f"{where}: field 'sample_logprobs' must be a list with one list per sample")
        slp = [
            _signed(_num_list(t, where, f"sample_logprobs[{k}]"), where, f"sample_logprobs[{k}]")
            for k, t in enumerate(v)
        ]
    if n_samples is not None:
        if len(samples) < n_samples:
            raise ValueError(f"{where}: field 'samples' has {len(samples)} samples, fewer than --n-samples {n_samples}")
        samples = samples[:n_samples]
        slp = None if slp is None else slp[:n_samples]
    numbers = {
        name: _signed(_num_list(row[name], where, name), where, name)
        for name in NUMBER_FIELDS
        if row.get(name) is not None
    }
    p_true = row.get("p_true")
    if p_true is not None and (
        not isinstance(p_true, (int, float)) or isinstance(p_true, bool) or not 0 <= p_true <= 1
    ):
        raise ValueError(f"{where}: field 'p_true' must be a number in [0, 1]")
    if row.get("a4c_text") is not None and not isinstance(row["a4c_text"], str):
        raise ValueError(f"{where}: field 'a4c_text' must be a string")
    return SampleItem(
        id=str(row["id"]),
        question=row["question"],
        references=refs,
        samples=samples,
        answer=answer,
        lineno=lineno,
        sample_logprobs=slp,
        **numbers,
        p_true=None if p_true is None else float(p_true),
        a4c_text=row.get("a4c_text"),
        extra_fields=extra,
        answer_given=reference_field == "references" and "answer" in row,
    )


def read_samples_file(
    path: str | os.PathLike[str],
    *,
    n_samples: int | None = None,
    limit: int | None = None,
    reference_field: str = "references",
) -> list[SampleItem]:
    """Read and validate a score-samples input (JSON lines, optionally ``.gz``) completely.

    Each line: ``{"id", "question", "references": [...], "samples": [...], "answer"?, "sample_logprobs"?,
    "answer_token_logprobs"?, "answer_token_entropies"?, "p_true"?, "a4c_text"?, "embedding"?}``.
    ``answer`` (the judged answer) defaults to ``samples[0]``; ``samples_cleaned`` (the UQ-NLG layout) is used
    instead of ``samples`` when present. Lists are lists: a single string for ``samples`` or ``references`` is
    refused. ``reference_field="answer"`` (``--reference-field answer``) reads the references from ``answer``
    (a string or a list, the layout of ``triviaqa_llama13b_samples.jsonl.gz``; the judged answer is then
    ``samples[0]``). Surrounding whitespace is stripped from samples and the judged answer; empty answers
    are kept (scored like any text; an empty judged answer is incorrect). Blank lines are ignored. An unknown
    field that looks like a misspelt known one (see :data:`KNOWN_FIELDS`) is refused; other unknown fields are
    listed in :attr:`SampleItem.extra_fields`. Text must be encodable as UTF-8 (no lone surrogates).

    ``n_samples``: keep the first N samples (a line with fewer is an error). ``limit``: validate and keep the
    first ``limit`` questions only.

    Raises:
        ValueError: naming the file, the line number and the field, for the first bad line (also a truncated
            or corrupt gzip stream, invalid UTF-8, a directory given as the file); or duplicate ids.
        FileNotFoundError: no such file.
    """
    p = check_input_file(path)
    items: list[SampleItem] = []
    seen: dict[str, int] = {}
    width: tuple[int, int] | None = None  # (embedding length, first line with one)
    lines = iter_json_lines(p)
    for lineno, row in lines if limit is None else itertools.islice(lines, limit):
        where = f"{p}, line {lineno}"
        item = _parse_line(row, where, lineno, n_samples, reference_field)
        if item.embedding is not None:
            width = width or (len(item.embedding), lineno)
            if len(item.embedding) != width[0]:
                raise ValueError(
                    f"{where}: field 'embedding' has {len(item.embedding)} entries; line {width[1]} has {width[0]} "
                    "(every embedding must have the same length)"
                )
        if item.id in seen:
            raise ValueError(f"{where}: duplicate id {item.id!r} (first on line {seen[item.id]})")
        seen[item.id] = lineno
        items.append(item)
    if not items:
        raise ValueError(f"{p}: no questions in the input")
    return items
