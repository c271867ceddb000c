"""The reference part (book/reference/, issue 40) covers what the code declares: a new public name, command-line
option or ``score-samples`` field without its entry fails here.

Fast tests read the sources and the declarations; the ``built`` ones read the built pages (``_build/html``, the
``built`` fixture of tests/book/conftest.py) for each entry's anchor and text.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import json
import sys
from pathlib import Path

import pytest

import shapley
import shapley.core.baselines as baselines
from shapley.cli.args import build_parser
from tests.book.test_book import HTML

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "book" / "reference"
EXAMPLE = ROOT / "tests" / "book" / "data" / "score_samples_example.json"
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import shapley_reference as ext  # noqa: E402

INTEGRATION_CLASSES = (
    "shapley.integrations.lm_polygraph.ShapleyUncertainty",
    "shapley.integrations.uqlm.ShapleyScorer",
)
PIPELINE_ENTRY_POINTS = (
    "shapley.pipeline.experiment.pipelines.run_experiment",
    "shapley.pipeline.experiment.pipelines.score_samples",
    "shapley.pipeline.experiment.merge.merge_runs",
    "shapley.pipeline.config.RunConfig",
    "shapley.pipeline.data.samples.read_samples_file",
)


def _reexports(module) -> list[str]:
    """The names a package's ``__init__`` binds with ``from M import x as x`` (its public re-exports)."""
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    return [a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names]


def public_anchors() -> list[str]:
    """The anchors the API pages must hold: ``shapley.<name>`` for each of ``shapley.__all__`` (its ``metrics``
    module: the module itself), each name of ``shapley.core.baselines.__all__``, the integration classes and the
    pipeline's entry points."""
    names = [f"shapley.{n}" if n != "metrics" else "module-shapley.core.metrics" for n in shapley.__all__]
    return [
        *names,
        *(f"shapley.core.baselines.{n}" for n in baselines.__all__),
        *INTEGRATION_CLASSES,
        *PIPELINE_ENTRY_POINTS,
    ]


