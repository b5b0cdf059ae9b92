"""report.json's content: what :func:`kopt.solve` reports of a run (``Result.report``).

The spec, the versions, the backend, the data's words (rows, features, labels), the execution, the kernel,
the certificate (objective, dual, gap), the holdout metrics, the timings, the memory, the solver's own info
and the trace; then, where they apply, the memory plan, the metrics per class, ``lambda: auto``'s choice,
``solver: auto``'s plan and the model's content hash.  :func:`kopt.api.write_outputs` adds ``model_file``
and ``plot_file`` when it writes them.
"""
from __future__ import annotations

import platform
import sys
import time

import numpy as np

from ..numerics.memory import peak_rss_mb, total


def jsonable(d: dict) -> dict:
    """The entries of ``d`` JSON can hold (NumPy scalars as Python ones; other values left out)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, (np.generic,)):
            v = v.item()
        if isinstance(v, (int, float, str, bool, type(None), list, dict)):
            out[k] = v
    return out


def timings(*, t0, load_s, fit_s, predict_test_s, run_fit_s, plan=None, lambda_auto=None) -> dict:
    """The run's ``timings`` in seconds; ``wall_s`` from ``t0`` (the call's start) to now, ``fit_s`` the solve's
    seconds over every run of it (a resumed run adds its own to the checkpoint's), ``run_fit_s`` this run's own share,
    ``auto_s`` the search of ``solver: auto`` (``plan``) and ``lambda_auto_s`` the choice of ``lambda: auto``."""
    out = {"load_s": load_s, "fit_s": fit_s, "predict_test_s": predict_test_s, "wall_s": time.perf_counter() - t0,
           "run_fit_s": run_fit_s}
    if plan is not None:
        out["auto_s"] = plan["search_s"]
    if lambda_auto is not None:
        out["lambda_auto_s"] = lambda_auto["select_s"]
    return out


def build_report(spec, problem, model, fields: dict, backend, rss_load, *, memory_plan=(), by_class=None,
                 lambda_auto=None, auto=None) -> dict:
    """report.json of a finished run: ``fields`` are the Result's (objective, dual, gap, n_iter, success, status,
    message, metrics, trace, timings, info); ``rss_load`` the peak resident MiB once the data were loaded."""
    import scipy

    from ..contract.version import __version__

    report = {
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
                 "held_out_rows": int(problem.info.get("held_out_rows", 0)),
                 "standardized": problem.preprocessor.scale is not None,
                 "standardize_auto": problem.preprocessor.auto_rule,
                 **label_fields(problem)},
        "execution": problem.info.get("execution", {"engine": "local"}),
        "kernel": {"name": problem.kernel.name, **problem.kernel.options.as_dict()},
        "objective": fields["objective"],
        "dual": fields["dual"],
        "gap": fields["gap"],
        "n_iter": fields["n_iter"],
        "success": fields["success"],
        "message": fields["message"],
        "metrics": fields["metrics"],
        "timings": fields["timings"],
        "memory": {"peak_rss_after_load_mb": rss_load, "peak_rss_mb": peak_rss_mb()},
        "status": fields["status"],
        "solver_info": jsonable(fields["info"]),
        "trace": fields["trace"],
    }
    if memory_plan:
        report["memory"]["plan"] = {"bytes": total(memory_plan), "items": [list(item) for item in memory_plan]}
    if by_class is not None:
        report["metrics_by_class"] = by_class
    if lambda_auto is not None:
        report["lambda_auto"] = lambda_auto
    if auto is not None:
        report["auto"] = auto
    report["model_sha256"] = model.content_hash()  # compares models whatever their timestamps (kopt model-hash)
    return report


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


__all__ = ["build_report", "jsonable", "label_fields", "timings"]
