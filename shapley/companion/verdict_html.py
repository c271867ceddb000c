"""The verdict table as the book shows it: the claims page's grouped table (:func:`verdicts_html`), the group summary
(:func:`group_summary_html`) and the typography of their text, from :func:`shapley.companion.verdicts.verdict_table`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from shapley.companion.claim_model import BADGES, CONTRADICTED, GROUP_NOTES, GROUPS, LABELS
from shapley.companion.htmltable import esc, word_list
from shapley.companion.verdicts import verdict_table

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


_SYMBOLS = {
    "&lt;=": "\u2264",
    "&gt;=": "\u2265",
    "beta": "\u03b2",
    "lambda": "\u03bb",
    "phi": "\u03c6",
    "rho": "\u03c1",
}
"""ASCII maths (escaped) -> its symbol."""
_SYMBOL = re.compile(r"&lt;=|&gt;=|\b(?:beta|lambda|phi|rho)\b")
_MINUS_INF = re.compile(r"(?<![\w-])-inf\b|\(-inf\)")


def typeset(text: str) -> str:
    """Escape ``text`` for HTML and write its ASCII maths as typography, the way the book's maths reads:
    ``beta <= 1/(n+1)`` becomes ``β ≤ 1/(n+1)``; ``-inf`` becomes a minus sign and infinity that never wrap
    apart (a ``white-space: nowrap`` span). Identifiers such as ``beta_star`` are left alone.

    Examples:
        >>> typeset("beta <= 1/(n+1), |lambda| <= n, beta_star")
        'β ≤ 1/(n+1), |λ| ≤ n, beta_star'
        >>> typeset("h = -inf")
        'h = <span style="white-space:nowrap">−∞</span>'
    """
    out = _MINUS_INF.sub(
        lambda m: m.group(0).replace("-inf", '<span style="white-space:nowrap">\u2212\u221e</span>'), esc(text)
    )
    return _SYMBOL.sub(lambda m: _SYMBOLS[m.group(0)], out)


def _badge(verdict: str) -> str:
    return f'<span class="{BADGES[verdict]}">{esc(LABELS[verdict])}</span>'


def evidence_href(target: str, base: str) -> str:
    """The link to an evidence page (``page`` or ``page#anchor``, toc paths) from the page in folder ``base``.

    >>> evidence_href("notebooks/psd#two-guaranteed-bounds", "book")
    '../notebooks/psd.html#two-guaranteed-bounds'
    """
    page, _, anchor = target.partition("#")
    return f"{posixpath.relpath(page, base)}.html" + (f"#{anchor}" if anchor else "")


def _evidence_name(target: str) -> str:
    page, _, anchor = target.partition("#")
    name = page.split("/")[-1]
    return f"{name}: {anchor.replace('-', ' ')}" if anchor else name


def _why_cell(r: pd.Series, base: str) -> str:
    parts = [typeset(r["reason"])]
    if r["proved"]:
        parts.append(f"<br><strong>Proved:</strong> {typeset(r['proved'])}")
    links = ", ".join(f'<a href="{evidence_href(p, base)}">{esc(_evidence_name(p))}</a>' for p in r["evidence"])
    parts.append(f"<br><small>Evidence: {links}</small>")
    details = [typeset(r["note"])]
    if r["readings"]:
        items = "".join(
            f"<li><em>{typeset(name)}</em>: {_badge(v)} {typeset(note)}</li>" for name, v, note in r["readings"]
        )
        details.append(f'<ul class="readings">{items}</ul>')
    if r["command"]:
        details.append(f"<br>Command: <code>{esc(r['command'])}</code>")
    if r["functions"]:
        names = (esc(fn).replace(".", ".<wbr>") for fn in r["functions"])
        details.append("<br><small>Computed by " + ", ".join(f"<code>{n}</code>" for n in names) + "</small>")
    parts.append(f"<details><summary>Details</summary>{''.join(details)}</details>")
    return "".join(parts)


def group_anchor(group: str) -> str:
    """The HTML id of a group's header row on the claims page.

    >>> group_anchor("the paper's internal consistency")
    'claims-the-papers-internal-consistency'
    """
    return "claims-" + re.sub(r"[^a-z]+", "-", group.lower().replace("'", "")).strip("-")


def tally(verdicts: Iterable[str]) -> str:
    """How many of ``verdicts`` each verdict is, in the vocabulary's order, as prose ("3 reproduced and 2
    contradicted"); "consistent" as :data:`~shapley.companion.claim_model.LABELS` shows it.

    >>> tally(["contradicted", "reproduced", "consistent", "reproduced"])
    '2 reproduced, 1 consistent within the paper and 1 contradicted'
    """
    counts = {v: list(verdicts).count(v) for v in BADGES}
    return word_list([f"{n} {LABELS[v]}" for v, n in counts.items() if n])


def _group_row(group: str, rows: pd.DataFrame) -> str:
    tally_text = esc(tally(rows["verdict"]))
    title = esc(group[0].upper() + group[1:])
    return (
        f'<tr class="claim-group" id="{group_anchor(group)}">'
        f'<th colspan="3">{title} <small>({len(rows)}: {tally_text})</small></th></tr>'
    )


def verdicts_html() -> str:
    """The verdict table as HTML for the book, grouped (:data:`~shapley.companion.claim_model.GROUPS`), one row per
    claim with the HTML id ``claim-<id>``: the claim (place, quote, our words, id), the verdict badge, and why (the
    one-line reason and the evidence links shown; the note, readings, command and functions collapsed), with links
    relative to the claims page's folder."""
    table = verdict_table()
    base = "book"
    body = []
    for group in GROUPS:
        rows = table[table["group"] == group]
        if rows.empty:
            continue
        body.append(_group_row(group, rows))
        for _, r in rows.iterrows():
            quote = f'<q class="paper-quote">{esc(r["quote"])}</q><br>' if r["quote"] else ""
            cell = (
                f"<strong>{esc(r['where'])}</strong><br>{quote}{typeset(r['claim'])}"
                f'<br><small><a href="#{r["anchor"]}"><code>{esc(r["id"])}</code></a></small>'
            )
            body.append(
                f'<tr id="{r["anchor"]}"><td>{cell}</td><td>{_badge(r["verdict"])}</td>'
                f"<td>{_why_cell(r, base)}</td></tr>"
            )
    head = "<thead><tr><th>Claim: where, the paper's words, ours</th><th>Verdict</th><th>Why</th></tr></thead>"
    widths = '<colgroup><col style="width:42%"><col style="width:15%"><col style="width:43%"></colgroup>'
    return f'<table class="verdicts">{widths}{head}<tbody>{"".join(body)}</tbody></table>'


def group_summary_html(table: pd.DataFrame) -> str:
    """The verdicts group by group, for the top of the claims page: each group (linked to its rows), what it holds,
    its tally, and its contradicted claims, each linked to its row."""
    items = []
    for group in GROUPS:
        rows = table[table["group"] == group]
        bad = rows[rows["verdict"] == CONTRADICTED]
        links = ", ".join(
            f'<a href="#{a}"><code>{esc(i)}</code></a>' for i, a in zip(bad["id"], bad["anchor"], strict=True)
        )
        title = esc(group[0].upper() + group[1:])
        items.append(
            f'<li><a href="#{group_anchor(group)}"><strong>{title}</strong></a>, '
            f"{esc(GROUP_NOTES[group])} ({len(rows)}): {esc(tally(rows['verdict']))}."
            + (f" Contradicted: {links}." if links else "")
            + "</li>"
        )
    return f'<ul class="claim-groups">{"".join(items)}</ul>'
