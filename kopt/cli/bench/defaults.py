"""``kopt bench defaults``: kopt's defaults against SVC on every set, nobody tuning either.

For each set, four configurations, each fit in a process of its own, one after the other,
``repeat`` times alternating (the medians are reported):

* ``spec``: a spec that names only the data, the loss and the kernel (``loss: auto`` for a classification set, the
  square loss for the regression set; gaussian) -- ``solver: auto``, ``bandwidth: auto``, ``lambda: auto`` by default;
* ``estimator``: ``KernelClassifier()`` / ``KernelRegressor()`` with no arguments, on the arrays as a
  scikit-learn user holds them;
* ``svc_c10`` and ``svc``: ``SVC(C=10, gamma="scale")`` and ``SVC()``, features z-scored where kopt's own
  ``standardize: auto`` rule z-scores them (not sparse rows, not 8-bit pixels: SVC on z-scored mnist-10k
  pixels loses 2.4 points); for the regression set ``SVR(C=10)`` and ``SVR()``, the target z-scored too.

Sides run when asked (``--sides``): ``svc_c10_other`` and ``svc_other``, the same SVCs on the other scaling (raw
where kopt's rule z-scores, z-scored where it does not), so the better SVC is the best of four; ``svc_grid``,
``GridSearchCV(SVC())`` over C in 10^-1..10^3 and γ in 10^-1..10^1 times ``gamma="scale"`` (5 x 5, 3 folds,
n_jobs=1) on kopt's scaling, then its refit on every training row: the cost of tuning that kopt's defaults save
(reported beside the better SVC, not counted as the peer the targets are taken against; it runs under a time limit of
its own, ``--grid-time-limit``, 1,200 s by default, and a grid killed at it reports ``timed_out`` and
``fit_s_at_least``: the cost is at least that); ``spec_squared_hinge``,
the spec naming ``loss: squared_hinge`` (binary sets only); ``spec_square``, the spec naming the square loss.

Fit seconds exclude loading (kopt's include its search: ``timings.auto_s + fit_s``); peak MB is the
process's whole peak resident memory, loading included, the same way for every side.  The targets:
accuracy at least the better SVC's minus 0.3 points (RMSE at most 1.02x the better
SVR's), fit time at most 0.5x and peak memory at most 1x that SVC's.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from .runs import child, chosen_sets, emit, peak_mb, summarize

#: set -> (the spec's data section, task)
SETS = {
    "higgs-12k": ({"source": "higgs-12k"}, "binary"),
    "ijcnn1": ({"source": "ijcnn1"}, "binary"),
    "a9a": ({"source": "a9a"}, "binary"),
    "w8a": ({"source": "w8a", "test_fraction": 0.2, "split_seed": 0}, "binary"),
    "cal_housing": ({"source": "cal_housing", "split_seed": 0}, "real"),
    "reuters": ({"source": "reuters"}, "binary"),
    "mnist-10k": ({"source": "mnist"}, "multiclass"),
}
SIDES = ("spec", "estimator", "svc_c10", "svc")
#: sides run when asked (``--sides``; the module docstring): the spec naming the squared hinge (binary sets only) or the
#: square loss, the SVCs on the other scaling, and GridSearchCV(SVC)
EXTRA_SIDES = ("spec_squared_hinge", "spec_square", "svc_c10_other", "svc_other", "svc_grid")
#: the sides that are kopt (their ratios and targets are reported), and the SVC sides the better peer is chosen among
KOPT_SIDES = ("spec", "estimator", "spec_squared_hinge", "spec_square")
PEER_SIDES = ("svc_c10", "svc", "svc_c10_other", "svc_other")
#: GridSearchCV(SVC)'s grid: C, and γ as multiples of gamma="scale" (5 x 5), and its folds
GRID_C = (0.1, 1.0, 10.0, 100.0, 1000.0)
GRID_GAMMA = (0.1, 0.3162, 1.0, 3.162, 10.0)
GRID_FOLDS = 3
#: accuracy points (as a fraction) below the better SVC, and the RMSE ratio above the better SVR
ACCURACY_SLACK, RMSE_RATIO = 0.003, 1.02
FIT_RATIO, MEMORY_RATIO = 0.5, 1.0


def spec_of(name: str, loss_name: str | None = None) -> dict:
    """The set's spec: the loss left to auto for a classification set (``loss_name`` None; the square loss for the
    regression set), or the loss named."""
    data, task = SETS[name]
    if loss_name is None:
        loss = {"name": "square"} if task == "real" else {"name": "auto"}
    elif loss_name != "square":
        loss = {"name": loss_name}
    else:
        loss = {"name": "square"} if task == "real" else {"name": "square", "target": "binary"}
    return {"name": f"defaults_{name}", "data": dict(data), "model": {"loss": loss, "kernel": {"name": "gaussian"}},
            "output": {"model": False, "report": False, "plot": False}}


def _arrays(name: str):
    """The set's training and test rows as kopt reads them (no preprocessing)."""
    import kopt
    from kopt.data import load_data

    return load_data(kopt.load_spec(spec_of(name, "square"))["data"])


