#!/usr/bin/env bash
# The SmolLM2-135M-Instruct runs rendered in the book (CPU). Resumable: re-running continues where it stopped,
# and each step raises the number of questions per dataset (a run's --limit may grow between invocations).
# Usage: [DATASETS="nq_open svamp"] bash scripts/smollm2_runs.sh [LIMIT...]   (default: 100, all six; several
# limits, e.g. 25 50 100, grow the runs in steps)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
# One torch thread: on a shared 2-core machine two threads were several times slower (see the experiments chapter).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
DATASETS=${DATASETS:-nq_open triviaqa svamp bioasq squad coqa}
for limit in ${@:-100}; do
  for ds in $DATASETS; do
    $PY -m shapley run --dataset "$ds" --model smollm2 --entailment embedding:minilm \
      --n-samples 10 --limit "$limit" --temperature 0.5 --max-new-tokens 16 --batch-size 44 \
      --output "results/smollm2/$ds" --no-progress
    $PY -m shapley beta-sweep "results/smollm2/$ds" --n-boot 300
    echo "=== $ds limit $limit done $(date +%T)"
  done
done
