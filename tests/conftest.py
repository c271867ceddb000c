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


#: The test modules with tests of the built book (marker ``book``): ``tests.book.test_book.build_book`` builds it in
#: place, once per process, so under ``make test``'s workers (pytest-xdist, ``-n``) they all run on one worker.
BOOK_MODULES = tuple(
    f"tests/book/{name}.py" for name in ("test_book", "test_book_browser", "test_notebooks", "test_reference")
)


@pytest.hookimpl(optionalhook=True)  # the xdist hooks are hooks only where pytest-xdist is installed
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per CPU this process may use (xdist would count physical cores: 1 on many 2-vCPU
    machines), at most 4: the worker that builds and checks the book has about a quarter of the suite's work, so
    more workers would wait for it."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cpus, 4)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The tests of BOOK_MODULES are one unit of work, the largest and so given out first; every other test is a
    unit of its own, given to whichever worker is free. (xdist's ``--dist loadgroup`` would do this with marks, but
    it groups nothing under pytest 9.2: pytest-dev/pytest-xdist#1386.)"""
    from xdist.scheduler import LoadScopeScheduling

    class BookOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "book" if nodeid.split("::")[0] in BOOK_MODULES else nodeid

    return BookOnOneWorker(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test of the built book outside BOOK_MODULES fails before it builds the book a second time, at once, in
    the same folder."""
    if item.get_closest_marker("book") and item.nodeid.split("::")[0] not in BOOK_MODULES:
        pytest.fail(f"{item.nodeid} is marked book but its module is not in tests/conftest.py's BOOK_MODULES")


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
