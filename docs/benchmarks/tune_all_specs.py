"""``kopt tune`` on every packaged spec (it must run on each spec with a test split).

    python docs/benchmarks/tune_all_specs.py [--specs a,b] [--max-rows 2000]
    python docs/benchmarks/tune_all_specs.py --specs huber_higgs --substitute higgs=higgs-12k
    python docs/benchmarks/tune_all_specs.py --table      # the markdown table of docs/tune.md

Each spec is tuned on a 2 x 2 grid (its first default axis -- λ, or the GP's noise variance -- at 1/10
and 1 times the spec's value, x its bandwidth axis at 2 values) with one seeded validation split of
``--max-rows`` training rows (``data.max_rows``, or ``n_train`` of a generated set, to keep the
check to seconds; ``solver.iterations`` capped at ``--iterations``, 100), then refitted on
those rows and scored on the spec's test split.  A spec whose data is not in the data folder is
reported as skipped.  Appends one JSON line per spec to tune_all_specs.jsonl.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))


def grid_for(spec):
    from kopt.selection.tune import Axis, default_axes

    axes = default_axes(spec)
    out = []
    for ax in axes:
        if ax.key.startswith("model.kernel."):
            out.append(Axis(ax.key, ax.values[1:3] if len(ax.values) > 3 else ax.values[:2]))
        else:
            middle = len(ax.values) // 2
            out.append(Axis(ax.key, (ax.values[middle - 1], ax.values[middle])))
    return out


def check(name, max_rows, iterations, substitute=None):
    import kopt
    from kopt.errors import DataError, NonFiniteModelError
    from kopt.spec.packaged import resolve_spec_arg

    spec = kopt.load_spec(resolve_spec_arg(name), [f"data.max_rows={max_rows}", "output.dir=runs/tune_all"])
    used = (substitute or {}).get(spec["data"].get("source"))
    if used:  # the spec's model and solver on another preset's rows (its data is not here)
        spec = kopt.load_spec(spec, [f"data.source={used}"])
    cap = spec["solver"].get("iterations")
    if iterations and isinstance(cap, int) and cap > iterations:  # a functional check, not a converged run
        spec = kopt.load_spec(spec, [f"solver.iterations={iterations}"])
    if "n_train" in spec["data"].get("options", {}):  # a generated set (max_rows reads no file): fewer rows
        spec = kopt.load_spec(spec, [f"data.options.n_train={max_rows}"])
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = kopt.tune(spec, grid_for(spec), validation=0.25, refit=True)
    except DataError as exc:
        return {"spec": name, "status": "skipped (data)", "detail": str(exc)[:160]}
    except NonFiniteModelError as exc:
        return {"spec": name, "status": "failed (every grid point diverged)", "detail": str(exc)[:160]}
    return {"spec": name, "status": "ok", **({"data": f"{used} (for {name}'s data)"} if used else {}), "grid": {a.key: list(a.values) for a in out.axes},
            "best": out.best_params, out.metric: out.best_score, "warm_start": out.warm_start,
            "test": out.refit.metrics, "wall_s": round(time.perf_counter() - t0, 2)}


def table(path):
    """The latest row of each spec in ``path`` as a markdown table."""
    latest = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                latest[row["spec"]] = row
    print("| spec | status | best cell | validation | test | wall s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in sorted(latest):
        r = latest[name]
        if r["status"] != "ok":
            print(f"| {name} | {r['status']} | | | | |")
            continue
        if "data" in r:
            name = f"{name} (on {r['data'].split(' ')[0]})"
        metric = next(k for k in r if k not in ("spec", "status", "data", "grid", "best", "warm_start", "test", "wall_s"))
        best = ", ".join(f"{k.rsplit('.', 1)[-1]} {v:g}" for k, v in sorted(r["best"].items()))
        test = ", ".join(f"{k} {v:.4g}" for k, v in r["test"].items() if k in ("accuracy", "auc", "rmse")) or "--"
        print(f"| {name} | ok{' (warm)' if r['warm_start'] else ''} | {best} | {metric} {r[metric]:.4g} | {test} | "
              f"{r['wall_s']:.1f} |")


def main(argv=None):
    from kopt.cli.bench.roofline import run_record
    from kopt.spec.packaged import names as packaged_names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", help="comma-separated names (default: every packaged spec)")
    ap.add_argument("--max-rows", type=int, default=2000)
    ap.add_argument("--iterations", type=int, default=100, help="cap solver.iterations (0: the spec's own)")
    ap.add_argument("--skip-done", action="store_true", help="skip specs already checked in tune_all_specs.jsonl")
    ap.add_argument("--substitute", action="append", default=[], metavar="PRESET=OTHER",
                    help="run specs whose data is PRESET on OTHER's rows instead (e.g. higgs=higgs-12k)")
    ap.add_argument("--table", action="store_true", help="print tune_all_specs.jsonl as a markdown table and stop")
    a = ap.parse_args(argv)
    if a.table:
        table(os.path.join(HERE, "tune_all_specs.jsonl"))
        return 0
    names = a.specs.split(",") if a.specs else packaged_names()
    done_path = os.path.join(HERE, "tune_all_specs.jsonl")
    if a.skip_done and os.path.exists(done_path):
        with open(done_path, encoding="utf-8") as fh:
            done = {json.loads(line)["spec"] for line in fh if line.strip()}
        names = [n for n in names if n not in done]
    for name in names:
        row = {**check(name, a.max_rows, a.iterations, dict(item.split("=", 1) for item in a.substitute)),
               **run_record()}
        print(json.dumps(row), flush=True)
        with open(os.path.join(HERE, "tune_all_specs.jsonl"), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
