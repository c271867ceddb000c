"""Thorough run of the property searches (``make properties``): per property and reading, what was searched,
how many examples ran and what was found.

Each search of notebooks/properties.md runs again with ``PROPERTIES_EXAMPLES`` Hypothesis examples
(default 5000) and *without* derandomisation, so every run draws new examples (the notebook and CI keep their
derandomised budget). A found counterexample is re-checked by the property's own function before it is
reported; "none found" means none in that many examples, not a proof.

    PROPERTIES_EXAMPLES=5000 python scripts/properties_report.py
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np

from shapley.theory import hypothesis_results
from shapley.theory import search as se

# (property, reading, keyword arguments): the searches of notebooks/properties.md, in its order (the list that
# `make theory-results` runs for the page, derandomised)
SEARCHES: list[tuple[str, str, dict[str, Any]]] = list(hypothesis_results.SEARCHES.values())
STEPS = [prop for prop, _ in hypothesis_results.STEPS.values()]  # the Appendix A step of each property (rv reading)


def _found_text(res: se.SearchResult, recheck: bool | None) -> str:
    if not res.found:
        return "none found"
    ex = res.example or {}
    M = next((v for v in ex.values() if isinstance(v, np.ndarray)), None)
    size = f"n = {M.shape[0]}" if M is not None else ""
    where = f", {ex['family']}" if "family" in ex else ""
    checked = "" if recheck is None else ("; re-checked: fails" if recheck else "; RE-CHECK DISAGREES")
    return f"counterexample ({size}{where}){checked}"


def main() -> int:
    text = os.environ.get("PROPERTIES_EXAMPLES", "5000")
    if not (text.isascii() and text.isdigit() and int(text) >= 1):
        print(f"properties_report: PROPERTIES_EXAMPLES={text!r} is not a whole number of at least 1", file=sys.stderr)
        return 2
    examples = int(text)
    print(f"Property searches: {examples} Hypothesis examples each, not derandomized (new examples every run)\n")
    bad = 0
    for prop, reading, kw in SEARCHES:
        t0 = time.perf_counter()
        res = se.search_counterexample(prop, reading, max_examples=examples, derandomize=False, **kw)
        recheck = se.check_example("property", prop, reading, res.example, kw)[1] if res.found else None
        bad += recheck is False
        print(f"Property {prop}, {reading} reading")
        print(f"  searched: {res.strategy}")
        sweep = f" (Hypothesis {res.examples_run - res.families_run} + sweep {res.families_run})"
        print(f"  examples run: {res.examples_run}{sweep if res.families_run else ''}")
        print(f"  found: {_found_text(res, recheck)}   [{time.perf_counter() - t0:.0f} s]\n")
    for prop in STEPS:
        res = se.search_step_counterexample(prop, max_examples=examples, derandomize=False)
        print(f"Appendix A step of Property {prop}, rv reading")
        print(f"  searched: {res.strategy}")
        print(f"  examples run: {res.examples_run}")
        print(f"  found: {_found_text(res, None)}\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
