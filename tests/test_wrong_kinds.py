"""Issue 17, general rule: inputs of the wrong *kind* are refused everywhere, naming the argument.

The walk covers every public callable of the maths API (what ``shapley`` re-exports and every module of
``shapley.core`` except the validation layer itself and the internal ``..._checked`` helpers, which take checked
inputs, classes' public methods included) and every list argument
of the command line. A public function or list argument that is missing from the tables below fails the walk,
so a new one cannot be added without saying what its valid inputs are.

Decisions the walk pins (documented in :mod:`shapley.core.validate`): a boolean array is refused where real
numbers are meant (only labels such as ``correct`` take booleans); an integer parameter refuses floats, even
``2.0``; a flag refuses ``0``/``1``.
"""

from __future__ import annotations

import datetime
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import shapley
import shapley.core
from shapley import cli
from shapley.cli import args as cli_args

# --------------------------------------------------------------------------------------------------
# Valid example arguments


P2 = np.array([[1.0, 0.8], [0.6, 1.0]])
R2 = np.array([[1.0, 0.5], [0.5, 1.0]])
W3 = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.2], [0.1, 0.2, 1.0]])
U4 = np.array([0.1, 0.2, 0.8, 0.9])
U4B = np.array([0.3, 0.9, 0.2, 0.8])
C4 = np.array([True, True, False, False])
LL3 = np.log([0.5, 0.4, 0.1])
X6 = np.array([[0.0], [0.2], [0.4], [1.6], [1.8], [2.0]])
Y6 = np.array([1, 1, 1, 0, 0, 0])


def _fitted() -> Any:
    return shapley.core.baselines.EmbeddingRegression().fit(X6, Y6)


