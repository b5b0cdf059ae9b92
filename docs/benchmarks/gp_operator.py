"""The GP variance operator Â (Dai et al. 2014, App. D) on the Dai et al. (2014) Fig. 5 set-up: what it can reach.

Dai et al. (2014) Sec. 7.2 (Fig. 5): the Sec. 7.1 generator, 2^11 training / 2^10 test points, Gaussian kernel
at the median bandwidth, σ² = 0.1, batch 64, feature block 512.  The paper gives no step size, T or
averaging for the operator; App. D gives its update with two independent feature draws ω, ω' per step.
This script runs kopt's operator (the same update, mini-batch and block form) over what the paper leaves
open -- the batch size B at a fixed memory budget (T·B fixed: memory O(T²B²)), the constant step γ and the
averaging -- and prints, next to each run's relative L2 errors against the closed form (eq. 9), the error
of the *expected* iterate E[Â_T] (full-batch gradient descent with the same steps and averaging: by
Jensen the floor no run reaches on average).

    python docs/benchmarks/gp_operator.py              # writes gp_operator.json here (about 4 minutes)
    python docs/benchmarks/gp_operator.py --setups ci  # the CI-sized set-up only

Seeded: the same command gives the same errors.  Times are from a shared 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from gp_convergence import SETUPS, spec

import kopt
from kopt.api import assemble
from kopt.cli.bench.roofline import run_record
from kopt_plugins.gp.exact import exact_posterior, expected_iterates, rel_error

HERE = os.path.dirname(os.path.abspath(__file__))

#: (setup, B, T, γ, averaging): the paper's B = 64 and the same memory (T·B = 6,400) at smaller B
GRID = [
    ("paper", 64, 100, 2.5, "tail"),
    ("paper", 64, 100, 2.5, "none"),
    ("paper", 64, 100, 4.0, "tail"),
    ("paper", 16, 400, 2.5, "tail"),
    ("paper", 8, 800, 2.0, "tail"),
    ("ci", 64, 100, 15.0, "tail"),
    ("ci", 16, 400, 15.0, "tail"),
    ("ci", 16, 400, 6.0, "tail"),
]


def run_one(setup, B, T, gamma, averaging):
    s = spec(setup, "operator", T, T)
    s["solver"].update(batch_size=B, step_size=gamma, averaging=averaging)
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        res = kopt.solve(s)
    wall = time.perf_counter() - t0
    info = res.info
    out = {"setup": setup, "batch_size": B, "iterations": T, "step_size": gamma, "averaging": averaging,
           "status": info.get("status"), "mean_rel_err": info.get("test_mean_rel_err"),
           "var_rel_err": info.get("test_var_rel_err"), "memory_mb": info.get("memory_mb"), "wall_s": wall}
    p = assemble(kopt.load_spec(spec(setup, "none", T, 0)))
    X, Xs, y = (np.asarray(a, dtype=np.float64) for a in (p.X, p.X_test, p.y))
    mean, var = exact_posterior(p.kernel, X, y, Xs, 0.1)
    [(m_T, v_T)] = expected_iterates(p.kernel, X, y, Xs, 0.1, gamma, T, [T], averaging)
    out["floor_mean_rel_err"], out["floor_var_rel_err"] = rel_error(m_T, mean), rel_error(v_T, var)
    out["posterior_variance_median"] = float(np.median(var))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setups", default="paper,ci")
    args = ap.parse_args()
    setups = args.setups.split(",")
    runs = []
    for setup, B, T, gamma, averaging in GRID:
        if setup not in setups:
            continue
        r = run_one(setup, B, T, gamma, averaging)
        runs.append(r)
        print(f"{setup:5s} B={B:3d} T={T:4d} gamma={gamma:5.1f} {averaging:4s} {r['status']}: "
              f"mean {r['mean_rel_err']:.3g} var {r['var_rel_err']:.3g} "
              f"(floor {r['floor_mean_rel_err']:.3g} / {r['floor_var_rel_err']:.3g})"
              f"  {r['memory_mb']:.0f} MiB  {r['wall_s']:.1f} s", flush=True)
    out = {"load": os.getloadavg(), "setups": {k: SETUPS[k] for k in setups}, "runs": runs, **run_record()}
    name = "gp_operator" if setups == ["paper", "ci"] else "gp_operator_" + "_".join(setups)
    with open(os.path.join(HERE, name + ".json"), "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
