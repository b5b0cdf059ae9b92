"""``kopt bench family``: kopt's defaults against the peers on a family of generated tasks no default was tuned on.

The tasks are ``data.source: task-family`` (plugins/datasets/task_family.py): task i of family F, each with its own
column count (4 to 60), share of relevant columns (10% to 100%), label noise (0 to 20%), kind (binary, multiclass,
regression) and rows (10⁴ to 10⁶, capped by ``--max-rows``).  Draw the family from a seed no rule was developed on
(``--family``): what is reported is the spread of the ratios to the peers over the family (median and worst), not
one task.

Configurations, each fit in a process of its own with a time limit:

* ``kopt``: the spec that names only the data, the square loss and a Gaussian kernel (``solver: auto``);
* ``falkon``: Falkon at M = 4,096, σ picked by hand among 0.5, 1 and 2 times scikit-learn's scale rule by its test
  score (each σ its own fit; the line's fit is the chosen σ's);
* ``falkon_hopt``: ``falkon.hopt``'s NystromCompReg on 20,000 rows (a σ per column, the penalty, the centers), then
  Falkon at M = 4,096 on every row; its tuning seconds beside its fit;
* ``svc``: SVC(C=10) and SVC() (SVR for a real target) on z-scored columns, the better by test score, up to
  ``--svc-rows`` rows.

Falkon runs in the interpreter it is installed in (``--falkon-python``; a benchmark-only dependency kopt never
imports), on the rows written as ``.npy`` files (kopt/cli/bench/falkon_peer.py).  Each fit line holds the task, the
test score (accuracy, or RMSE), the fit seconds, the search seconds, the peak resident memory and the date, commit,
machine and BLAS; the last line is the summary: per task, kopt's score minus the peer's (accuracy points; RMSE as a
ratio) and kopt's fit over the peer's, then their median and worst over the family.

    kopt bench family --family SEED --tasks 12 --max-rows 100000 --falkon-python PATH --out FILE.jsonl
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

CONFIGS = ("kopt", "falkon", "falkon_hopt", "svc")
PEERS = ("falkon", "falkon_hopt", "svc")
#: test rows of every task
TEST_ROWS = 20_000
#: SVC runs up to this many training rows
SVC_ROWS = 50_000


def data_spec(family, index, rows):
    return {"source": "task-family", "options": {"family": int(family), "index": int(index), "rows": int(rows),
                                                 "test_rows": TEST_ROWS}}


def spec_of(family, index, rows, kind):
    """The defaults' spec: the data, the square loss (on class labels, or the real target) and a Gaussian kernel."""
    target = "real" if kind == "regression" else "binary"
    return {"name": f"family_{family}_{index}_{rows}", "data": data_spec(family, index, rows),
            "model": {"loss": {"name": "square", "target": target}, "kernel": {"name": "gaussian"}},
            "output": {"model": False, "report": False, "plot": False}}


def tasks(family, count, first=0, max_rows=None, rows=None):
    """The family's tasks ``first .. first + count - 1`` with their rows (``rows`` given, else the draw's, at most
    ``max_rows``)."""
    from kopt_plugins.datasets.task_family import Task, draw

    out = []
    for i in range(first, first + count):
        t = draw(family, i)
        n = int(rows) if rows else min(t.rows, int(max_rows)) if max_rows else t.rows
        out.append(Task(**{**t.__dict__, "rows": n}))
    return out


# -- the child processes --------------------------------------------------------------------------------
def _score(metrics, kind):
    return {"rmse": metrics.get("rmse")} if kind == "regression" else {"accuracy": metrics.get("accuracy")}


def run_kopt(family, index, rows, kind):
    import kopt

    r = kopt.solve(spec_of(family, index, rows, kind), progress=True)  # auto's log on stderr
    auto = r.auto or {}
    return {**_score(r.metrics, kind), "fit_s": r.timings["fit_s"] + r.timings.get("auto_s", 0.0),
            "search_s": r.timings.get("auto_s", 0.0), "success": r.success,
            "auto": {k: auto.get(k) for k in ("route", "centers", "lambda", "bandwidth", "column_scales", "held_out")},
            "stages": [{k: t.get(k) for k in ("centers", "bandwidth_factor", "lam", "score", "seconds", "rows",
                                              "cg_steps")} for t in auto.get("trials") or []],
            "detail": f"solver auto -> {auto.get('route')}, {auto.get('centers')} centers"}


