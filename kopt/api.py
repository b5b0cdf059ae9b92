"""The Python API: :func:`solve`, the one solve path from a spec to a :class:`~kopt.contract.result.Result`.

``lambda: auto`` (:func:`_choose_lambda`) and a planning solver (``solver: auto``, :func:`_plan`) first choose
the spec to solve on the training rows they read; every run then goes through :func:`_solve` and :func:`_run`
(the problem, the solver's run, the model, the report: :mod:`kopt.running.report`).
"""
from __future__ import annotations

import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .contract.registry import registry
from .contract.result import Result
from .data import as_dataset, load_data
from .data.progress import drawing
from .errors import ConvergenceWarning, DataError, FeatureCountWarning, NonFiniteModelError, SpecError
from .models.model import Model
from .numerics.backend import resolve
from .numerics.memory import SOLVE_ADVICE, check_plan, out_of_memory, peak_rss_mb
from .running import checkpoint, outdir
from .running.assemble import assemble, check_sample_weight, check_weights_given
from .running.checkpoint import StateKeeper
from .running.context import RunContext, interrupt_guard, raise_for
from .running.listeners import Checkpointer, TraceRecorder
from .running.logs import LOGGER, progress_listeners
from .running.report import build_report, jsonable, timings
from .spec import Spec, load_spec

if TYPE_CHECKING:
    from .data import Dataset


@dataclass
class _Call:
    """What a :func:`solve` call asked for (its arguments; ``t0``: when it began), and what the stages before the
    solve handed on: ``start_state`` (the state the solver starts from), ``lambda_auto`` (``lambda: auto``'s
    choice), ``plan`` (``solver: auto``'s record) and ``planned_count`` (whether the planning solver, not the spec's
    author, chose ``model.features.count``: a note that the model uses fewer centers is then its record's, not a
    warning to a user who never set the count)."""

    data: object
    resume: object
    progress: object
    write: bool
    sample_weight: object
    keep_state: bool
    start_from: object
    t0: float
    start_state: dict = None
    lambda_auto: dict = None
    plan: dict = None
    calibrate: bool = True
    held_out: dict = None
    planned_count: bool = False


