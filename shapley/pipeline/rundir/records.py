"""Record types passed between the pipeline stages (data -> generate -> entail -> score -> report).

Plain dataclasses stored as JSON (``to_dict``; a generation is read back with ``Generation.from_dict``): no pickle
anywhere.

Hidden states (for the embedding-regression method ER) are the one array-valued output: they are kept out of
the JSON records and stored in ``.npz`` files beside them (:func:`save_hidden_states`), one file per stored
chunk, each vector referenced from its JSON record by file name, row and the SHA-256 of its bytes, and read
back only after that checksum matched (:class:`HiddenStateReader`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from shapley.results.records import write_files

#: key of the hidden-state reference in a stored generation record
HIDDEN_KEY = "hidden_state"
#: folder of a run directory that holds the hidden-state ``.npz`` files
HIDDEN_DIR = "hidden"


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
        """JSON-ready fields (``references`` a tuple, written as a JSON list)."""
        return asdict(self)


@dataclass
class Generation:
    """What the generation stage produces for one question.

    ``samples``: n sampled answers (cleaned text). ``sample_token_logprobs[k]`` holds the log-probability
    (nats) of each generated token of sample k, ``sample_token_entropies[k]`` the entropy (nats) of the
    next-token distribution at each step. ``answer`` is the most-likely (greedy) answer whose
    correctness is judged. ``p_true`` is the model's probability of "True" for ``answer`` under the
    p(True) prompt; ``a4c_text`` is its raw reply to the ask-for-confidence prompt. ``hidden``: the
    model's final-layer hidden state at the answer's last kept token (shape (d,), float16; the prompt's
    last token for an empty answer), or ``None``; it is not part of :meth:`to_dict` (stored in ``.npz``
    files, see :func:`save_hidden_states`).
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
    hidden: np.ndarray | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``hidden`` left out: it goes to an ``.npz`` file)."""
        d = asdict(replace(self, hidden=None))
        del d["hidden"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Generation:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def vector_sha256(vector: np.ndarray) -> str:
    """SHA-256 (hex) of a vector's float16 little-endian bytes."""
    return hashlib.sha256(np.ascontiguousarray(vector, dtype="<f2").tobytes()).hexdigest()


def check_hidden_dir(run_dir: str | os.PathLike[str]) -> None:
    """Check, before anything is discarded or written, that ``run_dir/hidden`` is absent or a readable folder inside
    the run directory; ``ValueError`` naming it otherwise: a dangling link (storage that is not mounted), a link
    out of the run directory (never followed), a file of that name, or a folder that cannot be listed. Nothing
    is changed, so the generation records that point into it are kept."""
    run = Path(run_dir)
    d = run / HIDDEN_DIR
    keep = "the generation records that point into it are kept"
    if d.is_symlink():
        target = Path(os.path.realpath(d))
        if not target.exists():
            raise ValueError(
                f"{d} is a symbolic link to {os.readlink(d)}, which does not exist (storage not mounted?); {keep}: "
                "mount it or put the folder back, then resume"
            )
        if run.resolve() not in target.parents:
            raise ValueError(
                f"{d} is a symbolic link to {target}, outside the run directory; it is not followed and {keep}: "
                "replace the link by a copy of the folder"
            )
    if not os.path.lexists(d):
        return
    if not d.is_dir():
        raise ValueError(f"{d} is not a folder (a file of that name?); {keep}: move it aside, then resume")
    try:
        os.listdir(d)
    except OSError as exc:
        raise ValueError(f"{d}: cannot read the folder ({exc.strerror or exc}); {keep}") from exc


def save_hidden_states(
    run_dir: str | os.PathLike[str], ids: Sequence[str], vectors: Sequence[np.ndarray]
) -> list[dict[str, Any]]:
    """Write the vectors of one chunk (one per id, at least one) to ``run_dir/hidden/<digest>.npz`` atomically;
    return the reference each generation record stores: ``{"file", "row", "sha256", "dim"}``.

    The file holds ``ids`` (strings) and ``hidden`` (m, d) float16; its name is derived from the ids and the
    vector bytes, so a redone chunk never overwrites the file of another chunk. Written (temp file, fsync,
    rename) before the JSON records that point to it are appended."""
    matrix = np.stack([np.asarray(v, dtype=np.float16).ravel() for v in vectors])
    digest = hashlib.sha256("\x1f".join(ids).encode("utf-8") + matrix.astype("<f2").tobytes()).hexdigest()[:24]
    name = f"{HIDDEN_DIR}/{digest}.npz"
    path = Path(run_dir) / name
    check_hidden_dir(run_dir)  # before the first byte: no write through a link out of the run or onto a file
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        raise ValueError(f"{path} is a symbolic link; a hidden-state file is never written through one: remove it")
    buf = io.BytesIO()
    np.savez(buf, ids=np.array(list(ids), dtype=str), hidden=matrix)
    write_files({path: buf.getvalue()})  # a failure (e.g. a full disk) names the file, leaves nothing
    return [{"file": name, "row": i, "sha256": vector_sha256(v), "dim": matrix.shape[1]} for i, v in enumerate(matrix)]


class HiddenStateReader:
    """Reads referenced vectors, opening each ``.npz`` file once; ``None`` for a missing or damaged one (not a
    readable ``.npz``, e.g. truncated; not an (m, d) float16 matrix whose d is the reference's ``dim``; a row
    of another id; bytes that do not match the reference's checksum)."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)
        self._files: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}

    def _open(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The ids and (m, d) float16 matrix of the file ``name`` (None: outside the run directory, missing, not a
        readable ``.npz`` or not of that layout)."""
        if name not in self._files:
            self._files[name] = None
            if Path(name).is_absolute() or ".." in Path(name).parts:
                return None  # a reference outside the run directory
            f = self.run_dir / name
            if f.is_symlink() and self.run_dir.resolve() not in Path(os.path.realpath(f)).parents:
                return None  # a link out of the run directory is never followed
            try:
                opened = open(f, "rb")  # noqa: SIM115 (closed below)
            except (FileNotFoundError, IsADirectoryError):
                return None  # missing: the record is redone
            except OSError as exc:  # unreadable (permissions, an I/O error): refused, nothing discarded
                raise ValueError(
                    f"{f}: cannot read the hidden-state file ({exc.strerror or exc}); nothing is discarded"
                ) from exc
            with opened, contextlib.suppress(OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
                with np.load(opened, allow_pickle=False) as z:
                    ids, matrix = np.asarray(z["ids"]), np.asarray(z["hidden"])
                if matrix.ndim == 2 and matrix.shape[0] == len(ids) and matrix.dtype == np.float16:  # not (m, d, 1)
                    self._files[name] = (ids, matrix)
        return self._files[name]

    def get(self, record_id: str, ref: Any) -> np.ndarray | None:
        """The vector (float16, shape (d,)) referenced by ``ref`` for ``record_id``, if present and intact."""
        if not isinstance(ref, Mapping) or not isinstance(ref.get("file"), str) or not isinstance(ref.get("row"), int):
            return None
        content = self._open(ref["file"])
        if content is None:
            return None
        ids, matrix = content
        row = ref["row"]
        if matrix.shape[1] != ref.get("dim") or not 0 <= row < len(ids) or str(ids[row]) != str(record_id):
            return None
        vector = matrix[row]
        return vector if vector_sha256(vector) == ref.get("sha256") else None