def _metrics(task, y_test, pred) -> dict:
    y_test = np.asarray(y_test)
    if task == "real":
        return {"rmse": float(np.sqrt(np.mean((np.asarray(pred, dtype=np.float64) - y_test.astype(np.float64)) ** 2)))}
    return {"accuracy": float(np.mean(np.asarray(pred).astype(y_test.dtype) == y_test))}


def run_side(name: str, side: str) -> dict:
    """One fit of one configuration (in a child process): its metric, seconds and memory."""
    import warnings

    task = SETS[name][1]
    if side in ("spec", "spec_squared_hinge", "spec_square"):
        import kopt

        loss = {"spec": None, "spec_squared_hinge": "squared_hinge", "spec_square": "square"}[side]
        spec = spec_of(name, loss)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = kopt.solve(spec)
        metric = {k: r.metrics[k] for k in ("accuracy", "rmse") if k in r.metrics}
        auto = r.auto or {}
        solved = r.report["spec"]["model"]["loss"]["name"]
        return {"config": f"spec: loss {spec['model']['loss']['name']}, kernel gaussian -> {auto.get('route')} "
                          f"({solved}), {auto.get('centers')} centers, lambda {auto.get('lambda')}", **metric,
                "fit_s": r.timings["fit_s"] + r.timings.get("auto_s", 0.0), "search_s": r.timings.get("auto_s", 0.0),
                "predict_s": r.timings["predict_test_s"], "peak_mb": peak_mb()}
    ds = _arrays(name)
    X, y, Xt, yt = ds.X, np.asarray(ds.y), ds.X_test, np.asarray(ds.y_test)
    if side == "estimator":
        from kopt.sklearn import KernelClassifier, KernelRegressor

        est = KernelRegressor() if task == "real" else KernelClassifier()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            est.fit(X, y)
            fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = est.predict(Xt)
        predict_s = time.perf_counter() - t0
        return {"config": f"{type(est).__name__}() -> {est.route_}, {est.n_features_} centers, lambda {est.lam_}",
                **_metrics(task, yt, pred), "fit_s": fit_s, "predict_s": predict_s, "peak_mb": peak_mb()}
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC, SVR

    from ...data.preprocess import needs_scaling

    # kopt's standardize: auto rule, the same for both sides (docs/defaults.md); the *_other sides take the other one
    scale = needs_scaling(X) != side.endswith("_other")
    if scale:
        scaler = StandardScaler(with_mean=not hasattr(X, "tocsr")).fit(X)
        X, Xt = scaler.transform(X), scaler.transform(Xt)
    C = 10.0 if side.startswith("svc_c10") else 1.0
    model = SVR(C=C) if task == "real" else SVC(C=C)
    words = f"{type(model).__name__}(C={C:g}, gamma='scale')"
    if side == "svc_grid":
        from sklearn.model_selection import GridSearchCV

        gamma = _scale_gamma(X)
        model = GridSearchCV(SVR() if task == "real" else SVC(),
                             {"C": list(GRID_C), "gamma": [g * gamma for g in GRID_GAMMA]}, cv=GRID_FOLDS, n_jobs=1)
        words = (f"GridSearchCV({'SVR' if task == 'real' else 'SVC'}(), C {GRID_C[0]:g}..{GRID_C[-1]:g} x gamma "
                 f"{GRID_GAMMA[0]:g}..{GRID_GAMMA[-1]:g} x scale, {GRID_FOLDS} folds)")
    mu, sd = (float(y.mean()), float(y.std())) if task == "real" else (0.0, 1.0)
    t0 = time.perf_counter()
    model.fit(X, (y - mu) / sd if task == "real" else y)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = model.predict(Xt)
    predict_s = time.perf_counter() - t0
    if task == "real":
        pred = pred * sd + mu
    extra = {}
    if side == "svc_grid":
        best = model.best_params_
        words += f" -> C {best['C']:g}, gamma {best['gamma'] / gamma:g} x scale"
        extra = {"fits": len(GRID_C) * len(GRID_GAMMA) * GRID_FOLDS + 1}
    return {"config": f"{words} on {'z-scored' if scale else 'raw'} features", **_metrics(task, yt, pred),
            "fit_s": fit_s, "predict_s": predict_s, "peak_mb": peak_mb(), **extra}


