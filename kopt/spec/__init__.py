"""Spec engine: YAML or dict -> validated, defaulted, resolved :class:`Spec`.

Order: parse (YAML with positions) -> ``--set`` overrides -> component names
checked (near-miss suggestions) -> JSON-schema validation against the composed
schema -> defaults -> ``${VAR}`` expansion in paths -> compatibility checks
(solver vs form, loss, kernel, backend), all before any data is read.
"""
from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..contract.registry import registry, unknown_component
from ..errors import KoptError, SpecError
from ..numerics import backend as backends
from . import schema as schemas
from .bounds import find_bad_number
from .loader import Override, Positions, apply_overrides, expand_vars, read_spec_file
from .messages import message
from .numbers import SpecValidator, read_numbers

if TYPE_CHECKING:
    from ..contract.components import Component, Kernel, Loss, Regularizer, Solver


class Spec:
    """A validated spec with every default filled in: what :func:`kopt.load_spec` returns.

    ``spec["model"]`` (and ``spec.data``) are the resolved sections as plain dicts; a solver's ``check_spec`` reads
    them and the components the spec names (:attr:`loss`, :attr:`regularizer`, :attr:`kernel_class`).

    Parameters
    ----------
    data : dict
        The resolved spec.
    source : str
        Where it came from: a file name or ``"<dict>"``.
    positions : Positions
        Line and column of each key in the file, for messages.
    base_dir : pathlib.Path
        The folder relative data paths are read from.
    given : dict, optional
        The spec as its author wrote it (overrides applied, no defaults); ``data`` when None.

    Attributes
    ----------
    data : dict
        The resolved spec.
    source : str
        The file name or ``"<dict>"``.
    given : dict
        The spec as written: what was chosen rather than defaulted.
    base_dir : pathlib.Path
        The folder relative paths are read from.

    Examples
    --------
    >>> import kopt
    >>> spec = kopt.load_spec({"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"},
    ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}},
    ...                        "solver": {"name": "krr_exact"}})
    >>> spec["seed"], spec.get("model", "kernel", "bandwidth")
    (0, 'auto')
    >>> spec.loss.name, spec.given["model"]["kernel"]
    ('square', {'name': 'gaussian'})
    """

    def __init__(self, data: dict, source: str, positions: Positions, base_dir: Path,
                 given: dict | None = None) -> None:
        self.data = data
        self.source = source
        self.positions = positions
        self.base_dir = base_dir
        #: the spec as its author wrote it (overrides applied, no defaults): what was chosen, not defaulted
        self.given = given if given is not None else data

    def __getitem__(self, key):
        return self.data[key]

    def get(self, *path: str, default: object = None) -> object:
        """The value at a path of keys, or ``default`` where a key is missing.

        Parameters
        ----------
        *path : str
            The keys, outermost first.
        default : object, optional
            What a missing key gives.

        Returns
        -------
        object
            The value.

        Examples
        --------
        >>> import kopt
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "huber"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...                        "solver": {"name": "joker"}})
        >>> spec.get("model", "loss", "name"), spec.get("model", "nothing", default="none")
        ('huber', 'none')
        """
        node = self.data
        for p in path:
            if not isinstance(node, dict) or p not in node:
                return default
            node = node[p]
        return node

    def error(self, path: tuple, text: str, *, key: bool = False, cls: type = SpecError) -> SpecError:
        """A :class:`kopt.SpecError` pointing at ``path`` in this spec, in the words the user gave it.

        The message names the spec file's line and column, the ``--set`` or flag that set the key, or the Python
        parameter it came through.

        Parameters
        ----------
        path : tuple of str
            The keys of the value at fault.
        text : str
            What is wrong and what is allowed.
        key : bool, optional
            Point at the key itself rather than its value.
        cls : type, optional
            The error class (a SpecError subclass).

        Returns
        -------
        SpecError
            The error, to raise (or yield from a solver's ``check_spec`` as its message).

        Examples
        --------
        >>> import kopt
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "huber"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...                        "solver": {"name": "joker"}})
        >>> print(spec.error(("solver", "name"), "expected another solver"))
        <dict>: $.solver.name: expected another solver
        """
        return _error(self.source, self.positions, path, text, key=key, cls=cls)

    def component(self, kind_path: tuple[str, ...]) -> Component:
        """Build the component a section names, from its resolved parameters.

        Parameters
        ----------
        kind_path : tuple of str
            The section, e.g. ``("model", "loss")`` or ``("solver",)``.

        Returns
        -------
        Component
            The instance (a loss, kernel, regularizer, solver or data set preset).

        Examples
        --------
        >>> import kopt
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "huber"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...                        "solver": {"name": "joker"}})
        >>> spec.component(("model", "loss")).options.delta
        1.0
        """
        section = self.get(*kind_path)
        kind = schemas.COMPONENT_SECTIONS[tuple(kind_path)]
        return registry().get(kind, section["name"])(**component_params(section))

    # -- what a solver's check_spec looks at (no plugin needs the registry) ----------------------
    @property
    def loss(self) -> Loss:
        """The spec's loss, an instance (its target may depend on its parameters).

        Examples
        --------
        >>> import kopt
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "huber"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...                        "solver": {"name": "joker"}})
        >>> spec.loss.name, spec.loss.target
        ('huber', 'real')
        """
        return self.component(("model", "loss"))

    @property
    def lambda_auto(self) -> bool:
        """True when ``model.regularizer.lambda`` is ``auto`` (chosen on a validation split before the solve)."""
        return self["model"]["regularizer"].get("lambda") == "auto"

    @property
    def regularizer(self) -> Regularizer:
        """The spec's regularizer, an instance.

        With ``lambda: auto`` (:attr:`lambda_auto`) it is the regularizer at λ = 1e-4, a point of auto's path (every
        point is > 0): a check that needs λ's sign or the strong convexity's sign holds for whatever auto picks.

        Examples
        --------
        >>> import kopt
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "huber"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...                        "solver": {"name": "joker"}})
        >>> spec.regularizer.lam
        0.001
        """
        reg = self.component(("model", "regularizer"))
        if not self.lambda_auto:
            return reg
        return type(reg)(**{**component_params(self["model"]["regularizer"]), "lambda": LAMBDA_FALLBACK})

    @property
    def kernel_class(self) -> type[Kernel]:
        """The spec's kernel class (an instance needs the data: a ``median`` bandwidth is resolved on it).

        Examples
        --------
        >>> import kopt
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "huber"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...                        "solver": {"name": "joker"}})
        >>> spec.kernel_class.name
        'gaussian'
        """
        return registry().get("kernel", self["model"]["kernel"]["name"])

    @property
    def solver_class(self) -> type[Solver]:
        """The spec's solver class (:class:`kopt.contract.components.Solver`).

        Examples
        --------
        >>> import kopt
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "huber"}, "kernel": {"name": "gaussian"},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3}},
        ...                        "solver": {"name": "joker"}})
        >>> spec.solver_class.name, spec.solver_class.kernel_mode
        ('joker', 'either')
        """
        return registry().get("solver", self["solver"]["name"])

    def solvers_accepting(self) -> list:
        """The other registered solvers that accept this spec as its author wrote it, each with its default options.

        What a solver's refusal may suggest instead: each solver's declared capabilities and its own
        ``check_spec`` decide, so a plugin never names solvers it cannot vouch for.

        Returns
        -------
        list of str
            Solver names, sorted; empty where no other solver accepts the spec (or inside another such call).
        """
        return _solvers_accepting(self)

    def __repr__(self):
        return f"Spec({self.source!r})"


