"""The cost of the scikit-learn wrapper over ``kopt.solve``: fit and predict on the same rows.

For each case the script times, alternately and ``--repeats`` times each, on the same 1,000 rows:

* ``kopt.solve(spec_dict, data=(X, y))`` then ``result.model.predict(X)`` -- the Python API;
* ``estimator.fit(X, y)`` then ``estimator.predict(X)`` with the estimator whose ``to_spec()`` is that
  spec dict (so both solve the same problem and give the same predictions, which is checked);

and reports the medians and the wrapper's overhead two ways: the median of the paired differences
(estimator minus API: honest but as noisy as the solve itself on a shared machine), and the time an
estimator call spends outside the kopt call it makes (``kopt.solve`` inside ``fit``,
``Model.decision_function`` inside ``predict``), measured in the same call -- the wrapper's own
cost without the solver's noise.  Both sides validate the spec once (``kopt.load_spec`` of the dict);
the estimator adds scikit-learn's input validation, the spec's construction, the warning translation
and the fitted attributes.

    python docs/benchmarks/sklearn_overhead.py            # writes sklearn_overhead.json here
"""
from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def cases():
    from kopt.sklearn import KernelClassifier, KernelRegressor

    return {
        "classifier, joker exact (default solver)": (KernelClassifier(lam=1e-3, backend="numpy"), "binary"),
        "classifier, dsg 200 iterations": (KernelClassifier(loss="logistic", solver="dsg", lam=1e-3, backend="numpy",
                                                            features={"block_size": 64},
                                                            solver_options={"iterations": 200}), "binary"),
        "regressor, krr_exact": (KernelRegressor(solver="krr_exact", lam=1e-3, backend="numpy"), "real"),
    }


def data(n, d, task, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    f = np.sin(X[:, 0]) + X[:, 1] * X[:, 2]
    y = np.where(f + 0.3 * rng.standard_normal(n) > 0, "pos", "neg") if task == "binary" else f
    return X, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--features", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--out", default=os.path.join(HERE, "sklearn_overhead.json"))
    args = ap.parse_args()

    import kopt
    import kopt.sklearn as ks
    from kopt.cli.bench.roofline import run_record
    from kopt.models.model import Model
    from kopt.sklearn import ConvergenceWarning

    inner = []  # seconds spent inside the kopt call of the current estimator call

    def timed(fn):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                inner.append(time.perf_counter() - t)
        return wrapper

    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", kopt.ConvergenceWarning)
    rows = []
    for name, (est, task) in cases().items():
        X, y = data(args.rows, args.features, task)
        spec = est._spec_dict(output={"model": False, "report": False, "plot": False, "checkpoint_every": 0})
        # warm-up: imports, plugin registry, schema composition, BLAS threads
        est.fit(X, y).predict(X)
        kopt.solve(spec, data=(X, y)).model.predict(X)
        api_fit, api_pred, est_fit, est_pred, own_fit, own_pred = [], [], [], [], [], []
        plain_solve, plain_decision = ks.solve, Model.decision_function
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            model = kopt.solve(spec, data=(X, y)).model
            t1 = time.perf_counter()
            p_api = model.predict(X)
            api_pred.append(time.perf_counter() - t1)
            ks.solve = timed(plain_solve)
            inner.clear()
            try:
                t2 = time.perf_counter()
                est.fit(X, y)
                t3 = time.perf_counter()
            finally:
                ks.solve = plain_solve
            own_fit.append(t3 - t2 - sum(inner))
            Model.decision_function = timed(plain_decision)
            inner.clear()
            try:
                t3 = time.perf_counter()
                p_est = est.predict(X)
                t4 = time.perf_counter()
            finally:
                Model.decision_function = plain_decision
            own_pred.append(t4 - t3 - sum(inner))
            api_fit.append(t1 - t0)
            est_fit.append(t3 - t2)
            est_pred.append(t4 - t3)
        assert np.array_equal(p_api, p_est), "the estimator and kopt.solve disagree"
        med = lambda v: float(np.median(v)) * 1e3  # noqa: E731
        row = {"case": name, "rows": args.rows, "features": args.features, "repeats": args.repeats,
               "api_fit_ms": med(api_fit), "estimator_fit_ms": med(est_fit),
               "fit_overhead_ms": med(np.subtract(est_fit, api_fit)),
               "api_predict_ms": med(api_pred), "estimator_predict_ms": med(est_pred),
               "predict_overhead_ms": med(np.subtract(est_pred, api_pred)),
               "fit_wrapper_own_ms": med(own_fit), "predict_wrapper_own_ms": med(own_pred)}
        rows.append(row)
        print(f"{name:45s} fit {row['api_fit_ms']:8.1f} -> {row['estimator_fit_ms']:8.1f} ms "
              f"(overhead {row['fit_overhead_ms']:+.1f}); predict {row['api_predict_ms']:6.1f} -> "
              f"{row['estimator_predict_ms']:6.1f} ms (overhead {row['predict_overhead_ms']:+.1f}); wrapper's own "
              f"time: fit {row['fit_wrapper_own_ms']:.2f} ms, predict {row['predict_wrapper_own_ms']:.2f} ms")
    out = {"cases": rows, **run_record()}
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
