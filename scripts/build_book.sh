#!/usr/bin/env bash
# Build the Jupyter Book (root = repository root) into _build/html, failing on ANY warning.
#
#   bash scripts/build_book.sh            # incremental (notebook outputs cached in _build/.jupyter_cache)
#   BOOK_CLEAN=1 bash scripts/build_book.sh   # wipe _build first (full rebuild, re-executes notebooks)
#
# Works offline: MathJax is vendored by scripts/fetch_mathjax.sh during `make setup` (npm, once; the call
# below is then a no-op), nothing else is fetched.
# Uses jupyter-book from PATH, else from .venv/bin. Extra arguments are passed to `jupyter-book build`.
#
# One BLAS/torch thread unless set (as `make test`): on a small shared machine, oversubscribed threads made
# pages many times slower. A page whose execution failed fails every build, incremental ones included:
# scripts/book_failures.py reads the execution cache before the build (so the failed pages run again) and
# after it, and the last lines name each failing page and cell.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
case "${BOOK_CLEAN:-0}" in
  0|1) ;;
  *) echo "build_book: BOOK_CLEAN=$BOOK_CLEAN: use BOOK_CLEAN=1 (a clean build) or 0 / unset (incremental)" >&2
     exit 2 ;;
esac

JB="$(command -v jupyter-book || true)"
if [[ -z "$JB" && -x "$ROOT/.venv/bin/jupyter-book" ]]; then
  JB="$ROOT/.venv/bin/jupyter-book"
fi
if [[ -z "$JB" ]]; then
  echo "build_book: jupyter-book not found (pip install -e '.[book]')" >&2
  exit 1
fi
# The notebooks' kernel is the python next to jupyter-book (kernelspec python3 -> sys.executable).
export PATH="$(dirname "$JB"):$PATH"

bash "$ROOT/scripts/fetch_mathjax.sh"

# The execution cache keys a page on its code cells only, so a change of the package or of results/ would leave
# pages showing what the old code computed: when their digest (git's index plus uncommitted edits) differs from the
# one the last build recorded, the build starts clean.
INPUTS="$( { git ls-files -s shapley results; git diff HEAD --binary -- shapley results; } 2>/dev/null | sha256sum )"
if [[ "${BOOK_CLEAN:-0}" == "1" || "$INPUTS" != "$(cat "$ROOT/_build/.inputs_digest" 2>/dev/null)" ]]; then
  rm -rf "$ROOT/_build"
fi

# Offline guarantees for anything the notebooks import.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYDEVD_DISABLE_FILE_VALIDATION=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
export MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}

PY="$(dirname "$JB")/python"
[[ -x "$PY" ]] || PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || PY=python3
mkdir -p "$ROOT/_build"
echo "$INPUTS" >"$ROOT/_build/.inputs_digest"
FAILURES=(env PYTHONPATH="$ROOT" "$PY" "$ROOT/scripts/book_failures.py" --cache "$ROOT/_build/.jupyter_cache" --touch)
# Pages that failed in an earlier build: touched, so that Sphinx reads and executes them again.
"${FAILURES[@]}" >/dev/null || true

# The build's log without the lines no reader can act on (scripts/clean_log.sed says which).
clean_log() { sed -u -E -f "$ROOT/scripts/clean_log.sed"; }

start=$(date +%s)
# -W: warnings are errors; -n: nitpicky (every cross-reference must resolve); --keep-going: report all.
# (pipefail: the status is jupyter-book's, not the filter's.)
status=0
"$JB" build "$ROOT" --builder html -W -n --keep-going "$@" 2>&1 | clean_log || status=$?
check=0
"${FAILURES[@]}" >"$ROOT/_build/failed_pages.txt" 2>&1 || check=$?
if [[ $check -eq 1 ]]; then
  echo "build_book: FAILED: a page's execution failed (it runs again on the next build):" >&2
  cat "$ROOT/_build/failed_pages.txt" >&2
  exit 1
elif [[ $check -ne 0 ]]; then
  echo "build_book: FAILED: could not read the execution cache (scripts/book_failures.py, exit $check):" >&2
  tail -5 "$ROOT/_build/failed_pages.txt" >&2
  exit "$check"
fi
if [[ $status -ne 0 ]]; then
  echo "build_book: FAILED (jupyter-book exit status $status): the warnings above (-W makes each an error)" >&2
  exit "$status"
fi
echo "build_book: built $ROOT/_build/html/index.html in $(( $(date +%s) - start )) s"
