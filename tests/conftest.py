"""Test-suite configuration: hypothesis profiles and the offline environment."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# No deadline: CI runs on 2 shared cores, where a slow first call must not fail a property.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
# `make properties`: many fresh examples per property (HYPOTHESIS_MAX_EXAMPLES, default 5000), never derandomized.
THOROUGH_EXAMPLES = int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "5000"))
settings.register_profile(
    "thorough",
    deadline=None,
    derandomize=False,
    database=None,
    max_examples=THOROUGH_EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
PROFILE = "ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "default")
settings.load_profile(PROFILE)


def pytest_collection_modifyitems(config, items):
    """In the thorough profile a test's own ``@settings(max_examples=...)`` (sized for CI) gives way to the
    profile's count, so that every property runs THOROUGH_EXAMPLES examples."""
    if PROFILE != "thorough":
        return
    for item in items:
        fn = getattr(item, "obj", None)
        own = getattr(fn, "_hypothesis_internal_use_settings", None)
        if own is not None and getattr(fn, "is_hypothesis_test", False):
            fn._hypothesis_internal_use_settings = settings(own, max_examples=THOROUGH_EXAMPLES, derandomize=False)


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
