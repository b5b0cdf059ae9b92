"""Memory plans against measured peaks: krr_nystrom, Joker's features route and krr_exact, at two sizes each.

Each case runs in a child process: it makes seeded Gaussian rows, assembles the problem (``kopt.running.assemble``), asks the
solver for its memory plan (:meth:`kopt.contract.components.Solver.memory_plan`), then runs the solver alone and measures
the peak resident memory it added: the kernel's high-water mark (``VmHWM``) is reset (``/proc/self/clear_refs``)
right before ``solver.run`` and read right after it, less the resident memory before it (Linux only).

    flock /tmp/kopt-cpu.lock python docs/benchmarks/memory_plan.py --json docs/benchmarks/memory_plan.json

Prints one line per case (plan, measured peak, their ratio) and writes the JSON: every case's sizes, plan items,
peak, seconds, and the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

# (name, solver section, features section, n, d, loss)
CASES = [
    ("krr_nystrom M=2048", {"name": "krr_nystrom"}, {"kind": "nystrom", "count": 2048}, 20000, 28, "square"),
    ("krr_nystrom M=4096", {"name": "krr_nystrom"}, {"kind": "nystrom", "count": 4096}, 40000, 28, "square"),
    ("joker features n=200k M=1024", {"name": "joker", "mode": "features", "iterations": 300},
     {"kind": "random", "count": 1024}, 200000, 28, "square"),
    ("joker features n=800k M=2048", {"name": "joker", "mode": "features", "iterations": 300},
     {"kind": "random", "count": 2048}, 800000, 28, "square"),
    ("krr_exact n=3000", {"name": "krr_exact"}, {"kind": "random", "count": 256}, 3000, 28, "square"),
    ("krr_exact n=6000", {"name": "krr_exact"}, {"kind": "random", "count": 256}, 6000, 28, "square"),
]


def _status(key) -> int:
    """A ``/proc/self/status`` figure in bytes (``VmRSS``, ``VmHWM``)."""
    with open("/proc/self/status", encoding="utf-8") as fh:
        return 1024 * int(re.search(key + r":\s+(\d+) kB", fh.read()).group(1))


def one(index: int) -> dict:
    """Run case ``index`` in this process; its figures."""
    return measure(*CASES[index])


def measure(name, solver_section, features, n, d, loss) -> dict:
    """One solve of ``n`` seeded Gaussian rows of ``d`` columns in this process: its plan and the peak it added."""
    import gc

    import numpy as np

    from kopt.contract.registry import registry
    from kopt.numerics import memory
    from kopt.running.assemble import assemble
    from kopt.running.context import RunContext
    from kopt.spec import component_params, load_spec

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)).astype(np.float32)
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    spec = load_spec({"name": "memory_plan", "seed": 0,
                      "model": {"loss": {"name": loss}, "kernel": {"name": "gaussian", "bandwidth": float(np.sqrt(d))},
                                "regularizer": {"name": "l2", "lambda": 1e-4}, "features": features},
                      "solver": solver_section, "output": {"model": False, "report": False}}, check_files=False)
    problem = assemble(spec, (X, y))
    del X, y
    reg = registry()
    solver = reg.get("solver", solver_section["name"])(**component_params(solver_section))
    sizes = memory.Sizes.of(problem)
    plan = memory.plan_of(solver, sizes)
    run = RunContext(spec, problem, reg.pm)
    gc.collect()
    before = _status("VmRSS")
    with open("/proc/self/clear_refs", "w", encoding="utf-8") as fh:
        fh.write("5")  # the high-water mark starts again from the resident memory now
    t0 = time.perf_counter()
    solver.run(problem, run)
    seconds = time.perf_counter() - t0
    peak = _status("VmHWM") - before
    return {"case": name, "solver": solver_section, "n": n, "d": d, "count": sizes.count, "outputs": sizes.outputs,
            "dtype": sizes.dtype.name, "plan_bytes": memory.total(plan), "plan": [list(item) for item in plan],
            "peak_bytes": peak, "ratio": memory.total(plan) / peak if peak else None, "solve_s": round(seconds, 2)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)  # the child's case
    parser.add_argument("--only", help="run the cases whose name contains this")
    args = parser.parse_args(argv)
    if args.case is not None:
        print(json.dumps(one(args.case)))
        return
    results = []
    for index, case in enumerate(CASES):
        if args.only and args.only not in case[0]:
            continue
        out = subprocess.run([sys.executable, __file__, "--case", str(index)], capture_output=True, text=True,
                             check=True, env={**os.environ, "KOPT_THREADS": os.environ.get("KOPT_THREADS", "2")})
        r = json.loads(out.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"{r['case']:<32} plan {r['plan_bytes'] / 2**20:8.1f} MiB  peak {r['peak_bytes'] / 2**20:8.1f} MiB  "
              f"plan/peak {r['ratio']:.2f}  ({r['solve_s']:.1f} s)", flush=True)
    if args.json:
        from kopt.cli.bench.roofline import machine

        with open(args.json, "w", encoding="utf-8") as fh:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
            json.dump({"benchmark": "memory_plan", "date": time.strftime("%Y-%m-%d"), "commit": commit,
                       "machine": machine(),
                       "cases": results}, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    main()
