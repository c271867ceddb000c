"""The clipped-cosine searches that the PSD page and the ``beta-0.5-psd`` verdict quote, committed as a page record
(:data:`RECORD`, ``results/theory/cosine_search.json``, written by ``python -m shapley.theory.cosine_results``).

* ``sweep``: :func:`shapley.theory.cosine.search_sweep` for n = 8..30 in ``R^n``;
* ``dimension_search``: :func:`shapley.theory.cosine.search_in_dimension` for each (n, dim) of a grid; its
  lowest value at the largest n is the ``witness``, with its unit vectors.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from shapley.results import records
from shapley.theory import cosine


def compute(settings: Mapping[str, Any], results: Path) -> dict[str, Any]:
    """The record's numbers: both searches with ``settings`` (``results`` is not read)."""
    beta, sw, ds = float(settings["beta"]), settings["sweep"], settings["dimension_search"]
    sweep = cosine.search_sweep(sw["n_max"], beta, n_starts=sw["n_starts"], seed=sw["seed"], n_min=sw["n_min"])
    found = [
        cosine.search_in_dimension(n, dim, beta, n_starts=ds["n_starts"], seed=ds["seed"])
        for n in ds["sizes"]
        for dim in ds["dims"]
    ]
    witness = min((s for s in found if s.n == max(ds["sizes"])), key=lambda s: s.min_eig_R)
    return {
        "sweep": [{"n": s.n, "min_eig_R": s.min_eig_R} for s in sweep],
        "dimension_search": [{"n": s.n, "dim": s.X.shape[1], "min_eig_R": s.min_eig_R} for s in found],
        "witness": {
            "n": witness.n,
            "dim": witness.X.shape[1],
            "beta": beta,
            "min_eig_R": witness.min_eig_R,
            "X": witness.X,
        },
    }


def witness_vectors(record: Mapping[str, Any]) -> NDArray[np.float64]:
    """The witness's unit vectors, shape (n, dim)."""
    return np.asarray(record["witness"]["X"], dtype=np.float64)


RECORD = records.PageRecord(
    path="theory/cosine_search.json",
    module=__spec__.name,
    compute=compute,
    check=records.has_keys(sweep=list, dimension_search=list, witness=dict),
    summary=lambda record: "witness n = {n}, dim = {dim}, lambda_min(R_{beta:g}) = {min_eig_R:.5f}".format(
        **record["witness"]
    ),
    settings={
        "beta": 0.5,
        "sweep": {"n_max": 30, **cosine.SWEEP_SETTINGS},
        "dimension_search": {"sizes": [12, 14, 16, 18, 20], "dims": [4, 5, 6, 7, 8], "n_starts": 4, "seed": 0},
    },
)

if __name__ == "__main__":
    raise SystemExit(RECORD.main())
