"""Dataset loaders and prompt templates (shapley.pipeline.data.datasets).

Loaders run on the real files of ../shared/data (skipped with a reason when the folder is missing); WMT-14 and
the generic JSONL format run on small files written to tmp_path. The online path is never exercised: the
``datasets`` download is replaced with monkeypatch, so only the dispatch and the row conversion are tested.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from shapley.pipeline.data import datasets as D
from shapley.pipeline.data.files import HUB_CONVERTERS, LOCAL_PARSERS, WMT_QUESTION
from shapley.pipeline.data.samples import read_samples_file
from shapley.pipeline.rundir.records import QARecord
from tests import fakes

LOCAL_DATASETS = ("triviaqa", "coqa", "squad", "bioasq", "nq_open", "svamp")


@pytest.fixture(scope="module")
def folder() -> Path:
    return fakes.local_data_dir()


@pytest.fixture(scope="module")
def full(folder) -> dict[str, list[QARecord]]:
    """Every local dataset loaded once with the defaults (n_shots=5, seed=0), all evaluation records."""
    return {name: D.dataset_records(name, source="local") for name in LOCAL_DATASETS}


@pytest.fixture(scope="module")
def raw_counts(folder) -> dict[str, int]:
    """Row counts read straight from the files, independently of the loaders."""
    with gzip.open(folder / "triviaqa_llama13b_samples.jsonl.gz", "rt") as f:
        tq = sum(1 for line in f if line.strip())
    with gzip.open(folder / "coqa_test.json.gz", "rt") as f:
        coqa = sum(len(s["questions"]) for s in json.load(f)["data"])
    with gzip.open(folder / "squad_v1.1_dev.json.gz", "rt") as f:
        squad = sum(len(p["qas"]) for a in json.load(f)["data"] for p in a["paragraphs"])
    with gzip.open(folder / "bioasq_9b-11b_golden.json.gz", "rt") as f:
        bio = sum(1 for q in json.load(f)["questions"] if "exact_answer" in q)
    with open(folder / "nq_open_dev.jsonl") as f:
        nq = sum(1 for line in f if line.strip())
    with open(folder / "svamp.json") as f:
        svamp = len(json.load(f))
    return {"triviaqa": tq, "coqa": coqa, "squad": squad, "bioasq": bio, "nq_open": nq, "svamp": svamp}


def _example_answers(prompt: str) -> list[tuple[str, str]]:
    """(question, answer) pairs of the 'Q: ...' / 'A: ...' lines of a prompt, the final open 'A:' excluded."""
    lines = prompt.split("\n")
    pairs = []
    for a, b in zip(lines, lines[1:], strict=False):
        if a.startswith("Q: ") and b.startswith("A: "):
            pairs.append((a[3:], b[3:]))
    return pairs


# ------------------------------------------------------------------------------------- real files
@pytest.mark.parametrize("name", LOCAL_DATASETS)
def test_local_records_shape(full, name):
    records = full[name]
    assert records, name
    ids = [r.id for r in records]
    assert len(set(ids)) == len(ids)
    for r in records[:200]:
        assert isinstance(r, QARecord)
        assert r.dataset == name
        assert r.question and r.question == r.question.strip()
        assert r.references and all(isinstance(x, str) and x.strip() for x in r.references)
        assert r.prompt.endswith(f"Q: {r.question}\nA:")
        # the reference answer is never written after the final "A:"
        assert not r.prompt.endswith(r.references[0])
    stored = json.loads(json.dumps(records[0].to_dict()))  # what a record stores reads back as the record
    assert QARecord(**{**stored, "references": tuple(stored["references"])}) == records[0]


@pytest.mark.parametrize("name", LOCAL_DATASETS)
def test_counts_match_the_files(full, raw_counts, name):
    n = len(full[name])
    if name == "coqa":  # every turn is evaluated (examples are earlier turns)
        assert n == raw_counts[name]
    elif name == "squad":  # the 5 example paragraphs are withheld with all their questions
        assert raw_counts[name] - 5 * 30 < n < raw_counts[name] - 5
    else:
        assert n == raw_counts[name] - 5


@pytest.mark.parametrize("name", [n for n in LOCAL_DATASETS if n != "coqa"])
def test_examples_are_never_evaluated(full, folder, name):
    # every prompt of the dataset shares the same 5 distinct examples, and none is the target question
    first = _example_answers(full[name][0].prompt)
    assert len(first) == len(set(first)) == 5
    for r in full[name][:100]:
        pairs = _example_answers(r.prompt)
        assert pairs == first
        assert r.question not in [q for q, _ in pairs]
    # no example (question, answer) is an evaluated record
    evaluated_pairs = {(r.question, r.references[0]) for r in full[name]}
    assert evaluated_pairs.isdisjoint(first)


def test_squad_example_passages_are_withheld(full):
    records = full["squad"]
    example_passages = {block.split("\n")[0][len("Passage: ") :] for block in records[0].prompt.split("\n\n")[1:-1]}
    assert len(example_passages) == 5
    assert all(r.context not in example_passages for r in records)


def test_same_seed_same_prompts_other_seed_other_examples(full):
    again = D.dataset_records("triviaqa", source="local", limit=20)
    assert [r.to_dict() for r in again] == [r.to_dict() for r in full["triviaqa"][:20]]
    other = D.dataset_records("triviaqa", source="local", limit=20, seed=1)
    assert _example_answers(other[0].prompt) != _example_answers(again[0].prompt)
    assert [r.id for r in other] != [r.id for r in again]


def test_limit_takes_a_prefix(full):
    for name in ("nq_open", "coqa"):
        head = D.dataset_records(name, source="local", limit=7)
        assert [r.id for r in head] == [r.id for r in full[name][:7]]
    assert D.dataset_records("svamp", source="local", limit=0) == []


def test_n_shots_sets_the_number_of_examples(folder):
    for k in (0, 1, 3):
        r = D.dataset_records("nq_open", source="local", limit=3, n_shots=k)[0]
        assert len(_example_answers(r.prompt)) == k
        assert ("Examples:" in r.prompt) == (k > 0)


def test_triviaqa_prompt_and_reference(full, folder):
    r = full["triviaqa"][0]
    lines = r.prompt.split("\n")
    assert lines[0] == "Answer the question as following examples."
    assert lines[1] == "Examples:"
    assert len(lines) == 2 + 2 * 5 + 2
    with gzip.open(folder / "triviaqa_llama13b_samples.jsonl.gz", "rt") as f:
        answers = {row["id"]: row["answer"].strip() for row in map(json.loads, f)}
    assert all(rec.references == (answers[rec.id],) for rec in full["triviaqa"])
    assert r.context is None


def test_coqa_prompt_uses_earlier_turns_of_the_same_story(full):
    records = full["coqa"]
    by_id = {r.id: r for r in records}
    assert len({r.id.rsplit("_", 1)[0] for r in records}) == 700
    for r in records[:300]:
        story, turn = r.id.rsplit("_", 1)
        turn = int(turn)
        lines = r.prompt.split("\n")
        assert lines[0] == "Reading the passage and answer given questions accordingly."
        assert r.prompt.startswith(f"{lines[0]}\nPassage: {r.context}\n")
        pairs = _example_answers(r.prompt[len(lines[0]) + len(r.context) + 10 :])
        expected = [by_id[f"{story}_{t}"] for t in range(max(1, turn - 5), turn)]
        assert [q for q, _ in pairs] == [e.question for e in expected]
        assert [a for _, a in pairs] == [e.references[0] for e in expected]
        assert all(by_id[f"{story}_{t}"].context == r.context for t in range(max(1, turn - 5), turn))
        assert ("Examples:" in r.prompt) == (turn > 1)
    # additional answers become extra references
    assert any(len(r.references) > 1 for r in records)


def test_squad_prompt_structure(full):
    r = full["squad"][0]
    blocks = r.prompt.split("\n\n")
    assert len(blocks) == 1 + 5 + 1
    assert blocks[0].endswith("Examples:")
    for b in blocks[1:]:
        assert b.startswith("Passage: ")
    assert blocks[-1] == f"Passage: {r.context}\nQ: {r.question}\nA:"
    assert any(len(x.references) > 1 for x in full["squad"])


def test_bioasq_references(full):
    records = full["bioasq"]
    yn = [r for r in records if r.references[0] in ("yes", "no")]
    assert yn and all(len(r.references) == 1 for r in yn)
    assert any(", " in r.references[0] for r in records)  # list questions: items joined
    assert all(r.context is None for r in records)
    assert not any(r.prompt.count("Passage:") for r in records)


def test_svamp_question_and_numbers(full, folder):
    with open(folder / "svamp.json") as f:
        rows = {row["ID"]: row for row in json.load(f)}
    for r in full["svamp"]:
        row = rows[r.id]
        assert r.question == " ".join(f"{row['Body'].strip()} {row['Question'].strip()}".split())
        assert float(r.references[0]) == row["Answer"]
        assert not r.references[0].endswith(".0")
    assert full["svamp"][0].prompt.startswith(D.INTRO_SVAMP)


def test_nq_open_keeps_every_alias(full):
    assert max(len(r.references) for r in full["nq_open"]) > 1


def test_llama13b_samples_are_read_as_score_samples_reads_them(folder):
    """The TriviaQA file's real LLaMA-13B samples, through ``score-samples --reference-field answer``."""
    f = folder / D.LOCAL_FILES["triviaqa"]
    items = read_samples_file(f, reference_field="answer")
    with gzip.open(f, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    assert len(items) == 500
    assert all(len(it.samples) == 20 for it in items)
    assert all(s == s.strip() for it in items for s in it.samples)
    assert [it.id for it in items] == [str(r["id"]) for r in rows]
    assert [it.samples for it in items] == [[s.strip() for s in r["samples_cleaned"]] for r in rows]
    assert [it.references for it in items] == [[r["answer"]] for r in rows]


# ------------------------------------------------------------------------------ fixture files
def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


FR_EN = [
    ("Le chat dort sur le canapé.", "The cat sleeps on the sofa."),
    ("Il pleut depuis ce matin.", "It has been raining since this morning."),
    ("Nous partons demain à l'aube.", "We leave tomorrow at dawn."),
    ("Où se trouve la gare ?", "Where is the station?"),
    ("Elle a écrit trois livres.", "She has written three books."),
    ("Le musée ferme à dix-huit heures.", "The museum closes at six pm."),
]


def test_wmt14_local_jsonl_both_layouts(tmp_path):
    flat = _write_jsonl(
        tmp_path / "wmt.jsonl", [{"id": f"s{i}", "fr": fr, "en": en} for i, (fr, en) in enumerate(FR_EN)]
    )
    nested = _write_jsonl(tmp_path / "wmt2.jsonl", [{"translation": {"fr": fr, "en": en}} for fr, en in FR_EN])
    a = D.dataset_records("wmt14", path=flat, n_shots=2)
    b = D.dataset_records("wmt14", path=nested, n_shots=2)
    assert len(a) == len(b) == len(FR_EN) - 2
    assert [r.prompt for r in a] == [r.prompt for r in b]
    src = {f"{WMT_QUESTION} {fr}": en for fr, en in FR_EN}
    for r in a:
        lines = r.prompt.split("\n")
        assert len(lines) == 2 * 2 + 2  # no introduction line
        assert all(line.startswith(f"Q: {WMT_QUESTION} ") for line in lines[0::2])
        assert lines[1].startswith("A: ") and lines[-1] == "A:"
        assert r.references == (src[r.question],)
        pairs = _example_answers(r.prompt)
        assert all(src[q] == ans for q, ans in pairs)
        assert r.question not in [q for q, _ in pairs]
    assert {r.id for r in b} <= {f"wmt14_{i}" for i in range(len(FR_EN))}


def test_wmt14_missing_field_names_line(tmp_path):
    p = _write_jsonl(tmp_path / "bad.jsonl", [{"fr": "Bonjour", "en": "Hello"}, {"fr": "Merci"}])
    with pytest.raises(ValueError, match=r"line 2.*'en'"):
        D.dataset_records("wmt14", path=p, n_shots=0)


def test_generic_jsonl_unicode_and_context(tmp_path):
    rows = [
        {"id": "q1", "question": "Quelle est la capitale de la France ?", "references": ["Paris"]},
        {"id": "q2", "question": "日本の首都は？", "references": ["東京", "Tokyo"]},
        {"id": "q3", "question": "Größte Stadt Deutschlands?", "references": ["Berlin"]},
        {
            "id": "q4",
            "question": "Who wrote it?",
            "references": ["Ana"],
            "context": "Ana wrote the ünïcode note.",
        },
    ]
    p = _write_jsonl(tmp_path / "mine.jsonl", rows)
    recs = D.dataset_records("jsonl", path=p, n_shots=1, seed=3)
    assert len(recs) == 3
    by_id = {r.id: r for r in recs}
    (example,) = [row for row in rows if row["id"] not in by_id]  # the one item kept back as the example
    assert all(f"Q: {example['question']}\nA: {example['references'][0]}" in r.prompt for r in recs)
    for r in recs:
        src = next(row for row in rows if row["id"] == r.id)
        assert r.question == src["question"] and r.references == tuple(src["references"])
        assert r.dataset == "jsonl"
        if r.context:
            assert r.prompt.split("\n\n")[-1] == f"Passage: {r.context}\nQ: {r.question}\nA:"
        else:
            assert r.prompt.startswith(D.INTRO_CLOSED_BOOK)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "q?", "references": ["a"]}, r"line 2: missing field 'id'"),
        ({"id": "x", "references": ["a"]}, r"line 2: missing field 'question'"),
        ({"id": "x", "question": "q?"}, r"line 2: missing field 'references'"),
        ({"id": "x", "question": "   ", "references": ["a"]}, r"line 2: record 'x' has an empty question"),
        ({"id": "x", "question": "q?", "references": []}, r"line 2: record 'x' has no non-empty reference answer"),
        ({"id": "x", "question": "q?", "references": "a"}, r"line 2: field 'references' must be a list"),
        ({"id": "x", "question": "q?", "references": ["a", 5]}, r"line 2: field 'references' must be a list"),
        ({"id": "x", "question": 5, "references": ["a"]}, r"line 2: field 'question' must be a string"),
        ({"id": "x", "question": "q?", "references": ["a"], "context": 5}, r"line 2: field 'context' must be"),
        ([1, 2], r"bad\.jsonl, line 2: expected a JSON object, got list"),
        ({"id": "a", "question": "q?", "references": ["a"]}, r"line 2: duplicate id 'a'"),
    ],
)
def test_generic_jsonl_errors(tmp_path, row, message):
    p = _write_jsonl(tmp_path / "bad.jsonl", [{"id": "a", "question": "ok?", "references": ["b"]}, row])
    with pytest.raises(ValueError, match=message):
        D.dataset_records("jsonl", path=p, n_shots=0)