def solve(spec: str | os.PathLike | dict | Spec, data: tuple | Dataset | None = None, *,
          overrides: Sequence[str] = (), resume: bool | checkpoint.Snapshot = False, progress: bool = False, write: bool = False,
          sample_weight: ArrayLike | None = None, keep_state: bool = False, scheduler: str | object | None = None,
          start_from: checkpoint.Snapshot | None = None, connect_timeout: float | None = None, calibrate: bool = True) -> Result:
    """Solve a spec and return the model, its objective, its certificate and its test metrics.

    The spec is validated before any data is read; every random choice comes from its ``seed``.  This is what
    ``kopt solve`` runs, and what the scikit-learn estimators of :mod:`kopt.sklearn` call.

    Parameters
    ----------
    spec : str, path, dict or Spec
        A spec file, the name of a packaged spec (``"quickstart"``), a spec as a dict, or a loaded :class:`kopt.Spec`.
    data : tuple or Dataset, optional
        Arrays instead of the spec's data files: ``(X, y)`` or ``(X, y, X_test, y_test)`` (NumPy, SciPy sparse; dask
        collections on a cluster).  None reads the spec's ``data`` section.
    overrides : sequence of str, optional
        ``KEY=VALUE`` items applied to the spec before validation, as ``kopt solve --set`` does.
    resume : bool or Snapshot, optional
        True continues from the checkpoint in ``output.dir``; a snapshot (``result.snapshot`` of an earlier run of the
        same problem, ``keep_state=True``) continues in memory (solvers with ``warm_start``; ``solver.iterations`` and
        ``solver.tol`` may differ).
    progress : bool, optional
        Print progress lines (or a bar in a notebook) while reading and solving.
    write : bool, optional
        Write the model, the JSON report and (``output.plot``) the convergence plot into ``output.dir``.
        Checkpoints are written there whenever ``output.checkpoint_every`` > 0.
    sample_weight : array-like of shape (n_samples,), optional
        Weights of the training rows of ``data`` (solvers with ``sample_weight``).
    keep_state : bool, optional
        Keep the final solver state as ``result.snapshot``.
    scheduler : str or distributed.Client, optional
        Run on a Dask cluster (the ``kopt[dask]`` extra): ``"local:N"``, a scheduler address ``"tcp://HOST:8786"``
        or a client; the same as the spec's ``execution: {engine: dask, scheduler: ...}``.
    start_from : Snapshot, optional
        Start a fresh run from the final state of a run of the same problem at another
        ``model.regularizer.lambda`` (solvers with ``lambda_warm_start``; ``kopt tune``'s λ path).
    connect_timeout : float, optional
        Seconds to wait for a scheduler address to answer (default 10).
    calibrate : bool, optional
        Calibrate the probabilities of a margin-loss classifier (default True).

    Returns
    -------
    Result
        The model (``result.model``), ``objective``, ``dual`` and ``gap`` where the form has them, ``status``,
        ``n_iter``, the test ``metrics``, the convergence ``trace`` and the JSON ``report``.

    Raises
    ------
    SpecError
        The spec is malformed, or asks for a combination its components refuse.
    DataError
        The data cannot be read or does not fit the problem.
    OutputError
        ``write`` or checkpoints are asked for and ``output.dir`` cannot be written.
    OutOfMemoryError
        The data or a solver's memory plan does not fit the memory available.

    See Also
    --------
    kopt.tune : grid search of a spec on validation folds.
    kopt.load_spec : validate a spec without solving it.

    Examples
    --------
    Kernel ridge regression, solved exactly on 40 rows and scored on 20 more:

    >>> import numpy as np
    >>> import kopt
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2))
    >>> y = X[:, 0] - 0.5 * X[:, 1]
    >>> spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
    ...         "solver": {"name": "krr_exact"}}
    >>> result = kopt.solve(spec, data=(X[:40], y[:40], X[40:], y[40:]))
    >>> result.success
    True
    >>> round(result.metrics["r2"], 3)
    0.988
    >>> result.model.predict(X[40:]).shape
    (20,)
    """
    t0 = time.perf_counter()
    if scheduler is not None:  # a message about it names the parameter the caller gave
        from .spec.loader import Override

        face = f"kopt.solve(scheduler={scheduler!r})" if isinstance(scheduler, str) else "kopt.solve(scheduler=...)"
        given = [Override(f"execution.scheduler={json.dumps(scheduler)}", face)] if isinstance(scheduler, str) else []
        overrides = (*overrides, Override("execution.engine=dask", face), *given)
    if not isinstance(spec, Spec) or overrides:
        spec = load_spec(spec, overrides, check_files=data is None)
    call = _Call(data=data, resume=resume, progress=progress, write=write, sample_weight=sample_weight,
                 keep_state=keep_state, start_from=start_from, t0=t0, calibrate=calibrate)
    # a MemoryError anywhere below is the user's to act on, not a bug (the stages name themselves where they can)
    with out_of_memory(f"solving {spec.get('name') or 'the spec'}", SOLVE_ADVICE):
        return _solve_spec(spec, call, scheduler, connect_timeout)


