"""Same spec and seed, same model on 1 or 2 CPUs: every solver route at the higgs-12k size.

Each case runs ``kopt solve`` in its own process, once pinned to one CPU and once to two
(``os.sched_setaffinity``: what a smaller machine or container looks like, so kopt's threads and
BLAS's default thread count both follow), and compares the ``model_sha256`` of the two reports
(``kopt model-hash``: arrays and fit-relevant metadata).

    python docs/benchmarks/determinism.py            # prints one line per case, writes determinism.json here
    python docs/benchmarks/determinism.py --cases joker-exact dsg

Needs two CPUs (else it says so and stops).  The packaged higgs-12k data: no download.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import yaml

from kopt.cli.bench.roofline import run_record

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = {"seed": 0, "data": {"source": "higgs-12k"}, "backend": "numpy",
        "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                  "regularizer": {"name": "l2", "lambda": 1e-4},
                  "features": {"count": 2048, "block_size": 512, "dtype": "float32", "seed": 0}},
        "output": {"report": True, "model": True}}
CASES = {
    "joker-exact": {"model": {"loss": {"name": "huber", "delta": 1.0, "target": "binary"}, "form": "dual"},
                    "solver": {"name": "joker", "mode": "exact", "batch_size": 512, "iterations": 30, "tol": 1e-6}},
    "joker-features": {"model": {"loss": {"name": "huber", "delta": 1.0, "target": "binary"}, "form": "dual"},
                       "solver": {"name": "joker", "mode": "features", "batch_size": 512, "iterations": 30,
                                  "tol": 1e-6}},
    "joker-primal": {"model": {"form": "dual"}, "solver": {"name": "joker", "mode": "primal", "iterations": 5, "tol": 1e-9}},
    "krr_exact": {"solver": {"name": "krr_exact"}},
    "dsg": {"solver": {"name": "dsg", "iterations": 60, "batch_size": 256}},
    "adsg": {"model": {"loss": {"name": "logistic"}}, "solver": {"name": "adsg", "iterations": 3, "batch_size": 64}},
    "gp": {"model": {"form": "gp"}, "solver": {"name": "gp", "iterations": 60, "batch_size": 64, "variance": "none"}},
}


def merged(base, extra):
    out = dict(base)
    for k, v in extra.items():
        out[k] = merged(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return out


def run(spec_path, out_dir, cpus):
    env = {k: v for k, v in os.environ.items() if k not in ("KOPT_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kopt", "solve", spec_path, "--quiet", "--out", out_dir], env=env,
                          capture_output=True, text=True, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    if done.returncode != 0:
        raise SystemExit(f"{spec_path} on CPUs {sorted(cpus)}: exit {done.returncode}\n{done.stderr}")
    with open(os.path.join(out_dir, "report.json"), encoding="utf-8") as fh:
        return json.load(fh)["model_sha256"], time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    ap.add_argument("--json", default=os.path.join(HERE, "determinism.json"))
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("needs two CPUs")
    rows, tmp = [], tempfile.mkdtemp(prefix="kopt-determinism-")
    for name in args.cases:
        spec = merged(BASE, CASES[name])
        spec["name"] = name
        path = os.path.join(tmp, f"{name}.yaml")
        with open(path, "w", encoding="utf-8") as fh:
            yaml.safe_dump(spec, fh)
        one, s1 = run(path, os.path.join(tmp, name, "one"), {cpus[0]})
        two, s2 = run(path, os.path.join(tmp, name, "two"), set(cpus[:2]))
        rows.append({"case": name, "same": one == two, "hash_1cpu": one, "hash_2cpu": two, "s_1cpu": s1, "s_2cpu": s2})
        print(f"{name:16s} {'identical' if one == two else 'DIFFERENT'}  {one[:16]} {two[:16]}  "
              f"({s1:.1f}s / {s2:.1f}s)", flush=True)
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"load": os.getloadavg(), "rows": rows, **run_record()}, fh, indent=2)
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
