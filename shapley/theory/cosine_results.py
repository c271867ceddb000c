"""The committed clipped-cosine searches (``make theory-results``; part of ``make results``).

``python -m shapley.theory.cosine_results [--out results/theory]`` runs the two searches of
:mod:`shapley.theory.cosine` that the PSD page and the ``beta-0.5-psd`` verdict quote, and writes
``cosine_search.json``: their outcome, the seconds they took and a freshness record
(:mod:`shapley.theory.freshness`: the settings and a digest of the modules that determine the numbers). The
pages only read it (:func:`load`), and show whether it is stale (:func:`stale_reasons`).

* ``sweep``: :func:`shapley.theory.cosine.search_sweep` for n = 8..30 in ``R^n``;
* ``dimension_search``: :func:`shapley.theory.cosine.search_in_dimension` for each (n, dim) of a grid; its
  lowest value at the largest n is the ``witness``, with its unit vectors.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from shapley.theory import cosine, freshness

RECORD_FILE = "cosine_search.json"
MODULES = ("shapley.theory.cosine", "shapley.core.kernel", "shapley.core.validate")
"""The modules whose code determines the record's numbers (their digest is in the freshness block)."""

SETTINGS: dict[str, Any] = {
    "beta": 0.5,
    "sweep": {"n_max": 30, **cosine.SWEEP_SETTINGS},
    "dimension_search": {"sizes": [12, 14, 16, 18, 20], "dims": [4, 5, 6, 7, 8], "n_starts": 4, "seed": 0},
}
COMMAND = "python -m shapley.theory.cosine_results --out results/theory"


def compute(settings: Mapping[str, Any] = SETTINGS) -> dict[str, Any]:
    """Run both searches with ``settings``; the record :func:`write` stores (JSON-ready)."""
    start = time.perf_counter()
    beta = float(settings["beta"])
    sw = settings["sweep"]
    sweep = cosine.search_sweep(sw["n_max"], beta, n_starts=sw["n_starts"], seed=sw["seed"], n_min=sw["n_min"])
    ds = settings["dimension_search"]
    found = [
        cosine.search_in_dimension(n, dim, beta, n_starts=ds["n_starts"], seed=ds["seed"])
        for n in ds["sizes"]
        for dim in ds["dims"]
    ]
    witness = min((s for s in found if s.n == max(ds["sizes"])), key=lambda s: s.min_eig_R)
    return {
        "command": COMMAND,
        "freshness": freshness.freshness(settings, MODULES),
        "seconds": round(time.perf_counter() - start, 1),
        "sweep": [{"n": s.n, "min_eig_R": s.min_eig_R, "restarts": s.n_starts} for s in sweep],
        "dimension_search": [{"n": s.n, "dim": s.X.shape[1], "min_eig_R": s.min_eig_R} for s in found],
        "witness": {
            "n": witness.n,
            "dim": witness.X.shape[1],
            "beta": beta,
            "min_eig_R": witness.min_eig_R,
            "X": witness.X.tolist(),
        },
    }


def write(out_dir: str | Path, settings: Mapping[str, Any] = SETTINGS) -> Path:
    """:func:`compute` and write ``out_dir/cosine_search.json``; returns its path."""
    record = compute(settings)
    path = freshness.write_record(Path(out_dir) / RECORD_FILE, record)
    return path


def load(path: str | Path) -> dict[str, Any]:
    """The record at ``path`` (a ``cosine_search.json`` or the folder holding it)."""
    return freshness.load_record(path, RECORD_FILE, COMMAND)


def stale_reasons(record: Mapping[str, Any]) -> list[str]:
    """Why the record is stale against the current :data:`SETTINGS` and code; [] when fresh."""
    return freshness.stale_reasons(record, SETTINGS, MODULES)


def witness_vectors(record: Mapping[str, Any]) -> NDArray[np.float64]:
    """The witness's unit vectors, shape (n, dim)."""
    return np.asarray(record["witness"]["X"], dtype=np.float64)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("results/theory"), help="folder (default results/theory)")
    args = parser.parse_args(argv)
    path = write(args.out)
    record = load(path)
    w = record["witness"]
    print(
        f"wrote {path} in {record['seconds']} s: witness n = {w['n']}, dim = {w['dim']}, "
        f"lambda_min(R_{w['beta']:g}) = {w['min_eig_R']:.5f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
