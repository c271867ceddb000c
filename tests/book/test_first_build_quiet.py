"""A first build of the book looks like every later one: loading a GGUF model while the model cache is empty
draws no progress bar on stderr (issue 18, item 12)."""

from __future__ import annotations

import io

from shapley.pipeline.generate import models


def test_gguf_conversion_bar_is_silenced_and_restored():
    from transformers import modeling_gguf_pytorch_utils as gguf

    def drawn() -> str:
        err = io.StringIO()
        for _ in gguf.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...", file=err):
            pass
        return err.getvalue()

    original = gguf.tqdm
    assert "Converting" in drawn()  # the check can fail: transformers does draw it
    with models.quiet_gguf_conversion():
        assert drawn() == ""
    assert gguf.tqdm is original and "Converting" in drawn()