def _solve_spec(spec, call, scheduler, connect_timeout):
    """:func:`solve` after the spec is loaded: a planning solver or λ auto choose the spec first, then the one
    solve, here or on a Dask cluster (``solver: auto`` there: its search on this client, the solve on the cluster)."""
    if spec.solver_class.plans and spec["execution"]["engine"] != "dask":  # solver: auto -- measure, choose, solve
        return _solve(*_plan(spec, call), cluster=None)
    if spec.lambda_auto and not spec.solver_class.plans:  # a local run (load_spec refuses it on Dask)
        resume = call.resume
        if not (isinstance(resume, checkpoint.Snapshot) and isinstance(resume.lam, (int, float))):
            return _solve(*_choose_lambda(spec, call), cluster=None)
        # continuing a run continues it at its λ (the estimators' warm_start)
        from .running.validation import LAMBDA, overrides_of

        spec = load_spec(spec.data, overrides_of({LAMBDA: resume.lam}), check_files=call.data is None)
    if spec["execution"]["engine"] != "dask":
        return _solve(spec, call, cluster=None)
    from .distributed.cluster import Cluster

    with Cluster(spec["execution"]["scheduler"] if scheduler is None or isinstance(scheduler, str)
                 else scheduler, connect_timeout=connect_timeout) as cluster:
        if spec.solver_class.plans:  # solver: auto on the cluster: the chosen spec is solved on the same cluster
            return _solve(*_plan(spec, call, cluster), cluster=cluster)
        return _solve(spec, call, cluster=cluster)


def _before_choosing(spec, call, continued: bool, path, why):
    """What ``lambda: auto`` and ``solver: auto`` check before they read the training rows and choose: no
    continued run (``continued``: a SpecError at ``path`` saying ``why``), weights only with the data they
    weigh, an output folder kopt can write."""
    if continued:
        raise spec.error(path, why)
    check_weights_given(spec, call.data, call.sample_weight)
    if call.write or spec["output"]["checkpoint_every"]:
        check_output_dir(spec)  # before the data and the search


def _dataset(spec, call):
    """The call's training rows: its ``data``, else the spec's data section read."""
    with drawing(call.progress), out_of_memory(_reading(spec, call.data)):
        return as_dataset(call.data) if call.data is not None else load_data(spec["data"])


def _choose_lambda(spec, call):
    """``model.regularizer.lambda: auto``: choose λ on a validation split of the training rows
    (:func:`kopt.running.validation.select_lambda`); ``(spec at that λ, call)`` to solve on all of them, started
    from the validation solve where the solver allows (``Solver.refit_warm_start``)."""
    from .running.validation import LAMBDA, overrides_of, select_lambda

    _before_choosing(spec, call, isinstance(call.resume, checkpoint.Snapshot) or call.start_from is not None,
                     ("model", "regularizer", "lambda"),
                     "lambda: auto chooses λ before a fresh solve; continuing or warm-starting a run (resume="
                     "snapshot, start_from) needs that run's λ: set model.regularizer.lambda to a number")
    if call.write:
        outdir.check_overwrite(spec, ignore=("model.regularizer.lambda",))  # its λ is not chosen yet
    ds = _dataset(spec, call)
    weights = None if call.sample_weight is None else check_sample_weight(call.sample_weight, ds.X.shape[0])
    LOGGER.info("%s: lambda: auto: choosing λ on a validation split of %s training rows", spec.get("name"),
                f"{ds.X.shape[0]:,}")
    choice = select_lambda(spec, ds, solve=solve, sample_weight=weights, progress=bool(call.progress))
    LOGGER.info("%s: lambda: auto chose λ = %g (%d values tried, %.1f s)", spec.get("name"), choice.lam,
                len(choice.path), choice.select_s)
    fixed = load_spec(spec.data, overrides_of({LAMBDA: choice.lam}), check_files=False)
    fixed.source, fixed.positions, fixed.base_dir = spec.source, spec.positions, spec.base_dir
    start_state = None
    if choice.snapshot is not None and weights is None and spec.solver_class.refit_warm_start and call.resume is False:
        saved = {k: v for k, v in choice.snapshot.resume_state().items() if k != "_elapsed"}
        state = spec.component(("solver",)).refit_state(saved, choice.rows, ds.X.shape[0])
        if state is not None:
            start_state = {**state, "_elapsed": 0.0}
    choice.refit_warm = start_state is not None
    return fixed, replace(call, data=ds, start_from=None, start_state=start_state, lambda_auto=choice.as_dict())


