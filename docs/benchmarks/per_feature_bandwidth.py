"""What one length scale per column gains over solver: auto's one shared bandwidth, chosen on validation rows.

For each set: the training rows are z-scored (as ``standardize: auto`` does) and split 80/20 (seeded); a
Nyström square-loss model (``NystromSystem``, M centers, the λ path) is scored on the validation rows

* ``shared``: one bandwidth, the best of the ``scale`` rule's x{0.5, 0.71, 1, 1.41, 2};
* ``per_column``: one scale s_j per column (the Gaussian kernel of x_j s_j / σ: an ARD kernel), chosen by
  coordinate search on the validation rows -- each column in turn tries s_j x {0, 0.5, 2} (0 drops it)
  and keeps a change that gains at least 0.05 points, two sweeps, then the shared factor again.

Both are then fitted on the 80% and scored on the set's test rows.  The search's own validation rows decide
every choice, so the test accuracy is an honest estimate of what the rule would give.

    python docs/benchmarks/per_feature_bandwidth.py --out docs/benchmarks/per_feature_bandwidth.jsonl
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

SETS = {
    "higgs-shaped": {"source": "higgs-shaped", "options": {"rows": 25_000, "test_rows": 20_000}},
    "higgs-12k": {"source": "higgs-12k"},
    "ijcnn1": {"source": "ijcnn1"},
    "cal_housing": {"source": "cal_housing"},
}
LAMBDAS = [10.0 ** (-k / 2) for k in range(4, 19)]


def load(name):
    from kopt.data import load_data

    spec = dict(SETS[name])
    ds = load_data(spec)
    X, Xt = np.asarray(ds.X.toarray() if hasattr(ds.X, "toarray") else ds.X, dtype=np.float64), None
    Xt = np.asarray(ds.X_test.toarray() if hasattr(ds.X_test, "toarray") else ds.X_test, dtype=np.float64)
    mu, sd = X.mean(0), X.std(0)
    sd[sd == 0] = 1.0
    y, yt = np.asarray(ds.y), np.asarray(ds.y_test)
    real = name == "cal_housing"
    if not real:
        classes = np.unique(y)
        y, yt = np.where(y == classes[-1], 1.0, -1.0), np.where(yt == classes[-1], 1.0, -1.0)
    return ((X - mu) / sd).astype(np.float32), y, ((Xt - mu) / sd).astype(np.float32), yt, real


def score(S, Y, real):
    return -float(np.sqrt(np.mean((S[:, 0] - Y) ** 2))) if real else float(np.mean(np.sign(S[:, 0]) == np.sign(Y)))


class Scorer:
    def __init__(self, X, y, real, M, seed=0):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(y))
        m = len(y) // 5
        self.va, self.tr = np.sort(perm[:m]), np.sort(perm[m:])
        self.centers = np.sort(rng.choice(self.tr, size=min(M, len(self.tr)), replace=False))
        self.X, self.y, self.real = X, y, real
        self.mean = float(np.mean(y[self.tr]))

    def evaluate(self, scales, sigma, X_test=None, y_test=None):
        """(validation score, λ, test score or None) at column scales ``scales`` and bandwidth ``sigma``."""
        from kopt.nystrom.system import NystromSystem
        from kopt_plugins.kernels.shift_invariant import GaussianKernel

        keep = scales > 0
        Xs = (self.X[:, keep] * scales[keep]).astype(np.float32)
        kernel = GaussianKernel(bandwidth=sigma)
        Y = (self.y[self.tr] - self.mean)[:, None]
        system = NystromSystem(kernel, Xs[self.tr], Y, Xs[self.centers])
        paths = system.path(LAMBDAS, Xs[self.va])
        best = max(((score(S + self.mean, self.y[self.va], self.real), lam) for S, lam in zip(paths, LAMBDAS)
                    if S is not None), key=lambda t: t[0])
        test = None
        if X_test is not None:
            w = system.coef(system.solve(best[1]))
            St = system.scores((X_test[:, keep] * scales[keep]).astype(np.float32), w) + self.mean
            test = score(St, y_test, self.real)
        return best[0], best[1], test


def run(name, M, log):
    X, y, Xt, yt, real = load(name)
    d = X.shape[1]
    sc = Scorer(X, y, real, M)
    rule = float(np.sqrt(d))  # the scale rule on z-scored columns: sqrt(d) (kernels.md)
    t0 = time.perf_counter()
    ones = np.ones(d)
    shared = max(((sc.evaluate(ones, rule * f)[0], f) for f in (0.5, 0.71, 1.0, 1.41, 2.0)), key=lambda t: t[0])
    factor = shared[1]
    shared_val, lam, shared_test = sc.evaluate(ones, rule * factor, Xt, yt)
    shared_s = time.perf_counter() - t0
    scales, best = ones.copy(), shared_val
    gain_min = 0.0005 if not real else 0.002 * abs(best)
    for sweep in range(2):
        for j in range(d):
            for m in (0.0, 0.5, 2.0):
                trial = scales.copy()
                trial[j] = trial[j] * m
                if not (trial > 0).any():
                    continue
                v = sc.evaluate(trial, rule * factor)[0]
                if v - best >= gain_min:
                    scales, best = trial, v
        for f in (0.71, 1.41):
            v = sc.evaluate(scales, rule * factor * f)[0]
            if v - best >= gain_min:
                factor, best = factor * f, v
        log(f"{name}: sweep {sweep + 1}: validation {best:.5g}, {int((scales > 0).sum())} of {d} columns kept")
    per_val, per_lam, per_test = sc.evaluate(scales, rule * factor, Xt, yt)
    return {"set": name, "rows": int(len(y)), "d": int(d), "centers": M, "metric": "rmse" if real else "accuracy",
            "shared": {"validation": shared_val, "test": shared_test, "lambda": lam, "seconds": round(shared_s, 1)},
            "per_column": {"validation": per_val, "test": per_test, "lambda": per_lam,
                           "columns_kept": int((scales > 0).sum()), "scales": [round(float(s), 3) for s in scales],
                           "seconds": round(time.perf_counter() - t0, 1)}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--centers", type=int, default=512)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from kopt.cli.bench.roofline import run_record

    for name in a.sets:
        line = run(name, a.centers, lambda s: print(s, flush=True))
        line.update(run_record())
        print(json.dumps(line), flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
