"""Reading the dataset sources as plain :class:`Item` objects, with errors naming the file and line (or the hub id):
one parser per local file format (:data:`LOCAL_PARSERS`) and one converter per hub dataset's rows
(:data:`HUB_CONVERTERS`), sharing the item builders; :mod:`shapley.pipeline.data.datasets` then shuffles and prompts
the items.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WMT_QUESTION = "What is the English translation of the following sentence?"
"""The paper's question for WMT-14 (Appendix B)."""


class DatasetUnavailableError(RuntimeError):
    """The online source could not be reached (offline, missing ``datasets``) or does not exist."""


@dataclass(frozen=True)
class Item:
    """One question before prompting. ``group``: items sharing it never straddle examples/evaluation."""

    id: str
    question: str
    references: tuple[str, ...]
    context: str | None = None
    group: str | None = None
    turn: int | None = None


# --------------------------------------------------------------------------------------------- helpers
def _clean(text: str) -> str:
    """Single-line text: whitespace runs (newlines included) become one space."""
    return " ".join(str(text).split())


def make_item(
    where: str,
    id_: Any,
    question: Any,
    references: Iterable[Any],
    *,
    context: str | None = None,
    group: str | None = None,
    turn: int | None = None,
) -> Item:
    """An :class:`Item` with its question and references cleaned (one line each; references deduplicated);
    ``ValueError`` naming ``where`` (the file and line, or the dataset, the record comes from) and the record for
    an empty question or no non-empty reference."""
    q = _clean(question) if question is not None else ""
    if not q:
        raise ValueError(f"{where}: record {id_!r} has an empty question")
    cleaned = (_clean(r) for r in references if r is not None)
    refs = tuple(dict.fromkeys(c for c in cleaned if c))  # the non-empty ones, each once, in first-seen order
    if not refs:
        raise ValueError(f"{where}: record {id_!r} has no non-empty reference answer")
    ctx = context.strip() if isinstance(context, str) and context.strip() else None
    return Item(id=str(id_), question=q, references=refs, context=ctx, group=group, turn=turn)


#: the first two bytes of every gzip file
GZIP_MAGIC = b"\x1f\x8b"


def check_input_file(path: str | os.PathLike[str], what: str = "input file") -> Path:
    """``path`` as a :class:`~pathlib.Path` if it is a readable regular file.

    Raises ``ValueError`` for a directory, ``FileNotFoundError`` when nothing is there (both name the path).
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{what} {p} is a directory, not a file")
    if p.exists() and not p.is_file():
        raise ValueError(
            f"{what} {p} is a pipe, socket or device (e.g. bash's process substitution <(...)), not a regular file: "
            "the input is read twice (validated in full, then scored) and its checksum is recorded for resuming, "
            "which a pipe cannot give; write it to a file first"
        )
    if not p.is_file():
        raise FileNotFoundError(f"{what} {p} does not exist")
    return p


def iter_text_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of every line of a UTF-8 text file, gunzipped when named ``.gz``.

    Raises ``ValueError`` naming the file and the line for a truncated or corrupt gzip stream, invalid
    UTF-8, and a name that contradicts the compression (gzip data without ``.gz``, or ``.gz`` on plain text).
    """
    p = Path(path)
    with open(p, "rb") as f:
        head = f.read(2)
    gz = p.suffix == ".gz"
    if gz and head and head != GZIP_MAGIC:
        raise ValueError(f"{p}, line 1: the name ends in .gz but the file is not gzip-compressed; rename it")
    if not gz and head == GZIP_MAGIC:
        raise ValueError(f"{p}, line 1: the file is gzip-compressed but its name does not end in .gz; rename it")
    lineno = 0
    with gzip.open(p, "rb") if gz else open(p, "rb") as f:
        try:
            for lineno, raw in enumerate(f, 1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise ValueError(
                        f"{p}, line {lineno}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1})"
                    ) from exc
                yield lineno, text
        except (EOFError, OSError, zlib.error) as exc:
            if not gz:
                raise
            raise ValueError(
                f"{p}, line {lineno + 1}: the gzip stream is truncated or corrupt ({type(exc).__name__}: {exc})"
            ) from exc


def _loads(text: str, path: str | os.PathLike[str], lineno: int | None = None) -> Any:
    """``text`` (line ``lineno`` of ``path``, or the whole file) decoded as JSON; ``ValueError`` naming the file
    and the line where it is not valid JSON."""
    where = f"{path}" if lineno is None else f"{path}, line {lineno}"
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        line = e.lineno if lineno is None else lineno
        raise ValueError(f"{path}, line {line}: not valid JSON ({e.msg} at column {e.colno})") from e
    except RecursionError:
        raise ValueError(f"{where}: not valid JSON here (nested too deeply)") from None
    except ValueError as e:  # e.g. an integer literal of more than 4300 digits
        raise ValueError(f"{where}: not valid JSON here ({e})") from None


def _read_json(path: Path) -> Any:
    return _loads("".join(line for _, line in iter_text_lines(path)), path)


def iter_json_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) of every non-blank line of a JSON-lines file (see :func:`iter_text_lines`);
    ``ValueError`` naming the file and the line for a line that is not a JSON object."""
    for lineno, line in iter_text_lines(path):
        if not line.strip():
            continue
        obj = _loads(line, path, lineno)
        if not isinstance(obj, dict):
            raise ValueError(f"{path}, line {lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def _need(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise ValueError(f"{where}: missing field {key!r}")
    return obj[key]


def _format_number(x: Any) -> str:
    """``51.0`` -> ``"51"``, ``2.5`` -> ``"2.5"`` (also as strings); other strings pass through, stripped."""
    try:
        v = float(x)
    except ValueError:  # a JSON value that float() refuses with a ValueError is a string
        return str(x).strip()
    if v.is_integer():
        return str(int(v))
    return repr(v)


# ------------------------------------------------------------------------------ local file parsers
def _answers(answer: Any) -> list[str]:
    """The answers of a row: one string, a list, or the TriviaQA hub's ``{"value", "aliases"}`` dict."""
    if isinstance(answer, str):
        return [answer]
    if isinstance(answer, dict):
        return [answer.get("value", ""), *answer.get("aliases", [])]
    if isinstance(answer, list):
        return [str(a) for a in answer]
    return []


