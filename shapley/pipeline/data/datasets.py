"""Dataset loaders and few-shot prompt templates (pipeline stage 1: data -> generate).

Every loader returns ``list[QARecord]`` with the full model input in ``prompt``. The entry point is
:func:`dataset_records`; :data:`DATASETS` lists the names it accepts.

Where the data comes from (``source``)
--------------------------------------
* ``"local"``: a file on disk. The file is ``path`` when given, else
  ``shapley.pipeline.rundir.settings.data_dir()`` joined with the file name in :data:`LOCAL_FILES` (the files
  described in ``../shared/data/SOURCES.md``).
* ``"online"``: the Hugging Face ``datasets`` library with the usual hub ids (:data:`ONLINE_SOURCES`).
  BioASQ has no official hub copy (registration on bioasq.org is required): it is local-only.
  The generic ``"jsonl"`` format is local-only too. Without network the hub client retries for ~25 s before
  :class:`DatasetUnavailableError` (naming the local-file alternative); ``HF_HUB_OFFLINE=1`` fails at once.
* ``"auto"`` (default): local when the file exists, else online. A ``path`` that does not exist is an error,
  never a silent fallback to the network.

Prompt templates (Appendix B of the paper: introduction, r examples formatted like the target, then the
target question followed by ``"A:"``; the reference answer is never part of the prompt)
-------------------------------------------------------------------------------------------------------
* TriviaQA, NQ-Open, BioASQ and context-free JSONL (closed book): the paper's TriviaQA introduction
  ``"Answer the question as following examples."``, ``"Examples:"``, r ``Q:``/``A:`` pairs, the target ``Q:``.
* CoQA: the paper's introduction ``"Reading the passage and answer given questions accordingly."``,
  ``"Passage: <story>"``, ``"Examples:"`` and up to r earlier turns of the same conversation, then the target.
* SQuAD and JSONL with ``context`` (open book): an introduction in our own words; each example carries its own
  passage (``Passage:``/``Q:``/``A:`` blocks separated by blank lines), then the target passage and question.
* WMT-14 fr->en: no introduction; ``"Q: What is the English translation of the following sentence? <fr>"``
  then ``"A: <en>"`` for every example, and the target's ``Q:`` line.
* SVAMP: a short instruction in our own words asking for the final number, then Q/A examples.
With ``n_shots=0`` the prompt holds no examples (and a zero-shot introduction where the paper's wording refers
to examples).

Few-shot examples, evaluation records and ``seed``
--------------------------------------------------
The items of a dataset are permuted with ``numpy.random.default_rng(seed)``. The first items of the
permutation form the example pool: r = ``n_shots`` examples, shared by every prompt of the dataset. Pool items
are never evaluated, and for SQuAD (and JSONL with context) the whole passage of an example is withheld from
evaluation, so that no evaluated question shares a passage with an example. The remaining items, in permuted
order, are the evaluation records; ``limit`` keeps the first ``limit`` of them. Same arguments -> same records
and identical prompts.

CoQA is the one exception, by the nature of the dataset: its questions are turns of a conversation about one
story ("what did he do next?"), and the paper's examples are "question-answer pairs related to the given
passage". The examples of turn t are therefore the (at most r) turns immediately before t in the same
story, with their gold answers -- the conversation history, as in Kuhn et al. (2023), whose set-up the paper
follows. Those earlier turns are themselves evaluated as separate records; the target turn's own answer never
appears in its prompt. The permutation only decides the order of the records (and so what ``limit`` keeps).

Per-dataset notes
-----------------
* TriviaQA, local: ``triviaqa_llama13b_samples.jsonl.gz`` (500 rc.nocontext validation questions) with its
  single reference ``answer``; online: ``answer.value`` plus its ``aliases``. The file's real LLaMA-13B
  samples are scored with ``score-samples --reference-field answer``
  (:func:`shapley.pipeline.data.samples.read_samples_file`).
* CoQA: each question of each story is a record, id ``<story id>_<turn id>``, context = story,
  references = the answer plus the ``additional_answers`` of the same turn (deduplicated); ``"unknown"``
  answers are kept.
* SQuAD v1.1: context = paragraph, references = every annotated answer text (deduplicated).
* NQ-Open: references = the answer aliases; id ``nq_open_<line index>`` (the file has no ids).
* SVAMP: question = ``Body + " " + Question``; reference = the answer as a number string
  (``51.0`` -> ``"51"``).
* BioASQ: closed book (no snippets/context are given to the model). Only questions with an ``exact_answer``
  (factoid, list, yes/no; summaries have none). Factoid: every synonym of every candidate is a reference.
  List: one reference, the first synonym of each item joined by ``", "`` (naming one item is not the answer).
  Yes/no: ``"yes"`` or ``"no"``.
* WMT-14 fr->en: local JSONL lines ``{"id"?, "fr", "en"}`` or ``{"translation": {"fr", "en"}}``.
* Generic JSONL: lines ``{"id", "question", "references": [...], "context"?}``; blank lines are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shapley.pipeline.data.files import HUB_CONVERTERS, LOCAL_PARSERS, DatasetUnavailableError, Item, check_input_file
from shapley.pipeline.rundir.records import QARecord
from shapley.pipeline.rundir.settings import data_dir

#: file name of each dataset inside ``shapley.pipeline.rundir.settings.data_dir()`` (None: no default file).
LOCAL_FILES: dict[str, str | None] = {
    "triviaqa": "triviaqa_llama13b_samples.jsonl.gz",  # also holds real LLaMA-13B samples of each question
    "coqa": "coqa_test.json.gz",
    "wmt14": "wmt14_fr-en_test.jsonl",
    "squad": "squad_v1.1_dev.json.gz",
    "bioasq": "bioasq_9b-11b_golden.json.gz",
    "nq_open": "nq_open_dev.jsonl",
    "svamp": "svamp.json",
    "jsonl": None,
}
#: the dataset names :func:`dataset_records` accepts
DATASETS = tuple(LOCAL_FILES)

#: ``datasets.load_dataset`` arguments per dataset: (hub id, config name, splits).
ONLINE_SOURCES: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    "triviaqa": ("mandarjoshi/trivia_qa", "rc.nocontext", ("validation",)),
    "coqa": ("stanfordnlp/coqa", None, ("validation",)),
    "wmt14": ("wmt/wmt14", "fr-en", ("test",)),
    "squad": ("rajpurkar/squad", None, ("validation",)),
    "nq_open": ("google-research-datasets/nq_open", "nq_open", ("validation",)),
    "svamp": ("ChilleD/SVAMP", None, ("train", "test")),
}

BIOASQ_URL = "http://participants-area.bioasq.org/datasets/"

# Template strings. The CoQA and TriviaQA introductions and the WMT question are the paper's (Appendix B).
INTRO_COQA = "Reading the passage and answer given questions accordingly."
INTRO_CLOSED_BOOK = "Answer the question as following examples."
INTRO_CLOSED_BOOK_ZERO_SHOT = "Answer the question."
INTRO_OPEN_BOOK = "Read each passage and answer its question with a short span, like in the examples."
INTRO_OPEN_BOOK_ZERO_SHOT = "Read the passage and answer the question with a short span."
INTRO_SVAMP = "Solve each math word problem. Reply with the final number only."


# ----------------------------------------------------------------------------------- online sources
def _local_hint(name: str) -> str:
    return (
        f"use a local copy instead: dataset_records({name!r}, source='local', path=...) or put it at "
        f"SHAPLEY_DATA_DIR/{LOCAL_FILES[name]}; see ../shared/data/SOURCES.md"
    )


def _fetch_hub_rows(name: str) -> list[dict[str, Any]]:
    """Download the split(s) of ``ONLINE_SOURCES[name]`` with ``datasets`` and return plain row dicts."""
    hub_id, config, splits = ONLINE_SOURCES[name]
    try:
        import datasets  # heavy and optional: only for online loading
    except ImportError as e:
        raise DatasetUnavailableError(
            f"online loading of {name!r} needs the 'datasets' package (pip install datasets); or {_local_hint(name)}"
        ) from e
    split = "+".join(splits)  # the splits concatenated in order ("train+test"), as datasets reads them
    try:
        ds = datasets.load_dataset(hub_id, config, split=split)
    except Exception as e:  # network, hub and cache errors all surface here
        raise DatasetUnavailableError(
            f"could not load {name!r} from the Hugging Face hub "
            f"({hub_id}, config={config}, split={split}): "
            f"{type(e).__name__}: {e}. Offline? {_local_hint(name)}"
        ) from e
    return [dict(r) for r in ds]


def _load_online(name: str) -> list[Item]:
    if name == "bioasq":
        raise DatasetUnavailableError(
            "BioASQ has no official copy on the Hugging Face hub: register at "
            f"{BIOASQ_URL} to download the task B golden test batches, then load them with "
            "dataset_records('bioasq', source='local', path=...) or put them at "
            f"SHAPLEY_DATA_DIR/{LOCAL_FILES['bioasq']} (BioASQ JSON: questions[].body/type/exact_answer)"
        )
    if name == "jsonl":
        raise ValueError("the generic 'jsonl' dataset is local-only: pass path=... to a JSON-lines file")
    return list(HUB_CONVERTERS[name](_fetch_hub_rows(name), ONLINE_SOURCES[name][0]))


# ------------------------------------------------------------------------------------ path resolution
def local_path(name: str, path: str | os.PathLike[str] | None = None) -> Path | None:
    """Where the local file of ``name`` would be read from (it may not exist); None when none is configured.

    Order: ``path`` argument, ``data_dir() / LOCAL_FILES[name]``.
    """
    if path is not None:
        return Path(path)
    fname = LOCAL_FILES[name]
    if fname is None:
        return None
    try:
        return data_dir() / fname
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------------------------------- prompts
def _qa_lines(question: str, answer: str | None) -> list[str]:
    return [f"Q: {question}", "A:" if answer is None else f"A: {answer}"]


def _qa_prompt(head: list[str], examples: Sequence[Item], target: Item) -> str:
    """The ``head`` lines (an introduction, a passage), ``Examples:`` where there are both a head and examples,
    a ``Q:``/``A:`` pair per example, then the target's ``Q:`` and an open ``A:``."""
    lines = [*head, *(["Examples:"] if head and examples else [])]
    for ex in examples:
        lines += _qa_lines(ex.question, ex.references[0])
    return "\n".join(lines + _qa_lines(target.question, None))


