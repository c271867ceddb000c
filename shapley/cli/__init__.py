"""Command line: ``python -m shapley run | score-samples | merge | report | beta-sweep``.

* ``run``: the whole experiment, data -> generate -> entail -> score -> metrics, into a resumable run directory.
* ``score-samples``: score answers generated elsewhere (JSON lines, optionally .gz).
* ``merge``: join the K shard directories of a run split with ``--shard I/K`` into one run directory.
* ``report``: AUROC tables across run directories (markdown + CSV).
* ``beta-sweep``: Table 5's beta ablation recomputed from a run's stored entailment matrices.

Exit status: 0 on success; 2 for bad arguments, input or environment (one line naming the option, file and line:
a field out of range, a full disk, a run directory in use, a device that is not there); 1 only for a bug (one
line too; ``SHAPLEY_DEBUG=1`` shows its traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shapley.cli.args import build_parser, config_from_args
from shapley.pipeline.config import NO_CACHE


def _run(a: argparse.Namespace, argv: list[str]) -> None:
    """``run`` and ``score-samples``: the device and the entailment cache checked, then the run."""
    from shapley.pipeline.entail.cache import check_cache_path
    from shapley.pipeline.experiment import pipelines as experiment

    config = config_from_args(a)
    if config.runtime.device is not None:  # before anything is read or written
        from shapley.pipeline.generate.models import check_device

        check_device(config.runtime.device)
    cache = config.runtime.entail_cache_arg()
    if isinstance(cache, str):  # before generation, not when the entailment stage opens it
        check_cache_path(Path(cache))
    elif cache:  # the shared cache's folder (SHAPLEY_CACHE_DIR), likewise
        from shapley.pipeline.rundir.settings import cache_dir

        cache_dir()
    start = experiment.run_experiment if config.command == "run" else experiment.score_samples
    _print_summary(start(config, a.output, argv=argv))


def _print_summary(path: Path) -> None:
    from shapley.pipeline.evaluate.metrics import load_skipped
    from shapley.pipeline.evaluate.report import load_metrics, markdown_table

    m = load_metrics(path)
    sk = load_skipped(path)
    cols = ["method", "auroc", "auroc_lo", "auroc_hi", "n", "accuracy"]
    print(f"run directory: {path}")
    print(markdown_table(m[cols]))
    if len(m) and m["accuracy"].isin([0.0, 1.0]).all():
        verdict = "correct" if m["accuracy"].iloc[0] == 1.0 else "incorrect"
        print(f"note: all judged answers are {verdict}: AUROC and PRR are undefined (NaN)")
    for _, r in sk.iterrows():
        print(f"note: {r['method']} skipped on {r['n_skipped']} of {r['n_questions']} questions: {r['reason']}")


def _merge(a: argparse.Namespace, argv: list[str]) -> None:
    from shapley.pipeline.experiment import merge

    _print_summary(merge.merge_runs(a.shard_dirs, a.output, argv=argv))


def _report(a: argparse.Namespace, argv: list[str]) -> None:
    from shapley.pipeline.evaluate import report

    md = report.report(a.run_dirs, a.output)
    if a.output is None:
        print(md, end="")
    else:
        print("wrote " + " and ".join(str(f) for f in report.report_files(a.output)))


def _beta_sweep(a: argparse.Namespace, argv: list[str]) -> None:
    from shapley.pipeline.evaluate.metrics import write_beta_sweep
    from shapley.pipeline.evaluate.report import markdown_table

    summary, paths = write_beta_sweep(a.run_dir, n_boot=a.n_boot)  # the grid of Table 5
    print(markdown_table(summary, digits=5))
    print("wrote " + " and ".join(str(f) for f in paths))


_COMMANDS = {"run": _run, "score-samples": _run, "merge": _merge, "report": _report, "beta-sweep": _beta_sweep}
"""What each subcommand runs, given its parsed arguments and its whole command line (recorded by a run)."""

_PATH_ARGS = {  # command -> (dest, how the message names it) of every argument that is a path
    "run": (("output", "--output"), ("data.path", "--data-path"), ("runtime.entail_cache", "--entail-cache")),
    "score-samples": (("input", "FILE.jsonl"), ("output", "--output"), ("runtime.entail_cache", "--entail-cache")),
    "merge": (("shard_dirs", "SHARD_DIR"), ("output", "--output")),
    "report": (("run_dirs", "DIR"), ("output", "--output")),
    "beta-sweep": (("run_dir", "DIR"),),
}


def _check_paths(a: argparse.Namespace) -> None:
    """Path arguments, checked before anything is read or written (``ValueError`` naming the argument).

    A path must be valid UTF-8 (run directories record their paths in JSON); the entries of a list of
    directories must be distinct. (An input file that is a pipe is refused by its reader,
    :func:`shapley.pipeline.data.files.check_input_file`, before the run directory is made.)
    """
    for dest, name in _PATH_ARGS[a.command]:
        value = getattr(a, dest)
        paths = [] if value is None or value == NO_CACHE else [value] if isinstance(value, str) else list(value)
        for p in paths:
            try:
                p.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(
                    f"{name} {os.fsencode(p)!r} is not valid UTF-8; run directories record their paths as UTF-8 "
                    "JSON, so rename it (or use a link with a UTF-8 name)"
                ) from None
        if name != "SHARD_DIR":  # merge refuses a repeated shard itself, naming the shard (I/K)
            _distinct_paths(paths, name)


def _check_outputs(a: argparse.Namespace) -> None:
    """``report --output`` files, checked before anything is read or written (``ValueError`` naming the option):
    never a file of a run directory the command reads, never a folder, pipe or device (a link is written through to
    its target, which must be a regular file or new, in an existing folder). The report creates its own folder."""
    if a.command != "report" or a.output is None:
        return
    from shapley.pipeline.evaluate.report import report_files

    read_dirs = {Path(os.path.realpath(d)) for d in a.run_dirs}
    for f in report_files(a.output):
        real = Path(os.path.realpath(f))
        if f.is_symlink() and not real.parent.is_dir():
            raise ValueError(f"--output {f} is a link to {real}, whose folder does not exist")
        if real.exists() and not real.is_file():
            kind = "a directory" if real.is_dir() else "a pipe, socket or device"
            raise ValueError(f"--output {f} is {kind}, not a regular file; it is not replaced: give a file name")
        if real.parent in read_dirs:
            raise ValueError(
                f"--output {f} is in the run directory {real.parent} being read; the command never writes there "
                "(it could replace the run's own files): write it outside the run directory"
            )


def _distinct_paths(paths: list[str], name: str) -> None:
    seen: dict[str, str] = {}
    for p in paths:
        key = os.path.realpath(p)
        if key in seen:
            again = "" if seen[key] == p else f" (as {seen[key]!r} and {p!r})"
            raise ValueError(f"{name}: {p!r} is given twice{again}; each entry must be distinct")
        seen[key] = p


def _show_warning(message: Warning | str, *where: Any, **_: Any) -> None:
    """Warnings as one line, ``warning: <message>`` on stderr, without the source path and code line (``where``:
    the category, file, line and code that :func:`warnings.showwarning` passes besides the message)."""
    print(f"warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status. Warnings print as one line each (``warning: ...``)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    a = parser.parse_args(args_list)  # a value that starts with '-' is given as --option=-1/2
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            _check_paths(a)
            _check_outputs(a)
            _COMMANDS[a.command](a, ["python", "-m", "shapley", *args_list])
            return 0
        except (ValueError, OSError, RuntimeError) as exc:
            # bad input or environment: a file, a full disk, a run directory in use, a model that is not available
            print("error: " + " ".join(str(exc).split()), file=sys.stderr)
            return 2
        except Exception as exc:  # a bug: one line, never a traceback (SHAPLEY_DEBUG=1 shows it)
            if os.environ.get("SHAPLEY_DEBUG"):
                raise
            print(f"error: internal error (a bug; please report it): {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