def qa_items(rows: Iterable[tuple[int, dict[str, Any]]], where: str, dataset: str) -> Iterator[Item]:
    """Items of (line, row) pairs holding ``question``, ``answer`` (a string, a list of aliases, or the TriviaQA
    hub's ``{"value", "aliases"}``) and an id (``id`` or ``question_id``, else ``<dataset>_<index>``)."""
    for i, (lineno, row) in enumerate(rows):
        w = f"{where}, line {lineno}"
        id_ = row.get("id", row.get("question_id", f"{dataset}_{i}"))
        yield make_item(w, id_, _need(row, "question", w), _answers(_need(row, "answer", w)))


def coqa_items(stories: Iterable[dict[str, Any]], where: str) -> Iterator[Item]:
    for s_idx, story in enumerate(stories):
        sid = str(story.get("id", f"story{s_idx}"))
        w = f"{where}, story {sid}"
        text, questions, answers = _need(story, "story", w), _need(story, "questions", w), _need(story, "answers", w)
        if len(questions) != len(answers):
            raise ValueError(f"{w}: {len(questions)} questions but {len(answers)} answers")
        extra: dict[int, list[str]] = {}
        for alt in (story.get("additional_answers") or {}).values():
            for a in alt:
                extra.setdefault(int(a["turn_id"]), []).append(a["input_text"])
        for k, (q, a) in enumerate(zip(questions, answers, strict=True)):
            turn = int(q.get("turn_id", k + 1))
            refs = [a["input_text"], *extra.get(turn, [])]
            yield make_item(w, f"{sid}_{turn}", q["input_text"], refs, context=text, group=sid, turn=turn)


def _parse_squad(path: Path) -> Iterator[Item]:
    for a_idx, article in enumerate(_need(_read_json(path), "data", str(path))):
        w = f"{path}, article {a_idx}"
        for p_idx, para in enumerate(_need(article, "paragraphs", w)):
            group = f"{article.get('title', a_idx)}#{p_idx}"
            for qa in para["qas"]:
                refs = [ans["text"] for ans in qa.get("answers", [])]
                yield make_item(w, qa["id"], qa["question"], refs, context=para["context"], group=group)


def svamp_items(rows: Any, where: str) -> Iterator[Item]:
    if not isinstance(rows, list):
        raise ValueError(f"{where}: expected a JSON list of SVAMP problems")
    for i, row in enumerate(rows):
        w = f"{where}, problem {i}"
        question = f"{str(row.get('Body', '')).strip()} {str(_need(row, 'Question', w)).strip()}"
        id_ = row.get("ID", row.get("id", f"svamp_{i}"))
        yield make_item(w, id_, question, [_format_number(_need(row, "Answer", w))])