def _open_book_prompt(examples: Sequence[Item], target: Item) -> str:
    def block(item: Item, answer: str | None) -> str:
        head = [f"Passage: {item.context}"] if item.context else []
        return "\n".join(head + _qa_lines(item.question, answer))

    intro = INTRO_OPEN_BOOK if examples else INTRO_OPEN_BOOK_ZERO_SHOT
    parts = [intro + ("\nExamples:" if examples else "")]
    parts += [block(ex, ex.references[0]) for ex in examples]
    parts.append(block(target, None))
    return "\n\n".join(parts)


def _prompt_for(name: str, examples: Sequence[Item], target: Item) -> str:
    """The prompt of ``target`` with its few-shot ``examples`` (CoQA: the earlier turns of its story)."""
    if name == "squad" or (name == "jsonl" and target.context):
        return _open_book_prompt(examples, target)
    if name == "coqa":
        return _qa_prompt([INTRO_COQA, f"Passage: {target.context}"], examples, target)
    if name == "wmt14":
        return _qa_prompt([], examples, target)
    if name == "svamp":
        return _qa_prompt([INTRO_SVAMP], examples, target)
    return _qa_prompt([INTRO_CLOSED_BOOK if examples else INTRO_CLOSED_BOOK_ZERO_SHOT], examples, target)