# name -> (valid keyword arguments, {argument: kind}); a kind names a list of wrong-kind values below.
# "self" builds the object a method is called on.
TABLE: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    # shapley.core.entropy
    "gaussian_entropy": (
        {"R": R2, "psd_policy": "raise", "eps": 1e-6},
        {"R": "matrix", "psd_policy": "choice", "eps": "real"},
    ),
    "subset_entropies": (
        {"R": R2, "psd_policy": "raise", "eps": 1e-6},
        {"R": "matrix", "psd_policy": "choice", "eps": "real"},
    ),
    "game_shapley_values": ({"v": [0.0, 1.0, 1.0, 3.0]}, {"v": "vector"}),
    "shapley_values": (
        {"R": R2, "psd_policy": "raise", "eps": 1e-6},
        {"R": "matrix", "psd_policy": "choice", "eps": "real"},
    ),
    "shapley_uncertainty": (
        {"P": P2, "beta": 0.5, "psd_policy": "raise", "eps": 1e-6},
        {"P": "matrix", "beta": "real", "psd_policy": "choice", "eps": "real"},
    ),
    # shapley.core.kernel
    "correlation_matrix": ({"P": P2}, {"P": "matrix"}),
    "kernel_matrix": ({"C": R2, "beta": 0.5}, {"C": "matrix", "beta": "real"}),
    # shapley.core.psd
    "min_eigenvalue": ({"R": R2}, {"R": "matrix"}),
    "psd_tolerance": ({"R": R2}, {"R": "matrix"}),
    "is_psd": ({"R": R2}, {"R": "matrix"}),
    "is_singular": ({"R": R2}, {"R": "matrix"}),
    "paper_beta_bound": ({"n": 7}, {"n": "int"}),
    "gershgorin_beta_bound": ({"n": 7}, {"n": "int"}),
    "nearest_correlation": (
        {"R": R2, "eps": 1e-6, "max_iter": 5, "tol": 1e-10},
        {"R": "matrix", "eps": "real", "max_iter": "int", "tol": "real"},
    ),
    "ensure_psd": ({"R": R2, "policy": "raise", "eps": 1e-6}, {"R": "matrix", "policy": "choice", "eps": "real"}),
    # shapley.core.metrics
    "auroc": ({"uncertainty": U4, "correct": C4}, {"uncertainty": "vector", "correct": "labels"}),
    "auarc": ({"uncertainty": U4, "correct": C4}, {"uncertainty": "vector", "correct": "labels"}),
    "prr": ({"uncertainty": U4, "correct": C4}, {"uncertainty": "vector", "correct": "labels"}),
    "holm": ({"p_values": [0.01, 0.04]}, {"p_values": "vector"}),
    "accuracy": ({"uncertainty": U4, "correct": C4}, {"uncertainty": "vector", "correct": "labels"}),
    "bootstrap_interval": (
        {
            "metric": shapley.metrics.auroc,
            "uncertainty": U4,
            "correct": C4,
            "n_boot": 100,
            "alpha": 0.05,
            "seed": 0,
            "mcse": 0.01,
            "max_boot": 200,
        },
        {
            "metric": "function",
            "uncertainty": "vector",
            "correct": "labels",
            "n_boot": "int",
            "alpha": "real",
            "seed": "seed",
            "mcse": "real",
            "max_boot": "int",
        },
    ),
    "paired_interval": (
        {
            "metric": shapley.metrics.auroc,
            "u_a": U4,
            "u_b": U4B,
            "correct": C4,
            "n_boot": 100,
            "alpha": 0.05,
            "seed": 0,
            "mcse": 0.01,
            "max_boot": 200,
        },
        {
            "metric": "function",
            "u_a": "vector",
            "u_b": "vector",
            "correct": "labels",
            "n_boot": "int",
            "alpha": "real",
            "seed": "seed",
            "mcse": "real",
            "max_boot": "int",
        },
    ),
    "quantile_mcse": ({"samples": np.linspace(0.0, 1.0, 50), "q": 0.025}, {"samples": "vector", "q": "real"}),
    "round_scores": ({"scores": U4}, {"scores": "vector"}),
    "midranks": ({"x": U4}, {"x": "vector"}),
    "delong_test": ({"u_a": U4, "u_b": U4B, "correct": C4}, {"u_a": "vector", "u_b": "vector", "correct": "labels"}),
    # shapley.core.baselines
    "shannon_entropy": ({"p": np.array([0.5, 0.5])}, {"p": "vector"}),
    "likelihood_entropy": ({"log_likelihoods": LL3}, {"log_likelihoods": "vector"}),
    "predictive_entropy": ({"log_likelihoods": LL3}, {"log_likelihoods": "vector"}),
    "length_normalised_predictive_entropy": ({"token_logprobs": [LL3, LL3[:1]]}, {"token_logprobs": "ragged"}),
    "semantic_clusters": (
        {"entail": W3, "contradict": 1.0 - W3, "rule": "bidirectional", "threshold": 0.5},
        {"entail": "matrix", "contradict": "matrix_or_none", "rule": "choice", "threshold": "real"},
    ),
    "semantic_entropy": (
        {"log_likelihoods": LL3, "cluster_ids": [0, 0, 1]},
        {"log_likelihoods": "vector", "cluster_ids": "cluster_ids"},
    ),
    "discrete_semantic_entropy": ({"cluster_ids": [0, 0, 1]}, {"cluster_ids": "cluster_ids"}),
    "num_semantic_sets": ({"cluster_ids": [0, 0, 1]}, {"cluster_ids": "cluster_ids"}),
    "lexical_similarity": ({"texts": ["Paris", "Paris"]}, {"texts": "texts"}),
    "train_test_split_indices": (
        {"n": 6, "test_fraction": 0.5, "seed": 0},
        {"n": "int", "test_fraction": "real", "seed": "seed"},
    ),
    "EmbeddingRegression": ({}, {}),
    "EmbeddingRegression.fit": (
        {"self": shapley.core.baselines.EmbeddingRegression, "X_train": X6, "correct_train": Y6},
        {"X_train": "matrix", "correct_train": "labels"},
    ),
    "EmbeddingRegression.uncertainty": ({"self": _fitted, "X": X6[:2]}, {"X": "matrix"}),
    "selfcheck_maxl": ({"token_logprobs": LL3}, {"token_logprobs": "vector"}),
    "selfcheck_avgl": ({"token_logprobs": LL3}, {"token_logprobs": "vector"}),
    "selfcheck_maxe": ({"token_entropies": [0.1, 0.7]}, {"token_entropies": "vector"}),
    "selfcheck_avge": ({"token_entropies": [0.1, 0.7]}, {"token_entropies": "vector"}),
    "eigv": ({"W": W3}, {"W": "matrix"}),
    "degree": ({"W": W3}, {"W": "matrix"}),
    "eccentricity": ({"W": W3}, {"W": "matrix"}),
    "kernel_language_entropy": (
        {"W": W3, "t": 0.3, "normalisation": "trace"},
        {"W": "matrix", "t": "real", "normalisation": "choice"},
    ),
    "p_true_uncertainty": ({"p": 0.8}, {"p": "real"}),
    "confidence_reading": ({"text": "Confidence: 80%"}, {"text": "text"}),
}

