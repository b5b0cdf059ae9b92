"""Peak memory of ``kopt predict`` on HIGGS-shaped rows.

Writes a seeded CSV of ``--rows`` rows (a 0/1 label and 28 standard-normal
features, HIGGS's shape), trains a small model on its first 2,000 rows
(``krr_exact``, Gaussian kernel) and runs ``kopt predict`` on the whole file in
a child process, twice: the peak RSS of each run (``ru_maxrss`` of the child),
its seconds, and the parse-cache entries it left behind (``KOPT_DATA`` points
at a fresh folder).  The float32 features alone take ``rows x 28 x 4`` bytes:
224 MB at 2M rows; a streaming predict stays far below that.

    python docs/benchmarks/predict_memory.py                    # 2M rows; writes predict_memory.json here
    python docs/benchmarks/predict_memory.py --rows 200000 --json /tmp/p.json

``--python`` runs ``kopt`` with another interpreter (e.g. one whose kopt is an
older checkout) to compare before and after on the same file and machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SPEC = """\
name: predict_memory
seed: 0
data: {{train: {train}, label: 0}}
model:
  loss: {{name: square}}
  kernel: {{name: gaussian, bandwidth: median}}
  regularizer: {{name: l2, lambda: 1.0e-3}}
solver: {{name: krr_exact}}
backend: numpy
output: {{dir: {out}}}
"""


def write_rows(path, rows, seed=0, block=200_000):
    """A HIGGS-shaped CSV: label in {0, 1}, then 28 features (seeded, block by block)."""
    rng = np.random.default_rng(seed)
    fmt = ",".join(["%d"] + ["%.6f"] * 28)
    with open(path, "w", encoding="ascii") as fh:
        for start in range(0, rows, block):
            n = min(block, rows - start)
            X = rng.standard_normal((n, 28))
            y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.standard_normal(n) > 0.5).astype(np.int64)
            np.savetxt(fh, np.column_stack([y, X]), fmt=fmt, delimiter=",")


PEAK = ("import resource, sys; from kopt.cli import main; rc = main(sys.argv[1:]); "
        "print('peak_rss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)")


def run_child(python, argv, env):
    """Seconds, peak RSS (MiB, the child's own ``ru_maxrss``) and last stderr line of ``kopt ARGV``."""
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-c", PEAK, *argv], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"kopt {' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    lines = proc.stderr.strip().splitlines()
    peak_kb = int(lines[-1].split()[1])
    return seconds, peak_kb / 1024, lines[-2] if len(lines) > 1 else ""


def main():
    from kopt.cli.bench.roofline import run_record  # this process only stamps: the child's memory is measured

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--python", default=sys.executable, help="interpreter whose kopt runs predict")
    ap.add_argument("--json", default=str(HERE / "predict_memory.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kopt-predict-mem-") as tmp:
        tmp = Path(tmp)
        data, train = tmp / "higgs_like.csv", tmp / "train.csv"
        write_rows(data, args.rows)
        with open(data, encoding="ascii") as src, open(train, "w", encoding="ascii") as dst:
            dst.writelines(line for _, line in zip(range(2000), src))
        (tmp / "spec.yaml").write_text(SPEC.format(train=train, out=tmp / "model"))
        env = {**os.environ, "KOPT_DATA": str(tmp / "kopt_data"), "KOPT_OFFLINE": "1"}
        subprocess.run([args.python, "-m", "kopt", "solve", str(tmp / "spec.yaml"), "--quiet"], env=env, check=True)
        argv = ["predict", str(tmp / "model" / "model.json"), str(data), "--out", str(tmp / "pred.csv")]
        seconds, peak_mb, line = run_child(args.python, argv, env)
        cache = tmp / "kopt_data" / "cache"
        entries = sorted(p.name for p in cache.iterdir()) if cache.is_dir() else []
        cache_mb = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) / 2**20 if entries else 0.0
        result = {"rows": args.rows, "file_mb": round(data.stat().st_size / 2**20, 1),
                  "float32_features_mb": round(args.rows * 28 * 4 / 2**20, 1), "peak_rss_mb": round(peak_mb, 1),
                  "seconds": round(seconds, 2), "cache_entries": len(entries), "cache_mb": round(cache_mb, 1),
                  "metrics": line, "python": args.python, "load": os.getloadavg(), **run_record()}
    print(json.dumps(result, indent=2))
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()
