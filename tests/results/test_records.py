"""The results layer (shapley.results.records): the code digest covers the computation's whole import closure and
no docstring or comment, a record goes stale with its settings, code or inputs, the inputs are tracked files, a
malformed record counts as missing, and records are written all together or not at all."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shapley.companion import crosscheck, mozart_results, singular_results
from shapley.results import records
from shapley.theory import cosine_results, estimator_replay, hypothesis_results, psd_results

TOY = records.PageRecord(
    "theory/toy.json",
    "shapley.results.records",
    lambda settings, results: {"values": [1, 2]},
    lambda record: "",
    check=records.has_keys(values=list),
)
RECORDS = [
    cosine_results.RECORD,
    hypothesis_results.RECORD,
    estimator_replay.RECORD,
    psd_results.RECORD,
    crosscheck.RECORD,
    singular_results.RECORD,
    mozart_results.RECORD,
]


@pytest.fixture
def edited_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A copy of the package that :mod:`records` digests instead of the real one; the fixture's value edits a
    module of it (dotted name, text appended)."""
    copy = tmp_path / "src" / records.PACKAGE.name
    shutil.copytree(records.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(records, "PACKAGE", copy)

    def edit(module: str, text: str) -> None:
        path = records.module_source(module)
        assert path is not None and path.is_relative_to(copy)
        path.write_text(path.read_text() + text)

    return edit


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.path)
def test_a_record_goes_stale_with_its_settings_code_or_inputs(tmp_path, monkeypatch, record):
    """Every page record, by the one check: other settings, any module of its closure, or an input changed."""
    results = tmp_path / "results"
    (results / "in").mkdir(parents=True)
    (results / "in" / "a.csv").write_text("1\n")
    record = dataclasses.replace(record, inputs=lambda results: ["in/a.csv"])
    was = {"freshness": record.freshness(results)}
    assert record.stale_reasons(was, results) == [] and record.stale_reasons({}, results) == [
        "the record has no freshness block"
    ]
    other = {"freshness": record.freshness(results, {**record.settings, "other": 1})}
    assert record.stale_reasons(other, results)[0].startswith("settings differ: recorded {")
    (results / "in" / "a.csv").write_text("2\n")
    monkeypatch.setattr(records, "source_digests", lambda modules: dict.fromkeys(modules, "0" * 64))
    assert record.stale_reasons(was, results) == [
        f"code changed since the record was computed: {', '.join(record.code_modules)}",
        "inputs changed since the record was computed: in/a.csv",
    ]


