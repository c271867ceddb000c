"""Record types passed between the pipeline stages (data -> generate -> entail -> score -> report).

Plain dataclasses that round-trip through JSON (``to_dict`` / ``from_dict``): no pickle anywhere.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class QARecord:
    """One question of a dataset, as every loader returns it.

    ``prompt`` is the full model input (few-shot template already applied); ``question`` is the bare
    question used by the entailment stage and the p(True) prompt; ``references`` holds every accepted
    answer (correctness takes the maximum over them).
    """

    id: str
    dataset: str
    question: str
    references: tuple[str, ...]
    prompt: str = ""
    context: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["references"] = list(self.references)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> QARecord:
        return cls(
            id=str(d["id"]),
            dataset=str(d.get("dataset", "")),
            question=str(d["question"]),
            references=tuple(str(r) for r in d["references"]),
            prompt=str(d.get("prompt", "")),
            context=d.get("context"),
        )


@dataclass
class Generation:
    """What the generation stage produces for one question.

    ``samples``: n sampled answers (cleaned text). ``sample_token_logprobs[k]`` holds the log-probability
    (nats) of each generated token of sample k, ``sample_token_entropies[k]`` the entropy (nats) of the
    next-token distribution at each step. ``answer`` is the most-likely (greedy) answer whose
    correctness is judged. ``p_true`` is the model's probability of "True" for ``answer`` under the
    p(True) prompt; ``a4c_text`` is its raw reply to the ask-for-confidence prompt.
    """

    id: str
    samples: list[str]
    answer: str
    sample_token_logprobs: list[list[float]] = field(default_factory=list)
    sample_token_entropies: list[list[float]] = field(default_factory=list)
    answer_token_logprobs: list[float] = field(default_factory=list)
    answer_token_entropies: list[float] = field(default_factory=list)
    p_true: float | None = None
    a4c_text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Generation:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