# Public names that are not maths functions: result records and a warning category (they take no user input).
NOT_FUNCTIONS = {
    "PSDRepairWarning",
    "PSDReport",
    "DeLongResult",
    "BootstrapInterval",
    "PairedInterval",
}

# --------------------------------------------------------------------------------------------------
# Wrong-kind values


def _dates(shape: tuple[int, ...]) -> np.ndarray:
    return np.full(shape, np.datetime64("2024-01-01"))


def _wrong_arrays(valid: Any) -> list[Any]:
    a = np.asarray(valid, dtype=float)
    return [
        a.astype(complex) + 1j,  # complex
        a.astype(str),  # strings of digits, e.g. "0.5"
        a.astype(object),  # Python objects
        _dates(a.shape),  # datetimes
        a.astype(bool),  # booleans where real numbers are meant
        "0.5",  # a bare string
        None,
        {"a": 1},
    ]


INT_WRONG = [True, 2.0, 2.5, "3", float("inf"), float("nan"), None, 1j, [3]]
REAL_WRONG = [True, np.bool_(False), "0.5", None, 1j, [0.5], datetime.datetime(2024, 1, 1)]
SEED_WRONG = [True, 1.5, "0", float("nan"), [0]]
FLAG_WRONG = [1, 0, "false", None, 1.0]
CHOICE_WRONG = [1, None, ["raise"], b"raise", np.array(["raise"])]
FUNCTION_WRONG = ["auroc", None, 1]
TEXT_WRONG = [None, 1, b"x", ["a"]]
TEXTS_WRONG = ["one string", ["a", 1], [b"a", b"b"], None, np.array([1, 2])]


def wrong_values(kind: str, valid: Any) -> list[Any]:
    if kind.endswith("_or_none"):  # None is valid there
        return [v for v in wrong_values(kind.removesuffix("_or_none"), valid) if v is not None]
    if kind in ("matrix", "vector"):
        return _wrong_arrays(valid)
    if kind == "labels":
        n = len(valid)
        return [np.ones(n, complex), np.array(["True"] * n), _dates((n,)), np.array(["1"] * n), None, "True"]
    if kind == "cluster_ids":
        n = len(valid)
        return [np.zeros(n, complex), np.array(["0"] * n), _dates((n,)), np.zeros(n, bool), None, "001"]
    if kind == "ragged":
        return [[np.asarray(valid[0]).astype(complex)], [np.asarray(valid[0]).astype(str)], "text", None]
    table = {
        "int": INT_WRONG,
        "real": REAL_WRONG,
        "seed": SEED_WRONG,
        "flag": FLAG_WRONG,
        "choice": CHOICE_WRONG,
        "function": FUNCTION_WRONG,
        "text": TEXT_WRONG,
        "texts": TEXTS_WRONG,
    }
    return table[kind]


# --------------------------------------------------------------------------------------------------
# Discovery


