"""kopt against scikit-learn on the standard splits: runs ``kopt bench peers`` and plots its JSON lines.

    python docs/benchmarks/peers.py                 # all four sets, median of 3 (a few minutes)
    python docs/benchmarks/peers.py --plot-only     # redraw peers.png from peers.jsonl

Writes docs/benchmarks/peers.jsonl (one line per set, as printed) and docs/benchmarks/peers.png (fit
seconds, predict seconds and peak MB of kopt and the peer, per set, with the ratio).  Run it on a quiet
machine: every configuration runs in its own process, one after another.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LINES = os.path.join(HERE, "peers.jsonl")


def plot(lines, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (key, title) in zip(axes, (("fit_s", "fit (s)"), ("predict_s", "predict (s)"), ("peak_mb", "peak RSS (MB)"))):
        names = [ln["set"] for ln in lines]
        k = [ln["kopt"][key] for ln in lines]
        p = [ln["peer"][key] for ln in lines]
        x = range(len(names))
        ax.bar([i - 0.2 for i in x], k, 0.4, label="kopt")
        ax.bar([i + 0.2 for i in x], p, 0.4, label="scikit-learn peer")
        for i, (a, b) in enumerate(zip(k, p)):
            ax.text(i, max(a, b) * 1.02, f"{a / b:.2f}x", ha="center", fontsize=8)
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, fontsize=8)
        ax.set_title(title)
        if key != "peak_mb":
            ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle("kopt bench peers: kopt / peer in one run (ratio above the bars)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sets", nargs="+")
    ap.add_argument("--plot-only", action="store_true")
    a = ap.parse_args()
    if not a.plot_only:
        cmd = [sys.executable, "-m", "kopt", "bench", "peers", "--repeat", str(a.repeat)]
        if a.sets:
            cmd += ["--sets", *a.sets]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        with open(LINES, "w", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in out.splitlines() if line.startswith("{")))
    with open(LINES, encoding="utf-8") as fh:
        lines = [json.loads(x) for x in fh if x.strip()]
    plot(lines, os.path.join(HERE, "peers.png"))
    for ln in lines:
        print(ln["set"], ln["met"])


if __name__ == "__main__":
    main()
