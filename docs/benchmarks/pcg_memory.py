"""krr_pcg alone on generated rows: the whole process's peak resident memory and the fit time.

    python docs/benchmarks/pcg_memory.py ROWS CENTERS [CG_STEPS]

10 Gaussian columns, a smooth target with noise of sd 0.1, λ = 1e-6, bandwidth 2; prints the fit seconds, the
peak (``ru_maxrss``), the data's bytes and the test RMSE on 20,000 fresh rows.
"""
from __future__ import annotations

import resource
import sys
import time
import warnings

import numpy as np

from kopt.sklearn import KernelRegressor


def target(X):
    return np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * np.cos(3 * X[:, 3])


def main(n, M, steps=10):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 10)).astype(np.float32)
    y = target(X) + 0.1 * rng.standard_normal(n)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    warnings.simplefilter("ignore")  # the iteration cap is the point here
    t = time.perf_counter()
    model = KernelRegressor(solver="krr_pcg", features={"kind": "nystrom", "count": M}, lam=1e-6, bandwidth=2.0,
                            solver_options={"iterations": steps, "tol": 1e-9}, standardize=False).fit(X, y)
    fit = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    Xt = rng.standard_normal((20000, 10)).astype(np.float32)
    rmse = float(np.sqrt(np.mean((model.predict(Xt) - target(Xt)) ** 2)))
    print(f"n={n} M={M} steps={steps} fit={fit:.1f}s peak={peak / 1024:.0f}MB before_fit={before / 1024:.0f}MB "
          f"data={X.nbytes / 1e6:.0f}MB rmse={rmse:.5f}")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
