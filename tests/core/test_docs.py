"""Every public maths function carries an ``Examples:`` doctest (issue 8); pytest runs them (--doctest-modules).

Covered: the public functions of shapley.core's kernel, psd, entropy and metrics modules, of every module of
shapley.core.baselines, and every function that ``shapley/__init__.py`` re-exports. ``validate`` is internal.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from types import ModuleType

import shapley
from shapley.core import baselines, entropy, kernel, metrics, psd

CORE_MODULES: tuple[ModuleType, ...] = (kernel, psd, entropy, metrics)


def _baseline_modules() -> list[ModuleType]:
    return [importlib.import_module(f"{baselines.__name__}.{m.name}") for m in pkgutil.iter_modules(baselines.__path__)]


def _public_functions(module: ModuleType) -> dict[str, Callable[..., object]]:
    """Functions defined in ``module`` (not imported into it) whose names do not start with an underscore, less the
    core's internal ``..._checked`` helpers (:mod:`shapley.core.validate`)."""
    return {
        f"{module.__name__}.{name}": f
        for name, f in inspect.getmembers(module, inspect.isfunction)
        if f.__module__ == module.__name__ and not name.startswith("_") and not name.endswith("_checked")
    }


def _reexported() -> dict[str, Callable[..., object]]:
    """The functions ``shapley/__init__.py`` re-exports (``from shapley.core... import f as f``)."""
    return {f"shapley.{name}": f for name, f in vars(shapley).items() if inspect.isfunction(f)}


def _all_public() -> dict[str, Callable[..., object]]:
    out: dict[str, Callable[..., object]] = {}
    for module in (*CORE_MODULES, *_baseline_modules()):
        out.update(_public_functions(module))
    out.update(_reexported())
    return out


def _n_examples(f: Callable[..., object]) -> int:
    """Doctest examples after an ``Examples:`` heading in f's own docstring (0 if there is none)."""
    doc = inspect.getdoc(f) or ""
    if "Examples:" not in doc:
        return 0
    section = doc.split("Examples:", 1)[1]
    return len(doctest.DocTestParser().get_examples(section))


def _lacking(functions: dict[str, Callable[..., object]]) -> list[str]:
    return sorted(name for name, f in functions.items() if _n_examples(f) == 0)


def test_every_public_maths_function_has_an_examples_doctest():
    functions = _all_public()
    assert _lacking(functions) == []


def test_the_enumeration_finds_what_it_must():
    functions = _all_public()
    expected = {
        "shapley.core.entropy.shapley_values",
        "shapley.core.psd.ensure_psd",
        "shapley.core.kernel.kernel_matrix",
        "shapley.core.metrics.paired_interval",
        "shapley.core.baselines.entropies.likelihood_entropy",
        "shapley.core.baselines.verbalised.confidence_reading",
        "shapley.gaussian_entropy",
    }
    assert expected <= set(functions)
    assert {m.__name__.rsplit(".", 1)[1] for m in _baseline_modules()} >= {
        "entropies",
        "lexical",
        "regression",
        "selfcheck",
        "spectral",
        "verbalised",
    }
    assert not any(".validate." in name for name in functions)  # internal, exempt
    assert len(functions) >= 50


def undocumented(x: float) -> float:
    """Twice x, with no example."""
    return 2 * x


def heading_only(x: float) -> float:
    """Twice x.

    Examples:
        Twice x is shown nowhere.
    """
    return 2 * x


def example_before_heading(x: float) -> float:
    """Twice x.

    >>> example_before_heading(1.0)
    2.0

    Examples:
        None here.
    """
    return 2 * x


def documented(x: float) -> float:
    """Twice x.

    Examples:
        >>> documented(1.5)
        3.0
    """
    return 2 * x


def test_the_check_can_fail():
    dummies = {f.__name__: f for f in (undocumented, heading_only, example_before_heading, documented)}
    assert _lacking(dummies) == ["example_before_heading", "heading_only", "undocumented"]
