"""The Python API: ``load_spec``, ``solve``, ``load_model``."""
from __future__ import annotations

import os
import platform
import sys
import time
import warnings

import numpy as np

from .running import checkpoint, outdir
from .numerics.backend import resolve
from .running.assemble import assemble, check_sample_weight, check_weights_given
from .data import as_dataset, load_data
from .data.progress import drawing
from .errors import ConvergenceWarning, DataError, NonFiniteModelError
from .running.checkpoint import StateKeeper
from .running.listeners import Checkpointer, TraceRecorder
from .running.logs import LOGGER, progress_listeners
from .numerics.memory import SOLVE_ADVICE, check_plan, out_of_memory, total
from .models.model import Model
from .contract.registry import registry
from .contract.result import Result
from .running.context import RunContext, interrupt_guard, raise_for
from .spec import Spec, load_spec


def _peak_rss_mb():
    from .numerics.memory import peak_rss_mb

    return peak_rss_mb()


def solve(spec, data=None, *, overrides=(), resume=False, progress=False, write=False, sample_weight=None,
          keep_state=False, scheduler=None, start_from=None, connect_timeout=None) -> Result:
    """Solve a spec (path, dict or Spec); ``data`` optionally supplies arrays instead of files.

    ``write=True`` writes the model, the JSON report and (``output.plot``) the
    convergence plot into ``output.dir``; checkpoints are written there whenever
    ``output.checkpoint_every`` > 0.  ``resume=True`` continues from the
    checkpoint in ``output.dir``; ``resume=snapshot`` continues, in memory, from the
    :class:`kopt.running.checkpoint.Snapshot` of an earlier run of the same problem (solvers with
    ``warm_start``; ``solver.iterations`` and ``solver.tol`` may differ), and
    ``keep_state=True`` keeps the final state as ``result.snapshot``.  ``start_from=snapshot`` starts
    a fresh run from the final state of a run of the same problem at another
    ``model.regularizer.lambda`` (solvers with ``lambda_warm_start``; ``kopt tune``'s λ path).
    ``sample_weight`` weighs the training rows of ``data`` (solvers with ``sample_weight``;
    :func:`check_sample_weight` says how).
    ``scheduler`` runs the spec on a Dask cluster (the ``kopt[dask]`` extra, docs/scale.md): ``"local:N"``,
    a scheduler address ``"tcp://HOST:8786"``, or a ``distributed.Client``; the same as the spec's
    ``execution: {engine: dask, scheduler: ...}``.  ``data`` may then be dask collections.
    ``connect_timeout``: seconds to wait for a scheduler address to answer (default 10).
    """
    t0 = time.perf_counter()
    if scheduler is not None:
        given = [f"execution.scheduler={scheduler}"] if isinstance(scheduler, str) else []
        overrides = (*overrides, "execution.engine=dask", *given)
    if not isinstance(spec, Spec) or overrides:
        spec = load_spec(spec, overrides, check_files=data is None)
    run = dict(data=data, resume=resume, progress=progress, write=write, sample_weight=sample_weight,
               keep_state=keep_state, start_from=start_from, t0=t0)
    # a MemoryError anywhere below is the user's to act on, not a bug (the stages name themselves where they can)
    with out_of_memory(f"solving {spec.get('name') or 'the spec'}", SOLVE_ADVICE):
        return _solve_spec(spec, scheduler, connect_timeout, run)


def _solve_spec(spec, scheduler, connect_timeout, run):
    """:func:`solve` after the spec is loaded: λ auto, a planning solver, a Dask cluster or a plain solve."""
    data, resume = run["data"], run["resume"]
    if spec.solver_class.plans:  # solver: auto -- measure, choose the spec, then solve it (local runs)
        return _solve_planned(spec, **run)
    if spec["model"]["regularizer"].get("lambda") == "auto":  # a local run (load_spec refuses it on Dask)
        if isinstance(resume, checkpoint.Snapshot) and isinstance(snapshot_lam := resume.lam, (int, float)):
            # continuing a run continues it at its λ (the estimators' warm_start)
            from .running.validation import LAMBDA, overrides_of

            spec = load_spec(spec.data, overrides_of({LAMBDA: snapshot_lam}), check_files=data is None)
            run["resume"] = resume
        else:
            return _solve_auto(spec, **run)
    if spec["execution"]["engine"] != "dask":
        return _solve(spec, cluster=None, **run)
    from .distributed.cluster import Cluster

    with Cluster(spec["execution"]["scheduler"] if scheduler is None or isinstance(scheduler, str)
                 else scheduler, connect_timeout=connect_timeout) as cluster:
        return _solve(spec, cluster=cluster, **run)


