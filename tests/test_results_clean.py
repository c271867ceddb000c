"""The committed measured runs under ``results/`` reproduce: each from one commit of a clean tree, with no
machine-specific absolute path in its provenance and no dataset text in its stage files (issue 9 C).

The runs committed before these rules existed break all three; they are regenerated once, at the end (issue 9
C). Until then the three tests are expected to fail (``xfail``, not strict): remove the marker after the
regeneration, so that the tests guard ``results/`` from then on.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shapley.pipeline.store import CONFIG_FILE, run_history

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"

NOT_REGENERATED = pytest.mark.xfail(
    strict=False,
    reason="the committed runs predate source-only 'dirty', relative paths and text-free questions.jsonl; "
    "remove this marker once every run under results/ is regenerated from one clean commit (issue 9 C)",
)

DATASET_TEXT_FIELDS = frozenset({"question", "references", "prompt", "context", "story", "passage", "body"})
"""Fields that would hold dataset text in a stored record."""

QUESTION_FIELDS = frozenset({"id", "sha256", "chunk", "upstream_sha256", "_sha256"})
"""All that a record of ``questions.jsonl`` may hold (ids and fingerprints, see shapley.pipeline.store)."""


def _committed(pattern: str) -> list[Path]:
    """Files under results/ matching ``pattern`` that git tracks (every matching file without git)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "results"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return sorted(RESULTS.rglob(pattern))
    return sorted(REPO / f for f in out if Path(f).match(pattern))


CONFIGS = _committed(f"*/{CONFIG_FILE}")


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO)) for p in paths]


def test_results_hold_runs():
    assert CONFIGS, "no committed run directory under results/"


@NOT_REGENERATED
@pytest.mark.parametrize("config", CONFIGS, ids=_ids(CONFIGS))
def test_each_run_comes_from_one_clean_commit(config):
    h = run_history(json.loads(config.read_text(encoding="utf-8")))
    assert h.dirty is False, f"{config}: made from a tree whose source differs from its commit"
    assert len(h.commits) == 1, f"{config}: made across commits {h.commits}"


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


ABSOLUTE = re.compile(r"(?:^|[\s=])(/|~/|[A-Za-z]:\\)")


@NOT_REGENERATED
@pytest.mark.parametrize("config", CONFIGS, ids=_ids(CONFIGS))
def test_no_absolute_path_in_provenance(config):
    rec = json.loads(config.read_text(encoding="utf-8"))
    cfg = rec.get("config") or rec.get("settings") or {}
    data = cfg.get("data", cfg)
    found = [
        s
        for s in _strings([rec.get("provenance"), rec.get("invocations"), data.get("path"), data.get("data_path")])
        if ABSOLUTE.search(s)
    ]
    assert not found, f"{config}: absolute paths {found[:3]}"


STAGE_FILES = _committed("*.jsonl")


@NOT_REGENERATED
@pytest.mark.parametrize("stage_file", STAGE_FILES, ids=_ids(STAGE_FILES))
def test_no_dataset_text_in_stage_files(stage_file):
    for lineno, line in enumerate(stage_file.read_text(encoding="utf-8").splitlines(), start=1):
        rec = json.loads(line)
        if stage_file.name == "questions.jsonl":
            extra = set(rec) - QUESTION_FIELDS
        else:
            extra = set(rec) & DATASET_TEXT_FIELDS
        assert not extra, f"{stage_file}, line {lineno}: dataset text in {sorted(extra)}"