def test_generic_jsonl_invalid_json_line(tmp_path):
    p = tmp_path / "broken.jsonl"
    p.write_text('{"id": "a", "question": "q", "references": ["r"]}\n{not json\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        D.dataset_records("jsonl", path=p)


def test_too_few_items_for_the_pool(tmp_path):
    p = _write_jsonl(tmp_path / "two.jsonl", [{"id": str(i), "question": "q?", "references": ["a"]} for i in range(2)])
    with pytest.raises(ValueError, match="n_shots=5"):
        D.dataset_records("jsonl", path=p)


# ---------------------------------------------------------------------------- argument checks
def test_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError, match="valid names: triviaqa, coqa, wmt14"):
        D.dataset_records("mmlu")


def test_datasets_tuple_matches_contract():
    assert D.DATASETS == ("triviaqa", "coqa", "wmt14", "squad", "bioasq", "nq_open", "svamp", "jsonl")
    assert set(LOCAL_PARSERS) == set(D.DATASETS)
    assert set(D.ONLINE_SOURCES) == set(HUB_CONVERTERS) == set(D.DATASETS) - {"bioasq", "jsonl"}


# ------------------------------------------------------------------ dispatch (network replaced)
@pytest.fixture
def fake_hub(monkeypatch):
    """Replace the download with canned hub-style rows; record which datasets were requested."""
    calls: list[str] = []
    rows = {
        "triviaqa": [
            {
                "question_id": f"tq{i}",
                "question": f"Question {i}?",
                "answer": {"value": f"V{i}", "aliases": [f"A{i}"]},
            }
            for i in range(8)
        ],
        "coqa": [
            {
                "source": "wikipedia",
                "story": "Ann has a dog. The dog is brown.",
                "questions": ["Who has a dog?", "What colour is it?"],
                "answers": {"input_text": ["Ann", "brown"], "answer_start": [0, 22], "answer_end": [3, 27]},
            }
        ],
        "wmt14": [{"translation": {"fr": fr, "en": en}} for fr, en in FR_EN],
        "squad": [
            {
                "id": f"sq{i}",
                "title": "T",
                "context": f"Passage number {i // 2}.",
                "question": f"Q{i}?",
                "answers": {"text": [f"ans{i}", f"ans{i}"], "answer_start": [0, 0]},
            }
            for i in range(12)
        ],
        "nq_open": [{"question": f"nq {i}", "answer": [f"a{i}", f"b{i}"]} for i in range(8)],
        "svamp": [
            {"ID": f"chal-{i}", "Body": f"Tom has {i} apples.", "Question": "How many?", "Answer": float(i)}
            for i in range(8)
        ],
    }

    def fetch(name):
        calls.append(name)
        return rows[name]

    monkeypatch.setattr(D, "_fetch_hub_rows", fetch)
    return calls


