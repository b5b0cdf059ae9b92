"""``kopt bench tune``: ``kopt tune`` against ``GridSearchCV(SVC)`` -- the same grid size, the same folds.

For each set two configurations, each in a process of its own, one after the other:

* ``kopt``: :func:`kopt.selection.tune` of the square loss (``target: binary``; one ±1 output per class beyond
  two) on ``krr_nystrom``'s M Nyström centers, a grid of λ (``--lambdas``) x ``bandwidth_factor``
  (``--factors``, of the ``scale`` rule) on ``--folds`` seeded folds of the training rows, then the best
  spec refitted on every training row (a normal :func:`kopt.solve`) and scored on the test split;
* ``svc``: ``GridSearchCV(SVC(), {"C": --C, "gamma": ...}, cv=the same folds)`` -- the very row indices
  of :func:`kopt.running.validation.make_splits` at the spec's seed --, refit on every training row, scored on the
  test split.  SVC sees the features kopt solves on (kopt's ``standardize: auto`` preprocessing) and the
  same bandwidths: γ = 1/(2σ²) for σ = factor x the ``scale`` rule's length, as kopt resolves it.

The grids have the same number of points (λ and C values, one per bandwidth factor); the searches
run on the same rows.  Seconds are the search's wall time with the refit, without loading the data;
``GridSearchCV`` runs ``--jobs`` fits at a time (default: the CPUs available, as kopt's BLAS uses them).
The target: kopt's seconds at most 0.3x SVC's.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from .runs import child, chosen_sets, emit, peak_mb

#: set -> (the spec's data section, task, Nyström centers): the count solver auto chose there (docs/defaults.md),
#: at most 2,048
SETS = {
    "mnist-10k": ({"source": "mnist"}, "multiclass", 2048),
    "ijcnn1": ({"source": "ijcnn1"}, "binary", 1024),
}
LAMBDAS = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4)
FACTORS = (0.5, 0.707107, 1.0, 1.41421)
#: SVC's C values: half decades around its defaults C = 1 and C = 10 (kopt bench defaults)
CS = (0.3, 1.0, 3.0, 10.0, 30.0)
FOLDS, SEED = 3, 0
TARGET = 0.3


def spec_of(name: str, centers=None) -> dict:
    data, _, count = SETS[name]
    return {"name": f"tune_{name}", "seed": SEED, "data": dict(data),
            "model": {"loss": {"name": "square", "target": "binary"},
                      "kernel": {"name": "gaussian", "bandwidth": "scale"},
                      "regularizer": {"name": "l2", "lambda": LAMBDAS[0]}, "form": "primal",
                      "features": {"kind": "nystrom", "count": int(centers or count)}},
            "solver": {"name": "krr_nystrom"},
            "output": {"model": False, "report": False, "plot": False}}


def _arrays(name):
    import kopt
    from kopt.data import load_data

    return load_data(kopt.load_spec(spec_of(name))["data"])


def run_kopt(name, lambdas, factors, folds, centers) -> dict:
    """``kopt tune`` with refit, on the arrays (loaded before the clock starts)."""
    import warnings

    from ...running.validation import LAMBDA
    from ...selection.tune import tune

    ds = _arrays(name)
    grid = [f"{LAMBDA}=" + ",".join(repr(float(v)) for v in lambdas),
            "model.kernel.bandwidth_factor=" + ",".join(repr(float(v)) for v in factors)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        r = tune(spec_of(name, centers), grid, folds=folds, refit=True, data=(ds.X, ds.y, ds.X_test, ds.y_test))
        seconds = time.perf_counter() - t0
    shared = r.info.get("shared") or {}
    return {"config": f"kopt tune: krr_nystrom, {centers or SETS[name][2]} centers, {len(r.rows)} points x {folds} folds",
            "seconds": seconds, "cv_score": r.best_score, "test_accuracy": r.refit.metrics["accuracy"],
            "best": {k.rsplit(".", 1)[1]: v for k, v in r.best_params.items()},
            "points": len(r.rows), "refit_s": r.refit.timings["fit_s"], "system_s": shared.get("system_s"),
            "path_s": shared.get("path_s"), "assemble_s": shared.get("assemble_s"), "systems": shared.get("systems"),
            "unresolved": sum(int(row.get("unresolved", 0)) for row in r.rows), "peak_mb": peak_mb()}


def run_svc(name, cs, factors, folds, jobs) -> dict:
    """``GridSearchCV(SVC)`` on kopt's preprocessed features, kopt's bandwidths and kopt's folds."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    import kopt

    from ...contract.bandwidth import resolve_bandwidth
    from ...contract.registry import registry
    from ...data import Preprocessor
    from ...running.validation import make_splits

    ds = _arrays(name)
    spec = kopt.load_spec(spec_of(name))
    pre = Preprocessor.fit(ds.X, ds.y, SETS[name][1], standardize=spec["data"]["standardize"])
    X, Xt = pre.transform(ds.X, dtype=np.float64), pre.transform(ds.X_test, dtype=np.float64)
    y, yt = np.asarray(ds.y), np.asarray(ds.y_test)
    cls = registry().get("kernel", "gaussian")
    sigmas = [resolve_bandwidth(cls, {"bandwidth": "scale", "bandwidth_factor": f}, X, SEED)["bandwidth"]
              for f in factors]
    gammas = [1.0 / (2.0 * s * s) for s in sigmas]
    cv = [(tr, va) for tr, va in make_splits(X.shape[0], SEED, folds=folds)]  # kopt tune's folds, row for row
    search = GridSearchCV(SVC(), {"C": list(cs), "gamma": gammas}, cv=cv, n_jobs=jobs, refit=True)
    t0 = time.perf_counter()
    search.fit(X, y)
    seconds = time.perf_counter() - t0
    best = search.best_params_
    return {"config": f"GridSearchCV(SVC, {len(cs)} C x {len(gammas)} gamma, cv={folds} kopt folds, n_jobs={jobs})",
            "seconds": seconds, "cv_score": float(search.best_score_),
            "test_accuracy": float(np.mean(search.predict(Xt) == yt)),
            "best": {"C": best["C"], "gamma": best["gamma"],
                     "bandwidth_factor": factors[gammas.index(best["gamma"])]},
            "points": len(cs) * len(gammas), "refit_s": float(search.refit_time_), "peak_mb": peak_mb()}


