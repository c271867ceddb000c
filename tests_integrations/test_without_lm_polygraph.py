"""shapley.integrations.lm_polygraph where LM-Polygraph is not installed (.venv-uqlm): the module imports, and each
class or container refuses to be built with an ``ImportError`` that names what needs it and the environment."""

from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("lm_polygraph") is not None:
    pytest.skip("LM-Polygraph is installed in this environment", allow_module_level=True)

from shapley.integrations import lm_polygraph  # noqa: E402

ENVIRONMENT = (
    "needs the 'lm-polygraph' extra: `make integrations` builds .venv-lm-polygraph "
    "(or pip install -e '.[lm-polygraph]' with constraints-lm-polygraph.txt)"
)


@pytest.mark.parametrize(
    ("build", "what"),
    [
        (lambda: lm_polygraph.ShapleyUncertainty(beta=3.0), "ShapleyUncertainty"),  # before the settings' check
        (lambda: lm_polygraph.load_estimator({"beta": 0.3}), "ShapleyUncertainty"),
        (lambda: lm_polygraph.ShapleyEntailmentCalculator(), "the calculator"),
        (lambda: lm_polygraph.CannedBlackboxModel({}), "CannedBlackboxModel"),
        (lambda: lm_polygraph.stat_calculator_container(), "the container"),
    ],
)
def test_building_without_lm_polygraph_names_the_environment(build, what):
    with pytest.raises(ImportError) as e:
        build()
    assert str(e.value) == f"{what} {ENVIRONMENT}"


def test_unknown_factory_options_are_refused_first():
    with pytest.raises(ValueError, match=r"unknown ShapleyUncertainty option\(s\) \['betta'\]; use beta, psd_policy"):
        lm_polygraph.load_estimator({"betta": 0.3})
    with pytest.raises(ValueError, match=r"unknown ShapleyEntailmentCalculator option\(s\) \['x'\]; use entailment"):
        lm_polygraph.load_stat_calculator({"x": 1, "obj": "ignored"})