def _plan(spec, call, cluster=None):
    """A solver with ``plans`` (``solver: auto``): assemble the problem, let the solver measure and choose
    the concrete spec (:meth:`kopt.contract.components.Solver.plan`); ``(that spec, call)`` to solve it on every
    training row (the problem is assembled again: its kernel differs; only the start state carries over).  On a Dask
    ``cluster`` the problem's rows are the workers' partitions (the solver fetches what its search reads)."""
    _before_choosing(spec, call, call.resume is not False or call.start_from is not None, ("solver", "name"),
                     f"solver {spec['solver']['name']!r} chooses the spec before a fresh solve; to continue or "
                     "warm-start a run, solve the spec it chose (report.json's spec) and resume that")
    if cluster is not None:
        ds = call.data  # the workers read the spec's files, or compute the dask collections given
        t1 = time.perf_counter()
        with drawing(call.progress):
            problem = _problem(spec, ds, resolve(spec["backend"]), call.sample_weight, cluster)
    else:
        ds = _dataset(spec, call)
        t1 = time.perf_counter()
        with out_of_memory(_reading(spec, call.data)):
            problem = assemble(spec, ds, sample_weight=call.sample_weight)
    log = (lambda line: print(f"kopt: {line}", file=sys.stderr, flush=True)) if call.progress else None
    try:
        with out_of_memory(f"solver {spec['solver']['name']!r} chose the spec to solve"):
            chosen = spec.component(("solver",)).plan(problem, spec.given, log)
    except SpecError as exc:  # its split of the training rows: said at the spec key that asked for it
        if exc.parameter != "validation":
            raise
        given = "validation" in (spec.given.get("solver") or {})
        raise spec.error(("solver", "validation") if given else ("solver", "name"),
                         f"solver {spec['solver']['name']!r} chooses on held-out training rows: {exc.detail}") from None
    del problem  # its rows (the cluster's partitions too) go before the chosen spec's are assembled
    record = chosen.record
    record["search_s"] = time.perf_counter() - t1  # assembling included: the search's whole cost
    given_count = ((spec.given.get("model") or {}).get("features") or {}).get("count")
    return spec_with(spec, chosen.overrides), replace(call, data=ds, resume=False, start_from=None, plan=record,
                                                      start_state=chosen.start_state,
                                                      held_out=getattr(chosen, "held_out", None),
                                                      planned_count=given_count is None
                                                      and "model.features.count" in chosen.overrides)


def spec_with(spec: Spec, overrides: dict) -> Spec:
    """``spec`` with dotted keys set (``"solver"`` replaces the whole solver section), validated again."""
    import copy

    data = copy.deepcopy(spec.data)
    for key, value in overrides.items():
        node, parts = data, key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = copy.deepcopy(value)
    out = load_spec(data, check_files=False)
    out.source, out.positions, out.base_dir = spec.source, spec.positions, spec.base_dir
    return out


def _reading(spec, data) -> str:
    """What reading a spec's training data is, for a message."""
    if data is not None:
        return "preparing the training data"
    return f"reading and preparing the data of {spec.get('name') or 'the spec'}"


def _problem(spec, data, backend, sample_weight, cluster):
    """The assembled problem: in this process, or with its rows in partitions on the cluster."""
    if cluster is None:
        with out_of_memory(_reading(spec, data)):
            return assemble(spec, data, backend, sample_weight=sample_weight)
    from .distributed import assemble as distributed

    if sample_weight is not None:
        raise DataError("sample_weight is not supported on a Dask cluster yet; run without a scheduler")
    if (spec["data"] or {}).get("class_weight") is not None:
        raise spec.error(("data", "class_weight"), "data.class_weight is not supported on a Dask cluster yet; run "
                                                   "without a scheduler")
    if (spec["data"] or {}).get("held_out") is not None and not spec.solver_class.distributed_held_out:
        reg = registry()
        takes = [n for n in reg.names("solver") if reg.get("solver", n).distributed_held_out]
        raise spec.error(("data", "held_out"), f"solver {spec['solver']['name']!r} does not weigh data.held_out's rows "
                                               f"on a Dask cluster; solvers that do: {', '.join(takes) or '(none)'}; "
                                               "or run without a scheduler")
    parts = spec["execution"]["partitions"] or cluster.n_workers
    problem = distributed.assemble(spec, data, backend, cluster.client, parts)
    problem.info["execution"] = {"engine": "dask", "workers": cluster.n_workers,
                                 "partitions": len(problem.partitions.rows)}
    return problem


