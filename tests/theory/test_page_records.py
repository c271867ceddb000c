"""Page records (shapley.theory.page_records): the code digest covers the computation's whole import closure, the
inputs are tracked files, a malformed record counts as missing, and records are written all together or not at
all."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from shapley.companion import crosscheck, mozart_results, provenance, singular_results
from shapley.theory import cosine_results, estimator_replay, hypothesis_results, page_records, psd_results

TOY = page_records.PageRecord(
    "theory/toy.json",
    "shapley.theory.page_records",
    lambda settings, results: {"values": [1, 2]},
    lambda record: "",
    check=page_records.has_keys(values=list),
)


@pytest.fixture
def edited_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A copy of the package that :mod:`page_records` digests instead of the real one; the fixture's value edits a
    module of it (dotted name, text appended)."""
    copy = tmp_path / "src" / page_records.PACKAGE.name
    shutil.copytree(page_records.PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(page_records, "PACKAGE", copy)

    def edit(module: str, text: str) -> None:
        path = page_records.module_source(module)
        assert path is not None and path.is_relative_to(copy)
        path.write_text(path.read_text() + text)

    return edit


@pytest.mark.parametrize(
    ("record", "module", "edit"),
    [
        (psd_results.RECORD, "shapley.core.psd", "\nMIN_EIGENVALUE_SHIFT = 0.25\n"),  # issue 33, item 12
        (provenance.RECORD, "shapley.pipeline.config", "\nEXTRA_SCORING_SETTING = 1\n"),  # issue 33, item 11
    ],
    ids=["psd_searches-core.psd", "derived_status-pipeline.config"],
)
def test_editing_a_module_the_computation_imports_makes_the_record_stale(
    tmp_path, edited_package, record, module, edit
):
    results = tmp_path / "results"
    results.mkdir()
    before = {"freshness": record.freshness(results)}
    assert record.stale_reasons(before, results) == []
    edited_package(module, edit)
    assert record.stale_reasons(before, results) == [f"code changed since the record was computed: {module}"]


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


RECORDS = [
    cosine_results.RECORD,
    hypothesis_results.RECORD,
    estimator_replay.RECORD,
    psd_results.RECORD,
    crosscheck.RECORD,
    singular_results.RECORD,
    provenance.RECORD,
    mozart_results.RECORD,
]


def test_a_docstring_or_comment_edit_of_any_module_leaves_every_record_fresh(tmp_path, edited_package):
    """Issue 39: rewording a docstring staled every record that digests the module, and each reword cost a
    regeneration. The code digest skips docstrings and comments; a code edit still stales the record."""
    results = tmp_path / "results"
    results.mkdir()
    scripts = page_records.PACKAGE.parent / "scripts"  # the cross-check's script, beside the package's copy
    shutil.copytree(Path(__file__).resolve().parents[2] / "scripts", scripts)
    before = {r.path: {"freshness": r.freshness(results)} for r in RECORDS}
    for path in [*page_records.PACKAGE.rglob("*.py"), *scripts.glob("*.py")]:
        _reword_docstrings_and_comments(path)
    assert {r.path: r.stale_reasons(before[r.path], results) for r in RECORDS} == {r.path: [] for r in RECORDS}
    edited_package("shapley.core.psd", "\nMIN_EIGENVALUE_SHIFT = 0.25\n")  # the check can fail
    assert psd_results.RECORD.stale_reasons(before[psd_results.RECORD.path], results)


def test_the_import_closure_is_followed_and_sorted():
    closure = page_records.import_closure("shapley.theory.psd_results")
    assert closure == sorted(closure) == page_records.import_closure("shapley.theory.psd_results")
    # psd_results -> worstcase -> core.kernel -> core.psd: indirect imports count
    assert {"shapley.theory.worstcase", "shapley.core.kernel", "shapley.core.psd"} <= set(closure)
    assert "shapley.pipeline.config" not in closure and "shapley.companion.provenance" not in closure
    assert psd_results.RECORD.code_modules == closure
    with pytest.raises(ValueError, match="not a module"):
        page_records.import_closure("shapley.core.nowhere")


def test_only_tracked_files_are_inputs(tmp_path):
    (tmp_path / "run").mkdir()
    for name in ("config.json", "derived.json", "scratch.csv"):
        (tmp_path / "run" / name).write_text(name)
    assert page_records.committed_files(tmp_path) == ["run/config.json", "run/derived.json", "run/scratch.csv"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "run/config.json", "run/derived.json"], check=True)
    assert page_records.committed_files(tmp_path) == ["run/config.json", "run/derived.json"]
    (tmp_path / "run" / "derived.json").unlink()  # tracked, deleted: not an input any more
    assert page_records.committed_files(tmp_path) == ["run/config.json"]


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
    with pytest.raises(FileNotFoundError, match=r"unreadable .*python -m shapley\.theory\.page_records"):
        TOY.load(path)
    path.write_bytes(b"\xff\xfe")
    assert TOY.fresh(tmp_path) is None


def test_records_are_written_all_together_or_not_at_all(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    page_records.write_files({a: "old a", b: "old b"})
    (tmp_path / "blocked").write_text("a file, not a folder")
    with pytest.raises(OSError):
        page_records.write_files({a: "new a", b: "new b", tmp_path / "blocked" / "c.json": "c"})
    assert (a.read_text(), b.read_text()) == ("old a", "old b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "blocked"]  # no temporary file left


def test_a_failing_computation_leaves_the_old_record(tmp_path):
    path = TOY.write(tmp_path)
    before = path.read_text()

    def fail(settings, results):
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        page_records.PageRecord(TOY.path, TOY.module, fail, TOY.summary).write(tmp_path)
    assert path.read_text() == before and sorted(p.name for p in path.parent.iterdir()) == ["toy.json"]
