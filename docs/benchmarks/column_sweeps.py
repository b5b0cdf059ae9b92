"""The column search's cost past 50,000 rows: its BLAS threads, and the drops the screen already measured.

`plugins/auto/columns.py`'s search (``columns.choose``, the large route's: the screen, then the sweeps) on tasks of the
generated family and on the ``higgs-shaped`` preset, three times per task in one process:

- ``before``: every kept column tries s_j x {0, 1/2, 2} in each sweep, NumPy's and SciPy's BLAS at their own thread
  counts (NumPy's pool spins beside SciPy's rank-k updates);
- ``held``: the same trials under ``kopt.numerics.threads.scipy_blas`` (NumPy's BLAS on one thread), as auto runs them;
- ``after``: held, and a column whose drop alone lost clearly in the screen (``columns.NEEDED_ERRORS``) tries no
  drop (``columns.SCREENED_NEEDED``), auto's rule.

One JSON line per (task, variant): the trials, the seconds, the columns kept, the scales and the validation score the
search ends at.

    python docs/benchmarks/column_sweeps.py --tasks 31:2 31:4 31:3 31:0 --rows 100000 --higgs-seeds 0 1 2 \
        --out docs/benchmarks/column_sweeps.jsonl
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


def _problem(task, rows):
    """The defaults' problem (the family bench's spec) of ``task``: a family's ``family:index``, or higgs-shaped."""
    import kopt
    from kopt.cli.bench.family import spec_of, tasks
    from kopt.numerics.backend import resolve
    from kopt.running.assemble import assemble

    if task == "higgs-shaped":
        spec = {"data": {"source": "higgs-shaped", "options": {"rows": int(rows)}},
                "model": {"loss": {"name": "auto"}, "kernel": {"name": "gaussian"}}}
    else:
        family, index = (int(v) for v in task.split(":"))
        spec = spec_of(tasks(family, 1, first=index, rows=rows)[0])
    return assemble(kopt.load_spec({**spec, "name": "column_sweeps", "seed": 0, "backend": "numpy"}), None,
                    resolve("numpy"))


def search(problem, seed, variant):
    """One column search at ``seed`` (auto's split of the rows, its default work budget): its trials, seconds,
    scales and last validation score."""
    import contextlib

    from kopt.numerics.threads import scipy_blas
    from kopt_plugins.auto import columns, large, scoring

    columns.SCREENED_NEEDED = variant == "after"
    held = scipy_blas() if variant != "before" else contextlib.nullcontext()
    fit, va = large.split(problem.n, seed)
    trials, evaluate = [0], columns._Trials.evaluate

    def counted(self, scales, factor):
        trials[0] += 1
        return evaluate(self, scales, factor)

    columns._Trials.evaluate = counted
    lines = []
    try:
        with held:
            t = time.perf_counter()
            found = columns.choose(problem, fit=fit, validation=va, metric=scoring.metric_of(problem),
                                   log=lines.append, seed=seed)
            seconds = time.perf_counter() - t
    finally:
        columns._Trials.evaluate = evaluate
    scales = np.ones(problem.d) if found is None else found[0]
    score = [float(m.group(1)) for m in (re.search(r"validation \w+ ([0-9.]+)", x) for x in lines) if m]
    return {"trials": trials[0], "seconds": round(seconds, 1), "kept": int((scales > 0).sum()),
            "scales": [float(s) for s in scales], "factor": None if found is None else float(found[1]),
            "validation": score[-1] if score else None, "taken": found is not None}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", nargs="*", default=["31:2", "31:4", "31:3", "31:0"],
                   help="family:index of the generated family")
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--higgs-seeds", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--out", default=os.path.join(HERE, "column_sweeps.jsonl"))
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    from kopt.cli.bench.roofline import run_record

    runs = [(t, 0) for t in a.tasks] + [("higgs-shaped", s) for s in a.higgs_seeds]
    stamp = run_record()
    with open(a.out, "w", encoding="utf-8") as out:
        for name, seed in runs:
            problem = _problem(name, a.rows)
            for variant in ("before", "held", "after"):
                row = {"task": name, "rows": a.rows, "columns": int(problem.d), "variant": variant, "seed": seed,
                       **search(problem, seed, variant), **stamp}
                print(json.dumps({k: v for k, v in row.items() if k not in stamp and k != "scales"}), flush=True)
                out.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
