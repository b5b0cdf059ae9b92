"""krr_pcg on a Dask LocalCluster against one machine: seconds per CG iteration, rounds, the same model.

HIGGS-shaped rows (``higgs_shaped`` of tests/gpu/device_rates.py, the GPU check's generator: 28 standard-normal columns, labels from a fixed
nonlinear rule), the square loss on ±1 labels, a Gaussian kernel, M Nyström centers, ``iterations`` CG steps
(``tol: 0``: every step runs).  The same spec runs on one machine (NumPy arrays) and on a fresh
``LocalCluster(n_workers=2, processes=True, threads_per_worker=1)`` with the rows as a dask array in two partitions.
Per run: seconds per iteration (the median of the trace's steps after the first: one pass, or one round, with its
certificate), the rounds and kernel passes, the objective and relative gap; then the objectives' relative
difference and the largest difference of the test scores.

    flock /tmp/kopt-cpu.lock python docs/benchmarks/pcg_dask.py [--rows 200000] [--centers 1024] [--iterations 10]

Writes docs/benchmarks/pcg_dask.json.  The development machine has 2 cores: the two workers, the scheduler and the
client share them (run it alone).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def spec(M, iterations):
    return {"name": "pcg_dask", "seed": 0,
            "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian", "bandwidth": 6.0},
                      "regularizer": {"name": "l2", "lambda": 1e-5}, "features": {"kind": "nystrom", "count": M}},
            "solver": {"name": "krr_pcg", "iterations": iterations, "tol": 0.0}, "backend": "numpy"}


def side(r, seconds):
    steps = np.diff([rec["elapsed"] for rec in r.trace])[1:]
    return {"seconds": seconds, "seconds_per_iteration": float(np.median(steps)), "n_iter": int(r.n_iter),
            "objective": float(r.objective), "rel_gap": r.info.get("rel_gap"), "passes": r.info.get("passes"),
            "rounds": r.info.get("rounds"), "accuracy": r.metrics.get("accuracy")}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--centers", type=int, default=1024)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--out", default=os.path.join(HERE, "pcg_dask.json"))
    a = p.parse_args(argv)
    import dask.array as da
    from distributed import Client, LocalCluster

    import kopt
    from kopt.cli.bench.roofline import run_record
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gpu"))
    from device_rates import higgs_shaped

    X, y = higgs_shaped(a.rows + 20_000)
    Xt, yt, X, y = X[a.rows:], y[a.rows:], X[:a.rows], y[:a.rows]
    s = spec(a.centers, a.iterations)
    warnings.simplefilter("ignore")  # tol 0: both runs stop at the cap, by design
    t0 = time.perf_counter()
    one = kopt.solve(s, data=(X, y, Xt, yt))
    res = {"rows": a.rows, "centers": a.centers, "iterations": a.iterations, **run_record(),
           "load_average_start": os.getloadavg()[0],
           "one_machine": side(one, time.perf_counter() - t0)}
    half = a.rows // 2
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        t0 = time.perf_counter()
        many = kopt.solve({**s, "execution": {"engine": "dask", "partitions": 2}}, scheduler=client,
                          data=(da.from_array(X, chunks=(half, -1)), da.from_array(y, chunks=half),
                                da.from_array(Xt, chunks=(10_000, -1)), da.from_array(yt, chunks=10_000)))
        res["local_2"] = side(many, time.perf_counter() - t0)
    res["objective_rel_diff"] = abs(many.objective - one.objective) / abs(one.objective)
    res["max_test_score_diff"] = float(np.max(np.abs(many.model.decision_function(Xt) -
                                                     one.model.decision_function(Xt))))
    res["load_average_end"] = os.getloadavg()[0]
    print(json.dumps(res, indent=2))
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
