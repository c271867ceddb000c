#!/usr/bin/env bash
# Build the Jupyter Book (root = repository root) into _build/html, failing on ANY warning.
#
#   bash scripts/build_book.sh            # incremental (notebook outputs cached in _build/.jupyter_cache)
#   BOOK_CLEAN=1 bash scripts/build_book.sh   # wipe _build first (full rebuild, re-executes notebooks)
#
# Works offline: MathJax is vendored by scripts/fetch_mathjax.sh during `make setup` (npm, once; the call
# below is then a no-op), nothing else is fetched.
# Uses jupyter-book from PATH, else from .venv/bin. Extra arguments are passed to `jupyter-book build`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

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

if [[ "${BOOK_CLEAN:-0}" == "1" ]]; then
  rm -rf "$ROOT/_build"
fi

# Offline guarantees for anything the notebooks import.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYDEVD_DISABLE_FILE_VALIDATION=1

start=$(date +%s)
# -W: warnings are errors; -n: nitpicky (every cross-reference must resolve); --keep-going: report all.
"$JB" build "$ROOT" --builder html -W -n --keep-going "$@"
echo "build_book: built $ROOT/_build/html/index.html in $(( $(date +%s) - start )) s"
