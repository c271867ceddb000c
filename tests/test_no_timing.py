"""No test asserts on elapsed time: speed targets are checked by benchmarks (benchmarks/), never by tests.

A static scan of every test module (ast). An ``assert`` is flagged when it orders (<, <=, >, >=) a value that
comes from a clock (time.perf_counter, time.time, time.monotonic, time.process_time and their _ns forms),
directly, through local assignments, or through a function of the same module that returns one; or a
report's entry whose key says it is a duration or a speed-up (seconds, elapsed, duration, speedup, ``*_s``). The scan
is heuristic (a clock read in another module and renamed is not seen); its self-test below shows it flags
the patterns this suite used to contain.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"perf_counter", "time", "monotonic", "process_time", "perf_counter_ns", "time_ns", "monotonic_ns"}
TIMING_KEY = re.compile(r"seconds|elapsed|duration|speedup|_s$", re.IGNORECASE)
ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _is_clock(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLOCKS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "time"
    )


def _tainted(node: ast.AST, timed: set[str]) -> bool:
    return any(_is_clock(n) or (isinstance(n, ast.Name) and n.id in timed) for n in ast.walk(node))


def _timing_key(node: ast.AST) -> bool:
    """A report's key that names a duration or a speed-up, e.g. ``meta["speedup_exact_vs_naive_n10"]``."""
    return any(
        isinstance(n, ast.Subscript)
        and isinstance(n.slice, ast.Constant)
        and isinstance(n.slice.value, str)
        and TIMING_KEY.search(n.slice.value)
        for n in ast.walk(node)
    )


def _timed_names(tree: ast.AST) -> set[str]:
    """Names of the module that hold a clock-derived value (every target of an assignment from one) or are
    functions returning one, followed to a fixed point; coarse on purpose (one name space for the module, a
    returned tuple tainted whole): it may flag more than it must, never less."""
    timed: set[str] = set()
    while True:
        found = set(timed)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if _tainted(node.value, timed):
                    found |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(r, ast.Return) and r.value is not None and _tainted(r.value, timed) for r in ast.walk(node)
            ):
                found.add(node.name)
        if found == timed:
            return timed
        timed = found


def timed_asserts(source: str) -> list[int]:
    """Line numbers of asserts in ``source`` that order an elapsed time or a speed-up."""
    tree = ast.parse(source)
    timed = _timed_names(tree)
    lines = set()
    for node in (n for n in ast.walk(tree) if isinstance(n, ast.Assert)):
        for cmp in (c for c in ast.walk(node.test) if isinstance(c, ast.Compare)):
            if any(isinstance(op, ORDER) for op in cmp.ops) and any(
                _tainted(x, timed) or _timing_key(x) for x in (cmp.left, *cmp.comparators)
            ):
                lines.add(node.lineno)
    return sorted(lines)


def test_no_test_asserts_on_elapsed_time() -> None:
    found = {
        str(p.relative_to(TESTS.parent)): lines
        for p in sorted(TESTS.rglob("*.py"))
        if p.name != Path(__file__).name and (lines := timed_asserts(p.read_text()))
    }
    assert found == {}, f"timed assertions (move them to benchmarks/): {found}"


OLD_PATTERNS = """
import time

def execute(name):
    start = time.perf_counter()
    run(name)
    return nb, time.perf_counter() - start

def test_notebook():
    nb, seconds = execute("psd")
    assert seconds < 240

def test_direct():
    t0 = time.monotonic()
    work()
    dt = time.monotonic() - t0
    assert dt <= 1.0

def test_speedup(meta):
    assert meta["speedup_exact_vs_naive_n10"] > 1
"""

CLEAN = """
import time

def test_values(meta, rows):
    nb, _ = run()
    glued = {o for o in nb}
    assert set() <= glued
    assert rows[10]["max_abs_naive_minus_exact"] < 1e-9
    assert tables.seconds_per_question(14.0) > tables.seconds_per_question(7.0)  # a cost model, not a clock
    assert meta["tokens_per_s"] == meta["tokens_per_s"]
    stamp = time.time()
    assert stamp == stamp
"""


def test_the_scan_flags_the_old_patterns_and_nothing_else() -> None:
    assert timed_asserts(OLD_PATTERNS) == [11, 17, 20]
    assert timed_asserts(CLEAN) == []
