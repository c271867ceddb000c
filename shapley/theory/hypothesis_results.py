"""The properties page's Hypothesis searches and the chain-rule check of Proposition 3.5 (together about two minutes
on one core), committed as a page record (:data:`RECORD`, ``results/theory/properties_searches.json``, written by
``python -m shapley.theory.hypothesis_results``; its settings include the Hypothesis version, which the
derandomised examples depend on).

* ``searches``: :func:`shapley.theory.search.search_counterexample` for each entry of :data:`SEARCHES`, and
  :func:`shapley.theory.search.search_step_counterexample` for each entry of :data:`STEPS` (the Appendix A steps),
  with its outcome and shrunk example;
* ``chain_rule``: :func:`shapley.theory.propositions.chain_rule_check`, the witness of
  :func:`shapley.theory.propositions.prop35_readings`.

The page reads the searches back through :func:`search_results`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from shapley.results import records
from shapley.theory import propositions
from shapley.theory import search as se

SEARCHES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "p1_rv": ("1", "rv", {"n_range": (3, 5)}),
    "p1_rv99": ("1", "rv", {"n_range": (3, 5), "rho": 0.99}),
    "p1_s": ("1", "sentence", {"n_range": (3, 6)}),
    "p1_s_strict": ("1", "sentence", {"n_range": (3, 6), "strict_only": True}),
    "p1_safe": ("1", "sentence", {"n_range": (3, 6), "beta": "gershgorin"}),
    "p2_rv": ("2", "rv", {"n_range": (3, 5)}),
    "p2_sing": ("2", "rv", {"n_range": (3, 5), "singular": True}),
    "p2_s": ("2", "sentence", {"n_range": (3, 7)}),
    "p2_safe": ("2", "sentence", {"n_range": (3, 7), "beta": "gershgorin"}),
    "p3_rv": ("3", "rv", {"n_range": (3, 4)}),
    "p3_s": ("3", "sentence", {"n_range": (3, 6)}),
}
"""name -> (property, reading, keyword arguments of ``search_counterexample``): the page's searches, in its order
(the names are the page's variables; scripts/properties_report.py reruns the same list)."""

STEPS: dict[str, tuple[str, dict[str, Any]]] = {
    "st1": ("1", {"n_range": (3, 4)}),
    "st2": ("2", {"n_range": (3, 4)}),
    "st3": ("3", {"n_range": (3, 4)}),
}
"""name -> (property, keyword arguments of ``search_step_counterexample``): the Appendix A step searches."""


STORED = tuple(f.name for f in fields(se.SearchResult) if f.name not in ("example", "check"))
"""The fields of a :class:`~shapley.theory.search.SearchResult` that the record stores as they are (beside its
example; its check is recomputed from the example)."""


def _entry(kind: str, s: Mapping[str, Any], max_examples: int) -> dict[str, Any]:
    """One search of the settings (``kind``: "property" or "step"), run now, as the record stores it."""
    if kind == "property":
        search = partial(se.search_counterexample, s["prop"], s["reading"])
    else:
        search = partial(se.search_step_counterexample, s["prop"])
    res = search(**s["kwargs"], max_examples=max_examples)
    stored = {k: getattr(res, k) for k in STORED}
    return {"kind": kind, "kwargs": s["kwargs"], **stored, "example": res.example}


def compute(settings: Mapping[str, Any], results: Path) -> dict[str, Any]:
    """The record's numbers: every search of ``settings`` and the chain-rule check (``results`` is not read)."""
    searches = {name: _entry("property", s, settings["max_examples"]) for name, s in settings["searches"].items()}
    searches |= {name: _entry("step", s, settings["max_examples"]) for name, s in settings["steps"].items()}
    chain = propositions.chain_rule_check(**settings["chain_rule"])
    return {"searches": searches, "chain_rule": chain}


def search_results(record: Mapping[str, Any]) -> dict[str, se.SearchResult]:
    """Every stored search as a :class:`~shapley.theory.search.SearchResult` (name -> result), its ``check``
    recomputed from the stored example by the property's own function (milliseconds). Raises ValueError if a stored
    counterexample no longer fails its check."""
    out = {}
    for name, e in record["searches"].items():
        example, check, fails = e["example"], None, False
        if example is not None:
            example = {k: np.asarray(v, dtype=float) if isinstance(v, list) else v for k, v in example.items()}
            check, fails = se.check_example(e["kind"], e["prop"], e["reading"], example, e["kwargs"])
        if fails != e["found"]:
            raise ValueError(
                f"{RECORD.path}: search {name!r} recorded found={e['found']}, but its example "
                f"{'fails' if fails else 'does not fail'} the check now: run `make theory-results` ({RECORD.command})"
            )
        stored = {k: e[k] for k in STORED}
        out[name] = se.SearchResult(**stored, example=example, check=check)
    return out


RECORD = records.PageRecord(
    path="theory/properties_searches.json",
    module=__spec__.name,
    compute=compute,
    check=records.has_keys(searches=dict, chain_rule=dict),
    summary=lambda record: (
        "counterexamples found by " + (", ".join(k for k, e in record["searches"].items() if e["found"]) or "no search")
    ),
    settings={
        "hypothesis_version": version("hypothesis"),  # the derandomised examples depend on it
        "max_examples": se.SEARCH_MAX_EXAMPLES,
        "searches": {k: {"prop": p, "reading": r, "kwargs": kw} for k, (p, r, kw) in SEARCHES.items()},
        "steps": {k: {"prop": p, "kwargs": kw} for k, (p, kw) in STEPS.items()},
        "chain_rule": {"n_matrices": 200, "seed": 0},
    },
)

if __name__ == "__main__":
    raise SystemExit(RECORD.main())
