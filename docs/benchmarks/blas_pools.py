"""Two OpenBLAS pools in one process: what a SciPy BLAS call pays right after a NumPy one, and what holding NumPy's
own BLAS to one thread (``kopt.numerics.threads.blas_threads(limit, numpy=1)``) gives back.

NumPy's and SciPy's wheels each bring their own OpenBLAS, each with its own worker threads, which spin for a while
after a call before they sleep.  The Nystrom search alternates NumPy's kernel products with SciPy's rank-k updates
chunk by chunk.  One process, one run:

    flock /tmp/kopt-cpu.lock python docs/benchmarks/blas_pools.py --json docs/benchmarks/blas_pools.json

Prints one JSON object: the milliseconds of a SciPy ``dsyrk`` (6,000 x 256 into 256 x 256, the Gram update of a
256-center system) warm, right after a NumPy matmul, and right after one with NumPy's BLAS held to one thread; the
BLAS libraries (threadpoolctl) and the machine.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _ms(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the JSON object to this file")
    args = parser.parse_args(argv)
    from scipy.linalg import blas
    from threadpoolctl import threadpool_info

    from kopt.cli.bench.roofline import run_record
    from kopt.numerics import threads

    rng = np.random.default_rng(0)
    K, A = rng.random((6000, 256)), np.zeros((256, 256))
    X, C = rng.random((6000, 28), dtype=np.float32), rng.random((28, 256), dtype=np.float32)

    def syrk():
        blas.dsyrk(1.0, K.T, beta=1.0, c=A.T, trans=0, lower=0, overwrite_c=1)

    def after_numpy():
        X @ C  # NumPy's BLAS: its worker threads now spin
        syrk()

    out = {"dsyrk_warm_ms": _ms(syrk), "dsyrk_after_numpy_matmul_ms": _ms(after_numpy)}
    time.sleep(0.5)  # NumPy's threads asleep again
    with threads.blas_threads(threads.resolve_threads(None), numpy=1):
        out["dsyrk_after_numpy_matmul_numpy_held_ms"] = _ms(after_numpy)
    out["blas"] = [{k: i.get(k) for k in ("filepath", "version", "architecture", "num_threads")}
                   for i in threadpool_info() if i["user_api"] == "blas"]
    out.update(run_record())
    text = json.dumps(out)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
