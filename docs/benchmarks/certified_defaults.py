"""The no-argument estimators end certified: ``KernelRegressor()`` and ``KernelClassifier()`` at ROWS rows, every
warning they give recorded (a ``ConvergenceWarning`` would say the final solve stopped short of its tolerance).

    python docs/benchmarks/certified_defaults.py ROWS [--tasks regression classification] [--json FILE]

regression: 8 columns uniform in [-1, 1], y = sin(2 x0) + x1 x2 + cos(3 x3) / 2 + x4² - x5 / 2 plus N(0, 0.3²) noise
(the best RMSE is 0.3; columns 6 and 7 are noise), 50,000 fresh test rows, generated here from seed 0;
classification: the first ROWS rows of the ``higgs-shaped`` preset (generated offline into ``$KOPT_DATA``), its test
rows.  Prints one JSON line a task: the fit's seconds, the route, the relative gap reached and the tolerance, the
warnings by class, the test RMSE or accuracy, and the machine.
"""
from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np


def regression(rows, seed=0, test=50_000):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(rows + test, 8)).astype(np.float32)
    f = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * np.cos(3 * X[:, 3]) + X[:, 4] ** 2 - 0.5 * X[:, 5]
    y = f + 0.3 * rng.standard_normal(len(f))
    return X[:rows], y[:rows], X[rows:], y[rows:]


def classification(rows):
    from kopt.data import load_data

    ds = load_data({"source": "higgs-shaped", "options": {"rows": int(rows)}})
    return np.asarray(ds.X), np.asarray(ds.y), np.asarray(ds.X_test), np.asarray(ds.y_test)


def one(task, rows):
    from kopt.sklearn import KernelClassifier, KernelRegressor

    X, y, Xt, yt = regression(rows) if task == "regression" else classification(rows)
    est = KernelRegressor() if task == "regression" else KernelClassifier()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - t0
    pred = est.predict(Xt)
    score = (float(np.sqrt(np.mean((pred - yt) ** 2))) if task == "regression"
             else float(np.mean(pred == yt)))
    info = est.solver_info_
    said = {}
    for w in caught:
        said.setdefault(w.category.__name__, []).append(str(w.message)[:200])
    return {"task": task, "rows": int(rows), "fit_s": round(seconds, 1), "route": est.route_,
            "centers": est.n_features_, "lambda": est.lam_, "rel_gap": info.get("rel_gap"),
            "tol": est.spec_["solver"].get("tol"), "status": est.status_, "n_iter": est.n_iter_,
            "warnings": said, "convergence_warnings": len(said.get("ConvergenceWarning", [])),
            ("test_rmse" if task == "regression" else "test_accuracy"): round(score, 5)}


def main():
    from kopt.cli.bench.roofline import run_record

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=int)
    ap.add_argument("--tasks", nargs="+", default=["regression", "classification"],
                    choices=["regression", "classification"])
    ap.add_argument("--json")
    a = ap.parse_args()
    out = []
    for task in a.tasks:
        line = {"benchmark": "certified_defaults", **one(task, a.rows), **run_record()}
        print(json.dumps({k: v for k, v in line.items() if k != "machine"}), flush=True)
        out.append(line)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            for line in out:
                fh.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