# -------------------------------------------------------------------------------- split and build
def _split_pool(shuffled: Sequence[Item], n_shots: int) -> tuple[list[Item], list[Item]]:
    """The permuted items -> (the first r examples from distinct groups, the evaluation items outside those
    groups, in permuted order)."""
    pool: list[Item] = []
    used_groups: set[str] = set()
    for it in shuffled:
        if len(pool) == n_shots:
            break
        g = it.group if it.group is not None else f"id:{it.id}"
        if g in used_groups:
            continue
        pool.append(it)
        used_groups.add(g)
    if len(pool) < n_shots:
        raise ValueError(f"only {len(pool)} distinct examples available, fewer than n_shots={n_shots}")
    pool_ids = {it.id for it in pool}
    evaluated = [it for it in shuffled if it.id not in pool_ids and (it.group is None or it.group not in used_groups)]
    if not evaluated:
        raise ValueError(
            f"no evaluation records left after reserving n_shots={n_shots} examples from {len(shuffled)} items"
        )
    return pool, evaluated


def _build_records(name: str, items: Sequence[Item], n_shots: int, seed: int, limit: int | None) -> list[QARecord]:
    if not items:
        raise ValueError(f"{name}: the source holds no usable records")
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"{name}: duplicate record id {dup!r}")
    shuffled = [items[int(i)] for i in np.random.default_rng(seed).permutation(len(items))]
    if name == "coqa":
        by_story: dict[str, list[Item]] = {}
        for it in items:
            by_story.setdefault(it.group or "", []).append(it)
        history: dict[str, list[Item]] = {}
        for turns in by_story.values():
            turns.sort(key=lambda t: t.turn or 0)
            for k, it in enumerate(turns):
                history[it.id] = turns[max(0, k - n_shots) : k]
        pairs = [(it, history[it.id]) for it in shuffled]
    else:
        pool, evaluated = _split_pool(shuffled, n_shots)
        pairs = [(it, pool) for it in evaluated]
    if limit is not None:
        pairs = pairs[:limit]
    return [
        QARecord(
            id=it.id,
            dataset=name,
            question=it.question,
            references=it.references,
            prompt=_prompt_for(name, examples, it),
            context=it.context,
        )
        for it, examples in pairs
    ]


