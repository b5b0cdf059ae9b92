"""The convergence plot, ``convergence.png`` (optional dependency: matplotlib).

One figure a reader understands without the docs: the relative duality gap (P - D)/max(|P|, |D|) on a log
axis against iterations and against seconds, with the stopping tolerance as a line; the primal and dual
objectives on their own linear panel; the holdout metrics when the run has a test split.  A solver without
a duality gap (a primal-only run) gets its objective in place of the gap.
"""
from __future__ import annotations

from ..errors import KoptError

#: the floor of the log axis: a gap at or below rounding (or a negative rounding residue) is drawn here
GAP_FLOOR = 1e-16


def _relative_gaps(trace):
    """``(iteration, seconds, relative gap)`` of every record that checked the gap."""
    out = []
    for r in trace:
        rel = r.get("rel_gap")
        if rel is None and r.get("gap") is not None and r.get("objective") is not None and r.get("dual") is not None:
            rel = r["gap"] / max(abs(r["objective"]), abs(r["dual"]), 1e-300)
        if rel is not None:
            out.append((r["iteration"], r["elapsed"], max(float(rel), GAP_FLOOR)))
    return out


def _series(trace, key):
    return [(r["iteration"], r[key]) for r in trace if r.get(key) is not None]


def _gap_panel(ax, pts, x, tol, xlabel):
    xs = [p[x] for p in pts]
    ax.plot(xs, [p[2] for p in pts], marker="." if len(pts) < 60 else None, color="C0", label="relative gap")
    if tol:
        ax.axhline(tol, color="C3", linestyle="--", linewidth=1, label=f"stopping tol {tol:g}")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("(P − D) / max(|P|, |D|)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")


def _objective_panel(ax, trace):
    primal, dual = _series(trace, "objective"), _series(trace, "dual")
    estimate = []
    checked = [r for r in trace if r.get("objective_estimate") is not None]
    if checked:  # a stochastic solver: P over all rows at its checks, a minibatch estimate in between
        estimate = [(r["iteration"], r.get("objective_estimate", r.get("objective"))) for r in trace
                    if r.get("objective") is not None]
        ax.plot(*zip(*estimate), color="C1", alpha=0.35, linewidth=0.8, label="P, minibatch estimate")
        primal = [(r["iteration"], r["objective"]) for r in checked]
    if primal:
        ax.plot(*zip(*primal), marker="." if len(primal) < 60 else None, color="C1", label="primal P" + (" (all rows)" if checked else ""))
    if dual:
        ax.plot(*zip(*dual), color="C2", label="dual D")
    values = [v for _, v in primal + dual + estimate]
    if values:  # the last half of the run sets the scale: the first iterations' values would flatten it
        late = [v for (i, v) in primal + dual + estimate if i >= trace[-1]["iteration"] / 2] or values
        lo, hi = min(late), max(late)
        pad = max(hi - lo, 1e-12 * max(abs(hi), 1.0)) * 0.6
        ax.set_ylim(lo - pad, hi + pad)
        text = [f"P = {primal[-1][1]:.6g}" if primal else "", f"D = {dual[-1][1]:.6g}" if dual else ""]
        ax.text(0.98, 0.04, "\n".join(t for t in text if t), transform=ax.transAxes, ha="right", va="bottom",
                fontsize=8, family="monospace")
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective (kopt's convention)")
    what = "Primal and dual objectives" if dual else "Primal objective"
    ax.set_title(f"{what} (scale: the last half)", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper right")


def _metric_panel(ax, trace, metrics):
    for k in metrics:
        pts = _series(trace, k)
        ax.plot(*zip(*pts), marker=".", label=k[5:])
    ax.set_xlabel("iteration")
    ax.set_ylabel("metric on the test split")
    ax.set_title("Holdout metrics", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def plot_trace(trace, path, title="", *, tol=None, solver=None):
    """Draw ``trace`` (the report's per-iteration records) into the PNG ``path``; returns ``path``.

    ``title``: the spec's name; ``tol``: the stopping tolerance on the relative gap (a line; None: none);
    ``solver``: its name, for the title.
    """
    from ..files.atomic import atomic_open

    fig = convergence_figure(trace, title, tol=tol, solver=solver)
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)
    _pyplot().close(fig)
    return path


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise KoptError("--plot / output.plot needs matplotlib: pip install 'kopt[plot]'") from None
    return plt


def convergence_figure(trace, title="", *, tol=None, solver=None):
    """The matplotlib figure :func:`plot_trace` saves (the caller closes it)."""
    plt = _pyplot()
    if not trace:
        raise KoptError("the run recorded no iterations: nothing to plot")
    gaps = _relative_gaps(trace)
    metrics = sorted({k for r in trace for k in r if k.startswith("test_") and r[k] is not None})
    panels = (2 if gaps else 0) + 1 + (1 if metrics else 0)
    rows, cols = (2, 2) if panels == 4 else (1, panels)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows + 0.4), squeeze=False)
    axes = list(axes.ravel())
    if gaps:
        _gap_panel(axes[0], gaps, 0, tol, "iteration")
        axes[0].set_title("Relative duality gap by iteration", fontsize=10)
        _gap_panel(axes[1], gaps, 1, tol, "wall time (s)")
        axes[1].set_title("Relative duality gap by time", fontsize=10)
        axes = axes[2:]
    _objective_panel(axes[0], trace)
    if metrics:
        _metric_panel(axes[1], trace, metrics)
    last = trace[-1]
    head = f"{title}: " if title else ""
    head += f"{solver}, " if solver else ""
    head += f"{last['iteration']:,} iterations in {last['elapsed']:.3g} s"
    if gaps:
        head += f"; final relative gap {gaps[-1][2]:.2g}" + (f" (tol {tol:g})" if tol else "")
    fig.suptitle(head, fontsize=11)
    fig.tight_layout()
    return fig
