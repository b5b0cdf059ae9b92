"""Probabilities: kopt's calibrated margins against scikit-learn's SVC, and class weights on ijcnn1.

For each binary set (the presets' standard splits; training rows subsampled to --train rows, seeded, test rows to
--test): ``KernelClassifier()`` (solver auto, the loss left to auto: Platt sigmoids on auto's held-out validation scores),
``SVC(probability=True)`` (libsvm's internal 5-fold Platt) and ``CalibratedClassifierCV(SVC())`` (5 folds, sigmoid).
Reported: test log loss, Brier score, ECE over 10 equal-width bins, and the extra fit time each calibration costs
(kopt: report timings' calibration_s; SVC: its fit with probability=True less a plain SVC fit; CalibratedClassifierCV:
its fit less a plain SVC fit), also as a share of the plain fit.  Then ijcnn1 (10% positives): recall by class for
KernelClassifier() with and without class_weight="balanced", and SVC(class_weight="balanced").

    flock /tmp/kopt-cpu.lock python docs/benchmarks/calibration.py        # writes calibration.json here
"""
from __future__ import annotations

import argparse
import bz2
import json
import lzma
import os
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("KOPT_SHARED_DATA", os.path.join(HERE, "..", "..", "..", "shared", "data"))


def _svmlight(name, n_features):
    from sklearn.datasets import load_svmlight_file

    opener = bz2.open if name.endswith(".bz2") else lzma.open
    with opener(os.path.join(DATA, name), "rb") as fh:
        X, y = load_svmlight_file(fh, n_features=n_features)
    return X.toarray().astype(np.float64), (y > 0).astype(int)


def _table(name, sep):
    import pandas as pd

    A = pd.read_csv(os.path.join(DATA, name), sep=sep, header=None).to_numpy(dtype=np.float64)
    return A[:, 1:], A[:, 0].astype(int)


def sets():
    return {
        "ijcnn1": lambda: (_svmlight("ijcnn1_trval.libsvm.bz2", 22), _svmlight("ijcnn1_test.libsvm.bz2", 22)),
        "a9a": lambda: (_svmlight("a9a.xz", 123), _svmlight("a9a.t.xz", 123)),
        "w8a": lambda: _split(_svmlight("w8a.xz", 300)),
        "higgs-12k": lambda: (_table("higgs_lightgbm_train.tsv.xz", "\t"), _table("higgs_h2o_test_5k.csv.xz", ",")),
    }


def _split(Xy):
    X, y = Xy
    perm = np.random.default_rng(0).permutation(len(y))
    cut = int(0.8 * len(y))
    return (X[perm[:cut]], y[perm[:cut]]), (X[perm[cut:]], y[perm[cut:]])


def _sub(X, y, n, seed):
    if len(y) <= n:
        return X, y
    idx = np.sort(np.random.default_rng(seed).choice(len(y), n, replace=False))
    return X[idx], y[idx]


def ece(p, y, bins=10):
    """Expected calibration error of P(y = 1) over ``bins`` equal-width bins."""
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    out = 0.0
    for b in range(bins):
        m = which == b
        if m.any():
            out += m.mean() * abs(p[m].mean() - y[m].mean())
    return float(out)


def scores(p, y):
    from sklearn.metrics import brier_score_loss, log_loss

    p = np.clip(p, 1e-15, 1 - 1e-15)
    return {"log_loss": float(log_loss(y, p, labels=[0, 1])), "brier": float(brier_score_loss(y, p)),
            "ece": ece(p, y), "accuracy": float(np.mean((p > 0.5) == y))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=5000)
    ap.add_argument("--test", type=int, default=5000)
    ap.add_argument("--out", default=os.path.join(HERE, "calibration.json"))
    args = ap.parse_args()
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    import kopt
    from kopt.cli.bench.roofline import run_record
    from kopt.sklearn import KernelClassifier

    warnings.simplefilter("ignore")
    stamp = run_record()
    out = {"kopt": kopt.__version__, "train": args.train, "test": args.test, "sets": {}, "class_weight": None,
           **stamp}
    print(json.dumps(stamp["machine"]))
    loaded = {}
    for name, load in sets().items():
        (Xtr, ytr), (Xte, yte) = load()
        Xtr, ytr = _sub(Xtr, ytr, args.train, 0)
        Xte, yte = _sub(Xte, yte, args.test, 1)
        sc = StandardScaler().fit(Xtr)  # SVC's inputs z-scored as kopt's are
        Ztr, Zte = sc.transform(Xtr), sc.transform(Xte)
        loaded[name] = (Xtr, ytr, Xte, yte, Ztr, Zte)
        row = {}
        t = time.perf_counter()
        est = KernelClassifier().fit(Xtr, ytr)
        wall = time.perf_counter() - t
        extra = est.timings_.get("calibration_s", 0.0)
        row["kopt"] = {**scores(est.predict_proba(Xte)[:, 1], yte), "fit_s": wall - extra, "extra_s": extra,
                       "route": est.route_, "calibrated_on": est.calibration_["rows"]}
        t = time.perf_counter()
        SVC().fit(Ztr, ytr)
        svc_s = time.perf_counter() - t
        t = time.perf_counter()
        svp = SVC(probability=True, random_state=0).fit(Ztr, ytr)
        svp_s = time.perf_counter() - t
        row["SVC(probability=True)"] = {**scores(svp.predict_proba(Zte)[:, 1], yte), "fit_s": svc_s,
                                        "extra_s": svp_s - svc_s}
        t = time.perf_counter()
        cal = CalibratedClassifierCV(SVC(), method="sigmoid", cv=5).fit(Ztr, ytr)
        cal_s = time.perf_counter() - t
        row["CalibratedClassifierCV(SVC())"] = {**scores(cal.predict_proba(Zte)[:, 1], yte), "fit_s": svc_s,
                                                "extra_s": cal_s - svc_s}
        for v in row.values():
            v["extra_share"] = v["extra_s"] / v["fit_s"]
        out["sets"][name] = row
        for k, v in row.items():
            print(f"{name:10s} {k:32s} logloss {v['log_loss']:.4f} brier {v['brier']:.4f} ece {v['ece']:.4f} "
                  f"acc {v['accuracy']:.4f} fit {v['fit_s']:.2f}s extra {v['extra_s']:.2f}s ({v['extra_share']:.3f}x)",
                  flush=True)
    Xtr, ytr, Xte, yte, Ztr, Zte = loaded["ijcnn1"]
    cw = {}
    for label, make, Xa, Xb in [("KernelClassifier()", lambda: KernelClassifier(), Xtr, Xte),
                                ('KernelClassifier(class_weight="balanced")',
                                 lambda: KernelClassifier(class_weight="balanced"), Xtr, Xte),
                                ('SVC(class_weight="balanced")', lambda: SVC(class_weight="balanced"), Ztr, Zte)]:
        est = make().fit(Xa, ytr)
        pred = est.predict(Xb)
        cw[label] = {"recall_negative": float(np.mean(pred[yte == 0] == 0)),
                     "recall_positive": float(np.mean(pred[yte == 1] == 1)), "accuracy": float(np.mean(pred == yte)),
                     "balanced_accuracy": float(0.5 * (np.mean(pred[yte == 0] == 0) + np.mean(pred[yte == 1] == 1)))}
        print(f"ijcnn1 {label:42s} " + " ".join(f"{k} {v:.4f}" for k, v in cw[label].items()), flush=True)
    out["class_weight"] = {"set": "ijcnn1", "positives_train": float(ytr.mean()), "by_estimator": cw}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
