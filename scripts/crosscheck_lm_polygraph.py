"""Our graph baselines and Shapley total against LM-Polygraph's own estimators on the same matrices.

Run in .venv-lm-polygraph (``make results`` does, through scripts/regenerate_results.sh):

    .venv-lm-polygraph/bin/python scripts/crosscheck_lm_polygraph.py --out results/crosscheck

Inputs: the committed LLaMA-13B TriviaQA entailment matrices and our scores (each run's ``stages.jsonl.gz``,
read by ``shapley.pipeline.rundir.jsonl.read_compact``), the samples file the run ``minilm_n10`` was scored on
(its SHA-256 must match the run's ``config.json``), and seeded random entailment matrices. For every method both
sides compute on one matrix, the largest absolute difference per source goes to ``lm_polygraph.csv``; a
``UEManager`` run's AUROC and PRR to ``uemanager_triviaqa.csv``; ``freshness.json`` is the page record
(``shapley.companion.crosscheck.RECORD``), with why Ecc's AUROC differs (``crosscheck.ecc_gap``). The inputs and
the output folder are checked before any work (exit 2, one line); the three files are replaced together. The
reading of every difference is in book/integrations.md.

The script runs on one thread (OMP/OpenBLAS/MKL pinned before numpy and torch load): MiniLM's similarities move in
their last bits with the thread count, and LM-Polygraph ranks the UEManager run's scores unrounded, so its AUROCs
(fourth decimal) and the Ecc gap's differing-pair counts would depend on the machine's cores. The pin applies only
when the file runs as a script, not when a test imports it.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"

import numpy as np  # noqa: E402

from shapley.companion import crosscheck  # noqa: E402
from shapley.pipeline.data.datasets import LOCAL_FILES  # noqa: E402
from shapley.pipeline.rundir.settings import data_dir  # noqa: E402
from shapley.results.records import write_files  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def ours(P: np.ndarray) -> dict[str, float]:
    """Our scores of one entailment matrix, as the pipeline computes them (W = (P + P.T) / 2)."""
    from shapley.core.baselines import degree, eccentricity, eigv, kernel_language_entropy
    from shapley.integrations.common import defined_total

    W = (P + P.T) / 2
    return {
        "EigV": eigv(W),
        "Deg": degree(W),
        "Ecc": eccentricity(W),
        "KLE": kernel_language_entropy(W),
        "Shap": defined_total(P, 0.5, "nearest"),
        # LM-Polygraph's KLE definition computed by our code: graph 1 + W (their weights 1, 1/2, 0 for entailment,
        # neutral, contradiction, read from summed probabilities, with no contradiction), halved with t doubled
        # (the same heat kernel, inside our [0, 1] check), unit-diagonal kernel / n, divided by ln n
        "KLE_their_definition": kernel_language_entropy((1.0 + W) / 2, t=0.6, normalisation="diagonal")
        / np.log(P.shape[0]),
    }


def peers() -> dict[str, object]:
    """LM-Polygraph's estimators on ``semantic_matrix_entail``, by the name of our method they correspond to."""
    from lm_polygraph.estimators import DegMat, Eccentricity, EigValLaplacian, KernelLanguageEntropy

    from shapley.integrations.lm_polygraph import ShapleyUncertainty

    return {
        "EigV": EigValLaplacian(),
        "Deg": DegMat(),
        "Ecc": Eccentricity(),
        "KLE": KernelLanguageEntropy(),
        "KLE_their_definition": KernelLanguageEntropy(),
        "Shap": ShapleyUncertainty(),
    }


def compare(source: str, mats: list[np.ndarray], stored: list[dict[str, float]] | None) -> list[dict[str, object]]:
    # our stand-in backends (MiniLM) give no contradiction estimate and our graph baselines read entailment only:
    # LM-Polygraph's KLE, which also reads contradiction, gets zeros
    stats = {
        "semantic_matrix_contra": np.zeros((len(mats), *mats[0].shape), dtype=np.float32),
        "semantic_matrix_entail": np.stack(mats).astype(np.float32),
        "sample_texts": [[f"s{i}" for i in range(m.shape[0])] for m in mats],
    }
    stats64 = dict(stats, semantic_matrix_entail=np.stack(mats))
    mine = [ours(m) for m in mats]
    rows = []
    for method, est in peers().items():
        theirs = np.asarray(est(stats64), dtype=np.float64)
        theirs32 = np.asarray(est(stats), dtype=np.float64)
        ref = np.array([o[method] for o in mine])
        row = {
            "source": source,
            "method": method,
            "peer": str(est),
            "n_matrices": len(mats),
            "max_abs_diff": float(np.max(np.abs(theirs - ref))),
            "max_abs_diff_float32": float(np.max(np.abs(theirs32 - ref))),
            "spearman": float(_spearman(theirs, ref)),
        }
        if stored is not None and method in stored[0]:
            row["max_abs_diff_vs_committed"] = float(np.max(np.abs(ref - np.array([s[method] for s in stored]))))
        rows.append(row)
    return rows


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def committed(path: Path) -> tuple[list[np.ndarray], list[dict[str, float]]]:
    from shapley.pipeline.rundir.jsonl import read_compact

    comp = read_compact(path.parent)
    mats, scores = [], []
    for qid, ent in comp["entailment"].items():
        sc = comp["scores"].get(qid, {}).get("scores", {})
        if all(k in sc for k in ("EigV", "Deg", "Ecc", "KLE", "Shap")):
            mats.append(np.asarray(ent["entail"], dtype=np.float64))
            scores.append(sc)
    return mats, scores


