"""Joker (DBCD-TR) cost per iteration against M and |B|, and the projected time of Zhang & Lai's HIGGS run.

Features mode on HIGGS-shaped data (the 7,000 LightGBM HIGGS rows: 28 features; the cost of a block
iteration does not depend on n in this mode), Huber loss, Laplacian kernel, median bandwidth -- the main
job's model.  For every (M, |B|) the solver runs a few warm-up iterations and then ``--iters`` timed
ones; a run-time hook records wall time and process CPU time (all threads) at every iteration.  The
median per-iteration figures are reported, for both trust-region model kernels (``model_kernel``:
``features`` = Zhang & Lai's ψψᵀ, ``exact`` = k(X_B, X_B)).

The projection of Zhang & Lai's setting (8.8M training rows, M = 2·10^5, |B| = 512, 50,000 iterations)
uses the measured per-iteration cost at M = 2·10^5 plus the measured per-row cost of scoring rows
(the final holdout pass over 2.2M rows, and the gap estimate).

    python docs/benchmarks/joker_cost.py            # writes joker_cost.json and joker_cost.png here

The machine is shared (other engineers' jobs run beside this one): wall times are noisy, CPU times
less so; "1-core estimate" = CPU seconds per iteration, an upper bound for an idle 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np

import kopt
from kopt.cli.bench.roofline import run_record
from kopt.contract.hookspecs import hookimpl
from kopt.contract.registry import registry

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data"))
TRAIN = os.path.join(DATA, "higgs_lightgbm_train.tsv.xz")


class Clock:
    """Run-time hook: wall and CPU time at every reported iteration."""

    def __init__(self):
        self.marks = []

    @hookimpl
    def kopt_iteration(self, run, record):
        self.marks.append((record.iteration, time.perf_counter(), time.process_time()))


def spec(M, bs, iters, model_kernel="features", mode="features", n=None):
    data = {"train": TRAIN, "label": 0}
    if n:
        data["max_rows"] = n
    return {"data": data,
            "model": {"loss": {"name": "huber", "target": "binary", "delta": 1.0},
                      "kernel": {"name": "laplacian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": 2.0 ** -7 / 7000}, "form": "dual",
                      "features": {"count": M, "block_size": 512}},
            "solver": {"name": "joker", "mode": mode, "batch_size": bs, "iterations": iters, "tol": 0.0,
                       "check_every": 10**9, "model_kernel": model_kernel, "block_memory_mb": 1024},
            "backend": "numpy", "output": {"model": False, "report": False}}


def per_iteration(s, warm):
    clock = Clock()
    reg = registry()
    reg.pm.register(clock, name="joker-cost-clock")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = kopt.solve(s)
    finally:
        reg.pm.unregister(name="joker-cost-clock")
    m = [x for x in clock.marks if x[0] > warm]
    wall = np.diff([x[1] for x in m])
    cpu = np.diff([x[2] for x in m])
    return {"wall_s": float(np.median(wall)), "wall_min_s": float(wall.min()), "wall_max_s": float(wall.max()),
            "cpu_s": float(np.median(cpu)), "tr_steps_per_block": r.info["tr_steps"] / r.n_iter}


def scoring_rate(M, rows=20000):
    """Seconds per row to score rows with M features (the holdout pass and the gap estimate)."""
    from kopt.api import assemble

    s = spec(M, 512, 1)
    problem = assemble(kopt.load_spec(s))
    fmap = problem.feature_map(M)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, 28)).astype(np.float32)
    theta = np.zeros((fmap.n_blocks, fmap.block_size))
    t0, c0 = time.perf_counter(), time.process_time()
    fmap.predict(X, theta)
    return (time.perf_counter() - t0) / rows, (time.process_time() - c0) / rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    warm, k = 2, args.iters
    out = {**run_record(), "load_average_at_start": os.getloadavg(), "by_M": [], "by_B": [], "exact_by_n": []}
    Ms = [2048, 4096, 8192, 16384, 32768] if not args.quick else [2048, 8192]
    for M in Ms:
        for mk in ("features", "exact"):
            r = per_iteration(spec(M, 512, warm + k, mk), warm)
            out["by_M"].append({"M": M, "block_size": 512, "model_kernel": mk, **r})
            print("M", M, mk, r, flush=True)
    for bs in ([256, 512, 1024, 2048] if not args.quick else [256, 1024]):
        for mk in ("features", "exact"):
            r = per_iteration(spec(16384, bs, warm + k, mk), warm)
            out["by_B"].append({"M": 16384, "block_size": bs, "model_kernel": mk, **r})
            print("B", bs, mk, r, flush=True)
    for n in ([1000, 2000, 4000, 7000] if not args.quick else [1000, 4000]):
        r = per_iteration(spec(4096, 512, warm + k, mode="exact", n=n), warm)
        out["exact_by_n"].append({"n": n, "block_size": 512, **r})
        print("exact n", n, r, flush=True)
    # Zhang & Lai's HIGGS setting
    paper = {"n_train": 8_800_000, "n_test": 2_200_000, "M": 200_000, "block_size": 512, "iterations": 50_000}
    for mk in ("features", "exact"):
        r = per_iteration(spec(paper["M"], 512, warm + 3, mk), warm)
        paper[f"per_iteration_{mk}"] = r
        print("paper M", mk, r, flush=True)
    w, c = scoring_rate(paper["M"], rows=4000)
    paper["score_row_wall_s"], paper["score_row_cpu_s"] = w, c
    for mk in ("features", "exact"):
        it = paper[f"per_iteration_{mk}"]
        scoring = paper["n_test"] * w + 200_000 * w * 50  # final holdout pass + 50 gap estimates on 200k rows
        paper[f"projected_hours_wall_{mk}"] = (paper["iterations"] * it["wall_s"] + scoring) / 3600
        paper[f"projected_hours_cpu_{mk}"] = (paper["iterations"] * it["cpu_s"] + paper["n_test"] * c
                                              + 200_000 * c * 50) / 3600
    out["paper_setting"] = paper
    out["load_average_at_end"] = os.getloadavg()
    with open(os.path.join(HERE, "joker_cost.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    plot(out)


def plot(out):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    for mk, style in (("features", "o-"), ("exact", "s--")):
        rows = [r for r in out["by_M"] if r["model_kernel"] == mk]
        ax[0].loglog([r["M"] for r in rows], [r["cpu_s"] for r in rows], style, label=f"CPU, model K_BB: {mk}")
        ax[0].loglog([r["M"] for r in rows], [r["wall_s"] for r in rows], style, alpha=0.4, label=f"wall, {mk}")
        rows = [r for r in out["by_B"] if r["model_kernel"] == mk]
        ax[1].loglog([r["block_size"] for r in rows], [r["cpu_s"] for r in rows], style, label=f"CPU, {mk}")
        ax[1].loglog([r["block_size"] for r in rows], [r["wall_s"] for r in rows], style, alpha=0.4, label=f"wall, {mk}")
    ax[0].set(xlabel="M (random features)", ylabel="seconds per iteration", title="|B| = 512")
    ax[1].set(xlabel="|B|", ylabel="seconds per iteration", title="M = 16384")
    rows = out["exact_by_n"]
    ax[2].plot([r["n"] for r in rows], [r["cpu_s"] for r in rows], "o-", label="CPU")
    ax[2].plot([r["n"] for r in rows], [r["wall_s"] for r in rows], "o-", alpha=0.4, label="wall")
    ax[2].set(xlabel="n (training rows)", ylabel="seconds per iteration", title="exact mode, |B| = 512")
    for a in ax:
        a.legend(fontsize=7)
        a.grid(alpha=0.3)
    fig.suptitle("Joker per-iteration cost (Huber, Laplacian, HIGGS rows; shared 2-core machine)")
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "joker_cost.png"), dpi=110)


if __name__ == "__main__":
    main()
