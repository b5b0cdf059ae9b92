"""``KernelClassifier()`` on rows of a few integer columns, where a small model already solves the task: the large
route (past 50,000 rows) against the direct one on the same rows.

    python docs/benchmarks/integer_columns.py ROWS [SEED] [--direct] [-v]

3 integer columns in 0..29 (27,000 distinct rows), the label a function of them with 0.1% of the labels flipped;
20,000 fresh test rows.  ``--direct`` raises auto's sample size past the rows, so the direct search runs on every
row (the route below 50,000 rows); ``-v`` prints auto's log.  Prints the fit seconds and the test accuracy.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import kopt_plugins.auto.large as large
from kopt.sklearn import KernelClassifier


def main(argv):
    n = int(argv[0])
    seed = int(argv[1]) if len(argv) > 1 and not argv[1].startswith("-") else 0
    if "--direct" in argv:
        large.SEARCH_ROWS = 10 ** 9
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 30, size=(n + 20000, 3)).astype(np.float32)
    f = np.sin(X[:, 0] / 4.0) + np.cos(X[:, 1] / 5.0) * (X[:, 2] > 12)
    y = np.where(f > 0.3, 1, 0)
    flip = rng.random(len(y)) < 0.001
    y[flip] = 1 - y[flip]
    t = time.perf_counter()
    est = KernelClassifier(verbose="-v" in argv).fit(X[:n], y[:n])
    fit = time.perf_counter() - t
    print(f"rows={n} seed={seed} route={'direct' if '--direct' in argv else 'default'} fit={fit:.1f}s "
          f"test_accuracy={np.mean(est.predict(X[n:]) == y[n:]):.5f}")


if __name__ == "__main__":
    main(sys.argv[1:])
