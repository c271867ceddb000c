"""The input of ``score-samples``: answers generated elsewhere, one JSON object per line.

:func:`read_samples_file` reads and validates a whole file before anything is written; a bad line raises
``ValueError`` naming the file, the line number and the field.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any


@dataclass
class SampleItem:
    """One validated line of a score-samples input file."""

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
    answer_given: bool = False
    """Whether the line gave the judged answer (``answer`` beside ``references``); else it is ``samples[0]``."""


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _str_list(v: Any, where: str, name: str) -> list[str]:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise ValueError(f"{where}: field {name!r} must be a list of strings")
    if not v:
        raise ValueError(f"{where}: field {name!r} is empty")
    return list(v)


def _num_list(v: Any, where: str, name: str) -> list[float]:
    if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise ValueError(f"{where}: field {name!r} must be a list of numbers")
    out = [float(x) for x in v]
    if not all(math.isfinite(x) for x in out):
        raise ValueError(f"{where}: field {name!r} holds NaN or inf")
    return out


def parse_sample_line(row: Any, where: str, lineno: int, n_samples: int | None = None) -> SampleItem:
    """Validate one decoded input line (see :func:`read_samples_file` for the accepted fields)."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: a line must be a JSON object")
    for name in ("id", "question"):
        if name not in row:
            raise ValueError(f"{where}: missing field {name!r}")
    if not isinstance(row["id"], (str, int)) or isinstance(row["id"], bool):
        raise ValueError(f"{where}: field 'id' must be a string or an integer")
    if not isinstance(row["question"], str):
        raise ValueError(f"{where}: field 'question' must be a string")
    if "samples_cleaned" in row:
        samples = [s.strip() for s in _str_list(row["samples_cleaned"], where, "samples_cleaned")]
    elif "samples" in row:
        samples = [s.strip() for s in _str_list(row["samples"], where, "samples")]
    else:
        raise ValueError(f"{where}: missing field 'samples'")
    if "references" in row:
        refs = _str_list(row["references"], where, "references")
        answer = row.get("answer", samples[0])
        if not isinstance(answer, str):
            raise ValueError(f"{where}: field 'answer' must be a string")
        answer = answer.strip()
    elif "answer" in row:
        refs = _str_list(row["answer"], where, "answer")  # the UQ-NLG layout: 'answer' is the reference
        answer = samples[0]
    else:
        raise ValueError(f"{where}: missing field 'references'")
    if not any(r.strip() for r in refs):
        raise ValueError(f"{where}: field 'references' holds only blank strings")
    slp = None
    if row.get("sample_logprobs") is not None:
        v = row["sample_logprobs"]
        if not isinstance(v, list) or len(v) != len(samples):
            raise ValueError(f"{where}: field 'sample_logprobs' must be a list with one list per sample")
        slp = [_num_list(t, where, f"sample_logprobs[{k}]") for k, t in enumerate(v)]
    if n_samples is not None:
        if len(samples) < n_samples:
            raise ValueError(f"{where}: field 'samples' has {len(samples)} samples, fewer than --n-samples {n_samples}")
        samples = samples[:n_samples]
        slp = None if slp is None else slp[:n_samples]
    item = SampleItem(
        id=str(row["id"]),
        question=row["question"],
        references=refs,
        samples=samples,
        answer=answer,
        lineno=lineno,
        sample_logprobs=slp,
        answer_given="references" in row and "answer" in row,
    )
    for name in ("answer_token_logprobs", "answer_token_entropies", "embedding"):
        if row.get(name) is not None:
            setattr(item, name, _num_list(row[name], where, name))
    if row.get("p_true") is not None:
        p = row["p_true"]
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0.0 <= p <= 1.0:
            raise ValueError(f"{where}: field 'p_true' must be a number in [0, 1]")
        item.p_true = float(p)
    if row.get("a4c_text") is not None:
        if not isinstance(row["a4c_text"], str):
            raise ValueError(f"{where}: field 'a4c_text' must be a string")
        item.a4c_text = row["a4c_text"]
    return item


def read_samples_file(
    path: str | os.PathLike[str], *, n_samples: int | None = None, limit: int | None = None
) -> list[SampleItem]:
    """Read and validate a score-samples input (JSON lines, optionally ``.gz``) completely.

        Each line: ``{"id", "question", "references": [...], "samples": [...], "answer"?, "sample_logprobs"?,
        "answer_token_logprobs"?, "answer_token_entropies"?, "p_true"?, "a4c_text"?, "embedding"?}``.
        ``answer`` (the judged answer) defaults to ``samples[0]``. Fallbacks for the UQ-NLG layout of
        ``triviaqa_llama13b_samples.jsonl.gz``: ``samples_cleaned`` (stripped) is used instead of ``samples``
        when present, and without ``references`` the field ``answer`` is the reference (a string or a list) and
        the judged answer is ``samples[0]``. Surrounding whitespace is stripped from samples and the judged answer;
    empty answers are kept (scored like any text; an empty judged answer is incorrect). Blank lines are ignored.

        ``n_samples``: keep the first N samples (a line with fewer is an error). ``limit``: validate and keep the
        first ``limit`` questions only.

        Raises:
            ValueError: naming the line number and the field, for the first bad line; or duplicate ids.
            FileNotFoundError: no such file.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"input file {p} does not exist")
    if n_samples is not None and n_samples < 1:
        raise ValueError(f"--n-samples must be >= 1; got {n_samples}")
    items: list[SampleItem] = []
    seen: dict[str, int] = {}
    with _open_text(p) as f:
        for lineno, line in enumerate(f, start=1):
            if limit is not None and len(items) >= limit:
                break
            if not line.strip():
                continue
            where = f"{p.name}, line {lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not valid JSON ({exc.msg})") from exc
            item = parse_sample_line(row, where, lineno, n_samples)
            if item.id in seen:
                raise ValueError(f"{where}: duplicate id {item.id!r} (first on line {seen[item.id]})")
            seen[item.id] = lineno
            items.append(item)
    if not items:
        raise ValueError(f"{p}: no questions in the input")
    return items
