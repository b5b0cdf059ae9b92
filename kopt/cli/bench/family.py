"""``kopt bench family``: kopt's defaults against the peers on a family of generated tasks no default was tuned on.

The tasks are ``data.source: task-family`` (the dataset preset of that name): task i of family F, each with its own
column count (4 to 60), share of relevant columns (10% to 100%), label noise (0 to 20%), kind (binary, multiclass,
regression) and rows (10⁴ to 10⁶, capped by ``--max-rows``).  Draw the family from a seed no rule was developed on
(``--family``): what is reported is the spread of the ratios to the peers over the family (median and worst), not
one task.  ``--sets`` adds the public sets at hand (those of ``kopt bench defaults``) as tasks of their own.

Configurations, each fit in a process of its own with a time limit:

* ``kopt``: the spec ``KernelClassifier()`` / ``KernelRegressor()`` fit: the data, the loss left to auto (the square
  loss for a real target) and a Gaussian kernel (``solver: auto``);
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

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class Entry:
    """One task of the benchmark: a generated task of the family, or a public set.  ``key`` names it in the lines
    (``F:I`` for task I of family F, the set's name); ``kind`` is binary, multiclass or regression; ``data`` the
    spec's data section; ``info`` what the lines say of it."""

    key: str
    kind: str
    data: dict
    info: dict

    def describe(self) -> dict:
        return {"key": self.key, "kind": self.kind, **self.info}


def data_spec(family, index, rows):
    return {"source": "task-family", "options": {"family": int(family), "index": int(index), "rows": int(rows),
                                                 "test_rows": TEST_ROWS}}


def spec_of(entry):
    """The defaults' spec, as ``KernelClassifier()`` and ``KernelRegressor()`` fit: the data, the loss left to auto
    for class labels (the square loss for a real target) and a Gaussian kernel."""
    loss = {"name": "square"} if entry.kind == "regression" else {"name": "auto"}
    return {"name": f"family_{entry.key.replace(':', '_')}", "data": dict(entry.data),
            "model": {"loss": loss, "kernel": {"name": "gaussian"}},
            "output": {"model": False, "report": False, "plot": False}}


def tasks(family, count, first=0, max_rows=None, rows=None):
    """The family's tasks ``first .. first + count - 1`` with their rows (``rows`` given, else the draw's, at most
    ``max_rows``)."""
    from kopt.contract.registry import registry

    preset = registry().get("dataset", "task-family")
    out = []
    for i in range(first, first + count):
        t = preset(family=family, index=i).drawn()
        n = int(rows) if rows else min(t.rows, int(max_rows)) if max_rows else t.rows
        out.append(Entry(f"{family}:{i}", t.kind, data_spec(family, i, n), {**t.describe(), "rows": n}))
    return out


def public_sets(names):
    """The public sets ``names`` (``kopt bench defaults``' sets and their splits) as tasks."""
    from .defaults import SETS

    kinds = {"binary": "binary", "multiclass": "multiclass", "real": "regression"}
    return [Entry(name, kinds[SETS[name][1]], dict(SETS[name][0]), {"set": name}) for name in names]


# -- the child processes --------------------------------------------------------------------------------
def _score(metrics, kind):
    return {"rmse": metrics.get("rmse")} if kind == "regression" else {"accuracy": metrics.get("accuracy")}


def run_kopt(entry):
    import kopt

    kind = entry.kind
    r = kopt.solve(spec_of(entry), progress=True)  # auto's log on stderr
    auto = r.auto or {}
    return {**_score(r.metrics, kind), "fit_s": r.timings["fit_s"] + r.timings.get("auto_s", 0.0),
            "search_s": r.timings.get("auto_s", 0.0), "success": r.success,
            "auto": {k: auto.get(k) for k in ("route", "centers", "lambda", "bandwidth", "column_scales", "held_out",
                                              "loss", "centers_rule", "column_check")},
            "stages": [{k: t.get(k) for k in ("centers", "bandwidth_factor", "lam", "score", "seconds", "rows",
                                              "cg_steps")} for t in auto.get("trials") or []],
            "detail": f"solver auto -> {auto.get('route')}, {auto.get('centers')} centers"}


def run_svc(entry):
    import scipy.sparse as sp
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC, SVR

    from ...data import load_data

    kind = entry.kind
    ds = load_data(entry.data)
    if sp.issparse(ds.X):  # sparse rows as they are (kopt's standardize: auto leaves them too)
        X, Xt = ds.X, ds.X_test
    else:
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
    """``python -m kopt.cli.bench.family --child CONFIG --entry JSON``: one JSON line."""
    import argparse

    from ...numerics.memory import peak_rss_mb
    from .roofline import machine

    ap = argparse.ArgumentParser(prog="python -m kopt.cli.bench.family")
    ap.add_argument("--child", choices=("kopt", "svc"), required=True)
    ap.add_argument("--entry", required=True, help="the task as JSON: key, kind, data, info")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    out = (run_kopt if a.child == "kopt" else run_svc)(Entry(**json.loads(a.entry)))
    out.update(status="ok", peak_mb=peak_rss_mb(), machine=machine())
    from ...files.atomic import dumps

    print(dumps(out))
    return 0


# -- the parent ----------------------------------------------------------------------------------------
def _write_rows(entry, folder):
    """The task's rows as ``.npy`` files for the Falkon child (it does not import kopt); sparse rows densified."""
    import scipy.sparse as sp

    from ...data import load_data

    ds = load_data(entry.data)
    for name, a in (("X", ds.X), ("y", ds.y), ("Xt", ds.X_test), ("yt", ds.y_test)):
        a = a.toarray() if sp.issparse(a) else a
        np.save(os.path.join(folder, f"{name}.npy"), np.asarray(a, dtype=np.float32 if name.startswith("X") else None))


def fit_line(task, config, time_limit, falkon_python, scratch, log_file=None):
    from .scale import run_child

    if config in ("kopt", "svc"):
        args = ["--child", config, "--entry", json.dumps(dataclasses.asdict(task))]
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
    from .roofline import machine, run_record

    # every line says when, at which commit, by which command and on which machine (a child's own record is kept)
    base = {**run_record(), "machine": machine()}
    if command:
        base["command"] = command
    lines = []

    def emit(line):
        line = {**base, **line}
        lines.append(line)
        text = dumps(line)
        print(text, flush=True)
        if out:
            with open(out, "a", encoding="utf-8") as fh:
                fh.write(text + "\n")

    emit({"kind": "run", "configs": list(configs)})
    for task in family_tasks:
        prepared = _prepared(task)
        emit({"kind": "data", "task": task.describe(), **prepared})
        scratch = tempfile.mkdtemp(prefix="kopt-family-")
        try:
            if any(c.startswith("falkon") for c in configs) and falkon_python:
                _write_rows(task, scratch)
            for config in configs:
                head = {"kind": "fit", "task": task.describe(), "config": config, "time_limit_s": time_limit}
                if config == "svc" and prepared["rows"] > svc_rows:
                    emit({**head, "status": "skipped", "why": f"more than {svc_rows:,} rows"})
                    continue
                log(f"kopt bench family: {task.key} ({task.kind}, {prepared['rows']:,} rows) {config}",
                    file=sys.stderr, flush=True)
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
        ds = load_data(task.data)
    X = ds.X
    nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if hasattr(X, "indptr") else X.nbytes
    return {"seconds": round(time.perf_counter() - t0, 2), "data_mb": round(nbytes / 2**20, 1),
            "rows": int(X.shape[0]), "columns": int(X.shape[1])}


def ratios(lines) -> list:
    """Per task and peer: kopt's score against the peer's (accuracy points, or RMSE kopt / peer), kopt's fit over the
    peer's (Falkon: its chosen σ's one fit; with hopt, its tuning and fit together as well), and kopt's peak above
    the data."""
    fits = {}
    for ln in lines:
        if ln.get("kind") == "fit" and ln.get("status") == "ok":
            fits[(ln["task"]["key"], ln["config"])] = ln
    data = {ln["task"]["key"]: ln.get("data_mb") for ln in lines if ln.get("kind") == "data"}
    out = []
    for (index, config), k in sorted(fits.items()):
        if config != "kopt":
            continue
        for peer in PEERS:
            p = fits.get((index, peer))
            if p is None:
                continue
            row = {"key": index, "kind": k["task"]["kind"], "rows": k["task"].get("rows"), "peer": peer}
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
    """``kopt bench family`` (args: family, tasks, first, rows, max_rows, sets, configs, time_limit, falkon_python,
    svc_rows, out)."""
    from ...errors import KoptError
    from .defaults import SETS
    from .runs import chosen_sets

    configs = list(args.configs or CONFIGS)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise KoptError(f"unknown configuration {', '.join(unknown)}; configurations: {', '.join(CONFIGS)}")
    chosen = tasks(args.family, args.tasks, args.first, args.max_rows, args.rows) if args.tasks else []
    chosen += public_sets(chosen_sets(args.sets, SETS)) if args.sets else []
    bench(chosen, configs, args.time_limit, args.falkon_python, args.out, args.svc_rows)
    return 0


def read_lines(path) -> list:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


if __name__ == "__main__":
    sys.exit(child_main())
