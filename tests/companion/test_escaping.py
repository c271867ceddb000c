"""Every string that comes from a file and lands in the book's HTML or figures is escaped for where it lands.

Hostile strings of the kind an outside attack used (``<!--``, ``<style>``, ``<xmp>`` fit in a 7-character commit
field; ``</td>`` closes a cell) are written into a run's ``config.json`` and CSVs; the HTML must keep them as text.
Every table reaches a page through :func:`shapley.companion.htmltable.show`, so one parametrized test renders every
table frame of the package from hostile inputs.
"""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser

import matplotlib
import pandas as pd
import pytest

from shapley.companion import costs, htmltable, plots, provenance, tables, theory_plots
from shapley.pipeline.rundir import store

matplotlib.use("Agg")

HOSTILE = ("<!--", "<style>", "<xmp>", "</td>", '"><b x="', "<script>alert(1)</script>", "$\\beta$", "&amp;")
SNAKE = re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b")


class _Tags(HTMLParser):
    """Collects every start/end tag and comment of a fragment."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self.tags.append("/" + tag)

    def handle_comment(self, data: str) -> None:
        self.tags.append("!--")


def _tags(fragment: str) -> list[str]:
    p = _Tags()
    p.feed(fragment)
    p.close()
    return p.tags


def _assert_inert(fragment: str) -> None:
    """No markup but ours in ``fragment`` (the Styler's own ``<style>`` block before a table is ours)."""
    fragment = re.sub(r'^<style type="text/css">[^<]*</style>', "", fragment)
    tags = _tags(fragment)
    for bad in ("style", "xmp", "script", "b", "!--"):
        assert bad not in tags, f"{bad} became markup in {fragment[:300]}"
    assert tags.count("td") == tags.count("/td")


def test_esc_and_code_escape_markup():
    for s in HOSTILE:
        _assert_inert(htmltable.esc(s))
        _assert_inert(htmltable.code(s))
        assert "<" not in htmltable.esc(s)


def test_tex_html_escapes_prose_and_maths_alike():
    for s in HOSTILE:
        _assert_inert(htmltable.tex_html(f"{s} ${s.replace('$', '')}$ {s.replace('$', '')}"))
    with pytest.raises(ValueError, match="unbalanced"):
        htmltable.tex_html("one $ sign")


def _hostile_config(monkeypatch, tmp_path):
    d = tmp_path / "run<xmp>"
    d.mkdir()
    invocations = [
        {
            "time": "<!--",
            "command_line": "python -m shapley run </td>",
            "git": {"commit": c, "dirty": True},
            "resumed": True,
        }
        for c in HOSTILE
    ]
    rec = {"schema": 2, "config": {}, "provenance": {"created": "t", "command_line": "x"}, "invocations": invocations}
    (d / "config.json").write_text(json.dumps(rec))

    class Cfg:
        class data:
            dataset = "<style>"

        class entailment:
            backend = "</td>"

        model = "<xmp>"
        n_samples = 3

    monkeypatch.setattr(provenance, "require_record", lambda _d: rec)
    monkeypatch.setattr(provenance, "run_history", lambda _d: store.run_history(rec))
    monkeypatch.setattr(provenance, "read_config", lambda _d: Cfg)
    monkeypatch.setattr(provenance, "load_metrics", lambda _d: pd.DataFrame({"accuracy": [0.5], "n_questions": [3]}))
    return d


def _comparisons() -> pd.DataFrame:
    n = len(HOSTILE)
    return pd.DataFrame(
        {
            "method": list(HOSTILE),
            "reference": ["<style>"] * n,
            "delta_auroc": [0.01] * n,
            "lo": [-0.01] * n,
            "hi": [0.02] * n,
            "delong_p_holm": [0.5] * n,
            "outcome": ["tie"] * n,
            "run": ["results/</td><xmp>"] * n,
        }
    )


def _metrics(methods) -> pd.DataFrame:
    k = len(methods)
    return pd.DataFrame(
        {
            "method": methods,
            **dict.fromkeys(["auroc", "auroc_lo", "auroc_hi", "auarc", "prr", "accuracy"], [0.6] * k),
            "n_questions": [4] * k,
        }
    )


def _comparison_table(monkeypatch, _tmp_path):
    runs = pd.DataFrame(
        {"run_dir": ["r</td>"], "dataset": ["coqa"], "model": ["<style>"], "entailment_is_stand_in": [True]}
    )
    monkeypatch.setattr(tables, "runs_table", lambda _dirs: runs)
    monkeypatch.setattr(tables, "relative_path", str)
    monkeypatch.setattr(tables, "load_metrics", lambda _d: _metrics(["Shap", "SE"]))
    monkeypatch.setattr(tables, "load_skipped", lambda _d: pd.DataFrame({"method": ["<xmp>"]}))
    return tables.comparison_frame(3, ["r</td>"])


def _axiom_grid():
    rows = [
        {"estimator": e, "property": p, "reading": r, "verdict": "fails", "examples": 1}
        for e in HOSTILE[:2]
        for r in ("sentence", "rv")
        for p in ("1", "2", "3")
    ]
    return theory_plots.axiom_grid_frame(pd.DataFrame(rows))


def _generation():
    rows = pd.DataFrame(
        {
            "dataset": list(HOSTILE[:3]),
            "mode": ["shapley_prefix_cache", "transformers_generate", "<style>"],
            **dict.fromkeys(["questions", "prompt_tokens_mean", "prefix_tokens", "repeats"], [3, 3, 3]),
            **dict.fromkeys(["setup_seconds", "seconds_per_question", "speedup_vs_transformers"], [1.0, 2.0, 3.0]),
            "seconds_per_question_min": [1, 2, 3],
            "seconds_per_question_max": [2, 3, 4],
        }
    )
    return costs.generation_frames(rows)


def _metrics_table(monkeypatch, tmp_path):
    monkeypatch.setattr(tables, "load_metrics", lambda _d: _metrics(list(HOSTILE)))
    return tables.metrics_frame(tmp_path / "<xmp>", "A caption with <script> and `code` read from a file")


FRAMES = {
    "comparison": _comparison_table,
    "metrics": _metrics_table,
    "provenance": lambda mp, tmp: provenance.provenance_frame(provenance.provenance_table([_hostile_config(mp, tmp)])),
    "axiom grid": lambda mp, tmp: _axiom_grid(),
    "generation prompts": lambda mp, tmp: _generation()[0],
    "generation times": lambda mp, tmp: _generation()[1],
    "cost estimate": lambda mp, tmp: costs.cost_estimate_frame([["L-7B"], ["L-13B", "Q-14B"]], 800),
}


@pytest.mark.parametrize("name", FRAMES)
def test_every_table_escapes_its_cells_headers_and_caption(name, monkeypatch, tmp_path):
    """Each table frame, built from hostile inputs where it reads files, renders inert through the one renderer;
    its headers are words (no snake_case column name), and it has as many rows as the frame."""
    frame = FRAMES[name](monkeypatch, tmp_path)
    page = htmltable.show(frame)
    _assert_inert(page)
    assert page._repr_html_() == str(page) and page.count('class="companion"') == 1
    assert _tags(page).count("tr") == len(frame) + frame.columns.nlevels
    headers = [str(h) for h in frame.columns.get_level_values(-1)]
    assert not [h for h in headers if SNAKE.search(h)], headers


def test_provenance_shows_hostile_commits_and_commands_as_text(monkeypatch, tmp_path):
    d = _hostile_config(monkeypatch, tmp_path)
    page = htmltable.show(provenance.provenance_frame(provenance.provenance_table([d])))
    assert "&lt;!--" in page and "&lt;style&gt;" in page  # the commits are shown, as text
    _assert_inert(provenance.commands_html([d]))


def test_show_formats_numbers_and_declared_html_only():
    frame = pd.DataFrame({"</th><style>": ["a<b", "<!--"], "AUROC": [0.5, math.nan], "Cell": ["<b>x</b>", "y"]})
    page = htmltable.show(
        htmltable.titled(frame, "From `x.csv` <xmp>; *n.s.*", formats={"AUROC": ".3f"}, html=["Cell"])
    )
    assert "<caption>From <code>x.csv</code> &lt;xmp&gt;; <em>n.s.</em></caption>" in page
    assert "&lt;/th&gt;&lt;style&gt;" in page and "a&lt;b" in page and "&lt;!--" in page
    assert re.search(r'class="[^"]*num[^"]*" >0\.500<', page) and f">{htmltable.NA}<" in page and "<b>x</b>" in page


def test_figures_draw_names_with_dollar_signs_literally():
    comp = pd.DataFrame(
        {"run": ["$a", "b$", "$a"], "method": ["$x", "$\\beta$", "Shap"], "reference": "Shap",
         "delta_auroc": [0.1, -0.1, 0.0], "outcome": ["win", "loss", "tie"]}
    )  # fmt: skip
    fig = plots.delta_heatmap(comp)
    fig.canvas.draw()  # unbalanced or unknown mathtext would raise here
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert sorted(labels) == sorted(plots.plain(x) for x in comp["method"])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [r"\$a", r"b\$"]
