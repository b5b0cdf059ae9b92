"""The DSG family on a Dask LocalCluster: seconds per iteration against one machine, the same spec and seed.

For each case the same spec runs on one machine (``kopt.solve(spec)``) and on a fresh
``LocalCluster(n_workers=2, processes=True, threads_per_worker=1)`` with one partition per worker:

* seconds per iteration: the fit time (``timings.fit_s``, checks and holdout evaluations included)
  over the iterations;
* round trips and the client's wait: one round trip per step, check and holdout evaluation; the
  wait is the time from sending a round's tasks to holding their results;
* bytes to the workers: the payload the client sends (the step's writes to the expansion copies and
  the step's request; the check and holdout rows at the checks), from ``info.bytes_to_workers``, and
  per step to all workers, ``info.bytes_per_step``; dask's own messages are not counted;
* the largest coefficient difference relative to the largest coefficient, and both runs' final
  objective and test metrics.

Cases: ``small`` -- higgs-12k (10,000 training rows), logistic, batches of 128, blocks of 64 features,
200 iterations: a step costs little, so it shows the per-iteration overhead of the round trip;
``ijcnn1`` -- the packaged specs/dsg_ijcnn1.yaml (49,990 rows, batches of 512, blocks of 256, 400
iterations) unchanged.

    python docs/benchmarks/dsg_dask.py                 # both cases
    python docs/benchmarks/dsg_dask.py --cases small

Writes docs/benchmarks/dsg_dask.json.  The development machine has 2 cores shared with other jobs: run it
alone (``flock /tmp/kopt-cpu.lock``); the two workers, the scheduler and the client share those 2 cores.
"""
from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

SMALL = {"name": "dsg_small", "seed": 1, "data": {"source": "higgs-12k"},
         "model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                   "regularizer": {"name": "l2", "lambda": 1.0e-4}, "features": {"block_size": 64}},
         "solver": {"name": "dsg", "iterations": 200, "batch_size": 128, "check_every": 50, "check_rows": 1000},
         "backend": "numpy", "output": {"dir": "/tmp/kopt-dsg-dask-bench"}}


def case_spec(name):
    import kopt

    if name == "small":
        return SMALL
    return kopt.load_spec("dsg_ijcnn1").data


def run(spec, client=None):
    import kopt

    t0 = time.perf_counter()
    res = kopt.solve(spec, scheduler=client) if client is not None else kopt.solve(spec)
    wall = time.perf_counter() - t0
    fit = res.report["timings"]["fit_s"]
    out = {"fit_s": round(fit, 3), "wall_s": round(wall, 3), "iterations": res.n_iter,
           "s_per_iteration": round(fit / res.n_iter, 5), "objective": res.objective, "metrics": res.metrics}
    for key in ("round_trips", "bytes_to_workers", "bytes_per_step", "worker_wait_s", "partitions"):
        if key in res.info:
            out[key] = res.info[key]
    if "round_trips" in res.info:
        out["wait_ms_per_round_trip"] = round(1e3 * res.info["worker_wait_s"] / res.info["round_trips"], 2)
        out["bytes_per_round_trip"] = int(res.info["bytes_to_workers"] / res.info["round_trips"])
    return res, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="+", default=["small", "ijcnn1"], choices=["small", "ijcnn1"])
    ap.add_argument("--out", default=os.path.join(HERE, "dsg_dask.json"))
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from distributed import Client, LocalCluster

    from kopt.cli.bench.roofline import run_record

    rows = []
    for name in args.cases:
        spec = case_spec(name)
        one, a = run(spec)
        with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            many, b = run({**spec, "execution": {"engine": "dask"}}, client)
        ca, cb = one.model.predictor.arrays["coef"], many.model.predictor.arrays["coef"]
        row = {"case": name, "one_machine": a, "local_cluster_2": b,
               "max_coef_diff_rel": float(np.abs(ca - cb).max() / np.abs(ca).max()),
               "blocks_equal": bool(np.array_equal(one.model.predictor.arrays["blocks"],
                                                   many.model.predictor.arrays["blocks"]))}
        print(json.dumps(row), flush=True)
        rows.append(row)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with open(args.out, "w") as f:
        json.dump({"cases": rows, "load_average_at_end": load, **run_record()}, f, indent=1)


if __name__ == "__main__":
    main()
