"""ADSG against fairly tuned baselines (SVRG, MRBCD, Katyusha) on ridge problems: passes to 1e-6.

Shen et al. (2017) tunes every method's step ("for SVRG and MRBCD, it is usually
1/L") and uses the same mini-batch b for all and the same block count B for
ADSG and MRBCD.  Here each baseline runs over a step grid (2^(k/2) times its
default step, k = -2..8; the first diverging step ends the grid upwards) and
the best count of passes to the target is kept; ADSG runs with its theorem's
parameters (random and last snapshot).  Every run stops as soon as
(F − F*)/(F₀ − F*) ≤ 1e-6 (F* in closed form) or at the pass budget.

Problems (ridge, square loss + l2 with λ = μ, x₀ = 0, no standardisation):

* ``lowrank``: the set-up of adsg_illcond.py, n = 100 Gaussian rows in d = 200
  (rank n < d): F adds no curvature, κ = (L + L_B)/λ, but SVRG's iterates stay
  in the row space of A, where the conditioning is that of AAᵀ/n + λ.
* ``fullrank``: n = 400 rows in d = 60 with column scales 10^(−3k/(d−1)) (the
  eigenvalues of AᵀA/n spread over six decades) and rows of norm ≈ 1: the
  Hessian is ill-conditioned in every direction a method can move in.
* ``w8a``: the first 4,000 rows of w8a (d = 300, binary, rows scaled to norm 1), b = 4.

    python docs/benchmarks/adsg_tuned.py --problem fullrank --lambdas 1e-4 1e-5 [--methods adsg svrg ...]
    python docs/benchmarks/adsg_tuned.py --table     # the markdown table from adsg_tuned.json

Results are merged into adsg_tuned.json (one entry per problem and λ).
"""
from __future__ import annotations

import argparse
import json
import os
import warnings

import numpy as np

import kopt
from kopt.cli.bench.roofline import run_record
from kopt.contract.hookspecs import hookimpl
from kopt.contract.registry import registry

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "adsg_tuned.json")
DATA_DIR = os.path.join(HERE, "..", "..", "..", "shared", "data")
TARGET = 1e-6
GRID = [2.0 ** (k / 2) for k in range(-2, 9)]
PROBLEMS = {
    "lowrank": {"blocks": 4, "batch_size": 1, "budget": 800},
    "fullrank": {"blocks": 4, "batch_size": 1, "budget": 800},
    "w8a": {"blocks": 4, "batch_size": 4, "budget": 200},
}


def make_data(name):
    if name == "lowrank":
        rng = np.random.default_rng(0)
        X = rng.standard_normal((100, 200)) / np.sqrt(200)
        return X, X @ rng.standard_normal(200) + 0.1 * rng.standard_normal(100)
    if name == "fullrank":
        rng = np.random.default_rng(0)
        n, d = 400, 60
        X = rng.standard_normal((n, d)) * 10.0 ** (-3.0 * np.arange(d) / (d - 1))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        return X, X @ rng.standard_normal(d) + 0.01 * rng.standard_normal(n)
    from kopt.data.readers import read_file

    X, y = read_file(os.path.join(DATA_DIR, "w8a.xz"),
                     {"format": "libsvm", "zero_based": "auto", "n_features": 300, "nonfinite": "error",
                      "cache": True})[:2]
    X = np.asarray(X[:4000].todense(), dtype=np.float64)
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    return X, np.where(np.asarray(y[:4000], dtype=float) > 0, 1.0, -1.0)


def ridge_optimum(X, y, lam):
    n, d = X.shape
    x = np.linalg.solve(X.T @ X / n + lam * np.eye(d), X.T @ y / n)
    return 0.5 * np.mean((X @ x - y) ** 2) + 0.5 * lam * x @ x


class StopAtTarget:
    """Records (passes, relative suboptimality, seconds) per epoch; stops the run at the target or on divergence."""

    def __init__(self, f0, f_star):
        self.f0, self.f_star, self.points = f0, f_star, []

    @hookimpl
    def kopt_iteration(self, run, record):
        if record.objective is None:
            return
        rel = (record.objective - self.f_star) / (self.f0 - self.f_star)
        self.points.append((record.extra.get("passes"), rel, record.elapsed))
        if not rel < 1e3 or rel <= TARGET:
            run.stop_requested = True


