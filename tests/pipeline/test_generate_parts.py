"""The three parts a Generator holds, each on its own: the prompt builder, the decoder and the self-evaluator,
built directly over the tiny random Llama and BPE tokenizer of ``test_generate``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from shapley.pipeline.generate.config import _TRUE_FALSE, GenerationConfig  # noqa: E402
from shapley.pipeline.generate.decode import Decoder  # noqa: E402
from shapley.pipeline.generate.generator import Generator  # noqa: E402
from shapley.pipeline.generate.models import CausalLM  # noqa: E402
from shapley.pipeline.generate.prompts import MIN_PREFIX_TOKENS, PromptBuilder  # noqa: E402
from shapley.pipeline.generate.selfeval import SelfEvaluator  # noqa: E402
from shapley.pipeline.rundir.records import Generation  # noqa: E402
from tests.pipeline.test_generate import make_model, make_tokenizer, records, shared_records  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def lm():
    tok = make_tokenizer()
    return CausalLM(make_model(len(tok)), tok)


def config(**kw) -> GenerationConfig:
    base = dict(n_samples=3, max_new_tokens=6, batch_size=8, stop=("\n",), progress=False)
    base.update(kw)
    return GenerationConfig(**base)


def parts(lm, **kw):
    cfg, stats = config(**kw), {"batch_size": None, "decode_batches": 0, "batch_rows_used": [], "decode_steps": 0}
    stats.update(rows_dropped=0, tokens_generated=0, stop_checks=0, oom_splits=0)
    prompts = PromptBuilder(lm, cfg, stats, static=False)
    prompts.count_prefills()
    decoder = Decoder(lm, cfg, stats, prompts)
    return prompts, decoder, SelfEvaluator(lm, cfg, prompts, decoder)


def test_prompt_builder_encodes_the_expected_prompt(lm):
    prompts, _, _ = parts(lm)
    tok = lm.tokenizer
    assert prompts.encode("Q: hi") == list(tok.encode("Q: hi", add_special_tokens=True))
    assert prompts.encode("Q: hi", "A:") == list(tok.encode("Q: hi\nA:", add_special_tokens=True))
    assert prompts.decode_text(prompts.encode("Q: What is 1 plus 1?")) == "Q: What is 1 plus 1?"


def test_prompt_builder_splits_at_the_shared_prefix_and_keeps_its_own_caches(lm):
    on, _, _ = parts(lm, prefix_cache=True)
    off, _, _ = parts(lm, prefix_cache=False)
    ids, split = on.record_prompt(shared_records(1)[0])
    assert split >= MIN_PREFIX_TOKENS and split < len(ids)
    assert off.record_prompt(shared_records(1)[0]) == (ids, 0)
    state = on.prefill(ids, split)
    assert state.length == len(ids) and state.logits.shape == (1, len(lm.tokenizer))
    assert on.stats["prefix_prefills"] == 1 and on.stats["prefix_tokens_reused"] == split
    assert off.stats["prefix_prefills"] == 0 and off.stats["prompt_prefills"] == 0  # nothing shared between builders


def test_prompt_builder_refuses_a_missing_chat_template(lm):
    with pytest.raises(ValueError, match="no chat template"):
        PromptBuilder(lm, config(chat_template=True), {}, static=False)


def test_decoder_greedy_row_is_the_argmax_and_stops_at_eos(lm):
    prompts, decoder, _ = parts(lm, stop=())
    ids = prompts.encode("Q: hi\nA:")
    row = decoder.decode_prompt(ids, [None], 4)[0]
    expected, seq = [], list(ids)
    for _ in range(len(row.tokens)):
        nxt = int(lm.model(torch.tensor([seq])).logits[0, -1].argmax())
        expected.append(nxt)
        seq.append(nxt)
    assert row.tokens == expected
    assert decoder.pad_id == lm.tokenizer.pad_token_id and lm.tokenizer.eos_token_id in decoder.eos_ids
    decoder.eos_ids = set(range(len(lm.tokenizer)))
    decoder._tables = None  # the stop tables are the decoder's own state, rebuilt from its end-of-sequence ids
    assert decoder.decode_prompt(ids, [3], 4)[0].tokens == []


def test_decoder_batch_sizes_and_out_of_memory_cap(lm):
    _, decoder, _ = parts(lm, batch_size=5, rows_per_batch=3)
    assert decoder.batch_rows() == 3
    assert parts(lm, batch_size=None, n_samples=10)[1].batch_rows() == 11  # CPU: one question's rows

    def run(chunk):
        if len(chunk) > 2:
            raise RuntimeError("CUDA out of memory")
        return chunk

    with pytest.warns(RuntimeWarning, match="ran out of device memory"):
        assert decoder.in_batches(list(range(7)), 4, run) == list(range(7))
    assert decoder.batch_rows() == 2 and decoder.stats["oom_splits"] >= 1


def test_self_evaluator_class_probabilities_and_evaluate_match_the_generator(lm):
    _, _, evaluator = parts(lm, p_true=True, a4c=True)
    probs = evaluator.class_probabilities([("Is it true?", "Answer:"), ("Q: hi", "A:")], _TRUE_FALSE)
    assert probs.shape == (2, 2) and np.allclose(probs.sum(axis=1), 1.0)
    rec = records(1)[0]
    gen = Generation(id=rec.id, samples=["Paris", "Lyon"], answer="Paris")
    evaluator.evaluate(rec, gen)
    assert gen.p_true is not None and 0.0 <= gen.p_true <= 1.0 and isinstance(gen.a4c_text, str)
    whole = Generator(lm.model, config(p_true=True, a4c=True), tokenizer=lm.tokenizer)
    again = Generation(id=rec.id, samples=["Paris", "Lyon"], answer="Paris")
    whole.self_evaluator.evaluate(rec, again)
    assert (again.p_true, again.a4c_text) == (gen.p_true, gen.a4c_text)
