#!/usr/bin/env bash
# SLURM job array for a `python -m shapley run` or `score-samples` command: one array task per shard (one GPU
# each), then a merge job that starts only when every task has succeeded (--dependency=afterok). The script only
# submits jobs with sbatch; SLURM schedules, retries and accounts for them.
#
# Usage (on a login node, from the repository root; jobs start in the directory they were submitted from):
#   K=8 OUT=runs/triviaqa-llama-2-7b bash scripts/slurm_array.sh run --dataset triviaqa --source online \
#       --model meta-llama/Llama-2-7b-hf --entailment hf:microsoft/deberta-large-mnli --n-samples 10 \
#       --limit 8000 --dtype bfloat16
#
# Environment (exported to the jobs, as sbatch does by default):
#   K                  (required) number of shards = array tasks 0..K-1.
#   OUT                (required) folder of everything: OUT/shards/<i> (the shard run directories),
#                      OUT/logs/ (the jobs' output) and OUT/merged (the merged run directory).
#   ENTAIL_CACHE_DIR   folder of the per-shard entailment caches shard-<i>.sqlite (default OUT/cache). Each file
#                      has one writer, so a shared file system is safe; a node-local folder (e.g. $TMPDIR) is
#                      faster and only costs the cache when a task is requeued elsewhere.
#   SBATCH_ARRAY_OPTS  sbatch options of the array tasks (default "--gres=gpu:1 --cpus-per-task=4 --time=24:00:00").
#   SBATCH_MERGE_OPTS  sbatch options of the merge job (default "--cpus-per-task=2 --time=02:00:00").
#   MAX_PARALLEL       at most this many tasks at once (the %N of --array; default: no limit).
#   SHAPLEY            how to call the command line (default: "${PYTHON:-python} -m shapley").
#
# The arguments go to every task unchanged; the script adds --shard i/K, --output and --entail-cache itself, so
# do not give those. A failed task can be resubmitted alone (sbatch --array=<i> ...): its run directory resumes.
# Inside the jobs the script runs itself in the role named by its first argument: _task (shard
# $SLURM_ARRAY_TASK_ID of K) or _merge.
set -euo pipefail

if [ $# -lt 1 ]; then
  sed -n '2,27p' "$0" >&2
  exit 2
fi
SHAPLEY=${SHAPLEY:-"${PYTHON:-python} -m shapley"}
: "${K:?set K to the number of shards (see the header of $0)}"
: "${OUT:?set OUT to the folder for the shards and the merged run (see the header of $0)}"
CACHE=${ENTAIL_CACHE_DIR:-$OUT/cache}

case "${1:-}" in
  _task)
    shift
    i=${SLURM_ARRAY_TASK_ID:?_task runs inside a SLURM array job}
    mkdir -p "$CACHE"
    # $SHAPLEY is split into words on purpose (e.g. "python -m shapley").
    # shellcheck disable=SC2086
    exec $SHAPLEY "$@" --shard "$i/$K" --output "$OUT/shards/$i" --entail-cache "$CACHE/shard-$i.sqlite"
    ;;
  _merge)
    shards=()
    for ((i = 0; i < K; i++)); do shards+=("$OUT/shards/$i"); done
    # shellcheck disable=SC2086
    exec $SHAPLEY merge "${shards[@]}" --output "$OUT/merged"
    ;;
esac

# Sourced only here, on the submitting node: SLURM runs a copy of this script from its spool folder.
# shellcheck source=scripts/launcher_checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/launcher_checks.sh"
refuse_own_options "$0" "$@"
require_positive_int "$0" K "$K"
if [ -n "${MAX_PARALLEL:-}" ]; then require_positive_int "$0" MAX_PARALLEL "$MAX_PARALLEL"; fi
mkdir -p "$OUT/logs"
read -r -a array_opts <<< "${SBATCH_ARRAY_OPTS:---gres=gpu:1 --cpus-per-task=4 --time=24:00:00}"
read -r -a merge_opts <<< "${SBATCH_MERGE_OPTS:---cpus-per-task=2 --time=02:00:00}"
script=$(realpath "$0")

array_id=$(sbatch --parsable --array="0-$((K - 1))${MAX_PARALLEL:+%$MAX_PARALLEL}" --job-name=shapley-shards \
  --output="$OUT/logs/shard-%a.log" "${array_opts[@]}" "$script" _task "$@")
array_id=${array_id%%;*}
merge_id=$(sbatch --parsable --dependency="afterok:$array_id" --job-name=shapley-merge \
  --output="$OUT/logs/merge.log" "${merge_opts[@]}" "$script" _merge)
echo "submitted array job ${array_id} (shards 0..$((K - 1)) of $K) and merge job ${merge_id%%;*}"
echo "merged run, once done: $OUT/merged"
