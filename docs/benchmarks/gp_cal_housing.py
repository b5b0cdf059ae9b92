"""GP regression by doubly stochastic gradients on cal_housing (the preset's standard split).

Two runs of the ``gp`` solver (variance by one fit per test point, formulation 2), Gaussian
kernel with the median bandwidth, σ² = 0.2 on the z-scored target (about the residual
variance exact KRR leaves: (53,895 / std y)² ≈ 0.22), batch 64, block 512:

* ``subsample``: the first ``--sub-rows`` rows of the file, split 80/20 the same way, where the
  closed-form posterior fits in memory: relative L2 errors of the mean and the variance, and
  the interval's coverage;
* ``full``: the standard split (16,512 / 4,128 rows): RMSE in dollars and the coverage of the
  95% predictive interval for y* (mean ± 1.96·√(variance + σ²)) on the test split.

    python docs/benchmarks/gp_cal_housing.py             # writes gp_cal_housing.json here
    python docs/benchmarks/gp_cal_housing.py --quick     # short runs

The machine is shared: times are noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import kopt
from kopt.cli.bench.roofline import run_record

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "..", "shared", "data", "cal_housing.data.xz")


def spec(name, T, every, *, max_rows=None, compare=False, step=2.0, sigma2=0.2):
    data = {"train": os.path.abspath(DATA), "label": -1, "test_fraction": 0.2, "split_seed": 0,
            "standardize_target": True}
    if max_rows:
        data["max_rows"] = max_rows
    return {
        "name": f"gp_cal_housing_{name}",
        "data": data,
        "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": "median"}, "form": "gp",
                  "features": {"block_size": 512}},
        "solver": {"name": "gp", "variance": "test_points", "noise_variance": sigma2, "batch_size": 64,
                   "iterations": T, "step_size": step, "holdout_every": every, "compare_exact": compare,
                   "interval_level": 0.95, "interval": "observation", "max_memory_mb": 2048},
        "backend": "numpy",
        "output": {"dir": os.path.join("runs", f"gp_cal_housing_{name}")},
    }


def run(name, s):
    t0 = time.perf_counter()
    res = kopt.solve(s)
    wall = time.perf_counter() - t0
    rows = [r for r in res.trace if "test_rmse" in r]
    keep = ("iteration", "elapsed", "test_rmse", "test_coverage", "test_mean_rel_err", "test_var_rel_err")
    out = {"name": name, "n_train": res.report["data"]["n_train"], "n_test": res.report["data"]["n_test"],
           "iterations": res.n_iter, "trace": [{k: r[k] for k in keep if k in r} for r in rows],
           "final": {k: v for k, v in res.info.items() if k.startswith("test_")}, "memory_mb": res.info["memory_mb"],
           "fit_s": res.timings["fit_s"], "wall_s": wall, "peak_rss_mb": res.report["memory"]["peak_rss_mb"],
           "bandwidth": res.model.kernel.bandwidth, "lambda": res.info["lambda"]}
    print(name, json.dumps(out["final"]), f"fit {out['fit_s']:.0f} s", flush=True)
    return out


def exact_reference(s):
    """RMSE (target units) and 95% coverage of the closed-form posterior on the same split."""
    from statistics import NormalDist

    from kopt.api import assemble
    from kopt_plugins.gp.exact import exact_posterior

    p = assemble(kopt.load_spec(s))
    sigma2 = s["solver"]["noise_variance"]
    mean, var = exact_posterior(p.kernel, p.X, p.y, p.X_test, sigma2)
    pre, y = p.preprocessor, np.asarray(p.y_test_raw, dtype=np.float64)
    center = pre.decode(mean)
    half = NormalDist().inv_cdf(0.975) * np.sqrt(np.maximum(var, 0) + sigma2) * pre.y_scale
    return {"rmse": float(np.sqrt(np.mean((center - y) ** 2))), "coverage": float(np.mean(np.abs(y - center) <= half))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sub-rows", type=int, default=4000)
    ap.add_argument("--sub-iterations", type=int, default=1500)
    ap.add_argument("--full-iterations", type=int, default=1200)
    ap.add_argument("--only", choices=["subsample", "full"], default=None)
    args = ap.parse_args()
    q = 0.05 if args.quick else 1.0
    stamp = run_record()  # the file's and each new run's: with --only, the other run keeps its own
    out = {"runs": [], **stamp}
    path = os.path.join(HERE, "gp_cal_housing_quick.json" if args.quick else "gp_cal_housing.json")
    if os.path.exists(path) and args.only:
        with open(path) as fh:
            out["runs"] = [r for r in json.load(fh)["runs"] if r["name"] != args.only]
    if args.only in (None, "subsample"):
        T = max(20, int(args.sub_iterations * q))
        s = spec("subsample", T, max(1, T // 15), max_rows=args.sub_rows, compare=True)
        out["runs"].append({**run("subsample", s), **stamp})
        out["runs"][-1]["exact"] = exact_reference(s)
        print("exact posterior", out["runs"][-1]["exact"], flush=True)
    if args.only in (None, "full"):
        T = max(10, int(args.full_iterations * q))
        out["runs"].append({**run("full", spec("full", T, max(1, T // 12))), **stamp})
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
