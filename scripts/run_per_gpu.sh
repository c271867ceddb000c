#!/usr/bin/env bash
# One process per GPU: split a `python -m shapley run` or `score-samples` command into K shards (K = the number
# of GPUs), run shard i on GPU i alone (CUDA_VISIBLE_DEVICES), wait for all of them, then merge the shards into
# one run directory that equals the unsharded run (`python -m shapley merge`).
#
# Usage (from the repository root):
#   OUT=runs/triviaqa-llama-2-7b bash scripts/run_per_gpu.sh run --dataset triviaqa --source online \
#       --model meta-llama/Llama-2-7b-hf --entailment hf:microsoft/deberta-large-mnli --n-samples 10 \
#       --limit 8000 --dtype bfloat16
#   OUT=runs/llama13b-scored bash scripts/run_per_gpu.sh score-samples data.jsonl.gz --entailment hf:
#
# Environment:
#   OUT      (required) folder of everything: OUT/shards/<i> (the shard run directories), OUT/cache/shard-<i>.sqlite
#            (each shard's own entailment cache: one writer per sqlite file), OUT/logs/shard-<i>.log (each
#            shard's output) and OUT/merged (the merged run directory).
#   GPUS     the GPU indices to use, space-separated (default: every GPU that nvidia-smi lists).
#   NGPUS    shorthand for GPUS="0 1 ... NGPUS-1".
#   SHAPLEY  how to call the command line (default: "${PYTHON:-python} -m shapley").
#
# The arguments go to every shard unchanged; the script adds --shard i/K, --output and --entail-cache itself, so
# do not give those. Running the same command again resumes every shard (each is a resumable run directory) and
# merges again. Exit status: 2 for bad usage, else that of the first failing shard, else that of the merge.
set -euo pipefail
# shellcheck source=scripts/launcher_checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/launcher_checks.sh"

if [ $# -lt 1 ]; then
  sed -n '2,24p' "$0" >&2
  exit 2
fi
: "${OUT:?set OUT to the folder for the shards and the merged run (see the header of $0)}"
refuse_own_options "$0" "$@"
SHAPLEY=${SHAPLEY:-"${PYTHON:-python} -m shapley"}

if [ -n "${GPUS:-}" ]; then
  read -r -a gpus <<< "$GPUS"
  require_gpu_list "$0" GPUS "${gpus[@]}"
elif [ -n "${NGPUS:-}" ]; then
  require_positive_int "$0" NGPUS "$NGPUS"
  mapfile -t gpus < <(seq 0 $((NGPUS - 1)))
else
  mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader)
fi
K=${#gpus[@]}
if [ "$K" -lt 1 ]; then
  echo "error: no GPU found; set GPUS or NGPUS" >&2
  exit 2
fi

mkdir -p "$OUT/shards" "$OUT/cache" "$OUT/logs"
pids=()
for i in "${!gpus[@]}"; do
  # $SHAPLEY is split into words on purpose (e.g. "python -m shapley").
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=${gpus[$i]} $SHAPLEY "$@" --shard "$i/$K" --output "$OUT/shards/$i" \
    --entail-cache "$OUT/cache/shard-$i.sqlite" > "$OUT/logs/shard-$i.log" 2>&1 &
  pids+=($!)
  echo "shard $i/$K on GPU ${gpus[$i]}: pid ${pids[$i]}, log $OUT/logs/shard-$i.log"
done

status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || {
    rc=$?
    echo "error: shard $i/$K failed (exit $rc); see $OUT/logs/shard-$i.log" >&2
    [ "$status" -ne 0 ] || status=$rc
  }
done
[ "$status" -eq 0 ] || exit "$status"

shards=()
for i in "${!gpus[@]}"; do shards+=("$OUT/shards/$i"); done
# shellcheck disable=SC2086
$SHAPLEY merge "${shards[@]}" --output "$OUT/merged"
