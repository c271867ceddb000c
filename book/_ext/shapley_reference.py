"""Sphinx extension of the book's reference part (book/reference/): tables generated from the code's declarations.

* ``.. shapley-sample-fields::``: every field a ``score-samples`` line may hold
  (:data:`shapley.pipeline.data.samples.KNOWN_FIELDS`), its type (:class:`~shapley.pipeline.data.samples.SampleItem`'s
  annotation), whether it is required, and the methods that need it (:data:`shapley.pipeline.score.scores.METHODS`'
  ``needs``, through :data:`SAMPLE_INPUTS`).
* ``.. shapley-run-files::``: every file of a run directory, from the stage and output declarations
  (:data:`shapley.pipeline.rundir.jsonl.STAGE_FILES`, :data:`shapley.pipeline.rundir.derived.RUN_OUTPUTS`, ...),
  with the columns the code declares for it.

What the code does not declare (a field's meaning, a file's contents) is written here, once per name; a name that the
code declares without an entry here stops the build (``ExtensionError``), so the page cannot silently miss one.
``tests/book/test_reference.py`` checks the same without a build.

Also: argparse wraps usage lines at the terminal's width, ``COLUMNS`` - 2; :func:`setup` sets ``COLUMNS``
(:data:`USAGE_COLUMNS`) so that the command-line page's usage blocks fit the text column.
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.errors import ExtensionError
from sphinx.transforms import SphinxTransform
from sphinx.util.docutils import SphinxDirective

USAGE_COLUMNS = 43
"""argparse's usage width is ``COLUMNS - 2``. sphinx-argparse formats only the usage blocks with it (the help texts
are Sphinx's). At 41, ``score-samples``' usage (its prog is 31 characters, over 3/4 of the width) starts each line at
the left edge instead of under the prog, so that its longest option, ``[--cluster-rule {...}]``, fits; every line of
every subcommand's usage then holds at most 76 characters, what a command block of the column holds
(``tests/book/test_code_blocks.py``; ``tests/book/test_reference.py`` checks it)."""

SAMPLE_FIELDS: dict[str, str] = {
    "id": "the question's id (an integer is read as its decimal text); unique in the file",
    "question": "the question",
    "references": "the reference answers the judged answer is compared with (a list, never a single string); "
    "with ``--reference-field answer`` the field ``answer`` holds them instead",
    "samples": "the n sampled answers, scored by every method (a list of strings; surrounding whitespace stripped; "
    "``--n-samples N`` keeps the first N)",
    "samples_cleaned": "read instead of ``samples`` when present (the UQ-NLG layout)",
    "answer": "the judged answer, whose correctness the AUROC ranks (default: ``samples[0]``); with "
    "``--reference-field answer``: the references (a string or a list)",
    "sample_logprobs": "per sample, its tokens' log-probabilities, in nats (one list per sample)",
    "answer_token_logprobs": "the judged answer's tokens' log-probabilities, in nats",
    "answer_token_entropies": "the next-token entropies along the judged answer, in nats",
    "p_true": "the model's probability, in [0, 1], that the judged answer is true (p(True))",
    "a4c_text": "the model's reply when asked for its confidence (A4C), e.g. ``Confidence: 80%``",
    "embedding": "an embedding of the judged answer (any length, the same on every line); ER learns from it",
}
"""What each field of a ``score-samples`` line holds (the code declares the names and types, not the meaning)."""

REQUIRED: dict[str, str] = {
    "id": "yes",
    "question": "yes",
    "references": "yes (unless ``--reference-field answer``)",
    "samples": "yes (or ``samples_cleaned``)",
}

SAMPLE_INPUTS: dict[str, tuple[str, ...]] = {
    "samples": ("samples", "entail"),
    "samples_cleaned": ("samples", "entail"),
    "sample_logprobs": ("sample_logprobs",),
    "answer_token_logprobs": ("answer_logprobs",),
    "answer_token_entropies": ("answer_entropies",),
    "p_true": ("p_true",),
    "a4c_text": ("a4c_text",),
    "embedding": ("embeddings",),
}
"""The scoring inputs (:class:`shapley.pipeline.score.scores.ScoreInputs`' names, which the methods' ``needs`` use)
each field provides (``entail``: the entailment matrix of the samples, which the run computes);
``tests/book/test_reference.py`` checks it against the pipeline's conversion of a line."""

