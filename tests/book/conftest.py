"""The built book, for every module that reads it (tests/conftest.py's BOOK_MODULES, which run on one worker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.book.test_book import HTML, BookBuild, build_book


@pytest.fixture(scope="session")
def book() -> BookBuild:
    return build_book()


@pytest.fixture(scope="session")
def built(book: BookBuild) -> Path:
    if book.returncode != 0:
        pytest.fail(f"book build failed (exit {book.returncode}):\n{book.log[-6000:]}")
    return HTML
