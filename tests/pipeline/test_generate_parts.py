"""The parts a Generator holds, each on its own: the prompt builder and the decoder, built directly over the tiny
random Llama and BPE tokenizer of ``test_generate``; and the generator's self-evaluation."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from shapley.pipeline.generate.config import GenerationConfig  # noqa: E402
from shapley.pipeline.generate.decode import Decoder  # noqa: E402
from shapley.pipeline.generate.generator import Generator  # noqa: E402
from shapley.pipeline.generate.models import CausalLM  # noqa: E402
from shapley.pipeline.generate.prompts import (  # noqa: E402
    MIN_PREFIX_TOKENS,
    TRUE_FALSE,
    PromptBuilder,
    a4c_prompt,
    p_true_prompt,
)
from tests.pipeline.test_generate import make_model, make_tokenizer, records, shared_records  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def lm():
    tok = make_tokenizer()
    return CausalLM(make_model(len(tok)), tok)


def config(**kw) -> GenerationConfig:
    base = dict(n_samples=3, max_new_tokens=6, batch_size=8, stop=("\n",))
    base.update(kw)
    return GenerationConfig(**base)


def parts(lm, **kw):
    cfg, stats = config(static_cache=False, **kw), {}
    prompts = PromptBuilder(lm, cfg, stats)
    return prompts, Decoder(lm, cfg, stats, prompts)


def test_prompt_builder_encodes_the_expected_prompt(lm):
    prompts, _ = parts(lm)
    tok = lm.tokenizer
    assert prompts.encode("Q: hi") == list(tok.encode("Q: hi", add_special_tokens=True))
    assert prompts.encode("Q: hi", "A:") == list(tok.encode("Q: hi\nA:", add_special_tokens=True))
    assert prompts.decode_text(prompts.encode("Q: What is 1 plus 1?")) == "Q: What is 1 plus 1?"


def test_prompt_builder_splits_at_the_shared_prefix_and_keeps_its_own_caches(lm):
    on, _ = parts(lm, prefix_cache=True)
    off, _ = parts(lm, prefix_cache=False)
    ids, split = on.record_prompt(shared_records(1)[0])
    assert split >= MIN_PREFIX_TOKENS and split < len(ids)
    assert off.record_prompt(shared_records(1)[0]) == (ids, 0)
    state = on.prefill(ids, split)
    assert state.length == len(ids) and state.logits.shape == (1, len(lm.tokenizer))
    assert on.stats["prefix_prefills"] == 1 and on.stats["prefix_tokens_reused"] == split
    assert off.stats["prefix_prefills"] == 0 and off.stats["prompt_prefills"] == 0  # nothing shared between builders


def test_prompt_builder_refuses_a_missing_chat_template(lm):
    with pytest.raises(ValueError, match="no chat template"):
        PromptBuilder(lm, config(chat_template=True), {})


def test_decoder_greedy_row_is_the_argmax_and_stops_at_eos(lm):
    prompts, decoder = parts(lm, stop=())
    ids = prompts.encode("Q: hi\nA:")
    row = decoder.decode_prompt(ids, [None], 4)[0]
    expected, seq = [], list(ids)
    for _ in range(len(row.tokens)):
        nxt = int(lm.model(torch.tensor([seq])).logits[0, -1].argmax())
        expected.append(nxt)
        seq.append(nxt)
    assert row.tokens == expected
    assert lm.pad_id == lm.tokenizer.pad_token_id and lm.tokenizer.eos_token_id in lm.eos_ids
    every = CausalLM(lm.model, lm.tokenizer)
    every.eos_ids = set(range(len(lm.tokenizer)))
    _, ending = parts(every, stop=())  # the stop tables are the decoder's own, built from its model's end ids
    assert ending.decode_prompt(ids, [3], 4)[0].tokens == []


def test_decoder_batch_sizes_and_out_of_memory_cap(lm):
    _, decoder = parts(lm, batch_size=5, rows_per_batch=3)
    assert decoder.batch_rows() == 3
    assert parts(lm, batch_size=None, n_samples=10)[1].batch_rows() == 11  # CPU: one question's rows

    def run(chunk):
        if len(chunk) > 2:
            raise RuntimeError("CUDA out of memory")
        return chunk

    with pytest.warns(RuntimeWarning, match="ran out of device memory"):
        assert decoder.in_batches(list(range(7)), 4, run) == list(range(7))
    assert decoder.batch_rows() == 2 and decoder.stats["oom_splits"] >= 1


def test_self_evaluation_runs_the_greedy_answers_prompts_alone(lm):
    """p(True) is the class probability of "A" for the p(True) prompt of the question, the samples and the greedy
    answer, and A4C the greedy reply to the A4C prompt, each computed as on its own."""
    whole = Generator(lm.model, config(p_true=True, a4c=True), tokenizer=lm.tokenizer)
    probs = whole.class_probabilities([("Is it true?", "Answer:"), ("Q: hi", "A:")], TRUE_FALSE)
    assert probs.shape == (2, 2) and np.allclose(probs.sum(axis=1), 1.0)
    rec = records(1)[0]
    gen = whole.generate([rec])[0]
    assert gen.p_true is not None and 0.0 <= gen.p_true <= 1.0 and isinstance(gen.a4c_text, str)
    alone = Generator(lm.model, config(), tokenizer=lm.tokenizer)
    p_true = alone.class_probabilities([p_true_prompt(rec.question, gen.samples, gen.answer)], TRUE_FALSE)[0, 0]
    prompts, decoder = parts(lm)
    a4c_ids = prompts.encode(*a4c_prompt(rec.question, gen.answer))
    reply = decoder.decode_prompt(a4c_ids, [None], whole.config.a4c_max_new_tokens)[0].text
    assert (gen.p_true, gen.a4c_text) == (float(p_true), reply)
