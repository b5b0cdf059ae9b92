"""Dai et al. (2014) Fig. 4(2) / Sec. 7.1: does DSG's error fall like 1/t, and under which step size?

Dai et al. (2014) proves E|f_t(x) − f*(x)|² = O(1/t) for γ_t = θ/t with θν ∈ (1, 2) (Thm. 4, Lemma 8),
f* the minimiser of R(f) = E ℓ(f(x), y) + ν/2 ‖f‖² (kopt's λ = ν).  Its Sec. 7.1 run (ν = 1e−6,
B = F = 1024) gives no step size; specs/krr_synthetic.yaml uses γ_t = 2000/(40 + t), i.e. θν = 0.002.

This script runs DSG on the noise-free Sec. 7.1 generator (2^11 training points, Gaussian kernel at
0.1 × the median bandwidth; f* = exact KRR on the same points, ``krr_exact``) and fits the log-log
slope of mean |f_t − f*|² on the test points over the last two octaves (t = T/4 .. T), for the last
iterate and the averaged iterate f̂_t = (1/t) Σ f_i (what the paper plots), under

* ``paper_step``: ν = 1e−6 with the step of specs/krr_synthetic.yaml (θν = 0.002, far below 1);
* ``theory``: ν = 1e−2 and 1e−3 with θ = 1.5/ν (θν = 1.5) and t0 chosen so that γ_1 stays below half
  the stability limit of a mini-batch step (``theory_step``); batch = block sizes 32 to 256.

    python docs/benchmarks/dsg_rate.py          # writes dsg_rate.json here (about 2 minutes)

Seeded (spec seed 0): the same command gives the same numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from kopt.api import assemble
from kopt.cli.bench.roofline import run_record
from kopt.spec import load_spec
from kopt.testing import KeepStates, solver_for

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "..", "..", "specs", "krr_synthetic.yaml")

#: name -> (λ, θν (None: the spec's θ = 2000, t0 = 40), T, B = F)
CASES = [
    ("paper_step", 1e-6, None, 512, 256),
    ("theory", 1e-2, 1.5, 512, 32),  # tests/plugins/dsg/test_dsg_synthetic.py
    ("theory", 1e-2, 1.5, 512, 128),
    ("theory", 1e-3, 1.5, 1024, 64),
    ("theory", 1e-3, 1.5, 512, 256),
]


def overrides(lam, T, B, n_train=2048, n_test=512):
    return [f"data.options.n_train={n_train}", f"data.options.n_test={n_test}", "data.options.noise=0",
            f"solver.batch_size={B}", f"model.features.block_size={B}", f"solver.iterations={T}",
            f"model.features.cache_blocks={T}", f"model.regularizer.lambda={lam:.1e}", "solver.averaging=true"]


def reference(ov):
    """f* on the test points (exact KRR on the same training points) and μ_max of K/n."""
    spec = load_spec(SPEC, ov + ["solver={name: krr_exact}", "model.features.dtype=float64"])
    problem = assemble(spec)
    f_star = solver_for(spec).run(problem, KeepStates(())).predictor.decision_function(problem.X_test, problem)
    X = np.asarray(problem.X, dtype=np.float64)
    mu_max = float(np.linalg.eigvalsh(problem.kernel.exact(X, X))[-1]) / X.shape[0]
    return np.asarray(f_star), mu_max


def theory_step(lam, theta_nu, mu_max, B, F):
    """θ = θν/ν and the smallest t0 with γ_1 = θ/(t0 + 1) ≤ 1/L, half the stability limit of a step.

    L = μ_max + ν + (1 + √(B/F))²/B: the curvature of a mini-batch step along a feature block is
    λ_max(K̂_bb)/B + ν, and K̂_bb = ΦΦᵀ/F (B × B, F features) adds to C's μ_max the largest
    eigenvalue of a Wishart matrix, about (1 + √(B/F))², over B.
    """
    theta = theta_nu / lam
    L = mu_max + lam + (1.0 + np.sqrt(B / F)) ** 2 / B
    return theta, max(0.0, float(np.ceil(theta * L - 1.0)))


def rate_run(lam, theta_nu, T, B):
    ov = overrides(lam, T, B)
    f_star, mu_max = reference(ov)
    if theta_nu is None:
        theta, t0 = 2000.0, 40.0
    else:
        theta, t0 = theory_step(lam, theta_nu, mu_max, B, B)
    spec = load_spec(SPEC, ov + [f"solver.step_size={theta}", f"solver.step_offset={t0}"])
    problem = assemble(spec)
    keep = [2**k for k in range(0, 21) if 2**k <= T]
    cap = KeepStates(keep)
    t_start = time.perf_counter()
    solver_for(spec).run(problem, cap)
    fit_s = time.perf_counter() - t_start
    fmap = problem.feature_map()
    last, avg = [], []
    for t in keep:
        s = cap.states[t]
        blocks = s["blocks"].tolist()
        last.append(float(np.mean((s["scale"] * fmap.predict(problem.X_test, s["coef"], blocks=blocks) - f_star) ** 2)))
        avg.append(float(np.mean((fmap.predict(problem.X_test, s["avg_sum"] / s["avg_count"], blocks=blocks)
                                  - f_star) ** 2)))
    tail = np.array(keep[-3:], dtype=float)
    slope = {k: float(np.polyfit(np.log(tail), np.log(v[-3:]), 1)[0]) for k, v in (("last", last), ("averaged", avg))}
    return {"lambda": lam, "theta_nu": theta * lam, "theta": theta, "t0": t0, "mu_max": mu_max, "iterations": T,
            "batch_size": B, "block_size": B, "t": keep, "error_last": last, "error_averaged": avg,
            "slope_last_two_octaves": slope, "fit_s": fit_s}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.parse_args()
    runs = []
    for name, lam, theta_nu, T, B in CASES:
        r = rate_run(lam, theta_nu, T, B)
        r["case"] = name
        runs.append(r)
        print(f"{name:10s} λ={lam:g} θν={r['theta_nu']:.3g} θ={r['theta']:.4g} t0={r['t0']:g} B=F={B} T={T}: "
              f"slope t={T // 4}..{T}: last {r['slope_last_two_octaves']['last']:.2f}, "
              f"averaged {r['slope_last_two_octaves']['averaged']:.2f}  ({r['fit_s']:.1f} s)", flush=True)
    out = {"runs": runs, **run_record()}
    with open(os.path.join(HERE, "dsg_rate.json"), "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
