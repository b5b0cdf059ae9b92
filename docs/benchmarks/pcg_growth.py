"""krr_pcg's fit time against rows at a fixed number of centers (the target: no faster than n^1.1 at a fixed M).

The `higgs-shaped` preset at each size (its first rows), the square loss on ±1 labels, a Gaussian kernel of fixed
bandwidth, M Nyström centers, a fixed λ and ``iterations`` CG steps (``tol: 0``: every step runs, so every size does
the same number of passes).  Each size runs in its own process.  Per size: the fit's seconds, the seconds of one CG
step (the median of the trace's steps after the first), the set-up (fit minus the steps: the centers' factors) and
the peak memory; then the exponent of fit time and of step time between consecutive sizes, log(t2/t1)/log(n2/n1).

    flock /tmp/kopt-cpu.lock python docs/benchmarks/pcg_growth.py [--rows 100000 300000 1000000 3000000]
        [--centers 4096] [--iterations 10]

Writes docs/benchmarks/pcg_growth.json (the data cache must hold, or be able to generate, the largest size).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def spec(rows, M, iterations):
    return {"name": f"pcg_growth_{rows}", "seed": 0,
            "data": {"source": "higgs-shaped", "options": {"rows": int(rows)}},
            "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian", "bandwidth": 6.0},
                      "regularizer": {"name": "l2", "lambda": 1e-6}, "features": {"kind": "nystrom", "count": M}},
            "solver": {"name": "krr_pcg", "iterations": iterations, "tol": 0.0}, "backend": "numpy"}


def child(rows, M, iterations):
    """One size in this process: its JSON line on stdout."""
    import kopt

    warnings.simplefilter("ignore")  # tol 0: the run stops at the cap, by design
    t = time.perf_counter()
    r = kopt.solve(spec(rows, M, iterations))
    wall = time.perf_counter() - t
    steps = np.diff([rec["elapsed"] for rec in r.trace])[1:]
    fit = float(r.timings["fit_s"])
    step = float(np.median(steps))
    return {"rows": rows, "centers": M, "iterations": int(r.n_iter), "fit_s": fit, "step_s": step,
            "setup_s": fit - step * int(r.n_iter), "wall_s": wall, "accuracy": r.metrics.get("accuracy"),
            "rel_gap": r.info.get("rel_gap"), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[100_000, 300_000, 1_000_000, 3_000_000])
    p.add_argument("--centers", type=int, default=4096)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--out", default=os.path.join(HERE, "pcg_growth.json"))
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.centers, a.iterations)), flush=True)
        return 0
    import kopt
    from kopt.cli.bench.roofline import run_record
    from kopt.data import load_data

    load_data({"source": "higgs-shaped", "options": {"rows": max(a.rows)}})  # generate the largest once
    runs = []
    for n in sorted(a.rows):
        out = subprocess.run([sys.executable, __file__, "--child", str(n), "--centers", str(a.centers),
                              "--iterations", str(a.iterations)], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = runs[-1]
        print(f"{n:>9,} rows: fit {r['fit_s']:.1f} s, a step {r['step_s']:.2f} s, set-up {r['setup_s']:.1f} s, "
              f"peak {r['peak_mb']:.0f} MB", flush=True)
    for lo, hi in zip(runs, runs[1:]):
        k = math.log(hi["rows"] / lo["rows"])
        hi["fit_exponent"] = math.log(hi["fit_s"] / lo["fit_s"]) / k
        hi["step_exponent"] = math.log(hi["step_s"] / lo["step_s"]) / k
        print(f"{lo['rows']:,} -> {hi['rows']:,}: fit time grows as n^{hi['fit_exponent']:.2f}, a step as "
              f"n^{hi['step_exponent']:.2f}")
    doc = {"benchmark": "pcg_growth", **run_record(), "kopt": kopt.__version__,
           "centers": a.centers, "iterations": a.iterations, "runs": runs}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