def _error(source, positions, path, text, *, key=False, cls=SpecError):
    """The error at key ``path``, in the words the user gave it: the spec file's line and column, the ``--set`` or
    flag that set it, or the Python parameter it came through (:class:`kopt.spec.loader.Face`)."""
    path = tuple(path)
    face = positions.face_for(path) if positions else None
    if face is not None:
        return cls(text, source=face.source, path=face.shown(path, _fmt_path(path)))
    line, col = positions.locate(path, key=key) if positions else (None, None)
    return cls(text, source=source, path=_fmt_path(path), line=line, column=col)


def _fmt_path(path):
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def load_spec(spec: str | os.PathLike | dict | Spec, overrides: Sequence[str] = (), *, check_backend: bool = True,
              check_files: bool = True, faces: Sequence = ()) -> Spec:
    """Load, validate and resolve a spec from a path, a dict, or a Spec, reading no data.

    The spec is parsed, the overrides applied, the component names checked, the whole validated against the schema
    the registered plugins compose, the defaults filled in, ``${VAR}`` expanded in paths and the components'
    compatibility checked: what ``kopt validate`` does.

    Parameters
    ----------
    spec : str, path, dict or Spec
        A spec file, the name of a packaged spec (``"quickstart"``), a dict, or a Spec (returned as it is unless
        there are overrides).
    overrides : sequence of str, optional
        ``KEY=VALUE`` items (dotted keys, YAML values), as ``--set`` on the command line.
    check_backend : bool, optional
        Check that the spec's ``backend`` is available here (CuPy and a device for ``cupy``).
    check_files : bool, optional
        Check that ``data.train`` and ``data.test`` exist; False when the caller supplies the arrays.
    faces : sequence of kopt.spec.loader.Face, optional
        Which keys the user gave through which parameters (the estimators'), so that a message names those.  A
        Spec given with ``overrides`` keeps its source, positions and faces: the overrides are kopt's own choices
        (a chosen λ, a plan), and a message about a key still names what the user wrote.

    Returns
    -------
    Spec
        The resolved spec.

    Raises
    ------
    SpecError
        The spec cannot be parsed, breaks the schema, or asks for an incompatible combination.
    UnknownComponentError
        It names a loss, kernel, regularizer, solver or dataset no plugin registers.

    Examples
    --------
    >>> import kopt
    >>> spec = kopt.load_spec("quickstart", ["solver.tol=0.05"])
    >>> spec["solver"]["name"], spec["solver"]["tol"]
    ('joker', 0.05)
    >>> spec["data"]["source"]
    'higgs-12k'
    """
    if isinstance(overrides, (str, bytes)) or not hasattr(overrides, "__iter__"):
        raise SpecError(f"expected a list of 'KEY.PATH=VALUE' items, got {overrides!r}", parameter="overrides",
                        value=overrides)
    if isinstance(spec, Spec):
        if not overrides:
            return spec
        doc, positions = copy.deepcopy(spec.data), spec.positions.copy() if spec.positions else Positions(None)
        positions.faces += apply_overrides(doc, [o if isinstance(o, Override) else Override(o) for o in overrides])
        return _resolve(doc, spec.source, positions, spec.base_dir, spec.data.get("name") or "spec", check_backend,
                        check_files)
    if isinstance(spec, (str, os.PathLike)):
        from .packaged import resolve_spec_arg

        source = resolve_spec_arg(str(spec))  # a file, else the name of a packaged spec (as on the CLI)
        doc, positions = read_spec_file(source)
        base_dir = Path(source).resolve().parent
        default_name = Path(source).stem
    elif isinstance(spec, dict):
        source, doc, positions = "<dict>", copy.deepcopy(spec), Positions(None)
        base_dir, default_name = Path.cwd(), "spec"
    else:
        raise SpecError(f"a spec is a path or a dict, got {type(spec).__name__}", source="<spec>")
    positions.faces = list(faces) + apply_overrides(doc, overrides)
    return _resolve(doc, source, positions, base_dir, default_name, check_backend, check_files)