def _solve(spec, call, cluster):
    """:func:`_run`, holding the output folder (:mod:`kopt.running.outdir`) when the run writes there."""
    if not (call.write or spec["output"]["checkpoint_every"]):
        return _run(spec, call, cluster)
    check_output_dir(spec)  # before the data and the solve: a long run never ends in "cannot write"
    with outdir.claimed(spec):
        if call.write:
            outdir.check_overwrite(spec)
        return _run(spec, call, cluster)


def _start(spec, call, snapshot, solver, backend):
    """``(resume_state, start iteration, trace so far)``: an in-memory snapshot's, the checkpoint's (``resume=True``),
    a warm start's (``start_from``), the state a stage before handed on (``lambda: auto``'s refit from its
    validation solve; ``solver: auto``'s plan), or a fresh run's."""
    if snapshot is not None:
        return snapshot.resume_state(), snapshot.iteration, list(snapshot.trace)
    if call.resume:
        state, meta = checkpoint.read(spec["output"]["dir"], spec.data, spec["solver"]["name"], backend.name)
        return state, meta["iteration"], meta.get("trace", [])
    if call.start_from is not None:
        return checkpoint.warm_start_state(call.start_from, spec, solver), 0, []
    return call.start_state, 0, []


def _run(spec, call, cluster):
    """The solve: the problem, the solver's run with kopt's listeners, the model, its holdout metrics, the report."""
    backend = resolve(spec["backend"])
    reg = registry()
    sname = spec["solver"]["name"]
    snapshot = call.resume if isinstance(call.resume, checkpoint.Snapshot) else None
    if snapshot is not None:
        checkpoint.check_continuation(snapshot, spec, spec.solver_class)
    with drawing(call.progress):
        problem = _problem(spec, call.data, backend, call.sample_weight, cluster)
    t_load = time.perf_counter() - call.t0 - (call.lambda_auto["select_s"] if call.lambda_auto else 0.0) \
        - (call.plan["search_s"] if call.plan else 0.0)
    rss_load = peak_rss_mb()

    solver = spec.component(("solver",))
    # the solver's memory plan against the memory available, before it allocates anything (a plan solver: auto
    # chose and whose system it hands over was checked by auto's own search)
    memory_plan = [] if cluster is not None or (call.plan is not None and call.start_state is not None) else \
        check_plan(solver, solver.memory_sizes(problem))
    out_dir = spec["output"]["dir"]
    resume_state, start, trace = _start(spec, call, snapshot, solver, backend)
    run = RunContext(spec, problem, reg.pm, out_dir=out_dir, checkpoint_every=spec["output"]["checkpoint_every"],
                     resume_state=resume_state, start_iteration=start,
                     total_iterations=spec["solver"].get("iterations"),
                     stopping=getattr(solver, "stopping", None), tol=spec["solver"].get("tol"))
    tracer = TraceRecorder(trace)
    keeper = StateKeeper() if call.keep_state else None
    listeners = [tracer, *([Checkpointer(out_dir, spec.data, sname, tracer)] if run.checkpoint_every else []),
                 *progress_listeners(call.progress),  # True: a ProgressBar; or the caller's listeners (CLI)
                 *([keeper] if keeper is not None else [])]
    names = [reg.pm.register(obj) for obj in listeners]
    try:
        reg.pm.hook.kopt_run_start(run=run)
        t1 = time.perf_counter()
        with interrupt_guard(run), out_of_memory(f"solver {sname!r} ran", SOLVE_ADVICE), warnings.catch_warnings():
            if call.planned_count:  # the centers note stays in solver_info.centers_note
                warnings.simplefilter("ignore", FeatureCountWarning)
            out = solver.run(problem, run)
        t_fit = time.perf_counter() - t1
        fit_s = run.elapsed  # read now: the holdout prediction below is not fit time
        if run.interrupted:
            reg.pm.hook.kopt_run_end(run=run, result=None)
            raise_for(run.stop_signal)  # KeyboardInterrupt, or Terminated (SIGTERM)
        info = {"solver": sname, "n_iter": out.n_iter, "status": out.status, **jsonable(out.info),
                "columns": problem.info.get("columns")}
        model = Model(out.predictor, problem.preprocessor, spec=spec.data, kernel=problem.kernel, loss=problem.loss,
                      backend=backend, info=info)
        t2 = time.perf_counter()
        with out_of_memory("scoring the test rows"):
            metrics, by_class = holdout_metrics(problem, model)
        t_pred = time.perf_counter() - t2
        model.info["metrics"] = metrics
        if not out.success:
            warnings.warn(f"{sname}: {out.message}", ConvergenceWarning, stacklevel=2)
        kept = None
        if keeper is not None:
            kept = keeper.snapshot(sname, spec.data, tracer.trace, fit_s, out.status) if keeper.save else snapshot
        fields = dict(objective=out.objective, dual=out.dual, gap=out.gap, n_iter=out.n_iter, success=out.success,
                      status=out.status, message=out.message, metrics=metrics, trace=tracer.trace,
                      timings=timings(t0=call.t0, load_s=t_load, fit_s=fit_s, predict_test_s=t_pred,
                                      run_fit_s=t_fit, plan=call.plan, lambda_auto=call.lambda_auto),
                      info=dict(out.info))
        report = build_report(spec, problem, model, fields, backend, rss_load, memory_plan=memory_plan,
                              by_class=by_class, lambda_auto=call.lambda_auto, auto=call.plan)
        result = Result(model=model, report=report, snapshot=kept, lambda_auto=call.lambda_auto, auto=call.plan,
                        **fields)
        reg.pm.hook.kopt_run_end(run=run, result=result)
    finally:
        for name in names:
            reg.pm.unregister(name=name)
    if call.calibrate:
        held_out = call.held_out
        if (held_out is None or held_out.get("scores") is None) and callable(out.held_out):
            held_out = out.held_out  # the solve's own held-out scores, where it made them (scored in the calibration)
        calibration = calibrate_model(spec, problem, model, held_out, solver)
        if calibration is not None:
            report["calibration"] = {k: v for k, v in calibration.items()}
            report["timings"]["calibration_s"] = calibration.pop("seconds")
            model.calibration = calibration
    if model.calibration is None and needs_calibration(problem):  # the model file says why it has none
        model.info["no_calibration"] = NO_CALIBRATION[
            "dask" if cluster is not None else "calibrate" if not call.calibrate else
            "rows" if problem.X is None or problem.y is None else "scores"]
    if call.write:
        check_finite_model(result)
        write_outputs(spec, result)
    return result


