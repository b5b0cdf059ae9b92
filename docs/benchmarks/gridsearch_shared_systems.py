"""GridSearchCV over KernelClassifier: what sharing the Nyström system between fits that differ only in λ saves.

The reference case: 3 λ x 3 bandwidths, cv=3, on the first 3,000 higgs-12k training rows, n_jobs=1.
Two estimators: ``KernelClassifier(solver="krr_nystrom", features={"kind": "nystrom", "count": 512})`` and
``KernelClassifier()`` (solver auto: with λ and the bandwidth given it still searches the center count).
Each is searched twice in this process: as is, and inside ``kopt.nystrom.cache.sharing()``, where the
systems that krr_nystrom's step and auto's planner build come from the cache.  The best point, its score and every
CV score must be the same both ways; the seconds and the cache's hits are printed as one JSON line.

    flock /tmp/kopt-cpu.lock python docs/benchmarks/gridsearch_shared_systems.py
"""
from __future__ import annotations

import json
import os
import time
import warnings

import numpy as np


def search(estimator, X, y, grid, folds, share):
    from sklearn.model_selection import GridSearchCV

    from kopt.nystrom import cache as nystrom_cache

    gs = GridSearchCV(estimator, grid, cv=folds, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        if share:
            with nystrom_cache.sharing() as cache:
                gs.fit(X, y)
                hits, misses = cache.hits, cache.misses
        else:
            gs.fit(X, y)
            hits = misses = None
        seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 3), "best": {k: float(v) for k, v in gs.best_params_.items()},
            "best_score": float(gs.best_score_), "scores": [float(s) for s in gs.cv_results_["mean_test_score"]],
            "hits": hits, "misses": misses}


def main():
    import kopt
    from kopt.cli.bench.roofline import run_record
    from kopt.data import load_data
    from kopt.running.validation import make_splits
    from kopt.sklearn import KernelClassifier

    ds = load_data(kopt.load_spec({"data": {"source": "higgs-12k"}, "model": {"loss": {"name": "square", "target": "binary"},
                                  "kernel": {"name": "gaussian"}}})["data"])
    X, y = np.asarray(ds.X[:3000], dtype=np.float64), np.asarray(ds.y[:3000])
    sigma = float(np.sqrt(X.shape[1] * ((X - X.mean(0)) / X.std(0)).var() / 2))  # the scale rule on z-scored rows
    grid = {"lam": [1e-5, 1e-4, 1e-3], "bandwidth": [sigma / np.sqrt(2), sigma, sigma * np.sqrt(2)]}
    folds = make_splits(X.shape[0], 0, folds=3)
    load0 = os.getloadavg()
    out = {"rows": X.shape[0], "grid": grid, "folds": 3}
    for name, est in (("krr_nystrom_512", KernelClassifier(solver="krr_nystrom", features={"kind": "nystrom", "count": 512},
                                                           form="primal")),
                      ("auto", KernelClassifier())):
        plain = search(est, X, y, grid, folds, share=False)
        shared = search(est, X, y, grid, folds, share=True)
        same = plain["best"] == shared["best"] and np.allclose(plain["scores"], shared["scores"], rtol=0, atol=1e-12)
        out[name] = {"plain": plain, "shared": shared, "ratio": round(shared["seconds"] / plain["seconds"], 3),
                     "same_results": bool(same)}
        print(f"{name}: plain {plain['seconds']:.1f} s, shared {shared['seconds']:.1f} s "
              f"({shared['hits']} hits, {shared['misses']} builds), same results: {same}", flush=True)
    out.update(loadavg_before=list(load0), loadavg_after=list(os.getloadavg()), **run_record())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
