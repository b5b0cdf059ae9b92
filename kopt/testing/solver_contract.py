"""``check_solver``: a solver run through kopt's solver contract on small seeded data.

A plugin author calls it in their own test suite (docs/plugin-guide.md, "Writing a solver");
kopt runs it over every built-in solver.  Each failure is an ``AssertionError`` naming the
solver, the part of the contract (:data:`SOLVER_CHECKS`) and what to fix.
"""
from __future__ import annotations

import contextlib
import copy
import math
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from ..contract.components import Solver
from ..contract.hookspecs import hookimpl
from ..errors import ConvergenceWarning
from .answer import ANSWER_LOSSES, ANSWER_RTOL, answer_budget, answer_data, answer_problems, answer_spec
from .data import solver_check_data
from .solvers import resume_runs

#: the parts of the contract :func:`check_solver` checks, in order
SOLVER_CHECKS = ("interface", "spec", "solve", "status", "certificate", "answer", "trace", "predict", "model_file", "state",
                 "reproducible", "resume")

_FORMS = ("primal", "dual", "gp")
_KERNEL_MODES = ("features", "exact", "either", "none")
_FEATURE_KINDS = ("random", "nystrom")
_STATUSES = ("converged", "iteration_cap", "interrupted", "diverged", "done")
#: built-in losses tried first for each target (then every other registered loss of that target)
_PREFERRED_LOSSES = ("square", "logistic", "softmax", "novelty", "kl_density_ratio", "huber", "squared_hinge")
#: iterations a solver runs under check_solver unless spec_overrides say otherwise
CHECK_ITERATIONS = 12


@dataclass
class SolverCheck:
    """What :func:`~kopt.testing.check_solver` ran: the check names, the spec it solved, and the runs' results.

    Parameters
    ----------
    ran, spec, result, resumed, answers
        The attributes below.

    Attributes
    ----------
    ran : tuple of str
        The checks run, in order (:data:`~kopt.testing.SOLVER_CHECKS`).
    spec : dict
        The spec solved.
    result : Result
        The first run's result.
    resumed : Result or None
        The resumed run's result (the resume check).
    answers : tuple of dict
        The answer runs: ``{"loss", "objective", "reference", "n_iter", "status", "result"}`` per reference problem.

    Examples
    --------
    >>> import kopt.testing as kt
    >>> check = kt.check_solver("krr_exact")
    >>> check.ran[:3], check.result.success
    (('interface', 'spec', 'solve'), True)
    """

    ran: tuple
    spec: dict
    result: object
    resumed: object
    #: the answer runs: ``{"loss", "objective", "reference", "n_iter", "status", "result"}`` per reference problem
    answers: tuple = ()