def _solve_auto(spec, *, data, resume, progress, write, sample_weight, keep_state, start_from, t0):
    """``model.regularizer.lambda: auto``: choose λ on a validation split of the training rows
    (:func:`kopt.running.validation.select_lambda`), then solve on all of them at that λ, started from the
    validation solve where the solver allows (``Solver.refit_warm_start``)."""
    from .running.validation import LAMBDA, overrides_of, select_lambda

    if isinstance(resume, checkpoint.Snapshot) or start_from is not None:
        raise spec.error(("model", "regularizer", "lambda"),
                         "lambda: auto chooses λ before a fresh solve; continuing or warm-starting a run (resume="
                         "snapshot, start_from) needs that run's λ: set model.regularizer.lambda to a number")
    check_weights_given(spec, data, sample_weight)
    if write or spec["output"]["checkpoint_every"]:
        check_output_dir(spec)  # before the data and the search
    if write:
        outdir.check_overwrite(spec, ignore=("model.regularizer.lambda",))  # its λ is not chosen yet
    with drawing(progress), out_of_memory(_reading(spec, data)):
        ds = as_dataset(data) if data is not None else load_data(spec["data"])
    weights = None if sample_weight is None else check_sample_weight(sample_weight, ds.X.shape[0])
    t_load = time.perf_counter() - t0
    LOGGER.info("%s: lambda: auto: choosing λ on a validation split of %s training rows", spec.get("name"),
                f"{ds.X.shape[0]:,}")
    choice = select_lambda(spec, ds, solve=solve, sample_weight=weights, progress=bool(progress))
    LOGGER.info("%s: lambda: auto chose λ = %g (%d values tried, %.1f s)", spec.get("name"), choice.lam,
                len(choice.path), choice.select_s)
    fixed = load_spec(spec.data, overrides_of({LAMBDA: choice.lam}), check_files=False)
    fixed.source, fixed.positions, fixed.base_dir = spec.source, spec.positions, spec.base_dir
    solver_cls = registry().get("solver", spec["solver"]["name"])
    start_state = None
    if choice.snapshot is not None and weights is None and solver_cls.refit_warm_start and resume is False:
        solver = solver_cls(**{k: v for k, v in spec["solver"].items() if k != "name"})
        saved = {k: v for k, v in choice.snapshot.resume_state().items() if k != "_elapsed"}
        state = solver.refit_state(saved, choice.rows, ds.X.shape[0])
        if state is not None:
            start_state = {**state, "_elapsed": 0.0}
    choice.refit_warm = start_state is not None
    auto = {**choice.as_dict(), "load_s": t_load}
    return _solve(fixed, cluster=None, data=ds, resume=resume, progress=progress, write=write,
                  sample_weight=sample_weight, keep_state=keep_state, start_from=None, t0=t0,
                  start_state=start_state, auto=auto)


def _solve_planned(spec, *, data, resume, progress, write, sample_weight, keep_state, start_from, t0):
    """A solver with ``plans`` (``solver: auto``): assemble the problem, let the solver measure and choose
    the concrete spec (:meth:`kopt.contract.components.Solver.plan`), then solve that spec on every training row."""
    if resume is not False or start_from is not None:
        raise spec.error(("solver", "name"),
                         f"solver {spec['solver']['name']!r} chooses the spec before a fresh solve; to continue or "
                         "warm-start a run, solve the spec it chose (report.json's spec) and resume that")
    check_weights_given(spec, data, sample_weight)
    if write or spec["output"]["checkpoint_every"]:
        check_output_dir(spec)  # before the data and the search
    with drawing(progress), out_of_memory(_reading(spec, data)):
        ds = as_dataset(data) if data is not None else load_data(spec["data"])
    t1 = time.perf_counter()
    with out_of_memory(_reading(spec, data)):
        problem = assemble(spec, ds, sample_weight=sample_weight)
    planner = spec.solver_class(**{k: v for k, v in spec["solver"].items() if k != "name"})
    log = (lambda line: print(f"kopt: {line}", file=sys.stderr, flush=True)) if progress else None
    with out_of_memory(f"solver {spec['solver']['name']!r} chose the spec to solve"):
        chosen = planner.plan(problem, spec.given, log)
    record = chosen.record
    record["search_s"] = time.perf_counter() - t1  # assembling included: the search's whole cost
    concrete = spec_with(spec, chosen.overrides)
    del problem  # the chosen spec is assembled again (its kernel differs); only the start state carries over
    return _solve(concrete, cluster=None, data=ds, resume=False, progress=progress, write=write,
                  sample_weight=sample_weight, keep_state=keep_state, start_from=None, t0=t0, plan=record,
                  start_state=chosen.start_state)


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
    parts = spec["execution"]["partitions"] or cluster.n_workers
    problem = distributed.assemble(spec, data, backend, cluster.client, parts)
    problem.info["execution"] = {"engine": "dask", "workers": cluster.n_workers,
                                 "partitions": len(problem.partitions.rows)}
    return problem