def _core_modules() -> list[Any]:
    mods = [shapley]
    for info in pkgutil.walk_packages(shapley.core.__path__, "shapley.core."):
        if info.name != "shapley.core.validate":  # the validation layer itself
            mods.append(importlib.import_module(info.name))
    return mods


def public_callables() -> dict[str, Callable[..., Any]]:
    """Every public function and class of the maths API, and the public methods of its classes."""
    found: dict[str, Callable[..., Any]] = {}
    for mod in _core_modules():
        names = getattr(mod, "__all__", None) or [n for n in vars(mod) if not n.startswith("_")]
        names = [n for n in names if not n.endswith("_checked")]  # internal helpers (shapley.core.validate)
        for name in names:
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            if not getattr(obj, "__module__", "").startswith("shapley.core") or name in NOT_FUNCTIONS:
                continue
            found[obj.__qualname__] = obj
            if inspect.isclass(obj):
                for meth, fn in vars(obj).items():
                    if not meth.startswith("_") and inspect.isfunction(fn):
                        found[f"{obj.__qualname__}.{meth}"] = fn
    return found


PUBLIC = public_callables()


def test_every_public_maths_function_is_in_the_table():
    missing = sorted(set(PUBLIC) - set(TABLE))
    assert not missing, f"public maths functions without a wrong-kinds entry in tests/test_wrong_kinds.py: {missing}"
    assert not sorted(set(TABLE) - set(PUBLIC)), "table entries that are no longer public"
    assert len(PUBLIC) >= 40  # the walk found the API, not an empty list


def test_every_parameter_is_walked():
    for name, fn in PUBLIC.items():
        params = [p for p in inspect.signature(fn).parameters if p != "self"]
        _, kinds = TABLE[name]
        assert sorted(kinds) == sorted(params), f"{name}: parameters {params}, walked {sorted(kinds)}"


def _call(name: str, kwargs: dict[str, Any]) -> Any:
    fn = PUBLIC[name]
    kw = dict(kwargs)
    if "self" in kw:
        maker = kw.pop("self")
        return fn(maker(), **kw)
    return fn(**kw)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_valid_example_runs(name):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _call(name, TABLE[name][0])


CASES = [
    pytest.param(name, arg, k, id=f"{name}-{arg}-{k}")
    for name, (valid, kinds) in sorted(TABLE.items())
    for arg, kind in kinds.items()
    for k in range(len(wrong_values(kind, valid[arg])))
]


@pytest.mark.parametrize(("name", "arg", "k"), CASES)
def test_wrong_kind_is_a_value_error_naming_the_argument(name, arg, k):
    valid, kinds = TABLE[name]
    bad = wrong_values(kinds[arg], valid[arg])[k]
    with pytest.raises(ValueError) as e:
        _call(name, {**valid, arg: bad})
    message = str(e.value)
    assert re.search(rf"(?<![\w]){re.escape(arg)}(?![\w])", message), (
        f"{name}({arg}={bad!r}): the message does not name {arg!r}: {message}"
    )


# --------------------------------------------------------------------------------------------------
# The command line's list arguments


def _subparsers() -> dict[str, Any]:
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return dict(sub.choices)


def _is_list(action: Any) -> bool:
    return (
        action.nargs in ("+", "*")
        or (isinstance(action.nargs, int) and action.nargs > 1)
        or "comma-separated" in (action.help or "")
    )


def _flag(action: Any) -> str:
    return action.option_strings[0] if action.option_strings else action.metavar or action.dest


def list_arguments() -> set[tuple[str, str]]:
    return {(cmd, _flag(a)) for cmd, p in _subparsers().items() for a in p._actions if _is_list(a)}


