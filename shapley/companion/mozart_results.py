"""The Mozart page's beta fits, committed as a page record (:data:`RECORD`, ``results/companion/mozart.json``,
written by ``python -m shapley.companion.mozart_results``).

:func:`shapley.companion.mozart.fitted_beta_table` scans a grid of 600 kernel scales for every beta-dependent
reading on both tables and refines each band's ends with Brent's method: some 12,000 evaluations, several seconds.
The Mozart page and the verdict facts read its outcome (``RECORD.load``, :func:`fits`); everything else on the page
(the readings at beta = 0.5) is cheap and stays live.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shapley.companion import mozart
from shapley.results import records


def compute(settings: Mapping[str, Any], results: Path) -> dict[str, Any]:
    """:func:`shapley.companion.mozart.fitted_beta_table` on a grid of ``beta_grid_points``: the record's numbers
    (``results`` is not read)."""
    return {"fits": mozart.fitted_beta_table(mozart.beta_grid(int(settings["beta_grid_points"])))}


def fits(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The record's rows as :func:`shapley.companion.mozart.fitted_beta_table` returns them (intervals as
    tuples of floats)."""
    keys = ("beta_table1", "beta_table2", "beta_both")
    return [{**r, **{k: [(float(a), float(b)) for a, b in r[k]] for k in keys}} for r in record["fits"]]


RECORD = records.PageRecord(
    path="companion/mozart.json",
    module=__spec__.name,
    compute=compute,
    check=records.has_keys(fits=list),
    summary=lambda record: f"one beta fits both tables under {[r['key'] for r in record['fits'] if r['beta_both']]}",
    settings={"beta_grid_points": 600},
)

if __name__ == "__main__":
    raise SystemExit(RECORD.main())
