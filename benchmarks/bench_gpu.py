"""GPU throughput with architecture-faithful random weights (no download needed).

* NLI stage: pairs/s of a DeBERTa-large-architecture sequence classifier (the paper's
  microsoft/deberta-large-mnli shape: 24 layers, hidden 1024, 16 heads), batched premise/hypothesis pairs
  of realistic length.
* Generation: new tokens/s of a 7B-architecture causal LM (LLaMA-2-7B shape: 32 layers, hidden 4096,
  11008 MLP, 32 heads), prompt of realistic length, n sampled continuations per prompt.

Random weights built from configs cost the same FLOPs as trained ones. Writes ``results/bench_gpu.json``
with the device named. ``--tiny`` shrinks both models so the script can be smoke-tested on a CPU (its
numbers are then meaningless and the output file is named ``bench_gpu_tiny_cpu.json``, never shown as GPU).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent.parent / "results"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def nli_throughput(device, dtype, batch: int, seq_len: int, tiny: bool, repeats: int = 5) -> dict:
    from transformers import DebertaConfig, DebertaForSequenceClassification

    size = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    if tiny:
        size = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128)
    cfg = DebertaConfig(
        vocab_size=50265,
        max_position_embeddings=512,
        relative_attention=True,
        pos_att_type=["c2p", "p2c"],
        max_relative_positions=-1,
        position_biased_input=False,
        num_labels=3,
        **size,
    )
    model = DebertaForSequenceClassification(cfg).to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, cfg.vocab_size, (batch, seq_len), device=device)
    with torch.inference_mode():
        model(input_ids=ids)  # warm-up
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(repeats):
            model(input_ids=ids)
        _sync(device)
    dt = (time.perf_counter() - t0) / repeats
    params = sum(p.numel() for p in model.parameters())
    return {
        "stage": "nli",
        "architecture": "deberta-large" + (" (tiny)" if tiny else ""),
        "params": params,
        "batch_pairs": batch,
        "seq_len": seq_len,
        "seconds_per_batch": dt,
        "pairs_per_s": batch / dt,
    }


def generation_throughput(device, dtype, prompts: int, n: int, prompt_len: int, new_tokens: int, tiny: bool) -> dict:
    from transformers import LlamaConfig, LlamaForCausalLM

    size = dict(
        hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32
    )
    if tiny:
        size = dict(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2
        )
    cfg = LlamaConfig(vocab_size=32000, max_position_embeddings=4096, **size)
    model = LlamaForCausalLM(cfg).to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, cfg.vocab_size, (prompts, prompt_len), device=device)
    kw = dict(
        do_sample=True,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        num_return_sequences=n,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        pad_token_id=0,
    )
    with torch.inference_mode():
        model.generate(input_ids=ids[:1], **{**kw, "max_new_tokens": 2, "min_new_tokens": 2})  # warm-up
        _sync(device)
        t0 = time.perf_counter()
        out = model.generate(input_ids=ids, **kw)
        _sync(device)
    dt = time.perf_counter() - t0
    generated = out.shape[0] * (out.shape[1] - prompt_len)
    params = sum(p.numel() for p in model.parameters())
    mem = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    return {
        "stage": "generate",
        "architecture": "llama-2-7b" + (" (tiny)" if tiny else ""),
        "params": params,
        "prompts": prompts,
        "samples_per_prompt": n,
        "prompt_len": prompt_len,
        "new_tokens": new_tokens,
        "seconds": dt,
        "new_tokens_per_s": generated / dt,
        "peak_gpu_mem_gib": mem,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="tiny models: a CPU smoke test, not a measurement")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--nli-batch", type=int, default=256)
    ap.add_argument("--nli-seq-len", type=int, default=64, help="tokens per premise+hypothesis pair")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU {platform.processor()}"
    rows = [
        nli_throughput(device, dtype, args.nli_batch, args.nli_seq_len, args.tiny),
        generation_throughput(device, dtype, args.prompts, args.samples, args.prompt_len, args.new_tokens, args.tiny),
    ]
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": name,
        "dtype": str(dtype),
        "torch": torch.__version__,
        "tiny": args.tiny,
        "command": "python benchmarks/bench_gpu.py" + (" --tiny" if args.tiny else ""),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / ("bench_gpu_tiny_cpu.json" if args.tiny or device.type != "cuda" else "bench_gpu.json")
    path.write_text(json.dumps(meta, indent=2) + "\n")
    for r in rows:
        print(r)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