def _resolve(doc, source, positions, base_dir, default_name, check_backend, check_files) -> Spec:
    """:func:`load_spec` on the parsed document with its overrides applied."""
    reg = registry()
    schema = schemas.compose(reg)
    read_numbers(doc, schema)  # 1e-6 as YAML 1.2 reads it; 1e4 or 1.0 where an integer is wanted
    bad = find_bad_number(doc)
    if bad is not None:
        raise _error(source, positions, bad[0], bad[1])
    auto_loss = _resolve_auto_loss(doc, reg, source, positions)
    _check_component_names(doc, reg, source, positions)
    _validate_schema(doc, schema, source, positions)
    explicit_lambda = "lambda" in ((doc.get("model") or {}).get("regularizer") or {})
    given = copy.deepcopy(doc)
    if auto_loss:
        given["model"]["loss"] = {"name": AUTO_LOSS}  # what the author wrote: the solver chooses the loss
    _fill_defaults(doc, reg, default_name)
    result = Spec(doc, source, positions, base_dir, given)
    _resolve_auto_lambda(result, reg, explicit_lambda)
    _expand_paths(result)
    if check_files:
        _check_files(result)
    _check_compatibility(result, reg, check_backend=check_backend)
    return result


#: ``model.loss.name: auto``: the planning solver chooses the loss (:attr:`kopt.contract.components.Solver.auto_loss`)
AUTO_LOSS = "auto"