def _flatten(x: Any) -> list[str]:
    if isinstance(x, str):
        return [x]
    out: list[str] = []
    for y in x:
        out.extend(_flatten(y))
    return out


def _bioasq_references(q: dict[str, Any]) -> list[str]:
    exact = q["exact_answer"]
    qtype = q.get("type", "")
    if qtype == "yesno" or isinstance(exact, str):
        return [_flatten(exact)[0].strip().lower()] if _flatten(exact) else []
    if qtype == "list":
        items = [_flatten(entry) for entry in exact]
        firsts = [next((s.strip() for s in syn if s.strip()), "") for syn in items]
        return [", ".join(f for f in firsts if f)]
    return _flatten(exact)


def wmt_items(rows: Iterable[tuple[int, dict[str, Any]]], where: str) -> Iterator[Item]:
    for i, (lineno, row) in enumerate(rows):
        w = f"{where}, line {lineno}"
        pair = row.get("translation", row)
        if not isinstance(pair, dict):
            raise ValueError(f"{w}: 'translation' must be an object with 'fr' and 'en'")
        fr = _clean(_need(pair, "fr", w))
        en = _need(pair, "en", w)
        if not fr:
            raise ValueError(f"{w}: empty French source sentence")
        yield make_item(w, row.get("id", f"wmt14_{i}"), f"{WMT_QUESTION} {fr}", [en])


def _parse_jsonl(path: Path) -> Iterator[Item]:
    seen: set[str] = set()
    for lineno, row in iter_json_lines(path):
        where = f"{path}, line {lineno}"
        id_ = str(_need(row, "id", where))
        question, refs, context = _need(row, "question", where), _need(row, "references", where), row.get("context")
        if not isinstance(question, str):
            raise ValueError(f"{where}: field 'question' must be a string")
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise ValueError(f"{where}: field 'references' must be a list of strings")
        if context is not None and not isinstance(context, str):
            raise ValueError(f"{where}: field 'context' must be a string")
        if id_ in seen:
            raise ValueError(f"{where}: duplicate id {id_!r}")
        seen.add(id_)
        group = _clean(context) if context else None
        yield make_item(where, id_, question, refs, context=context, group=group)


#: each dataset's local file -> items
LOCAL_PARSERS: dict[str, Callable[[Path], Iterable[Item]]] = {
    "triviaqa": lambda path: qa_items(iter_json_lines(path), str(path), "triviaqa"),
    "coqa": lambda path: coqa_items(_need(_read_json(path), "data", str(path)), str(path)),
    "wmt14": lambda path: wmt_items(iter_json_lines(path), str(path)),
    "squad": _parse_squad,
    "bioasq": lambda path: (
        make_item(str(path), q["id"], q["body"], _bioasq_references(q))
        for q in _need(_read_json(path), "questions", str(path))
        if "exact_answer" in q  # summary questions have none
    ),
    "nq_open": lambda path: qa_items(iter_json_lines(path), str(path), "nq_open"),
    "svamp": lambda path: svamp_items(_read_json(path), str(path)),
    "jsonl": _parse_jsonl,
}


def _hub_coqa(rows: list[dict[str, Any]], where: str) -> Iterator[Item]:
    """The hub's CoQA rows (questions as strings, answers columnar: ``{"input_text": [...], "answer_start": [...],
    "answer_end": [...]}``) as the local file's stories (turns numbered from 1)."""
    stories = [
        {
            "id": r.get("id", f"coqa_validation_{i}"),
            "story": r["story"],
            "questions": [{"input_text": q} for q in r["questions"]],
            "answers": [{"input_text": a} for a in r["answers"]["input_text"]],
        }
        for i, r in enumerate(rows)
    ]
    return coqa_items(stories, where)


#: each hub dataset's rows (plain dicts) and its hub id (named in errors) -> items; a SQuAD question's group is its
#: passage, so that questions on one passage stay on one side of the examples/evaluation split
HUB_CONVERTERS: dict[str, Callable[[list[dict[str, Any]], str], Iterable[Item]]] = {
    "triviaqa": lambda rows, where: qa_items(enumerate(rows, 1), where, "triviaqa"),
    "coqa": _hub_coqa,
    "wmt14": lambda rows, where: wmt_items(enumerate(rows, 1), where),
    "squad": lambda rows, where: [
        make_item(where, r["id"], r["question"], r["answers"]["text"], context=r["context"], group=r["context"])
        for r in rows
    ],
    "nq_open": lambda rows, where: qa_items(enumerate(rows, 1), where, "nq_open"),
    "svamp": svamp_items,
}
