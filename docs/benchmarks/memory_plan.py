"""Memory plans against measured peaks: every solver that declares one, at two sizes each.

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

# (name, solver section, features section, n, d, loss[, options]): options ``classes`` (0: real targets, 2: ±1
# labels, k: class ids 0..k-1), ``model`` (more keys of the model section), ``data`` (more keys of the data section)
CASES = [
    ("krr_nystrom M=2048", {"name": "krr_nystrom"}, {"kind": "nystrom", "count": 2048}, 20000, 28, "square"),
    ("krr_nystrom M=4096", {"name": "krr_nystrom"}, {"kind": "nystrom", "count": 4096}, 40000, 28, "square"),
    ("krr_pcg M=4096", {"name": "krr_pcg", "iterations": 5}, {"kind": "nystrom", "count": 4096}, 100000, 28, "square"),
    ("krr_pcg M=8192", {"name": "krr_pcg", "iterations": 5}, {"kind": "nystrom", "count": 8192}, 100000, 28, "square"),
    ("joker features n=200k M=1024", {"name": "joker", "mode": "features", "iterations": 300},
     {"kind": "random", "count": 1024}, 200000, 28, "square"),
    ("joker features n=800k M=2048", {"name": "joker", "mode": "features", "iterations": 300},
     {"kind": "random", "count": 2048}, 800000, 28, "square"),
    ("krr_exact n=3000", {"name": "krr_exact"}, {"kind": "random", "count": 256}, 3000, 28, "square"),
    ("krr_exact n=6000", {"name": "krr_exact"}, {"kind": "random", "count": 256}, 6000, 28, "square"),
    ("svm_nystrom M=1024", {"name": "svm_nystrom"}, {"kind": "nystrom", "count": 1024}, 10000, 28, "squared_hinge",
     {"classes": 2}),
    ("svm_nystrom M=2048", {"name": "svm_nystrom"}, {"kind": "nystrom", "count": 2048}, 20000, 28, "squared_hinge",
     {"classes": 2}),
    ("krr_pairs nystrom M=1024", {"name": "krr_pairs"}, {"kind": "nystrom", "count": 1024}, 30000, 28, "square",
     {"classes": 3}),
    ("krr_pairs nystrom M=2048", {"name": "krr_pairs"}, {"kind": "nystrom", "count": 2048}, 30000, 28, "square",
     {"classes": 3}),
    ("krr_pairs exact n=4000", {"name": "krr_pairs", "threads": 2}, {"kind": "nystrom", "count": 100000}, 4000, 28,
     "square", {"classes": 4}),
    ("krr_pairs exact n=8000", {"name": "krr_pairs", "threads": 2}, {"kind": "nystrom", "count": 100000}, 8000, 28,
     "square", {"classes": 4}),
    ("dsg T=128 F=1024 C=40", {"name": "dsg", "iterations": 128, "batch_size": 64},
     {"kind": "random", "block_size": 1024}, 20000, 8, "softmax", {"classes": 40}),
    ("dsg T=256 F=1024 C=40", {"name": "dsg", "iterations": 256, "batch_size": 64},
     {"kind": "random", "block_size": 1024}, 20000, 8, "softmax", {"classes": 40}),
    ("udsg T=512 F=1024 C=40", {"name": "udsg", "iterations": 512, "batch_size": 32},
     {"kind": "random", "block_size": 1024}, 20000, 8, "softmax", {"classes": 40}),
    ("adsg n=100k M=1024", {"name": "adsg", "iterations": 2, "inner_steps": 200},
     {"kind": "random", "count": 1024}, 100000, 28, "square"),
    ("adsg n=200k M=1024", {"name": "adsg", "iterations": 2, "inner_steps": 200},
     {"kind": "random", "count": 1024}, 200000, 28, "square"),
    ("svrg n=200k M=1024", {"name": "svrg", "iterations": 2, "inner_steps": 200},
     {"kind": "random", "count": 1024}, 200000, 28, "square"),
    ("gp operator T=150", {"name": "gp", "iterations": 150, "batch_size": 16, "variance": "operator",
                           "noise_variance": 0.1, "max_memory_mb": 100000},
     {"kind": "random", "block_size": 512}, 20000, 8, "square", {"model": {"form": "gp"}, "data": {"test_fraction": 0.05}}),
    ("gp operator T=300", {"name": "gp", "iterations": 300, "batch_size": 16, "variance": "operator",
                           "noise_variance": 0.1, "max_memory_mb": 100000},
     {"kind": "random", "block_size": 512}, 20000, 8, "square", {"model": {"form": "gp"}, "data": {"test_fraction": 0.05}}),
    ("joker exact n=20k", {"name": "joker", "mode": "exact", "iterations": 200},
     {"kind": "random", "count": 256}, 20000, 28, "squared_hinge", {"classes": 2}),
    ("joker exact n=80k", {"name": "joker", "mode": "exact", "iterations": 200},
     {"kind": "random", "count": 256}, 80000, 28, "squared_hinge", {"classes": 2}),
    ("joker primal n=100k M=1024", {"name": "joker", "mode": "primal", "iterations": 5},
     {"kind": "random", "count": 1024}, 100000, 28, "squared_hinge", {"classes": 2}),
    ("joker primal n=200k M=2048", {"name": "joker", "mode": "primal", "iterations": 5},
     {"kind": "random", "count": 2048}, 200000, 28, "squared_hinge", {"classes": 2}),
    ("joker primal nystrom M=2048", {"name": "joker", "mode": "primal", "iterations": 5},
     {"kind": "nystrom", "count": 2048}, 40000, 28, "square"),
]


def _status(key) -> int:
    """A ``/proc/self/status`` figure in bytes (``VmRSS``, ``VmHWM``)."""
    with open("/proc/self/status", encoding="utf-8") as fh:
        return 1024 * int(re.search(key + r":\s+(\d+) kB", fh.read()).group(1))


def one(index: int) -> dict:
    """Run case ``index`` in this process; its figures."""
    return measure(*CASES[index])


def measure(name, solver_section, features, n, d, loss, options=None) -> dict:
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
    options = options or {}
    classes = int(options.get("classes", 0))
    if classes == 2:
        y = np.where(y > 0, 1.0, -1.0)
    elif classes > 2:  # ids by the first column's quantiles: every class about n / classes rows
        y = np.searchsorted(np.quantile(X[:, 0], np.linspace(0, 1, classes + 1)[1:-1]), X[:, 0]).astype(np.float64)
    model = {"loss": {"name": loss, **({"target": "binary"} if loss == "square" and classes > 2 else {})}, "kernel": {"name": "gaussian", "bandwidth": float(np.sqrt(d))},
             "regularizer": {"name": "l2", "lambda": 1e-4}, "features": features, **options.get("model", {})}
    spec = load_spec({"name": "memory_plan", "seed": 0, "model": model, "solver": solver_section,
                      "data": options.get("data", {}), "output": {"model": False, "report": False}},
                     check_files=False)
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
    parser.add_argument("--only", help="run the cases whose name contains one of these (comma-separated)")
    args = parser.parse_args(argv)
    if args.case is not None:
        print(json.dumps(one(args.case)))
        return
    results = []

    def write():
        if not args.json:
            return
        from kopt.cli.bench.roofline import run_record

        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"benchmark": "memory_plan", **run_record(), "cases": results}, fh, indent=1)
            fh.write("\n")

    for index, case in enumerate(CASES):
        if args.only and not any(part in case[0] for part in args.only.split(",")):
            continue
        out = subprocess.run([sys.executable, __file__, "--case", str(index)], capture_output=True, text=True,
                             env={**os.environ, "KOPT_THREADS": os.environ.get("KOPT_THREADS", "2")})
        if out.returncode:
            print(f"{case[0]:<32} failed: {out.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"{r['case']:<32} plan {r['plan_bytes'] / 2**20:8.1f} MiB  peak {r['peak_bytes'] / 2**20:8.1f} MiB  "
              f"plan/peak {r['ratio']:.2f}  ({r['solve_s']:.1f} s)", flush=True)
        write()  # after every case: a run cut short keeps the cases it measured


if __name__ == "__main__":
    main()
