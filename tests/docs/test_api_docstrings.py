"""The public API's docstrings: every public name and every public method has its numpydoc sections, and the
Examples run as doctests.

The public names are ``kopt.__all__``, ``kopt.sklearn.__all__``, ``kopt.nystrom.__all__``, ``kopt.testing.__all__``,
the contract classes a plugin subclasses and the result classes (:data:`CONTRACT`).  A function needs a summary,
``Parameters`` (when it takes any), ``Returns`` or ``Yields`` (unless annotated ``-> None``) and ``Examples``; a class
a summary, ``Parameters`` (when its constructor takes any), ``Attributes`` (not asked of an exception or warning
class, whose attributes are its message) and ``Examples``.  Constants are
documented on their API page (:func:`test_every_public_name_is_on_an_api_page`).  The build of those pages with
warnings as errors is part of .ci/run (:func:`test_ci_builds_the_docs`).

The public methods and properties of those classes (:data:`METHODS`: names not starting with ``_``, defined in kopt,
the first definition along the class's MRO) need a summary, ``Parameters`` (when they take any), ``Returns`` or
``Yields`` (unless annotated ``-> None``; a property describes its value in the summary), ``Raises`` where their body
raises (a bare re-raise and a contract method's ``NotImplementedError`` aside), type hints on every parameter and the
return, and ``Examples`` on the classes a plugin author drives or implements (:data:`EXAMPLE_CLASSES`).  Every
method's Examples run as doctests.
"""
from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import re
import textwrap
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

#: the classes whose every public method carries an Examples section: what a plugin author drives (the Nyström
#: service) or implements (the Loss and Kernel contracts)
EXAMPLE_CLASSES = ("kopt.nystrom.cg.NystromCG", "kopt.nystrom.system.NystromSystem", "kopt.nystrom.passes.RowPass",
                   "kopt.contract.components.Loss", "kopt.contract.components.Kernel")
#: parameters whose class lives in a layer above the contract (the spec, kopt.spec.Spec; a run's context,
#: kopt.running; a predictor's context, kopt.models.model.PredictContext): the contract may not import it, not even
#: for type checking (tests/engine/test_layers.py), so the docstring names the type and the signature does not
UPPER_LAYER_PARAMETERS = ("spec", "run", "context")
#: modules whose public classes' methods are not checked yet, each with the reason; every other module's are, so a
#: new public class joins the check as it lands
METHODS_PENDING: dict = {}


def _public_methods() -> dict[str, tuple[type, str]]:
    """``{"module.Class.name": (defining class, name)}`` over the public classes' public methods and properties, each
    once, under the class that defines it."""
    out = {}
    for dotted in CALLABLES:
        cls = _resolve(dotted)
        if not inspect.isclass(cls):
            continue
        for name in dir(cls):
            if name.startswith("_"):
                continue
            owner = next((k for k in cls.__mro__ if name in vars(k)), None)
            if owner is None or not (owner.__module__ or "").startswith("kopt"):
                continue
            if _function_of(vars(owner)[name]) is None:
                continue
            out.setdefault(f"{owner.__module__}.{owner.__qualname__}.{name}", (owner, name))
    return dict(sorted(out.items()))


def _function_of(attr):
    """The function behind a class attribute: a method, a static or class method, or a property's getter."""
    if isinstance(attr, (staticmethod, classmethod)):
        attr = attr.__func__
    elif isinstance(attr, property):
        attr = attr.fget
    return attr if inspect.isfunction(attr) else None


METHODS = _public_methods()


def _method_checked(dotted: str) -> bool:
    owner, _ = METHODS[dotted]
    return owner.__module__ not in METHODS_PENDING