def _solve(spec, **run):
    """:func:`_run_solve`, holding the output folder (:mod:`kopt.running.outdir`) when the run writes there."""
    if not (run["write"] or spec["output"]["checkpoint_every"]):
        return _run_solve(spec, **run)
    check_output_dir(spec)  # before the data and the solve: a long run never ends in "cannot write"
    with outdir.claimed(spec):
        if run["write"]:
            outdir.check_overwrite(spec)
        return _run_solve(spec, **run)


def _run_solve(spec, *, data, resume, progress, write, sample_weight, keep_state, start_from, t0, cluster,
               start_state=None, auto=None, plan=None):
    backend = resolve(spec["backend"])
    reg = registry()
    sname = spec["solver"]["name"]
    snapshot = resume if isinstance(resume, checkpoint.Snapshot) else None
    if snapshot is not None:
        checkpoint.check_continuation(snapshot, spec, reg.get("solver", sname))
    with drawing(progress):
        problem = _problem(spec, data, backend, sample_weight, cluster)
    t_load = time.perf_counter() - t0 - (auto["select_s"] if auto else 0.0) - (plan["search_s"] if plan else 0.0)
    rss_load = _peak_rss_mb()

    solver = reg.get("solver", sname)(**{k: v for k, v in spec["solver"].items() if k != "name"})
    # the solver's memory plan against the memory available, before it allocates anything (a plan solver: auto
    # chose and whose system it hands over was checked by auto's own search)
    memory_plan = [] if cluster is not None or (plan is not None and start_state is not None) else \
        check_plan(solver, solver.memory_sizes(problem))
    out_dir = spec["output"]["dir"]
    resume_state, start, trace = None, 0, []
    if snapshot is not None:
        resume_state, start, trace = snapshot.resume_state(), snapshot.iteration, list(snapshot.trace)
    elif resume:
        resume_state, meta = checkpoint.read(out_dir, spec.data, sname, backend.name)
        start, trace = meta["iteration"], meta.get("trace", [])
    elif start_from is not None:
        resume_state = checkpoint.warm_start_state(start_from, spec, solver)
    elif start_state is not None:  # lambda: auto's refit from its validation solve; solver: auto's plan
        resume_state = start_state
    run = RunContext(spec, problem, reg.pm, out_dir=out_dir, checkpoint_every=spec["output"]["checkpoint_every"],
                     resume_state=resume_state, start_iteration=start,
                     total_iterations=spec["solver"].get("iterations"))
    tracer = TraceRecorder(trace)
    listeners = [tracer]
    checkpointer = None
    if run.checkpoint_every:
        checkpointer = Checkpointer(out_dir, spec.data, sname, tracer)
        listeners.append(checkpointer)
    listeners.extend(progress_listeners(progress))  # True: a ProgressBar; or the caller's listeners (CLI)
    keeper = StateKeeper() if keep_state else None
    if keeper is not None:
        listeners.append(keeper)
    names = [reg.pm.register(obj) for obj in listeners]
    try:
        reg.pm.hook.kopt_run_start(run=run)
        t1 = time.perf_counter()
        with interrupt_guard(run), out_of_memory(f"solver {sname!r} ran", SOLVE_ADVICE):
            out = solver.run(problem, run)
        t_fit = time.perf_counter() - t1
        fit_s = run.elapsed  # read now: the holdout prediction below is not fit time
        if run.interrupted:
            reg.pm.hook.kopt_run_end(run=run, result=None)
            raise_for(run.stop_signal)  # KeyboardInterrupt, or Terminated (SIGTERM)
        info = {"solver": sname, "n_iter": out.n_iter, "status": out.status, **_jsonable(out.info),
                "columns": problem.info.get("columns")}
        t2 = time.perf_counter()
        with out_of_memory("scoring the test rows"):
            metrics, by_class = holdout_metrics(problem, Model(out.predictor, problem.preprocessor, spec=spec.data,
                                                               kernel=problem.kernel, loss=problem.loss,
                                                               backend=backend))
        t_pred = time.perf_counter() - t2
        model = Model(out.predictor, problem.preprocessor, spec=spec.data, kernel=problem.kernel, loss=problem.loss,
                      backend=backend, info={**info, "metrics": metrics})
        if not out.success:
            warnings.warn(f"{sname}: {out.message}", ConvergenceWarning, stacklevel=2)
        kept = None
        if keeper is not None:
            kept = keeper.snapshot(sname, spec.data, tracer.trace, fit_s, out.status) if keeper.save else snapshot
        timings = {"load_s": t_load, "fit_s": fit_s, "predict_test_s": t_pred, "wall_s": time.perf_counter() - t0,
                   "this_session_fit_s": t_fit}
        if plan is not None:
            timings["auto_s"] = plan["search_s"]
        if auto is not None:
            timings["lambda_auto_s"] = auto["select_s"]
            auto = {k: v for k, v in auto.items() if k != "load_s"}
        fields = dict(objective=out.objective, dual=out.dual, gap=out.gap, n_iter=out.n_iter, success=out.success,
                      status=out.status, message=out.message, metrics=metrics, trace=tracer.trace, timings=timings,
                      info=dict(out.info))
        report = build_report(spec, problem, fields, backend, rss_load)
        if memory_plan:
            report["memory"]["plan"] = {"bytes": total(memory_plan), "items": [list(item) for item in memory_plan]}
        if by_class is not None:
            report["metrics_by_class"] = by_class
        if auto is not None:
            report["lambda_auto"] = auto
        if plan is not None:
            report["auto"] = plan
        report["model_sha256"] = model.content_hash()  # compares models whatever their timestamps (kopt model-hash)
        result = Result(model=model, report=report, snapshot=kept, lambda_auto=auto, auto=plan, **fields)
        reg.pm.hook.kopt_run_end(run=run, result=result)
    finally:
        for name in names:
            reg.pm.unregister(name=name)
    if write:
        check_finite_model(result)
        write_outputs(spec, result)
    return result


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


