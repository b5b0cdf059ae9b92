"""Passes to 1e-6 relative suboptimality on ill-conditioned ridge problems (κ ≫ n), b = 1 as in Shen et al. (2017).

The problem: ridge regression (square loss + l2, μ = λ) on rank-deficient
Gaussian data (n rows, d > n columns, rows of norm ≈ 1), so F itself adds no
strong convexity and κ = (L + L_B)/μ is set by λ alone.  For each λ every
solver runs from x₀ = 0 with mini-batch b = 1 (the paper's setting) and B = 4
blocks; F* is the closed-form optimum.  The table is the number of passes over
the data (2 per epoch) until (F − F*)/(F₀ − F*) ≤ 1e-6.

    python docs/benchmarks/adsg_illcond.py      # writes adsg_illcond.json / .png here
"""
from __future__ import annotations

import json
import os
import warnings

import numpy as np

import kopt
from kopt.cli.bench.roofline import run_record

HERE = os.path.dirname(os.path.abspath(__file__))
N, D, BLOCKS = 100, 200, 4
LAMBDAS = (1e-3, 1e-4, 1e-5)
EPOCHS = 400
SOLVERS = {"adsg": {"name": "adsg", "blocks": BLOCKS}, "adsg (last snapshot)": {"name": "adsg", "blocks": BLOCKS, "snapshot": "last"},
           "mrbcd": {"name": "mrbcd", "blocks": BLOCKS}, "svrg": {"name": "svrg"}}


def data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D)) / np.sqrt(D)
    y = X @ rng.standard_normal(D) + 0.1 * rng.standard_normal(N)
    return X, y


def optimum(X, y, lam):
    x = np.linalg.solve(X.T @ X / N + lam * np.eye(D), X.T @ y / N)
    return 0.5 * np.mean((X @ x - y) ** 2) + 0.5 * lam * x @ x


def main():
    X, y = data()
    out = {"n": N, "d": D, "blocks": BLOCKS, "batch_size": 1, "epochs": EPOCHS, "runs": {}, **run_record()}
    for lam in LAMBDAS:
        f_star = optimum(X, y, lam)
        for label, solver in SOLVERS.items():
            spec = {"data": {"standardize": False},
                    "model": {"loss": {"name": "square"}, "kernel": {"name": "linear"},
                              "regularizer": {"name": "l2", "lambda": lam}, "features": {"dtype": "float64"}},
                    "solver": {**solver, "batch_size": 1, "iterations": EPOCHS, "tol": 1e-9},
                    "backend": "numpy", "output": {"dir": "/tmp/kopt-adsg-illcond"}}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = kopt.solve(spec, data=(X, y))
            rel = [(r["objective"] - f_star) / (res.info["initial_objective"] - f_star) for r in res.trace]
            passes = [r["passes"] for r in res.trace]
            hit = next((p for p, r in zip(passes, rel) if r <= 1e-6), None)
            key = f"lambda={lam:g}"
            out["runs"].setdefault(key, {"kappa": res.info.get("kappa")})[label] = {
                "passes_to_1e-6": hit, "final_relative_suboptimality": rel[-1], "passes": passes,
                "relative_suboptimality": rel, "L": res.info["L"], "L_B": res.info["L_B"]}
            if "kappa" in res.info:
                out["runs"][key]["kappa"] = res.info["kappa"]
            print(f"λ={lam:g} {label:22s} passes to 1e-6: {hit}  final {rel[-1]:.2e}", flush=True)
            with open(os.path.join(HERE, "adsg_illcond.json"), "w") as fh:
                json.dump(out, fh, indent=1)
    plot(out)


def plot(out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(out["runs"])
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 3.6), squeeze=False)
    for ax, key in zip(axes[0], keys):
        for label, r in out["runs"][key].items():
            if isinstance(r, dict):
                ax.semilogy(r["passes"], np.maximum(r["relative_suboptimality"], 1e-16), label=label)
        ax.axhline(1e-6, color="grey", lw=0.6, ls="--")
        ax.set_title(f"ridge, {key}, κ/n = {out['runs'][key]['kappa'] / N:.0f}", fontsize=9)
        ax.set_xlabel("passes over the data")
        ax.set_ylabel("(F − F*)/(F₀ − F*)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "adsg_illcond.png"), dpi=80)


if __name__ == "__main__":
    main()
