"""``kopt bench peers``: kopt against scikit-learn on the standard splits, side by side, in one run.

For every set, kopt's spec and the scikit-learn configuration it is measured against each run in
a process of their own, one after the other (a peer measured in the same process, or beside a
kopt run, is slowed by thread contention), ``repeat`` times alternating; the medians are printed
as one JSON line per set: kopt's and the peer's metric, fit seconds (data loading excluded),
predict seconds (the test split), peak resident memory (the whole process, loading included) and
the ratios kopt/peer, with the benchmark's targets and whether this run met them.

Both sides read the same data through kopt's loader and the spec's ``data`` section (the same
split); the peer gets what scikit-learn users do: features z-scored with training statistics
(dense sets; the sparse a9a is left as it is, as kopt's spec does), the cal_housing target too.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ...files.atomic import dumps
from .runs import child, peak_mb, summarize


@dataclass(frozen=True)
class BenchSet:
    """One row of the comparison: kopt's spec, the peer, the metric and the targets (kopt first, then kopt/peer)."""

    name: str
    spec: str
    peer: str
    metric: str
    targets: dict = field(default_factory=dict)


SETS = {
    "higgs-12k": BenchSet("higgs-12k", "joker_nystrom_krr_higgs12k", "KernelRidge(alpha=1, rbf)", "accuracy",
                          {"accuracy": (">=", 0.670), "auc": (">=", 0.725), "fit": ("<=", 0.5), "peak_mb": ("<=", 0.5)}),
    "ijcnn1": BenchSet("ijcnn1", "joker_nystrom_svm_ijcnn1", "SVC(C=10, rbf)", "accuracy",
                       {"accuracy": (">=", 0.986), "rel_gap": ("<=", 1e-2), "fit": ("<=", 0.5), "predict": ("<=", 0.5),
                        "peak_mb": ("<=", 1.0)}),
    "a9a": BenchSet("a9a", "joker_nystrom_huber_a9a", "RBFSampler(1000)+RidgeClassifier", "accuracy",
                    {"accuracy": (">=", 0.850), "fit": ("<=", 0.5), "predict": ("<=", 1.0), "peak_mb": ("<=", 0.5)}),
    "cal_housing": BenchSet("cal_housing", "joker_nystrom_krr_cal_housing", "SVR(C=10, rbf)", "rmse",
                            {"rmse": ("<=", 53000.0), "fit": ("<=", 0.5), "predict": ("<=", 1.0), "peak_mb": ("<=", 0.5)}),
}


def spec_path(name: str) -> str:
    """A spec file: a path, or the name of one of kopt's packaged specs."""
    from ...spec.packaged import resolve_spec_arg

    return resolve_spec_arg(name)


