"""Tests of shapley.integrations, run by `make test-integrations` in .venv-lm-polygraph and .venv-uqlm (never
collected by `make test`). A test module whose peer library is not installed in the running environment skips."""

from __future__ import annotations

import os

# The hub is unreachable here: fail fast instead of retrying network calls.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
