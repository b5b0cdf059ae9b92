"""One conjugate-gradient pass of krr_pcg (kernel blocks k(X_chunk, C), K p and Kᵀ(K p)) timed at a given number of
rows of higgs-shaped: the measured basis for projecting a fit's time to sizes not run.

    python docs/benchmarks/pcg_pass.py --rows 1000000 10000000 --centers 8192 [--columns 6] [--json FILE]

The rows are the generated preset's (memory-mapped; generated first where absent), their first ``--columns`` columns
(the 6 that decide the class, the ones kopt's column search keeps), z-scored as ``standardize: auto`` does;
Gaussian kernel of bandwidth 2.63 (the defaults' choice at 10⁶ rows), float32 kernel values, every worker thread.
Each size: the seconds of one pass after one warm-up pass, the kernel values a second, and the machine.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def one(rows, centers, columns, bandwidth=2.63):
    from kopt.data import load_data
    from kopt.nystrom.passes import RowPass
    from kopt_plugins.kernels.shift_invariant import GaussianKernel

    ds = load_data({"source": "higgs-shaped", "options": {"rows": int(rows)}})
    t0 = time.perf_counter()
    X = np.asarray(ds.X[:, :columns], dtype=np.float32)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    prep = time.perf_counter() - t0
    C = np.asfortranarray(X[np.random.default_rng(0).choice(rows, centers, replace=False)])
    rp = RowPass(GaussianKernel(bandwidth=bandwidth), X, C, np.float32)
    P = np.random.default_rng(1).standard_normal((centers, 1))
    rp.products(P)  # warm-up: the pool, the pages
    t0 = time.perf_counter()
    rp.products(P)
    s = time.perf_counter() - t0
    return {"rows": int(rows), "centers": int(centers), "columns": int(columns), "pass_s": round(s, 2),
            "kernel_values_per_s": float(f"{rows * centers / s:.3g}"), "prepare_s": round(prep, 1)}


def main():
    from kopt.cli.bench.roofline import machine

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--centers", type=int, default=8192)
    ap.add_argument("--columns", type=int, default=6)
    ap.add_argument("--json")
    a = ap.parse_args()
    out = {"benchmark": "pcg_pass", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
           "cases": [one(n, a.centers, a.columns) for n in a.rows]}
    for c in out["cases"]:
        print(f"{c['rows']:>11,} rows  {c['centers']} centres  {c['columns']} columns  one pass {c['pass_s']:.1f} s  "
              f"{c['kernel_values_per_s']:.3g} kernel values/s")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
