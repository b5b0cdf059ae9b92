"""newton_pcg on a Dask LocalCluster against one process: seconds, passes and rounds, peak memory, the same model.

The logistic loss on ``higgs-shaped`` rows (the preset's first 6 columns, z-scored as kopt does: ``column_scales``
keeping them), a Gaussian kernel of bandwidth 2.63, M Nyström centers, λ, the relative gap ``tol``: the spec
``KernelClassifier(loss="logistic")`` chooses at 10⁶ rows, named.  The same spec runs in one process (the preset's
rows memory-mapped) and on a fresh ``LocalCluster(n_workers=2, processes=True, threads_per_worker=1)`` whose workers
read their partitions of the preset themselves (``execution.partitions: 2``).  Per run: the wall seconds of the solve,
Newton steps, passes, rounds (a cluster's), the certificate, test accuracy, and peak resident memory -- of the one
process, and on the cluster of the client and of each worker (their processes' high-water marks, read from
``/proc``); then the objectives' relative difference and the largest difference of the test scores.

    flock /tmp/kopt-heavy.lock python docs/benchmarks/newton_dask.py [--rows 1000000] [--centers 4096] [--lam 1e-7]

Writes its result file (``newton_dask.json`` beside this script).  On a 2-core machine the two workers, the scheduler and the client share
the cores: the cluster's seconds there measure its overhead, not a speed-up.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def spec(rows, M, lam, tol):
    return {"name": "newton_dask", "seed": 0,
            "data": {"source": "higgs-shaped", "options": {"rows": int(rows)}, "column_scales": [1.0] * 6 + [0.0] * 22},
            "model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian", "bandwidth": 2.63},
                      "regularizer": {"name": "l2", "lambda": lam}, "features": {"kind": "nystrom", "count": M}},
            "solver": {"name": "newton_pcg", "tol": tol}, "backend": "numpy",
            "output": {"model": False, "report": False, "plot": False}}


def _peak_mb(pid=None):
    """A process's peak resident memory in MB (``VmHWM``), this one's by default."""
    if pid is None:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return None


def side(r, seconds):
    return {"seconds": seconds, "newton_steps": int(r.n_iter), "passes": r.info.get("passes"),
            "rounds": r.info.get("rounds"), "objective": float(r.objective), "rel_gap": r.info.get("rel_gap"),
            "status": r.status, "accuracy": r.metrics.get("accuracy"),
            "rounds_per_pass": (r.info["rounds"] / r.info["passes"]) if r.info.get("rounds") else None}


def _child(a):
    """One side in this process: ``one`` (one process) or ``dask`` (a fresh LocalCluster of two workers)."""
    import kopt
    from kopt.data import load_data

    s = spec(a.rows, a.centers, a.lam, a.tol)
    Xt = np.asarray(load_data(kopt.load_spec(s)["data"]).X_test)
    warnings.simplefilter("ignore")
    if a.side == "one":
        t0 = time.perf_counter()
        r = kopt.solve(s)
        out = {**side(r, time.perf_counter() - t0), "peak_mb": _peak_mb()}
    else:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            t0 = time.perf_counter()
            r = kopt.solve({**s, "execution": {"engine": "dask", "partitions": 2}}, scheduler=client)
            seconds = time.perf_counter() - t0
            workers = client.run(os.getpid)
            out = {**side(r, seconds), "client_peak_mb": _peak_mb(),
                   "worker_peak_mb": sorted(_peak_mb(pid) for pid in workers.values())}
    np.save(a.scores, r.model.decision_function(Xt))
    print(json.dumps(out, default=float))


def main(argv=None):
    import subprocess
    import sys
    import tempfile

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--centers", type=int, default=4096)
    p.add_argument("--lam", type=float, default=1e-7)
    p.add_argument("--tol", type=float, default=1e-3)
    p.add_argument("--out", default=os.path.join(HERE, "newton_dask.json"))
    p.add_argument("--side", help=argparse.SUPPRESS)
    p.add_argument("--scores", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.side:
        _child(a)
        return
    from kopt.cli.bench.roofline import machine, run_record

    res = {"rows": a.rows, "centers": a.centers, "lambda": a.lam, "tol": a.tol, **run_record(), "machine": machine()}
    with tempfile.TemporaryDirectory() as folder:
        scores = {}
        for name, key in (("one", "one_process"), ("dask", "local_2")):
            scores[name] = os.path.join(folder, f"{name}.npy")
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--side", name, "--scores", scores[name],
                                  "--rows", str(a.rows), "--centers", str(a.centers), "--lam", str(a.lam),
                                  "--tol", str(a.tol)], capture_output=True, text=True)
            lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
            res[key] = json.loads(lines[-1]) if lines else {"status": "failed", "stderr": out.stderr[-2000:]}
        if all(os.path.exists(f) for f in scores.values()):
            res["max_test_score_diff"] = float(np.max(np.abs(np.load(scores["one"]) - np.load(scores["dask"]))))
    one, many = res["one_process"], res["local_2"]
    if "objective" in one and "objective" in many:
        res["objective_rel_diff"] = abs(many["objective"] - one["objective"]) / abs(one["objective"])
    res["machine"]["loadavg_end"] = list(os.getloadavg())
    print(json.dumps(res, indent=1, default=float))
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=1, default=float)
        fh.write("\n")


if __name__ == "__main__":
    main()
