"""The public API's docstrings: every public name has its numpydoc sections and its Examples run as doctests.

The public names are ``kopt.__all__``, ``kopt.sklearn.__all__``, ``kopt.nystrom.__all__``, ``kopt.testing.__all__``,
the contract classes a plugin subclasses and the result classes (:data:`CONTRACT`).  A function needs a summary,
``Parameters`` (when it takes any), ``Returns`` or ``Yields`` (unless annotated ``-> None``) and ``Examples``; a class
a summary, ``Parameters`` (when its constructor takes any), ``Attributes`` (not asked of an exception or warning
class, whose attributes are its message) and ``Examples``.  Constants are
documented on their API page (:func:`test_every_public_name_is_on_an_api_page`).  The build of those pages with
warnings as errors is part of .ci/run (:func:`test_ci_builds_the_docs`).
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

numpydoc = pytest.importorskip("numpydoc.docscrape", reason="the docs extra (numpydoc) is not installed")

REPO = Path(__file__).resolve().parents[2]

#: the packages whose ``__all__`` is public
PACKAGES = ("kopt", "kopt.sklearn", "kopt.nystrom", "kopt.testing")
#: the classes a plugin subclasses or receives, and the results kopt returns (not in a package's ``__all__``)
CONTRACT = (
    "kopt.contract.components.Component", "kopt.contract.components.Loss", "kopt.contract.components.Kernel",
    "kopt.contract.components.Regularizer", "kopt.contract.components.Solver",
    "kopt.contract.components.DatasetPreset", "kopt.contract.components.Predictor", "kopt.contract.components.Plan",
    "kopt.contract.iterative.IterativeSolver", "kopt.contract.iterative.Step", "kopt.contract.iterative.Check",
    "kopt.contract.iterative.common_options", "kopt.contract.problem.Problem", "kopt.contract.problem.FeatureSpec",
    "kopt.contract.result.SolverOutput", "kopt.contract.result.Result", "kopt.contract.options.OptionsBase",
    "kopt.selection.tune.TuneResult", "kopt.datasets.load", "kopt.datasets.names", "kopt.datasets.Bunch",
    "kopt.contract.hookspecs.kopt_register_losses", "kopt.contract.hookspecs.kopt_register_kernels",
    "kopt.contract.hookspecs.kopt_register_regularizers", "kopt.contract.hookspecs.kopt_register_solvers",
    "kopt.contract.hookspecs.kopt_register_predictors", "kopt.contract.hookspecs.kopt_register_datasets",
    "kopt.contract.hookspecs.kopt_run_start", "kopt.contract.hookspecs.kopt_iteration",
    "kopt.contract.hookspecs.kopt_run_end",
)
#: the packages and contract names whose docstrings are complete; a group joins once its docstrings are written
CHECKED = ("kopt", "kopt.datasets", "kopt.contract.result", "kopt.selection.tune", "kopt.contract.components",
           "kopt.contract.iterative", "kopt.contract.problem", "kopt.contract.options", "kopt.contract.hookspecs",
           "kopt.sklearn", "kopt.nystrom", "kopt.testing")


def _resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _public_names() -> list[str]:
    names = []
    for package in PACKAGES:
        mod = importlib.import_module(package)
        names += [f"{package}.{n}" for n in mod.__all__]
    return names + list(CONTRACT)


def _documented(dotted: str) -> bool:
    """Whether the name is a function or class (constants, modules and ``__version__`` are described in prose)."""
    obj = _resolve(dotted)
    return inspect.isclass(obj) or inspect.isfunction(obj)


def _checked(dotted: str) -> bool:
    return any(dotted == g or dotted.rpartition(".")[0] == g for g in CHECKED)


CALLABLES = [n for n in _public_names() if _documented(n)]


def _takes_parameters(func) -> bool:
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False
    return any(p.name not in ("self", "cls") for p in params)


def _missing_sections(obj) -> list[str]:
    doc = numpydoc.NumpyDocString(inspect.getdoc(obj) or "")
    missing = []
    if not "".join(doc["Summary"]).strip():
        missing.append("a summary")
    if inspect.isclass(obj):
        init = obj.__dict__.get("__init__")  # a constructor the class defines (an inherited one is documented there)
        if init is not None and _takes_parameters(init) and not doc["Parameters"]:
            missing.append("Parameters")
        if not doc["Attributes"] and not issubclass(obj, BaseException):
            missing.append("Attributes")
    else:
        if _takes_parameters(obj) and not doc["Parameters"]:
            missing.append("Parameters")
        returns_none = inspect.signature(obj).return_annotation in (None, "None")
        if not returns_none and not (doc["Returns"] or doc["Yields"]):
            missing.append("Returns (or annotate -> None)")
    if not "".join(doc["Examples"]).strip():
        missing.append("Examples")
    return missing


@pytest.mark.parametrize("dotted", [n for n in CALLABLES if _checked(n)])
def test_docstring_has_its_sections(dotted):
    missing = _missing_sections(_resolve(dotted))
    assert not missing, f"{dotted}: the docstring lacks {', '.join(missing)}"


@pytest.mark.parametrize("dotted", [n for n in CALLABLES if _checked(n)])
def test_docstring_examples_run(dotted, tmp_path, monkeypatch):
    """The Examples section runs as a doctest, in a scratch folder, with NumPy's short float printing."""
    monkeypatch.chdir(tmp_path)
    obj = _resolve(dotted)
    tests = doctest.DocTestFinder(recurse=False).find(obj, dotted, globs={})
    assert tests and any(t.examples for t in tests), f"{dotted}: no doctest example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with np.printoptions(legacy=False, precision=6):
        for test in tests:
            runner.run(test)
    summary = runner.summarize(verbose=False)
    assert summary.failed == 0, f"{dotted}: {summary.failed} of {summary.attempted} examples failed (output above)"


def test_every_public_name_is_on_an_api_page():
    """Each public name is in the API reference: named by an autodoc directive, or in a module documented whole."""
    pages = "\n".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "docs" / "api").glob("*.rst")))
    whole = set(re.findall(r"\.\. automodule:: (\S+)\n(?:   :[^\n]*\n)*?   :members:\s*\n", pages))
    missing = []
    for dotted in _public_names():
        package, _, name = dotted.rpartition(".")
        obj = _resolve(dotted)
        owner = getattr(obj, "__module__", package) or package
        named = re.search(rf"::\s+(?:{re.escape(package)}|{re.escape(owner)})\.{re.escape(name)}\s*$", pages, re.M)
        if not named and package not in whole and name != "datasets":
            missing.append(dotted)
    assert not missing, f"public names missing from docs/api/*.rst: {missing}"


def test_ci_builds_the_docs():
    """.ci/run installs the docs extra and builds the HTML with warnings as errors: a broken reference fails CI."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r'pip install [^\n]*"\.\[[^\]]*\bdocs\b[^\]]*\]"', ci), ".ci/run does not install .[docs]"
    assert re.search(r"sphinx -W --keep-going [^\n]*-b html", ci), ".ci/run does not build the docs with -W"