def run_svc(family, index, rows, kind):
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC, SVR

    from ...data import load_data

    ds = load_data(data_spec(family, index, rows))
    scaler = StandardScaler().fit(ds.X)
    X, Xt = scaler.transform(ds.X), scaler.transform(ds.X_test)
    y, yt = np.asarray(ds.y), np.asarray(ds.y_test)
    fits = []
    for C in (10.0, 1.0):
        model = SVR(C=C) if kind == "regression" else SVC(C=C)
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
        pred = model.predict(Xt)
        score = ({"rmse": float(np.sqrt(np.mean((pred - yt) ** 2)))} if kind == "regression"
                 else {"accuracy": float(np.mean(pred == yt))})
        fits.append({"C": C, "fit_s": fit_s, **score})
    best = min(fits, key=lambda f: f["rmse"]) if kind == "regression" else max(fits, key=lambda f: f["accuracy"])
    return {**best, "grid": fits, "detail": f"{'SVR' if kind == 'regression' else 'SVC'}(C={best['C']:g}) on z-scored "
                                            "columns, the better of C = 10 and 1 by test score"}


def child_main(argv=None):
    """``python -m kopt.cli.bench.family --child CONFIG --family F --index I --rows N --kind K``: one JSON line."""
    import argparse

    from ...numerics.memory import peak_rss_mb
    from .roofline import machine

    ap = argparse.ArgumentParser(prog="python -m kopt.cli.bench.family")
    ap.add_argument("--child", choices=("kopt", "svc"), required=True)
    ap.add_argument("--family", type=int, required=True)
    ap.add_argument("--index", type=int, required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--kind", required=True)
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    out = (run_kopt if a.child == "kopt" else run_svc)(a.family, a.index, a.rows, a.kind)
    out.update(status="ok", peak_mb=peak_rss_mb(), machine=machine())
    from ...files.atomic import dumps

    print(dumps(out))
    return 0


# -- the parent ----------------------------------------------------------------------------------------
def _write_rows(task, folder):
    """The task's rows as ``.npy`` files for the Falkon child (it does not import kopt)."""
    from ...data import load_data

    ds = load_data(data_spec(task.family, task.index, task.rows))
    for name, a in (("X", ds.X), ("y", ds.y), ("Xt", ds.X_test), ("yt", ds.y_test)):
        np.save(os.path.join(folder, f"{name}.npy"), np.asarray(a))


def fit_line(task, config, time_limit, falkon_python, scratch, log_file=None):
    from .scale import run_child

    if config in ("kopt", "svc"):
        args = ["--child", config, "--family", str(task.family), "--index", str(task.index), "--rows",
                str(task.rows), "--kind", task.kind]
        return run_child(args, time_limit, log_file, _command=[sys.executable, "-m", "kopt.cli.bench.family"])
    if not falkon_python:
        return {"status": "skipped", "why": "no --falkon-python: the interpreter Falkon is installed in"}
    peer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "falkon_peer.py")
    args = ["--data", scratch, "--config", config, "--kind", task.kind]
    return run_child(args, time_limit, log_file, _command=[falkon_python, peer])


def bench(family_tasks, configs, time_limit, falkon_python=None, out=None, svc_rows=SVC_ROWS, command=None,
          log=print) -> list:
    """Every (task, config) line, then the summary line; each appended to ``out`` as it comes."""
    from ...files.atomic import dumps
    from .roofline import machine
    from .scale import prepare, revision  # noqa: F401  (revision: the commit of every line)

    base = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": revision()}
    lines = []

    def emit(line):
        line = {**base, **line}
        lines.append(line)
        text = dumps(line)
        print(text, flush=True)
        if out:
            with open(out, "a", encoding="utf-8") as fh:
                fh.write(text + "\n")

    emit({"kind": "run", "command": command, "machine": machine(), "configs": list(configs)})
    for task in family_tasks:
        emit({"kind": "data", "task": task.describe(), **_prepared(task)})
        scratch = tempfile.mkdtemp(prefix="kopt-family-")
        try:
            if any(c.startswith("falkon") for c in configs) and falkon_python:
                _write_rows(task, scratch)
            for config in configs:
                head = {"kind": "fit", "task": task.describe(), "config": config, "time_limit_s": time_limit}
                if config == "svc" and task.rows > svc_rows:
                    emit({**head, "status": "skipped", "why": f"more than {svc_rows:,} rows"})
                    continue
                log(f"kopt bench family: task {task.index} ({task.kind}, {task.d} columns, {task.rows:,} rows) "
                    f"{config}", file=sys.stderr, flush=True)
                emit({**head, **fit_line(task, config, time_limit, falkon_python, scratch,
                                         out + ".log" if out else None)})
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    emit(summary(lines))
    return lines


