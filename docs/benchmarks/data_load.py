"""Data-loading benchmark: peak memory of a HIGGS-shaped CSV.gz load and the cached second load.

    python docs/benchmarks/data_load.py                      # 1M, 2M, 4M, 11M rows
    python docs/benchmarks/data_load.py --rows 1000000 2000000 --repeat 3

Writes docs/benchmarks/data_load.json and data_load.png.  Every measurement
runs in a fresh child process; peak memory is that process's ``ru_maxrss``
(``resource.getrusage``), reported next to the resident size of the bare
interpreter with numpy and kopt imported.  The synthetic files live in a
temporary folder (``--workdir``) that is deleted at the end (``--keep`` keeps
it).

The file has UCI HIGGS's layout: no header, label 0/1 first, 28 features,
each a float32 value printed as ``%.18e`` (25 characters: HIGGS.csv's own
format, about 690 bytes a row), gzip-compressed.  To keep generation fast on
a shared 2-core machine, 100,000 distinct rows are formatted once and the file
is made of shuffled copies of them: the bytes to decompress and parse per row
are those of HIGGS, only the values repeat.

Peers, same run, same file: ``np.loadtxt`` on the gzip stream (float32) for a
cold load; ``np.load`` of the same array as a plain ``.npy`` file for the
cached load.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
POOL = 100_000
CHILD_MODES = ("kopt_cold", "kopt_cold_cache", "kopt_warm", "loadtxt", "npy_load")


# -- the synthetic file ----------------------------------------------------------------------


def make_higgs_like(path: Path, rows: int, seed: int = 0) -> dict:
    """Write a HIGGS-layout CSV.gz of ``rows`` rows; returns timing and size."""
    import numpy as np

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((POOL, 29)).astype(np.float32)
    table[:, 0] = rng.integers(0, 2, POOL)
    lines = np.array([",".join(f"{v:.18e}" for v in row).encode() + b"\n" for row in table.tolist()], dtype=object)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as out:
        left = rows
        while left:
            take = min(left, POOL)
            out.write(b"".join(lines[rng.permutation(POOL)[:take]]))
            left -= take
    return {"rows": rows, "bytes_gz": path.stat().st_size, "generate_s": time.perf_counter() - t0}


# -- child processes ---------------------------------------------------------------------------


def _rss_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _hwm_mb():
    """VmHWM of /proc/self/status: the peak RSS of this process image only (Linux)."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM")) / 1024.0
    except (OSError, StopIteration):
        return None


def child(mode: str, path: str) -> dict:
    """One measurement in this (fresh) process; prints a JSON line."""
    import numpy as np

    import kopt.data  # noqa: F401  (imported before the baseline, like in a real run)

    base, base_hwm = _rss_mb(), _hwm_mb()
    t0 = time.perf_counter()
    if mode.startswith("kopt"):
        from kopt.data import read_table

        X, y, meta = read_table(path, {"cache": mode != "kopt_cold", "progress": False})
        t_open = time.perf_counter() - t0
        checksum = float(np.add.reduce(X, axis=0, dtype=np.float64).sum())  # touches every value
        extra = {"cached": bool(meta.get("cached"))}
    elif mode == "loadtxt":
        with gzip.open(path, "rt") as fh:
            A = np.loadtxt(fh, delimiter=",", dtype=np.float32)
        X = A[:, 1:]
        t_open = time.perf_counter() - t0
        checksum = float(np.add.reduce(X, axis=0, dtype=np.float64).sum())
        extra = {}
    elif mode.startswith("make:"):
        return make_higgs_like(Path(path), int(mode[5:]))
    elif mode == "npy_load":
        X = np.load(path)
        t_open = time.perf_counter() - t0
        checksum = float(np.add.reduce(X, axis=0, dtype=np.float64).sum())
        extra = {}
    else:
        raise SystemExit(f"unknown mode {mode}")
    total = time.perf_counter() - t0
    return {"mode": mode, "rows": int(X.shape[0]), "x_mb": X.shape[0] * X.shape[1] * 4 / 2**20,
            "baseline_rss_mb": base, "peak_rss_mb": _rss_mb(), "baseline_hwm_mb": base_hwm,
            "peak_hwm_mb": _hwm_mb(), "open_s": t_open, "with_full_pass_s": total,
            "checksum": checksum, **extra}


