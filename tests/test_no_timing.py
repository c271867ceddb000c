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


Timed = dict[str, set[int] | None]
"""Functions of the module that return a clock-derived value: None (the whole value) or the tainted
positions of the tuple they return."""


def _tainted(node: ast.AST, taint: set[str], timed: Timed) -> bool:
    for n in ast.walk(node):
        if _is_clock(n) or (isinstance(n, ast.Name) and n.id in taint):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and timed.get(n.func.id, 0) is None:
            return True
    return False


def _assigned(target: ast.AST, value: ast.AST, taint: set[str], timed: Timed) -> set[str]:
    """Names that ``target = value`` makes clock-derived (tuple targets position by position)."""
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return set().union(*(_assigned(t, v, taint, timed) for t, v in zip(target.elts, value.elts, strict=True)))
    if (
        isinstance(target, ast.Tuple)
        and isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and isinstance(timed.get(value.func.id, 0), set)
    ):
        positions = timed[value.func.id] or set()
        return {t.id for i, t in enumerate(target.elts) if i in positions and isinstance(t, ast.Name)}
    if _tainted(value, taint, timed):
        return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return set()


def _function_taint(fn: ast.AST, timed: Timed) -> set[str]:
    """Local names that hold a clock-derived value (assignments followed to a fixed point)."""
    taint: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                new = set().union(*(_assigned(t, node.value, taint, timed) for t in targets)) - taint
                if new:
                    taint |= new
                    changed = True
    return taint


def _returns_time(fn: ast.AST, timed: Timed) -> set[int] | None | bool:
    """None if ``fn`` returns a clock-derived value, the tainted positions of a returned tuple, or False."""
    taint = _function_taint(fn, timed)
    for r in ast.walk(fn):
        if not (isinstance(r, ast.Return) and r.value is not None):
            continue
        if isinstance(r.value, ast.Tuple):
            positions = {i for i, e in enumerate(r.value.elts) if _tainted(e, taint, timed)}
            if positions:
                return positions
        elif _tainted(r.value, taint, timed):
            return None
    return False


def _timing_key(node: ast.AST) -> bool:
    """A report's key that names a duration or a speed-up, e.g. ``meta["speedup_exact_vs_naive_n10"]``."""
    return any(
        isinstance(n, ast.Subscript)
        and isinstance(n.slice, ast.Constant)
        and isinstance(n.slice.value, str)
        and TIMING_KEY.search(n.slice.value)
        for n in ast.walk(node)
    )


def timed_asserts(source: str) -> list[int]:
    """Line numbers of asserts in ``source`` that order an elapsed time or a speed-up."""
    tree = ast.parse(source)
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    timed: Timed = {}
    for _ in range(3):  # helpers returning a clock-derived value, and helpers calling those
        for fn in funcs:
            result = _returns_time(fn, timed)
            if result is not False:
                timed[fn.name] = result  # type: ignore[assignment]
    lines = []
    for fn in funcs:
        taint = _function_taint(fn, timed)
        for node in ast.walk(fn):
            if not isinstance(node, ast.Assert):
                continue
            for cmp in (c for c in ast.walk(node.test) if isinstance(c, ast.Compare)):
                if not any(isinstance(op, ORDER) for op in cmp.ops):
                    continue
                sides = [cmp.left, *cmp.comparators]
                if any(_tainted(x, taint, timed) or _timing_key(x) for x in sides):
                    lines.append(node.lineno)
                    break
    return sorted(set(lines))


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
