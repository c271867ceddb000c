"""Entailment backends on tiny random-initialised models saved to tmp_path (no downloads)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from shapley.pipeline.entail.backends import load_backend  # noqa: E402
from shapley.pipeline.entail.base import EntailmentResult, plan_passes  # noqa: E402
from shapley.pipeline.entail.cache import EntailmentCache, TruncatedInputWarning  # noqa: E402
from shapley.pipeline.entail.embedding import EmbeddingBackend  # noqa: E402
from shapley.pipeline.entail.judge import LLMJudgeBackend  # noqa: E402
from shapley.pipeline.entail.nli import HFNLIBackend, nli_label_indices  # noqa: E402
from shapley.pipeline.generate.models import ModelNotAvailableError  # noqa: E402

CORPUS = [
    "paris is the capital of france",
    "the answer is paris",
    "london berlin madrid rome",
    "who wrote hamlet shakespeare did",
    "first answer second answer does the first answer imply the second yes no maybe",
]
NLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}


def make_wordpiece_tokenizer():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(
        CORPUS * 2, trainers.WordPieceTrainer(vocab_size=200, special_tokens=special, show_progress=False)
    )
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def save_nli(path, id2label=NLI_LABELS, arch="bert", seed=0, init=0.5):
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        DebertaV2Config,
        DebertaV2ForSequenceClassification,
    )

    tok = make_wordpiece_tokenizer()
    torch.manual_seed(seed)
    common = dict(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
        initializer_range=init,
    )
    if arch == "deberta":
        model = DebertaV2ForSequenceClassification(DebertaV2Config(**common, type_vocab_size=0))
    else:
        model = BertForSequenceClassification(BertConfig(**common))
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def nli_dir(tmp_path_factory):
    return save_nli(tmp_path_factory.mktemp("nli"))


def count_forwards(backend):
    calls = {"n": 0, "rows": 0}
    inner = backend.model.forward

    def wrapped(*args, **kwargs):
        calls["n"] += 1
        calls["rows"] += int(kwargs["input_ids"].shape[0])
        return inner(*args, **kwargs)

    backend.model.forward = wrapped
    return calls


def items3():
    return [
        ("capital of france?", ["paris", "the answer is paris", "london"]),
        ("who wrote hamlet?", ["shakespeare", "shakespeare did", "rome"]),
        ("a city?", ["berlin", "madrid", "rome berlin"]),
    ]


def test_hf_shapes_ranges_diagonal(nli_dir):
    be = load_backend(f"hf:{nli_dir}", cache=False, device="cpu")
    assert be.is_nli and be.name == f"hf:{nli_dir}" and len(be.fingerprint) == 64
    res = be.score(items3())
    assert len(res) == 3
    for r in res:
        assert isinstance(r, EntailmentResult)
        assert r.entail.shape == r.contradict.shape == (3, 3)
        assert np.all((r.entail >= 0) & (r.entail <= 1)) and np.all((r.contradict >= 0) & (r.contradict <= 1))
        np.testing.assert_array_equal(np.diag(r.entail), 1.0)
        np.testing.assert_array_equal(np.diag(r.contradict), 0.0)
        off = ~np.eye(3, dtype=bool)
        assert np.all(r.entail[off] + r.contradict[off] <= 1 + 1e-12)
    assert not np.allclose(res[0].entail, res[0].entail.T)  # premise/hypothesis order matters for NLI


def test_hf_values_are_softmax_of_the_right_label(nli_dir):
    be = HFNLIBackend(str(nli_dir), cache=False, device="cpu")
    r = be.score([("q", ["paris", "london"])])[0]
    enc = be.tokenizer(["paris"], ["london"], return_tensors="pt")
    with torch.no_grad():
        p = torch.softmax(be.model(**enc).logits, -1)[0]
    assert r.entail[0, 1] == pytest.approx(float(p[2]), abs=1e-6)
    assert r.contradict[0, 1] == pytest.approx(float(p[0]), abs=1e-6)


def test_label_order_is_read_from_config(tmp_path):
    """Same weights, id2label relabelled: entailment and contradiction must swap."""
    import json
    import shutil

    a_dir = save_nli(tmp_path / "a", NLI_LABELS)
    b_dir = tmp_path / "b"
    shutil.copytree(a_dir, b_dir)
    cfg = json.loads((b_dir / "config.json").read_text())
    cfg["id2label"] = {"0": "entailment", "1": "neutral", "2": "contradiction"}
    cfg["label2id"] = {v: int(k) for k, v in cfg["id2label"].items()}
    (b_dir / "config.json").write_text(json.dumps(cfg))
    a = HFNLIBackend(str(a_dir), cache=False, device="cpu")
    b = HFNLIBackend(str(b_dir), cache=False, device="cpu")
    assert a.fingerprint != b.fingerprint
    ra, rb = a.score(items3()), b.score(items3())
    for x, y in zip(ra, rb, strict=True):
        off = ~np.eye(3, dtype=bool)
        np.testing.assert_allclose(x.entail[off], y.contradict[off], atol=1e-6)
        np.testing.assert_allclose(x.contradict[off], y.entail[off], atol=1e-6)


def test_label_indices_and_errors(tmp_path):
    assert nli_label_indices({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}) == (2, 0)
    assert nli_label_indices({"0": "entailment", "1": "not_entailment"}) == (0, None)
    with pytest.raises(ValueError, match="entailment label"):
        nli_label_indices({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(ValueError, match="entailment label"):
        HFNLIBackend(str(save_nli(tmp_path / "g", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})), cache=False)


def test_two_label_model_has_no_contradiction(tmp_path):
    be = HFNLIBackend(str(save_nli(tmp_path / "two", {0: "entailment", 1: "not_entailment"})), cache=False)
    r = be.score([("q", ["paris", "london"])])[0]
    assert r.contradict is None and r.entail.shape == (2, 2)


def test_deberta_architecture(tmp_path):
    be = load_backend(f"hf:{save_nli(tmp_path / 'deb', arch='deberta')}", cache=False, device="cpu")
    r = be.score([("q", ["paris", "the answer is paris", "london"])])[0]
    assert r.entail.shape == (3, 3) and np.all(np.isfinite(r.entail))


def test_dedup_within_question(nli_dir):
    be = HFNLIBackend(str(nli_dir), cache=False, device="cpu")
    calls = count_forwards(be)
    answers = ["paris", "london", "paris", "rome", "london"]
    r = be.score([("q", answers)])[0]
    assert be.stats["pairs_requested"] == 20 and be.stats["pairs_scored"] == 6  # 3 unique answers
    assert calls["rows"] == 6 and calls["n"] == 1
    np.testing.assert_array_equal(r.entail[0], r.entail[2])
    np.testing.assert_array_equal(r.entail[:, 1], r.entail[:, 4])
    assert r.entail[0, 2] == 1.0 and r.contradict[0, 2] == 0.0  # identical answers entail each other
    reference = be.score([("q", ["paris", "london", "rome"])])[0]
    np.testing.assert_allclose(r.entail[np.ix_([0, 1, 3], [0, 1, 3])], reference.entail)


def test_forward_passes_hold_one_question_each(nli_dir):
    """The batch rule: each question's pairs in their own passes (at most 32 pairs on a CPU); two questions with
    the same distinct answers share one computation."""
    be = HFNLIBackend(str(nli_dir), cache=False, device="cpu")
    calls = count_forwards(be)
    passes = []
    inner = be._forward_pass
    be._forward_pass = lambda enc, rows: (passes.append(rows), inner(enc, rows))[1]
    be.score(items3())  # 3 questions x 6 ordered pairs = 18 pairs, no pass shared by two questions
    assert calls["rows"] == 18 and calls["n"] == be.stats["forward_passes"] >= 3
    assert all(len({int(r) // 6 for r in rows}) == 1 for rows in passes)  # each pass within one question's pairs
    assert be.stats["batch_size"] == {"pairs": 32, "tokens": None}
    assert be.max_batch_pairs == 32 and be.max_batch_tokens is None
    big = [("q", [f"paris {w}" for w in ["a", "b", "c", "d", "e", "f", "g"]])]  # 42 pairs: 32 + 10
    calls_big = count_forwards(be)
    be.score(big)
    assert calls_big["n"] == 2 and calls_big["rows"] == 42
    be2 = HFNLIBackend(str(nli_dir), cache=False, device="cpu")
    calls2 = count_forwards(be2)
    be2.score([("q1", ["paris", "rome"]), ("q2", ["rome", "paris", "rome"])])
    assert calls2["rows"] == 2


def test_cache_hits_skip_the_model(nli_dir, tmp_path):
    db = tmp_path / "cache.sqlite"
    be = HFNLIBackend(str(nli_dir), cache=db, device="cpu")
    first = be.score(items3())
    calls = count_forwards(be)
    second = be.score(items3())
    assert calls["n"] == 0 and be.stats["cache_hits"] == 18
    for x, y in zip(first, second, strict=True):
        np.testing.assert_array_equal(x.entail, y.entail)
        np.testing.assert_array_equal(x.contradict, y.contradict)
    fresh = HFNLIBackend(str(nli_dir), cache=db, device="cpu")  # persistent across instances
    calls_fresh = count_forwards(fresh)
    fresh.score(items3()[:1])
    assert calls_fresh["n"] == 0
    fresh.score(items3()[:1], with_question=True)  # different key -> scored
    assert calls_fresh["n"] == 1
    assert len(EntailmentCache(db)) == 18 + 6


def test_default_cache_location(nli_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SHAPLEY_CACHE_DIR", str(tmp_path))
    be = load_backend(f"hf:{nli_dir}", device="cpu")
    be.score([("q", ["paris", "rome"])])
    assert (tmp_path / "entail" / "entail.sqlite").is_file()


def test_with_question_prepends_question(nli_dir):
    be = HFNLIBackend(str(nli_dir), cache=False, device="cpu")
    seen = []
    inner = be._score_groups

    def spy(groups):
        seen.append([list(g) for g in groups])
        return inner(groups)

    be._score_groups = spy
    plain = be.score([("capital of france?", ["paris", "london"])])[0]
    withq = be.score([("capital of france?", ["paris", "london"])], with_question=True)[0]
    assert seen[0] == [["london", "paris"]]
    assert seen[1] == [["capital of france? london", "capital of france? paris"]]
    assert not np.allclose(plain.entail, withq.entail)


def test_unicode_empty_and_small_inputs(nli_dir):
    be = HFNLIBackend(str(nli_dir), cache=False, device="cpu")
    r = be.score([("¿qué?", ["", "café ☕", "日本 東京", ""]), ("q", []), ("q", ["solo"])])
    assert r[0].entail.shape == (4, 4) and np.all(np.isfinite(r[0].entail))
    assert np.all((r[0].entail >= 0) & (r[0].entail <= 1))
    np.testing.assert_array_equal(r[0].entail[0], r[0].entail[3])  # the two empty answers are one text
    assert r[1].entail.shape == (0, 0)
    np.testing.assert_array_equal(r[2].entail, [[1.0]])


def test_bad_specs_and_missing_models(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="hf:"):
        load_backend("deberta")
    with pytest.raises(ValueError, match="unknown"):
        load_backend("foo:bar")
    with pytest.raises(ValueError, match="unknown"):  # not text: uqlm's ShapleyScorer(entailment=3) reaches here
        load_backend(3)  # type: ignore[arg-type]
    with pytest.raises(ModelNotAvailableError, match="embedding:minilm") as err:
        load_backend("hf:shapley-tests/no-such-nli-model", cache=False)
    assert "llm:smollm2" in str(err.value) and "substituted" in str(err.value)
    with pytest.raises(ModelNotAvailableError, match="embedding:minilm"):
        load_backend("embedding:shapley-tests/no-such-embedder", cache=False)
    with pytest.raises(ModelNotAvailableError):
        load_backend(f"hf:{tmp_path / 'nowhere' / 'x'}", cache=False)


def test_an_uncached_hub_model_is_downloaded_when_online_and_a_failed_download_is_named(monkeypatch, tmp_path):
    """local_model_folder: a hub id not in the cache is downloaded (the README's promise for the default NLI model)
    unless offline; a failed download raises ModelNotAvailableError naming why. The hub is a stand-in."""
    import huggingface_hub

    from shapley.pipeline.entail.base import local_model_folder

    calls = []

    def fake_download(repo_id, local_files_only=False, **kw):
        calls.append((repo_id, local_files_only))
        if local_files_only:
            raise FileNotFoundError("not cached")
        if repo_id.endswith("unreachable"):
            raise ConnectionError("no route to host")
        return str(tmp_path)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    assert local_model_folder("hf", "org/nli") == tmp_path
    assert calls == [("org/nli", True), ("org/nli", False)]
    with pytest.raises(
        ModelNotAvailableError, match=r"downloading it failed \(ConnectionError: no route to host\); check"
    ):
        local_model_folder("hf", "org/unreachable")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    calls.clear()
    with pytest.raises(ModelNotAvailableError, match="offline mode is on"):
        local_model_folder("hf", "org/nli")
    assert calls == [("org/nli", True)]  # offline: the cache only


def test_a_snapshot_downloaded_without_other_frameworks_weights_is_found_offline(monkeypatch, tmp_path):
    """A hub cache as an online snapshot_download(ignore_patterns=HUB_IGNORE) leaves it: the repo's tree listing
    names tf_model.h5, which was not fetched. Offline, local_model_folder still finds the snapshot (a lookup without
    the same patterns calls it incomplete). The listing is written with huggingface_hub's own (private) helper,
    pinned at 2.4.0 in constraints.txt."""
    from huggingface_hub._tree_cache import TreeCacheEntry, write_tree_cache

    from shapley.pipeline.entail.base import local_model_folder
    from shapley.pipeline.generate.models import local_snapshot

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    commit, storage = "a" * 40, tmp_path / "models--org--nli"
    (storage / "refs").mkdir(parents=True)
    (storage / "refs" / "main").write_text(commit)
    snapshot = storage / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for name in ("config.json", "pytorch_model.bin"):
        (snapshot / name).write_text("{}")
    listing = {
        name: TreeCacheEntry(size=2, blob_id=name) for name in ("config.json", "pytorch_model.bin", "tf_model.h5")
    }
    write_tree_cache(str(storage), commit, listing)
    assert local_snapshot("org/nli") is None  # what the lookup without patterns said
    assert local_model_folder("hf", "org/nli") == snapshot


def test_embedding_backend_on_tiny_encoder(backend_specs):
    be = load_backend(backend_specs["embedding"], cache=False, device="cpu")
    assert isinstance(be, EmbeddingBackend) and not be.is_nli
    res = be.score(items3())
    for r in res:
        assert r.contradict is None and r.entail.shape == (3, 3)
        np.testing.assert_allclose(r.entail, r.entail.T, atol=1e-9)  # cosine is symmetric
        assert np.all((r.entail >= 0) & (r.entail <= 1))
        np.testing.assert_array_equal(np.diag(r.entail), 1.0)
    emb = be.embed(["paris", "london"])
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-6)
    expect = float(np.clip(emb[0] @ emb[1], 0, 1))
    assert be.score([("q", ["paris", "london"])])[0].entail[0, 1] == pytest.approx(expect, abs=1e-6)
    # 3 texts per question, each question's texts in one forward pass whatever the batch_size
    fresh = load_backend(backend_specs["embedding"], cache=False, device="cpu")
    fresh.score(items3())
    assert fresh.stats["forward_passes"] == 3


def test_llm_judge_on_tiny_causal_lm(backend_specs, tmp_path):
    be = load_backend(backend_specs["llm"], cache=tmp_path / "c.sqlite", device="cpu")
    assert isinstance(be, LLMJudgeBackend) and not be.is_nli
    res = be.score(items3())
    assert be.stats["forward_passes"] == 3  # one pass per question (6 pairs each), whatever the batch_size
    for r in res:
        assert r.entail.shape == r.contradict.shape == (3, 3)
        off = ~np.eye(3, dtype=bool)
        assert np.all(r.entail[off] + r.contradict[off] < 1)  # "maybe" keeps the rest
        assert np.all(r.entail[off] > 0) and np.all(r.contradict[off] > 0)
    again = be.score(items3())
    assert be.stats["forward_passes"] == 3  # all cached
    np.testing.assert_array_equal(again[0].entail, res[0].entail)


# --------------------------------------------------------------------------------------------------
# cache integrity (reliability issue, items 2 and 11)


def _sql(path, statement, *args):
    import sqlite3

    con = sqlite3.connect(path)
    with con:
        con.execute(statement, args)
    con.close()


@pytest.mark.parametrize(
    ("edit", "match"),
    [("entail = 0.123", "18 row"), ("entail = 'not a number', contradict = 'x'", "no probability")],
)
def test_edited_cache_rows_are_recomputed_with_a_warning(nli_dir, tmp_path, edit, match):
    """Rewriting cached values (to another number, or to text) must not change results: the row checksum and the
    probability check catch it."""
    db = tmp_path / "c.sqlite"
    first = HFNLIBackend(str(nli_dir), cache=db, device="cpu").score(items3())
    _sql(db, f"UPDATE pairs SET {edit}")
    be = HFNLIBackend(str(nli_dir), cache=db, device="cpu")
    with pytest.warns(RuntimeWarning, match=match):
        again = be.score(items3())
    assert be.stats["cache_rows_redone"] == 18 and be.stats["cache_hits"] == 0 and be.stats["pairs_scored"] == 18
    for x, y in zip(first, again, strict=True):
        np.testing.assert_allclose(x.entail, y.entail, atol=1e-6)
    fresh = HFNLIBackend(str(nli_dir), cache=db, device="cpu")  # the recomputed rows were stored with checksums
    fresh.score(items3())
    assert fresh.stats["cache_hits"] == 18 and fresh.stats["cache_rows_redone"] == 0


@pytest.mark.parametrize("when", ["at open", "during a run"])
def test_corrupt_cache_file_is_rebuilt_with_a_warning_naming_it(nli_dir, tmp_path, when):
    db = tmp_path / "entail.sqlite"
    if when == "at open":
        db.write_bytes(b"this is not an sqlite database" * 100)
        with pytest.warns(RuntimeWarning, match=str(db)):
            be = HFNLIBackend(str(nli_dir), cache=db, device="cpu")
    else:
        be = HFNLIBackend(str(nli_dir), cache=db, device="cpu")
        be.score(items3()[:1])
        db.write_bytes(b"garbage" * 1000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = be.score(items3())
    assert len(res) == 3 and np.all(np.isfinite(res[0].entail))
    if when == "during a run":
        assert any(str(db) in str(w.message) and "corrupt" in str(w.message) for w in caught)
    assert sorted(p.name.split(".corrupt-")[0] for p in tmp_path.glob("*.corrupt-*")) == ["entail.sqlite"]
    assert len(EntailmentCache(db)) == 18  # the rebuilt cache works


def test_locked_cache_is_not_mistaken_for_corruption(tmp_path):
    import sqlite3

    from shapley.pipeline.entail.cache import is_corrupt

    assert not is_corrupt(sqlite3.OperationalError("database is locked"))
    assert is_corrupt(sqlite3.DatabaseError("file is not a database"))


# --------------------------------------------------------------------------------------------------
# truncation (reliability issue, item 6)


def test_long_pairs_are_truncated_with_a_warning_and_counted(nli_dir):
    """Two long answers that differ only at the end: the model reads both cut to its limit (they look the
    same); that must be said and counted, not silent."""
    be = HFNLIBackend(str(nli_dir), cache=False, device="cpu")
    assert be.max_length == 128  # the tiny model's position limit caps the requested 512
    long_a = "paris is the capital of france " * 60 + "yes"
    long_b = "paris is the capital of france " * 60 + "no"
    with pytest.warns(TruncatedInputWarning, match="6 premise-hypothesis pair"):
        r = be.score([("q", [long_a, long_b, "rome"])])[0]
    assert be.stats["truncated_texts"] == 6  # every ordered pair holding a long answer
    assert r.entail.shape == (3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncatedInputWarning)
        be.score(items3())  # short pairs are not counted
    assert be.stats["truncated_texts"] == 6


def test_embedding_backend_counts_truncated_texts(backend_specs):
    be = load_backend(backend_specs["embedding"], cache=False, device="cpu")
    limit = be.model.max_seq_length
    long_a = "paris " * (2 * limit) + "yes"
    long_b = "paris " * (2 * limit) + "no"
    with pytest.warns(TruncatedInputWarning, match="2 text"):
        r = be.score([("q", [long_a, long_b])])[0]
    assert be.stats["truncated_texts"] == 2
    assert r.entail[0, 1] == pytest.approx(1.0, abs=1e-6)  # what the warning is about: cut texts look identical


# --------------------------------------------------------------------------------------------------
# batching: token budget, one tokenisation, out-of-memory


def test_pairs_are_tokenised_once_and_batched_by_a_token_budget(nli_dir, monkeypatch):
    from shapley.pipeline.entail import nli as entail_nli

    monkeypatch.setitem(entail_nli.PASS_LIMITS, "cpu", (1000, 40, 0.0))  # the CUDA kind of limits, on a CPU
    be = HFNLIBackend(str(nli_dir), cache=False, device="cpu")
    encoded = []
    inner_tokenize = be._tokenize
    be._tokenize = lambda premises, hypotheses: (encoded.append(len(premises)), inner_tokenize(premises, hypotheses))[1]
    shapes = []
    inner = be.model.forward

    def spy(*args, **kw):
        shapes.append(tuple(kw["input_ids"].shape))
        return inner(*args, **kw)

    be.model.forward = spy
    be.score(items3())
    assert encoded == [18]  # one tokenisation call for all pairs
    assert sum(n for n, _ in shapes) == 18 and all(n * length <= 40 for n, length in shapes)
    assert sum(n for n, _ in shapes[:2]) == 6  # the first question's 6 pairs come first, in passes of their own
    lengths = [length for _, length in shapes[:2]]
    assert lengths == sorted(lengths, reverse=True)  # longest first within a question, so each pass pads little
    assert be.stats["batch_max"] == max(n for n, _ in shapes)


def test_token_type_ids_are_read_where_the_model_takes_them(nli_dir):
    from transformers import BertTokenizerFast

    be = HFNLIBackend(str(nli_dir), cache=False, device="cpu")
    premises, hypotheses = ["paris", "", "café ☕ the answer"], ["london berlin", "x", ""]
    assert set(be._tokenize(premises, hypotheses)[0]) == {"input_ids"}
    be.tokenizer = BertTokenizerFast(tokenizer_object=make_wordpiece_tokenizer().backend_tokenizer)
    enc, _ = be._tokenize(premises, hypotheses)  # a tokenizer whose model takes token type ids
    ref = be.tokenizer(premises, hypotheses)
    assert enc["input_ids"] == ref["input_ids"] and enc["token_type_ids"] == ref["token_type_ids"]
    assert any(1 in t for t in enc["token_type_ids"])


def test_cache_keys_of_many_pairs_equal_the_keys_one_at_a_time():
    pairs = [("paris", "london"), ('quo"te', "ünï ☕"), ("", "x")]
    many = EntailmentCache.keys("hf:m", "fp|bf16", True, pairs, "rule|group")
    assert many == [EntailmentCache.keys("hf:m", "fp|bf16", True, [pair], "rule|group")[0] for pair in pairs]
    assert len(set(many)) == len(pairs)


def test_plan_passes():
    lengths = np.array([3, 10, 7, 7, 2, 50])
    batches = plan_passes(lengths, max_rows=3, max_tokens=21)
    assert [list(b) for b in batches] == [[5], [1, 2], [3, 0, 4]]  # 50 > budget goes alone
    assert [list(b) for b in plan_passes(lengths, 4, None)] == [[5, 1, 2, 3], [0, 4]]
    # fill 0.6: a pass ends before a pair shorter than 0.6 x its longest (50 -> alone; 10, 7, 7; 3; 2)
    assert [list(b) for b in plan_passes(lengths, 4, None, fill=0.6)] == [[5], [1, 2, 3], [0, 4]]


def test_out_of_memory_nli_batch_is_split_and_not_cached(nli_dir, tmp_path):
    reference = HFNLIBackend(str(nli_dir), cache=False, device="cpu").score(items3())
    be = HFNLIBackend(str(nli_dir), cache=tmp_path / "c.sqlite", device="cpu")
    inner = be.model.forward

    def limited(*args, **kw):
        if kw["input_ids"].shape[0] > 5:
            raise torch.OutOfMemoryError("CUDA out of memory (fake)")
        return inner(*args, **kw)

    be.model.forward = limited
    with pytest.warns(RuntimeWarning, match="not stored in the cache"):
        res = be.score(items3())
    assert be.stats["oom_splits"] >= 1 and be.stats["batch_max"] <= 5
    assert len(be.cache) == 0  # values off the batch rule are never served to another run
    for x, y in zip(reference, res, strict=True):
        np.testing.assert_allclose(x.entail, y.entail, atol=1e-6)


# --------------------------------------------------------------------------------------------------
# batch invariance ("same inputs, same numbers", item 1): a pair's probabilities are bit-identical
# whatever else is in the call, whatever the batch size, and whatever the cache held


def _save_tiny_encoder(path):
    from transformers import BertConfig, BertModel

    tok = make_wordpiece_tokenizer()
    torch.manual_seed(1)
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _save_tiny_llama(path):
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = make_wordpiece_tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=0,
        eos_token_id=3,
        bos_token_id=None,
    )
    LlamaForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def backend_specs(tmp_path_factory):
    root = tmp_path_factory.mktemp("invariance")
    return {
        "hf": f"hf:{save_nli(root / 'nli', init=0.1)}",
        "embedding": f"embedding:{_save_tiny_encoder(root / 'enc')}",
        "llm": f"llm:{_save_tiny_llama(root / 'lm')}",
    }


TARGET = ("capital of france?", ["paris", "the answer is paris", "london berlin madrid rome", "paris"])
OTHERS = [
    ("who wrote hamlet?", ["shakespeare did", "who wrote hamlet shakespeare did", "paris", "the answer is paris"]),
    ("a city?", ["berlin", "madrid rome", "first answer second answer does the first answer imply the second"]),
    ("again?", ["london berlin madrid rome", "paris", "maybe yes no"]),
]


#: the CPU in float32; CUDA (bf16 for the NLI classifier) where a GPU is present
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def _same(a, b):
    np.testing.assert_array_equal(a.entail, b.entail)
    if a.contradict is None:
        assert b.contradict is None
    else:
        np.testing.assert_array_equal(a.contradict, b.contradict)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["hf", "embedding", "llm"])
def test_pair_probabilities_are_bit_identical_whatever_the_call_and_the_cache(backend_specs, kind, device, tmp_path):
    """(a) one question alone vs. among others (that share some of its answers), in any order; (b) a cache filled
    by another run (other questions in its calls) serves exactly the numbers a cold run computes."""
    be = load_backend(backend_specs[kind], cache=False, device=device)
    alone = be.score([TARGET])[0]
    off = ~np.eye(4, dtype=bool)
    assert np.ptp(alone.entail[off]) > 1e-4  # the probabilities vary: equality is not met by constant outputs
    _same(alone, be.score([*OTHERS, TARGET])[-1])
    _same(alone, be.score([TARGET, *OTHERS[::-1]])[0])
    with_q = be.score([TARGET, *OTHERS], with_question=True)[0]
    _same(with_q, be.score([TARGET], with_question=True)[0])
    cold = be.score([TARGET, *OTHERS])
    db = tmp_path / "c.sqlite"
    filler = load_backend(backend_specs[kind], cache=db, device=device)
    filler.score([OTHERS[0], TARGET])
    filler.score([OTHERS[2]])
    warm = load_backend(backend_specs[kind], cache=db, device=device)
    got = warm.score([TARGET, *OTHERS])
    assert warm.stats["cache_hits"] > 0 and warm.stats["pairs_scored"] > 0  # part served, part computed
    for x, y in zip(cold, got, strict=True):
        _same(x, y)


# --------------------------------------------------------------------------------------------------
# --entail-cache paths that cannot hold the cache (reliability issue 17, item 6)


def test_a_directory_as_cache_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError, match=f"{tmp_path}.*is a directory"):
        EntailmentCache(tmp_path)


def test_a_device_as_cache_is_refused_and_left_in_place():
    with pytest.raises(ValueError, match="/dev/null is not a regular file"):
        EntailmentCache("/dev/null")
    import os
    import stat

    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # not moved aside as a "corrupt" cache


def test_a_cache_in_a_folder_that_cannot_be_made_is_refused(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match=f"{blocker / 'c.sqlite'}: cannot"):
        EntailmentCache(blocker / "c.sqlite")


def test_a_read_only_folder_is_refused_naming_the_path(tmp_path, monkeypatch):
    import os

    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.geteuid() == 0:  # root writes anywhere: check the refusal through os.access's answer
            monkeypatch.setattr(os, "access", lambda *a, **k: False)
        with pytest.raises(ValueError, match=f"{folder / 'c.sqlite'}.*no permission"):
            EntailmentCache(folder / "c.sqlite")
    finally:
        folder.chmod(0o755)


def test_sqlite_open_errors_become_value_errors_naming_the_path(tmp_path, monkeypatch):
    import sqlite3

    def refuse(*args, **kwargs):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite3, "connect", refuse)
    with pytest.raises(ValueError, match=f"{tmp_path / 'c.sqlite'}.*cannot open it"):
        EntailmentCache(tmp_path / "c.sqlite")


def test_the_input_file_as_cache_is_refused(tmp_path):
    from shapley.pipeline.config import DataSettings, RunConfig, RuntimeSettings

    data = tmp_path / "samples.jsonl"
    data.write_text("{}\n")
    settings = DataSettings(dataset="custom", source="file", path=str(data))
    with pytest.raises(ValueError, match="--entail-cache .* is the input file"):
        RunConfig("score-samples", settings, runtime=RuntimeSettings(entail_cache=str(data)))
    assert data.read_text() == "{}\n"
    RunConfig("score-samples", settings, runtime=RuntimeSettings(entail_cache=str(tmp_path / "c.sqlite")))