#: why a margin classifier's model has no probability calibration, as its ``info.no_calibration`` records it (what
#: ``kopt predict --proba`` and ``predict_proba`` then say)
NO_CALIBRATION = {
    "calibrate": "it was solved with calibrate=False; solve it again without it (the default calibrates)",
    "dask": "it was solved on a Dask cluster by a named solver, which has no held-out rows to calibrate on there; solve "
            "it with solver: auto (its held-out rows calibrate it on a cluster too), or without a scheduler",
    "rows": "its training rows were not in memory to score held-out rows on",
    "scores": "the held-out scores its calibration is fitted on were not finite",
}


def needs_calibration(problem) -> bool:
    """Whether the problem's model gets a probability calibration: a classifier of a margin loss (the logistic and
    softmax losses give their own probabilities)."""
    from .models.model import OWN_PROBABILITIES

    return problem.preprocessor.target in ("binary", "multiclass") and problem.loss.name not in OWN_PROBABILITIES


def calibrate_model(spec, problem, model, held_out, solver):
    """A margin classifier's probability calibration (:mod:`kopt.models.calibration`), or None (a regression, a
    logistic or softmax loss: their own probabilities; a non-finite score).

    The held-out scores are ``solver: auto``'s where it hands them on (``held_out``: its validation rows, scored by
    the search's model of the chosen settings, fitted on the other rows: no extra fit), or the solver's own where its
    solve made them (``held_out`` a function: ``SolverOutput.held_out``, e.g. ``krr_pairs``' exact pairs).  Otherwise
    -- every choice fixed, a solver named, or a route whose search scored another loss -- a seeded internal split:
    :func:`kopt.running.validation.make_splits` with the spec's seed holds out round(0.2 n) of the n training rows
    (the same rows ``solver: auto`` would hold out), the chosen spec is solved again on the other 80% and scores them:
    one more solve, on 80% of the rows.  The calibration's dict says which rows (``source``) and how many (``rows``);
    ``seconds`` is its cost."""
    from .models import calibration as _calibration
    from .numerics import rows as _rows
    from .numerics.backend import to_numpy

    if not needs_calibration(problem):
        return None
    on_cluster = problem.partitions is not None and problem.X is None
    if (problem.X is None or problem.y is None) and not on_cluster:
        return None
    t0 = time.perf_counter()
    if callable(held_out):  # the solver's own (SolverOutput.held_out): None where its solve made none
        held_out = held_out()
    given = held_out is not None and held_out.get("scores") is not None
    if on_cluster and not given:
        return None  # no held-out scores to calibrate on (solver: auto hands its own): NO_CALIBRATION["dask"]
    weights = None if problem.sample_weight is None else to_numpy(problem.sample_weight)
    binary = problem.preprocessor.target == "binary"
    if given:
        rows, scores, words = np.asarray(held_out["rows"]), np.asarray(held_out["scores"]), held_out["words"]
        y_va = _held_out_labels(problem, rows)
    else:
        tr, rows = _calibration.held_out_rows(problem.n, spec["seed"])
        sub = replace(problem, X=_rows.take(problem.X, problem.xp.asarray(tr)), y=problem.y[problem.xp.asarray(tr)],
                      X_test=None, y_test_raw=None,
                      sample_weight=None if weights is None else problem.xp.asarray(weights[tr] / weights[tr].mean()),
                      info=dict(problem.info))
        run = RunContext(spec, sub, registry().pm, out_dir=spec["output"]["dir"], checkpoint_every=0,
                         resume_state=None, start_iteration=0, total_iterations=spec["solver"].get("iterations"))
        with warnings.catch_warnings():  # the spec's own solve said what it had to say: this one is internal
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", FeatureCountWarning)
            out = solver.run(sub, run)
        X_va = _rows.take(problem.X, problem.xp.asarray(rows))
        scores = to_numpy(out.predictor.decision_function(X_va, model._context()))
        words = (f"a seeded internal split: {len(rows)} of {problem.n} training rows (make_splits, validation 0.2, "
                 f"seed {spec['seed']}), scored by the spec solved on the other {len(tr)}")
        y_va = to_numpy(problem.y).astype(np.float64)[rows]
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 1:
        scores = scores[:, None]
    if not np.isfinite(scores).all():
        return None
    ids = (y_va > 0).astype(np.int64) if binary else y_va.astype(np.int64)
    out = _calibration.fit(scores, ids, problem.n_classes if not binary else 2,
                           None if weights is None else weights[rows], source=words)
    out["seconds"] = time.perf_counter() - t0
    return out


