"""The score-samples input: validation of every line, the UQ-NLG layout, gzip and truncation."""

from __future__ import annotations

import gzip
import json

import pytest

from shapley.pipeline.samples import read_samples_file
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