@pytest.mark.parametrize("name", ["triviaqa", "coqa", "wmt14", "squad", "nq_open", "svamp"])
def test_online_conversion(fake_hub, name):
    recs = D.dataset_records(name, source="online", n_shots=1)
    assert fake_hub == [name]
    assert recs and all(r.dataset == name and r.prompt.endswith("\nA:") for r in recs)
    if name == "triviaqa":
        assert recs[0].references == (f"V{recs[0].id[2:]}", f"A{recs[0].id[2:]}")
    if name == "coqa":
        assert {r.id for r in recs} == {"coqa_validation_0_1", "coqa_validation_0_2"}
        second = next(r for r in recs if r.id.endswith("_2"))
        assert "Q: Who has a dog?\nA: Ann\nQ: What colour is it?\nA:" in second.prompt
    if name == "squad":
        assert all(r.references == (f"ans{r.id[2:]}",) for r in recs)
        assert len(recs) == 10  # the example's passage holds two questions, both withheld
    if name == "svamp":
        assert all(r.references[0] == r.id.split("-")[1] for r in recs)


def test_auto_prefers_local_then_falls_back_online(fake_hub, monkeypatch, tmp_path):
    p = _write_jsonl(tmp_path / "nq_open_dev.jsonl", [{"question": f"local {i}", "answer": ["x"]} for i in range(7)])
    monkeypatch.setenv("SHAPLEY_DATA_DIR", str(tmp_path))
    local = D.dataset_records("nq_open", n_shots=1)
    assert fake_hub == [] and all(r.question.startswith("local") for r in local)
    p.unlink()
    online = D.dataset_records("nq_open", n_shots=1)
    assert fake_hub == ["nq_open"] and all(r.question.startswith("nq ") for r in online)


