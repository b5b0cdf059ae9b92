"""Refit warm vs cold on Joker's exact dual route (higgs-12k, squared hinge): lambda auto, then the chosen λ cold."""
import json
import os
import sys
import time
import warnings

sys.path.insert(0, "docs/benchmarks")
import defaults as D

import kopt
from kopt.cli.bench.roofline import run_record

warnings.simplefilter("ignore")
spec = D.spec_for("higgs-12k", "auto", {"bandwidth": "scale"}, "auto")
spec["model"]["loss"] = {"name": "squared_hinge"}
spec["model"]["features"] = {}
spec["solver"] = {"name": "joker", "mode": "exact", "iterations": 100000, "tol": 1e-2}
t = time.perf_counter(); r = kopt.solve(spec, progress=True); wa = time.perf_counter() - t
a = r.lambda_auto
spec["model"]["regularizer"]["lambda"] = a["lambda"]
t = time.perf_counter(); c = kopt.solve(spec); wc = time.perf_counter() - t
out = {"set": "higgs-12k", "route": "joker exact dual, squared hinge", "lambda": a["lambda"], "refit_warm": a["refit_warm"],
       "auto_wall_s": wa, "select_s": a["select_s"], "refit_fit_s": r.timings["fit_s"], "refit_iter": r.n_iter,
       "refit_accuracy": r.metrics["accuracy"], "cold_fit_s": c.timings["fit_s"], "cold_iter": c.n_iter,
       "cold_accuracy": c.metrics["accuracy"], "cold_wall_s": wc,
       "path": [{k: p[k] for k in ("lambda", "score", "fit_s", "iterations", "warm", "refine")} for p in a["path"]],
       "load_1min": os.getloadavg()[0], **run_record()}
print(json.dumps(out))
with open("docs/benchmarks/defaults_refit_warm.json", "w") as fh:
    json.dump(out, fh, indent=1)
