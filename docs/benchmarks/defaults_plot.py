"""Plot `kopt bench defaults`' JSON lines against the defaults' targets: ``python docs/benchmarks/defaults_plot.py
[docs/benchmarks/defaults_bench.jsonl [docs/benchmarks/defaults_bench.png]]``.

Three panels, one group of bars per set (the spec and the estimator): the metric against the better SVC in units
of the allowance (0.3 points of accuracy; 2% of RMSE: at or above −1 meets it), fit seconds and peak memory as
ratios to that SVC's (log scale; at or below 0.5 and 1 meet them).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def margins(line, side):
    """(metric in allowances, fit ratio, memory ratio) of one side of one set."""
    r = line[f"{side}_ratios"]
    if line["metric"] == "rmse":
        metric = -(r["rmse"] - 1.0) / 0.02
    else:
        metric = r["accuracy_points"] / 0.3
    return metric, r["fit"], r["peak_mb"]


def plot(src, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    every = [json.loads(s) for s in Path(src).read_text().splitlines() if s.strip()]
    latest = {line["set"]: line for line in every if "spec_ratios" in line}  # each set's latest run beside an SVC
    lines = list(latest.values())
    sets = [line["set"] for line in lines]
    x = np.arange(len(sets))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    titles = ("metric vs the better SVC (allowances: 0.3 points, 2% RMSE)", "fit seconds / the better SVC's",
              "peak memory / the better SVC's")
    targets = (-1.0, 0.5, 1.0)
    for k, ax in enumerate(axes):
        for j, (side, colour) in enumerate((("spec", "tab:blue"), ("estimator", "tab:orange"))):
            values = [margins(line, side)[k] if f"{side}_ratios" in line else np.nan for line in lines]
            ax.bar(x + (j - 0.5) * 0.38, values, 0.38, color=colour, label=side)
        ax.axhline(targets[k], color="k", ls="--", lw=1, label="target")
        if k:
            ax.set_yscale("log")
        else:
            ax.axhline(0.0, color="grey", lw=0.5)
        ax.set_xticks(x, sets, rotation=30, ha="right")
        ax.set_title(titles[k], fontsize=10)
    axes[0].legend(fontsize=8)
    fig.suptitle("kopt bench defaults: better is up (metric) and down (fit, memory) of the dashed targets", fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    return out


if __name__ == "__main__":
    src = sys.argv[1] if len(sys.argv) > 1 else HERE / "defaults_bench.jsonl"
    out = sys.argv[2] if len(sys.argv) > 2 else HERE / "defaults_bench.png"
    print(plot(src, out))
