#!/usr/bin/env bash
# Regenerate every committed measurement under results/ from one clean commit (`make results`):
#   1. the real LLaMA-13B TriviaQA answers scored at n = 5, 10, 20 (score-samples, MiniLM stand-in), beta sweeps;
#   2. the SmolLM2-135M runs, 100 questions on each of six datasets (scripts/smollm2_runs.sh), beta sweeps;
#   3. the three properties for every estimator (results/axioms);
#   4. the CPU benchmarks (results/bench_shapley.*, results/bench_nli.*).
# It refuses to start when the package's source differs from the commit (the runs would record a dirty tree),
# and it starts the runs from empty directories, so each records exactly one command and one commit.
# Paths in the commands are relative to the repository, as the provenance check of the test-suite requires.
# CPU time: about 2 hours on 2 cores; JOBS=2 (default) runs the SmolLM2 datasets in two processes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
DATA=${DATA:-../shared/data}
JOBS=${JOBS:-2}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

changed=$(git status --porcelain -- shapley pyproject.toml constraints.txt environment.yml Makefile scripts benchmarks)
if [ -n "$changed" ]; then
  echo "error: the source differs from commit $(git rev-parse --short HEAD); commit or stash first:" >&2
  echo "$changed" >&2
  exit 2
fi
echo "regenerating results/ from commit $(git rev-parse HEAD)"

for n in 5 10 20; do
  out=results/triviaqa_llama13b/minilm_n$n
  rm -rf "$out"
  $PY -m shapley score-samples "$DATA/triviaqa_llama13b_samples.jsonl.gz" --entailment embedding:minilm \
    --output "$out" --n-samples "$n" --dataset-label triviaqa --model-label LLaMA-13B --reference-field answer \
    --no-progress
  $PY -m shapley beta-sweep "$out" --n-boot 500
done

rm -rf results/smollm2
if [ "$JOBS" -ge 2 ]; then  # passage datasets (long prompts) in one process, the short ones in the other
  DATASETS="squad coqa bioasq" bash scripts/smollm2_runs.sh 100 &
  DATASETS="nq_open triviaqa svamp" bash scripts/smollm2_runs.sh 100
  wait
else
  bash scripts/smollm2_runs.sh 100
fi

$PY -m shapley.theory --out results/axioms
$PY benchmarks/bench_shapley.py
$PY benchmarks/bench_nli.py --breakdown --threads 1
echo "done: commit the changes under results/ (git add results && git commit)"
