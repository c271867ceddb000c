"""Correctness criteria (shapley.pipeline.score.correctness): Rouge-L and BLEU on hand-made examples."""

from __future__ import annotations

import pytest

from shapley.pipeline.config import ScoringSettings
from shapley.pipeline.data.datasets import DATASETS
from shapley.pipeline.score import correctness as C

RUN = ScoringSettings()


def test_rouge_exact_match_and_unrelated():
    assert C.rouge_l("Paris", ["Paris"]) == pytest.approx(1.0)
    assert C.rouge_l("paris.", ["Paris"]) == pytest.approx(1.0)  # tokeniser lower-cases, drops punctuation
    assert C.rouge_l("London", ["Paris"]) == 0.0


def test_rouge_value_by_hand():
    # LCS("the capital is paris", "paris") = 1 token: P = 1/4, R = 1/1, F = 2PR/(P+R) = 0.4
    assert C.rouge_l("The capital is Paris", ["Paris"]) == pytest.approx(0.4)
    # LCS = "a b c" of 3 tokens vs 6: P = 1, R = 1/2, F = 2/3
    assert C.rouge_l("a b c", ["a b c d e f"]) == pytest.approx(2 / 3)


def test_rouge_takes_the_best_reference():
    refs = ["Bloody Sunday", "the 1972 Derry shooting"]
    assert C.rouge_l("Bloody Sunday", refs) == pytest.approx(1.0)
    assert C.rouge_l("Bloody Sunday", refs) == max(C.rouge_l("Bloody Sunday", [r]) for r in refs)


def test_bleu_scale_is_zero_to_one():
    ref = ["The cat is sitting on the red mat today."]
    assert C.bleu("The cat is sitting on the red mat today.", ref) == pytest.approx(1.0)
    assert C.bleu("Completely different words here entirely.", ref) < 0.05
    partial = C.bleu("The cat is sitting on a mat.", ref)
    assert 0.0 < partial < 1.0
    import sacrebleu

    assert partial == pytest.approx(sacrebleu.sentence_bleu("The cat is sitting on a mat.", ref).score / 100)


def test_empty_prediction_scores_zero():
    for metric in C.METRICS:
        assert C.similarity("", ["Paris"], metric) == 0.0
        assert C.similarity("   ", ["Paris"], metric) == 0.0
        assert not C.is_correct("", ["Paris"], metric=metric, threshold=0.0)


def test_threshold_is_strict():
    # F = 0.4 exactly (see test_rouge_value_by_hand)
    assert C.is_correct("The capital is Paris", ["Paris"], metric="rougeL", threshold=0.39)
    assert not C.is_correct("The capital is Paris", ["Paris"], metric="rougeL", threshold=0.4)
    assert C.is_correct("The capital is Paris", ["Paris"], metric="rougeL", threshold=RUN.threshold)  # the 0.3
    # F = 2/7 ~ 0.2857 < 0.3: incorrect under the paper's threshold
    assert C.rouge_l("answer is that it was Paris", ["Paris"]) == pytest.approx(2 / 7)
    assert not C.is_correct("answer is that it was Paris", ["Paris"], metric="rougeL", threshold=RUN.threshold)
    assert C.is_correct("Paris", ["Paris"], metric="rougeL", threshold=0.999)
    assert not C.is_correct("Paris", ["Paris"], metric="rougeL", threshold=1.0)


def test_is_correct_with_bleu():
    ref = ["The cat is sitting on the red mat today."]
    assert C.is_correct("The cat is sitting on the red mat today.", ref, metric="bleu", threshold=RUN.threshold)
    assert not C.is_correct("Dogs run.", ref, metric="bleu", threshold=RUN.threshold)
    score = C.bleu("The cat is sitting on a mat.", ref)
    assert C.is_correct("The cat is sitting on a mat.", ref, metric="bleu", threshold=score - 1e-9)
    assert not C.is_correct("The cat is sitting on a mat.", ref, metric="bleu", threshold=score)


def test_unknown_metric():
    with pytest.raises(ValueError, match="valid: rougeL, bleu"):
        C.is_correct("a", ["a"], metric="meteor", threshold=RUN.threshold)


def test_correctness_for_every_dataset():
    assert set(C.CORRECTNESS_FOR) == set(DATASETS)
    assert C.CORRECTNESS_FOR["wmt14"] == "bleu"
    assert all(m == "rougeL" for name, m in C.CORRECTNESS_FOR.items() if name != "wmt14")


def test_exceeds_is_the_one_strict_comparison():
    assert C.exceeds(0.3000001, 0.3) and not C.exceeds(0.3, 0.3) and not C.exceeds(0.2999999, 0.3)
    assert not C.exceeds(1.0, 1.0) and C.exceeds(1.0, 0.999)


def test_a_run_stores_correct_with_the_strict_rule_at_the_threshold(tmp_path, monkeypatch):
    """A judged answer equal to its reference has similarity 1.0 exactly: with threshold 1.0 it is not
    correct (equality fails "> threshold"), with 0.999 it is; the stored ``correct`` follows is_correct."""
    import json
    from dataclasses import replace

    from shapley.pipeline.experiment import pipelines as experiment
    from shapley.pipeline.rundir import jsonl
    from tests import fakes

    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    rows = fakes.make_samples_file(inp, 3, n_samples=2)
    with open(inp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({**r, "answer": r["references"][0]}) + "\n")
    cfg = fakes.samples_config(inp, n_boot=10)
    for threshold, expected in ((1.0, False), (0.999, True)):
        out = experiment.score_samples(
            cfg.replace(scoring=replace(cfg.scoring, threshold=threshold)), tmp_path / f"r{threshold}"
        )
        recs = jsonl.JsonlStore(out / "scores.jsonl").load(repair=False)
        assert recs and all(r["correctness_value"] == 1.0 for r in recs.values())
        assert [r["correct"] for r in recs.values()] == [expected] * len(recs)
        assert all(
            r["correct"] == C.is_correct(r["answer"], [r["answer"]], metric="rougeL", threshold=threshold)
            for r in recs.values()
        )
