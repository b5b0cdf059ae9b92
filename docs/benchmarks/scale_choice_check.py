"""The 10^6-row defaults' choice (report.json's spec) solved on 3*10^6 rows: does a worse model at 3*10^6 come from
the rows or from the search's choice there?  Prints two lines (docs/benchmarks.md, "kopt bench scale").

    KOPT_OFFLINE=1 python docs/benchmarks/scale_choice_check.py
"""
import copy
import time

import kopt

spec = {"name": "diag", "data": {"source": "higgs-shaped", "options": {"rows": 1000000}},
        "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}}}
t = time.perf_counter(); r = kopt.solve(spec)
chosen = r.report["spec"]
print("1e6 auto", r.metrics["accuracy"], round(time.perf_counter() - t, 1), r.auto["route"], r.auto["centers"], r.auto["lambda"], r.auto["bandwidth"], r.auto.get("column_scales"), flush=True)
s3 = copy.deepcopy(chosen); s3["data"]["options"]["rows"] = 3000000; s3["name"] = "diag3"
s3["solver"] = {"name": "krr_pcg", "tol": 1e-2}
t = time.perf_counter(); r3 = kopt.solve(s3)
print("1e6 choice on 3e6 rows", r3.metrics["accuracy"], round(time.perf_counter() - t, 1), r3.n_iter, r3.info.get("rel_gap"), flush=True)
