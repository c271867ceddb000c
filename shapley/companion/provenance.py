"""What each run was: where it is, the commands and commits that built it (from its ``config.json``), the settings
the runs share, and whether its derived files still match its stage files
(:func:`shapley.pipeline.rundir.derived.derived_status`, checked live: under four seconds for every committed run).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from shapley.companion.htmltable import Html, esc, titled
from shapley.pipeline.evaluate.report import load_metrics
from shapley.pipeline.rundir import derived
from shapley.pipeline.rundir.settings import REPO_ROOT
from shapley.pipeline.rundir.store import RunHistory, read_config, require_record, run_history

StrPath = str | os.PathLike[str]
"""A path the companion reads (a run directory, a results folder): a string or a path-like, as typeshed's
``StrPath``."""


def relative_path(path: StrPath) -> str:
    """``path`` relative to the repository root when it lies inside it, else absolute."""
    p = Path(path).resolve()
    return str(p.relative_to(REPO_ROOT) if p.is_relative_to(REPO_ROOT) else p)


def discover_runs(root: StrPath) -> list[Path]:
    """Run directories under ``root`` (any depth) that have finished their metrics stage, sorted."""
    return sorted(p.parent for p in Path(root).rglob("metrics.csv") if (p.parent / "config.json").exists())


def question_count(run_dir: StrPath) -> int | None:
    """Questions scored in a run (``n_questions`` of its ``metrics.csv``), None when it does not say."""
    m = load_metrics(run_dir)
    return int(m["n_questions"].max()) if "n_questions" in m and len(m) else None


def provenance_flags(history: RunHistory) -> list[str]:
    """What a reader must know about how a run was made (from ``shapley.pipeline.rundir.store.run_history``):
    ``dirty`` (some invocation ran from a source tree that differed from its commit), ``multi-commit``
    (invocations at different commits), ``commit unknown`` (no invocation recorded its commit)."""
    flags = {"dirty": history.dirty, "multi-commit": history.multi_commit, "commit unknown": not history.commits}
    return [flag for flag, applies in flags.items() if applies]


def provenance_table(run_dirs: Sequence[StrPath]) -> pd.DataFrame:
    """One row per run: where it is, what it covered, the commit(s) it ran from, and its flags.

    Columns: run, model, questions, samples, accuracy, commits and flags (a list: see :func:`provenance_flags`, and
    ``stale FILE`` for each derived file that no longer matches the run's stage files or settings,
    :func:`shapley.pipeline.rundir.derived.stale_outputs`).
    """
    rows = []
    for d in run_dirs:
        cfg = read_config(d)
        m = load_metrics(d)
        history = run_history(d)
        commits = [c[:7] for c in history.commits]
        rows.append(
            {
                "run": relative_path(d),
                "model": cfg.model,
                "questions": question_count(d),
                "samples": cfg.n_samples,
                "accuracy": float(m["accuracy"].iloc[0]) if len(m) else math.nan,
                "commits": ", ".join(commits),
                "flags": provenance_flags(history) + [f"stale {name}" for name in derived.stale_outputs(d)],
            }
        )
    return pd.DataFrame(rows)


def provenance_frame(t: pd.DataFrame) -> pd.DataFrame:
    """A :func:`provenance_table` for readers (the page computes it once: it checks every run's derived files
    against its stage files, which takes seconds); a flagged run is marked in its row."""
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
    formats = {"Questions": ".0f", "Samples": ".0f", "Accuracy": ".2f"}
    html = ["Run (under results/)", "Commit(s)", "Flags"]
    return titled(frame, caption, formats=formats, html=html, rows=["flagged" if fl else "" for fl in t["flags"]])


def commands_html(run_dirs: Sequence[StrPath]) -> Html:
    """Every invocation recorded in each run's ``config.json``, first to last, resumes included: a folding list per
    run, each with its time, whether it created or resumed the run, its commit (marked when the source tree was
    dirty) and its command line as recorded, never rebuilt (``run_history(d).commands``)."""
    items = []
    for d in run_dirs:
        rec = require_record(d)
        lines = []
        for inv, command in zip(rec["invocations"], run_history(rec).commands, strict=True):
            git = inv["git"]
            state = "resumed" if inv["resumed"] else "created"
            commit = f", commit {esc(str(git['commit'])[:7])}" if git["commit"] else ""
            dirty = " (dirty)" if git["dirty"] else ""
            time = inv["time"][:16].replace("T", " ")
            lines.append(
                f'<li><span class="when">{esc(time)}, {state}{commit}{dirty}</span><br>'
                f'<code class="cmd">{esc(command)}</code></li>'
            )
        n = len(lines)
        items.append(
            f"<details><summary><code>{esc(relative_path(d))}</code>: {n} invocation{'s' * (n != 1)}"
            f"</summary><ul>{''.join(lines)}</ul></details>"
        )
    return Html(f'<div class="commands">{"".join(items)}</div>')


def settings_summary(run_dirs: Sequence[StrPath]) -> dict[str, str]:
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