def check_solver(solver: str | type[Solver], *, data: tuple | None = None, spec_overrides: dict | None = None,
                 out_dir: str | os.PathLike | None = None, stop_at: int | None = None, seed: int = 0,
                 skip: Iterable[str] = (), budget: int | None = None, rtol: float = ANSWER_RTOL) -> SolverCheck:
    """Run a solver through kopt's solver contract on small seeded data.

    The spec names the solver, the first form it declares and the first registered loss of a target it declares
    (``square`` for real targets, ``logistic`` for binary, ...) that the spec engine and the solver's ``check_spec``
    accept, the ``gaussian`` kernel, 256 features in blocks of 64, l2 with λ = 1e-3 and ``iterations`` = 12 where
    the solver has that option; ``spec_overrides`` is merged into it last.

    The checks (:data:`~kopt.testing.SOLVER_CHECKS`): the declared capabilities are valid (interface); a spec naming
    the solver validates (spec); it solves without raising and writes a model and report (solve); ``status`` and
    ``success`` agree with each other and with the stopping rule (status); the objective is finite, and the duality
    gap, where the form has one, is P − D and not below −rounding (certificate); on small seeded problems with a known
    optimum (the square and the logistic loss) the objective reaches the optimum within ``rtol`` in at most
    ``budget`` iterations, and a dual form closes its gap to ``rtol`` (answer); the trace holds iterations 1..n_iter
    (trace); the model scores the test rows with one finite score (or one per class) per row (predict); the model
    file loads back with identical predictions (model_file); every checkpoint state is a flat dict of arrays and JSON
    scalars (state); a second run gives the same model (reproducible); a run interrupted at ``stop_at`` and resumed
    ends bit-identical to the uninterrupted run (resume, :func:`~kopt.testing.check_resume`).

    Parameters
    ----------
    solver : str or type
        A registered solver's name, or a :class:`kopt.contract.components.Solver` subclass (an unregistered class is
        registered for the duration of the check).
    data : tuple, optional
        ``(X, y[, X_test, y_test])``; by default 400 + 100 seeded rows in 3 dimensions, labelled for the loss's
        target (:func:`~kopt.testing.solver_check_data`).
    spec_overrides : dict, optional
        A nested dict merged into the spec last, e.g. ``{"solver": {"step_size": 0.1}, "model": {"loss": {"name":
        "huber"}}}``.
    out_dir : str or path, optional
        Where the runs write (a temporary folder by default).
    stop_at : int, optional
        The iteration the resume check interrupts at (half way by default).
    seed : int, optional
        The data's and the spec's seed.
    skip : iterable of str, optional
        Checks to leave out (any but ``spec`` and ``solve``).
    budget : int, optional
        The answer check's iteration budget (the solver's default ``iterations`` by default).
    rtol : float, optional
        The answer check's relative tolerance.

    Returns
    -------
    SolverCheck
        What ran, the spec and the runs' results.

    Raises
    ------
    AssertionError
        A part of the contract fails; the message names the solver, the part and what to fix.
    ValueError
        ``skip`` names an unknown check, or one that cannot be skipped.

    Examples
    --------
    >>> import kopt.testing as kt
    >>> kt.check_solver("krr_exact").ran[-3:]
    ('state', 'reproducible', 'resume')
    """
    skippable = [c for c in SOLVER_CHECKS if c not in ("spec", "solve")]
    unknown = sorted(set(skip) - set(skippable))
    if unknown:
        raise ValueError(f"unknown solver checks {unknown}; those that can be skipped: {', '.join(skippable)}")
    with contextlib.ExitStack() as stack:
        cls = stack.enter_context(_solver_registered(solver))
        if out_dir is None:
            out_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="kopt-check-solver-"))
        return _check_solver(cls, data, spec_overrides or {}, Path(out_dir), stop_at, seed, set(skip),
                             answer_budget(cls, budget), float(rtol))


_REPRODUCIBLE_HINT = ("; the same spec and seed must give the same model: draw randomness from problem.rng, and cut "
                      "reductions into kopt.numerics.threads.PARTS parts summed in order")
_RESUME_HINT = (". A resumed run must end where the uninterrupted one ends: save() returns everything load() needs "
                "to continue, and randomness comes from problem.rng(stream, t)")


