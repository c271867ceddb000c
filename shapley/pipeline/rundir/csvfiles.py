"""CSV files of a run directory whose text cells (ids, answers, labels) must read back exactly.

Every CSV output is written through :func:`csv_text`, which escapes a text cell (every cell of
:data:`CSV_TEXT_COLUMNS` and every string cell of any other column) that a spreadsheet would read as a formula (one
starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) by prefixing a single quote, as spreadsheet
tools expect; a cell starting with a quote gets one more, so that :func:`read_csv_ids` reads every id back exactly, as
a string (``""``, ``"NaN"`` and ``"null"`` included, never a missing value). Enters: a DataFrame (writing) or a path
(reading); leaves: CSV text or a DataFrame.
"""

from __future__ import annotations

import csv
import os
from typing import Any

import pandas as pd

CSV_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""Leading characters that make a spreadsheet read a cell as a formula (escaped in CSV outputs)."""


def escape_csv_id(text: str) -> str:
    """``text`` as written to a CSV cell: a quote prefixed where it starts like a formula (or with a quote)."""
    return "'" + text if text.startswith((*CSV_FORMULA_PREFIXES, "'")) else text


def unescape_csv_id(text: str) -> str:
    """Inverse of :func:`escape_csv_id`."""
    return text[1:] if text.startswith("'") else text


CSV_TEXT_COLUMNS = ("id", "answer", "model", "entailment", "dataset")
"""Columns of free text (question ids, the model's answers, the run's labels) that CSV outputs escape and
loaders read back as strings, exactly."""


def _escaped_text_columns(df: pd.DataFrame) -> dict[str, list[Any]]:
    """Every text column of ``df`` escaped: :data:`CSV_TEXT_COLUMNS` cell by cell as strings, and every string
    cell of any other column (a missing value or a number in such a column keeps its CSV form)."""
    out: dict[str, list[Any]] = {}
    for c in df.columns:
        if c in CSV_TEXT_COLUMNS:
            out[c] = [escape_csv_id(str(v)) for v in df[c]]
        elif not pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]):
            out[c] = [escape_csv_id(v) if isinstance(v, str) else v for v in df[c]]
    return out


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as CSV text (no index), every text column escaped (see :func:`_escaped_text_columns`)."""
    escaped = _escaped_text_columns(df)
    # pandas quotes a cell with a comma, quote or newline but not one with a lone carriage return, which a reader
    # then takes for a line end: such a file quotes every text cell (others keep their bytes)
    bare_cr = any(isinstance(v, str) and "\r" in v for values in escaped.values() for v in values)
    # with one, every header and text cell is quoted; numbers (QUOTE_NONNUMERIC leaves them bare) read back as numbers
    return df.assign(**escaped).to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC if bare_cr else csv.QUOTE_MINIMAL)


def read_csv_ids(path: str | os.PathLike[str], **kw: Any) -> pd.DataFrame:
    """A CSV written by :func:`csv_text`, its :data:`CSV_TEXT_COLUMNS` read back exactly, as strings (no value
    is taken for missing: ``""``, ``"NaN"``, ``"null"`` stay strings); the string cells of its other text columns
    are unescaped too. ``kw`` goes to ``pandas.read_csv``."""
    df = pd.read_csv(path, **kw)
    text = [c for c in CSV_TEXT_COLUMNS if c in df]
    if text:
        raw = pd.read_csv(path, usecols=text, dtype=str, keep_default_na=False)
        for c in text:
            df[c] = [unescape_csv_id(v) for v in raw[c]]
    for c in df.columns:
        if c not in CSV_TEXT_COLUMNS and (df[c].dtype == object or pd.api.types.is_string_dtype(df[c])):
            # in the column's own dtype: a text column whose cells are all missing stays text, not float64
            df[c] = pd.array([unescape_csv_id(v) if isinstance(v, str) else v for v in df[c]], dtype=df[c].dtype)
    return df