def _prepared(task):
    """Generate (or find) the task's rows; the seconds it took."""
    from ...data import load_data
    from ...data.progress import drawing

    t0 = time.perf_counter()
    with drawing(True):
        ds = load_data(data_spec(task.family, task.index, task.rows))
    return {"seconds": round(time.perf_counter() - t0, 2), "data_mb": round(ds.X.nbytes / 2**20, 1)}


def ratios(lines) -> list:
    """Per task and peer: kopt's score against the peer's (accuracy points, or RMSE kopt / peer), kopt's fit over the
    peer's (Falkon: its chosen σ's one fit; with hopt, its tuning and fit together as well), and kopt's peak above
    the data."""
    fits = {}
    for ln in lines:
        if ln.get("kind") == "fit" and ln.get("status") == "ok":
            fits[(ln["task"]["index"], ln["config"])] = ln
    data = {ln["task"]["index"]: ln.get("data_mb") for ln in lines if ln.get("kind") == "data"}
    out = []
    for (index, config), k in sorted(fits.items()):
        if config != "kopt":
            continue
        for peer in PEERS:
            p = fits.get((index, peer))
            if p is None:
                continue
            row = {"index": index, "kind": k["task"]["kind"], "rows": k["task"]["rows"], "peer": peer}
            if k["task"]["kind"] == "regression":
                row["rmse_ratio"] = k["rmse"] / p["rmse"]
            else:
                row["accuracy_points"] = 100.0 * (k["accuracy"] - p["accuracy"])
            row["fit_ratio"] = k["fit_s"] / p["fit_s"]
            if p.get("tune_s") is not None:
                row["fit_ratio_with_tuning"] = k["fit_s"] / (p["fit_s"] + p["tune_s"])
            row["search_share"] = k.get("search_s", 0.0) / k["fit_s"] if k["fit_s"] else None
            row["kopt_peak_above_data_mb"] = k.get("peak_mb", 0.0) - (data.get(index) or 0.0)
            out.append(row)
    return out


def summary(lines) -> dict:
    """The spread over the family of each ratio against each peer: median and worst (accuracy: the lowest points;
    RMSE, fit and peak: the highest ratio)."""
    rows = ratios(lines)
    spread = {}
    for peer in PEERS:
        mine = [r for r in rows if r["peer"] == peer]
        if not mine:
            continue
        entry = {"tasks": len(mine)}
        for key, worst in (("accuracy_points", min), ("rmse_ratio", max), ("fit_ratio", max),
                           ("fit_ratio_with_tuning", max), ("search_share", max), ("kopt_peak_above_data_mb", max)):
            values = [r[key] for r in mine if r.get(key) is not None]
            if values:
                entry[key] = {"median": round(statistics.median(values), 4), "worst": round(worst(values), 4)}
        spread[peer] = entry
    return {"kind": "summary", "per_task": rows, "spread": spread}


def family(args) -> int:
    """``kopt bench family`` (args: family, tasks, first, rows, max_rows, configs, time_limit, falkon_python, out)."""
    from ...errors import KoptError

    configs = list(args.configs or CONFIGS)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise KoptError(f"unknown configuration {', '.join(unknown)}; configurations: {', '.join(CONFIGS)}")
    chosen = tasks(args.family, args.tasks, args.first, args.max_rows, args.rows)
    command = "kopt bench family " + " ".join(sys.argv[3:]) if len(sys.argv) > 3 else "kopt bench family"
    bench(chosen, configs, args.time_limit, args.falkon_python, args.out, args.svc_rows, command)
    return 0


def read_lines(path) -> list:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


if __name__ == "__main__":
    sys.exit(child_main())
