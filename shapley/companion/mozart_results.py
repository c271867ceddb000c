"""The committed beta fits of the Mozart page (``make theory-results``; part of ``make results``).

:func:`shapley.companion.mozart.fitted_beta_table` scans a grid of 600 kernel scales for every beta-dependent
reading on both tables and refines each band's ends with Brent's method: some 12,000 evaluations, several seconds.
``python -m shapley.companion.mozart_results [--out results/companion]`` runs it once and writes ``mozart.json``:
the fitted intervals, the seconds they took and a freshness record (:mod:`shapley.theory.freshness`). The Mozart
page and the verdict facts only read it (:func:`load`, :func:`fits`) and say whether it is stale
(:func:`stale_reasons`). Everything else on the page (the readings at beta = 0.5) is cheap and stays live.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shapley.companion import mozart
from shapley.theory import freshness

RECORD_FILE = "mozart.json"
MODULES = (
    "shapley.companion.mozart",
    "shapley.companion.reported",
    "shapley.core.entropy",
    "shapley.core.kernel",
    "shapley.core.psd",
    "shapley.core.validate",
)
"""The modules whose code determines the record's numbers (their digest is in the freshness block)."""

SETTINGS: dict[str, Any] = {"beta_grid_points": 600, "printed_decimals": mozart.PRINTED_DECIMALS}
COMMAND = "python -m shapley.companion.mozart_results --out results/companion"


def compute(settings: Mapping[str, Any] = SETTINGS) -> dict[str, Any]:
    """The record: :func:`shapley.companion.mozart.fitted_beta_table` on a grid of ``beta_grid_points``."""
    if settings["printed_decimals"] != mozart.PRINTED_DECIMALS:
        raise ValueError(f"printed_decimals is fixed by the module ({mozart.PRINTED_DECIMALS})")
    start = time.perf_counter()
    rows = mozart.fitted_beta_table(mozart.beta_grid(int(settings["beta_grid_points"])))
    return {
        "command": COMMAND,
        "freshness": freshness.freshness(settings, MODULES),
        "seconds": round(time.perf_counter() - start, 1),
        "fits": json.loads(json.dumps(rows)),
    }


def load(path: str | Path) -> dict[str, Any]:
    """The record at ``path`` (a ``mozart.json`` or the folder holding it)."""
    return freshness.load_record(path, RECORD_FILE, COMMAND)


def fits(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The record's rows as :func:`shapley.companion.mozart.fitted_beta_table` returns them (intervals as
    tuples of floats)."""
    keys = ("beta_table1", "beta_table2", "beta_both")
    return [{**r, **{k: [(float(a), float(b)) for a, b in r[k]] for k in keys}} for r in record["fits"]]


def stale_reasons(record: Mapping[str, Any]) -> list[str]:
    """Why the record is stale against the current :data:`SETTINGS` and code; [] when fresh."""
    return freshness.stale_reasons(record, SETTINGS, MODULES)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--out", type=Path, default=Path("results/companion"), help="folder (default results/companion)"
    )
    args = parser.parse_args(argv)
    record = compute()
    path = freshness.write_record(args.out / RECORD_FILE, record)
    both = [r["key"] for r in record["fits"] if r["beta_both"]]
    print(f"wrote {path} in {record['seconds']} s: one beta fits both tables under {both}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
