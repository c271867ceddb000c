"""HTML tables for readers: :func:`html_table` writes human column headers, numbers right-aligned with a fixed
number of decimals and a caption; every cell that is not declared raw HTML is escaped.

Every string that comes from a file (a ``config.json``, a CSV) and lands in HTML goes through :func:`esc`
(text) or :func:`code` (an inline ``<code>`` span); raw columns (``Col(raw=True)``) only ever hold HTML
built here from escaped parts.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from shapley.results.records import PageRecord


def esc(value: Any) -> str:
    """``value`` as text escaped for HTML element content and quoted attribute values (``<``, ``>``, ``&``, quotes).

    >>> esc("</td><!--")
    '&lt;/td&gt;&lt;!--'
    """
    return html.escape("" if value is None else str(value), quote=True)


def code(value: Any) -> str:
    """``value`` (a path, a command, a name read from a file) as an inline ``<code>`` span, escaped."""
    return f"<code>{esc(value)}</code>"


def tex_html(text: str) -> str:
    r"""``text`` with maths in TeX between dollar signs as HTML: the prose escaped, each ``$...$`` an inline maths
    span that the book's MathJax typesets (Sphinx's own markup for inline maths).

    >>> print(tex_html("sum $p_i < 1$ & more"))
    sum <span class="math notranslate nohighlight">\(p_i &lt; 1\)</span> &amp; more
    """
    parts = text.split("$")
    if len(parts) % 2 == 0:
        raise ValueError(f"unbalanced dollar signs in {text!r}")
    return "".join(
        esc(part) if k % 2 == 0 else f'<span class="math notranslate nohighlight">\\({esc(part)}\\)</span>'
        for k, part in enumerate(parts)
    )


class Html(str):
    """A string of HTML that Jupyter displays as HTML (``_repr_html_``)."""

    def _repr_html_(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Col:
    """One column of :func:`html_table`: the frame's key, its header, and how cells are written.

    ``decimals``: a number column (right-aligned, fixed decimals; NaN is written ``na``); ``fmt``: a format
    spec instead (e.g. ``".1e"``); ``raw``: the cells are already HTML (otherwise they are escaped).
    """

    key: str
    header: str
    decimals: int | None = None
    na: str = "–"
    raw: bool = False
    fmt: str | None = None

    @property
    def numeric(self) -> bool:
        return self.decimals is not None or self.fmt is not None


def _cell(value: Any, col: Col) -> tuple[str, str]:
    """(text, css class) of one cell."""
    if col.numeric:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return html.escape(col.na), "num"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return format(value, col.fmt or f".{col.decimals}f"), "num"
    text = "" if value is None else str(value)
    return (text if col.raw else html.escape(text)), ("num" if col.numeric else "")


def html_table(
    rows: pd.DataFrame | Sequence[Mapping[str, Any]],
    cols: Sequence[Col],
    *,
    caption: str,
    row_classes: Sequence[str] | None = None,
    css: str = "",
) -> Html:
    """A table for readers: ``cols`` in order, ``caption`` above (HTML allowed), optional class per row
    (class ``group``: a heading row, its first column's cell across the table)."""
    records: list[Mapping[str, Any]] = (
        [{str(k): v for k, v in r.items()} for r in rows.to_dict("records")]
        if isinstance(rows, pd.DataFrame)
        else list(rows)
    )
    head = "".join(f'<th class="{"num" if c.numeric else ""}">{esc(c.header)}</th>' for c in cols)
    classes = [""] * len(records) if row_classes is None else row_classes
    body = []
    for r, row_class in zip(records, classes, strict=True):
        if row_class == "group":  # a heading row across the whole table
            text, _ = _cell(r.get(cols[0].key), cols[0])
            body.append(f'<tr class="group"><td colspan="{len(cols)}">{text}</td></tr>')
            continue
        cells = "".join(f'<td class="{cls}">{text}</td>' for text, cls in (_cell(r.get(c.key), c) for c in cols))
        rc = f' class="{esc(row_class)}"' if row_class else ""
        body.append(f"<tr{rc}>{cells}</tr>")
    return Html(
        f'<table class="companion {esc(css)}"><caption>{caption}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def with_interval(value: float, lo: float, hi: float, *, decimals: int) -> str:
    """HTML cell text: ``value`` over a small "[lo, hi]" (2 decimals), the interval left out when ``lo`` is NaN."""
    ci = "" if math.isnan(lo) else f'<br><span class="ci">[{lo:.2f}, {hi:.2f}]</span>'
    return f"{value:.{decimals}f}{ci}"


def bullets_html(items: Sequence[str]) -> Html:
    """A bulleted list for readers; each item is HTML whose strings from files were escaped (:func:`esc`).

    Used where a page states findings from a cell: an HTML list, unlike Markdown output, renders the same in
    every output area and carries no TeX (write β, not ``$\\beta$``).
    """
    return Html('<ul class="findings">' + "".join(f"<li>{item}</li>" for item in items) + "</ul>")


def record_status_html(
    spec: PageRecord, record: Mapping[str, Any], results: str | os.PathLike[str], how: str = ""
) -> Html:
    """A record's status as a sentence for readers: the file and the command that wrote it (``how``: HTML that
    says more of how, escaped by the caller), and whether it is fresh (:meth:`PageRecord.stale_reasons` under the
    results folder ``results``) or stale, with why."""
    stale = spec.stale_reasons(record, results)
    made = (
        f"The numbers here are read from {code('results/' + spec.path)}, which {code(spec.command)} computed"
        f"{how} in {record['seconds']:.0f} s"
    )
    if not stale:
        return Html(
            f'<p class="record-status">{made}; it is fresh: this build has the settings, code and inputs it '
            "was computed from.</p>"
        )
    return Html(
        f'<p class="record-status">{made}; <strong>it is stale</strong> ({esc("; ".join(stale))}): '
        "<code>make results</code> recomputes it.</p>"
    )


def count_range(counts: Sequence[int]) -> str:
    """``"a to b"`` for the smallest and largest of ``counts``, one number when they are equal, ``"n/a"`` when empty.

    >>> count_range([100, 500, 200]), count_range([100, 100]), count_range([])
    ('100 to 500', '100', 'n/a')
    """
    if not len(counts):
        return "n/a"
    lo, hi = min(counts), max(counts)
    return f"{lo}" if lo == hi else f"{lo} to {hi}"


def word_list(items: Sequence[str]) -> str:
    """``items`` as prose: "a", "a and b", "a, b and c"; "" when empty.

    >>> word_list(["5", "10", "20"]), word_list(["x"]), word_list([])
    ('5, 10 and 20', 'x', '')
    """
    return " and ".join([", ".join(items[:-1]), items[-1]]) if len(items) > 1 else "".join(items)


def short_labels(names: Sequence[str]) -> dict[str, str]:
    """Each distinct path-like name -> its shortest tail of ``/``-separated parts that no other name shares.

    >>> short_labels(["runs/a/x", "runs/b/x", "runs/a/y"])
    {'runs/a/x': 'a/x', 'runs/b/x': 'b/x', 'runs/a/y': 'y'}
    """
    distinct = list(dict.fromkeys(str(n) for n in names))
    out = {}
    for name in distinct:
        parts = name.split("/")
        for k in range(1, len(parts) + 1):
            tail = "/".join(parts[-k:])
            if not any(o != name and (o == tail or o.endswith("/" + tail)) for o in distinct):
                break
        out[name] = tail
    return out
