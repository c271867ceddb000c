"""Test-suite configuration: hypothesis profiles and the offline environment."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# No deadline: CI runs on 2 shared cores, where a slow first call must not fail a property.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "default"))

# The hub is unreachable here: fail fast instead of retrying network calls.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models gain nothing from threads, and on a busy 2-core machine thread contention makes them slow."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
