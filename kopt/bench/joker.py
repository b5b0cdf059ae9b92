"""``kopt bench joker``: Joker's cost per block iteration at papers/004's HIGGS setting, against its floor.

On ``rows`` HIGGS-shaped rows (28 standard-normal features, labels from a fixed nonlinear rule;
the cost of an iteration does not depend on the values), Joker-Huber with a Laplacian kernel
runs ``iterations`` block iterations in features mode (the dual route of papers/004 Alg. 3) for
each M, with |B| = ``batch_size``; the median seconds per iteration is compared with the floor:
the time, at this machine's measured rates, of the work papers/004's iteration cannot skip --

* |B|·M cosines (the block's features, at the measured float32 cos rate on all threads),
* the projections [X_B, 1]·W (|B|·(d+1)·M flops) and the two |B|×M products (K_B,:α and the
  θ update), at the measured single-thread GEMM rate times the threads,
* the model's K_BB = φ(X_B)φ(X_B)ᵀ (2|B|²M flops) -- papers/004 Alg. 3 forms it; the line
  ``floor_without_gram`` leaves it out, the figure a product-only trust region would aim at.

It also times scoring (seconds per row at each M) and projects papers/004's whole run from the
measured costs: ``project_iterations`` iterations, a gap estimate on ``gap_rows`` rows every
``check_every`` iterations, and the final scoring of the ``test_rows`` holdout.
"""
from __future__ import annotations

import time

import numpy as np

from ..fileio import dumps

from .. import threads as _threads
from .roofline import cos_roofline, gemm_rate, machine


def _data(rows, dim, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, dim)).astype(np.float32)
    y = np.where(np.sin(X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] > 0, 1.0, 0.0)
    return X, y


def _spec(M, batch_size, iterations, lam):
    return {"name": "bench_joker", "seed": 0, "data": {"standardize": False},
            "model": {"loss": {"name": "huber", "delta": 1.0, "target": "binary"},
                      "kernel": {"name": "laplacian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": lam}, "form": "dual",
                      "features": {"count": M, "block_size": 512, "dtype": "float32"}},
            "solver": {"name": "joker", "mode": "features", "batch_size": batch_size, "iterations": iterations,
                       "tol": 0.0, "check_every": 0, "holdout_every": 0},
            "backend": "numpy", "output": {"model": False, "report": False}}


def iteration_cost(X, y, M, batch_size, iterations, lam):
    """Median and spread of the seconds per block iteration (warm: the first two are left out)."""
    import warnings

    import kopt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = kopt.solve(_spec(M, batch_size, iterations, lam), data=(X, y))
    t = np.array([rec["elapsed"] for rec in r.trace])
    steps = np.diff(t)[2:-1]  # warm-up left out, and the last: it holds the final check
    return {"median_s": float(np.median(steps)), "min_s": float(steps.min()), "max_s": float(steps.max()),
            "iterations_timed": int(steps.size)}, r


def scoring_cost(model, X, repeat=2):
    """Seconds per scored row."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        model.decision_function(X)
        best = min(best, time.perf_counter() - t0)
    return best / X.shape[0]


def floors(M, batch_size, dim, cos_rate, gemm_gflops):
    """Seconds of the iteration's unavoidable work at the measured rates (see the module docstring)."""
    B = batch_size
    cos_s = B * M / (cos_rate * 1e9)
    proj_s = 2.0 * B * (dim + 1) * (M / 2) / (gemm_gflops * 1e9)  # sin/cos pairs share a projection
    products_s = 2 * 2.0 * B * M / (gemm_gflops * 1e9)
    gram_s = 2.0 * B * B * M / (gemm_gflops * 1e9)
    return {"cos_s": cos_s, "projection_s": proj_s, "products_s": products_s, "gram_s": gram_s,
            "floor_s": cos_s + proj_s + products_s + gram_s, "floor_without_gram_s": cos_s + proj_s + products_s}


def run_joker(rows=1_000_000, dim=28, features=(16384, 100_000), batch_size=512, iterations=12,
              threads=None, score_rows=100_000, project_iterations=50_000, check_every=1000, gap_rows=200_000,
              test_rows=2_200_000, train_rows=8_800_000, log=print):
    threads = _threads.resolve_threads(threads)
    X, y = _data(rows, dim)
    lam = 2.0**-7 / rows  # papers/004's λ_J = 2^-7 in kopt's convention at this n
    cos_rate = cos_roofline(threads)
    gemm1 = gemm_rate(1)
    gemm_all = gemm1 * threads  # kopt's threads each run a single-threaded BLAS
    out = {"rows": rows, "dim": dim, "batch_size": batch_size, "threads": threads, "machine": machine(),
           "roofline": {"cos_G_per_s_all_threads": cos_rate, "sgemm_gflops_1_thread": gemm1,
                        "sgemm_gflops_used": gemm_all}, "by_M": []}
    log(f"kopt bench joker: {rows:,} HIGGS-shaped rows, |B| = {batch_size}, {threads} threads; "
        f"cos {cos_rate:.2f} G/s, sgemm {gemm1:.0f} GFLOP/s per thread; CPU flags {' '.join(out['machine']['cpu_flags'])}")
    for M in features:
        cost, result = iteration_cost(X, y, M, batch_size, iterations, lam)
        floor = floors(M, batch_size, dim, cos_rate, gemm_all)
        per_row = scoring_cost(result.model, X[:score_rows])
        # one gap estimate: score gap_rows rows (M features each); the holdout: test_rows rows
        check_s = gap_rows * per_row
        total_s = project_iterations * cost["median_s"] + (project_iterations // check_every) * check_s \
            + test_rows * per_row
        entry = {"M": M, "seconds_per_iteration": cost, **{k: v for k, v in floor.items()},
                 "ratio_to_floor": cost["median_s"] / floor["floor_s"],
                 "ratio_to_floor_without_gram": cost["median_s"] / floor["floor_without_gram_s"],
                 "seconds_per_scored_row": per_row,
                 "projection": {"iterations": project_iterations, "train_rows": train_rows,
                                "check_every": check_every, "gap_rows": gap_rows, "test_rows": test_rows,
                                "iterations_s": project_iterations * cost["median_s"],
                                "checks_s": (project_iterations // check_every) * check_s,
                                "holdout_s": test_rows * per_row, "total_hours": total_s / 3600.0}}
        out["by_M"].append(entry)
        log(f"M = {M:>7,}: {cost['median_s']:.4f} s/iteration [{cost['min_s']:.4f}, {cost['max_s']:.4f}]; floor "
            f"{floor['floor_s']:.4f} s ({floor['gram_s']:.4f} of it K_BB), {entry['ratio_to_floor']:.2f}x; without "
            f"the Gram {floor['floor_without_gram_s']:.4f} s; scoring {per_row * 1e6:.2f} us/row; papers/004's run "
            f"projects to {entry['projection']['total_hours']:.2f} h")
    out["loadavg_after"] = machine()["loadavg"]
    return out


def joker(args) -> int:
    """``kopt bench joker`` (args: rows, features, batch_size, iterations, json)."""
    res = run_joker(rows=args.rows, features=tuple(args.features), batch_size=args.batch_size,
                    iterations=args.iterations)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(dumps(res, indent=2))
        print(f"wrote {args.json}")
    return 0
