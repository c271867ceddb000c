"""Which answer to return: the strategies on hand-made questions, ``selection.csv`` from stored records."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from shapley.core.entropy import shapley_values
from shapley.core.kernel import correlation_matrix, kernel_matrix
from shapley.core.metrics import holm
from shapley.pipeline.config import ScoringSettings
from shapley.pipeline.evaluate import selection
from shapley.pipeline.experiment import pipelines as experiment
from shapley.pipeline.rundir import jsonl
from shapley.pipeline.score import choice
from shapley.pipeline.score.choice import choose
from shapley.pipeline.score.scores import QuestionContext, ScoreInputs
from tests import fakes

# Answer 1 agrees with both others (0.9 either way); answers 0 and 2 hardly agree (0.05).
MIDDLE = np.array([[1.0, 0.9, 0.05], [0.9, 1.0, 0.9], [0.05, 0.9, 1.0]])


def test_min_phi_picks_the_answer_that_agrees_with_all_others():
    x = ScoreInputs(id="q", samples=["Vienna", "Vienna, Austria", "Austria"], entail=MIDDLE)
    chosen, phi, note = choose(QuestionContext(x, ScoringSettings()))
    assert phi is not None and note == ""
    R = kernel_matrix(correlation_matrix(MIDDLE), 0.5)
    np.testing.assert_allclose(phi, shapley_values(R, "exact"), atol=1e-12)  # core checks it by brute force
    assert int(np.argmin(phi)) == 1 and phi[1] < phi[0] - 0.01
    assert chosen == {"first": 0, "largest_cluster": 0, "medoid": 1, "min_phi": 1}


def test_the_medoid_leaves_each_answer_s_similarity_to_itself_out():
    """An answer's entailment of itself (the diagonal, not always 1) does not count: the medoid is the answer with
    the highest mean similarity to the others, computed here pair by pair. Counting the diagonal picks answer 0."""
    P = np.array([[1.0, 0.5, 0.5], [0.5, 0.2, 0.7], [0.5, 0.6, 0.2]])
    W = (P + P.T) / 2
    to_others = [np.mean([W[i, j] for j in range(3) if j != i]) for i in range(3)]
    with_itself = [np.mean(W[i]) for i in range(3)]
    assert int(np.argmax(to_others)) == 1 != int(np.argmax(with_itself))
    x = ScoreInputs(id="q", samples=["a", "b", "c"], entail=P)
    assert choose(QuestionContext(x, ScoringSettings()))[0]["medoid"] == 1


def test_largest_cluster_takes_its_most_likely_member_and_ties_go_first():
    x = ScoreInputs(id="q", samples=["a", "b", "c"], entail=MIDDLE)
    # clusters (bidirectional > 0.5, greedy in order): {0, 1} and {2}; without log-probs: its first member
    assert choose(QuestionContext(x, ScoringSettings()))[0]["largest_cluster"] == 0
    lp = [[-2.0, -2.0], [-0.1], [-0.01]]  # sample 1 is the likelier member (by sum and by mean)
    x = ScoreInputs(id="q", samples=["a", "b", "c"], entail=MIDDLE, sample_logprobs=lp)
    assert choose(QuestionContext(x, ScoringSettings()))[0]["largest_cluster"] == 1
    # three answers that are all alike: every phi equal, every mean similarity equal -> the first answer
    same = np.full((3, 3), 0.2) + 0.8 * np.eye(3)
    chosen, phi, _ = choose(
        QuestionContext(ScoreInputs(id="q", samples=["a", "b", "c"], entail=same), ScoringSettings())
    )
    assert phi is not None and np.ptp(phi) < 1e-12
    assert chosen == {"first": 0, "largest_cluster": 0, "medoid": 0, "min_phi": 0}


def test_min_phi_is_skipped_beyond_the_exact_limit_and_without_entailment():
    n = choice.PHI_MAX_N + 1
    P = np.full((n, n), 0.3) + 0.7 * np.eye(n)
    chosen, phi, note = choose(QuestionContext(ScoreInputs(id="q", samples=["s"] * n, entail=P), ScoringSettings()))
    assert phi is None and chosen["min_phi"] is None and chosen["medoid"] == 0
    assert note == f"n = {n} > {choice.PHI_MAX_N} samples: exact Shapley values not computed"
    chosen, phi, note = choose(QuestionContext(ScoreInputs(id="q", samples=["a", "b"]), ScoringSettings()))
    assert phi is None and chosen == {"first": 0, "largest_cluster": None, "medoid": None, "min_phi": None}
    assert note == "no entailment matrix"
    # the reason reaches selection.csv
    rec = {"id": "q", "correct": True, "answer_source": "greedy", "sample_correctness": [1.0] * n, "phi": None}
    rec.update(selected={**chosen, "first": 0}, phi_note=f"n = {n} > {choice.PHI_MAX_N} samples")
    t = selection.selection_table([rec], threshold=0.3, n_boot=10).set_index("strategy")
    assert t.loc["min_phi", "n"] == 0 and f"n = {n} > {choice.PHI_MAX_N} samples (1)" in t.loc["min_phi", "note"]


def _rec(correct: bool, values: list[float], picks: dict, source: str | None = "greedy") -> dict:
    return {
        "id": "x",
        "correct": correct,
        "answer_source": source,
        "sample_correctness": values,
        "selected": picks,
    }


def test_selection_table_by_hand():
    records = [
        _rec(True, [0.0, 1.0, 0.5], {"first": 0, "largest_cluster": 1, "medoid": 2, "min_phi": 1}),
        _rec(False, [1.0, 0.0, 0.2], {"first": 0, "largest_cluster": 0, "medoid": 1, "min_phi": None}),
    ]
    t = selection.selection_table(records, threshold=0.3, n_boot=200).set_index("strategy")
    assert list(t.index) == list(choice.STRATEGIES)
    assert t["accuracy"].to_dict() == {
        "first": 0.5,
        "greedy": 0.5,
        "largest_cluster": 1.0,
        "medoid": 0.5,
        "min_phi": 1.0,
    }
    assert t["n"].to_dict() == {"first": 2, "greedy": 2, "largest_cluster": 2, "medoid": 2, "min_phi": 1}
    assert t.loc["min_phi", "note"] == "no choice on 1 of 2 questions"
    assert (t["lo"] <= t["accuracy"]).all() and (t["accuracy"] <= t["hi"]).all()
    assert t.loc["largest_cluster", "lo"] == t.loc["largest_cluster", "hi"] == 1.0
    # the threshold is the run's: 0.5 is not above 0.5
    assert (
        selection.selection_table(records, threshold=0.5, n_boot=10).set_index("strategy").loc["medoid", "accuracy"]
        == 0
    )


@pytest.mark.parametrize("with_answer", [False, True])
def test_score_samples_stores_what_selection_needs(tmp_path, monkeypatch, with_answer):
    """Without an 'answer' field the judged answer is the first sample: greedy is skipped (n = 0, with a note),
    never counted as a second 'first'. With one, greedy is scored on every question."""
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    rows = fakes.make_samples_file(inp, 8, n_samples=4)
    if with_answer:
        with open(inp, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps({**r, "answer": r["references"][0]}) + "\n")
    cfg = fakes.samples_config(inp)
    out = experiment.score_samples(cfg.replace(scoring=replace(cfg.scoring, beta=0.3)), tmp_path / "run")
    recs = jsonl.JsonlStore(out / "scores.jsonl").load(repair=False)
    for r in recs.values():
        assert len(r["sample_correctness"]) == len(r["phi"]) == 4
        assert math.isclose(sum(r["phi"]), r["scores"]["Shap"], rel_tol=1e-9, abs_tol=1e-9)  # efficiency
        assert r["selected"]["min_phi"] == int(np.argmin(r["phi"]))
        assert r["answer_source"] == ("input" if with_answer else "first_sample")
    t = pd.read_csv(out / "selection.csv").set_index("strategy")
    assert list(pd.read_csv(out / "selection.csv").columns) == list(selection.SELECTION_COLUMNS)
    assert (t.drop(index="greedy")["n"] == 8).all()
    first = [r["sample_correctness"][0] > 0.3 for r in recs.values()]
    assert t.loc["first", "accuracy"] == pytest.approx(np.mean(first))
    if with_answer:
        assert t.loc["greedy", "n"] == 8 and t.loc["greedy", "accuracy"] == 1.0  # the reference itself
    else:
        assert t.loc["greedy", "n"] == 0 and "no 'answer' field" in t.loc["greedy", "note"]
    tests = pd.read_csv(out / selection.TESTS_FILE)
    assert list(tests.columns) == list(selection.TEST_COLUMNS) and len(tests) >= 3 and (tests["n"] == 8).all()


def test_mcnemar_exact_by_hand():
    from scipy.special import comb

    # 9 questions where a is right and b wrong, 1 the other way: P(X <= 1 or X >= 9), X ~ Bin(10, 1/2)
    assert selection.mcnemar_exact(9, 1) == pytest.approx(2 * (comb(10, 0) + comb(10, 1)) / 2**10)
    assert selection.mcnemar_exact(1, 9) == selection.mcnemar_exact(9, 1)
    assert selection.mcnemar_exact(0, 0) == 1.0 and selection.mcnemar_exact(4, 4) == 1.0


def test_selection_tests_pair_the_strategies_question_by_question():
    """min_phi right on 12 questions where first is wrong, first right on 2 where min_phi is wrong, both right
    on 20: min_phi is better (exact p = 2 P(X <= 2), X ~ Bin(14, 1/2) = 0.0129); medoid equals first."""
    picks = {"first": 0, "largest_cluster": 0, "medoid": 0, "min_phi": 1}
    records = (
        [_rec(False, [0.0, 1.0], picks) for _ in range(12)]
        + [_rec(True, [1.0, 0.0], picks) for _ in range(2)]
        + [_rec(True, [1.0, 1.0], picks) for _ in range(20)]
        + [_rec(False, [0.0, 0.0], picks) for _ in range(6)]
    )
    for k, r in enumerate(records):
        r["id"] = f"q{k}"
    t = selection.selection_tests(records, threshold=0.5)
    assert list(t.columns) == list(selection.TEST_COLUMNS)
    row = t.set_index(["strategy_a", "strategy_b"]).loc[("first", "min_phi")]
    assert (row["n"], row["a_only"], row["b_only"]) == (40, 2, 12)
    assert (row["accuracy_a"], row["accuracy_b"]) == (22 / 40, 32 / 40)
    assert row["p_mcnemar"] == pytest.approx(0.012939453125)
    np.testing.assert_array_equal(t["p_holm"], holm(t["p_mcnemar"].to_numpy()))
    assert len(t) == 10 and row["p_holm"] == pytest.approx(10 * row["p_mcnemar"])  # 4 pairs share the smallest p
    assert row["outcome"] == "no significant difference"  # not after Holm over the run's 10 pairs
    same = t.set_index(["strategy_a", "strategy_b"]).loc[("first", "medoid")]
    assert same["p_mcnemar"] == 1.0 and same["outcome"] == "no significant difference"
    assert set(t["outcome"]) <= {"a better", "b better", "no significant difference", "undefined"}
    # overlapping bootstrap intervals do not decide it: the test is paired
    sel = selection.selection_table(records, threshold=0.5, n_boot=200).set_index("strategy")
    assert sel.loc["first", "hi"] > sel.loc["min_phi", "lo"] and row["p_mcnemar"] < 0.05
    alone = selection.selection_tests([r | {"answer_source": None} for r in records], threshold=0.5)
    assert "greedy" not in set(alone["strategy_a"]) | set(alone["strategy_b"])
    assert max(sel["lo_mcse"].max(), sel["hi_mcse"].max()) <= 0.002


def test_the_significantly_better_strategy_is_named_the_right_way_round():
    """Issue 27: a pair significant after Holm in each direction. ``first`` is right and ``largest_cluster``
    wrong on 30 questions (a better), ``min_phi`` right and ``first`` wrong on 30 others (b better)."""
    picks = {"first": 0, "largest_cluster": 1, "medoid": 0, "min_phi": 2}
    records = [_rec(True, [1.0, 0.0, 0.0], picks) for _ in range(30)]
    records += [_rec(False, [0.0, 0.0, 1.0], picks) for _ in range(30)]
    for k, r in enumerate(records):
        r["id"] = f"q{k}"
    t = selection.selection_tests(records, threshold=0.5).set_index(["strategy_a", "strategy_b"])
    first_lc = t.loc[("first", "largest_cluster")]
    assert (first_lc["a_only"], first_lc["b_only"]) == (30, 0)
    assert first_lc["p_holm"] < selection.SIGNIFICANCE and first_lc["outcome"] == "a better"
    first_phi = t.loc[("first", "min_phi")]
    assert (first_phi["a_only"], first_phi["b_only"]) == (30, 30) and first_phi[
        "outcome"
    ] == "no significant difference"
    lc_phi = t.loc[("largest_cluster", "min_phi")]
    assert (lc_phi["a_only"], lc_phi["b_only"]) == (0, 30)
    assert lc_phi["p_holm"] < selection.SIGNIFICANCE and lc_phi["outcome"] == "b better"
