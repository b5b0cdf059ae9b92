"""Joker against kopt's targets and scikit-learn peers, measured in the same run.

For higgs-12k and ijcnn1 (standard splits) and each Joker model -- Huber, KRR, SVM (L2-SVC), KLR,
from specs/joker_<model>_<data>.yaml -- this script

* records one traced run (holdout accuracy and AUC every quarter epoch; on ijcnn1 on 20,000 seeded test
  rows) for the accuracy/AUC-vs-time plot;
* times ``--repeats`` runs without intermediate holdout scoring, each in a child process whose peak
  resident memory (``ru_maxrss``, data loading included; the peak after loading is reported apart)
  is read back; fit excludes data loading (kopt's ``timings.fit_s``);
* runs the scikit-learn peers the same way: ``KernelRidge(alpha = λ n, kernel='rbf')`` (the same
  problem as Joker-KRR) and ``SVC(C, kernel='rbf')`` with the same Gaussian bandwidth;
* adds single rows for a9a (Huber) and cal_housing (KRR, SVR).

    python docs/benchmarks/joker_bench.py               # writes joker_bench.json and joker_bench_*.png here
    python docs/benchmarks/joker_bench.py --only higgs12k --repeats 1

The machine is shared and noisy: report ratios against the peers of the same run (median of the
repeats, with min and max).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SPECS = os.path.join(ROOT, "specs")
MODELS = ("huber", "krr", "svm", "klr")
DATASETS = {"higgs12k": {"target": {"accuracy": 0.670, "auc": 0.725, "fit_s": 2.8, "rss_mb": 430}},
            "ijcnn1": {"target": {"accuracy": 0.986, "fit_s": 3.0, "predict_s": 2.0, "rss_mb": 220}}}
TRACE_ROWS = {"higgs12k": 0, "ijcnn1": 20000}  # holdout rows scored in the traced run (0: all)
EXTRA = {"a9a": (("huber", "joker_huber_a9a.yaml"),),
         "cal_housing": (("krr", "joker_krr_cal_housing.yaml"), ("svr", "joker_svr_cal_housing.yaml"))}


# -- child processes ---------------------------------------------------------------------------------


def child(job):
    """Run one job; print one JSON line (metrics, timings, memory)."""
    warnings.simplefilter("ignore")
    if job["kind"] == "joker":
        import kopt

        r = kopt.solve(job["spec"], overrides=job.get("overrides", ()))
        out = {"metrics": r.metrics, "fit_s": r.timings["fit_s"], "predict_s": r.timings["predict_test_s"],
               "load_s": r.timings["load_s"], "rss_after_load_mb": r.report["memory"]["peak_rss_after_load_mb"],
               "n_iter": r.n_iter, "rel_gap": r.info["rel_gap"], "gap": r.gap, "success": r.success,
               "epochs": r.info["epochs"], "mode": r.info["mode"], "sigma": r.report["kernel"]["bandwidth"],
               "lambda": r.report["spec"]["model"]["regularizer"]["lambda"], "n_train": r.report["data"]["n_train"]}
        if job.get("trace"):
            out["trace"] = [{k: t[k] for k in ("iteration", "elapsed", "rel_gap", "test_accuracy", "test_auc")
                             if k in t} for t in r.trace if "test_accuracy" in t or "test_rmse" in t]
    else:
        out = peer(job)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("RESULT " + json.dumps(out, default=float), flush=True)


def peer(job):
    """scikit-learn on the same standardized data and the same kernel/λ as the Joker spec."""
    import kopt
    from kopt.api import assemble
    from kopt.numerics.metrics import evaluate

    spec = kopt.load_spec(job["spec"])
    t0 = time.perf_counter()
    problem = assemble(spec)
    load_s = time.perf_counter() - t0
    rss_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    X = problem.X.toarray() if hasattr(problem.X, "tocsr") else np.asarray(problem.X)
    Xt = problem.X_test.toarray() if hasattr(problem.X_test, "tocsr") else np.asarray(problem.X_test)
    X, Xt = X.astype(np.float64), Xt.astype(np.float64)
    y = np.asarray(problem.y, dtype=np.float64)
    gamma = 0.5 / problem.kernel.bandwidth ** 2
    n = X.shape[0]
    if job["kind"] == "kernel_ridge":
        from sklearn.kernel_ridge import KernelRidge

        model = KernelRidge(alpha=problem.lam * n, kernel="rbf", gamma=gamma)
        name = f"KernelRidge(alpha={problem.lam * n:.4g}, rbf, gamma={gamma:.4g})"
    else:
        from sklearn.svm import SVC

        C = job.get("C") or 1.0 / (problem.lam * n)
        model = SVC(C=C, kernel="rbf", gamma=gamma, cache_size=200)
        name = f"SVC(C={C:.4g}, rbf, gamma={gamma:.4g})"
    t1 = time.perf_counter()
    model.fit(X, y)
    fit_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    scores = model.decision_function(Xt) if hasattr(model, "decision_function") else model.predict(Xt)
    predict_s = time.perf_counter() - t2
    metrics = evaluate(problem.preprocessor.target, problem.y_test_raw, scores, problem.preprocessor)
    return {"peer": name, "metrics": metrics, "fit_s": fit_s, "predict_s": predict_s, "load_s": load_s,
            "rss_after_load_mb": rss_load}


def run_child(job):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(job)], capture_output=True,
                       text=True, cwd=ROOT)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"child failed: {job}\n{p.stderr[-3000:]}")


def repeat(job, k):
    runs = [run_child(job) for _ in range(k)]
    fits = [r["fit_s"] for r in runs]
    med = runs[int(np.argsort(fits)[len(fits) // 2])]
    return {**med, "fit_s_median": float(np.median(fits)), "fit_s_min": float(min(fits)),
            "fit_s_max": float(max(fits)), "peak_rss_mb_max": float(max(r["peak_rss_mb"] for r in runs)),
            "repeats": k}


# -- driver ----------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args()
    if args.child:
        return child(json.loads(args.child))
    out_path = os.path.join(HERE, "joker_bench.json")
    out = json.load(open(out_path)) if os.path.exists(out_path) else {}
    from kopt.cli.bench.roofline import run_record

    stamp = run_record()  # the file's and each set's entry: with --only, the other sets keep their own
    out.update(stamp, load_average_at_start=os.getloadavg())
    todo = args.only or list(DATASETS) + list(EXTRA)
    for ds in todo:
        rows = out.setdefault(ds, {})
        rows.update(stamp)
        if ds in DATASETS:
            rows["target"] = DATASETS[ds]["target"]
            for m in MODELS:
                spec = os.path.join(SPECS, f"joker_{m}_{ds}.yaml")
                traced = run_child({"kind": "joker", "spec": spec, "trace": True,
                                    "overrides": [f"solver.holdout_every={_quarter_epoch(ds)}",
                                                  f"solver.holdout_rows={TRACE_ROWS[ds]}"]})
                timed = repeat({"kind": "joker", "spec": spec, "overrides": ["solver.holdout_every=0"]}, args.repeats)
                rows[m] = {"timed": timed, "trace": traced["trace"], "traced_fit_s": traced["fit_s"]}
                print(ds, m, {k: timed[k] for k in ("metrics", "fit_s_median", "peak_rss_mb_max", "rel_gap")},
                      flush=True)
            if not args.no_peers:
                krr = os.path.join(SPECS, f"joker_krr_{ds}.yaml")
                if ds == "higgs12k":
                    rows["peer_kernel_ridge"] = repeat({"kind": "kernel_ridge", "spec": krr}, args.repeats)
                    print(ds, "KernelRidge", rows["peer_kernel_ridge"]["metrics"], flush=True)
                svm = os.path.join(SPECS, f"joker_svm_{ds}.yaml")
                job = {"kind": "svc", "spec": svm}
                if ds == "ijcnn1":
                    job["C"] = 10.0  # the fastest peer: SVC RBF C = 10
                rows["peer_svc"] = repeat(job, args.repeats)
                print(ds, "SVC", rows["peer_svc"]["metrics"], flush=True)
        else:
            for m, f in EXTRA[ds]:
                rows[m] = {"timed": repeat({"kind": "joker", "spec": os.path.join(SPECS, f),
                                            "overrides": ["solver.holdout_every=0"]}, max(1, args.repeats // 3))}
                print(ds, m, rows[m]["timed"]["metrics"], rows[m]["timed"]["fit_s_median"], flush=True)
        out["load_average_at_end"] = os.getloadavg()
        with open(out_path, "w") as fh:
            json.dump(out, fh, indent=1, default=float)
    plot(out)


def _quarter_epoch(ds):
    n = {"higgs12k": 7500, "ijcnn1": 49990}[ds]
    return max(1, n // 512 // 4)


def plot(out):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    for ds in DATASETS:
        if ds not in out:
            continue
        rows = out[ds]
        metrics = ("test_accuracy", "test_auc") if ds == "higgs12k" else ("test_accuracy",)
        fig, axes = plt.subplots(1, len(metrics), figsize=(6 * len(metrics), 4), squeeze=False)
        for ax, key in zip(axes[0], metrics):
            for m in MODELS:
                if m not in rows:
                    continue
                tr = rows[m]["trace"]
                ax.plot([t["elapsed"] for t in tr], [t[key] for t in tr], "o-", ms=3, label=f"Joker-{m.upper()}")
            for peer in ("peer_kernel_ridge", "peer_svc"):
                if peer in rows:
                    p = rows[peer]
                    k = key.replace("test_", "")
                    ax.plot([p["fit_s_median"]], [p["metrics"][k]], "k*" if "svc" in peer else "kD", ms=9,
                            label=p["peer"].split("(")[0] + " (fit, median)")
            tgt = rows["target"].get(key.replace("test_", ""))
            if tgt:
                ax.axhline(tgt, color="r", ls=":", label="target")
            ax.set(xlabel="seconds (fit, holdout scoring in the trace included)", ylabel=key.replace("test_", ""),
                   title=f"{ds}: {key.replace('test_', '')} against time")
            ax.set_xscale("log")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(HERE, f"joker_bench_{ds}.png"), dpi=110)


if __name__ == "__main__":
    main()