def _jsonable(d):
    out = {}
    for k, v in d.items():
        if isinstance(v, (np.generic,)):
            v = v.item()
        if isinstance(v, (int, float, str, bool, type(None), list, dict)):
            out[k] = v
    return out


def build_report(spec, problem, result: dict, backend, rss_load):
    import scipy

    from .contract.version import __version__

    return {
        "name": spec["name"],
        "spec": spec.data,
        "versions": {"kopt": __version__, "python": sys.version.split()[0], "numpy": np.__version__,
                     "scipy": scipy.__version__, "platform": platform.platform()},
        "backend": backend.name,
        "backend_note": backend.note,
        "seed": spec["seed"],
        "data": {"train": problem.info["train"], "test": problem.info["test"], "n_train": problem.n,
                 "n_features": problem.d, "n_test": _n_test(problem),
                 "sample_weight": problem.sample_weight is not None,
                 "standardized": problem.preprocessor.scale is not None,
                 "standardize_auto": problem.preprocessor.auto_rule,
                 **label_fields(problem)},
        "execution": problem.info.get("execution", {"engine": "local"}),
        "kernel": {"name": problem.kernel.name, **problem.kernel.options.as_dict()},
        "objective": result["objective"],
        "dual": result["dual"],
        "gap": result["gap"],
        "n_iter": result["n_iter"],
        "success": result["success"],
        "message": result["message"],
        "metrics": result["metrics"],
        "timings": result["timings"],
        "memory": {"peak_rss_after_load_mb": rss_load, "peak_rss_mb": _peak_rss_mb()},
        "status": result["status"],
        "solver_info": _jsonable(result["info"]),
        "trace": result["trace"],
    }


def label_fields(problem) -> dict:
    """The report's words on the labels: the label column's name (a file with a header), the classes in the
    user's own names (a classifier; sorted, as the model keeps them) and the one AUC scores as positive."""
    out = {}
    label = (problem.info.get("columns") or {}).get("label")
    if label is not None:
        out["label"] = label
    pre = problem.preprocessor
    if pre.target in ("binary", "multiclass") and pre.classes is not None:
        out["classes"] = [c.item() if hasattr(c, "item") else c for c in pre.classes]
        if pre.target == "binary":
            out["positive_class"] = out["classes"][1]
    return out


def _n_test(problem):
    if problem.partitions is not None:
        return int(sum(problem.partitions.test_rows)) or None
    return None if problem.X_test is None else problem.X_test.shape[0]


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
