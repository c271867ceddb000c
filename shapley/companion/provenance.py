"""What each run was: where it is, the commands and commits that built it (from its ``config.json``), the settings
the runs share, and whether its derived files still match its stage files.

That last verdict is :func:`shapley.pipeline.rundir.derived.derived_status`, which re-reads every record of a run
and hashes its canonical JSON: a tenth of a second to a quarter per run, two seconds for the results page's
provenance table. :data:`RECORD` (``results/companion/derived_status.json``, written by ``python -m
shapley.companion.provenance`` after the runs in ``make results``) holds it for every run that git tracks, with
each run's tracked files as its inputs (its ``config.json``, ``derived.json``, compact copy, derived files, and the
JSONL stage files where those are committed). :func:`derived_status` answers from the record when it is fresh and
recomputes otherwise: a stale or missing record costs time, never a wrong verdict. A local edit of a git-ignored
JSONL stage file that leaves the compact copy as it was is not seen by the record (the run rewrites its compact copy
whenever it changes a stage file, and ``report`` checks the stage files themselves).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from shapley.companion.htmltable import Html, esc, titled
from shapley.pipeline.evaluate.report import load_metrics
from shapley.pipeline.rundir import derived
from shapley.pipeline.rundir.settings import REPO_ROOT
from shapley.pipeline.rundir.store import RunHistory, read_config, read_record, run_history
from shapley.results import records


def relative_path(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the repository root when it lies inside it, else absolute."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def discover_runs(root: str | os.PathLike[str]) -> list[Path]:
    """Run directories under ``root`` (any depth) that have finished their metrics stage, sorted."""
    return sorted(p.parent for p in Path(root).rglob("metrics.csv") if (p.parent / "config.json").exists())


def question_count(run_dir: str | os.PathLike[str]) -> int | None:
    """Questions scored in a run (``n_questions`` of its ``metrics.csv``), None when it does not say."""
    m = load_metrics(run_dir)
    return int(m["n_questions"].max()) if "n_questions" in m and len(m) else None


def recorded_invocations(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every invocation recorded in a run's ``config.json``, first to last, resumes included.

    Each: ``time``, ``command`` (the recorded command line, never rebuilt: ``run_history(d).commands``),
    ``resumed``, ``commit`` and ``dirty`` (the source tree's state for that invocation, None where not recorded).
    """
    rec = read_record(run_dir) or {}
    commands = run_history(rec).commands
    out = []
    for k, (inv, command) in enumerate(zip(rec.get("invocations") or [], commands, strict=True)):
        git = inv.get("git") or {}
        out.append(
            {
                "time": (inv.get("time") or "")[:16].replace("T", " "),
                "command": command,
                "resumed": bool(inv.get("resumed", k > 0)),
                "commit": git.get("commit"),
                "dirty": git.get("dirty"),
            }
        )
    return out


def provenance_flags(history: RunHistory) -> list[str]:
    """What a reader must know about how a run was made (from ``shapley.pipeline.rundir.store.run_history``):
    ``dirty`` (some invocation ran from a source tree that differed from its commit), ``multi-commit``
    (invocations at different commits), ``commit unknown`` (no invocation recorded its commit)."""
    flags = {"dirty": history.dirty, "multi-commit": history.multi_commit, "commit unknown": not history.commits}
    return [flag for flag, applies in flags.items() if applies]


