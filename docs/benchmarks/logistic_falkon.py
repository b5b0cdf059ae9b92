"""KernelClassifier(loss="logistic") against Falkon's LogisticFalkon at the same centers, on HIGGS-shaped rows.

    FALKON_PYTHON=/path/to/falkon/venv/bin/python python docs/benchmarks/logistic_falkon.py --rows 1000000

The rows are the ``higgs-shaped`` preset's (28 standard-normal columns, labels from a fixed rule on the first 6, 10% of
them flipped: the best possible accuracy is 90%), its 100,000 test rows.  Each configuration runs in a process of its
own, one after another:

* ``kopt``: ``KernelClassifier(loss="logistic", random_state=0).fit(X, y)`` on the arrays: ``solver: auto`` chooses
  the column scales, the centers, the bandwidth and λ on a sample, then ``newton_pcg`` solves every row, certified
  by its duality gap;
* ``falkon_same``: ``falkon.LogisticFalkon`` at kopt's center count (``features.count``) and λ, σ = kopt's bandwidth
  on the columns z-scored and scaled as kopt scaled them (kopt's choices given to it), its documented schedule
  (penalties 1e-3, 1e-5, then λ three times; 3, 3, 3, 8, 8 CG steps), kernel blocks held to 100 MB
  (``max_cpu_mem=1e8``), torch on the process's cores;
* ``falkon_scale``: the same at σ of scikit-learn's ``gamma="scale"`` rule on every z-scored column, as a user
  starts.

Each line: fit seconds, the process's peak resident memory (and the same after the data were read), test accuracy,
the certificate where there is one, kopt's choices.  The result file (``logistic_falkon.json`` beside this script)
holds the date, commit, machine, BLAS kernels, load average and command, and the ratios kopt / falkon_same.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
#: LogisticFalkon's documented schedule: penalties before the final λ, and the CG steps of each Newton step
FALKON_PENALTIES = (1e-3, 1e-5)
FALKON_ITERS = (3, 3, 3, 8, 8)
FALKON_MEMORY = 1e8


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _child_kopt(rows, folder):
    """kopt's fit; the z-scored rows and labels go to ``folder`` for Falkon's children."""
    import kopt
    from kopt.data import load_data
    from kopt.sklearn import KernelClassifier

    ds = load_data({"source": "higgs-shaped", "options": {"rows": int(rows)}})
    X, y, Xt, yt = np.asarray(ds.X), np.asarray(ds.y), np.asarray(ds.X_test), np.asarray(ds.y_test)
    data_mb = _peak_mb()
    clf = KernelClassifier(loss="logistic", random_state=0)
    t0 = time.perf_counter()
    clf.fit(X, y)
    fit_s = time.perf_counter() - t0
    peak = _peak_mb()
    acc = float(np.mean(clf.predict(Xt) == yt))
    auto, info = clf.auto_, clf.solver_info_
    mu, sd = X.mean(axis=0, dtype=np.float64), X.std(axis=0, dtype=np.float64)
    for name, a in (("X", X), ("Xt", Xt)):
        np.save(os.path.join(folder, f"{name}.npy"), ((a - mu) / sd).astype(np.float32))
    np.save(os.path.join(folder, "y.npy"), np.where(y > 0.5, 1.0, -1.0).astype(np.float32))
    np.save(os.path.join(folder, "yt.npy"), np.where(yt > 0.5, 1.0, -1.0))
    return {"config": "kopt", "fit_s": fit_s, "peak_mb": peak, "data_mb": data_mb, "accuracy": acc,
            "certificate": {"rel_gap": info.get("rel_gap"), "status": info.get("status"), "passes": info.get("passes"),
                            "tol": clf.spec_["solver"].get("tol"), "newton_steps": clf.n_iter_},
            "timings": dict(clf.timings_),
            "auto": {k: auto.get(k) for k in ("route", "centers", "lambda", "bandwidth", "column_scales", "search_s",
                                              "why")},
            "n_centers": info.get("n_centers"), "kopt": kopt.__version__}


def _child_falkon(config, folder, M, lam, sigma, scales):
    import falkon
    import torch

    X = np.load(os.path.join(folder, "X.npy"), mmap_mode="r")
    Xt = np.load(os.path.join(folder, "Xt.npy"))
    y = np.load(os.path.join(folder, "y.npy"))
    yt = np.load(os.path.join(folder, "yt.npy"))
    if scales is not None:
        keep = np.asarray(scales) > 0
        s = np.asarray(scales, dtype=np.float32)[keep]
        X, Xt = np.ascontiguousarray(X[:, keep] * s), np.ascontiguousarray(Xt[:, keep] * s)
    else:
        X = np.ascontiguousarray(X)
    if sigma is None:  # gamma = 1 / (d var(X)) of the z-scored rows: 2 sigma^2 = d
        sigma = float(np.sqrt(X.shape[1] * float(X.var()) / 2.0))
    data_mb = _peak_mb()
    opt = falkon.FalkonOptions(use_cpu=True, keops_active="no", max_cpu_mem=FALKON_MEMORY)
    kernel = falkon.kernels.GaussianKernel(sigma, opt=opt)
    penalties = list(FALKON_PENALTIES) + [lam] * (len(FALKON_ITERS) - len(FALKON_PENALTIES))
    model = falkon.LogisticFalkon(kernel=kernel, penalty_list=penalties, iter_list=list(FALKON_ITERS),
                                  loss=falkon.gsc_losses.LogisticLoss(kernel), M=int(M), seed=0, options=opt)
    Xtr, Ytr = torch.from_numpy(X), torch.from_numpy(y[:, None])
    t0 = time.perf_counter()
    model.fit(Xtr, Ytr)
    fit_s = time.perf_counter() - t0
    peak = _peak_mb()
    scores = model.predict(torch.from_numpy(Xt)).numpy()[:, 0]
    return {"config": config, "fit_s": fit_s, "peak_mb": peak, "data_mb": data_mb,
            "accuracy": float(np.mean(np.sign(scores) == yt)), "M": int(M), "sigma": sigma, "penalties": penalties,
            "iterations": list(FALKON_ITERS), "columns": int(X.shape[1]), "torch_threads": int(torch.get_num_threads()),
            "falkon": getattr(falkon, "__version__", None), "torch": torch.__version__}


def _run(cmd, timeout):
    """One configuration's process: its JSON line, or a line saying why there is none."""
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timed_out", "seconds": time.perf_counter() - t0}
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"status": "failed", "stderr": out.stderr[-2000:]}
    return {"status": "ok", **json.loads(lines[-1])}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--falkon-python", default=os.environ.get("FALKON_PYTHON", sys.executable),
                   help="the Python of a virtual environment with falkon and torch")
    p.add_argument("--configs", nargs="+", default=["kopt", "falkon_same", "falkon_scale"])
    p.add_argument("--time-limit", type=float, default=3600.0)
    p.add_argument("--out", default=os.path.join(HERE, "logistic_falkon.json"))
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--folder", help=argparse.SUPPRESS)
    p.add_argument("--plan", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child == "kopt":
        print(json.dumps(_child_kopt(a.rows, a.folder), default=float))
        return
    if a.child:
        plan = json.loads(a.plan)
        print(json.dumps(_child_falkon(a.child, a.folder, **plan), default=float))
        return
    me = os.path.abspath(__file__)
    lines, kopt_line = [], None
    with tempfile.TemporaryDirectory() as folder:
        for config in a.configs:
            if config == "kopt":
                line = _run([sys.executable, me, "--child", "kopt", "--rows", str(a.rows), "--folder", folder],
                            a.time_limit)
                kopt_line = line if line.get("status") == "ok" else None
            elif kopt_line is None:
                line = {"status": "skipped", "why": "the falkon lines take kopt's choices: run the kopt config first"}
            else:
                auto = kopt_line["auto"]
                plan = {"M": auto["centers"], "lam": auto["lambda"],
                        "sigma": auto["bandwidth"] if config == "falkon_same" else None,
                        "scales": auto["column_scales"] if config == "falkon_same" else None}
                line = _run([a.falkon_python, me, "--child", config, "--folder", folder, "--plan", json.dumps(plan)],
                            a.time_limit)
            line = {"config": config, "rows": a.rows, **line}
            lines.append(line)
            print(json.dumps(line, default=float), flush=True)
    same = next((line for line in lines if line["config"] == "falkon_same" and line.get("status") == "ok"), None)
    ratios = None
    if kopt_line is not None and same is not None:
        ratios = {"fit": kopt_line["fit_s"] / same["fit_s"], "peak_memory": kopt_line["peak_mb"] / same["peak_mb"],
                  "accuracy_points": 100 * (kopt_line["accuracy"] - same["accuracy"])}
        print(json.dumps({"kopt / falkon_same": ratios}))
    from kopt.cli.bench.roofline import run_record

    # the command as it reproduces the run: the falkon interpreter by its variable, the default output file
    command = (f"FALKON_PYTHON=<a falkon venv>/bin/python python docs/benchmarks/logistic_falkon.py --rows {a.rows} "
               f"--configs {' '.join(a.configs)}")
    result = {"benchmark": "logistic_falkon", **run_record(), "command": command, "loadavg": list(os.getloadavg()),
              "lines": lines, "ratios": ratios}
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1, default=float)
        fh.write("\n")


if __name__ == "__main__":
    main()
