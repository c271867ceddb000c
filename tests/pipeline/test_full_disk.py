"""A full disk (ENOSPC) under every command that writes (issue 26: "an ENOSPC is reported, never hidden").

``run`` and ``merge`` are walked over every file they write (``report``, ``beta-sweep`` and ``score-samples`` in
``test_attack3.py``), and the entailment cache (sqlite) is filled under ``score-samples``. The disk fills at the
first write of one file: half of that write lands, as on a disk that fills mid-write, and every later write fails.
The command must exit 2 with one line naming that file and leave no temporary file; once there is space again, a
rerun of the same command must give exactly the files of a run that the disk never interrupted (so nothing
half-written was read back as valid).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shapley import cli
from shapley.pipeline.entail import backends as entail
from shapley.pipeline.entail import cache as entail_cache
from shapley.pipeline.entail.base import EntailmentBackend
from shapley.pipeline.rundir import derived, jsonl
from shapley.pipeline.rundir.jsonl import COMPACT_FILE, STAGE_FILES, JsonlStore
from tests import fakes

_REAL_WRITE = os.write

RUN_FILES = {
    "config.json",
    "questions.jsonl",
    "hidden/*.npz",
    "generations.jsonl",
    "entailment.jsonl",
    "scores.jsonl",
    *derived.RUN_OUTPUTS,
    derived.DERIVED_FILE,
    COMPACT_FILE,
}
"""Every file ``run`` writes in its run directory (a test checks that a clean run writes exactly these)."""


class Disk:
    """``os.write`` for files under ``root``: records which files are written (``kinds``, in order of their first
    write) and, with ``fill_at``, fills up at the first write of that file."""

    def __init__(self, root: Path, fill_at: str | None = None) -> None:
        self.root, self.fill_at = root, fill_at
        self.kinds: list[str] = []
        self.filled: Path | None = None  # the file whose write filled the disk

    def kind(self, fd: int) -> tuple[Path, str] | None:
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if self.root not in path.parents:
            return None
        if path.name.startswith(".") and ".tmp-" in path.name:  # an atomic write's temporary file
            path = path.with_name(path.name[1:].rsplit(".tmp-", 1)[0])
        rel = path.relative_to(self.root).as_posix()
        return path, "hidden/*.npz" if rel.startswith("hidden/") else rel

    def write(self, fd: int, data: Any) -> int:
        found = self.kind(fd)
        if found is None:
            return _REAL_WRITE(fd, data)
        path, kind = found
        if self.filled is not None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if kind not in self.kinds:
            self.kinds.append(kind)
        if kind != self.fill_at:
            return _REAL_WRITE(fd, data)
        self.filled = path
        half = len(data) // 2
        if half:
            return _REAL_WRITE(fd, memoryview(data)[:half])  # a short write; the next call finds the disk full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture()
def fake_models(monkeypatch):
    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_generator(monkeypatch, hidden_dim=4)
    fakes.install_fake_dataset(monkeypatch, n=8)


def _run(out: Path, *extra: str) -> int:
    argv = ["run", "--dataset", "triviaqa", "--model", "fake", "--entailment", "fake:", "--n-samples", "4"]
    argv += ["--limit", "8", "--methods", "Shap,SE,ER", "--n-boot", "4", "--no-progress", "--output", str(out)]
    return cli.main(argv + list(extra))


def _files(out: Path) -> dict[str, Any]:
    """What a rerun must reproduce: the derived files and the compact copy (bytes), every stage file's records
    (without bookkeeping), and the hidden-state files (named by a digest of their content)."""
    names = [*derived.RUN_OUTPUTS, derived.DERIVED_FILE, COMPACT_FILE]
    got: dict[str, Any] = {n: (out / n).read_bytes() for n in names}
    for name in STAGE_FILES.values():
        if (out / name).is_file():
            recs = JsonlStore(out / name).load(repair=False)
            got[name] = {q: {k: v for k, v in r.items() if k not in derived.BOOKKEEPING_KEYS} for q, r in recs.items()}
    got["hidden"] = sorted(p.name for p in (out / "hidden").glob("*.npz"))
    return got


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith(("warning:", "note:"))]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _temporaries(out: Path) -> list[Path]:
    return [p for p in out.rglob(".*") if ".tmp-" in p.name]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> tuple[list[str], dict[str, Any]]:
    """The files a run writes (in order) and what it leaves, with no full disk."""
    out = tmp_path_factory.mktemp("clean") / "run"
    disk = Disk(out)
    with pytest.MonkeyPatch.context() as mp:
        fakes.install_fake_entail(mp)
        fakes.install_fake_generator(mp, hidden_dim=4)
        fakes.install_fake_dataset(mp, n=8)
        mp.setattr(jsonl.os, "write", disk.write)
        assert _run(out) == 0
    return disk.kinds, _files(out)


def test_the_walk_covers_every_file_run_writes(clean_run):
    assert set(clean_run[0]) == RUN_FILES


@pytest.mark.parametrize("fill_at", sorted(RUN_FILES))
def test_run_on_a_full_disk_exits_2_naming_the_file_and_a_rerun_equals_a_clean_run(
    fill_at, clean_run, fake_models, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "run"
    disk = Disk(out, fill_at)
    monkeypatch.setattr(jsonl.os, "write", disk.write)
    code = _run(out)
    line = _one_error_line(capsys.readouterr().err)
    assert disk.filled is not None and code == 2
    assert "No space left on device" in line and str(disk.filled) in line
    assert not out.exists() or _temporaries(out) == []
    monkeypatch.setattr(jsonl.os, "write", _REAL_WRITE)  # space again
    assert _run(out) == 0, capsys.readouterr().err
    assert _files(out) == clean_run[1]


# --------------------------------------------------------------------------------------------------
# merge


MERGE_FILES = RUN_FILES
"""A merge writes what a run writes (its stage files whole, the shards' hidden-state files copied)."""


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> tuple[list[Path], list[str], dict[str, Any]]:
    """Two shards of the run, and the files a clean merge of them writes (in order) and leaves."""
    root = tmp_path_factory.mktemp("shards")
    out = root / "merged"
    disk = Disk(out)
    with pytest.MonkeyPatch.context() as mp:
        fakes.install_fake_entail(mp)
        fakes.install_fake_generator(mp, hidden_dim=4)
        fakes.install_fake_dataset(mp, n=8)
        dirs = [root / f"s{i}" for i in range(2)]
        for i, d in enumerate(dirs):
            assert _run(d, "--shard", f"{i}/2") == 0
        mp.setattr(jsonl.os, "write", disk.write)
        assert cli.main(["merge", *map(str, dirs), "--output", str(out)]) == 0
    return dirs, disk.kinds, _files(out)


def test_the_walk_covers_every_file_merge_writes(shards, clean_run):
    assert set(shards[1]) == MERGE_FILES
    assert shards[2] == clean_run[1]  # the merge equals the unsharded run


@pytest.mark.parametrize("fill_at", sorted(MERGE_FILES))
def test_merge_on_a_full_disk_exits_2_naming_the_file_and_a_rerun_equals_a_clean_merge(
    fill_at, shards, tmp_path, monkeypatch, capsys
):
    dirs, _, merged = shards
    before = {d: sorted((p.name, p.stat().st_mtime_ns) for p in d.rglob("*")) for d in dirs}
    out = tmp_path / "merged"
    disk = Disk(out, fill_at)
    monkeypatch.setattr(jsonl.os, "write", disk.write)
    code = cli.main(["merge", *map(str, dirs), "--output", str(out)])
    line = _one_error_line(capsys.readouterr().err)
    assert disk.filled is not None and code == 2
    assert "No space left on device" in line and str(disk.filled) in line
    assert not out.exists() or _temporaries(out) == []
    monkeypatch.setattr(jsonl.os, "write", _REAL_WRITE)
    assert cli.main(["merge", *map(str, dirs), "--output", str(out)]) == 0, capsys.readouterr().err
    assert _files(out) == merged
    assert {d: sorted((p.name, p.stat().st_mtime_ns) for p in d.rglob("*")) for d in dirs} == before  # shards untouched


# --------------------------------------------------------------------------------------------------
# the entailment cache (sqlite)


class CachedOverlap(EntailmentBackend):
    """The fake's token-overlap entailment behind the real backend machinery, so that the sqlite cache is used."""

    name = "fake:cached-overlap"
    fingerprint = "fake-cached-overlap-v1"
    is_nli = False

    def _score_groups(self, groups: list[list[str]]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [(p := fakes.overlap_matrix(texts), 0.5 * (1.0 - p)) for texts in groups]


@pytest.mark.parametrize("when", ["creating it", "storing pairs"])
def test_a_full_disk_under_the_entailment_cache_exits_2_naming_it(when, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(entail, "load_backend", lambda spec, **kw: CachedOverlap(cache=kw["cache"]))
    inp = tmp_path / "in.jsonl"
    fakes.make_samples_file(inp, 4)
    cache = tmp_path / "pairs.sqlite"
    argv = ["score-samples", str(inp), "--entailment", "fake:", "--entail-cache", str(cache), "--no-progress"]
    argv += ["--n-boot", "4", "--output"]
    assert cli.main([*argv, str(tmp_path / "a")]) == 0  # the cache is used
    assert len(entail_cache.EntailmentCache(cache)) > 0
    cache.unlink()
    real_connect = sqlite3.connect

    def connect(*args: Any, **kw: Any) -> sqlite3.Connection:
        """The database cannot grow by a page (``max_page_count``): sqlite answers SQLITE_FULL itself."""
        con = real_connect(*args, **kw)
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        if pages or when == "creating it":
            con.execute(f"PRAGMA max_page_count = {max(pages, 1)}")
        return con

    monkeypatch.setattr(entail_cache.sqlite3, "connect", connect)
    out = tmp_path / "b"
    code = cli.main([*argv, str(out)])
    line = _one_error_line(capsys.readouterr().err)
    assert code == 2 and f"cannot write the entailment cache {cache}" in line and "disk is full" in line
    monkeypatch.setattr(entail_cache.sqlite3, "connect", real_connect)
    assert cli.main([*argv, str(out)]) == 0
    assert (out / "metrics.csv").read_bytes() == (tmp_path / "a" / "metrics.csv").read_bytes()
