"""The cost of ``kopt tune`` against scikit-learn's GridSearchCV over SVC, on the same grid and folds.

    python docs/benchmarks/tune_vs_gridsearch.py --which svc          # GridSearchCV(SVC), n_jobs=2
    python docs/benchmarks/tune_vs_gridsearch.py --which nystrom      # kopt tune, Joker primal on Nystrom centers
    python docs/benchmarks/tune_vs_gridsearch.py --which nystrom-cold # the same with --no-warm-start
    python docs/benchmarks/tune_vs_gridsearch.py --which exact        # kopt tune, Joker dual on the exact kernel
    python docs/benchmarks/tune_vs_gridsearch.py --which exact-cold

Data: the higgs-12k training rows (7,500; the packaged preset), 3 seeded folds (kopt.running.validation.make_splits,
handed to GridSearchCV as its ``cv``), features z-scored with each fold's training statistics (kopt's
``standardize: true``; a StandardScaler in the scikit-learn pipeline).  Grid: 4 values of λ x 3
Gaussian bandwidths σ (median distance of the z-scored rows x {0.5, 1, 2}); SVC gets
C = 1/(λ n_fold) and gamma = 1/(2σ²): with the hinge loss (kopt's exact route) the same problem as
kopt's; the Nystrom route solves the squared hinge on 1,000 centers.  Appends one JSON line per run to tune_vs_gridsearch.jsonl: wall seconds, the best cell
and its mean fold accuracy, and the machine load.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LAMBDAS = (1e-2, 1e-3, 1e-4, 1e-5)
FACTORS = (0.5, 1.0, 2.0)
FOLDS = 3
SEED = 0


def spec(route):
    features = {"kind": "nystrom", "count": 1000} if route == "nystrom" else {}
    mode = "primal" if route == "nystrom" else "exact"
    loss = "squared_hinge" if route == "nystrom" else "hinge"  # the primal route needs a smooth loss
    return {"name": f"tune_bench_{route}", "seed": SEED, "data": {"source": "higgs-12k"},
            "model": {"loss": {"name": loss}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "form": "dual", "features": features},
            "solver": {"name": "joker", "mode": mode, "iterations": 20000, "tol": 1.0e-2},
            "backend": "numpy", "output": {"dir": "runs/tune_bench"}}


def bandwidths(X):
    from kopt.contract.bandwidth import median_distance

    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    sigma = median_distance(Z, "l2", 2000, SEED)
    return [float(f"{sigma * f:.6g}") for f in FACTORS]


def run_kopt(route, warm, X, y, sigmas):
    import kopt

    grid = ["model.regularizer.lambda=" + ",".join(map(str, LAMBDAS)),
            "model.kernel.bandwidth=" + ",".join(map(str, sigmas))]
    t0 = time.perf_counter()
    out = kopt.tune(spec(route), grid, folds=FOLDS, warm_start=warm, data=(X, y))
    wall = time.perf_counter() - t0
    return wall, out.best_params, out.best_score, sum(r["iterations"] for r in out.rows)


def run_svc(X, y, sigmas):
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from kopt.running.validation import make_splits

    cv = make_splits(X.shape[0], SEED, folds=FOLDS)
    n_fold = len(cv[0][0])
    grid = {"svc__C": [1.0 / (lam * n_fold) for lam in LAMBDAS], "svc__gamma": [1.0 / (2 * s * s) for s in sigmas]}
    search = GridSearchCV(make_pipeline(StandardScaler(), SVC(kernel="rbf", cache_size=500)), grid, cv=cv, n_jobs=2)
    t0 = time.perf_counter()
    search.fit(X, y)
    wall = time.perf_counter() - t0
    return wall, {k: float(v) for k, v in search.best_params_.items()}, float(search.best_score_), None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--which", required=True, choices=["svc", "nystrom", "nystrom-cold", "exact", "exact-cold"])
    a = ap.parse_args(argv)
    from kopt.cli.bench.roofline import run_record
    from kopt.data import load_data
    from kopt.spec import load_spec

    ds = load_data(load_spec(spec("nystrom"))["data"])
    X, y = np.asarray(ds.X, dtype=np.float64), np.asarray(ds.y)
    sigmas = bandwidths(X)
    if a.which == "svc":
        wall, best, score, iters = run_svc(X, y, sigmas)
    else:
        route = a.which.split("-")[0]
        wall, best, score, iters = run_kopt(route, not a.which.endswith("cold"), X, y, sigmas)
    row = {"which": a.which, "wall_s": round(wall, 2), "best": best, "cv_accuracy": round(score, 5),
           "iterations": iters, "grid": f"{len(LAMBDAS)} lambda x {len(sigmas)} bandwidth x {FOLDS} folds",
           "n": int(X.shape[0]), "load": os.getloadavg()[0], **run_record()}
    print(json.dumps(row), flush=True)
    with open(os.path.join(HERE, "tune_vs_gridsearch.jsonl"), "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