def _reword_docstrings_and_comments(path: Path) -> None:
    """Every bare string statement (docstrings included) of the file reworded, and a comment line added: what a
    docstring-only edit does."""
    import ast

    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    strings = [
        n
        for n in ast.walk(ast.parse("".join(lines)))
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
    ]
    for n in sorted(strings, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        first, last = lines[n.lineno - 1], lines[n.end_lineno - 1]  # type: ignore[index]
        lines[n.lineno - 1 : n.end_lineno] = [first[: n.col_offset] + repr("Reworded.") + last[n.end_col_offset :]]
    path.write_text("# a new comment\n" + "".join(lines), encoding="utf-8")


def test_a_docstring_or_comment_edit_of_any_module_leaves_every_record_fresh(tmp_path, edited_package):
    """Issue 39: rewording a docstring staled every record that digests the module, and each reword cost a
    regeneration. The code digest skips docstrings and comments; a code edit still stales the record."""
    results = tmp_path / "results"
    results.mkdir()
    scripts = records.PACKAGE.parent / "scripts"  # the cross-check's script, beside the package's copy
    shutil.copytree(Path(__file__).resolve().parents[2] / "scripts", scripts)
    before = {r.path: {"freshness": r.freshness(results)} for r in RECORDS}
    for path in [*records.PACKAGE.rglob("*.py"), *scripts.glob("*.py")]:
        _reword_docstrings_and_comments(path)
    assert {r.path: r.stale_reasons(before[r.path], results) for r in RECORDS} == {r.path: [] for r in RECORDS}
    edited_package("shapley.core.psd", "\nMIN_EIGENVALUE_SHIFT = 0.25\n")  # the check can fail
    assert psd_results.RECORD.stale_reasons(before[psd_results.RECORD.path], results)


def test_the_import_closure_is_followed_and_sorted():
    closure = records.import_closure("shapley.theory.psd_results")
    assert closure == sorted(closure) == records.import_closure("shapley.theory.psd_results")
    # psd_results -> worstcase -> core.kernel -> core.psd: indirect imports count
    assert {"shapley.theory.worstcase", "shapley.core.kernel", "shapley.core.psd"} <= set(closure)
    assert "shapley.pipeline.config" not in closure and "shapley.companion.provenance" not in closure
    assert psd_results.RECORD.code_modules == closure
    with pytest.raises(ValueError, match="not a module"):
        records.import_closure("shapley.core.nowhere")


def test_only_tracked_files_are_inputs(tmp_path):
    (tmp_path / "run").mkdir()
    for name in ("config.json", "derived.json", "scratch.csv"):
        (tmp_path / "run" / name).write_text(name)
    assert records.committed_files(tmp_path) == ["run/config.json", "run/derived.json", "run/scratch.csv"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "run/config.json", "run/derived.json"], check=True)
    assert records.committed_files(tmp_path) == ["run/config.json", "run/derived.json"]
    (tmp_path / "run" / "derived.json").unlink()  # tracked, deleted: not an input any more
    assert records.committed_files(tmp_path) == ["run/config.json"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[:-20],
        lambda text: "[]",
        lambda text: text.replace('"values": [1, 2]', '"values": 3'),
        lambda text: text.replace('"values"', '"value"'),
        lambda text: text.replace('"command"', '"commands"'),
        lambda text: text.replace('"inputs": {}', '"inputs": 0'),
        lambda text: text.replace('"seconds": 0.0', '"seconds": "0"'),
        lambda text: "[" * 100_000,
    ],
    ids=["truncated", "not-an-object", "wrong-type", "missing-key", "no-command", "inputs", "seconds", "deep"],
)
def test_a_malformed_record_counts_as_missing(tmp_path, damage):
    path = TOY.write(tmp_path)
    good = json.dumps(TOY.load(path))
    assert TOY.fresh(tmp_path) is not None
    path.write_bytes(damage(good).encode())
    assert path.read_text() != good
    assert TOY.fresh(tmp_path) is None
    with pytest.raises(FileNotFoundError, match=r"unreadable .*python -m shapley\.results\.records"):
        TOY.load(path)
    path.write_bytes(b"\xff\xfe")
    assert TOY.fresh(tmp_path) is None


def test_records_are_written_all_together_or_not_at_all(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    records.write_files({a: "old a", b: "old b"})
    (tmp_path / "blocked").write_text("a file, not a folder")
    with pytest.raises(OSError):
        records.write_files({a: "new a", b: "new b", tmp_path / "blocked" / "c.json": "c"})
    assert (a.read_text(), b.read_text()) == ("old a", "old b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "blocked"]  # no temporary file left
    with pytest.raises(UnicodeEncodeError):  # the cross-check's set: the second file cannot be written
        records.write_files({a: "new a", tmp_path / "c.json": "\ud800", b: "new b"})
    assert (a.read_text(), b.read_text()) == ("old a", "old b") and not (tmp_path / "c.json").exists()
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(a).st_mode & 0o777 == 0o666 & ~umask  # as any file the user writes (a temporary one: 0o600)


def test_a_failing_computation_leaves_the_old_record(tmp_path):
    path = TOY.write(tmp_path)
    before = path.read_text()

    def fail(settings, results):
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        records.PageRecord(TOY.path, TOY.module, fail, TOY.summary).write(tmp_path)
    assert path.read_text() == before and sorted(p.name for p in path.parent.iterdir()) == ["toy.json"]
