"""Feature-engine throughput against this machine's own cos roofline and scikit-learn's RBFSampler.

    python docs/benchmarks/features.py                     # n = 10^5, d = 28, M = 4096 and 32768, median of 3
    python docs/benchmarks/features.py --rows 20000 --repeat 5

Runs ``kopt bench features`` (:func:`kopt.cli.bench.features.run_features`) and writes
``features.json`` and ``features.png`` next to this file.  Every figure is G
features/s (rows × M / seconds) from one process: prediction ψ(X)ᵀθ, the θ
update ψ(X)v, the fused predict + adjoint of a gradient step (features
evaluated once for both products), the float32 cos throughput measured in the
same run on 1 and on all worker threads (each Fourier feature costs exactly one
sin or cos, so that is the roofline), and scikit-learn's float64
``RBFSampler.transform`` on a row subsample.

The development machine is shared by several people (2 cores): absolute numbers
move with the load (``loadavg_before_after`` is recorded); compare the ratios
within one run.
"""
from __future__ import annotations

import argparse
import json
import os

from kopt.cli.bench.features import run_features

HERE = os.path.dirname(os.path.abspath(__file__))


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = res["runs"]
    labels = [f"M={r['M']}" for r in runs]
    series = [("predict ψ(X)ᵀθ", "predict"), ("θ update ψ(X)v", "theta_update"),
              ("fused predict+adjoint", "fused_predict_adjoint"), ("sklearn RBFSampler", "sklearn_rbfsampler")]
    fig, ax = plt.subplots(figsize=(7.5, 4))
    width = 0.8 / len(series)
    for k, (name, key) in enumerate(series):
        vals = [r.get(key, 0.0) for r in runs]
        ax.bar([i + k * width for i in range(len(runs))], vals, width, label=name)
    roof = res["roofline"]
    ax.axhline(roof["cos_all_threads"], color="k", ls="--", lw=1,
               label=f"float32 cos, {res['threads']} threads (roofline)")
    ax.axhline(roof["cos_1_thread"], color="gray", ls=":", lw=1, label="float32 cos, 1 thread")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(runs))], labels)
    ax.set_ylabel("G features / s")
    ax.set_title(f"kopt feature engine, n={res['rows']}, d={res['dim']}, float32 (shared 2-core machine)")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=28)
    ap.add_argument("--features", type=int, nargs="+", default=[4096, 32768])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "features.json"))
    args = ap.parse_args(argv)
    res = run_features(rows=args.rows, dim=args.dim, features=tuple(args.features), repeat=args.repeat)
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=2)
    plot(res, os.path.splitext(args.out)[0] + ".png")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
