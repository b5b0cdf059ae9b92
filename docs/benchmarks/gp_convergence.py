"""GP posterior by doubly stochastic gradients against the closed form, in the style of Dai et al. (2014) Fig. 5.

Data: the Dai et al. (2014) Sec. 7.1 generator (``data.source: dai_synthetic``), σ² = 0.1, batch 64,
feature block 512, Gaussian kernel.  Two set-ups:

* ``paper``: 2^11 training / 2^10 test points, median bandwidth (Dai et al. 2014, Sec. 7.2);
* ``ci``: 2^9 / 2^8 points, bandwidth 0.25 × median (the set-up of tests/plugins/gp/test_gp_validation.py).

Each runs the mean with the variance by one fit per test point (formulation 2) and by the
variance operator Â (formulation 1, memory O(T²), so fewer iterations).  Relative L2 errors
of the mean and of the variance against eq. (9) are recorded every few iterations (the model
is the tail average of the iterates once t > T/2).  Next to them: the same error for the
*expected* iterate.  DSG's updates are unbiased and linear in f, so E[f_t] is the full-batch
gradient-descent iterate with the same steps (and averaging); by Jensen no run can be closer
on average -- the floor set by the conditioning, whatever the noise.

    python docs/benchmarks/gp_convergence.py            # writes gp_convergence.json / .png here
    python docs/benchmarks/gp_convergence.py --quick    # short runs (a smoke test of the script)

The machine is shared: times are noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import kopt
from kopt.api import assemble
from kopt.cli.bench.roofline import run_record

HERE = os.path.dirname(os.path.abspath(__file__))

SETUPS = {
    "paper": {"n": 2**11, "m": 2**10, "factor": 1.0, "step": 2.5, "T": 16000, "T_op": 100},
    "ci": {"n": 2**9, "m": 2**8, "factor": 0.25, "step": 15.0, "T": 600, "T_op": 100},
}


def spec(setup, variance, T, every):
    s = SETUPS[setup]
    return {
        "name": f"gp_{setup}_{variance}",
        "data": {"source": "dai_synthetic", "options": {"n_train": s["n"], "n_test": s["m"]}, "split_seed": 0},
        "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth_factor": s["factor"]},
                  "form": "gp", "features": {"block_size": 512}},
        "solver": {"name": "gp", "variance": variance, "noise_variance": 0.1, "batch_size": 64, "iterations": T,
                   "step_size": s["step"], "compare_exact": True, "holdout_every": every, "max_memory_mb": 2048},
        "backend": "numpy",
        "output": {"dir": os.path.join("runs", f"gp_{setup}_{variance}")},
    }


def expected_iterate_errors(problem, sigma2, gamma, T, iterations):
    """Errors of E[f_t] (full-batch GD, same steps, tail average) for the mean and the variance."""
    from kopt_plugins.gp.exact import exact_posterior, expected_iterates, rel_error

    X, Xs, y = (np.asarray(a, dtype=np.float64) for a in (problem.X, problem.X_test, problem.y))
    mean, var = exact_posterior(problem.kernel, X, y, Xs, sigma2)
    out = {"iteration": [], "mean_rel_err": [], "var_rel_err": []}
    for t, (m_t, v_t) in zip(iterations, expected_iterates(problem.kernel, X, y, Xs, sigma2, gamma, T, iterations)):
        out["iteration"].append(int(t))
        out["mean_rel_err"].append(rel_error(m_t, mean))
        out["var_rel_err"].append(rel_error(v_t, var))
    return out


def run(setup, variance, T, every):
    t0 = time.perf_counter()
    res = kopt.solve(spec(setup, variance, T, every))
    wall = time.perf_counter() - t0
    rows = [r for r in res.trace if "test_mean_rel_err" in r]
    return {
        "setup": setup, "variance": variance, "iterations": T, "step_size": SETUPS[setup]["step"],
        "iteration": [r["iteration"] for r in rows], "elapsed_s": [r["elapsed"] for r in rows],
        "mean_rel_err": [r["test_mean_rel_err"] for r in rows], "var_rel_err": [r["test_var_rel_err"] for r in rows],
        "coverage": [r.get("test_coverage") for r in rows], "rmse": [r.get("test_rmse") for r in rows],
        "memory_mb": res.info["memory_mb"], "wall_s": wall, "fit_s": res.timings["fit_s"],
        "lambda": res.info["lambda"], "bandwidth": res.model.kernel.bandwidth,
    }


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"paper": "C0", "ci": "C1"}
    for r in results["runs"]:
        style = "-o" if r["variance"] == "test_points" else "--s"
        label = f"{r['setup']}: DSG, variance by {'test-point fits' if r['variance'] == 'test_points' else 'operator Â'}"
        x = np.array(r["iteration"]) * 64
        axes[0].loglog(x, r["mean_rel_err"], style, color=colors[r["setup"]], ms=3, label=label)
        axes[1].loglog(x, r["var_rel_err"], style, color=colors[r["setup"]], ms=3, label=label)
    for setup, e in results["expected"].items():
        x = np.array(e["iteration"]) * 64
        axes[0].loglog(x, e["mean_rel_err"], ":", color=colors[setup], label=f"{setup}: E[f_t] (GD floor)")
        axes[1].loglog(x, e["var_rel_err"], ":", color=colors[setup], label=f"{setup}: E[f_t] (GD floor)")
    for ax, title in zip(axes, ("(1) posterior mean", "(2) posterior variance")):
        ax.axhline(0.05, color="grey", lw=0.8)
        ax.set_xlabel("training samples seen (iterations × 64)")
        ax.set_ylabel("relative L2 error vs. closed form")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.suptitle("GP regression by doubly stochastic gradients (Dai et al. 2014, Fig. 5 set-up)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    ap.add_argument("--setups", default="paper,ci")
    args = ap.parse_args()
    scale = 0.05 if args.quick else 1.0
    results = {"runs": [], "expected": {}, **run_record()}
    for setup in args.setups.split(","):
        s = SETUPS[setup]
        T, T_op = max(20, int(s["T"] * scale)), max(10, int(s["T_op"] * scale))
        r = run(setup, "test_points", T, max(1, T // 20))
        results["runs"].append(r)
        print(setup, "test_points", r["iteration"][-1], r["mean_rel_err"][-1], r["var_rel_err"][-1], flush=True)
        results["expected"][setup] = expected_iterate_errors(assemble(kopt.load_spec(spec(setup, "none", T, 0))),
                                                             0.1, s["step"], T, r["iteration"])
        r = run(setup, "operator", T_op, max(1, T_op // 10))
        results["runs"].append(r)
        print(setup, "operator", r["iteration"][-1], r["mean_rel_err"][-1], r["var_rel_err"][-1], flush=True)
    name = "gp_convergence_quick" if args.quick else "gp_convergence"
    with open(os.path.join(HERE, name + ".json"), "w") as fh:
        json.dump(results, fh, indent=1)
    plot(results, os.path.join(HERE, name + ".png"))


if __name__ == "__main__":
    main()