def _resolve_auto_loss(doc, reg, source, positions) -> bool:
    """``model.loss.name: auto``: where the spec's solver chooses the loss (its ``auto_loss``), the loss section
    becomes the one that solver is checked and assembled with, and True is returned (the spec's ``given`` keeps
    ``auto``, which the solver's plan reads); elsewhere an error that names the solvers that choose one."""
    loss = (doc.get("model") or {}).get("loss") if isinstance(doc.get("model"), dict) else None
    if not isinstance(loss, dict) or loss.get("name") != AUTO_LOSS:
        return False
    losses = ", ".join(n for n in reg.names("loss"))
    extra = sorted(k for k in loss if k != "name")
    if extra:
        raise _error(source, positions, ("model", "loss", extra[0]),
                     f"loss 'auto' takes no options (got {', '.join(extra)}): the solver chooses the loss and its "
                     f"settings; to set {extra[0]!r}, name the loss ({losses})", key=True)
    solver = doc.get("solver") if isinstance(doc.get("solver"), dict) else {}
    name = solver.get("name", schemas.CORE_SCHEMA["properties"]["solver"]["default"]["name"])
    if not isinstance(name, str) or name not in reg.components["solver"]:
        return False  # the solver's own name check says what is wrong
    section = reg.get("solver", name).auto_loss
    if section is None:
        choosers = ", ".join(n for n in reg.names("solver") if reg.get("solver", n).auto_loss is not None)
        raise _error(source, positions, ("model", "loss", "name"),
                     f"loss 'auto' leaves the loss to the solver, and solver {name!r} does not choose one (solvers "
                     f"that do: {choosers or '(none)'}); name a loss: {losses}")
    doc["model"]["loss"] = copy.deepcopy(section)
    return True


def _check_component_names(doc, reg, source, positions):
    for path, kind in schemas.COMPONENT_SECTIONS.items():
        node = doc
        for p in path:
            node = node.get(p) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get("name"), str):
            if node["name"] not in reg.components[kind]:
                err = unknown_component(kind, node["name"], reg.names(kind))
                raise _error(source, positions, path + ("name",), err.detail, cls=type(err))
    data = doc.get("data")
    if isinstance(data, dict) and isinstance(data.get("source"), str):
        if data["source"] not in reg.components["dataset"]:
            err = unknown_component("dataset", data["source"], reg.names("dataset"))
            raise _error(source, positions, ("data", "source"), err.detail, cls=type(err))


