"""One conjugate-gradient step of krr_pcg (one pass of kernel blocks k(X_chunk, C): K p and Kᵀ(K p)) timed at a given
number of rows of higgs-shaped, on the centers the pivoted basis keeps of those drawn, as a fit runs it: the measured
basis for projecting a fit's time to sizes not run.

    python docs/benchmarks/pcg_pass.py --rows 1000000 10000000 --centers 8192 [--columns 6] [--json FILE]
    python docs/benchmarks/pcg_pass.py --roofline --centers 2839 --columns 6 [--json FILE]

The rows are the generated preset's (memory-mapped; generated first where absent), their first ``--columns`` columns
(the 6 that decide the class, the ones kopt's column search keeps), z-scored as ``standardize: auto`` does;
Gaussian kernel of bandwidth 2.63 (the defaults' choice at 10⁶ rows), float32 kernel values, every worker thread.
Each size: the kept centers, the set-up's seconds (R's pivoted Cholesky and b's pass), one CG step after one warm-up
step, the kernel values a second, and the machine.

``--roofline``: the pass's parts each alone on one core, on one chunk of the pass's shape (CHUNK_ENTRIES kernel
values against ``--centers`` centers, float32): the kernel's GEMM on the augmented rows (d + 2 wide), its exp, and the
two products K p and Kᵀs; each part's rate in kernel values a second, and the pass's roofline -- one value through
every part at each part's own rate -- on one core and on every core (the parts run per chunk on kopt's workers),
against which a measured pass is read.  The clip at 0 is timed apart (``clip_values_per_s``): the kernel runs it only
where the rounding could lift a value past 1, which z-scored rows at the bandwidth's scale never ask.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def one(rows, centers, columns, bandwidth=2.63):
    from kopt.data import load_data
    from kopt.nystrom import NystromCG
    from kopt_plugins.kernels.shift_invariant import GaussianKernel

    ds = load_data({"source": "higgs-shaped", "options": {"rows": int(rows)}})
    t0 = time.perf_counter()
    X = np.asarray(ds.X[:, :columns], dtype=np.float32)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    prep = time.perf_counter() - t0
    C = np.asfortranarray(X[np.random.default_rng(0).choice(rows, centers, replace=False)])
    Y = np.where(np.asarray(ds.y) > 0, 1.0, -1.0)[:, None]
    t0 = time.perf_counter()
    cg = NystromCG(GaussianKernel(bandwidth=bandwidth), X, Y, C, dtype=np.float32)  # the pivoted basis, b's pass
    setup = time.perf_counter() - t0
    s = cg.start(3e-7)
    cg.step(s)  # warm-up: the pool, the pages
    t0 = time.perf_counter()
    cg.step(s)
    step = time.perf_counter() - t0
    return {"rows": int(rows), "centers": int(centers), "kept_centers": int(cg.M), "columns": int(columns),
            "step_s": round(step, 2), "setup_s": round(setup, 1),
            "kernel_values_per_s": float(f"{rows * cg.M / step:.3g}"), "prepare_s": round(prep, 1)}


def roofline(centers, columns, repeat=20):
    """Each part of a pass alone on one core (module docstring): kernel values a second per part and together."""
    from threadpoolctl import threadpool_limits

    from kopt.numerics.threads import available_cpus
    from kopt.nystrom.passes import CHUNK_ENTRIES

    rng = np.random.default_rng(0)
    rows = CHUNK_ENTRIES // centers
    A = rng.standard_normal((rows, columns + 2)).astype(np.float32)
    B = np.ascontiguousarray(rng.standard_normal((columns + 2, centers)).astype(np.float32))
    p = rng.standard_normal((centers, 1)).astype(np.float32)
    K = np.empty((rows, centers), dtype=np.float32)
    N = -np.abs(rng.standard_normal((rows, centers))).astype(np.float32)  # exponents as the kernel's: at most 0
    parts = {"gemm": lambda: np.matmul(A, B, out=K), "clip": lambda: np.minimum(N, 0.0, out=K),
             "exp": lambda: np.exp(N, out=K), "K p": lambda: K @ p, "K^T s": lambda: K.T @ (K @ p)}
    seconds = {}
    with threadpool_limits(1):
        for name, fn in parts.items():
            fn()
            t0 = time.perf_counter()
            for _ in range(repeat):
                fn()
            seconds[name] = (time.perf_counter() - t0) / repeat
    seconds["K^T s"] -= seconds["K p"]  # timed with its K p
    clip = seconds.pop("clip")
    values = rows * centers
    cores = available_cpus()
    one = values / sum(seconds.values())
    return {"centers": centers, "columns": columns, "chunk_values": values,
            "per_part_values_per_s": {k: float(f"{values / v:.3g}") for k, v in seconds.items()},
            "share": {k: round(v / sum(seconds.values()), 3) for k, v in seconds.items()},
            "clip_values_per_s": float(f"{values / clip:.3g}"),
            "roofline_one_core": float(f"{one:.3g}"), "cores": cores, "roofline_all_cores": float(f"{one * cores:.3g}")}


def main():
    from kopt.cli.bench.roofline import run_record

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--centers", type=int, default=8192)
    ap.add_argument("--columns", type=int, default=6)
    ap.add_argument("--json")
    ap.add_argument("--roofline", action="store_true", help="the pass's parts alone on one core (module docstring)")
    a = ap.parse_args()
    if a.roofline:
        out = {"benchmark": "pcg_pass_roofline", **run_record(), **roofline(a.centers, a.columns)}
        print(json.dumps(out, indent=1))
        if a.json:
            with open(a.json, "w", encoding="utf-8") as fh:
                json.dump(out, fh, indent=1)
        return
    out = {"benchmark": "pcg_pass", **run_record(), "cases": [one(n, a.centers, a.columns) for n in a.rows]}
    for c in out["cases"]:
        print(f"{c['rows']:>11,} rows  {c['centers']} centers ({c['kept_centers']} kept)  {c['columns']} columns  "
              f"set-up {c['setup_s']:.1f} s  one CG step {c['step_s']:.1f} s  {c['kernel_values_per_s']:.3g} kernel values/s")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
