"""What a claim of the paper is and how we judge it: the record (:class:`Claim`), the verdict vocabulary and the
claim groups; the claims themselves are :data:`shapley.companion.claims.CLAIMS`.

A claim has its id, its place in the paper, its group on the claims page
(:data:`GROUPS`), a restatement in our own words, at most one sentence of the paper quoted verbatim, the rule that
decides our verdict, a one-line reason, the long note that says why, and the evidence (book pages, with an anchor
where one exists). One vocabulary of verdicts, used strictly (:data:`VERDICT_KINDS`):

* ``reproduced``: we computed or measured the same quantity and it agrees;
* ``consistent`` (shown as "consistent within the paper", :data:`LABELS`): the paper's text, checked against its
  own tables (:mod:`shapley.companion.reported`) or its other statements, agrees; no measurement of ours supports
  or refutes it;
* ``contradicted``: a counterexample or a measurement, shown on the evidence page, disagrees;
* ``depends on reading``: the claim admits several readings, each with its own verdict (:class:`Reading`);
* ``not reproducible here``: settling it needs what this environment lacks; the note says why and
  :attr:`Claim.command` is the exact command that would settle it with a GPU and the real models.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from shapley.companion import reported
from shapley.pipeline.config import DEFAULT_ENTAILMENT

REPRODUCED = "reproduced"
CONSISTENT = "consistent"
CONTRADICTED = "contradicted"
DEPENDS = "depends on reading"
NOT_HERE = "not reproducible here"
VERDICT_KINDS = (REPRODUCED, CONSISTENT, CONTRADICTED, DEPENDS, NOT_HERE)

#: CSS class of each verdict's badge (``_static/custom.css``).
BADGES: MappingProxyType[str, str] = MappingProxyType(
    {
        REPRODUCED: "verdict-ok",
        CONSISTENT: "verdict-consistent",
        CONTRADICTED: "verdict-bad",
        DEPENDS: "verdict-depends",
        NOT_HERE: "verdict-na",
    }
)

#: How each verdict is shown: "consistent" says what it is (the text agrees with the paper's own tables or its
#: other statements).
LABELS: MappingProxyType[str, str] = MappingProxyType(
    {v: v for v in VERDICT_KINDS} | {CONSISTENT: "consistent within the paper"}
)

CORE = "core theory"
HEADLINE = "headline empirical claims"
INTERNAL = "the paper's internal consistency"
SETUP = "set-up"
GROUPS = (CORE, HEADLINE, INTERNAL, SETUP)
"""The groups of the claims page, in its order: the propositions and the method's motivation; the paper's headline
empirical claims; the paper's numbers and examples checked against its own tables and definitions; the set-up."""

#: What each group holds, for readers.
GROUP_NOTES: MappingProxyType[str, str] = MappingProxyType(
    {
        CORE: "the propositions, and the motivation of the method",
        HEADLINE: "what the abstract and Sec. 4 say Shap achieves",
        INTERNAL: "the text and the worked example against the paper's own tables and definition",
        SETUP: "how the evaluation is defined and run",
    }
)

NLI = DEFAULT_ENTAILMENT
"""The entailment model of the paper-scale commands: the default NLI model of a run (the paper names no checkpoint)."""


def paper_scale_command(dataset: str, model: str) -> str:
    """The ``python -m shapley run`` command for one (dataset, model) cell at the paper's scale, on a GPU.

    ``model`` is a paper abbreviation (``"L-7B"``), mapped to our guess of its hub id
    (``shapley.companion.reported.HF_MODEL_GUESS``), or a hub id. TriviaQA and CoQA are read from the hub, because the
    local files hold fewer questions. The paper's question count is ``reported.HYPERPARAMETERS``.
    """
    hub = reported.HF_MODEL_GUESS.get(model, model)
    tag = hub.split("/")[-1].lower()
    argv = ["python", "-m", "shapley", "run", "--dataset", dataset]
    if dataset in ("triviaqa", "coqa", "wmt14"):
        argv += ["--source", "online"]
    argv += ["--model", hub, "--entailment", NLI, "--n-samples", "10"]
    argv += ["--limit", str(reported.HYPERPARAMETERS["n_questions"]), "--dtype", "bfloat16"]
    argv += ["--output", f"runs/{dataset}-{tag}"]
    return shlex.join(argv)


Facts = Mapping[str, Any]
"""Fact name -> value (:func:`shapley.companion.verdicts.facts`): numbers, names, or tuples of them."""

Rule = Callable[[Facts], str]
"""Decides a claim's verdict from the facts."""


@dataclass(frozen=True)
class Reading:
    """One reading of a claim that depends on reading: its name, its own verdict (or the rule deciding it from the
    facts), and a note template."""

    name: str
    verdict: str | Rule
    note: str

    def decide(self, facts: Facts) -> str:
        """This reading's verdict: the rule's on ``facts``, or the fixed one."""
        return self.verdict if isinstance(self.verdict, str) else self.verdict(facts)


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One claim of the paper, and our verdict on it.

    ``where``: its place in the paper; ``group``: its group on the claims page (:data:`GROUPS`); ``statement``: the
    claim in our own words; ``quote``: one sentence of the paper, verbatim (``…`` joins the parts of one sentence
    around omitted LaTeX), or ""; ``verdict``: the rule deciding the verdict from the facts, or the verdict itself
    where nothing here computes it (the reason and note say why); ``reason``: why, in one line (a template);
    ``note``: why, at length (a template); ``proved``: a proved fact that
    bears on the claim whatever our measurements say (a template, or ""); ``readings``: for ``depends on reading``,
    the readings (or the function computing them); ``evidence``: book pages (toc paths, no suffix), each with
    ``#anchor`` where a section of the page holds the evidence; ``functions``: dotted names of the package functions
    that compute the evidence; ``command``: for ``not reproducible here``, a command (or a shell pipeline of
    commands) that would settle it. Templates are filled by :func:`shapley.companion.verdicts.fill`.
    """

    id: str
    where: str
    group: str
    statement: str
    quote: str = ""
    verdict: str | Rule
    reason: str
    note: str
    proved: str = ""
    readings: tuple[Reading, ...] | Callable[[], tuple[Reading, ...]] = ()
    evidence: tuple[str, ...]
    functions: tuple[str, ...] = ()
    command: str = ""

    @property
    def anchor(self) -> str:
        """The HTML id of this claim's row on the claims page: ``claim-<id>``."""
        return f"claim-{self.id}"

    def decide(self, facts: Facts) -> str:
        """The verdict: the rule's on ``facts``, or the fixed one."""
        return self.verdict if isinstance(self.verdict, str) else self.verdict(facts)

    def all_readings(self) -> tuple[Reading, ...]:
        """The readings, computed where a function gives them."""
        return self.readings() if callable(self.readings) else self.readings
