"""shapley.integrations.uqlm inside uqlm 0.6.7 (run in .venv-uqlm by make test-integrations)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("uqlm")

import shapley  # noqa: E402
from shapley.integrations.common import confidence_from_total  # noqa: E402
from shapley.integrations.uqlm import ShapleyScorer, add_to_result, entailment_label  # noqa: E402
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


def test_confidence_map_is_monotone_decreasing_and_in_range():
    totals = np.linspace(-50.0, 6 * shapley.HALF_LOG_2PIE, 200)
    conf = [confidence_from_total(float(t), 6) for t in totals]
    assert all(0.0 <= c <= 1.0 for c in conf)
    assert all(a > b for a, b in zip(conf, conf[1:], strict=False))


def test_duplicates_at_beta_one_give_confidence_one():
    scorer = ShapleyScorer(entailment="embedding:minilm", beta=1.0)
    assert scorer.uncertainty(["Paris"], [["Paris", "Paris"]]) == [-math.inf]
    assert scorer.evaluate(["Paris"], [["Paris", "Paris"]]) == [1.0]


class _Texts(list):
    def to(self, _device):
        return self


class _FakeModel:
    """Sequence-classification-shaped: ENTAILMENT first in label2id (uqlm's fixed order would read the last
    column); P(a => b) = 0.9 when b's words are all in a, else 0.1."""

    config = SimpleNamespace(label2id={"ENTAILMENT": 0, "NEUTRAL": 1, "CONTRADICTION": 2})

    def parameters(self):
        import torch

        return iter([torch.nn.Parameter(torch.zeros(1))])

    def __call__(self, premise, hypothesis):
        import torch

        rows = []
        for a, b in zip(premise, hypothesis, strict=True):
            p = 0.9 if set(b.split()) <= set(a.split()) else 0.1
            rows.append([math.log(p), math.log((1 - p) / 2), math.log((1 - p) / 2)])
        return SimpleNamespace(logits=torch.tensor(rows))


def _fake_nli() -> SimpleNamespace:
    def tokenizer(premises, hypotheses, **_):
        return {"premise": _Texts(premises), "hypothesis": _Texts(hypotheses)}

    return SimpleNamespace(model=_FakeModel(), tokenizer=tokenizer)


class _ConstantModel(_FakeModel):
    """P(a => b) = ``c`` for every two different texts."""

    def __init__(self, c: float) -> None:
        self.c = c

    def __call__(self, premise, hypothesis):
        import torch

        row = [math.log(self.c), math.log((1 - self.c) / 2), math.log((1 - self.c) / 2)]
        return SimpleNamespace(logits=torch.tensor([row] * len(premise), dtype=torch.float64))


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("policy", shapley.PSD_POLICIES)
def test_identical_answers_are_at_least_as_confident_as_near_identical(n, policy):
    def uncertainty(c: float) -> float:  # minus the confidence: identical texts when c = 1, n different ones else
        nli = SimpleNamespace(model=_ConstantModel(c), tokenizer=_fake_nli().tokenizer)
        texts = [str(i) if c < 1.0 else "Paris" for i in range(n)]
        return -ShapleyScorer(entailment=nli, beta=1.0, psd_policy=policy).evaluate(texts[:1], [texts[1:]])[0]

    assert identical_first(uncertainty) and uncertainty(1.0) == -1.0


def test_an_nli_object_is_read_through_label2id():
    scorer = ShapleyScorer(entailment=_fake_nli())
    (P,) = scorer.entail_matrices(["a b"], [["a", "c"]])
    assert P[0, 1] == pytest.approx(0.9) and P[1, 0] == pytest.approx(0.1) and P[0, 2] == pytest.approx(0.1)
    assert np.allclose(np.diag(P), 1.0)
    assert entailment_label({"contradiction": 0, "neutral": 1, "entailment": 2}) == 2
    with pytest.raises(ValueError, match="entailment label"):
        entailment_label({"LABEL_0": 0, "LABEL_1": 1})


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
    with pytest.raises(ValueError, match="entailment must be"):
        ShapleyScorer(entailment=3)