def compare(name, *, lambdas=LAMBDAS, factors=FACTORS, cs=CS, folds=FOLDS, centers=None, jobs=None,
            timeout=3600) -> dict:
    """The set's JSON line: both sides, the ratio of seconds, the machine and its BLAS kernels."""
    from ...numerics.threads import available_cpus
    from .roofline import blas_kernels, machine, run_record

    if len(lambdas) != len(cs):
        from ...errors import KoptError

        raise KoptError(f"the grids must have the same size: {len(lambdas)} lambdas against {len(cs)} C values")
    jobs = jobs or available_cpus()
    floats = lambda vs: ",".join(repr(float(v)) for v in vs)  # noqa: E731
    common = ["--set", name, "--factors", floats(factors), "--folds", str(folds)]
    load0 = os.getloadavg()
    out = {}
    for side, extra in (("kopt", ["--lambdas", floats(lambdas)] + (["--centers", str(centers)] if centers else [])),
                        ("svc", ["--C", floats(cs), "--jobs", str(jobs)])):
        out[side] = child("kopt.cli.bench.tune", ["--child", side, *common, *extra], timeout)
        res = out[side]
        print(f"  {name} {side}: " + (res.get("error") or f"{res['seconds']:.1f} s, cv {res['cv_score']:.4f}, "
                                      f"test {res['test_accuracy']:.4f}"), file=sys.stderr, flush=True)
    line = {"set": name, **out, "folds": folds, "loadavg_before": list(load0), "loadavg_after": list(os.getloadavg()),
            "machine": machine(), "blas": blas_kernels(), **run_record()}
    if "error" not in out["kopt"] and "error" not in out["svc"]:
        ratio = out["kopt"]["seconds"] / out["svc"]["seconds"]
        line["ratio"] = ratio
        line["met"] = bool(ratio <= TARGET)
        line["accuracy_points"] = 100.0 * (out["kopt"]["test_accuracy"] - out["svc"]["test_accuracy"])
    return line


def text(line) -> str:
    """Two lines a person reads: each side's seconds, CV score and test accuracy, and the ratio."""
    out = []
    for side in ("kopt", "svc"):
        r = line[side]
        out.append(f"{line['set']:>10}  {side:<4}  " + (r["error"] if "error" in r else
                   f"{r['seconds']:8.1f} s  cv {r['cv_score']:.4f}  test {r['test_accuracy']:.4f}  best {r['best']}  "
                   f"({r['config']})"))
    if "ratio" in line:
        out.append(f"{line['set']:>10}  kopt / svc seconds {line['ratio']:.3f} (target <= {TARGET}: "
                   f"{'met' if line['met'] else 'NOT met'}), test accuracy {line['accuracy_points']:+.2f} points")
    m = line["machine"]
    blas = "; ".join(f"{b['library']} {b['version']} {b['kernel']} x{b['threads']} ({b['for']})" for b in line["blas"])
    out.append(f"{'':>10}  {m['cpu']}, {m['cpus_available']} CPUs, flags {' '.join(m['cpu_flags'])}; BLAS {blas}; "
               f"load {' '.join(f'{v:.2f}' for v in line['loadavg_before'])} -> "
               f"{' '.join(f'{v:.2f}' for v in line['loadavg_after'])}")
    return "\n".join(out)


def bench(args) -> int:
    """``kopt bench tune`` (args: sets, centers, jobs, json)."""
    for name in chosen_sets(args.sets, SETS):
        line = compare(name, centers=args.centers, jobs=args.jobs)
        print(text(line), flush=True)
        emit(line, args.json)
    return 0


def _floats(text):
    return tuple(float(v) for v in text.split(","))


def main(argv=None):
    """The child processes' entry point: ``python -m kopt.cli.bench.tune --child SIDE --set NAME ...``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m kopt.cli.bench.tune")
    ap.add_argument("--child", choices=("kopt", "svc"), required=True)
    ap.add_argument("--set", dest="name", choices=list(SETS), required=True)
    ap.add_argument("--lambdas", type=_floats, default=LAMBDAS)
    ap.add_argument("--C", dest="cs", type=_floats, default=CS)
    ap.add_argument("--factors", type=_floats, default=FACTORS)
    ap.add_argument("--folds", type=int, default=FOLDS)
    ap.add_argument("--centers", type=int)
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args(argv)
    if a.child == "kopt":
        res = run_kopt(a.name, a.lambdas, a.factors, a.folds, a.centers)
    else:
        res = run_svc(a.name, a.cs, a.factors, a.folds, a.jobs)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
