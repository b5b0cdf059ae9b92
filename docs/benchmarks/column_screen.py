"""How often auto's column search finds higgs-shaped's 6 relevant columns, with and without its screen.

`plugins/auto/columns.py`'s search on the `higgs-shaped` preset at 10^5 rows (6 of 28 columns decide the class), one
run per seed of the spec: each seed is another split (``large.split``) and other draws of the search's rows and
centers.  ``screen``: the search as auto runs it (``columns.SCREEN``: each column dropped alone, the ones that lost
nothing dropped together, then the sweeps); ``sweeps``: the sweeps alone.  One JSON line per run: the columns kept,
whether they are exactly the 6 relevant ones, the validation accuracy and the seconds.

    flock /tmp/kopt-cpu.lock python docs/benchmarks/column_screen.py [--seeds 0 1 ... 9] [--out FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--out", default=os.path.join(HERE, "column_screen.jsonl"))
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    import kopt
    from kopt.cli.bench.roofline import run_record
    from kopt.numerics.backend import resolve
    from kopt.running.assemble import assemble
    from kopt_plugins.auto import columns, large

    spec = kopt.load_spec({"name": "column_screen", "seed": 0,
                           "data": {"source": "higgs-shaped", "options": {"rows": a.rows}},
                           "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
                           "backend": "numpy"})
    problem = assemble(spec, None, resolve("numpy"))
    stamp = run_record()
    with open(a.out, "w", encoding="utf-8") as out:
        for screen in (False, True):
            columns.SCREEN = screen
            for seed in a.seeds:
                fit, va = large.split(problem.n, seed)
                lines = []
                t = time.perf_counter()
                found = columns.choose(problem, fit=fit, validation=va, metric="accuracy", budget_s=1e9,
                                       log=lines.append, seed=seed)
                kept = list(range(problem.d)) if found is None else np.flatnonzero(found[0] > 0).tolist()
                score = [float(m.group(1)) for m in (re.search(r"validation accuracy ([0-9.]+)", x) for x in lines) if m]
                row = {"rows": a.rows,
                       "search": "screen" if screen else "sweeps", "seed": seed, "kept": kept,
                       "relevant_found": kept == list(range(6)), "validation_accuracy": score[-1] if score else None,
                       "seconds": round(time.perf_counter() - t, 1), **stamp}
                print(json.dumps(row), flush=True)
                out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