def _validate_schema(doc, schema, source, positions):
    validator = SpecValidator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    issues, seen = [], set()
    for err in errors:  # each distinct problem once (a value several rules refuse alike is said once)
        path, text, key = message(err)
        issue = _error(source, positions, path, text, key=key)
        if str(issue) not in seen:
            seen.add(str(issue))
            issues.append(issue)
        if len(issues) == 8:
            break
    first = issues[0]
    if len(issues) > 1:
        first = SpecError(
            first.detail + "".join(f"\n  also: {str(e)}" for e in issues[1:]),
            source=first.source,
            path=first.path,
            line=first.line,
            column=first.column,
        )
    raise first


def _defaults_into(node: dict, schema: dict):
    for key, sub in schema.get("properties", {}).items():
        if key not in node and "default" in sub:
            node[key] = copy.deepcopy(sub["default"])
        if isinstance(node.get(key), dict) and sub.get("type") == "object":
            _defaults_into(node[key], sub)


#: λ where ``lambda: auto`` cannot work and the spec left λ out (the default before auto: docs/design/lambda-auto.md)
LAMBDA_FALLBACK = 1.0e-4


def auto_lambda_problem(spec: Spec, reg=None):
    """Why ``model.regularizer.lambda: auto`` cannot work for this spec, or None.

    auto scores each λ of its path on held-out labelled rows, so it needs a labelled target with a
    validation metric (binary, multiclass, real), a form that uses λ (not gp) and a local run."""
    reg = reg or registry()
    if spec["model"]["form"] == "gp":
        return ("the gp form does not use model.regularizer.lambda (λ = noise_variance/n): set "
                "solver.noise_variance, or search it with kopt tune")
    loss = spec.component(("model", "loss"))
    if loss.target not in ("binary", "multiclass", "real"):
        return (f"lambda: auto picks λ by a validation metric on held-out labels, and loss {loss.name!r} "
                f"(target {loss.target}) has none; give a number, e.g. lambda: {LAMBDA_FALLBACK:g}")
    if spec["execution"]["engine"] == "dask" and not reg.get("solver", spec["solver"]["name"]).plans:
        return AUTO_ON_DASK  # a planning solver (solver: auto) chooses λ in its search, on a cluster too
    return None


#: why ``lambda: auto`` cannot run on a Dask cluster (its path solves run on one machine)
AUTO_ON_DASK = ("lambda: auto is not available on a Dask cluster; give a number (kopt tune on a sample of the "
                "data finds one) or run locally")


def _resolve_auto_lambda(spec: Spec, reg, explicit: bool):
    """``lambda: auto`` where it cannot work: an error if the spec says so, else the fixed fallback."""
    node = spec["model"]["regularizer"]
    if node.get("lambda") != "auto":
        return
    problem = auto_lambda_problem(spec, reg)
    if problem is None:
        return
    if explicit:
        raise spec.error(("model", "regularizer", "lambda"), problem)
    node["lambda"] = LAMBDA_FALLBACK
    if problem == AUTO_ON_DASK:  # a spec that would have had auto on one machine: say what it gets
        import warnings

        from ..errors import SpecWarning

        warnings.warn(str(spec.error(("model", "regularizer", "lambda"),
                                     f"the spec leaves λ to its default, lambda: auto, which a Dask run cannot "
                                     f"use: λ = {LAMBDA_FALLBACK:g} instead; give a number (kopt tune on a sample "
                                     "of the data finds one)")), SpecWarning, stacklevel=2)