# -- the child processes -----------------------------------------------------------------------------
def run_kopt(bench: BenchSet, spec: str, overrides=()) -> dict:
    """Solve kopt's spec (no files written); the figures of one run."""
    import warnings

    import kopt

    s = kopt.load_spec(spec_path(spec), [*overrides, "output.model=false", "output.report=false",
                                         "output.plot=false", "output.checkpoint_every=0"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = kopt.solve(s)
    out = {"config": f"{s['name']} ({s['solver']['name']}, mode {r.info.get('mode', '-')})", **r.metrics,
           "fit_s": r.timings["fit_s"], "predict_s": r.timings["predict_test_s"], "load_s": r.timings["load_s"],
           "peak_mb": peak_mb(), "success": r.success, "n_iter": r.n_iter}
    if r.info.get("rel_gap") is not None:
        out["rel_gap"] = r.info["rel_gap"]
    return out


def _load(bench: BenchSet, spec: str):
    """The set's data as the kopt spec reads it, with scikit-learn's usual preprocessing."""
    import kopt
    from kopt.data import load_data

    from ...numerics.rows import is_sparse

    s = kopt.load_spec(spec_path(spec))
    ds = load_data(s["data"])
    X, y, Xt, yt = ds.X, np.asarray(ds.y, dtype=np.float64), ds.X_test, np.asarray(ds.y_test, dtype=np.float64)
    if not is_sparse(X):
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler().fit(X)
        X, Xt = scaler.transform(X), scaler.transform(Xt)
    return X, y, Xt, yt


def _peer_model(bench: BenchSet):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC, SVR

    if bench.name == "higgs-12k":
        return KernelRidge(alpha=1.0, kernel="rbf")
    if bench.name == "ijcnn1":
        return SVC(C=10.0, kernel="rbf")
    if bench.name == "a9a":
        return make_pipeline(RBFSampler(n_components=1000, gamma=PEER_A9A_GAMMA, random_state=0), RidgeClassifier())
    if bench.name == "cal_housing":
        return SVR(C=10.0, kernel="rbf")
    raise KeyError(bench.name)


#: RBFSampler's gamma on a9a's raw 0/1 features (its default, 1, makes every kernel value ~0 there)
PEER_A9A_GAMMA = 0.02


def run_peer(bench: BenchSet, spec: str) -> dict:
    """Fit and score the scikit-learn peer; the figures of one run."""
    from sklearn.metrics import roc_auc_score

    X, y, Xt, yt = _load(bench, spec)
    model = _peer_model(bench)
    y_fit, mu, sd = y, 0.0, 1.0
    if bench.metric == "rmse":
        mu, sd = float(y.mean()), float(y.std())
        y_fit = (y - mu) / sd
    classes = np.unique(y)
    ridge_classifier = bench.metric == "accuracy" and not hasattr(model, "decision_function")
    if ridge_classifier:  # KernelRidge on ±1 labels, classified by sign (kopt's KRR does the same)
        y_fit = np.where(y == classes[-1], 1.0, -1.0)
    t0 = time.perf_counter()
    model.fit(X, y_fit)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = model.predict(Xt)
    scores = model.decision_function(Xt) if hasattr(model, "decision_function") and bench.metric == "accuracy" else pred
    if ridge_classifier:
        scores, pred = pred, np.where(pred > 0, classes[-1], classes[0])
    predict_s = time.perf_counter() - t0
    out = {"config": bench.peer, "fit_s": fit_s, "predict_s": predict_s, "peak_mb": peak_mb()}
    if bench.metric == "rmse":
        out["rmse"] = float(np.sqrt(np.mean((pred * sd + mu - yt) ** 2)))
    else:
        out["accuracy"] = float(np.mean(pred == yt))
        if np.unique(yt).size == 2:
            out["auc"] = float(roc_auc_score(yt, scores))
    return out


# -- the parent --------------------------------------------------------------------------------------
def _child(side: str, bench: BenchSet, spec: str, overrides, timeout) -> dict:
    args = ["--child", side, "--set", bench.name, "--spec", spec]
    for o in overrides:
        args += ["--set-option", o]
    return child("kopt.cli.bench.peers", args, timeout)


def _judge(bench: BenchSet, kopt_side, ratios):
    verdict = {}
    for key, (op, bound) in bench.targets.items():
        value = ratios.get(key) if key in ("fit", "predict", "peak_mb") else kopt_side.get(key)
        if value is None:
            verdict[key] = None
            continue
        verdict[key] = bool(value >= bound) if op == ">=" else bool(value <= bound)
    return verdict


def compare(bench: BenchSet, repeat=3, spec=None, overrides=(), timeout=3600, log=print) -> dict:
    """Run kopt and the peer ``repeat`` times each, alternating; the set's JSON line as a dict."""
    from .roofline import run_record

    spec = spec or bench.spec
    load0 = os.getloadavg()
    runs = {"kopt": [], "peer": []}
    for r in range(repeat):
        for side in ("kopt", "peer"):
            res = _child(side, bench, spec, overrides, timeout)
            runs[side].append(res)
            log(f"  {bench.name} {side} run {r + 1}/{repeat}: " + (res.get("error") or
                ", ".join(f"{k} {v:.4g}" for k, v in res.items() if isinstance(v, float))), file=sys.stderr)
    k, p = summarize(runs["kopt"]), summarize(runs["peer"])
    ratios = {}
    for key, name in (("fit_s", "fit"), ("predict_s", "predict"), ("peak_mb", "peak_mb")):
        if k.get(key) and p.get(key):
            ratios[name] = k[key] / p[key]
    return {"set": bench.name, "metric": bench.metric, "kopt": k, "peer": p, "ratios": ratios,
            "targets": {key: f"{op} {bound:g}" for key, (op, bound) in bench.targets.items()},
            "met": _judge(bench, k, ratios), "repeat": repeat, "loadavg_before": list(load0),
            "loadavg_after": list(os.getloadavg()), **run_record()}


def peers(args) -> int:
    """``kopt bench peers`` (args: sets, repeat, json, set_option)."""
    names = args.sets or list(SETS)
    unknown = [n for n in names if n not in SETS]
    if unknown:
        from ...errors import KoptError

        raise KoptError(f"unknown benchmark set {', '.join(unknown)}; sets: {', '.join(SETS)}")
    lines = []
    for name in names:
        line = compare(SETS[name], repeat=args.repeat, overrides=args.set_option or ())
        print(dumps(line), flush=True)
        lines.append(line)
    if args.json:
        with open(args.json, "a", encoding="utf-8") as fh:
            for line in lines:
                fh.write(dumps(line) + "\n")
    return 0


def main(argv=None):
    """The child processes' entry point: ``python -m kopt.cli.bench.peers --child kopt|peer --set NAME``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m kopt.cli.bench.peers")
    ap.add_argument("--child", choices=["kopt", "peer"], required=True)
    ap.add_argument("--set", dest="name", choices=list(SETS), required=True)
    ap.add_argument("--spec")
    ap.add_argument("--set-option", action="append", default=[])
    a = ap.parse_args(argv)
    bench = SETS[a.name]
    spec = a.spec or bench.spec
    res = run_kopt(bench, spec, a.set_option) if a.child == "kopt" else run_peer(bench, spec)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
