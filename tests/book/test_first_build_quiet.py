"""A first build of the book looks like every later one, and its log holds only what matters: loading a GGUF model
while the model cache is empty draws no progress bar on stderr (issue 18, item 12); no colour codes and no kernel
notes (issue 32), no parser configuration (issue 40)."""

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


def test_the_logs_have_no_colour_codes_kernel_tcp_notes_or_parser_configuration():
    """Issue 32: the book log held ANSI colour codes and one "[IPKernelApp] WARNING | Kernel is running over TCP
    without encryption" line per page; issue 40: `make notebooks` printed the same note 14 times, and the book log
    dumped MyST's and MyST-NB's whole parser configuration. scripts/build_book.sh and `make notebooks` both filter
    their output through scripts/clean_log.sed."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert "| clean_log" in (root / "scripts" / "build_book.sh").read_text(encoding="utf-8")
    assert "sed -u -E -f scripts/clean_log.sed" in (root / "Makefile").read_text(encoding="utf-8")
    log = (
        "\x1b[01mreading sources... \x1b[39;49;00m[ 50%] notebooks/psd\n"
        "[IPKernelApp] WARNING | Kernel is running over TCP without encryption. All communication (...)\n"
        "myst v3.0.1: MdParserConfig(commonmark_only=False, gfm_only=False)\n"
        "myst-nb v1.4.0: NbParserConfig(custom_formats={}, metadata_key='mystnb')\n"
        "\x1b[91mWARNING: a real warning\x1b[39;49;00m\n"
    )
    out = subprocess.run(
        ["sed", "-u", "-E", "-f", str(root / "scripts" / "clean_log.sed")],
        input=log,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "reading sources... [ 50%] notebooks/psd\nWARNING: a real warning\n"


def test_build_book_refuses_a_book_clean_value_other_than_0_or_1():
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        ["bash", str(root / "scripts" / "build_book.sh")],
        env={"PATH": "/usr/bin:/bin", "BOOK_CLEAN": "yes"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "BOOK_CLEAN=yes" in proc.stderr and proc.stdout == ""