def random_mats(count: int = 300, n: int = 10, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        m = rng.uniform(size=(n, n))
        np.fill_diagonal(m, 1.0)
        out.append(m)
    return out


#: the suffix of the names of estimators that read our calculator's matrices (the "peer" column omits it)
OURS = "_shapley_calculator"

PEER_NAMES = {
    "Shap_beta0.5_nearest": "Shap",
    "EigValLaplacian_NLI_score_entail": "EigV",
    "DegMat_NLI_score_entail": "Deg",
    "Eccentricity_NLI_score_entail": "Ecc",
}


def uemanager_run(
    run_dir: Path, samples: Path, n_samples: int = 10
) -> tuple[list[dict[str, object]], dict[str, object]]:
    """An LM-Polygraph UEManager run over the committed LLaMA-13B TriviaQA answers: a canned black-box model replays
    the first ``n_samples`` samples of ``samples`` (as our pipeline reads them), our MiniLM calculator gives the
    matrices, and the ground truth is our committed correctness of each question (``Correct`` for PRR,
    ``Incorrect`` for AUROC). Returns the rows (LM-Polygraph's AUROC and PRR per method beside our ``metrics.csv``
    of ``run_dir``) and :func:`shapley.companion.crosscheck.ecc_gap` of LM-Polygraph's Ecc against ours."""
    from lm_polygraph.defaults.register_default_stat_calculators import register_default_stat_calculators
    from lm_polygraph.estimators import DegMat, Eccentricity, EigValLaplacian
    from lm_polygraph.generation_metrics.generation_metric import GenerationMetric
    from lm_polygraph.ue_metrics import ROCAUC, PredictionRejectionArea
    from lm_polygraph.utils.builder_enviroment_stat_calculator import BuilderEnvironmentStatCalculator
    from lm_polygraph.utils.dataset import Dataset
    from lm_polygraph.utils.manager import UEManager

    from shapley.integrations.lm_polygraph import (
        CannedBlackboxModel,
        OnShapleyMatrices,
        ShapleyUncertainty,
        stat_calculator_container,
    )
    from shapley.pipeline.data.samples import read_samples_file
    from shapley.pipeline.rundir.jsonl import read_compact

    class Committed(GenerationMetric):  # type: ignore[misc]
        """Our committed correctness, carried in the dataset's target texts ("1" / "0")."""

        def __init__(self, flip: bool) -> None:
            super().__init__(["greedy_texts"], "sequence")
            self.flip = flip

        def __str__(self) -> str:
            return "Incorrect" if self.flip else "Correct"

        def __call__(self, stats, target_texts):  # type: ignore[no-untyped-def]
            y = np.array([float(t) for t in target_texts])
            return 1.0 - y if self.flip else y

    comp = read_compact(run_dir)
    correct = {q: bool(r["correct"]) for q, r in comp["scores"].items()}
    items = [it for it in read_samples_file(samples, n_samples=n_samples, reference_field="answer") if it.id in correct]
    model = CannedBlackboxModel({it.id: list(it.samples) for it in items})
    data = Dataset([it.id for it in items], ["1" if correct[it.id] else "0" for it in items], batch_size=50)
    man = UEManager(
        data,
        model,
        # every estimator reads our calculator's matrices, by its own keys (LM-Polygraph's would need DeBERTa)
        [
            ShapleyUncertainty(judge="shapley"),
            *(OnShapleyMatrices(e) for e in (EigValLaplacian(), DegMat(), Eccentricity())),
        ],
        BuilderEnvironmentStatCalculator(model),
        register_default_stat_calculators("Blackbox") + [stat_calculator_container("embedding:minilm")],
        [Committed(False), Committed(True)],
        [PredictionRejectionArea(), ROCAUC()],
        processors=[],
        ignore_exceptions=False,
        verbose=False,
    )
    metrics = man()
    with open(run_dir / "metrics.csv", newline="") as f:
        mine = {r["method"]: r for r in csv.DictReader(f)}
    rows = []
    for peer, method in PEER_NAMES.items():
        rows.append(
            {
                "run": f"{run_dir.parent.name}/{run_dir.name}",
                "method": method,
                "peer": peer,
                "n_questions": len(items),
                "auroc_lm_polygraph": float(metrics["sequence", f"{peer}{OURS}", "Incorrect", "roc-auc"]),
                "auroc_ours": float(mine[method]["auroc"]),
                "prr_lm_polygraph": float(metrics["sequence", f"{peer}{OURS}", "Correct", "prr"]),
                "prr_normalized_lm_polygraph": float(metrics["sequence", f"{peer}{OURS}", "Correct", "prr_normalized"]),
                "prr_ours": float(mine[method]["prr"]),
            }
        )
    ids = [it.id for it in items]
    gap = crosscheck.ecc_gap(
        man.estimations["sequence", f"Eccentricity_NLI_score_entail{OURS}"],
        [comp["scores"][q]["scores"]["Ecc"] for q in ids],
        [not correct[q] for q in ids],
        [bool(np.all(np.asarray(comp["entailment"][q]["entail"]) == 1)) for q in ids],
    )
    return rows, gap


def problem(results: Path, samples: Path | None, out: Path) -> str | None:
    """What stops the cross-check before any work, in one line, or None: an output folder that cannot be
    written, a missing input, a samples file other than the one the UEManager run was scored on, or LM-Polygraph
    missing."""
    folder = next(p for p in (out, *out.parents) if p.exists())
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        return f"output folder {out} cannot be written ({folder} is not a writable folder)"
    for rel in crosscheck.inputs(results):
        if not (results / rel).is_file():
            return f"input {results / rel} is missing"
    if not crosscheck.run_files(results):
        return f"no run files {results / crosscheck.RUN_FILES}"
    if samples is None or not samples.is_file():
        return f"samples file {samples} is missing (set SHAPLEY_DATA_DIR or pass --samples)"
    config = results / crosscheck.MANAGER_RUN / "config.json"
    try:
        expected = json.loads(config.read_text())["config"]["data"]["sha256"]
    except (ValueError, KeyError, TypeError):
        return f"{config} records no SHA-256 of its samples file (config.data.sha256)"
    if hashlib.sha256(samples.read_bytes()).hexdigest() != expected:
        return f"samples file {samples} is not the one {crosscheck.MANAGER_RUN} was scored on (SHA-256 {expected})"
    if importlib.util.find_spec("lm_polygraph") is None:
        return "lm_polygraph is not installed: run in .venv-lm-polygraph (make integrations)"
    return None


def _csv(rows: list[dict[str, object]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(dict.fromkeys(k for r in rows for k in r)), lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "crosscheck")
    ap.add_argument("--results", type=Path, default=ROOT / "results", help="the results folder the runs are in")
    ap.add_argument(
        "--samples", type=Path, help=f"the samples file (default: SHAPLEY_DATA_DIR/{LOCAL_FILES['triviaqa']})"
    )
    args = ap.parse_args(argv)
    try:
        samples = args.samples or data_dir() / str(LOCAL_FILES["triviaqa"])
    except FileNotFoundError:
        samples = None
    stop = problem(args.results, samples, args.out)
    if stop is not None:
        print(f"{ap.prog}: error: {stop}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    fresh = crosscheck.RECORD.freshness(args.results)  # the inputs as they are read
    rows = []
    for rel in crosscheck.run_files(args.results):
        mats, scores = committed(args.results / rel)
        if mats and len({m.shape for m in mats}) == 1:
            rows += compare(str(Path(rel).parent), mats, scores)
    rows += compare("random (300 x n=10, seed 0)", random_mats(), None)
    manager_rows, gap = uemanager_run(args.results / crosscheck.MANAGER_RUN, samples)
    record = crosscheck.RECORD.text(fresh, time.perf_counter() - start, _about(gap))
    lm_polygraph, uemanager, freshness = crosscheck.OUTPUTS
    texts = {lm_polygraph: _csv(rows), uemanager: _csv(manager_rows), freshness: record}
    write_files({args.out / name: text for name, text in texts.items()})
    print(f"wrote {args.out / lm_polygraph} ({len(rows)} rows) in {time.perf_counter() - start:.1f} s")
    return 0


def _about(gap: dict[str, object]) -> dict[str, object]:
    """What ``freshness.json`` holds beside the command, the freshness block and the seconds: the commit, versions
    and Ecc's AUROC gap."""
    from importlib.metadata import version

    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--", "shapley", "scripts", "pyproject.toml")),
        "python": sys.version.split()[0],
        "versions": {p: version(p) for p in ("lm_polygraph", "numpy", "scipy", "torch", "shapley-uncertainty")},
        "ecc_auroc_gap": gap,
    }


if __name__ == "__main__":
    raise SystemExit(main())