def _fill_defaults(doc, reg, default_name):
    _defaults_into(doc, schemas.CORE_SCHEMA)
    for path, kind in schemas.COMPONENT_SECTIONS.items():
        node = doc
        for p in path:
            node = node[p]
        _defaults_into(node, reg.get(kind, node["name"]).schema())
    doc.setdefault("name", default_name)
    solver_cls = reg.get("solver", doc["solver"]["name"])
    doc["model"].setdefault("form", solver_cls.forms[0])  # the form follows the solver
    # so does the feature kind: a solver on Nystrom centers makes them its default (a kind given is kept, and
    # checked against the solver's feature_kinds in _check_compatibility)
    doc["model"]["features"].setdefault("kind", solver_cls.default_feature_kind or "random")
    doc["model"]["features"].setdefault("seed", doc["seed"])
    doc.setdefault("data", {})
    _defaults_into(doc["data"], schemas.CORE_SCHEMA["properties"]["data"])
    doc["data"].setdefault("split_seed", doc["seed"])
    if doc["data"].get("source"):
        _defaults_into(doc["data"]["options"], reg.get("dataset", doc["data"]["source"]).schema())
    doc["output"].setdefault("dir", os.path.join("runs", doc["name"]))


def _expand_paths(spec: Spec):
    from ..data.cache import default_data_dir

    defaults = {"KOPT_DATA": lambda: str(default_data_dir())}
    def expand(path, value):
        try:
            value = expand_vars(value, defaults)
        except KeyError as exc:
            raise spec.error(path, f"environment variable {exc.args[0]} is not set (used in {value!r})") from None
        value = os.path.expanduser(value)
        if not os.path.isabs(value) and path[0] == "data":
            value = os.path.normpath(str(spec.base_dir / value))
        return value

    for path in (("data", "train"), ("data", "test"), ("output", "dir")):
        value = spec.get(*path)
        node = spec.data
        for p in path[:-1]:
            node = node[p]
        if isinstance(value, str):
            node[path[-1]] = expand(path, value)
        elif isinstance(value, list):
            node[path[-1]] = [expand(path + (i,), v) for i, v in enumerate(value)]


def _check_files(spec: Spec):
    data = spec.get("data") or {}
    if data.get("source"):
        return  # presets locate (and may fetch) their own files
    for key in ("train", "test"):
        value = data.get(key)
        items = value if isinstance(value, list) else [value] if value else []
        for i, path in enumerate(items):
            if not os.path.exists(path):
                where = ("data", key, i) if isinstance(value, list) else ("data", key)
                raise spec.error(where, f"data file not found: {path}")
            if os.path.isdir(path):
                raise spec.error(("data", key), f"expected a data file, got a directory: {path}")


def _check_compatibility(spec: Spec, reg, *, check_backend=True):
    m = spec["model"]
    solver_cls = reg.get("solver", spec["solver"]["name"])
    loss_cls = spec.component(("model", "loss"))  # an instance: its target may depend on its parameters
    kernel_cls = reg.get("kernel", m["kernel"]["name"])
    sname = solver_cls.name
    if m["form"] not in solver_cls.forms:
        raise spec.error(
            ("model", "form"),
            f"solver {sname!r} solves form {' or '.join(solver_cls.forms)}, not {m['form']!r}; "
            f"set model.form to {solver_cls.forms[0]!r} or pick a solver for the {m['form']} form",
        )
    if solver_cls.needs_smooth_loss and not loss_cls.smooth:
        smooth = [n for n in reg.names("loss") if reg.get("loss", n).smooth]
        raise spec.error(
            ("model", "loss", "name"),
            f"solver {sname!r} needs a smooth loss and {loss_cls.name!r} is not smooth; smooth losses: {', '.join(smooth)}",
        )
    if solver_cls.needs_conjugate and not loss_cls.has_conjugate:
        ok = [n for n in reg.names("loss") if reg.get("loss", n).has_conjugate]
        raise spec.error(
            ("model", "loss", "name"),
            f"solver {sname!r} works on the dual and needs a loss with a conjugate; {loss_cls.name!r} has none. "
            f"Losses with a conjugate: {', '.join(ok)}",
        )
    if loss_cls.target not in solver_cls.targets:
        raise spec.error(
            ("model", "loss", "name"),
            f"solver {sname!r} handles {', '.join(solver_cls.targets)} targets; loss {loss_cls.name!r} is {loss_cls.target}",
        )
    if solver_cls.kernel_mode == "features" and not kernel_cls.has_features:
        ok = [n for n in reg.names("kernel") if reg.get("kernel", n).has_features]
        raise spec.error(
            ("model", "kernel", "name"),
            f"solver {sname!r} needs random features and kernel {kernel_cls.name!r} has no sampler; kernels with one: {', '.join(ok)}",
        )
    kind = m["features"]["kind"]
    if kind not in solver_cls.feature_kinds:
        raise spec.error(
            ("model", "features", "kind"),
            f"solver {sname!r} handles features of kind {', '.join(solver_cls.feature_kinds)}, not {kind!r}",
        )
    if check_backend and spec["backend"] != "auto":
        try:
            b = backends.resolve(spec["backend"])
        except SpecError as exc:
            raise spec.error(("backend",), exc.detail, cls=type(exc)) from None
        if b is not None and b.name not in solver_cls.backends:
            raise spec.error(("backend",), f"solver {sname!r} runs on {', '.join(solver_cls.backends)}, not {b.name}")
    _check_execution(spec, reg, solver_cls)
    try:
        problems = list(spec.component(("solver",)).check_spec(spec))
    except SpecError:
        raise
    for path, text in problems[:1]:
        raise spec.error(path, text)