# (command, argument) -> (the command line with {} where the list goes, wrong-kind lists, what names it)
_SS = ["score-samples", "in.jsonl", "--output", "out"]
_RUN = ["run", "--dataset", "triviaqa", "--output", "out"]
_METHODS_WRONG = [["Shap,Shap"], ["Shap,,SE"], ["Shap,3"], ["Shap, SE ,Shap"]]
CLI_TABLE: dict[tuple[str, str], tuple[list[str], list[list[str]], str]] = {
    ("score-samples", "--methods"): ([*_SS, "--methods", "{}"], _METHODS_WRONG, "--methods"),
    ("run", "--methods"): ([*_RUN, "--methods", "{}"], _METHODS_WRONG, "--methods"),
    ("report", "DIR"): (["report", "{}"], [["same", "same"], ["same", "./same"]], "DIR"),
    # merge names a repeated shard by its I/K (tests/pipeline/test_merge.py); here the directory is no run at all
    ("merge", "SHARD_DIR"): (["merge", "{}", "--output", "m"], [["same", "same"], ["same", "same/"]], "same"),
}


def test_every_cli_list_argument_is_in_the_table():
    found = list_arguments()
    assert found == set(CLI_TABLE), f"list arguments: {sorted(found)}; table: {sorted(CLI_TABLE)}"


CLI_CASES = [
    pytest.param(key, k, id=f"{key[0]}-{key[1]}-{k}")
    for key, (_, wrong, _) in CLI_TABLE.items()
    for k in range(len(wrong))
]


@pytest.mark.parametrize(("key", "k"), CLI_CASES)
def test_cli_list_argument_of_the_wrong_kind_exits_2_naming_it(key, k, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "same").mkdir()
    template, wrong, named = CLI_TABLE[key]
    i = template.index("{}")
    argv = [*template[:i], *wrong[k], *template[i + 1 :]]
    try:
        rc = cli.main(argv)
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2, (argv, err)
    assert named in err, (argv, err)
    assert not (tmp_path / "out").exists() and not (tmp_path / "m").exists()


# --------------------------------------------------------------------------------------------------
# Issue 17, general rule: a size that would run for minutes is refused with the limit named, or made fast


def test_gaussian_entropy_at_large_n_is_one_factorisation_and_agrees_with_slogdet():
    rng = np.random.default_rng(0)
    n = 300  # beyond EXACT_MAX_N: the Cholesky path (n = 2000 took 42 s through n Python-level steps)
    X = rng.normal(size=(n, n))
    R = X @ X.T / n + np.eye(n)
    _, logdet = np.linalg.slogdet(R)
    assert shapley.gaussian_entropy(R) == pytest.approx(n * shapley.HALF_LOG_2PIE + 0.5 * logdet, rel=1e-12)
    R[:, 1] = R[:, 0]
    R[1, :] = R[0, :]  # two identical answers: singular
    assert shapley.gaussian_entropy(R) == -np.inf
    with pytest.raises(ValueError, match="not positive semi-definite"):
        shapley.gaussian_entropy(np.eye(n) - 0.5)


@pytest.mark.parametrize(
    "call",
    [
        lambda R: shapley.shapley_values(R),
        lambda R: shapley.subset_entropies(R),
    ],
)
def test_exact_computations_at_large_n_name_the_limit(call):
    with pytest.raises(ValueError, match="EXACT_MAX_N = 22"):
        call(np.eye(shapley.EXACT_MAX_N + 1))


def test_huge_entries_are_not_reported_as_nan():
    top = np.finfo(np.float64).max
    R = np.eye(3) * top
    assert shapley.min_eigenvalue(R) == top and shapley.is_psd(R)  # was "not PSD, minimum eigenvalue nan"
    assert np.isfinite(shapley.gaussian_entropy(R))
    with pytest.raises(ValueError, match="overflow"):
        shapley.gaussian_entropy([[top, top], [top, -top]])


# Every numeric option of the command line reads ASCII decimal notation only (no inf, nan, 1_0 or other
# scripts' digits, which Python's float() and int() would accept).
NUMBER_WRONG = ["nan", "inf", "1_0", "\u0663", "0x10", "1e999", "½", " "]