def _held_out_labels(problem, rows):
    """The encoded training labels of the held-out ``rows`` (float64, in their order): from the problem's labels, or
    fetched from the cluster's partitions."""
    from .numerics.backend import to_numpy

    if problem.y is not None:
        return to_numpy(problem.y).astype(np.float64)[rows]
    order = np.argsort(rows, kind="stable")
    out = np.empty(len(rows))
    out[order] = np.asarray(problem.partitions.take_labels(np.asarray(rows)[order]), dtype=np.float64)
    return out


def check_finite_model(result):
    """Refuse to write a model holding NaN or inf (a diverged solve): exit status 2, nothing written."""
    arrays = result.model.to_arrays()
    bad = [k for k, v in arrays.items() if v.dtype.kind == "f" and not np.isfinite(v).all()]
    if bad:
        why = result.message or f"status {result.status}"
        raise NonFiniteModelError(f"{result.model.spec['name']}: the solve ended with NaN or inf in the model "
                                  f"({', '.join(bad)}), so no model was written: {why}")


def check_output_dir(spec: Spec):
    """Raise a SpecError at ``output.dir`` unless it is a folder kopt can write, or can be created."""
    out = os.path.abspath(spec["output"]["dir"])
    probe = out
    while not os.path.lexists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        where = "is" if probe == out else f"is inside {probe}, which is"
        raise spec.error(("output", "dir"), f"{out} {where} a file, not a folder; point output.dir (or --out) at a "
                                            "folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise spec.error(("output", "dir"), f"{out}: cannot write in {probe} (permission denied); point output.dir "
                                            "(or --out) at a folder you can write")