def parser_options() -> dict[str, list[str]]:
    """``{subcommand: [its option strings and positional names]}`` of ``python -m shapley``."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, p in sub.choices.items():
        out[name] = [
            s if a.option_strings else (a.metavar or a.dest)
            for a in p._actions
            if not isinstance(a, argparse._HelpAction)
            for s in (a.option_strings or [None])
        ]
    return out


# ---------------------------------------------------------------------------------------------- sources


@pytest.mark.parametrize("module", [shapley, baselines], ids=lambda m: m.__name__)
def test_all_lists_every_reexport(module):
    """A name re-exported without being added to ``__all__`` would have no entry: ``automodule`` follows ``__all__``."""
    assert sorted(_reexports(module)) == sorted(module.__all__)
    assert len(set(module.__all__)) == len(module.__all__)


def test_summary_tables_list_every_public_name():
    for page, module in (("api.md", shapley), ("baselines.md", baselines)):
        text = (PAGES / page).read_text(encoding="utf-8")
        listed = text.split(".. autosummary::", 1)[1].split("\n\n", 2)[1].split()
        expected = [n for n in module.__all__ if n != "metrics"]
        assert listed == expected, f"{page}: the summary table and __all__ differ"


def test_every_sample_field_has_an_entry():
    from shapley.pipeline.data.samples import KNOWN_FIELDS

    assert set(ext.SAMPLE_FIELDS) == set(KNOWN_FIELDS)
    assert [r[0] for r in ext.sample_field_rows()] == list(KNOWN_FIELDS)


def test_sample_inputs_follow_the_pipeline():
    """Each field reaches the scoring inputs that :data:`shapley_reference.SAMPLE_INPUTS` names (the pipeline's own
    conversion of a line), so "Needed by" names the methods whose ``needs`` it meets."""
    from shapley.pipeline.data.samples import SampleItem
    from shapley.pipeline.experiment.pipelines import _sample_inputs
    from shapley.pipeline.score.scores import METHODS, ScoreInputs

    item = SampleItem(
        id="q", question="?", references=["a"], samples=["a", "b"], answer="a", lineno=1,
        sample_logprobs=[[-0.1], [-0.2]], answer_token_logprobs=[-0.1], answer_token_entropies=[0.3],
        p_true=0.5, a4c_text="50%", embedding=[1.0, 2.0],
    )  # fmt: skip
    x = _sample_inputs(item, {"entail": [[1.0, 0.5], [0.5, 1.0]], "contradict": None})
    for field, inputs in ext.SAMPLE_INPUTS.items():
        source = getattr(item, "samples" if field == "samples_cleaned" else field)
        for name in set(inputs) - {"entail"}:
            value = getattr(x, name)
            assert list(value) == list(source) if isinstance(source, list) else value == source, (field, name)
    needs = {n for spec in METHODS.values() for n in spec.needs}
    provided = {n for inputs in ext.SAMPLE_INPUTS.values() for n in inputs}
    assert needs <= provided and provided <= {f.name for f in dataclasses.fields(ScoreInputs)}


def test_the_example_line_is_read_with_every_field(tmp_path):
    """The page's complete example, written as one line, is read by ``score-samples``' reader, field for field."""
    from shapley.pipeline.data.samples import KNOWN_FIELDS, read_samples_file

    row = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert set(row) == set(KNOWN_FIELDS) - {"samples_cleaned"}  # samples_cleaned replaces samples
    f = tmp_path / "answers.jsonl"
    f.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (item,) = read_samples_file(f)
    for name, value in row.items():
        assert getattr(item, name) == value, name
    assert item.extra_fields == () and item.answer_given


def test_every_run_file_has_an_entry():
    assert set(ext.RUN_FILES) == {*ext.declared_run_files(), "hidden/"}
    assert set(ext.declared_columns()) <= set(ext.RUN_FILES)


def test_the_reference_is_a_part_of_the_toc():
    from tests.book.test_book import toc_pages

    pages = [p for p in toc_pages() if p.startswith("book/reference/")]
    assert sorted(pages) == sorted(f"book/reference/{p.stem}" for p in PAGES.glob("*.md"))


# ---------------------------------------------------------------------------------------------- built pages


def _soup(page: str):
    from bs4 import BeautifulSoup

    return BeautifulSoup((HTML / "book" / "reference" / f"{page}.html").read_text(encoding="utf-8"), "html.parser")


@pytest.mark.book
@pytest.mark.slow
def test_every_public_name_has_an_entry_with_its_docstring(built):
    soups = [_soup(p) for p in ("api", "baselines", "integrations", "pipeline")]
    missing, bare = [], []
    for anchor in public_anchors():
        found = next((el for s in soups if (el := s.find(id=anchor)) is not None), None)
        if found is None:
            missing.append(anchor)
        elif found.name == "dt" and not found.find_next_sibling("dd").get_text(strip=True):
            bare.append(anchor)
    assert missing == [] and bare == []
    sig = soups[2].find(id=INTEGRATION_CLASSES[0]).get_text(" ", strip=True)
    assert "beta" in sig and "*args" not in sig.replace(" ", ""), "the mocked base's signature, not the class's"


@pytest.mark.book
@pytest.mark.slow
def test_every_option_is_on_the_command_line_page(built):
    text = _soup("cli").find("article").get_text(" ")
    missing = {cmd: [o for o in opts if o not in text] for cmd, opts in parser_options().items()}
    assert {c: m for c, m in missing.items() if m} == {}
    assert "usage: python -m shapley" in _soup("cli").find("article").get_text("")  # no-count mark (book_words)
    # an option in a help text renders as itself, not with an en dash; the API's field separators keep theirs
    assert "–psd-policy" not in text and "--psd-policy" in {c.get_text() for c in _soup("cli").select("article code")}
    assert " -- " not in _soup("api").find("article").get_text(" ")


@pytest.mark.book
@pytest.mark.slow
def test_every_field_and_file_is_on_the_formats_page(built):
    from shapley.pipeline.data.samples import KNOWN_FIELDS

    text = _soup("formats").find("article").get_text(" ")
    assert [f for f in KNOWN_FIELDS if f not in text] == []
    assert [f for f in ext.RUN_FILES if f not in text] == []


def test_the_checks_can_fail():
    """The field check sees a field added to the reader, the option list sees every subcommand's options."""
    assert "--beta" in parser_options()["run"] and "FILE.jsonl" in parser_options()["score-samples"]
    saved = dict(ext.SAMPLE_FIELDS)
    try:
        del ext.SAMPLE_FIELDS["a4c_text"]
        with pytest.raises(Exception, match="a4c_text"):
            ext.sample_field_rows()
    finally:
        ext.SAMPLE_FIELDS.clear()
        ext.SAMPLE_FIELDS.update(saved)
    assert importlib.import_module("shapley").__all__ is shapley.__all__


def test_usage_blocks_fit_the_column(monkeypatch):
    """The command-line page's usage blocks, formatted as sphinx-argparse formats them under the extension's
    ``COLUMNS``, hold no line longer than a command block may (the browser check measures the built page)."""
    from sphinxarg.parser import _format_usage_without_prefix

    from tests.book.test_code_blocks import MAX_CHARS

    monkeypatch.setenv("COLUMNS", str(ext.USAGE_COLUMNS))
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    longest = {n: max(map(len, _format_usage_without_prefix(p).splitlines())) for n, p in sub.choices.items()}
    assert max(longest.values()) <= MAX_CHARS, longest
    assert max(map(len, parser.format_usage().splitlines())) <= MAX_CHARS