def passes_to_target(solver, X, y, lam, budget):
    """Passes and seconds until the target (None if not reached within ``budget`` passes), the last value."""
    per_epoch = 3 if solver["name"] == "katyusha" else 2
    spec = {"data": {"standardize": False},
            "model": {"loss": {"name": "square"}, "kernel": {"name": "linear"},
                      "regularizer": {"name": "l2", "lambda": lam}, "features": {"dtype": "float64"}},
            "solver": {**solver, "iterations": int(budget // per_epoch), "tol": 0},
            "backend": "numpy", "output": {"dir": "/tmp/kopt-adsg-tuned"}}
    f_star = ridge_optimum(X, y, lam)
    stop = StopAtTarget(0.5 * float(np.mean(y**2)), f_star)
    pm = registry().pm
    pm.register(stop)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            kopt.solve(spec, data=(X, y))
    except KeyboardInterrupt:
        pass
    finally:
        pm.unregister(stop)
    hit = next(((p, t) for p, r, t in stop.points if r <= TARGET), (None, None))
    last = stop.points[-1][1] if stop.points else float("nan")
    return hit, last


def tuned(name, base, X, y, lam, budget, default_step):
    """Best passes over the step grid; returns (best, per-step results)."""
    rows = []
    for mult in GRID:
        (hit, secs), last = passes_to_target({**base, "step_size": mult * default_step}, X, y, lam, budget)
        rows.append({"step_multiplier": mult, "passes": hit, "seconds": secs, "final": last})
        print(f"  {name:9s} step x{mult:<6.3g} passes {hit}  s {secs}  final {last:.2e}", flush=True)
        if not last < 1.0:  # diverged: larger steps diverge too
            break
    hits = [r for r in rows if r["passes"] is not None]
    if not hits:
        return None, None, rows
    return min(r["passes"] for r in hits), min(r["seconds"] for r in hits), rows


def run_problem(problem, lams, methods):
    cfg = PROBLEMS[problem]
    stamp = run_record()  # each entry says which run made it; the file's top level names the latest
    X, y = make_data(problem)
    n = X.shape[0]
    b, B, budget = cfg["batch_size"], cfg["blocks"], cfg["budget"]
    L = float(np.max(np.sum(X**2, axis=1)))  # square loss: ℓ'' = 1
    L_F = float(np.linalg.eigvalsh(X.T @ X / n)[-1])
    edges = np.linspace(0, X.shape[1], B + 1).round().astype(int)
    L_B = max(float(np.linalg.eigvalsh(X[:, lo:hi].T @ X[:, lo:hi] / n)[-1]) for lo, hi in zip(edges, edges[1:]))
    for lam in lams:
        print(f"{problem} λ={lam:g} κ/n={(L / b + L_B) / lam / n:.0f}", flush=True)
        entry = {"n": n, "d": X.shape[1], "batch_size": b, "blocks": B, "budget": budget, "L": L, "L_F": L_F,
                 "L_B": L_B, "kappa_over_n": (L / b + L_B) / lam / n}
        for label, snap in (("adsg", "random"), ("adsg (last snapshot)", "last")):
            if "adsg" not in methods:
                continue
            (hit, secs), last = passes_to_target({"name": "adsg", "blocks": B, "batch_size": b, "snapshot": snap},
                                                 X, y, lam, budget)
            entry[label] = {"passes": hit, "seconds": secs, "final": last}
            print(f"  {label:22s} passes {hit}  s {secs}  final {last:.2e}", flush=True)
        for name, base, step0 in (("svrg", {"name": "svrg", "batch_size": b}, 1.0 / (L / b + L_F)),
                                  ("mrbcd", {"name": "mrbcd", "blocks": B, "batch_size": b}, 1.0 / (L / b + L_B)),
                                  ("katyusha", {"name": "katyusha", "batch_size": b}, 1.0 / (3.0 * L))):
            if name not in methods:
                continue
            best, secs, rows = tuned(name, base, X, y, lam, budget, step0)
            entry[name] = {"passes": best, "seconds": secs, "default_step": step0, "grid": rows,
                           "default": next(r["passes"] for r in rows if r["step_multiplier"] == 1.0)}
        key = f"{problem} lambda={lam:g}"
        merged = json.load(open(OUT)) if os.path.exists(OUT) else {}
        merged[key] = {**merged.get(key, {}), **entry, **stamp}
        merged.update(stamp)
        with open(OUT, "w") as fh:
            json.dump(merged, fh, indent=1)


def table():
    data = json.load(open(OUT))
    cols = ["adsg", "adsg (last snapshot)", "svrg", "mrbcd", "katyusha"]
    print("| problem | n × d | b, B | κ/n | " + " | ".join(cols) + " |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in cols) + " |")
    for key, e in data.items():
        if not isinstance(e, dict) or "kappa_over_n" not in e:  # the file's stamp, not a problem's entry
            continue

        def cell(c):
            r = e.get(c)
            if r is None:
                return "not run"
            s = "—" if r["passes"] is None else f"{r['passes']:g}"
            if r.get("seconds") is not None:
                s += f" ({r['seconds']:.1f} s)"
            if "default" in r:
                s += f"; untuned {'—' if r['default'] is None else format(r['default'], 'g')}"
            return s
        print(f"| {key} | {e['n']} × {e['d']} | {e['batch_size']}, {e['blocks']} | {e['kappa_over_n']:.0f} | "
              + " | ".join(cell(c) for c in cols) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--problem", choices=sorted(PROBLEMS))
    ap.add_argument("--lambdas", type=float, nargs="+", default=[1e-4, 1e-5])
    ap.add_argument("--methods", nargs="+", default=["adsg", "svrg", "mrbcd", "katyusha"],
                    help="run only these (results merge into the JSON entry of the problem and λ)")
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    if args.table:
        table()
    else:
        run_problem(args.problem, args.lambdas, args.methods)


if __name__ == "__main__":
    main()
