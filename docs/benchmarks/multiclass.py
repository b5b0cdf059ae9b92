"""Multiclass quality on mnist-10k: kopt's multiclass routes against SVC(C=10, gamma="scale").

    python docs/benchmarks/multiclass.py --which svc
    python docs/benchmarks/multiclass.py --which ovr_squared_hinge [--lam 1.25e-5]
    python docs/benchmarks/multiclass.py --which ovr_hinge
    python docs/benchmarks/multiclass.py --which softmax_dsg [--iterations 4000]

Data: the mnist-10k preset (first 8,000 / last 2,000 images of MNIST t10k), raw pixels 0..255, not
z-scored (``standardize: false``, as SVC gets them), Gaussian kernel with ``bandwidth: scale`` -- the
same kernel as SVC's gamma="scale" (which does not depend on the pixels' unit).  λ = 1/(C n) = 1.25e-5 matches SVC's C = 10 on the hinge loss.  kopt's
routes: Joker one-vs-rest on the exact kernel (dual, squared hinge or hinge), and the softmax loss
(the only multiclass loss; Joker has no multiclass dual, so DSG on random features).  Appends one
JSON line per run to multiclass.jsonl (test accuracy, fit seconds, load).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N_TRAIN = 8000


def spec(which, lam, iterations=4000):
    kernel = {"name": "gaussian", "bandwidth": "scale"}
    data = {"source": "mnist", "standardize": False}
    if which == "softmax_dsg":
        return {"name": "mc_softmax", "seed": 0, "data": data,
                "model": {"loss": {"name": "softmax"}, "kernel": kernel, "regularizer": {"name": "l2", "lambda": lam},
                          "form": "primal", "features": {"count": 8192}},
                "solver": {"name": "dsg", "iterations": iterations, "batch_size": 256}, "backend": "numpy",
                "output": {"dir": "runs/mc"}}
    loss = "squared_hinge" if which == "ovr_squared_hinge" else "hinge"
    return {"name": f"mc_{which}", "seed": 0, "data": data,
            "model": {"loss": {"name": loss}, "kernel": kernel, "regularizer": {"name": "l2", "lambda": lam},
                      "form": "dual"},
            "solver": {"name": "joker", "mode": "exact", "iterations": 100000, "tol": 1.0e-2}, "backend": "numpy",
            "output": {"dir": "runs/mc"}}


def run_svc():
    from sklearn.svm import SVC

    from kopt.data import load_data
    from kopt.spec import load_spec

    ds = load_data(load_spec(spec("ovr_hinge", 1e-4))["data"])
    t0 = time.perf_counter()
    clf = SVC(C=10, gamma="scale").fit(ds.X, ds.y)
    fit = time.perf_counter() - t0
    return {"accuracy": float(np.mean(clf.predict(ds.X_test) == ds.y_test)), "fit_s": fit}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--which", required=True, choices=["svc", "ovr_squared_hinge", "ovr_hinge", "softmax_dsg"])
    ap.add_argument("--lam", type=float, default=1.0 / (10 * N_TRAIN))
    ap.add_argument("--iterations", type=int, default=4000, help="softmax_dsg: DSG iterations")
    a = ap.parse_args(argv)
    if a.which == "svc":
        row = {"which": "SVC(C=10, gamma='scale')", **run_svc()}
    else:
        import kopt

        r = kopt.solve(spec(a.which, a.lam, a.iterations))
        row = {"which": a.which, "lambda": a.lam, **({"dsg_iterations": a.iterations} if a.which == "softmax_dsg" else {}), "accuracy": r.metrics["accuracy"], "fit_s": r.timings["fit_s"],
               "iterations": r.n_iter, "success": r.success,
               "rel_gap": None if r.gap is None else r.gap / max(abs(r.objective), abs(r.dual))}
    from kopt.cli.bench.roofline import run_record

    row["load"] = os.getloadavg()[0]
    row.update(run_record())
    print(json.dumps(row), flush=True)
    with open(os.path.join(HERE, "multiclass.jsonl"), "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
