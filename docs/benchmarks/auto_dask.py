"""solver: auto on a Dask LocalCluster of two workers against one process: the same choices, seconds, peak memory per
worker, rounds per CG step.

The defaults (``auto_higgs_shaped_1m``'s spec: the square loss on ``higgs-shaped`` rows, a Gaussian kernel, nothing
else named) on ``--rows`` training rows, tested on the preset's 100,000 test rows.  One side solves in one process
(the preset's rows memory-mapped); the other on a fresh ``LocalCluster(n_workers=2, processes=True,
threads_per_worker=1)`` whose workers read their partitions of the preset themselves (``execution.partitions: 2``):
auto's search runs on the client, on the rows it fetches, and the centers grown on every row and the solve on every
row run on the workers.  Per side: the wall seconds (the search's and the solve's), the choices (route, centers,
bandwidth, λ, column scales, held-out rows), the certificate, the test accuracy, and peak resident memory -- of the
one process, and on the cluster of the client and of each worker (their processes' high-water marks, read from
``/proc``) -- and on the cluster the rounds: the grown path's (its CG steps and its rounds) and the final solve's
(rounds, passes, CG steps).  Then whether every choice agrees, the objectives' relative difference and the share of
test rows whose predicted class agrees.

    flock /tmp/kopt-heavy.lock python docs/benchmarks/auto_dask.py [--rows 10000000] [--work FLOPS]

``--work`` sets ``solver.work`` on both sides (default: the rows' default budget).  Writes its result file
(``auto_dask.json`` beside this script).  On a 2-core machine the two workers, the scheduler and the client share the
cores with the one process's two threads: the cluster's seconds there measure its overhead, not a speed-up.
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
#: the choices compared between the two sides (report.json's auto record)
CHOICES = ("centers", "bandwidth", "lambda", "column_scales", "held_out", "metric", "split")


def spec(rows, work):
    solver = {"name": "auto", **({"work": float(work)} if work else {})}
    return {"name": "auto_dask", "seed": 0, "data": {"source": "higgs-shaped", "options": {"rows": int(rows)}},
            "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": solver, "backend": "numpy", "output": {"model": False, "report": False, "plot": False}}


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
    auto = r.auto
    grown = [t for t in auto["trials"] if t.get("rows")]
    out = {"seconds": seconds, "search_s": auto["search_s"], "solve_s": r.report["timings"].get("fit_s"),
           "route": auto["route"], **{k: auto.get(k) for k in CHOICES},
           "trials": [(t["centers"], t.get("lam"), t.get("rows")) for t in auto["trials"]],
           "spent_flops": auto["budget"]["spent_flops"], "n_iter": int(r.n_iter), "passes": r.info.get("passes"),
           "replacements": r.info.get("replacements"), "objective": float(r.objective),
           "rel_gap": r.info.get("rel_gap"), "status": r.status, "accuracy": r.metrics.get("accuracy"),
           "grown": [{k: t.get(k) for k in ("centers", "lam", "cg_steps", "rounds", "passes", "seconds")}
                     for t in grown]}
    if r.info.get("rounds"):
        out["rounds"] = r.info["rounds"]
        # the start round, the confirmations CG continued from, the confirming pass at the end: every other round a step
        out["rounds_per_cg_step"] = (r.info["rounds"] - 1 - (r.info.get("replacements") or 0)
                                     - (1 if r.status != "converged" else 0)) / max(1, r.n_iter)
        out["cluster"] = auto.get("cluster")
    return out


def _child(a):
    """One side in this process: ``one`` (one process) or ``dask`` (a fresh LocalCluster of two workers)."""
    import kopt
    from kopt.data import load_data

    s = spec(a.rows, a.work)
    Xt = np.asarray(load_data(kopt.load_spec(s)["data"]).X_test)
    warnings.simplefilter("ignore")
    if a.side == "one":
        t0 = time.perf_counter()
        r = kopt.solve(s, progress=a.progress)
        out = {**side(r, time.perf_counter() - t0), "peak_mb": _peak_mb()}
    else:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            t0 = time.perf_counter()
            r = kopt.solve({**s, "execution": {"engine": "dask", "partitions": 2}}, scheduler=client,
                           progress=a.progress)
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
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--work", type=float, default=None, help="solver.work (default: the rows' default budget)")
    p.add_argument("--out", default=os.path.join(HERE, "auto_dask.json"))
    p.add_argument("--progress", action="store_true", help="each side's progress lines on stderr")
    p.add_argument("--side", help=argparse.SUPPRESS)
    p.add_argument("--scores", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.side:
        _child(a)
        return
    from kopt.cli.bench.roofline import machine, run_record

    res = {"rows": a.rows, "work": a.work, **run_record(), "machine": machine()}
    with tempfile.TemporaryDirectory() as folder:
        scores = {}
        for name, key in (("one", "one_process"), ("dask", "local_2")):
            scores[name] = os.path.join(folder, f"{name}.npy")
            cmd = [sys.executable, os.path.abspath(__file__), "--side", name, "--scores", scores[name],
                   "--rows", str(a.rows)] + (["--work", str(a.work)] if a.work else []) + \
                (["--progress"] if a.progress else [])
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None if a.progress else subprocess.PIPE,
                                 text=True)
            lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
            res[key] = json.loads(lines[-1]) if lines else {"status": "failed", "stderr": (out.stderr or "")[-2000:]}
        if all(os.path.exists(f) for f in scores.values()):
            one, many = np.load(scores["one"]), np.load(scores["dask"])
            res["max_test_score_diff"] = float(np.max(np.abs(one - many)))
            res["test_class_agreement"] = float(np.mean(np.sign(one) == np.sign(many)))
    one, many = res["one_process"], res["local_2"]
    if "objective" in one and "objective" in many:
        res["objective_rel_diff"] = abs(many["objective"] - one["objective"]) / abs(one["objective"])
        res["same_choices"] = all(one.get(k) == many.get(k) for k in (*CHOICES, "trials"))
    res["machine"]["loadavg_end"] = list(os.getloadavg())
    print(json.dumps(res, indent=1, default=float))
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=1, default=float)
        fh.write("\n")


if __name__ == "__main__":
    main()