RUN_FILES: dict[str, tuple[str, str]] = {
    "config.json": (
        "both commands, first",
        "the run's settings (every option, as ``RunConfig``), provenance (versions, model and data fingerprints) "
        "and each invocation's command line",
    ),
    "questions.jsonl": ("run: data", "one record per question: its id and the SHA-256 of the question as read"),
    "generations.jsonl": (
        "run: generate",
        "one record per question: the samples, their token log-probabilities (nats), the judged answer's token "
        "log-probabilities and entropies (nats), p(True) and the A4C reply",
    ),
    "entailment.jsonl": (
        "entail",
        "one record per question: ``n``, ``entail`` (n x n nested lists, P(s_i entails s_j) in [0, 1]) and "
        "``contradict`` (n x n, or null)",
    ),
    "scores.jsonl": (
        "score",
        "one record per question: correctness, ``scores`` (method: uncertainty; nats for the entropies), "
        "``skipped`` (method: reason) and diagnostics",
    ),
    "stages.jsonl.gz": (
        "metrics (with the outputs)",
        "the entailment and score records without answer text (gzip); read when a stage file is absent",
    ),
    "scores.csv": (
        "metrics",
        "one row per question: ``id``, ``correct``, ``correctness_value``, ``correctness_metric``, ``answer``, one "
        "column per method (its uncertainty, nats for the entropies; empty where skipped), then the diagnostics",
    ),
    "metrics.csv": (
        "metrics",
        "one row per computed method: AUROC (a probability), its bootstrap interval and their Monte-Carlo "
        "standard errors, AUARC, PRR, ``n`` questions and their ``accuracy`` (a fraction)",
    ),
    "skipped.csv": ("metrics", "the methods not computed on some or all questions, with the reason"),
    "comparisons.csv": ("metrics", "each method against ``Shap``: the AUROC difference and DeLong's paired test"),
    "derived.json": ("metrics", "the stage-file content each derived file was computed from"),
    "beta_sweep.csv": ("beta-sweep", "per beta: AUROC of ``Shap`` and how many questions have a non-PSD R"),
    "beta_sweep_per_question.csv": ("beta-sweep", "per beta and question: ``Shap`` (nats) and R's least eigenvalue"),
    "hidden/": ("run: generate", "the judged answers' hidden states (``.npz``)"),
}
"""Each file of a run directory: (the command or stage that writes it, what it holds)."""


def declared_run_files() -> list[str]:
    """The run directory's files as the code declares them (stage files, derived outputs, config)."""
    from shapley.pipeline.rundir.derived import DERIVED_FILE, RUN_OUTPUTS, SWEEP_OUTPUTS
    from shapley.pipeline.rundir.jsonl import COMPACT_FILE, STAGE_FILES
    from shapley.pipeline.rundir.store import CONFIG_FILE

    return [CONFIG_FILE, *STAGE_FILES.values(), COMPACT_FILE, *RUN_OUTPUTS, DERIVED_FILE, *SWEEP_OUTPUTS]


def declared_columns() -> dict[str, tuple[str, ...]]:
    """The columns the code declares for a run's CSV files."""
    from shapley.pipeline.evaluate.comparisons import COMPARISON_COLUMNS
    from shapley.pipeline.evaluate.metrics import EXTRA_COLUMNS, METRICS_COLUMNS, SKIPPED_COLUMNS

    return {
        "metrics.csv": (*METRICS_COLUMNS, *EXTRA_COLUMNS),
        "skipped.csv": SKIPPED_COLUMNS,
        "comparisons.csv": COMPARISON_COLUMNS,
    }


def _type_name(t: Any) -> str:
    """``list[list[float]] | None`` -> ``list[list[float]]`` (optional-ness is the table's own column)."""
    args = [a for a in typing.get_args(t) if a is not type(None)]
    if typing.get_origin(t) in (typing.Union, getattr(__import__("types"), "UnionType", None)) and len(args) == 1:
        t = args[0]
    return t.__name__ if isinstance(t, type) and not typing.get_args(t) else str(t).replace("typing.", "")


def sample_field_rows() -> list[tuple[str, str, str, str, str]]:
    """(field, type, required, methods that need it, meaning) per known field; ``ExtensionError`` for a field the
    reader knows without an entry here (or an entry for a field it does not know)."""
    from shapley.pipeline.data.samples import KNOWN_FIELDS, SampleItem
    from shapley.pipeline.score.scores import METHODS

    missing = sorted(set(KNOWN_FIELDS) ^ set(SAMPLE_FIELDS))
    if missing:
        raise ExtensionError(f"shapley-sample-fields: fields without an entry (or entries without a field): {missing}")
    hints = typing.get_type_hints(SampleItem)
    types = {f.name: _type_name(hints[f.name]) for f in dataclasses.fields(SampleItem)}
    types["samples_cleaned"] = types["samples"]
    types["id"] = "str | int"
    rows = []
    for name in KNOWN_FIELDS:
        inputs = SAMPLE_INPUTS.get(name, ())
        # a method needs the field when it needs an input only this field provides (samples also give entail)
        methods = [m for m, spec in METHODS.items() if set(spec.needs) & set(inputs) - {"samples", "entail"}]
        if name in ("samples", "samples_cleaned"):
            methods = ["all"]
        rows.append((name, types[name], REQUIRED.get(name, "no"), ", ".join(methods) or "–", SAMPLE_FIELDS[name]))
    return rows


