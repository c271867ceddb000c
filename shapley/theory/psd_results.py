"""The PSD page's worst-case checks, committed as a page record (:data:`RECORD`,
``results/theory/psd_searches.json``, written by ``python -m shapley.theory.psd_results``).

* ``checks``: for n = 2..14, the closed form ``m(n)`` beside every vertex (n <= 7) and every two-group split
  (:mod:`shapley.theory.worstcase`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shapley.results import records
from shapley.theory import worstcase as wc


def check_rows(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per n: the closed form and each search's smallest ``lambda_min(K)`` (None: not run at that n)."""
    c = settings["checks"]
    return [
        {
            "n": n,
            "closed form m(n)": wc.min_kernel_eigenvalue(n),
            "all vertices": wc.exhaustive_vertex_search(n) if n <= wc.EXHAUSTIVE_MAX_N else None,
            "all splits": wc.partition_search(n),
        }
        for n in range(c["n_min"], c["n_max"] + 1)
    ]


RECORD = records.PageRecord(
    path="theory/psd_searches.json",
    module=__spec__.name,
    compute=lambda settings, results: {"checks": check_rows(settings)},
    check=records.has_keys(checks=list),
    summary=lambda record: f"n = {record['checks'][0]['n']}..{record['checks'][-1]['n']}",
    settings={"checks": {"n_min": 2, "n_max": 14}},
)

if __name__ == "__main__":
    raise SystemExit(RECORD.main())