def test_auto_without_data_folder_goes_online(fake_hub, monkeypatch, tmp_path):
    monkeypatch.setenv("SHAPLEY_DATA_DIR", str(tmp_path / "nowhere"))
    D.dataset_records("svamp", n_shots=1)
    assert fake_hub == ["svamp"]
    with pytest.raises(FileNotFoundError, match="source='online'"):
        D.dataset_records("svamp", source="local")


def test_explicit_missing_path_never_goes_online(fake_hub, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        D.dataset_records("squad", path=tmp_path / "missing.json")
    with pytest.raises(ValueError, match="path is for local files"):
        D.dataset_records("squad", source="online", path=tmp_path / "x.json")
    assert fake_hub == []


def test_bioasq_and_jsonl_have_no_online_source(fake_hub, monkeypatch, tmp_path):
    monkeypatch.setenv("SHAPLEY_DATA_DIR", str(tmp_path))
    with pytest.raises(D.DatasetUnavailableError, match=r"bioasq\.org.*path="):
        D.dataset_records("bioasq", source="online")
    with pytest.raises(D.DatasetUnavailableError, match="bioasq.org"):
        D.dataset_records("bioasq")  # auto, no local file
    with pytest.raises(ValueError, match="needs path"):
        D.dataset_records("jsonl")
    assert fake_hub == []


def test_download_failure_names_the_local_alternative(monkeypatch):
    import sys
    import types

    def boom(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=boom))
    with pytest.raises(D.DatasetUnavailableError, match=r"rajpurkar/squad.*no network.*source='local'"):
        D.dataset_records("squad", source="online")
