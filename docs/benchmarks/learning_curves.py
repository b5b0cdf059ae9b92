"""The default route's learning curve by center count, on the sets where ``kopt bench defaults`` misses a target
(docs/design/center-ladder.md).

For each set and each count M, the defaults' spec (``kopt bench defaults``' spec side) with ``model.features.count:
M`` given: ``solver: auto`` then chooses the bandwidth and λ at that M on its seeded validation split and solves on
every training row.  Each run is a process of its own (its peak memory is its own), one after the other:

    flock /tmp/kopt-cpu.lock python docs/benchmarks/learning_curves.py --sets w8a reuters ijcnn1 \\
        --json docs/benchmarks/learning_curves.jsonl

One JSON line per (set, M): validation and test accuracy, fit seconds (search included), peak MB, and the machine.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

COUNTS = (512, 1024, 2048, 4096)


def one(name: str, count: int) -> dict:
    """One run, in this process: the defaults' spec at ``count`` centers."""
    import kopt
    from kopt.cli.bench.defaults import spec_of
    from kopt.cli.bench.runs import peak_mb

    spec = spec_of(name)
    spec["model"]["features"] = {"kind": "nystrom", "count": count}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        r = kopt.solve(spec)
        wall = time.perf_counter() - t0
    auto = r.auto
    return {"set": name, "centers": count, "kept": auto["centers"], "bandwidth_factor": auto["bandwidth_factor"],
            "lambda": auto["lambda"], "validation": auto["validation_score"], "test": r.metrics["accuracy"],
            "fit_s": r.timings["fit_s"] + r.timings.get("auto_s", 0.0), "search_s": r.timings.get("auto_s", 0.0),
            "wall_s": wall, "peak_mb": peak_mb()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["w8a", "reuters", "ijcnn1"])
    parser.add_argument("--counts", nargs="+", type=int, default=list(COUNTS))
    parser.add_argument("--json", help="also append the JSON lines to this file")
    parser.add_argument("--one", nargs=2, metavar=("SET", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]))), flush=True)
        return 0
    import subprocess

    from kopt.cli.bench.roofline import run_record

    for name in args.sets:
        for count in args.counts:
            proc = subprocess.run([sys.executable, __file__, "--one", name, str(count)], capture_output=True,
                                  text=True, timeout=1800)
            line = (json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else
                    {"set": name, "centers": count, "error": proc.stderr.strip().splitlines()[-1:]})
            line.update(run_record())
            print(json.dumps(line), flush=True)
            if args.json:
                with open(args.json, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