def provenance_table(run_dirs: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """One row per run: where it is, what it covered, the commit(s) it ran from, and its flags.

    Columns: run, model, questions, samples, accuracy, commits, flags (a list: see :func:`provenance_flags`) and
    derived_verified (:func:`stale_derived`).
    """
    rows = []
    for d in run_dirs:
        cfg = read_config(d)
        m = load_metrics(d)
        history = run_history(d)
        commits = [c[:7] for c in history.commits]
        stale, verified = stale_derived(d)
        rows.append(
            {
                "run": relative_path(d),
                "model": cfg.model,
                "questions": question_count(d),
                "samples": cfg.n_samples,
                "accuracy": float(m["accuracy"].iloc[0]) if len(m) else math.nan,
                "commits": ", ".join(commits),
                "flags": provenance_flags(history) + [f"stale {name}" for name in stale],
                "derived_verified": verified,
            }
        )
    return pd.DataFrame(rows)


def provenance_frame(run_dirs: Sequence[str | os.PathLike[str]], table: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`provenance_table` for readers; a flagged run is marked in its row. ``table``: the
    :func:`provenance_table` of ``run_dirs`` already computed (it checks every run's derived files against its
    stage files, which takes seconds), or None to compute it."""
    t = provenance_table(run_dirs) if table is None else table
    frame = pd.DataFrame(
        {
            "Run (under results/)": [esc(r.removeprefix("results/")).replace("/", "/<wbr>") for r in t["run"]],
            "Model": t["model"],
            "Questions": t["questions"],
            "Samples": t["samples"],
            "Accuracy": t["accuracy"],
            "Commit(s)": ["<br>".join(esc(c) for c in cs.split(", ")) for cs in t["commits"]],
            "Flags": ["<br>".join(f'<span class="flag">{esc(f)}</span>' for f in fl) or "clean" for fl in t["flags"]],
        }
    )
    caption = (
        "The runs this page reads, from each run's `config.json` and `metrics.csv`; "
        "every invocation is listed below the table. "
        "Accuracy: share of judged answers counted correct. *dirty*: an invocation ran from a source "
        "tree that differed from its commit; *multi-commit*: the run was resumed at another commit; "
        "*stale FILE*: a derived file (metrics, comparisons, β sweep) covers another number of "
        "questions than the run holds, so the page must not be read for that run until it is rebuilt."
    )
    unverified = [r for r, ok in zip(t["run"], t["derived_verified"], strict=True) if not ok]
    if unverified:
        caption += (
            f" Derived files of {len(unverified)} of {len(t)} runs: *unverified*, they could not be checked "
            "against the run's stage files."
        )
    formats = {"Questions": ".0f", "Samples": ".0f", "Accuracy": ".2f"}
    html = ["Run (under results/)", "Commit(s)", "Flags"]
    return titled(frame, caption, formats=formats, html=html, rows=["flagged" if fl else "" for fl in t["flags"]])


def commands_html(run_dirs: Sequence[str | os.PathLike[str]]) -> Html:
    """Every recorded invocation of every run, as recorded: a folding list per run, resumes marked."""
    items = []
    for d in run_dirs:
        lines = []
        for inv in recorded_invocations(d):
            state = "resumed" if inv["resumed"] else "created"
            commit = f", commit {esc(str(inv['commit'])[:7])}" if inv["commit"] else ""
            dirty = " (dirty)" if inv["dirty"] else ""
            lines.append(
                f'<li><span class="when">{esc(inv["time"])}, {state}{commit}{dirty}</span><br>'
                f'<code class="cmd">{esc(inv["command"])}</code></li>'
            )
        n = len(lines)
        items.append(
            f"<details><summary><code>{esc(relative_path(d))}</code>: {n} invocation{'s' * (n != 1)}"
            f"</summary><ul>{''.join(lines)}</ul></details>"
        )
    return Html(f'<div class="commands">{"".join(items)}</div>')


def settings_summary(run_dirs: Sequence[str | os.PathLike[str]]) -> dict[str, str]:
    """The settings the book quotes (``n_samples``, the ``entailment`` backend, and ``temperature``,
    ``max_new_tokens`` and ``n_shots`` of the runs that generated) of ``run_dirs`` as recorded in their
    ``config.json``: each setting's distinct values, joined ("0.5" or "5, 10")."""
    seen: dict[str, list[Any]] = {}
    for d in run_dirs:
        cfg = read_config(d)
        values: dict[str, Any] = {"n_samples": cfg.n_samples, "entailment": cfg.entailment.backend}
        if cfg.generation is not None:
            g = cfg.generation
            values.update(temperature=g.temperature, max_new_tokens=g.max_new_tokens, n_shots=cfg.data.n_shots)
        for k, v in values.items():
            if v not in seen.setdefault(k, []):
                seen[k].append(v)

    def ordered(vs: list[Any]) -> list[Any]:
        try:
            return sorted(vs)
        except TypeError:
            return vs

    return {k: ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in ordered(vs)) for k, vs in seen.items()}


def stale_derived(run_dir: str | os.PathLike[str]) -> tuple[list[str], bool]:
    """Derived files of a run that no longer match its stage files or settings, and whether every one was verified.

    Returns ``(stale, verified)`` from the run's freshness record (``derived.json``,
    :func:`shapley.pipeline.rundir.derived.derived_status`; the committed verdicts when the run is unchanged,
    :func:`derived_status`): ``stale`` names each derived file whose stage files
    or settings changed since it was computed (a sweep left over from an earlier ``--limit``, say); ``verified``
    is False unless every derived file is fresh (one may be stale, or unchecked: no stage files).
    """
    status = derived_status(run_dir)
    stale = [name for name, s in status.items() if s.startswith("stale")]
    return stale, bool(status) and all(s == "fresh" for s in status.values())


def _runs(results: Path) -> dict[str, list[str]]:
    """The runs under ``results`` whose ``derived.json`` and ``config.json`` git tracks (paths relative to
    ``results``), each with its tracked files: the record fingerprints those, and holds the verdicts of those runs
    only."""
    runs: dict[str, list[str]] = {}
    for path in records.committed_files(results):
        runs.setdefault(Path(path).parent.as_posix(), []).append(path)
    needed = {derived.DERIVED_FILE, "config.json"}
    return {run: files for run, files in runs.items() if needed <= {Path(f).name for f in files}}


def _tracked_outputs(files: Sequence[str]) -> list[str]:
    """The derived files among a run's tracked ``files`` (names): the only ones the record fingerprints."""
    names = {Path(f).name for f in files}
    return [n for n in (*derived.RUN_OUTPUTS, *derived.SWEEP_OUTPUTS) if n in names]


def compute(settings: Mapping[str, Any], results: Path) -> dict[str, Any]:
    """The record's numbers: the derived statuses of each tracked run under ``results``, of its tracked derived
    files only (a git-ignored one, e.g. ``beta_sweep_per_question.csv``, is not among the record's inputs, so the
    record holds no status of it: :func:`derived_status` checks it live)."""
    return {
        "runs": {
            rel: derived.derived_status(results / rel, _tracked_outputs(files)) for rel, files in _runs(results).items()
        }
    }


def _check(record: Mapping[str, Any]) -> None:
    """Raise unless ``runs`` maps each run to {derived file: status}, all strings."""
    records.has_keys(runs=dict)(record)
    for run, status in record["runs"].items():
        if not isinstance(status, dict) or not all(isinstance(v, str) for v in status.values()):
            raise TypeError(f"the statuses of run {run!r} are not an object of strings")


RECORD = records.PageRecord(
    path="companion/derived_status.json",
    module=__spec__.name,
    compute=compute,
    summary=lambda record: f"{len(record['runs'])} runs",
    inputs=lambda results: [f for files in _runs(results).values() for f in files],
    check=_check,
)


def derived_status(run_dir: str | os.PathLike[str]) -> dict[str, str]:
    """:func:`shapley.pipeline.rundir.derived.derived_status` of ``run_dir``: from the record under the run's
    grandparent folder when it is fresh and saw every derived file the run has now, recomputed otherwise."""
    run = Path(run_dir).resolve()
    record = RECORD.fresh(run.parent.parent)  # fresh: it fingerprinted the files it holds statuses of, as they are
    status = (record or {}).get("runs", {}).get(f"{run.parent.name}/{run.name}", {})
    present = [n for n in (*derived.RUN_OUTPUTS, *derived.SWEEP_OUTPUTS) if (run / n).is_file()]
    live = [n for n in present if n not in status]  # untracked (not fingerprinted by the record) or not in it
    checked = derived.derived_status(run, live) if live else {}
    return {n: status[n] if n in status else checked[n] for n in present}


if __name__ == "__main__":
    raise SystemExit(RECORD.main())
