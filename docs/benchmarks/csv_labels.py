"""Parsing a numeric CSV before and after class-name labels, and a file of class names.

    python docs/benchmarks/csv_labels.py --before d247c61 --rows 300000 --repeat 3

Writes docs/benchmarks/csv_labels.json.  The files are data_load.py's HIGGS-layout CSV.gz (no header, label
first, 28 float32 features printed as ``%.18e``), and the same rows with the label written as a class name
(``s`` for 1, ``b`` for 0, HIGGS's own signal/background names).  Every measurement is one cold
``read_table(path, {"cache": False})`` in a fresh process (data_load.py's ``--child kopt_cold``): seconds to
the arrays and the process's peak resident memory.  ``before`` is the kopt package of the commit given
(``git archive`` into a temporary folder, put first on ``PYTHONPATH``), ``after`` this checkout; the runs
alternate, so a busy machine slows both alike.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import data_load  # noqa: E402

from kopt.cli.bench.roofline import run_record  # noqa: E402


def class_name_copy(src: Path, dst: Path):
    """``src`` with its first cell 1/0 written as ``s``/``b``."""
    names = {b"1": b"s", b"0": b"b"}
    with gzip.open(src, "rb") as fin, open(dst, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb",
                                                                            compresslevel=1) as out:
        for line in fin:
            head, rest = line.split(b",", 1)
            out.write(names[str(int(float(head))).encode()] + b"," + rest)


def kopt_tree(commit: str, where: Path) -> Path:
    """The ``kopt`` package of ``commit``, extracted under ``where``."""
    where.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "kopt"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True)
    return where


def measure(path, env):
    m = data_load.run_child("kopt_cold", path, env)
    return {"open_s": m["open_s"], "peak_rss_mb": m["peak_rss_mb"], "rows": m["rows"], "checksum": m["checksum"]}


def summary(runs):
    out = {}
    for key in ("open_s", "peak_rss_mb"):
        vals = sorted(r[key] for r in runs)
        out[key] = {"median": vals[len(vals) // 2], "min": vals[0], "max": vals[-1]}
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", required=True, help="the commit measured as 'before'")
    p.add_argument("--rows", type=int, default=300_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default=str(HERE / "csv_labels.json"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kopt_csv_labels_") as tmp:
        work = Path(tmp)
        numeric, names = work / "higgs_like.csv.gz", work / "higgs_like_names.csv.gz"
        base = dict(os.environ, KOPT_DATA=str(work / "kopt_data"))
        data_load.run_child(f"make:{args.rows}", numeric, base)
        class_name_copy(numeric, names)
        old = kopt_tree(args.before, work / "before")
        envs = {"before": dict(base, PYTHONPATH=str(old)), "after": dict(base, PYTHONPATH=str(REPO))}
        runs = {"before": [], "after": [], "after_class_names": []}
        for _ in range(args.repeat):
            runs["before"].append(measure(numeric, envs["before"]))
            runs["after"].append(measure(numeric, envs["after"]))
            runs["after_class_names"].append(measure(names, envs["after"]))
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        result = {"rows": args.rows, "bytes_gz": numeric.stat().st_size, "before": args.before, "after": head,
                  "load_average": os.getloadavg(), "runs": runs, "summary": {k: summary(v) for k, v in runs.items()},
                  **run_record()}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for k, s in result["summary"].items():
        print(f"{k:18s} parse {s['open_s']['median']:.2f} s ({s['open_s']['min']:.2f}-{s['open_s']['max']:.2f})  "
              f"peak RSS {s['peak_rss_mb']['median']:.1f} MiB ({s['peak_rss_mb']['min']:.1f}-"
              f"{s['peak_rss_mb']['max']:.1f})")


if __name__ == "__main__":
    main()
