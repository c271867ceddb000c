"""HTML for readers. A table is a DataFrame whose columns are the headers readers see, described by
:func:`titled` (caption, number formats, columns of built HTML, row classes) and rendered by :func:`show`, the one
renderer, on pandas' Styler: every header, caption and cell is escaped, except a column declared HTML.

Every string that comes from a file (a ``config.json``, a CSV) and lands in HTML outside a table goes through
:func:`esc` (text) or :func:`code` (an inline ``<code>`` span); a column declared HTML only ever holds HTML built
here from escaped parts.
"""

from __future__ import annotations

import html
import math
import numbers
import os
import re
from collections.abc import Callable, Mapping, Sequence
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


NA = "–"
"""How :func:`show` writes a missing cell (None or NaN)."""


def caption_html(text: str) -> str:
    """A caption's ``text`` as HTML: escaped, then each `` `x` `` an inline ``<code>`` span and each ``*x*``
    emphasis (the only markup a caption holds).

    >>> caption_html("From `metrics.csv` <b>; *n.s.*: no difference")
    'From <code>metrics.csv</code> &lt;b&gt;; <em>n.s.</em>: no difference'
    """
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text, quote=False))
    return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", text)


def titled(
    frame: pd.DataFrame,
    caption: str,
    *,
    formats: Mapping[str, str] | None = None,
    html: Sequence[str] = (),
    rows: Sequence[str] | None = None,
) -> pd.DataFrame:
    """``frame`` (its columns: the headers readers see) with what :func:`show` needs, kept in ``frame.attrs``.

    ``caption``: text (:func:`caption_html`); ``formats``: header -> format spec of that column's numbers (e.g.
    ``".3f"``, ``".1e"``; a text cell there is shown as it is, right-aligned); ``html``: columns that hold HTML
    built from escaped parts (every other cell is escaped); ``rows``: a CSS class per row (``group``: a heading
    row, its text in the first cell; ``reported``, ``measured``, ``flagged``). A missing cell reads :data:`NA`.
    """
    frame.attrs.update(caption=caption, formats=dict(formats or {}), html=list(html), rows=rows)
    return frame


def show(frame: pd.DataFrame) -> Html:
    """The one way a table reaches a page: ``frame`` as :func:`titled` describes it, rendered by pandas' Styler
    with class ``companion``, its index hidden; every header, caption and cell escaped, except the columns
    declared HTML; numbers in their column's format."""
    spec = frame.attrs
    formats, built = spec.get("formats", {}), spec.get("html", [])
    styler = frame.style.hide(axis="index").format_index(escape="html", axis=1)
    styler.format(escape="html", na_rep=NA)
    for column, fmt in formats.items():
        escape = None if column in built else "html"
        styler.format(_number(fmt), subset=[column], escape=escape, na_rep=NA)
    styler.format(subset=[c for c in built if c not in formats], escape=None, na_rep=NA)
    row_classes = spec.get("rows") or [""] * len(frame)
    classes = [[f"{'num' if c in formats else ''} {r}" for c in frame.columns] for r in row_classes]
    styler.set_td_classes(pd.DataFrame(classes, index=frame.index, columns=frame.columns))
    styler.set_table_styles({c: [{"selector": "th", "props": "text-align: right"}] for c in formats})
    styler.set_caption(caption_html(spec.get("caption", ""))).set_table_attributes('class="companion"')
    return Html(styler.to_html())


def _number(fmt: str) -> Callable[[Any], Any]:
    """A Styler formatter: a number in ``fmt``, anything else (text already written) as it is."""
    return lambda v: format(v, fmt) if isinstance(v, numbers.Real) and not isinstance(v, bool) else v


def with_interval(value: float, lo: float, hi: float, *, decimals: int) -> str:
    """HTML cell text: ``value`` over a small "[lo, hi]" (2 decimals), the interval left out when ``lo`` is NaN."""
    ci = "" if math.isnan(lo) else f'<br><span class="ci">[{lo:.2f}, {hi:.2f}]</span>'
    return f"{value:.{decimals}f}{ci}"


def record_status_html(
    spec: PageRecord, record: Mapping[str, Any], results: str | os.PathLike[str], how: str = ""
) -> Html:
    """A record's status as a sentence for readers: the file and the command that wrote it (``how``: HTML that
    says more of how, escaped by the caller), and whether it is fresh (:meth:`PageRecord.stale_reasons` under the
    results folder ``results``) or stale, with why."""
    stale = spec.stale_reasons(record, results)
    made = (
        f"{code(spec.command)} computed these numbers{how} in {record['seconds']:.0f} s, as their record "
        f"{code('results/' + spec.path)} says"
    )
    status = (
        f"<strong>it is stale</strong> ({esc('; '.join(stale))}): <code>make results</code> recomputes it."
        if stale
        else "it is fresh: this build has the settings, code and inputs it was computed from."
    )
    return Html(f'<p class="record-status">{made}; {status}</p>')


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
