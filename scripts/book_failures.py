"""Pages of the book whose last execution failed, from the jupyter-cache of an incremental build.

jupyter-book 1.x (myst-nb, ``execute_notebooks: cache``) executes a page, caches it only when it succeeds, and
on a failure stores the traceback on the page's project record in ``_build/.jupyter_cache``. Sphinx, though,
keeps the page it read (failing cells' outputs included) and does not read it again while its source is
unchanged, so without a check the next incremental build serves the failed page and reports success.

    python scripts/book_failures.py [--cache _build/.jupyter_cache] [--touch]

prints one line per failed page (the page, the failing cell's line in the .md and first line, the error) and
exits 1 when there is any, 0 otherwise. ``--touch`` also updates the mtime of each failed page's source, so the
next build reads and executes it again (scripts/build_book.sh calls it so before and after every build).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

_RULE = "------------------"


@dataclass(frozen=True)
class Failure:
    page: Path
    line: int | None  # 1-based line of the failing cell's first source line in the page, if found
    cell: str  # the failing cell's first source line
    error: str  # the last line of the traceback


def _cell_preview(traceback: str) -> list[str]:
    """The failing cell's source as nbclient quotes it (between two rules of dashes), else []."""
    lines = traceback.splitlines()
    rules = [i for i, line in enumerate(lines) if line.strip().startswith(_RULE)]
    if len(rules) < 2:
        return []
    return [line for line in lines[rules[0] + 1 : rules[1]] if line.strip()]


_ERROR = re.compile(r"^[\w.]*(Error|Exception|Interrupt|Exit)\w*:? ")


def _error_line(traceback: str) -> str:
    """The last ``SomeError: message`` line (the kernel's error, or nbclient's timeout), else the last line."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", traceback)  # the kernel's colours
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith(_RULE)]
    errors = [line for line in lines if _ERROR.match(line)]
    return errors[-1] if errors else lines[-1] if lines else "(no traceback text)"


def parse_failure(page: Path, traceback: str) -> Failure:
    """The page, cell and error of one stored traceback."""
    preview = _cell_preview(traceback)
    cell = preview[0].strip() if preview else "(cell not quoted in the traceback)"
    line = None
    if preview and page.exists():
        for i, text in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            if text.strip() == cell:
                line = i
                break
    return Failure(page, line, cell, _error_line(traceback))


def failures(cache_dir: Path) -> list[Failure]:
    """Every page whose last execution left a traceback in the jupyter-cache at ``cache_dir``."""
    if not cache_dir.exists():
        return []
    try:
        from jupyter_cache import get_cache
    except ImportError as err:  # exit 2 below: "could not check", not "a page failed"
        print(f"book_failures: cannot read {cache_dir}: {err}", file=sys.stderr)
        raise SystemExit(2) from err
    try:
        records = get_cache(str(cache_dir)).list_project_records()
    except Exception as err:  # an unreadable or foreign database: "could not check", exit 2
        print(f"book_failures: cannot read the execution cache {cache_dir}: {type(err).__name__}", file=sys.stderr)
        raise SystemExit(2) from err
    return [parse_failure(Path(r.uri), r.traceback) for r in records if r.traceback]


def describe(f: Failure, root: Path) -> str:
    try:
        page = f.page.resolve().relative_to(root.resolve())
    except ValueError:
        page = f.page
    where = f"{page}:{f.line}" if f.line else str(page)
    return f"page {where} failed in the cell starting {f.cell!r}: {f.error}"


def cache_folder(text: str) -> Path:
    """``--cache``: a folder, or a path where none exists yet (no build has run); anything else is refused."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is not a folder (the execution cache of a book build is one)")
    return path


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cache", type=cache_folder, default=root / "_build" / ".jupyter_cache")
    parser.add_argument("--touch", action="store_true", help="touch each failed page so the next build reruns it")
    args = parser.parse_args(argv)
    found = failures(args.cache)
    for f in found:
        print(f"book_failures: {describe(f, root)}")
        if args.touch and f.page.exists():
            os.utime(f.page)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
