"""Randomly pivoted Cholesky's centers against uniform ones at equal M, on tasks of the generated family.

For each task (``data.source: task-family``) and center count M, each rule's centers (``uniform``: the seeded uniform
order; ``rpcholesky``: :func:`kopt.nystrom.centers.rpcholesky_order` at the trial's bandwidth) give a Nyström system
on the fit rows of auto's seeded split at ½, 1 and 2 times the scale rule's bandwidth; the λ path (auto's half
decades) is scored on the validation rows, and the best (bandwidth, λ) by validation is scored on the test rows.  At
the chosen settings, ``krr_pcg``'s conjugate gradients (Falkon's preconditioner, U Uᵀ/M) are run to a relative gap
of 1e-3 on the same rows: their steps.  One JSON line per (task, M, rule), then the per-rule means.

    python docs/benchmarks/center_rules.py --family 1 --tasks 12 --rows 20000 --centers 256 1024 \
        --out docs/benchmarks/center_rules.jsonl
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np


def _problem(family, index, rows):
    import kopt
    from kopt.data import load_data
    from kopt.running.assemble import assemble
    from kopt_plugins.datasets.task_family import Task, draw

    task = Task(**{**draw(family, index).__dict__, "rows": int(rows)})
    spec = kopt.load_spec({"seed": 0, "backend": "numpy",
                           "data": {"source": "task-family", "options": {"family": family, "index": index,
                                                                         "rows": rows, "test_rows": 20000}},
                           "model": {"loss": {"name": "square",
                                              "target": "real" if task.kind == "regression" else "binary"},
                                     "kernel": {"name": "gaussian"}}})
    ds = load_data(spec["data"])
    return task, assemble(spec, (ds.X, ds.y, ds.X_test, ds.y_test))


def _steps(problem, kernel, centers, Y, lam):
    from kopt.contract.iterative import Check
    from kopt.nystrom import NystromCG
    from kopt.nystrom.solver import dense_centers

    cg = NystromCG(kernel, problem.X, Y, dense_centers(problem, centers), dtype=problem.dtype)
    s, t = cg.start(lam), 0
    while t < 300:
        cg.step(s)
        t += 1
        P, D, _, _, confirmed = cg.confirm(s, t, 1e-3, problem.loss, Y)
        if confirmed and Check(objective=P, dual=D).rel_gap <= 1e-3:
            break
    return t


def measure(family, index, rows, counts):
    from kopt.numerics.backend import to_numpy
    from kopt.nystrom.centers import center_order, rpcholesky_order
    from kopt.nystrom.system import NystromSystem, target_offset
    from kopt.running.validation import make_splits
    from kopt_plugins.auto import scoring
    from kopt_plugins.auto.planner import LAMBDAS

    task, problem = _problem(family, index, rows)
    metric = scoring.metric_of(problem)
    (tr, va), = make_splits(problem.n, problem.seed, validation=0.2)
    Y = problem.label_matrix()
    mu = to_numpy(target_offset(Y[tr], None))
    Yc = Y - mu
    y_scale = float(getattr(problem.preprocessor, "y_scale", 1.0) or 1.0)
    Xt = problem.X_test
    base = problem.kernel.options.as_dict()
    order = center_order(problem, max(counts))
    out = []
    for M in counts:
        for rule in ("uniform", "rpcholesky"):
            best, seconds = None, 0.0
            for f in (0.5, 1.0, 2.0):
                kernel = type(problem.kernel)(**{**base, "bandwidth": float(f"{base['bandwidth'] * f:.6g}")})
                t0 = time.perf_counter()
                centers = (np.sort(order[:M]) if rule == "uniform"
                           else np.sort(rpcholesky_order(problem, M, kernel)))
                seconds += time.perf_counter() - t0
                system = NystromSystem(kernel, problem.X[tr], Yc[tr], np.asfortranarray(problem.X[centers]))
                for lam, S in zip(LAMBDAS, system.path(list(LAMBDAS), np.vstack([problem.X[va], Xt]))):
                    if S is None:
                        continue
                    S = S + mu
                    rows_va = scoring.outcomes(metric, S[:len(va)], to_numpy(Y[va]), y_scale)
                    v = scoring.score(metric, rows_va)
                    if best is None or v > best["validation"]:
                        best = {"validation": v, "test_scores": S[len(va):], "lam": lam, "factor": f,
                                "kept": int(system.M), "centers": centers, "kernel": kernel}
            test = _test_score(problem, best["test_scores"], metric, y_scale)
            steps = _steps(problem, best["kernel"], best["centers"], Yc, best["lam"])
            out.append({"task": task.describe(), "M": M, "rule": rule, "metric": metric,
                        "validation": abs(best["validation"]), "test": test, "lambda": best["lam"],
                        "bandwidth_factor": best["factor"], "kept": best["kept"], "center_seconds": round(seconds, 2),
                        "cg_steps": steps})
    return out


def _test_score(problem, S, metric, y_scale):
    """The test rows' accuracy, or RMSE in the target's units, of scores ``S`` (solver scale, the intercept added)."""
    pre, y = problem.preprocessor, np.asarray(problem.y_test_raw)
    if metric == "rmse":
        return float(np.sqrt(np.mean((pre.decode(S[:, 0]) - y) ** 2)))
    return float(np.mean(pre.decode(S if S.shape[1] > 1 else S[:, 0]) == y))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", type=int, required=True)
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--centers", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from kopt.cli.bench.roofline import run_record

    stamp = run_record()  # each line says which run made it
    lines = []
    for i in range(a.first, a.first + a.tasks):
        for line in measure(a.family, i, a.rows, a.centers):
            lines.append({**line, **stamp})
            print(json.dumps(line), flush=True)
    for M in a.centers:
        for rule in ("uniform", "rpcholesky"):
            mine = [ln for ln in lines if ln["M"] == M and ln["rule"] == rule]
            print(f"M {M} {rule}: mean cg steps {np.mean([ln['cg_steps'] for ln in mine]):.1f}, "
                  f"center seconds {np.mean([ln['center_seconds'] for ln in mine]):.2f}", file=sys.stderr)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
