"""How long each book notebook takes to execute on this machine, against the 240 s target.

The notebook tests (tests/book/test_notebooks.py) check that the notebooks run cleanly and never assert a
time; this script measures it. Usage::

    python benchmarks/bench_notebooks.py [--names psd properties] [--out results]

Writes ``<out>/bench_notebooks.json`` (one row per notebook: seconds, and whether the target was met).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
TARGET_S = 240
DEFAULT = ("psd", "properties", "mozart", "axioms", "experiment")


def run_notebook(name: str) -> float:
    """Execute ``notebooks/<name>.md`` (jupytext + nbclient, kernel python3); return wall-clock seconds."""
    import jupytext
    from nbclient import NotebookClient

    nb = jupytext.read(NOTEBOOKS / f"{name}.md")
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", nargs="+", default=list(DEFAULT), help="notebooks to time (stems in notebooks/)")
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    args = parser.parse_args()
    rows = []
    for name in args.names:
        seconds = run_notebook(name)
        rows.append({"notebook": name, "seconds": seconds, "target_s": TARGET_S, "target_met": seconds < TARGET_S})
        print(f"{name:12s} {seconds:8.1f} s  (target < {TARGET_S} s: {'met' if seconds < TARGET_S else 'MISSED'})")
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "command": "python benchmarks/bench_notebooks.py --names " + " ".join(args.names),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_notebooks.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
