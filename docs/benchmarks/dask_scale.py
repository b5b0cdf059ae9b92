"""Joker's features mode on a Dask LocalCluster: seconds and bytes per round, rounds to a relative gap of 1e-2.

HIGGS-shaped synthetic data (28 standard-normal features, labels from a seeded nonlinear rule with 10 %
label noise), generated on the workers partition by partition (``numpy.random.default_rng([seed, k])``),
passed to ``kopt.solve`` as dask arrays: the rows never reach the client.  For each worker count the same
spec runs on a fresh ``LocalCluster(n_workers=W, processes=True, threads_per_worker=1)`` with W partitions:

* seconds per round: the median time between two consecutive iterations of the trace (one round =
  ``local_epochs`` (0.5) passes of DBCD-TR blocks over each worker's rows, then the certificate: two
  passes of the features over every row);
* bytes per round: the payload of one round and its certificate -- θ̃ to each partition and Δθ̃ back, θ̃
  again for the certificate and Φ_kᵀα' back (4 M-vectors of float64 per partition per output) plus a few
  scalars; dask's own messages (task headers, heartbeats) are not counted;
* rounds to a relative duality gap of 1e-2 (the run's stopping rule, ``solver.tol``).

    python docs/benchmarks/dask_scale.py                       # 1,000,000 rows, 1 and 2 workers
    python docs/benchmarks/dask_scale.py --rows 200000 --workers 1 2

Writes docs/benchmarks/dask_scale.json.  The development machine has 2 cores shared with other jobs: run it
alone (``flock /tmp/kopt-cpu.lock``) and compare the two worker counts of one run, not absolute times.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def make_rows(seed, k, rows):
    """Partition ``k``: HIGGS-shaped rows (28 features) and ±1 labels from a seeded nonlinear rule."""
    rng = np.random.default_rng([seed, k])
    X = rng.standard_normal((rows, 28)).astype(np.float32)
    score = np.sin(X[:, 0] * X[:, 1]) + 0.5 * X[:, 2] ** 2 - 0.5 + 0.3 * X[:, 3:8].sum(axis=1)
    flip = rng.random(rows) < 0.1
    y = np.where((score > 0) ^ flip, 1.0, -1.0)
    return X, y


def dask_data(seed, rows, parts):
    """(X, y) as dask arrays of ``parts`` row chunks, each built on a worker."""
    import dask
    import dask.array as da

    sizes = [(k + 1) * rows // parts - k * rows // parts for k in range(parts)]
    made = [dask.delayed(make_rows)(seed, k, m) for k, m in enumerate(sizes)]
    X = da.concatenate([da.from_delayed(d[0], (m, 28), np.float32) for d, m in zip(made, sizes)])
    y = da.concatenate([da.from_delayed(d[1], (m,), np.float64) for d, m in zip(made, sizes)])
    return X, y


def spec(args):
    return {"name": "dask_scale", "seed": 0,
            "model": {"loss": {"name": "huber", "delta": 1.0, "target": "binary"},
                      "kernel": {"name": "gaussian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": args.lam}, "form": "dual",
                      "features": {"count": args.features, "block_size": min(args.features, 512)}},
            "solver": {"name": "joker", "mode": "features", "batch_size": args.batch_size, "tol": 1.0e-2,
                       "iterations": args.max_rounds, "local_epochs": args.local_epochs},
            "backend": "numpy"}


def run(workers, args):
    from distributed import Client, LocalCluster

    import kopt

    with LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        X, y = dask_data(0, args.rows, workers)
        Xt, yt = dask_data(1, args.test_rows, workers)
        t0 = time.perf_counter()
        result = kopt.solve(spec(args), (X, y, Xt, yt), scheduler=client)
        wall = time.perf_counter() - t0
    elapsed = np.array([r["elapsed"] for r in result.trace])
    per_round = float(np.median(np.diff(elapsed))) if elapsed.size > 1 else float(elapsed[0])
    round_s = float(np.median([r["round_s"] for r in result.trace]))
    check_s = float(np.median([r["check_s"] for r in result.trace if "check_s" in r]))
    M = result.info["n_features"]
    payload = 4 * workers * M * 8 + workers * 3 * 8
    return {"workers": workers, "partitions": result.info["partitions"], "rows": args.rows,
            "rounds": result.n_iter, "converged": result.success, "rel_gap": result.info.get("rel_gap"),
            "seconds_per_round": per_round, "local_solve_s": round_s, "certificate_s": check_s, "first_round_s": float(elapsed[0]), "fit_s": result.timings["fit_s"],
            "load_s": result.timings["load_s"], "wall_s": wall, "bytes_per_round": payload,
            "objective": result.objective, "metrics": result.metrics,
            "rel_gap_trace": [r.get("rel_gap") for r in result.trace]}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--test-rows", type=int, default=100_000)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--features", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--local-epochs", type=float, default=0.5, help="passes over each worker's rows per round")
    p.add_argument("--lam", type=float, default=1.0e-5)
    p.add_argument("--max-rounds", type=int, default=40)
    p.add_argument("--out", default=os.path.join(HERE, "dask_scale.json"))
    args = p.parse_args()
    from kopt.cli.bench.roofline import cpu_flags, run_record

    flags = cpu_flags()
    print(f"{os.cpu_count()} CPUs, flags {' '.join(flags)}, load {os.getloadavg()[0]:.2f}", flush=True)
    runs = []
    for w in args.workers:
        r = run(w, args)
        runs.append(r)
        print(f"{w} worker(s): {r['rounds']} rounds to rel gap {r['rel_gap']:.3g} (converged {r['converged']}), "
              f"{r['seconds_per_round']:.2f} s/round (local solve {r['local_solve_s']:.2f} s, certificate "
              f"{r['certificate_s']:.2f} s), {r['bytes_per_round']} bytes/round, fit {r['fit_s']:.1f} s, "
              f"load {r['load_s']:.1f} s, accuracy {r['metrics'].get('accuracy')}", flush=True)
    out = {"args": vars(args), "load": os.getloadavg(), "cpus": os.cpu_count(), "cpu_flags": flags,
           "platform": platform.platform(),
           "runs": runs, **run_record()}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