def _scale_gamma(X) -> float:
    """scikit-learn's ``gamma="scale"``: 1 / (d Var X), over every entry of X (dense or sparse)."""
    if hasattr(X, "tocsr"):
        X = X.tocsr()
        mean = X.mean()
        var = float(X.multiply(X).mean() - mean ** 2)
    else:
        var = float(np.asarray(X).var())
    return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


#: seconds one run of a side may take (``--time-limit``), and one run of ``svc_grid`` (``--grid-time-limit``): its 76
#: fits take 8 min to hours on the large-C sets, so it has a limit of its own; a run past its limit is killed and its
#: side reports ``timed_out`` and ``fit_s_at_least``
TIME_LIMIT_S = 3600.0
GRID_TIME_LIMIT_S = 1200.0


def compare(name: str, repeat: int = 3, timeout: float = TIME_LIMIT_S, sides=SIDES,
            grid_timeout: float = GRID_TIME_LIMIT_S) -> dict:
    """The set's JSON line: every side's medians, the better SVC, the ratios and the targets met.  A side whose run
    passed its time limit (``timeout``; ``grid_timeout`` for ``svc_grid``) is not run again."""
    from .roofline import run_record

    task = SETS[name][1]
    metric = "rmse" if task == "real" else "accuracy"
    if task != "binary":
        sides = tuple(s for s in sides if s != "spec_squared_hinge")  # the squared hinge is a binary loss
    load0 = os.getloadavg()
    runs = {side: [] for side in sides}
    for r in range(repeat):
        for side in sides:
            if any(run.get("timed_out") for run in runs[side]):
                continue  # past its limit once: a second run would be too
            limit = grid_timeout if side == "svc_grid" else timeout
            res = child("kopt.cli.bench.defaults", ["--child", side, "--set", name], limit)
            runs[side].append(res)
            print(f"  {name} {side} run {r + 1}/{repeat}: " + (res.get("error") or ", ".join(
                f"{k} {v:.4g}" for k, v in res.items() if isinstance(v, float))), file=sys.stderr, flush=True)
    out = {side: summarize(runs[side]) for side in sides}
    peers = [s for s in PEER_SIDES if s in out and metric in out[s]]
    line = {"set": name, "metric": metric, **out, "repeat": repeat, "loadavg_before": list(load0),
            "loadavg_after": list(os.getloadavg()), **run_record()}
    if not peers:
        return line
    better = (min if metric == "rmse" else max)(peers, key=lambda s: out[s][metric])
    ref = out[better]
    line["better_peer"] = better
    for side in KOPT_SIDES:
        mine = out.get(side, {})
        if metric not in mine:
            continue
        ratios = {"fit": mine["fit_s"] / ref["fit_s"], "peak_mb": mine["peak_mb"] / ref["peak_mb"],
                  "predict": mine["predict_s"] / ref["predict_s"]}
        if metric == "rmse":
            ratios["rmse"] = mine["rmse"] / ref["rmse"]
            good = ratios["rmse"] <= RMSE_RATIO
        else:
            ratios["accuracy_points"] = 100.0 * (mine["accuracy"] - ref["accuracy"])
            good = mine["accuracy"] >= ref["accuracy"] - ACCURACY_SLACK
        line[f"{side}_ratios"] = ratios
        line[f"{side}_met"] = {metric: bool(good), "fit": bool(ratios["fit"] <= FIT_RATIO),
                               "peak_mb": bool(ratios["peak_mb"] <= MEMORY_RATIO)}
    return line


def defaults(args) -> int:
    """``kopt bench defaults`` (args: sets, repeat, sides, time_limit, grid_time_limit, json)."""
    from ...errors import KoptError

    for key, flag in (("time_limit", "--time-limit"), ("grid_time_limit", "--grid-time-limit")):
        value = getattr(args, key, None)
        if value is not None and not value > 0:
            raise KoptError(f"kopt bench defaults: {flag} must be a number of seconds above 0, not {value:g}")
    for name in chosen_sets(args.sets, SETS):
        emit(compare(name, repeat=args.repeat, sides=tuple(args.sides or SIDES),
                     timeout=getattr(args, "time_limit", None) or TIME_LIMIT_S,
                     grid_timeout=getattr(args, "grid_time_limit", None) or GRID_TIME_LIMIT_S), args.json)
    return 0


def main(argv=None):
    """The child processes' entry point: ``python -m kopt.cli.bench.defaults --child SIDE --set NAME``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m kopt.cli.bench.defaults")
    ap.add_argument("--child", choices=SIDES + EXTRA_SIDES, required=True)
    ap.add_argument("--set", dest="name", choices=list(SETS), required=True)
    a = ap.parse_args(argv)
    print(json.dumps(run_side(a.name, a.child)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