def holdout_metrics(problem, model):
    """``(metrics, by_class)``: the final test metrics, every test row scored through the model (standardisation
    included), and for a classifier each class's test rows and recall (:func:`kopt.numerics.metrics.by_class`; else None)."""
    if problem.partitions is not None:
        from .distributed.assemble import holdout_metrics as on_partitions
        from .numerics.metrics import defined

        return defined(on_partitions(problem, model), "the test partitions"), None
    raw = problem.info.get("raw_X_test")
    if raw is None or problem.y_test_raw is None:
        return {}, None
    from .numerics.metrics import by_class, defined, evaluate

    pre = problem.preprocessor
    scores = model.decision_function(raw)
    metrics = defined(evaluate(pre.target, problem.y_test_raw, scores, pre), problem.info.get("test") or "the test split")
    if pre.target not in ("binary", "multiclass"):
        return metrics, None
    return metrics, by_class(problem.y_test_raw, pre.decode(scores), pre.classes)


def write_outputs(spec, result):
    """Write the model, then the report, then the plot: a failing plot never costs the model or report."""
    from .errors import KoptError
    from .files.atomic import write_json, writing

    out = spec["output"]
    report_path = os.path.join(out["dir"], "report.json")
    with writing(out["dir"], "the model and report"):  # a full disk: exit 2 saying so, the old model kept
        os.makedirs(out["dir"], exist_ok=True)
        if out["model"]:
            result.report["model_file"] = result.model.save(os.path.join(out["dir"], "model"))
        if out["report"]:
            write_json(report_path, result.report)
    if out["plot"]:
        from .running.plotting import plot_trace

        try:
            result.report["plot_file"] = plot_trace(result.trace, os.path.join(out["dir"], "convergence.png"),
                                                    spec["name"], tol=spec["solver"].get("tol"),
                                                    solver=spec["solver"]["name"])
        except Exception as exc:
            kept = [f for f, on in (("the model", out["model"]), ("report.json", out["report"])) if on]
            note = f"; {' and '.join(kept)} are written in {out['dir']}" if kept else ""
            detail = str(exc) if isinstance(exc, KoptError) else f"{type(exc).__name__}: {exc}"
            raise KoptError(f"the convergence plot failed: {detail}{note}") from None
        if out["report"]:
            with writing(out["dir"], "report.json"):
                write_json(report_path, result.report)  # now with plot_file
    return out["dir"]