def _raises(func) -> list[str]:
    """The exceptions a function's own body raises by name (a bare re-raise and ``NotImplementedError`` aside)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = exc.id if isinstance(exc, ast.Name) else exc.attr if isinstance(exc, ast.Attribute) else None
            if name and name != "NotImplementedError":
                out.append(name)
    return out


def _missing_method_sections(owner: type, name: str) -> list[str]:
    attr = vars(owner)[name]
    func = _function_of(attr)
    doc = numpydoc.NumpyDocString(inspect.getdoc(func) or "")
    sig = inspect.signature(func)
    params = [p for i, p in enumerate(sig.parameters.values())
              if not (i == 0 and not isinstance(attr, staticmethod) and p.name in ("self", "cls"))]
    missing = []
    if not "".join(doc["Summary"]).strip():
        missing.append("a summary")
    if params and not doc["Parameters"] and not isinstance(attr, property):
        missing.append("Parameters")
    if not isinstance(attr, property) and sig.return_annotation not in (None, "None") \
            and not (doc["Returns"] or doc["Yields"]):
        missing.append("Returns (or annotate -> None)")
    if _raises(func) and not doc["Raises"]:
        missing.append(f"Raises ({', '.join(sorted(set(_raises(func))))})")
    unhinted = [p.name for p in params
                if p.annotation is inspect.Parameter.empty and p.name not in UPPER_LAYER_PARAMETERS]
    if unhinted:
        missing.append(f"type hints on {', '.join(unhinted)}")
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("a return type hint")
    if f"{owner.__module__}.{owner.__qualname__}" in EXAMPLE_CLASSES and not "".join(doc["Examples"]).strip():
        missing.append("Examples")
    return missing


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


@pytest.mark.parametrize("dotted", [n for n in METHODS if _method_checked(n)])
def test_method_docstring_has_its_sections(dotted):
    missing = _missing_method_sections(*METHODS[dotted])
    assert not missing, f"{dotted}: the docstring or signature lacks {', '.join(missing)}"


@pytest.mark.parametrize("dotted", [n for n in METHODS if _method_checked(n)])
def test_method_docstring_examples_run(dotted, tmp_path, monkeypatch):
    """A method's Examples run as a doctest, as a public name's do."""
    monkeypatch.chdir(tmp_path)
    func = _function_of(vars(METHODS[dotted][0])[METHODS[dotted][1]])
    tests = doctest.DocTestFinder(recurse=False).find(func, dotted, globs={})
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with np.printoptions(legacy=False, precision=6):
        for test in tests:
            runner.run(test)
    summary = runner.summarize(verbose=False)
    assert summary.failed == 0, f"{dotted}: {summary.failed} of {summary.attempted} examples failed (output above)"


def _unhinted(func) -> list[str]:
    """The parameters of a signature without a type hint (``self``, ``*args``, ``**kwargs`` aside), and ``return``."""
    sig = inspect.signature(func)
    missing = [p.name for i, p in enumerate(sig.parameters.values())
               if i and p.annotation is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               and p.name not in UPPER_LAYER_PARAMETERS]
    return missing + (["return"] if sig.return_annotation is inspect.Signature.empty else [])


def test_constructors_have_type_hints():
    """A public class's own constructor is typed as its methods are (``-> None``)."""
    found = []
    for dotted in CALLABLES:
        cls = _resolve(dotted)
        init = cls.__dict__.get("__init__") if inspect.isclass(cls) else None
        if inspect.isfunction(init) and cls.__module__ not in METHODS_PENDING and _unhinted(init):
            found.append(f"{dotted}: {', '.join(_unhinted(init))}")
    assert not found, "constructors without type hints: " + "; ".join(found)


def test_a_pending_module_still_has_gaps():
    """A module leaves :data:`METHODS_PENDING` once its methods are complete: the check then keeps them so."""
    modules = {owner.__module__ for owner, _ in METHODS.values()}
    for module in METHODS_PENDING:
        assert module in modules, f"{module} has no public class's methods: take it off METHODS_PENDING"
        gaps = [d for d, (owner, name) in METHODS.items()
                if owner.__module__ == module and _missing_method_sections(owner, name)]
        assert gaps, f"{module}'s methods are complete: take it off METHODS_PENDING"


def test_the_method_walk_finds_the_service_and_the_contract():
    """The walk over public methods reaches what a plugin author calls and implements."""
    for dotted in ("kopt.nystrom.cg.NystromCG.step", "kopt.nystrom.system.NystromSystem.solve",
                   "kopt.nystrom.passes.RowPass.products", "kopt.contract.components.Loss.grad",
                   "kopt.contract.components.Kernel.exact", "kopt.models.model.Model.predict"):
        assert dotted in METHODS, f"{dotted} is not among the public methods walked"
    assert not any(name.rpartition(".")[2].startswith("_") for name in METHODS)


def test_the_method_check_tells_a_complete_docstring():
    """The section check on methods made for it: each gap is named, a complete method passes."""
    class Made:
        def bare(self, x):
            if x < 0:
                raise ValueError("x")
            return x

        def complete(self, x: float) -> float:
            """Twice ``x``.

            Parameters
            ----------
            x : float
                A number at least 0.

            Returns
            -------
            float
                2 x.

            Raises
            ------
            ValueError
                ``x`` is below 0.
            """
            if x < 0:
                raise ValueError("x")
            return 2 * x

    missing = _missing_method_sections(Made, "bare")
    for gap in ("a summary", "Parameters", "Returns (or annotate -> None)", "Raises (ValueError)",
                "type hints on x", "a return type hint"):
        assert gap in missing
    assert _missing_method_sections(Made, "complete") == []


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
