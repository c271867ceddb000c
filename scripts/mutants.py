"""Mutation run: do the fast tests catch wrong numbers? (``make mutants``; issue 27)

Each mutant replaces one code snippet of the package by a wrong variant. The snippet is found by searching every
``shapley/**/*.py`` file for it (it must occur exactly once in the whole package: ``tests/test_mutants.py``
checks the list), so the list survives files being moved or split. For each mutant, a temporary copy of the
repository's tracked files gets the change, and a chosen selection of fast tests runs on it
(``pytest -x -q -p no:cacheprovider -m "not slow"``, one mutant at a time). A failing selection kills the
mutant; a passing one lets it survive. Mutants known to change nothing observable are marked equivalent, with
the reason, and left out of the score. The working tree is never modified.

Usage::

    python scripts/mutants.py                 # every mutant; a table, then the score per layer
    python scripts/mutants.py --only ID ...   # some mutants
    python scripts/mutants.py --layer core    # one layer
    python scripts/mutants.py --baseline      # first check that every selection passes unmutated
    python scripts/mutants.py --list          # the mutants, without running anything

Exit status 0 when every non-equivalent mutant is killed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "shapley"
TIMEOUT_S = 600


@dataclass(frozen=True)
class Mutant:
    """One wrong change: ``before`` (unique in the package) becomes ``after``; ``tests`` (pytest arguments: paths
    and an optional ``-k`` expression) must then fail. ``equivalent``: why nothing observable changes, if so."""

    id: str
    layer: str
    before: str
    after: str
    tests: tuple[str, ...]
    equivalent: str = ""


T_CORE = "tests/core/test_core.py"
T_METRICS = "tests/core/test_metrics.py"
T_BASE = "tests/core/test_baselines.py"
T_VERD = "tests/companion/test_verdicts.py"

MUTANTS: tuple[Mutant, ...] = (
    # ---------------------------------------------------------------- 13 of the 14 of issue 27 (+ the n > 22 log-det)
    Mutant(
        "config-threshold-default",
        "pipeline",
        '    threshold: float = setting(0.3, "an answer is correct if its score exceeds this", low=0.0, high=1.0)\n',
        '    threshold: float = setting(0.35, "an answer is correct if its score exceeds this", low=0.0, high=1.0)\n',
        ("tests/companion/test_reported.py", "-k", "paper_settings"),
    ),
    Mutant(
        "experiment-correct-at-threshold",
        "pipeline",
        '"correct": correctness.exceeds(value, scoring.threshold),',
        '"correct": bool(value >= scoring.threshold),',
        ("tests/pipeline/test_correctness.py", "-k", "strict_rule_at_the_threshold"),
    ),
    Mutant(
        "correctness-exceeds-equality",
        "pipeline",
        "    return bool(value > threshold)\n",
        "    return bool(value >= threshold)\n",
        ("tests/pipeline/test_correctness.py",),
    ),
    Mutant(
        "verdict-prop-3.6",
        "companion",
        'verdict=lambda facts: _holds(facts["prop36_p3_fails"] == 0, REPRODUCED),',
        "verdict=lambda facts: REPRODUCED,",
        (T_VERD, "-k", "follows_its_evidence and prop-3.6"),
    ),
    Mutant(
        "verdict-holds-always",
        "companion",
        "    return verdict if ok else CONTRADICTED\n",
        "    return verdict\n",
        (T_VERD, "-k", "quick_verdicts"),
    ),
    Mutant(
        "verdict-auroc-random-worst",
        "companion",
        'verdict=lambda facts: DEPENDS if facts["auroc_reversed"] < 0.5 else REPRODUCED,',
        "verdict=lambda facts: REPRODUCED,",
        (T_VERD, "-k", "follows_its_evidence and auroc-random-worst"),
    ),
    Mutant(
        "verdict-beta-0.5-psd",
        "companion",
        'verdict=lambda facts: CONTRADICTED if facts.get("psd05_not") else NOT_HERE,',
        "verdict=lambda facts: NOT_HERE,",
        (T_VERD, "-k", "follows_its_evidence and beta-0.5-psd"),
    ),
    Mutant(
        "verdict-facts-relative-gap-reversed",
        "companion",
        '"t4_nq_gap_rel": relative_gap(nq["Shap"], nq["NE"]),',
        '"t4_nq_gap_rel": relative_gap(nq["NE"], nq["Shap"]),',
        (T_VERD, "-k", "paper_way_round"),
    ),
    Mutant(
        "verdict-facts-relative-gap-swapped-negated",
        "companion",
        '"t4_nq_gap_rel": relative_gap(nq["Shap"], nq["NE"]),',
        '"t4_nq_gap_rel": -relative_gap(nq["NE"], nq["Shap"]),',
        (T_VERD, "-k", "paper_way_round"),
    ),
    Mutant(
        "relative-gap-formula",
        "companion",
        "    return 100.0 * (value / base - 1.0)\n",
        "    return 100.0 * (1.0 - base / value)\n",
        (T_VERD, "-k", "paper_way_round"),
    ),
    Mutant(
        "quantile-mcse-uncentred",
        "core",
        "return math.sqrt(max(c2 - c1 * c1, 0.0))",
        "return math.sqrt(max(c2, 0.0))",
        (T_METRICS, "-k", "maritz"),
    ),
    Mutant(
        "clusters-non-contradiction-one-direction",
        "core",
        "same = (Cm < threshold) & (Cm < threshold).T",
        "same = Cm < threshold",
        (T_BASE, "-k", "clusters"),
    ),
    Mutant(
        "clusters-non-contradiction-other-direction",
        "core",
        "same = (Cm < threshold) & (Cm < threshold).T",
        "same = (Cm < threshold).T",
        (T_BASE, "-k", "clusters"),
    ),
    Mutant(
        "clusters-bidirectional-one-direction",
        "core",
        "same = (E > threshold) & (E > threshold).T",
        "same = (E > threshold).T",
        (T_BASE, "-k", "clusters"),
    ),
    Mutant(
        "comparisons-neginf-ties-lowest",
        "pipeline",
        "u[np.isneginf(u)] = lo - max(1.0, abs(lo) * 1e-6)",
        "u[np.isneginf(u)] = lo",
        ("tests/pipeline/test_comparisons.py", "-k", "strictly_beyond"),
    ),
    Mutant(
        "comparisons-neginf-minus-one",
        "pipeline",
        "u[np.isneginf(u)] = lo - max(1.0, abs(lo) * 1e-6)",
        "u[np.isneginf(u)] = lo - 1.0",
        ("tests/pipeline/test_comparisons.py", "-k", "strictly_beyond"),
    ),
    Mutant(
        "comparisons-posinf-ties-highest",
        "pipeline",
        "u[np.isposinf(u)] = hi + max(1.0, abs(hi) * 1e-6)",
        "u[np.isposinf(u)] = hi",
        ("tests/pipeline/test_comparisons.py", "-k", "strictly_beyond"),
    ),
    Mutant(
        "entropy-large-n-halved-logdet",
        "core",
        "return float(n * HALF_LOG_2PIE + 0.5 * _chain_logdet(A, 0.0))",
        "return float(n * HALF_LOG_2PIE + 0.25 * _chain_logdet(A, 0.0))",
        (T_CORE, "-k", "beyond_the_exact"),
    ),
    # ---------------------------------------------------------------- core: estimates and their errors
    Mutant(
        "quantile-mcse-order-statistic-rounded-to-even",
        "core",
        "mm = min(max(int(math.floor(q * n + 0.5)), 2), n - 1)",
        "mm = min(max(int(round(q * n)), 2), n - 1)",
        (T_METRICS, "-k", "maritz or half_up"),
    ),
    Mutant(
        "large-n-cholesky-logdet",
        "core",
        "return float(np.sum(np.log(np.diagonal(L))) * 2.0 + A.shape[0] * log_scale)",
        "return float(np.sum(np.log(np.diagonal(L))) + A.shape[0] * log_scale)",
        (T_CORE, "-k", "beyond_the_exact"),
    ),
    Mutant(
        "bootstrap-upper-quantile",
        "core",
        "lo, hi = np.quantile(s, [alpha / 2.0, 1.0 - alpha / 2.0])",
        "lo, hi = np.quantile(s, [alpha / 2.0, 1.0 - alpha])",
        (T_METRICS, "-k", "bootstrap"),
    ),
    Mutant(
        "paired-interval-resamples-unpaired",
        "core",
        "- _resampled(metric, ub, c, rows), c.size, b)",
        "- _resampled(metric, ub, c, rows[::-1]), c.size, b)",
        (T_METRICS, "-k", "paired_interval"),
    ),
    Mutant(
        "auroc-rank-offset",
        "core",
        "u_stat = ranks[~c].sum() - n_wrong * (n_wrong + 1) / 2.0",
        "u_stat = ranks[~c].sum() - n_wrong * (n_wrong - 1) / 2.0",
        (T_METRICS, "-k", "auroc"),
    ),
    Mutant(
        "auroc-rows-ties-full",
        "core",
        "u_stat = (wrong * (below + 0.5 * right)).sum(axis=1)",
        "u_stat = (wrong * (below + right)).sum(axis=1)",
        (T_METRICS, "-k", "bootstrap"),
    ),
    Mutant(
        "prr-oracle-reversed",
        "core",
        "oracle = float(np.mean(_arc((~c).astype(np.float64), c)))",
        "oracle = float(np.mean(_arc(c.astype(np.float64), c)))",
        (T_METRICS, "-k", "auarc"),
    ),
    Mutant(
        "holm-factor",
        "core",
        "out[order] = np.minimum(1.0, np.maximum.accumulate((k - np.arange(k)) * p[order]))",
        "out[order] = np.minimum(1.0, np.maximum.accumulate((k - np.arange(k) - 1) * p[order]))",
        (T_METRICS, "-k", "holm"),
    ),
    Mutant(
        "holm-not-monotone",
        "core",
        "out[order] = np.minimum(1.0, np.maximum.accumulate((k - np.arange(k)) * p[order]))",
        "out[order] = np.minimum(1.0, (k - np.arange(k)) * p[order])",
        (T_METRICS, "-k", "holm"),
    ),
    Mutant(
        "delong-covariance-sign",
        "core",
        "var = float(S[0, 0] + S[1, 1] - 2.0 * S[0, 1])",
        "var = float(S[0, 0] + S[1, 1] + 2.0 * S[0, 1])",
        (T_METRICS, "-k", "delong"),
    ),
    Mutant(
        "kernel-no-half",
        "core",
        "R = b * np.exp(-((1.0 - A) ** 2) / 2.0)",
        "R = b * np.exp(-((1.0 - A) ** 2))",
        (T_CORE,),
    ),
    Mutant(
        "correlation-one-sided",
        "core",
        '    A = validate.probability_matrix(P, "P")\n    return (A + A.T) / 2.0\n',
        '    A = validate.probability_matrix(P, "P")\n    return A.copy()\n',
        (T_CORE,),
    ),
    Mutant(
        "shapley-weights",
        "core",
        "weights = np.array([1.0 / (n * math.comb(n - 1, s)) for s in range(n)])",
        "weights = np.array([1.0 / (n * math.comb(n, s)) for s in range(n)])",
        (T_CORE,),
    ),
    Mutant(
        "shrink-factor",
        "core",
        "    t = (1.0 - e) / (1.0 - lam)\n",
        "    t = (1.0 - e) / (1.0 + lam)\n",
        (T_CORE, "tests/core/test_edges.py"),
    ),
    Mutant(
        "clip-no-unit-diagonal",
        "core",
        "    A = A / np.outer(d, d)\n",
        "    A = A / np.outer(d, np.ones_like(d))\n",
        (T_CORE, "-k", "repairs_beyond"),
    ),
    Mutant(
        "large-n-repair-shrink-to-eps-zero",
        "core",
        "    t = (1.0 - e) / (1.0 - lam)\n",
        "    t = 1.0 / (1.0 - lam)\n",
        (T_CORE, "-k", "repairs_beyond"),
    ),
    Mutant(
        "gershgorin-bound",
        "core",
        "return 1.0 if n <= 2 else 1.0 / (n - 1)",
        "return 1.0 if n <= 2 else 1.0 / n",
        (T_CORE, "-k", "bounds"),
    ),
    Mutant(
        "paper-beta-bound",
        "core",
        '    n = validate.positive_int(n, "n")\n    return 1.0 / (n + 1)\n',
        '    n = validate.positive_int(n, "n")\n    return 1.0 / n\n',
        (T_CORE, "-k", "bounds"),
    ),
    Mutant(
        "kernel-default-beta",
        "core",
        "def kernel_matrix(C: ArrayLike, beta: float = 0.5)",
        "def kernel_matrix(C: ArrayLike, beta: float = 0.4)",
        ("tests/companion/test_reported.py", "-k", "paper_settings"),
    ),
    # ---------------------------------------------------------------- theory
    Mutant(
        "worstcase-beta-star",
        "theory",
        "return 1.0 if m >= 0 else 1.0 / (1.0 - m)",
        "return 1.0 if m >= 0 else 1.0 / (1.0 + m)",
        ("tests/theory/test_worstcase.py",),
    ),
    Mutant(
        "worstcase-two-group-eigenvalue",
        "theory",
        "lam2 = (1 - a) + a * (p + q) / 2 - 0.5 * math.sqrt(a**2 * (p - q) ** 2 + 4 * p * q)",
        "lam2 = (1 - a) + a * (p + q) / 2 - 0.5 * math.sqrt(a**2 * (p - q) ** 2 + 2 * p * q)",
        ("tests/theory/test_worstcase.py",),
    ),
    Mutant(
        "property-relation-tolerance",
        "theory",
        '"<=": new <= old + TOL,',
        '"<=": new <= old + 1.0,',
        ("tests/theory/test_properties.py", "-m", "not slow"),
    ),
    Mutant(
        "two-group-guard",
        "theory",
        "return float(min(lam2, 1 - a)) if max(p, q) > 1 else float(lam2)",
        "return float(min(lam2, 1 - a)) if max(p, q) >= 2 else float(lam2)",
        ("tests/theory/test_worstcase.py",),
        equivalent="p and q are integers (n // 2 and n - n // 2): > 1 and >= 2 select the same inputs",
    ),
    # ---------------------------------------------------------------- pipeline: numbers a run writes
    Mutant(
        "comparisons-win-loss-swapped",
        "pipeline",
        'out = np.where(significant & (delta > 0), "win", np.where(significant & (delta < 0), "loss", "tie"))',
        'out = np.where(significant & (delta < 0), "win", np.where(significant & (delta > 0), "loss", "tie"))',
        ("tests/pipeline/test_comparisons.py", "-k", "wins_losses"),
    ),
    Mutant(
        "metrics-csv-accuracy",
        "pipeline",
        '"accuracy": float(c.mean()),',
        '"accuracy": float(1.0 - c.mean()),',
        ("tests/pipeline/test_metrics_independent.py",),
    ),
    Mutant(
        "metrics-csv-auroc-reversed",
        "pipeline",
        '"auroc": metrics.auroc(u, c),',
        '"auroc": metrics.auroc(-u, c),',
        ("tests/pipeline/test_metrics_independent.py",),
    ),
    # ---------------------------------------------------------------- companion: verdicts and printed comparisons
    Mutant(
        "facts-shap-best-non-strict",
        "companion",
        'return all(values["Shap"] > v for m, v in values.items() if m != "Shap")',
        'return all(values["Shap"] >= v for m, v in values.items() if m != "Shap")',
        (T_VERD, "-k", "paper_way_round"),
    ),
    Mutant(
        "facts-t3-average-best",
        "companion",
        '"t3_avg_best": max(zip(rp.TABLE3_AVERAGE, rp.TABLE3_METHODS, strict=True))[1],',
        '"t3_avg_best": min(zip(rp.TABLE3_AVERAGE, rp.TABLE3_METHODS, strict=True))[1],',
        (T_VERD, "-k", "quick_verdicts"),
    ),
    Mutant(
        "verdict-t4-squad-all",
        "companion",
        'verdict=lambda facts: _holds(facts["t4_squad_best"] == facts["t4_per_dataset"]),',
        "verdict=lambda facts: CONTRADICTED,",
        (T_VERD, "-k", "follows_its_evidence and t4-squad-all"),
    ),
    Mutant(
        "verdict-setup-correctness",
        "companion",
        'verdict=lambda facts: _holds(len(facts["setup_rouge"]) == len(facts["setup_bleu"]) == 1),',
        'verdict=lambda facts: _holds(len(facts["setup_rouge"]) == len(facts["setup_bleu"]) == 2),',
        (T_VERD, "-k", "follows_its_evidence and setup-correctness"),
    ),
    Mutant(
        "verdict-t3-gemma",
        "companion",
        'facts["rep_t3_gemma_avge"] > facts["rep_t3_gemma_shap"] and',
        'facts["rep_t3_gemma_avge"] < facts["rep_t3_gemma_shap"] or',
        (T_VERD, "-k", "quick_verdicts or (follows_its_evidence and gemma)"),
    ),
    Mutant(
        "facts-auroc-reversed",
        "companion",
        '"auroc_reversed": auroc([2.0, 1.0], [True, False]),',
        '"auroc_reversed": auroc([1.0, 2.0], [True, False]),',
        (T_VERD, "-k", "prop36_and_auroc"),
    ),
    Mutant(
        "facts-max-gap-direction",
        "companion",
        'gaps = {k: max(v.values()) - v["Shap"] for k, v in t4.items()}',
        'gaps = {k: v["Shap"] - min(v.values()) for k, v in t4.items()}',
        (T_VERD, "-k", "paper_way_round"),
    ),
)


def locate(snippet: str, root: Path = ROOT) -> list[Path]:
    """The package files that contain ``snippet`` (one, for a usable mutant)."""
    return [p for p in sorted((root / PACKAGE).rglob("*.py")) if snippet in p.read_text(encoding="utf-8")]


def occurrences(snippet: str, root: Path = ROOT) -> int:
    """How often ``snippet`` occurs in the whole package (1 for a usable mutant)."""
    return sum(p.read_text(encoding="utf-8").count(snippet) for p in (root / PACKAGE).rglob("*.py"))


def _copy_tracked(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split("\0")
    for rel in files:
        src = ROOT / rel
        if rel and src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    # the untracked tests and scripts of a work in progress travel too (git would list them once committed)
    for extra in ("tests", "scripts", PACKAGE):
        for src in (ROOT / extra).rglob("*.py"):
            target = dest / src.relative_to(ROOT)
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target)


def _pytest(copy: Path, tests: tuple[str, ...]) -> tuple[int, float, str]:
    env = {**os.environ, "PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1", "HYPOTHESIS_PROFILE": "ci"}
    env.pop("PYTEST_ADDOPTS", None)
    marks = () if "-m" in tests else ("-m", "not slow")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *marks, *tests]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return -1, time.monotonic() - t0, "timeout"
    last = (r.stdout.strip().splitlines() or [""])[-1]
    return r.returncode, time.monotonic() - t0, last


def run(mutants: list[Mutant], baseline: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        copy = Path(tmp) / "repo"
        copy.mkdir()
        _copy_tracked(copy)
        shared = ROOT.parent / "shared"
        if shared.exists():  # the data folder the tests look for beside the repository
            (Path(tmp) / "shared").symlink_to(shared)
        if baseline:
            for tests in sorted({m.tests for m in mutants}):
                rc, dt, last = _pytest(copy, tests)
                print(f"baseline {'ok  ' if rc == 0 else 'FAIL'} {dt:6.1f}s {' '.join(tests)}: {last}", flush=True)
                if rc != 0:
                    return 2
        results: list[tuple[Mutant, str]] = []
        for m in mutants:
            files = locate(m.before, copy)
            if len(files) != 1 or occurrences(m.before, copy) != 1:
                print(f"{m.id}: snippet found {occurrences(m.before, copy)} times; fix the list", flush=True)
                results.append((m, "broken"))
                continue
            path = files[0]
            original = path.read_text(encoding="utf-8")
            path.write_text(original.replace(m.before, m.after), encoding="utf-8")
            try:
                rc, dt, last = _pytest(copy, m.tests)
            finally:
                path.write_text(original, encoding="utf-8")
            status = "killed" if rc == 1 else "survived" if rc == 0 else f"error (rc {rc})"
            if m.equivalent and rc == 0:
                status = "equivalent"
            results.append((m, status))
            rel = path.relative_to(copy)
            print(f"{status:10s} {dt:6.1f}s {m.layer:9s} {m.id} ({rel}): {last}", flush=True)
    return _report(results)


def _report(results: list[tuple[Mutant, str]]) -> int:
    print("\nlayer      killed  survived  equivalent  other  score")
    bad = 0
    for layer in ("core", "theory", "pipeline", "companion", "all"):
        rows = [s for m, s in results if layer in ("all", m.layer)]
        if not rows:
            continue
        k, s, e = rows.count("killed"), rows.count("survived"), rows.count("equivalent")
        other = len(rows) - k - s - e
        score = k / (len(rows) - e) if len(rows) > e else float("nan")
        print(f"{layer:10s} {k:6d}  {s:8d}  {e:10d}  {other:5d}  {100 * score:5.1f}%")
        if layer == "all":
            bad = s + other
    for m, s in results:
        if s == "equivalent":
            print(f"equivalent: {m.id}: {m.equivalent}")
        elif s != "killed":
            print(f"NOT KILLED: {m.id} ({s})")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="ID", help="run these mutants only")
    ap.add_argument("--layer", choices=("core", "theory", "pipeline", "companion"))
    ap.add_argument("--baseline", action="store_true", help="first check every selection passes unmutated")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = ap.parse_args(argv)
    layers = {m.id: m.layer for m in MUTANTS}
    unknown = [i for i in args.only or () if i not in layers]
    if unknown:
        ap.error(f"unknown mutant id(s): {', '.join(unknown)} (--list shows them)")
    elsewhere = [f"{i} is in layer {layers[i]}" for i in args.only or () if args.layer and layers[i] != args.layer]
    if elsewhere:
        ap.error(f"--layer {args.layer} leaves out what --only asks for: {'; '.join(elsewhere)}")
    chosen = [m for m in MUTANTS if (not args.only or m.id in args.only) and (not args.layer or m.layer == args.layer)]
    if args.list:
        for m in chosen:
            print(f"{m.layer:9s} {m.id}: {' '.join(m.tests)}{'  [equivalent]' if m.equivalent else ''}")
        return 0
    return run(chosen, args.baseline)


if __name__ == "__main__":
    sys.exit(main())
