"""What ``kopt tune`` shows and writes: the table, the plot (metric vs λ per setting), the best spec
as YAML, the search as JSON."""
from __future__ import annotations

import os

import yaml

from ..errors import SpecError
from ..files.atomic import atomic_open, write_json
from .tune import LAMBDA


def _short(key):
    return key.rsplit(".", 1)[1]


def table(result) -> str:
    """One line per grid point: the keys, the mean metric over folds (± its spread), fit seconds,
    iterations and whether every fold converged; the best point is starred."""
    keys = [a.key for a in result.axes]
    head = [_short(k) for k in keys] + [result.metric, "±", "fit s", "iters", "conv", "warm"]
    lines = []
    for r in result.rows:
        cells = [f"{r['params'][k]:.4g}" for k in keys]
        cells += [f"{r['score']:.5g}", f"{r['std']:.2g}", f"{r['fit_s']:.2f}", str(r["iterations"]),
                  "yes" if r["converged"] else "no", str(r["warm"])]
        lines.append(cells + ["*" if r["params"] == result.best_params else ""])
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    out += ["  ".join(c.rjust(w) for c, w in zip(cells, widths)) + (" *" if cells[-1] else "") for cells in lines]
    return "\n".join(out)


def summary(result) -> str:
    fit = sum(r["fit_s"] for r in result.rows)
    best = ", ".join(f"{k}={v:g}" for k, v in result.best_params.items())
    text = (f"best {result.metric} {result.best_score:.5g} ({result.splits}) at {best}\n"
            f"{len(result.rows)} grid points, fit {fit:.1f}s, wall {result.wall_s:.1f}s, λ path ")
    shared = result.info.get("shared")
    if shared:
        text += (f"shared: {shared['systems']} Nystrom systems on {'/'.join(map(str, shared['centers']))} centers "
                 f"drawn once from all training rows ({shared['system_s']:.1f}s), every lambda of a fold from its "
                 f"system ({shared['path_s']:.1f}s)" + (f"; {shared['note']}" if shared.get("note") else ""))
    else:
        text += ("warm-started" if result.warm_start else
                 "cold (" + ("--no-warm-start" if result.info.get("lambda_warm_start") else
                             f"solver {result.info.get('solver')!r} has no warm start across lambda") + ")")
    if result.refit is not None:
        text += "\nrefit on all training rows: " + ", ".join(f"test {k} {v:.6g}" for k, v in result.refit.metrics.items())
    return text


def best_yaml(result) -> str:
    """The best spec, resolved (every default filled in), under a comment naming the metric."""
    best = ", ".join(f"{k}={v:g}" for k, v in result.best_params.items())
    head = (f"# written by kopt tune: the best {result.metric} on validation, {result.best_score:.6g}\n"
            f"# ({result.splits}) at {best}\n")
    return head + yaml.safe_dump(result.best_spec.data, sort_keys=False, default_flow_style=None, width=110)


def check_plot_available():
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise SpecError("--plot needs matplotlib, which is not installed; install the plot extra "
                        "(pip install 'kopt[plot]') or leave out --plot", source="kopt tune")


def plot(result, path) -> str:
    """The metric against λ (log axis), one line per setting of the other keys."""
    check_plot_available()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    others = [a.key for a in result.axes if a.key != LAMBDA]
    lines = {}
    for r in result.rows:
        label = ", ".join(f"{_short(k)}={r['params'][k]:g}" for k in others) or result.metric
        lines.setdefault(label, []).append((r["params"].get(LAMBDA, 0.0), r["score"]))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, pts in lines.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    if any(a.key == LAMBDA for a in result.axes):
        ax.set_xscale("log")
    ax.set_xlabel("λ (model.regularizer.lambda)")
    ax.set_ylabel(f"validation {result.metric}")
    ax.set_title(f"{result.best_spec['name']}: {result.splits}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write(result, out_dir, with_plot=False) -> dict:
    """``best.yaml``, ``tune.json`` (and ``tune.png``) into ``out_dir``; returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {"best_spec": os.path.join(out_dir, "best.yaml"), "json": os.path.join(out_dir, "tune.json")}
    with atomic_open(paths["best_spec"], "wb") as fh:
        fh.write(best_yaml(result).encode("utf-8"))
    write_json(paths["json"], {
        "metric": result.metric, "higher_is_better": result.higher_is_better, "splits": result.splits,
        "warm_start": result.warm_start, "wall_s": result.wall_s, "best_params": result.best_params,
        "best_score": result.best_score, "axes": {a.key: list(a.values) for a in result.axes},
        "rows": result.rows, "refit_metrics": None if result.refit is None else result.refit.metrics,
        "shared": result.info.get("shared"),
    })
    if with_plot:
        paths["plot"] = plot(result, os.path.join(out_dir, "tune.png"))
    return paths
