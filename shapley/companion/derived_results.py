"""The committed freshness verdicts of the runs' derived files (``make results``, after the runs).

:func:`shapley.pipeline.rundir.derived.derived_status` re-reads every record of a run and hashes its canonical JSON:
a tenth of a second to a quarter per run, two seconds for the results page's provenance table. :data:`RECORD`
(``results/companion/derived_status.json``) holds it for every run, with each run's files that git would commit as
its inputs (its ``config.json``, ``derived.json``, compact copy, derived files, and the JSONL stage files where those
are committed). :func:`derived_status` answers from the record when it is fresh and recomputes otherwise: a stale or
missing record costs time, never a wrong verdict. A local edit of a git-ignored JSONL stage file that leaves the
compact copy as it was is not seen by the record (the run rewrites its compact copy whenever it changes a stage
file, and ``report`` checks the stage files themselves).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shapley.pipeline.rundir import derived
from shapley.theory import page_records


def _runs(results: Path) -> list[str]:
    """The runs under ``results`` (paths relative to it): the folders with a ``derived.json`` and a config."""
    found = (p.parent for p in results.rglob(derived.DERIVED_FILE))
    return sorted(run.relative_to(results).as_posix() for run in found if (run / "config.json").is_file())


def _inputs(results: Path) -> list[str]:
    runs = set(_runs(results))
    return [p for p in page_records.committed_files(results) if Path(p).parent.as_posix() in runs]


def compute(settings: Mapping[str, Any], results: Path) -> dict[str, Any]:
    """The record's numbers: the derived statuses of each run under ``results``."""
    return {"runs": {rel: derived.derived_status(results / rel) for rel in _runs(results)}}


RECORD = page_records.PageRecord(
    path="companion/derived_status.json",
    module=__spec__.name,
    modules=(
        "shapley.pipeline.rundir.derived",
        "shapley.pipeline.rundir.jsonl",
        "shapley.pipeline.rundir.store",
        "shapley.pipeline.rundir.settings",
    ),
    compute=compute,
    summary=lambda record: f"{len(record['runs'])} runs",
    inputs=_inputs,
)


def derived_status(run_dir: str | os.PathLike[str]) -> dict[str, str]:
    """:func:`shapley.pipeline.rundir.derived.derived_status` of ``run_dir``: from the record under the run's
    grandparent folder when it is fresh and saw every derived file the run has now, recomputed otherwise."""
    run = Path(run_dir).resolve()
    status = (RECORD.fresh(run.parent.parent) or {}).get("runs", {}).get(f"{run.parent.name}/{run.name}", {})
    present = [n for n in (*derived.RUN_OUTPUTS, *derived.SWEEP_OUTPUTS) if (run / n).is_file()]
    return {n: status[n] for n in present} if all(n in status for n in present) else derived.derived_status(run)


if __name__ == "__main__":
    raise SystemExit(RECORD.main())
