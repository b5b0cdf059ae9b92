"""Convergence plots (optional dependency: matplotlib)."""
from __future__ import annotations

from .errors import KoptError


def plot_trace(trace, path, title=""):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise KoptError("--plot / output.plot needs matplotlib: pip install 'kopt[plot]'") from None
    from .fileio import atomic_open

    series = [k for k in ("objective", "dual", "gap") if any(k in r for r in trace)]
    metrics = sorted({k for r in trace for k in r if k.startswith("test_")})
    fig, axes = plt.subplots(1, 2 if metrics else 1, figsize=(11 if metrics else 6, 4), squeeze=False)
    ax = axes[0][0]
    for k in series:
        pts = [(r["elapsed"], r[k]) for r in trace if k in r]
        if k == "gap":
            pts = [(t, abs(v)) for t, v in pts]
        ax.plot(*zip(*pts), label=k)
    if "gap" in series:
        ax.set_yscale("symlog", linthresh=1e-8)
    ax.set_xlabel("time (s)")
    ax.set_title(f"{title} objective")
    ax.legend()
    if metrics:
        ax2 = axes[0][1]
        for k in metrics:
            pts = [(r["elapsed"], r[k]) for r in trace if k in r]
            ax2.plot(*zip(*pts), marker=".", label=k[5:])
        ax2.set_xlabel("time (s)")
        ax2.set_title("holdout")
        ax2.legend()
    fig.tight_layout()
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)
    plt.close(fig)
    return path