def _check_solver(cls, data, overrides, out_dir, stop_at, seed, skip, budget, rtol):
    ran = []

    def fail(part, text):
        raise AssertionError(f"solver {cls.name!r} fails the solver contract ({part}): {text}")

    def run_part(part, problems):
        if part not in skip:
            for text in problems():
                fail(part, text)
            ran.append(part)

    run_part("interface", lambda: _interface_problems(cls))
    spec, resolved = _contract_spec(cls, overrides, out_dir / "solve", seed, fail)
    ran.append("spec")
    if data is None:
        data = solver_check_data(resolved.loss.target, seed=seed)
    inspector = _StateInspector()
    result = _runs(fail, "solve", lambda: _solve(spec, data, inspector), "kopt.solve raised ")
    ran.append("solve")
    run_part("status", lambda: _status_problems(cls, resolved, result))
    run_part("certificate", lambda: _certificate_problems(resolved, result, len(data[0])))
    answers = ()
    if "answer" not in skip:
        answers = _answers(cls, spec, out_dir / "answer", seed, budget, rtol, fail)
        if answers:
            ran.append("answer")
    run_part("trace", lambda: _trace_problems(result))
    run_part("predict", lambda: _predict_problems(result, data))
    run_part("model_file", lambda: _model_file_problems(result, out_dir / "solve", data))
    run_part("state", inspector.problems)
    resumed = None
    if not {"reproducible", "resume"} <= skip:
        k = stop_at or max(1, result.n_iter // 2)
        full, resumed = _runs(fail, "resume", lambda: resume_runs(spec, data, stop_at=k, out_dir=out_dir / "resume"),
                              f"interrupted at iteration {k}, stopping or resuming raised ")
        run_part("reproducible", lambda: (t + _REPRODUCIBLE_HINT
                                          for t in _same_model(result, full, "a second run of the same spec")))
        run_part("resume", lambda: (t + _RESUME_HINT for t in [
            *_same_model(full, resumed, f"interrupted at iteration {k} and resumed, the run"),
            *_same_outcome(full, resumed)]))
    return SolverCheck(tuple(ran), spec, result, resumed, answers)


def _answers(cls, spec, out_dir, seed, budget, rtol, fail):
    """Solve each reference problem the solver takes (:mod:`kopt.testing.answer`); fail when one is missed."""
    import kopt

    from ..errors import KoptError
    from ..spec import load_spec

    out = []
    if spec["model"].get("form") == "gp":  # no objective to compare: the posterior is checked by kopt's own tests
        return ()
    if spec["model"].get("regularizer", {}).get("name", "l2") != "l2":  # the references are those of λ/2‖f‖²
        return ()
    for loss, target in ANSWER_LOSSES:
        if target not in cls.targets:
            continue
        s = answer_spec(spec, cls, loss, budget=budget, rtol=rtol, out_dir=out_dir / loss)
        try:
            resolved = load_spec(s, check_files=False)
        except KoptError:  # the spec engine or the solver's check_spec refuses this loss
            continue
        data = answer_data(target, seed)
        r = _runs(fail, "answer", lambda: kopt.solve(s, data=data),
                  f"on the {loss} reference problem (kopt.testing.answer), kopt.solve raised ")
        if r.objective is None:  # form gp
            continue
        ref, problems = answer_problems(r, resolved, data, budget=budget, rtol=rtol)
        for text in problems:
            fail("answer", text)
        out.append({"loss": loss, "objective": r.objective, "reference": ref, "n_iter": r.n_iter, "status": r.status,
                    "result": r})
    return tuple(out)


def _solve(spec, data, inspector):
    import kopt

    with _hook(inspector):
        return kopt.solve(spec, data=data, write=True)


def _runs(fail, part, fn, what):
    """``fn()`` with ConvergenceWarnings silenced (the status check judges success); errors fail ``part``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            return fn()
        except AssertionError as exc:
            fail(part, str(exc))
        except Exception as exc:
            fail(part, f"{what}{type(exc).__name__}: {exc}")


@contextlib.contextmanager
def _solver_registered(solver):
    """The solver class; an unregistered class is registered (and unregistered afterwards)."""
    from ..contract.components import Solver
    from ..contract.registry import registry

    reg = registry()
    if isinstance(solver, str):
        yield reg.get("solver", solver)
        return
    if not (isinstance(solver, type) and issubclass(solver, Solver)):
        raise TypeError(f"check_solver takes a solver name or a kopt.contract.components.Solver subclass, got {solver!r}")
    entry = reg.components["solver"].get(solver.name)
    if entry is not None:
        if entry.cls is not solver:
            raise AssertionError(f"solver {solver.name!r}: another class ({entry.cls.__module__}.{entry.cls.__name__}, "
                                 f"plugin {entry.plugin!r}) is registered under that name; rename one of them")
        yield solver
        return

    class _Plugin:
        @hookimpl
        def kopt_register_solvers(self, register):
            register(solver)

    before = len(reg.errors)
    plugin = reg.register_plugin(_Plugin(), name=f"check_solver-{solver.name}", distribution="<check_solver>")
    try:
        if len(reg.errors) > before:
            raise AssertionError(f"solver {solver.name!r} fails the solver contract (register): {reg.errors[-1]}")
        yield solver
    finally:
        reg.unregister_plugin(plugin)
        del reg.errors[before:]


@contextlib.contextmanager
def _hook(obj):
    from ..contract.registry import registry

    pm = registry().pm
    name = pm.register(obj)
    try:
        yield obj
    finally:
        pm.unregister(name=name)


def _interface_problems(cls):
    from ..contract.iterative import IterativeSolver

    def bad(attr, value, allowed):
        return (f"{attr} = {value!r} is not a tuple of {', '.join(allowed)}"
                if not isinstance(value, tuple) or not value or set(value) - set(allowed) else None)

    from ._samples import TARGETS

    out = [bad("forms", cls.forms, _FORMS), bad("targets", cls.targets, TARGETS),
           bad("feature_kinds", cls.feature_kinds, _FEATURE_KINDS), bad("backends", cls.backends, ("numpy", "cupy"))]
    if cls.kernel_mode not in _KERNEL_MODES:
        out.append(f"kernel_mode = {cls.kernel_mode!r}; one of {', '.join(_KERNEL_MODES)}")
    if cls.default_feature_kind is not None and cls.default_feature_kind not in tuple(cls.feature_kinds or ()):
        out.append(f"default_feature_kind = {cls.default_feature_kind!r} is not one of its feature_kinds "
                   f"{cls.feature_kinds!r} (None: random)")
    for flag in ("needs_smooth_loss", "needs_conjugate", "one_vs_rest"):
        if not isinstance(getattr(cls, flag), bool):
            out.append(f"{flag} = {getattr(cls, flag)!r} is not a bool")
    if issubclass(cls, IterativeSolver):
        if cls.stopping not in ("gap", "criterion", "none"):
            out.append(f"stopping = {cls.stopping!r}; one of gap, criterion, none")
        if cls.blas not in ("single", "all"):
            out.append(f"blas = {cls.blas!r}; one of single, all")
        for method in ("init", "step", "decision_function", "save", "load", "finish"):
            if getattr(cls, method) is getattr(IterativeSolver, method):
                out.append(f"{method}() is not implemented (the skeleton calls it)")
    elif cls.run is Solver.run:
        out.append("run(problem, run) is not implemented (or subclass kopt.contract.iterative.IterativeSolver)")
    return [o for o in out if o]


def _deep_merge(base, extra):
    out = copy.deepcopy(base)
    for k, v in extra.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def _loss_candidates(cls):
    from ..contract.registry import registry

    reg = registry()
    names = sorted(reg.names("loss"), key=lambda n: (n not in _PREFERRED_LOSSES,
                                                     _PREFERRED_LOSSES.index(n) if n in _PREFERRED_LOSSES else 0, n))
    out = []
    for target in cls.targets:
        for n in names:
            loss = reg.get("loss", n)
            if loss.target == target and (loss.smooth or not cls.needs_smooth_loss) \
                    and (loss.has_conjugate or not cls.needs_conjugate):
                out.append(n)
    return out or names[:1]


def _contract_spec(cls, overrides, out_dir, seed, fail):
    """The first candidate spec (form x loss) that validates, with ``overrides`` merged in; ``(dict, Spec)``."""
    from ..errors import KoptError
    from ..spec import load_spec

    solver = {"name": cls.name}
    if "iterations" in cls.params:
        solver["iterations"] = CHECK_ITERATIONS
    kind = "random" if "random" in cls.feature_kinds else cls.feature_kinds[0]
    tried = []
    for form in cls.forms:
        for loss in _loss_candidates(cls):
            spec = {
                "name": f"check_{cls.name}",
                "seed": seed,
                "model": {"loss": {"name": loss}, "kernel": {"name": "gaussian"}, "form": form,
                          "features": {"kind": kind, "count": 256, "block_size": 64},
                          "regularizer": {"name": "l2", "lambda": 1.0e-3}},
                "solver": dict(solver),
                "backend": "numpy",
                "output": {"dir": str(out_dir), "checkpoint_every": 0},
            }
            spec = _deep_merge(spec, overrides)
            try:
                return spec, load_spec(spec, check_files=False)
            except KoptError as exc:
                tried.append(f"form {form}, loss {spec['model']['loss'].get('name')}: {exc}")
            if tried[-1] in tried[:-1]:  # the overrides fixed the loss or the form: no other candidate differs
                break
    fail("spec", "no spec naming it validates; tried " + "; ".join(dict.fromkeys(tried))
         + ". Check forms/targets/needs_* against check_spec, or pass spec_overrides")


def _status_problems(cls, spec, r):
    from ..contract.iterative import IterativeSolver

    if r.status not in _STATUSES:
        yield f"status {r.status!r}; SolverOutput.status is one of {', '.join(_STATUSES)}"
    if r.status == "diverged":
        yield (f"it diverged on the check problem ({r.message}); pass spec_overrides it converges with, "
               "or fix the step")
    if r.status == "interrupted":
        yield f"status 'interrupted' without a stop request ({r.message})"
    if r.status == "converged" and not r.success:
        yield "status 'converged' with success False"
    if issubclass(cls, IterativeSolver):
        expected = r.status == "converged" or (r.status == "iteration_cap" and cls.stopping == "none")
        if r.success != expected:
            yield f"success {r.success} with status {r.status!r} and stopping {cls.stopping!r}"
    if not r.success and not r.message:
        yield "success False without a message saying why (and what to change)"
    if not isinstance(r.n_iter, int) or r.n_iter < 1:
        yield f"n_iter = {r.n_iter!r} after a fresh run (at least 1)"
    if r.status == "converged" and r.info.get("rel_gap") is not None and cls.stopping == "gap":
        tol = spec["solver"].get("tol")
        if tol is not None and r.info["rel_gap"] > tol * (1 + 1e-9):
            yield f"status 'converged' with relative gap {r.info['rel_gap']:.3g} > tol {tol:g}"


def _rounding(spec, n_rows, P, D):
    """The skeleton's bound on the rounding of P − D (:func:`kopt.contract.iterative.rounding_bound`) on the check problem.

    The result does not carry the solver's ``Check.scale``/``Check.terms``: the bound takes their
    defaults, |P| + |D| and n plus the feature count.
    """
    from types import SimpleNamespace

    from ..contract.iterative import Check, rounding_bound

    feats = spec["model"]["features"]
    problem = SimpleNamespace(n=n_rows, features=SimpleNamespace(count=feats["count"]), dtype=np.dtype(feats["dtype"]))
    return rounding_bound(Check(objective=P, dual=D), problem)


def _certificate_problems(spec, r, n_rows):
    form = spec["model"]["form"]
    P, D, gap = r.objective, r.dual, r.gap
    if P is None:
        if form != "gp":
            yield (f"no objective: form {form!r} has one, λ/2‖f‖² + mean ℓ (Check.objective, or "
                   "SolverOutput.objective)")
        return
    if not math.isfinite(P):
        yield f"the objective is {P}"
        return
    if form == "dual" and D is None:
        yield "form 'dual' and no dual objective: a dual solver certifies its answer with D and the gap (Check.dual)"
    if D is None:
        if gap is not None and gap < -_rounding(spec, n_rows, P, P - gap):
            yield f"gap {gap:.6g} is negative, beyond the rounding bound of P and D"
        return
    if not math.isfinite(D):
        yield f"the dual objective is {D}"
        return
    scale = max(abs(P), abs(D), 1e-300)
    if gap is None or abs(gap - (P - D)) > 1e-9 * scale:
        yield f"gap {gap!r} is not P − D = {P - D!r}"
        return
    rel = gap / scale
    if gap < -_rounding(spec, n_rows, P, D):
        yield (f"relative duality gap {rel:.3g} < 0 beyond rounding: the primal {P:.10g} is below the dual {D:.10g}, which weak duality "
               "forbids; the dual is computed wrongly (or the loss's conjugate: kopt.testing.check_loss)")
    if r.info.get("rel_gap") is not None and abs(r.info["rel_gap"] - rel) > 1e-9 * max(1.0, abs(rel)):
        yield f"info['rel_gap'] = {r.info['rel_gap']!r} is not (P − D)/max(|P|, |D|) = {rel!r}"


def _trace_problems(r):
    its = [rec.get("iteration") for rec in r.trace]
    if not its:
        yield "the trace is empty: report every iteration with run.report(t, ...) (the skeleton does)"
        return
    if its != list(range(1, r.n_iter + 1)):
        shown = its if len(its) <= 12 else its[:6] + ["..."] + its[-3:]
        yield f"the trace holds iterations {shown}; expected 1..{r.n_iter} (n_iter), one report per iteration"
    for rec in r.trace:
        for key in ("objective", "dual", "gap"):
            if key in rec and not math.isfinite(rec[key]):
                yield f"iteration {rec['iteration']} reports {key} {rec[key]} without ending the run as diverged"
                return


def _test_rows(data):
    X = data[2] if len(data) == 4 and data[2] is not None else data[0]
    return np.asarray(X)


def _predict_problems(r, data):
    X = _test_rows(data)
    try:
        scores = r.model.decision_function(X)
        labels = r.model.predict(X)
    except Exception as exc:
        yield f"the model cannot score {X.shape[0]} rows: {type(exc).__name__}: {exc}"
        return
    n = X.shape[0]
    pre = r.model.preprocessor
    classes = getattr(pre, "classes", None)
    shapes = [(n, len(classes))] if pre.target == "multiclass" else [(n,), (n, 1)]
    if scores.shape not in shapes:
        yield (f"the model's decision_function gave shape {scores.shape} for {n} rows; expected "
               f"{' or '.join(map(str, shapes))} (one score per row, or one per class)")
    elif not np.all(np.isfinite(scores)):
        yield "the model's decision_function gave non-finite scores"
    if np.shape(labels)[:1] != (n,):
        yield f"predict gave shape {np.shape(labels)} for {n} rows"


def _model_file_problems(r, out_dir, data):
    from .. import load_model

    path = out_dir / "model.json"
    if not path.is_file():
        yield f"kopt.solve(..., write=True) wrote no model file at {path}"
        return
    try:
        loaded = load_model(path)
    except Exception as exc:
        yield (f"the model file does not load: {type(exc).__name__}: {exc} (a predictor holds numeric arrays and "
               "JSON metadata, and its class is registered through kopt_register_predictors)")
        return
    X = _test_rows(data)
    a, b = r.model.decision_function(X), loaded.decision_function(X)
    if a.shape != b.shape or not np.array_equal(a, b):
        yield ("the loaded model scores differently from the trained one: the predictor must be rebuilt from its "
               "arrays and meta alone")
    ea, eb = r.model.predict_extra(X), loaded.predict_extra(X)
    if ea.keys() != eb.keys() or any(not np.array_equal(ea[k], eb[k], equal_nan=True) for k in ea):
        yield "predict_extra differs after loading the model file"


def _same_model(a, b, what):
    x, y = a.model.predictor.arrays, b.model.predictor.arrays
    if x.keys() != y.keys():
        yield f"{what} gave model arrays {sorted(y)} instead of {sorted(x)}"
        return
    for k in x:
        if not np.array_equal(np.asarray(x[k]), np.asarray(y[k])):
            yield f"{what} gave a different model array {k!r}"
            return
    if a.model.predictor.meta != b.model.predictor.meta:
        yield f"{what} gave different predictor metadata"


def _same_outcome(full, resumed):
    for key in ("status", "success", "objective", "dual", "gap"):
        u, v = getattr(full, key), getattr(resumed, key)
        if u != v and not (isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v)):
            yield f"the resumed run ends with {key} {v!r}, the uninterrupted run with {u!r}"
    its = [rec["iteration"] for rec in resumed.trace]
    if its != [rec["iteration"] for rec in full.trace]:
        yield "the resumed run's trace holds other iterations than the uninterrupted run's"


class _StateInspector:
    """Calls the state every iteration reports and records what a checkpoint cannot hold."""

    def __init__(self):
        self.found = []
        self.reports = 0
        self.without_state = 0

    @hookimpl
    def kopt_iteration(self, run, record):
        self.reports += 1
        if record.state is None:
            self.without_state += 1
            return
        if len(self.found) < 3:
            state = record.state()
            self.found += [f"iteration {record.iteration}: {p}" for p in state_problems(state)]

    def problems(self):
        if self.without_state:
            yield (f"{self.without_state} of {self.reports} iterations reported no state: pass state= (a callable "
                   "returning the checkpoint) to run.report, or the run cannot resume")
        yield from self.found[:3]


def state_problems(state: object) -> list[str]:
    """What makes ``state`` (a solver's ``save()``) unfit for a checkpoint.

    A checkpoint holds a flat dict of numeric arrays and JSON scalars under string keys not starting with ``_``.

    Parameters
    ----------
    state : object
        What ``save()`` returned.

    Returns
    -------
    list of str
        One message per problem; empty when the state is fit.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> kt.state_problems({"w": np.zeros(3), "t": 4})
    []
    >>> len(kt.state_problems({"w": [0.0, 1.0]}))
    1
    """
    if not isinstance(state, dict):
        return [f"save() returned a {type(state).__name__}; it returns a dict"]
    out = []
    for key, value in state.items():
        if not isinstance(key, str) or key.startswith("_"):
            out.append(f"key {key!r}: keys are strings not starting with '_' (reserved for kopt)")
        elif value is None or isinstance(value, (bool, int, float, str)):
            continue
        elif isinstance(value, np.generic) and value.dtype.kind in "biuf":
            continue
        elif hasattr(value, "shape") and hasattr(value, "dtype"):
            if np.dtype(value.dtype).kind not in "biufc":
                out.append(f"{key!r} is an array of dtype {value.dtype}; checkpoints hold numeric arrays only")
        else:
            out.append(f"{key!r} is a {type(value).__name__}; save() returns a flat dict of arrays and JSON scalars "
                       "(int, float, bool, str, None): make lists arrays, and flatten nested dicts into keys")
    return out