def _load_items(name: str, source: str, path: str | os.PathLike[str] | None) -> list[Item]:
    if source == "online":
        if path is not None:
            raise ValueError("path is for local files; drop it or use source='local'/'auto'")
        return _load_online(name)
    file = local_path(name, path)
    if file is not None and file.is_file():
        return list(LOCAL_PARSERS[name](file))
    if path is not None:
        check_input_file(path, f"{name}: local file")
    if name == "jsonl":
        raise ValueError("the generic 'jsonl' dataset needs path=... to a JSON-lines file")
    if source == "local":
        tried = str(file) if file is not None else f"SHAPLEY_DATA_DIR/{LOCAL_FILES[name]} (no data folder found)"
        raise FileNotFoundError(
            f"{name}: no local file at {tried}; pass path=..., set SHAPLEY_DATA_DIR, or use source='online'"
        )
    return _load_online(name)


def dataset_records(
    name: str,
    *,
    limit: int | None = None,
    n_shots: int = 5,
    seed: int = 0,
    source: str = "auto",
    path: str | os.PathLike[str] | None = None,
) -> list[QARecord]:
    """Load dataset ``name`` (one of :data:`DATASETS`) as prompted :class:`QARecord` objects.

    ``n_shots``: r few-shot examples per prompt (CoQA: at most r earlier turns). ``seed``: the permutation
    that picks the example pool and orders the evaluation records. ``limit``: keep the first ``limit``
    evaluation records (None: all). ``source``: "auto" | "local" | "online"; ``path``: a local file (see
    module docs). Returns the evaluation records only; the examples never appear among them (CoQA: see
    module docs). The arguments are a run's data settings, checked when they were built
    (:class:`shapley.pipeline.config.DataSettings`); only the dataset's name is checked here."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    return _build_records(name, _load_items(name, source, path), n_shots, seed, limit)