def numeric_options() -> list[tuple[str, str]]:
    """Every option that reads a number: the numeric run settings (their readers carry the field's name) and
    beta-sweep's --n-boot."""
    from shapley.pipeline.config import GROUPS, RunConfig, field_kinds

    numbers = {
        n for c in (RunConfig, *GROUPS.values()) for n, (kind, _) in field_kinds(c).items() if kind in (int, float)
    }
    out = []
    for cmd, p in _subparsers().items():
        for a in p._actions:
            if a.option_strings and a.type is not None and a.type is not str:
                assert a.type not in (int, float), (
                    f"{cmd} {a.option_strings[0]}: builtin {a.type.__name__}() is lenient"
                )
                if getattr(a.type, "__name__", "") in numbers or a.type is cli_args.read_sweep_boot:
                    out.append((cmd, a.option_strings[0]))
    return out


def test_numeric_options_were_found():
    assert {("run", "--temperature"), ("score-samples", "--beta"), ("beta-sweep", "--n-boot")} <= set(numeric_options())


@pytest.mark.parametrize(("cmd", "flag"), numeric_options())
@pytest.mark.parametrize("value", NUMBER_WRONG)
def test_numeric_option_of_the_wrong_kind_exits_2_naming_it(cmd, flag, value, capsys):
    base = {"run": _RUN, "score-samples": _SS, "beta-sweep": ["beta-sweep", "d"]}[cmd]
    with pytest.raises(SystemExit) as e:
        cli.main([*base, f"{flag}={value}"])
    assert e.value.code == 2 and f"argument {flag}" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# Issue 26: every numeric array-like is taken (lists, numpy of any dtype, pandas, torch CPU tensors with or
# without requires_grad) or refused with a ValueError/TypeError naming the argument; the core never imports torch


def _array_likes(valid: Any) -> list[tuple[str, Any]]:
    import pandas as pd
    import torch

    a = np.asarray(valid)
    out: list[tuple[str, Any]] = [("list", a.tolist()), ("pandas", pd.Series(a) if a.ndim == 1 else pd.DataFrame(a))]
    out.append(("torch", torch.tensor(a)))
    if a.dtype.kind == "f":
        out += [("float32", a.astype(np.float32)), ("float16", a.astype(np.float16))]
        out.append(("torch_grad", torch.tensor(a, requires_grad=True)))
        out.append(("torch_float32_grad", torch.tensor(a, dtype=torch.float32, requires_grad=True)))
    if a.dtype.kind in "bi":
        out += [("int8", a.astype(np.int8)), ("uint8", a.astype(np.uint8))]
    return out


ARRAY_CASES = [
    pytest.param(name, arg, form, id=f"{name}-{arg}-{form}")
    for name, (valid, kinds) in sorted(TABLE.items())
    for arg, kind in kinds.items()
    if kind.removesuffix("_or_none") in ("matrix", "vector", "labels") and valid.get(arg) is not None
    for form, _ in _array_likes(valid[arg])
]


def _flat(x: Any) -> Any:
    try:
        return np.asarray(x, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        return None


@pytest.mark.parametrize(("name", "arg", "form"), ARRAY_CASES)
def test_every_array_like_is_taken_or_refused_naming_the_argument(name, arg, form):
    import warnings

    valid, _ = TABLE[name]
    value = dict(_array_likes(valid[arg]))[form]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _call(name, valid)
        try:
            got = _call(name, {**valid, arg: value})
        except (ValueError, TypeError) as exc:
            assert re.search(rf"(?<![\w]){re.escape(arg)}(?![\w])", str(exc)), f"{name}({arg}={form}): {exc}"
            return
    a, b = _flat(expected), _flat(got)
    if a is not None and b is not None and a.shape == b.shape:
        tol = 1e-2 if "16" in form or "32" in form else 1e-9
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol, err_msg=f"{name}({arg}={form})")


def test_array_likes_were_walked():
    forms = {form for _, _, form in (p.values for p in ARRAY_CASES)}
    assert {"list", "pandas", "torch", "torch_grad"} <= forms and len(ARRAY_CASES) > 100


def test_the_core_never_imports_torch():
    import subprocess
    import sys

    code = "import sys, shapley, shapley.core.metrics, shapley.core.baselines; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