def run_file_rows() -> list[tuple[str, str, str, str]]:
    """(file, written by, contents, declared columns) per file of a run directory."""
    declared = [*declared_run_files(), "hidden/"]
    missing = sorted(set(declared) ^ set(RUN_FILES))
    if missing:
        raise ExtensionError(f"shapley-run-files: files without an entry (or entries without a file): {missing}")
    columns = declared_columns()
    return [
        (name, RUN_FILES[name][0], RUN_FILES[name][1], ", ".join(f"``{c}``" for c in columns.get(name, ())) or "–")
        for name in declared
    ]


def _list_table(headers: tuple[str, ...], rows: list[tuple[str, ...]], widths: str, classes: str) -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1", f"   :widths: {widths}", f"   :class: {classes}", ""]
    for row in [headers, *rows]:
        for k, cell in enumerate(row):
            lines.append(f"   {'*' if k == 0 else ' '} - {cell}")
    return lines


class _TableDirective(SphinxDirective):
    has_content = False

    def table(self) -> list[str]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(self.table(), source="shapley_reference"), self.content_offset, container)
        return container.children


class SampleFields(_TableDirective):
    def table(self) -> list[str]:
        rows = [(f"``{n}``", f"``{t}``", r, m, d) for n, t, r, m, d in sample_field_rows()]
        return _list_table(("Field", "Type", "Required", "Needed by", "Holds"), rows, "18 14 12 14 42", "reference")


class RunFiles(_TableDirective):
    def table(self) -> list[str]:
        rows = [(f"``{n}``", w, d, c) for n, w, d, c in run_file_rows()]
        return _list_table(("File", "Written by", "Holds", "Columns (declared)"), rows, "18 14 40 28", "reference")


OPTION = re.compile(r"(?<!\S)(--[a-z][\w-]*)")
"""A command-line option in running text (``--psd-policy``)."""


class OptionLiterals(SphinxTransform):
    """On the command-line reference, each option named in a help text becomes inline code, so that Sphinx's
    smart quotes (priority 750) do not turn its leading ``--`` into an en dash."""

    default_priority = 700

    def apply(self, **kwargs: Any) -> None:
        if self.env.docname != "book/reference/cli":
            return
        for text in list(self.document.findall(nodes.Text)):
            parent = text.parent
            if parent is None or isinstance(parent, (nodes.literal, nodes.FixedTextElement)):
                continue
            parts = OPTION.split(str(text))
            if len(parts) == 1:
                continue
            pieces = [nodes.literal(p, p) if i % 2 else nodes.Text(p) for i, p in enumerate(parts) if p]
            parent.replace(text, pieces)


def setup(app: Any) -> dict[str, Any]:
    os.environ["COLUMNS"] = str(USAGE_COLUMNS)
    app.add_directive("shapley-sample-fields", SampleFields)
    app.add_directive("shapley-run-files", RunFiles)
    app.connect("autodoc-process-docstring", reexported_constant_doc)
    app.connect("autodoc-process-signature", own_init_signature)
    app.add_transform(OptionLiterals)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _reexport_sources(module: str) -> dict[str, str]:
    """``{name: defining module}`` of the ``from M import name as name`` lines of ``module``'s ``__init__``."""
    import ast
    import importlib

    path = importlib.import_module(module).__file__
    assert path is not None
    tree = ast.parse(open(path, encoding="utf-8").read())
    return {
        a.asname or a.name: n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module for a in n.names
    }


def reexported_constant_doc(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A constant re-exported by a package (``shapley.EXACT_MAX_N``) gets the docstring it has where it is defined
    (``shapley.core.entropy``): autodoc reads attribute docstrings from the documented module's source only."""
    if what != "data" or "." not in name:
        return
    from sphinx.pycode import ModuleAnalyzer

    package, attr = name.rsplit(".", 1)
    try:
        source = _reexport_sources(package).get(attr)
        docs = ModuleAnalyzer.for_module(source).find_attr_docs() if source else {}
    except Exception:  # not a package of ours, or no source to read
        return
    found = docs.get(("", attr))
    if found:
        lines[:] = [*found]


def own_init_signature(
    app: Any, what: str, name: str, obj: Any, options: Any, signature: str | None, return_annotation: str | None
) -> tuple[str, str | None] | None:
    """A class of ours whose base comes from a peer package (LM-Polygraph's ``Estimator``; a stand-in or autodoc's
    mock where LM-Polygraph is not installed) shows its own ``__init__``'s signature, not the base's ``__new__``
    (``*args, **kwargs``)."""
    if what != "class" or not name.startswith("shapley.") or "__init__" not in vars(obj):
        return None
    from sphinx.util import inspect as sphinx_inspect

    sig = sphinx_inspect.signature(obj.__init__, bound_method=True, type_aliases=app.config.autodoc_type_aliases)
    return sphinx_inspect.stringify_signature(sig, show_return_annotation=False), return_annotation
