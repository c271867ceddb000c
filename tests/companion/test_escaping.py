"""Every string that comes from a file and lands in the book's HTML or figures is escaped for where it lands.

Hostile strings of the kind an outside attack used (``<!--``, ``<style>``, ``<xmp>`` fit in a 7-character commit
field; ``</td>`` closes a cell) are written into a run's ``config.json`` and CSVs; the HTML must keep them as text.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import matplotlib
import pandas as pd
import pytest

from shapley.companion import htmltable, paired, plots, provenance, tables
from shapley.pipeline.rundir import store

matplotlib.use("Agg")

HOSTILE = ("<!--", "<style>", "<xmp>", "</td>", '"><b x="', "<script>alert(1)</script>", "$\\beta$", "&amp;")


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


def test_html_table_escapes_cells_headers_classes_but_not_raw_columns():
    rows = [{"a": s, "b": s} for s in HOSTILE]
    out = htmltable.html_table(
        rows,
        [htmltable.Col("a", "</th><style>"), htmltable.Col("b", "b", decimals=2)],
        caption="c",
        row_classes=['x"><style>'] * len(rows),
        css='"><xmp>',
    )
    _assert_inert(out)
    assert _tags(out).count("tr") == len(rows) + 1


def test_provenance_html_escapes_commits_models_and_paths(tmp_path, monkeypatch):
    d = tmp_path / "run<xmp>"
    d.mkdir()
    invocations = [
        {"time": "<!--", "command_line": "python -m shapley run </td>", "git": {"commit": c, "dirty": True}}
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

    monkeypatch.setattr(provenance, "read_record", lambda _d: rec)
    monkeypatch.setattr(provenance, "run_history", lambda _d: store.run_history(rec))
    monkeypatch.setattr(provenance, "read_config", lambda _d: Cfg)
    monkeypatch.setattr(provenance, "load_metrics", lambda _d: pd.DataFrame({"accuracy": [0.5], "n_questions": [3]}))
    out = provenance.provenance_html([d])
    _assert_inert(out)
    assert "&lt;!--" in out and "&lt;style&gt;" in out  # the commits are shown, as text
    _assert_inert(provenance.commands_html([d]))


def test_paired_tables_escape_names_read_from_csv():
    c = pd.DataFrame(
        {
            "method": list(HOSTILE),
            "reference": ["<style>"] * len(HOSTILE),
            "delta_auroc": [0.01] * len(HOSTILE),
            "lo": [-0.01] * len(HOSTILE),
            "hi": [0.02] * len(HOSTILE),
            "delong_p_holm": [0.5] * len(HOSTILE),
            "outcome": ["tie"] * len(HOSTILE),
            "run": ["results/</td><xmp>"] * len(HOSTILE),
        }
    )
    _assert_inert(paired.comparison_summary_html(c))
    _assert_inert(paired.comparison_grid_html(c))
    _assert_inert(paired.comparisons_html(c, "results/</td><xmp>"))
    s = pd.DataFrame(
        {"strategy": ["first", "<style>"], "accuracy": [0.5, 0.6], "n": [10, 10], "lo": [0.4, 0.5], "hi": [0.6, 0.7]}
    ).assign(run="<!--")
    _assert_inert(paired.selection_html(s))


def test_beta_pivot_html_escapes_sources():
    a = pd.DataFrame(
        {
            "source": ["<style>", "<!--"],
            "beta": [0.5, 0.5],
            "auroc": [0.7, float("nan")],
            "n_not_psd": [0, 0],
        }
    )
    _assert_inert(tables.beta_pivot_html(a, "<script>"))


def test_figures_draw_names_with_dollar_signs_literally():
    m = pd.DataFrame(
        {"method": ["$x", "$\\beta$", "Shap"], "auroc": [0.6, 0.7, 0.8], "auroc_lo": [0.5] * 3, "auroc_hi": [0.9] * 3}
    )
    fig = plots.auroc_bars(m, title="$\\frac{")
    fig.canvas.draw()  # unbalanced or unknown mathtext would raise here
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == [plots.plain(x) for x in m["method"]]
    assert re.fullmatch(r"\\\$x", labels[0])
    fig = plots.auroc_grid({"$a": m, "b$": m.assign(auroc=float("nan"))})
    fig.canvas.draw()