def _check_execution(spec: Spec, reg, solver_cls):
    """``execution.engine: dask`` needs a solver that declares ``distributed`` and a scheduler."""
    ex = spec["execution"]
    if ex["engine"] != "dask":
        return
    from .scheduler import check_address

    problem = check_address(ex["scheduler"])  # first: no solver runs on a scheduler that is not one
    if problem:
        raise spec.error(("execution", "scheduler"), problem)
    if not solver_cls.distributed:
        ok = spec.solvers_accepting()  # those that run this spec on the cluster
        raise spec.error(("execution", "engine"), f"solver {solver_cls.name!r} cannot run on a Dask cluster; "
                         + (f"solvers that run this spec there: {', '.join(ok)}" if ok else
                            "no solver registered runs this spec there") + "; or run it here, without a scheduler")
    if spec["backend"] == "cupy":
        raise spec.error(("backend",), "a Dask cluster runs the numpy backend; set backend: numpy (or auto)")
    if (spec.get("data") or {}).get("class_weight") is not None:
        raise spec.error(("data", "class_weight"), "data.class_weight is not supported on a Dask cluster: run without "
                                                   "a scheduler, or leave the weights out")


_TRYING = []  # set while solvers_accepting tries the solvers: a refusal inside a trial names none


def _solvers_accepting(spec: Spec) -> list:
    """The registered solvers that accept ``spec`` as its author wrote it (``spec.given``) with only the solver
    changed, each with its default options: what a refusal may suggest instead, from the solvers' declared
    capabilities and their own checks, never from a list of names.  The spec's own solver is left out."""
    import warnings

    if _TRYING:
        return []
    out = []
    _TRYING.append(True)
    try:
        for name in registry().names("solver"):
            if name == spec["solver"]["name"]:
                continue
            trial = copy.deepcopy(spec.given)
            trial["solver"] = {"name": name}
            trial.setdefault("output", {})["dir"] = spec["output"]["dir"]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    load_spec(trial, check_files=False, check_backend=False)
            except (SpecError, KoptError):
                continue
            out.append(name)
    finally:
        _TRYING.pop()
    return out


def component_params(section: dict) -> dict:
    """A component section's parameters: every key but its ``name`` (what the component is built with)."""
    return {k: v for k, v in section.items() if k != "name"}


def resolved_yaml(spec: Spec) -> str:
    import yaml

    return yaml.safe_dump(spec.data, sort_keys=False, default_flow_style=False)


__all__ = ["Spec", "component_params", "load_spec", "resolved_yaml"]
