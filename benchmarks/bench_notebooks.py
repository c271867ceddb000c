"""How long each page of the book takes to execute, one thread, against the book's goal.

Every page with a ``kernelspec`` (``book/*.md``, ``notebooks/*.md``) is executed as the book build does
(jupytext, nbclient, kernel python3, cwd = the page's folder), one at a time. The goal: every page in at most
:data:`TARGET_S` seconds on 2 idle cores, except the experiment page, whose small live run is its point
(:data:`EXPERIMENT_TARGET_S`). Heavier computations belong to ``make results``. The notebook tests
(tests/book/test_notebooks.py) check that the pages run and never assert a time; this script measures it::

    python benchmarks/bench_notebooks.py [--names notebooks/psd book/limitations] [--out DIR]

Writes ``<out>/bench_notebooks.json`` (default ``results/``): one row per page (seconds, target, met), the machine
(CPU, cores, thread settings), the load average before and after, and the command. A subset of the pages
(``--names``) is a trial: it writes under ``common.TRIAL_DIR``, never under ``results/``, so that it cannot
replace the committed times of every page. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import common

ROOT = common.ROOT
TARGET_S = 10.0
EXPERIMENT_TARGET_S = 90.0
EXPERIMENT_PAGE = "notebooks/experiment"


def pages() -> list[str]:
    """Every executable page of the book (a MyST file with a kernelspec), as ``folder/stem``."""
    found = []
    for folder in ("book", "notebooks"):
        for path in sorted((ROOT / folder).glob("*.md")):
            if "\nkernelspec:" in path.read_text(encoding="utf-8").split("\n---", 2)[0]:
                found.append(f"{folder}/{path.stem}")
    return found


def target(page: str) -> float:
    return EXPERIMENT_TARGET_S if page == EXPERIMENT_PAGE else TARGET_S


def run_page(page: str, timeout: int = 1800) -> float:
    """Execute ``<page>.md`` as the book does; return wall-clock seconds."""
    import jupytext
    from nbclient import NotebookClient

    path = ROOT / f"{page}.md"
    nb = jupytext.read(path)
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def machine() -> dict[str, object]:
    cpu = common.cpu_name()
    threads = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "threads": threads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--names", nargs="+", default=None, help="pages as folder/stem (default: every page)")
    parser.add_argument("--out", type=Path, default=None, help="folder (default: results/; --names: a temporary one)")
    args = parser.parse_args()
    unknown = sorted(set(args.names or ()) - set(pages()))
    if unknown:
        parser.error(f"not an executable page of the book: {', '.join(unknown)} (pages are folder/stem)")
    trial = "subset" if args.names else None
    out = common.output(parser, args.out, common.RESULTS, trial)
    names = args.names or pages()
    load_before = common.load_average()
    rows = []
    for page in names:
        seconds = run_page(page)
        goal = target(page)
        rows.append({"page": page, "seconds": round(seconds, 2), "target_s": goal, "target_met": seconds <= goal})
        print(
            f"{page:28s} {seconds:8.1f} s  (goal <= {goal:.0f} s: {'met' if seconds <= goal else 'MISSED'})", flush=True
        )
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        **common.provenance(trial, load_before),
        "target_s": TARGET_S,
        "experiment_page": EXPERIMENT_PAGE,
        "experiment_target_s": EXPERIMENT_TARGET_S,
        "command": " ".join(["python benchmarks/bench_notebooks.py", *sys.argv[1:]]),
        "rows": rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_notebooks.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {out / 'bench_notebooks.json'}")


if __name__ == "__main__":
    main()
