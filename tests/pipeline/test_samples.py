"""The score-samples input: validation of every line, the UQ-NLG layout, gzip and truncation."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from shapley.pipeline.data.samples import read_samples_file
from tests.fakes import make_samples_file

# --------------------------------------------------------------------------------------------------
# score-samples input


def test_read_samples_file_validation(tmp_path):
    p = tmp_path / "in.jsonl"
    good = {"id": 1, "question": "Q?", "references": ["A"], "samples": ["A", "B"]}
    p.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "id": 2}) + "\n")
    items = read_samples_file(p)
    assert [i.id for i in items] == ["1", "2"] and items[0].answer == "A"
    cases = [
        ({"question": "Q?", "references": ["A"], "samples": ["A"]}, "field 'id'"),
        ({"id": 3, "references": ["A"], "samples": ["A"]}, "field 'question'"),
        ({"id": 3, "question": "Q", "references": ["A"]}, "field 'samples'"),
        ({"id": 3, "question": "Q", "samples": ["A"]}, "field 'references'"),
        ({"id": 3, "question": "Q", "references": [], "samples": ["A"]}, "'references' is empty"),
        ({"id": 3, "question": "Q", "references": ["A"], "samples": []}, "'samples' is empty"),
        ({"id": 3, "question": "Q", "references": ["A"], "samples": ["A", 5]}, "'samples' must be a list"),
        (
            {"id": 3, "question": "Q", "references": ["A"], "samples": ["A"], "sample_logprobs": [[-1], [-2]]},
            "sample_logprobs",
        ),
        ({"id": 1, "question": "Q", "references": ["A"], "samples": ["A"]}, "duplicate id '1'"),
    ]
    for row, msg in cases:
        p.write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
        with pytest.raises(ValueError, match="line 2") as e:
            read_samples_file(p)
        assert msg in str(e.value), (msg, str(e.value))
    p.write_text(json.dumps(good) + "\n{oops\n")
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        read_samples_file(p)


def test_read_samples_file_layouts_gz_and_truncation(tmp_path):
    p = tmp_path / "in.jsonl.gz"
    uq = {
        "id": "t1",
        "question": "Q?",
        "answer": "Botswana",
        "samples": [" Botswana\n", ".. x\n", " Namibia\n"],
        "samples_cleaned": [" Botswana", "", " Namibia"],
    }
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write(json.dumps(uq) + "\n")
    (it,) = read_samples_file(p, reference_field="answer")
    assert it.references == ["Botswana"] and it.samples == ["Botswana", "", "Namibia"] and it.answer == "Botswana"
    (it,) = read_samples_file(p, n_samples=2, reference_field="answer")
    assert it.samples == ["Botswana", ""]
    with pytest.raises(ValueError, match="fewer than --n-samples 5"):
        read_samples_file(p, n_samples=5, reference_field="answer")
    rows = make_samples_file(tmp_path / "many.jsonl", 10)
    assert [i.id for i in read_samples_file(tmp_path / "many.jsonl", limit=3)] == [r["id"] for r in rows[:3]]


# --------------------------------------------------------------------------------------------------
# Issue 12: nothing guessed, every file error named with its line


def _one(p, row, **kw):
    p.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    return read_samples_file(p, **kw)


GOOD = {"id": "t0", "question": "Capital of France?", "references": ["Paris"], "samples": ["Paris", "Rome"]}


@pytest.mark.parametrize(
    ("field", "close"),
    [("reference", "references"), ("sample", "samples"), ("sample_logprob", "sample_logprobs"), ("P_True", "p_true")],
)
def test_misspelt_field_is_refused_naming_the_close_match(tmp_path, field, close):
    row = {k: v for k, v in GOOD.items() if k != close}
    row[field] = GOOD.get(close, 0.5 if close == "p_true" else [[-1.0], [-2.0]])
    with pytest.raises(ValueError, match="line 1") as e:
        _one(tmp_path / "in.jsonl", row)
    assert f"{field!r}" in str(e.value) and f"{close!r}" in str(e.value)


def test_the_issue_line_is_refused_instead_of_judging_the_first_sample(tmp_path):
    row = {
        "id": "t0",
        "question": "Capital of France?",
        "reference": ["Paris"],
        "answer": "Paris",
        "samples": ["London", "Paris", "Paris"],
    }
    with pytest.raises(ValueError, match="'reference' looks like a misspelling of 'references'"):
        _one(tmp_path / "in.jsonl", row)
    row["references"] = row.pop("reference")
    (it,) = _one(tmp_path / "in.jsonl", row)
    assert it.references == ["Paris"] and it.answer == "Paris"  # the given judged answer, not samples[0]


def test_unknown_fields_are_kept_aside(tmp_path):
    (it,) = _one(tmp_path / "in.jsonl", {**GOOD, "prompt": "Q: ...", "source": "x"})
    assert it.extra_fields == ("prompt", "source")


def test_answer_as_reference_only_when_asked(tmp_path):
    row = {"id": "t0", "question": "Q?", "answer": "Paris", "samples": ["London", "Paris"]}
    with pytest.raises(ValueError, match="pass --reference-field answer"):
        _one(tmp_path / "in.jsonl", row)
    (it,) = _one(tmp_path / "in.jsonl", row, reference_field="answer")
    assert it.references == ["Paris"] and it.answer == "London"
    with pytest.raises(ValueError, match="has a 'references' field"):
        _one(tmp_path / "in.jsonl", {**row, "references": ["Paris"]}, reference_field="answer")


@pytest.mark.parametrize("field", ["samples", "references", "samples_cleaned"])
def test_a_string_where_a_list_belongs_is_refused(tmp_path, field):
    with pytest.raises(ValueError, match=f"line 1: field '{field}' must be a list of strings, not a single string"):
        _one(tmp_path / "in.jsonl", {**GOOD, field: "Paris"})


def test_lone_surrogate_is_refused_with_its_line_and_field(tmp_path):
    p = tmp_path / "in.jsonl"
    bad = json.dumps({**GOOD, "id": "t1", "samples": ["bad \ud800 here", "x"]})  # ensure_ascii: a \ud800 escape
    assert "\\ud800" in bad
    p.write_text(json.dumps(GOOD) + "\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2: field 'samples' holds text that cannot be encoded as UTF-8"):
        read_samples_file(p)


def _gz_bytes(text: str) -> bytes:
    import io

    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb") as f:
        f.write(text.encode("utf-8"))
    return buf.getvalue()


def test_gzip_and_encoding_errors_name_file_and_line(tmp_path):
    rng = np.random.default_rng(0)
    lines = "".join(
        json.dumps({**GOOD, "id": f"t{i}", "question": "".join(rng.choice(list("abcdefgh"), 300))}) + "\n"
        for i in range(50)
    )
    packed = _gz_bytes(lines)
    cases = {
        "truncated.jsonl.gz": (packed[: len(packed) // 2], r"line (2\d|1\d): the gzip stream is truncated or corrupt"),
        "text.jsonl.gz": (lines.encode(), "line 1: the name ends in .gz but the file is not gzip-compressed"),
        "packed.jsonl": (packed, "line 1: the file is gzip-compressed but its name does not end in .gz"),
        "latin1.jsonl": (
            json.dumps(GOOD).encode()
            + b"\n"
            + json.dumps({**GOOD, "id": "t9", "question": "Zürich"}, ensure_ascii=False).encode("latin-1"),
            r"line 2: not valid UTF-8 \(byte 0xfc",
        ),
    }
    for name, (body, msg) in cases.items():
        p = tmp_path / name
        p.write_bytes(body)
        with pytest.raises(ValueError, match=msg) as e:
            read_samples_file(p)
        assert name in str(e.value)


def test_a_directory_is_reported_as_a_directory(tmp_path):
    with pytest.raises(ValueError, match="is a directory, not a file"):
        read_samples_file(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_samples_file(tmp_path / "nope.jsonl")


# issue 38 (8): a slipped sign is refused at validation, naming file, line and field


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("answer_token_logprobs", [-0.1, 0.7]),
        ("sample_logprobs", [[-0.5], [0.3, -0.1]]),
        ("answer_token_entropies", [0.2, -0.4]),
    ],
)
def test_a_slipped_sign_is_refused_naming_file_line_and_field(tmp_path, field, value):
    p = tmp_path / "in.jsonl"
    rows = [GOOD, {**GOOD, "id": "t1", field: value}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(ValueError, match="line 2") as e:
        read_samples_file(p)
    assert "in.jsonl" in str(e.value) and field in str(e.value)


def test_a_slipped_sign_exits_2_before_anything_is_written(tmp_path, monkeypatch, capsys):
    from shapley import cli
    from tests import fakes

    fakes.install_fake_entail(monkeypatch)
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps({**GOOD, "answer_token_logprobs": [0.5, 1.2]}) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    rc = cli.main(["score-samples", str(p), "--entailment", "fake:", "--output", str(out), "--no-progress"])
    assert rc == 2 and not out.exists()
    assert "answer_token_logprobs" in capsys.readouterr().err
