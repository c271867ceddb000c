"""Is a generated answer correct? (pipeline stage: generations + references -> 0/1 labels).

The paper's criteria (Section 4): question answering counts an answer as correct when its Rouge-L F-measure
against the reference exceeds 0.3; translation (WMT-14) when its BLEU score exceeds 0.3. With several
references the best one counts (maximum over references).

* :func:`rouge_l`: ``rouge_score.rouge_scorer.RougeScorer(["rougeL"])`` F-measure, in [0, 1]. Its tokeniser
  lower-cases and keeps only ``[a-z0-9]`` runs, so text in other scripts scores 0; no stemming.
* :func:`bleu`: ``sacrebleu.sentence_bleu(prediction, references).score / 100`` (sacrebleu's default
  sentence-level smoothing), in [0, 1].
* An empty (or whitespace-only) prediction scores 0.0 under both metrics: it is never correct.
* References: a list of strings, at least one not blank, as the data stage checks them
  (:func:`shapley.pipeline.data.files.make_item`, the score-samples reader).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

METRICS = ("rougeL", "bleu")

#: correctness metric used for each dataset name of ``shapley.pipeline.data.datasets.DATASETS``.
CORRECTNESS_FOR: dict[str, str] = {
    "triviaqa": "rougeL",
    "coqa": "rougeL",
    "wmt14": "bleu",
    "squad": "rougeL",
    "bioasq": "rougeL",
    "nq_open": "rougeL",
    "svamp": "rougeL",
    "jsonl": "rougeL",
}


@lru_cache(maxsize=1)
def _rouge_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"])


def rouge_l(prediction: str, references: Sequence[str]) -> float:
    """Rouge-L F-measure of ``prediction`` against its best reference, in [0, 1] (0.0: empty prediction)."""
    if not prediction.strip():
        return 0.0
    scorer = _rouge_scorer()
    return float(max(scorer.score(ref, prediction)["rougeL"].fmeasure for ref in references))


def bleu(prediction: str, references: Sequence[str]) -> float:
    """Sentence BLEU of ``prediction`` against ``references`` (sacrebleu, multi-reference), in [0, 1].

    sacrebleu scores all references jointly (n-gram counts clipped by the maximum over references), the usual
    multi-reference BLEU. 0.0 for an empty prediction.
    """
    if not prediction.strip():
        return 0.0
    import sacrebleu

    score = sacrebleu.sentence_bleu(prediction, [r for r in references if r.strip()]).score / 100.0
    return float(min(1.0, max(0.0, score)))


def similarity(prediction: str, references: Sequence[str], metric: str = "rougeL") -> float:
    """Score in [0, 1] under ``metric`` ("rougeL" or "bleu")."""
    if metric == "rougeL":
        return rouge_l(prediction, references)
    if metric == "bleu":
        return bleu(prediction, references)
    raise ValueError(f"unknown correctness metric {metric!r}; valid: {', '.join(METRICS)}")


def exceeds(value: float, threshold: float) -> bool:
    """The correctness rule on a similarity ``value`` already computed: True when it is strictly greater than
    ``threshold`` (the paper's "> 0.3"; equality is not correct). The one comparison behind :func:`is_correct`
    and a run's stored ``correct``.

    Examples:
        >>> exceeds(0.31, 0.3), exceeds(0.3, 0.3), exceeds(0.29, 0.3)
        (True, False, False)
    """
    return bool(value > threshold)


def is_correct(prediction: str, references: Sequence[str], *, metric: str, threshold: float) -> bool:
    """True when the ``metric`` score of ``prediction`` is strictly greater than ``threshold`` (in [0, 1]; a run's
    is :attr:`shapley.pipeline.config.ScoringSettings.threshold`, the paper's 0.3)."""
    return exceeds(similarity(prediction, references, metric), threshold)
