"""A Newton step's preconditioner kept for the next steps at the same λ, against one made at every step.

``newton_pcg`` (the logistic loss and the squared hinge) on a task of the generated family at a given λ and center
count, to a relative duality gap of 1e-3: with the rule of :func:`kopt.nystrom.smooth.factor_passes` (a step keeps the
last step's preconditioner while its CG steps stay within what a new one costs in passes), and with a new
preconditioner at every Newton step (``factor_passes`` read as 0).  One JSON line per (rows, centers, rule): the fit's
seconds, Newton steps, passes over the rows, preconditioners made, the objective, the relative gap and the test
accuracy.  The λ is the one ``solver: auto``'s logistic path chose on this task's 50,000-row sample.  Each configuration runs once, the two rules one after the other in one process.

    python docs/benchmarks/newton_kept_preconditioner.py --family 31 --index 11 --rows 50000 400000 \
        --centers 1024 4096 --out docs/benchmarks/newton_kept_preconditioner.jsonl
    python docs/benchmarks/newton_kept_preconditioner.py --family 31 --index 11 --rows 100000 --centers 8192 \
        --append --out docs/benchmarks/newton_kept_preconditioner.jsonl
"""
from __future__ import annotations

import argparse
import json
import time
import warnings


def _spec(family, index, rows, centers, lam, loss):
    return {"seed": 0, "backend": "numpy",
            "data": {"source": "task-family", "options": {"family": family, "index": index, "rows": rows,
                                                          "test_rows": 20000}},
            "model": {"loss": {"name": loss}, "kernel": {"name": "gaussian"},
                      "regularizer": {"name": "l2", "lambda": lam},
                      "features": {"kind": "nystrom", "count": centers}},
            "solver": {"name": "newton_pcg", "tol": 1e-3},
            "output": {"model": False, "report": False, "plot": False}}


def measure(family, index, rows, centers, lam, loss, rule):
    """One fit: ``rule`` "kept" (the default) or "every step" (a new preconditioner at every Newton step)."""
    import kopt
    from kopt.nystrom import CenterFactors, smooth

    made = []
    factor, passes_rule = CenterFactors.factor, smooth.factor_passes
    CenterFactors.factor = lambda self, *a, **k: (made.append(1), factor(self, *a, **k))[1]
    if rule == "every step":
        smooth.factor_passes = lambda *a: 0.0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            res = kopt.solve(_spec(family, index, rows, centers, lam, loss))
            wall = time.perf_counter() - t0
    finally:
        CenterFactors.factor, smooth.factor_passes = factor, passes_rule
    return {"kind": "fit", "task": f"{family}:{index}", "rows": rows, "centers": centers, "lambda": lam, "loss": loss,
            "rule": rule, "fit_s": round(res.timings.get("fit_s", wall), 2), "newton_steps": int(res.n_iter),
            "passes": int(res.info["passes"]), "preconditioners": len(made), "objective": res.objective,
            "rel_gap": res.info["rel_gap"], "accuracy": res.metrics.get("accuracy"), "status": res.status}


def main(argv=None):
    from kopt.cli.bench.roofline import run_record

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", type=int, default=31)
    ap.add_argument("--index", type=int, default=11)
    ap.add_argument("--rows", type=int, nargs="+", default=[50000, 400000])
    ap.add_argument("--centers", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--lam", type=float, default=3.16228e-6)
    ap.add_argument("--losses", nargs="+", default=["logistic", "squared_hinge"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--append", action="store_true", help="add the records to --out instead of replacing it")
    args = ap.parse_args(argv)
    stamp = run_record()  # every record carries it (the result table reads the last one's)
    lines = [{"kind": "run", **stamp}]
    for loss in args.losses:
        for rows in args.rows:
            for centers in args.centers:
                for rule in ("kept", "every step"):
                    lines.append({**stamp, **measure(args.family, args.index, rows, centers, args.lam, loss, rule)})
                    print(json.dumps(lines[-1]), flush=True)
    if args.out:
        with open(args.out, "a" if args.append else "w") as fh:
            for line in lines[1 if args.append else 0:]:  # appended: each record carries its own stamp
                fh.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