def run_child(mode, path, env):
    """Run ``child(mode, path)`` in a fresh interpreter.  The parent stays small (no numpy),
    because Linux carries a parent's resident size at fork into the child's ru_maxrss."""
    out = subprocess.run([sys.executable, __file__, "--child", mode, str(path)], env=env, capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"child {mode} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the benchmark -------------------------------------------------------------------------------


def _median(runs, key):
    vals = sorted(r[key] for r in runs)
    return {"median": vals[len(vals) // 2], "min": vals[0], "max": vals[-1], "n": len(vals)}


def bench(args) -> dict:
    work = Path(args.workdir or tempfile.mkdtemp(prefix="kopt_data_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, KOPT_DATA=str(work / "kopt_data"))
    from kopt.cli.bench.roofline import run_record  # here, not at the top: a child's memory is measured without it

    result = {**run_record(), "files": [], "memory": [], "cached_load": {}, "cold_load_1m": {}}
    try:
        for rows in args.rows:
            path = work / f"higgs_like_{rows}.csv.gz"
            info = run_child(f"make:{rows}", path, env)
            result["files"].append(info)
            print(f"generated {rows:,} rows: {info['bytes_gz'] / 1e9:.2f} GB in {info['generate_s']:.0f}s", flush=True)
            m = run_child("kopt_cold", path, env)
            m["ratio_to_float32_X"] = m["peak_rss_mb"] / m["x_mb"]
            m["ratio_above_baseline"] = (m["peak_rss_mb"] - m["baseline_rss_mb"]) / m["x_mb"]
            result["memory"].append(m)
            print(f"  cold load (no cache): {m['open_s']:.1f}s, peak RSS {m['peak_rss_mb']:.0f} MB = "
                  f"{m['ratio_to_float32_X']:.2f} x the float32 X ({m['x_mb']:.0f} MB)", flush=True)
            if rows == min(args.rows):
                compare_small(path, work, env, args.repeat, result)
            path.unlink()
            shutil.rmtree(work / "kopt_data", ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return result


def compare_small(path, work, env, repeat, result):
    """Cold and cached loads of the smallest file, against numpy peers (median of ``repeat``)."""
    cold, peer, warm, npy = [], [], [], []
    for _ in range(repeat):
        shutil.rmtree(work / "kopt_data", ignore_errors=True)
        cold.append(run_child("kopt_cold_cache", path, env))  # parse + write the cache
        warm.append(run_child("kopt_warm", path, env))  # memory-mapped from the cache
        peer.append(run_child("loadtxt", path, env))
    entry = next((work / "kopt_data" / "cache").iterdir())
    shutil.copyfile(entry / "X.npy", work / "peer.npy")  # the same float32 array as a plain .npy
    for _ in range(repeat):
        npy.append(run_child("npy_load", work / "peer.npy", env))
    (work / "peer.npy").unlink()
    assert all(r["cached"] for r in warm) and not any(r["cached"] for r in cold)
    assert len({round(r["checksum"], 3) for r in cold + warm + peer}) == 1, "loads disagree"
    result["cold_load_1m"] = {
        "rows": cold[0]["rows"],
        "kopt_parse_and_cache_s": _median(cold, "open_s"),
        "kopt_peak_rss_mb": _median(cold, "peak_rss_mb"),
        "np_loadtxt_s": _median(peer, "open_s"),
        "np_loadtxt_peak_rss_mb": _median(peer, "peak_rss_mb"),
    }
    result["cached_load"] = {
        "rows": warm[0]["rows"],
        "kopt_open_s": _median(warm, "open_s"),
        "kopt_open_and_full_pass_s": _median(warm, "with_full_pass_s"),
        "np_load_npy_s": _median(npy, "open_s"),
        "np_load_npy_and_full_pass_s": _median(npy, "with_full_pass_s"),
    }
    c, w = result["cold_load_1m"], result["cached_load"]
    print(f"  {c['rows']:,} rows cold: kopt {c['kopt_parse_and_cache_s']['median']:.1f}s "
          f"({c['kopt_peak_rss_mb']['median']:.0f} MB) vs np.loadtxt {c['np_loadtxt_s']['median']:.1f}s "
          f"({c['np_loadtxt_peak_rss_mb']['median']:.0f} MB)", flush=True)
    print(f"  cached: kopt open {w['kopt_open_s']['median'] * 1e3:.1f} ms, open + full pass "
          f"{w['kopt_open_and_full_pass_s']['median']:.3f}s vs np.load(.npy) + pass "
          f"{w['np_load_npy_and_full_pass_s']['median']:.3f}s", flush=True)


def plot(result, out_png):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mem = result["memory"]
    rows = [m["rows"] / 1e6 for m in mem]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(rows, [m["peak_rss_mb"] / 1024 for m in mem], "o-", label="kopt peak RSS (cold load)")
    ax[0].plot(rows, [m["x_mb"] / 1024 for m in mem], "k--", label="float32 X (n x 28)")
    ax[0].plot(rows, [1.5 * m["x_mb"] / 1024 for m in mem], "r:", label="target 1.5 x X")
    ax[0].set_xlabel("rows (millions)")
    ax[0].set_ylabel("GiB")
    ax[0].set_title("HIGGS-shaped CSV.gz: peak memory")
    ax[0].legend()
    over = [m["peak_rss_mb"] - m["baseline_rss_mb"] - m["x_mb"] - m["rows"] * 8 / 2**20 for m in mem]
    ax[1].plot(rows, over, "o-", label="peak - interpreter - X - y")
    ax[1].plot(rows, [m["peak_rss_mb"] / m["x_mb"] * 100 for m in mem], "s--", label="peak / X (%)")
    ax[1].axhline(150, color="r", ls=":", label="target 150 %")
    ax[1].set_ylim(0, max(220, max(over) * 1.2))
    ax[1].set_xlabel("rows (millions)")
    ax[1].set_ylabel("MiB  /  %")
    ax[1].set_title("parser overhead (flat = bounded) and ratio")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 2_000_000, 4_000_000, 11_000_000])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workdir")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--out", default=str(HERE / "data_load.json"))
    p.add_argument("--plot-only", action="store_true", help="re-draw the plot from an existing --out JSON")
    p.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    if args.plot_only:
        with open(args.out) as fh:
            plot(json.load(fh), str(Path(args.out).with_suffix(".png")))
        return
    args.rows = sorted(args.rows)
    result = bench(args)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=2)
    plot(result, str(Path(args.out).with_suffix(".png")))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
