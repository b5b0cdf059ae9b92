"""Default rules by measurement: kopt's test metric under candidate default rules, per set.

    python docs/benchmarks/defaults.py rules [--sets a9a,w8a]   # candidate rules -> defaults_rules.json
    python docs/benchmarks/defaults.py rules-1/n [--sets ...]   # the same at λ = 1/n (standardize: auto)
    python docs/benchmarks/defaults.py rules-lambda --lambdas 1e-5,1e-6   # auto / scale at other fixed λ
    python docs/benchmarks/defaults.py tuned [--sets ...]       # kopt.selection.tune's optimum -> defaults_tuned.json
    python docs/benchmarks/defaults.py auto --sets a9a [--runs auto,fixed,chosen]   # lambda: auto -> defaults_auto.json
    python docs/benchmarks/defaults.py table                    # the table of docs/defaults.md

Each set keeps one model (loss, kernel, fast Joker route: primal Newton-CG on Nystrom centers; the
exact dual on mnist-10k, faster there) and
varies what a default decides: the preprocessing of the features and the bandwidth rule, at the
default λ.  ``tuned`` searches λ (1e-6..1e-3, 4 values) x the median bandwidth at factor ½ and 1 with ``kopt.selection.tune`` (a seeded 20% validation split, the
same model, the set's best preprocessing) and scores the refitted best spec on the test split.
Seeded: every run uses seed 0.  Prints one JSON line per run and writes the JSON files next to
this script.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

_NYS = {"kind": "nystrom", "count": 1500}
_PRIMAL = {"name": "joker", "mode": "primal", "iterations": 50, "tol": 1.0e-3, "feature_memory_mb": 0}
# one model per set: the packaged Joker specs' models where there is one (docs/benchmarks.md), else the
# same route with the squared hinge (the SVM of the issue)
SETS = {
    "higgs-12k": {"data": {"source": "higgs-12k"}, "loss": {"name": "square", "target": "binary"},
                  "kernel": "gaussian", "features": {"kind": "nystrom", "count": 2000}},
    "ijcnn1": {"data": {"source": "ijcnn1"}, "loss": {"name": "squared_hinge"}, "kernel": "gaussian",
               "solver": {"tol": 1.0e-2}},
    "a9a": {"data": {"source": "a9a"}, "loss": {"name": "huber", "target": "binary", "delta": 1.0},
            "kernel": "gaussian", "features": {"kind": "nystrom", "count": 600}},
    "w8a": {"data": {"source": "w8a", "test_fraction": 0.2, "split_seed": 0}, "loss": {"name": "squared_hinge"},
            "kernel": "gaussian", "features": {"kind": "nystrom", "count": 1000}, "solver": {"tol": 1.0e-2}},
    "cal_housing": {"data": {"source": "cal_housing", "split_seed": 0, "standardize_target": True},
                    "loss": {"name": "square"}, "kernel": "laplacian"},
    "reuters": {"data": {"source": "reuters"}, "loss": {"name": "squared_hinge"}, "kernel": "gaussian",
                "features": {"kind": "nystrom", "count": 1000}, "solver": {"tol": 1.0e-2}},
    # the exact kernel: one-vs-rest over 10 classes on 3,000 Nystrom centers took 65 s a fit, the dual 8-40 s
    "mnist-10k": {"data": {"source": "mnist"}, "loss": {"name": "squared_hinge"}, "kernel": "gaussian",
                  "features": {}, "solver": {"mode": "exact", "iterations": 100000, "tol": 1.0e-2},
                  "tuned_lambdas": "1e-5,1e-4,1e-3"},  # the exact dual at λ = 1e-6 is too slow for the grid
    # the same rows on the primal route (1,000 Nystrom centers): its cost hardly grows as λ falls, where the exact
    # dual's does -- lambda: auto's path and the tuned grid on the exact route did not fit in a 5-minute CPU hold
    "mnist-10k-nystrom": {"data": {"source": "mnist"}, "loss": {"name": "squared_hinge"}, "kernel": "gaussian",
                          "features": {"kind": "nystrom", "count": 1000}, "solver": {"tol": 1.0e-2}},
}
#: candidate preprocessing rules (data.standardize values) and bandwidth rules (kernel keys)
PREPROCESS = ("true", "false", "auto")
BANDWIDTHS = {"median": {"bandwidth": "median"}, "median/2": {"bandwidth": "median", "bandwidth_factor": 0.5},
              "scale": {"bandwidth": "scale"}}
LAMBDA_DEFAULT = 1.0e-4
#: training rows of each set, for the λ rule λ = 1/n (λ n = 1, LIBSVM's C = 1); checked against the run
N_TRAIN = {"higgs-12k": 7500, "ijcnn1": 49990, "a9a": 32561, "w8a": 39799, "cal_housing": 16512,
           "reuters": 7770, "mnist-10k": 8000, "mnist-10k-nystrom": 8000}


def spec_for(name, standardize, kernel_keys, lam=LAMBDA_DEFAULT):
    s = SETS[name]
    data = {**s["data"], "standardize": {"true": True, "false": False}.get(standardize, standardize)}
    return {
        "name": f"defaults_{name}", "seed": 0, "data": data,
        "model": {"loss": dict(s["loss"]), "kernel": {"name": s["kernel"], **kernel_keys},
                  "regularizer": {"name": "l2", "lambda": lam}, "form": "dual",
                  "features": dict(s.get("features", _NYS))},
        "solver": {**_PRIMAL, **s.get("solver", {})}, "backend": "numpy",
        "output": {"dir": f"runs/defaults_{name}"},
    }


def metric_of(metrics):
    return ("rmse", metrics["rmse"]) if "rmse" in metrics else ("accuracy", metrics["accuracy"])


def run_rules(names, lambda_rule="1e-4", preprocess=PREPROCESS, only=None):
    import kopt

    rows = []
    for name in names:
        lam = 1.0 / N_TRAIN[name] if lambda_rule == "1/n" else float(lambda_rule)
        for pre in preprocess:
            for bw, keys in BANDWIDTHS.items():
                if only and f"{pre}/{bw}" not in only:
                    continue
                t0 = time.perf_counter()
                r = kopt.solve(spec_for(name, pre, keys, lam))
                assert r.report["data"]["n_train"] == N_TRAIN[name], (name, r.report["data"]["n_train"])
                key, value = metric_of(r.metrics)
                row = {"set": name, "standardize": pre, "bandwidth": bw, "lambda_rule": lambda_rule,
                       "lambda": lam, key: value,
                       "sigma": r.model.kernel.bandwidth, "rel_gap": _rel_gap(r), "fit_s": r.timings["fit_s"],
                       "wall_s": time.perf_counter() - t0}
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def _rel_gap(r):
    if r.gap is None or r.objective is None:
        return None
    return float(r.gap / max(abs(r.objective), abs(r.dual), 1e-300))


#: the runs of the ``auto`` part: the defaults (auto / scale, lambda: auto); the same rules at the old fixed
#: λ = 1e-4 (the overhead's baseline: one fixed-λ solve); and a cold fixed-λ solve at the λ auto chose
AUTO_RUNS = ("auto", "fixed", "chosen")


def run_auto(names, runs=AUTO_RUNS):
    """The defaults (``standardize: auto``, ``bandwidth: scale``, ``lambda: auto``) on each set, beside
    fixed-λ solves of the same spec; one JSON row per run."""
    import kopt

    rows = []
    done = {(r["set"], r["run"]): r for r in _read(os.path.join(HERE, "defaults_auto.json"))}
    for name in names:
        for run in runs:
            if run == "chosen":
                chose = next((r for r in rows if r["set"] == name and r["run"] == "auto"), done.get((name, "auto")))
                if chose is None:
                    continue
                lam = chose["lambda"]
            else:
                lam = "auto" if run == "auto" else LAMBDA_DEFAULT
            t0 = time.perf_counter()
            r = kopt.solve(spec_for(name, "auto", {"bandwidth": "scale"}, lam),
                           progress=os.environ.get("KOPT_BENCH_PROGRESS") == "1")  # a line per path point on stderr
            wall = time.perf_counter() - t0
            assert r.report["data"]["n_train"] == N_TRAIN[name], (name, r.report["data"]["n_train"])
            key, value = metric_of(r.metrics)
            row = {"set": name, "run": run, "lambda": r.report["spec"]["model"]["regularizer"]["lambda"], key: value,
                   "standardized": r.report["data"]["standardized"],
                   "standardize_auto": r.report["data"]["standardize_auto"], "sigma": r.model.kernel.bandwidth,
                   "rel_gap": _rel_gap(r), "n_iter": r.n_iter, "fit_s": r.timings["fit_s"], "wall_s": wall,
                   "load_s": r.timings["load_s"], "load_1min": os.getloadavg()[0]}
            if r.lambda_auto:
                a = r.lambda_auto
                row.update(select_s=a["select_s"], refit_warm=a["refit_warm"], validation_metric=a["metric"],
                           path=[{k: p[k] for k in ("lambda", "score", "fit_s", "iterations", "warm", "refine")}
                                 for p in a["path"]], stopped_early=a["stopped_early"])
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def run_tuned(names, rules):
    import kopt

    rows = []
    for name in names:
        pre = best_preprocessing(name, rules)
        spec = spec_for(name, pre, {"bandwidth": "median"})
        lams = SETS[name].get("tuned_lambdas", "1e-6:1e-3:log:4")
        grid = [f"model.regularizer.lambda={lams}", "model.kernel.bandwidth_factor=0.5,1"]
        t0 = time.perf_counter()
        out = kopt.tune(spec, grid=grid, validation=0.2, refit=True)
        key, value = metric_of(out.refit.metrics)
        row = {"set": name, "standardize": pre, "best": out.best_params, key: value,
               "validation": out.best_score, "tune_s": time.perf_counter() - t0}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def best_preprocessing(name, rules):
    """The set's preprocessing rule with the best test metric over the bandwidth rules (oracle choice)."""
    mine = [r for r in rules if r["set"] == name and r.get("lambda_rule", "1e-4") == "1e-4"]
    if not mine:  # no candidate rules measured on this model: the default rule
        return "auto"
    regression = "rmse" in mine[0]
    best = (min if regression else max)(mine, key=lambda r: r["rmse"] if regression else r["accuracy"])
    return best["standardize"]


def _fmt(r):
    return f"{r['rmse']:,.0f}" if "rmse" in r else f"{100 * r['accuracy']:.2f}"


def markdown(rules):
    """The per-set table of docs/defaults.md: every candidate rule at λ = 1e-4 (and auto/scale at 1/n)."""
    cols = [(p, b) for p in PREPROCESS for b in BANDWIDTHS]
    print("| set | " + " | ".join(f"{p} / {b}" for p, b in cols) + " | auto / scale, λ = 1/n |")
    print("| --- |" + " --- |" * (len(cols) + 1))
    for name in SETS:
        got = {(r["standardize"], r["bandwidth"], r.get("lambda_rule", "1e-4")): r for r in rules if r["set"] == name}
        cells = [_fmt(got[(p, b, "1e-4")]) if (p, b, "1e-4") in got else "" for p, b in cols]
        n = got.get(("auto", "scale", "1/n"))
        print(f"| {name} | " + " | ".join(cells) + f" | {_fmt(n) if n else ''} |")


def against_tuned(rules, tuned):
    """Per set: the old and new defaults, λ = 1/n, and the tuned optimum (docs/defaults.md)."""
    print("| set | old default (true / median) | new default (auto / scale) | auto / scale, λ = 1e-5 | λ = 1e-6 "
          "| tuned (kopt tune) | its λ, median factor | new default's loss |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in SETS:
        got = {(r["standardize"], r["bandwidth"], r.get("lambda_rule", "1e-4")): r for r in rules if r["set"] == name}
        t = next((x for x in tuned if x["set"] == name), None)
        old, new = got.get(("true", "median", "1e-4")), got.get(("auto", "scale", "1e-4"))
        lam5, lam6 = got.get(("auto", "scale", "1e-5")), got.get(("auto", "scale", "1e-6"))
        loss = ""
        if t and new:
            loss = (f"{100 * (new['rmse'] - t['rmse']) / t['rmse']:+.1f}% RMSE" if "rmse" in t
                    else f"{100 * (t['accuracy'] - new['accuracy']):+.2f} points")
        best = (f"{t['best'].get('model.regularizer.lambda'):g}, {t['best'].get('model.kernel.bandwidth_factor'):g}"
                if t else "")
        print(f"| {name} | " + " | ".join(_fmt(r) if r else "" for r in (old, new, lam5, lam6, t)) + f" | {best} | {loss} |")


def _loss(row, t):
    """The default's loss against the tuned optimum: points of accuracy, or % of RMSE (positive: worse)."""
    if "rmse" in t:
        return 100.0 * (row["rmse"] - t["rmse"]) / t["rmse"], "% RMSE", 2.0
    return 100.0 * (t["accuracy"] - row["accuracy"]), " points", 0.5


def against_tuned_auto(auto, tuned):
    """docs/defaults.md: per set, the defaults with lambda: auto against λ = 1e-4 and the tuned optimum,
    and the cost of auto against one fixed-λ solve (wall seconds, same rules, same lock hold)."""
    print("| set | λ = 1e-4 (auto / scale) | **defaults** (auto / scale, λ auto) | λ auto chose | tuned (kopt tune) "
          "| tuned λ, median factor | defaults' loss | within target | auto s (selection) | fixed λ = 1e-4 s "
          "| fixed at the chosen λ s | overhead (vs 1e-4, vs chosen) |")
    print("| --- |" + " --- |" * 11)
    worst = None
    for name in SETS:
        got = {r["run"]: r for r in auto if r["set"] == name}
        a, f, c = got.get("auto"), got.get("fixed"), got.get("chosen")
        t = next((x for x in tuned if x["set"] == name), None)
        loss = ok = ""
        if a and t:
            value, unit, target = _loss(a, t)
            loss, ok = f"{value:+.2f}{unit}", ("yes" if value <= target else f"**no** (by {value - target:.2f})")
            worst = max(worst or (value / target, name), (value / target, name))
        best = (f"{t['best'].get('model.regularizer.lambda'):g}, {t['best'].get('model.kernel.bandwidth_factor'):g}"
                if t else "")
        cost = (f"{a['wall_s']:.1f} ({a['select_s']:.1f})", f"{f['wall_s']:.1f}", f"{c['wall_s']:.1f}" if c else "",
                f"{a['wall_s'] / f['wall_s']:.1f}x, " + (f"{a['wall_s'] / c['wall_s']:.1f}x" if c else "")) \
            if a and f else ("", "", "", "")
        print(f"| {name} | {_fmt(f) if f else ''} | {_fmt(a) if a else 'not measured'} | {a['lambda']:g} |" if a
              else f"| {name} | {_fmt(f) if f else ''} | not measured | |", end="")
        print(f" {_fmt(t) if t else ''} | {best} | {loss} | {ok} | " + " | ".join(cost) + " |")
    if worst:
        print(f"\nworst loss / target: {worst[0]:.2f} ({worst[1]})")


def table(rules, tuned):
    """Per rule: the worst loss against the tuned optimum over the sets (points, or % of RMSE)."""
    against_tuned_auto(_read(os.path.join(HERE, "defaults_auto.json")), tuned)
    print()
    markdown(rules)
    print()
    against_tuned(rules, tuned)
    print()
    tuned_by = {t["set"]: t for t in tuned}
    losses = {}
    for r in rules:
        t = tuned_by.get(r["set"])
        if t is None:
            continue
        if "rmse" in r:
            loss = 100.0 * (r["rmse"] - t["rmse"]) / t["rmse"]
        else:
            loss = 100.0 * (t["accuracy"] - r["accuracy"])
        rule = (r["standardize"], r["bandwidth"], r.get("lambda_rule", "1e-4"))
        losses.setdefault(rule, {})[r["set"]] = loss
    for rule, per in sorted(losses.items(), key=lambda kv: max(kv[1].values())):
        print(f"{rule[0]:>6} {rule[1]:>9} {rule[2]:>5}  worst {max(per.values()):6.2f}  " +
              "  ".join(f"{k} {v:+.2f}" for k, v in per.items()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["rules", "rules-1/n", "rules-lambda", "tuned", "auto", "table"])
    ap.add_argument("--runs", default=",".join(AUTO_RUNS), help="auto part: which runs (auto, fixed, chosen)")
    ap.add_argument("--lambdas", default="1e-5,1e-6", help="rules-lambda: the fixed λ values tried (auto / scale)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--only", help="rules part: only these PREPROCESS/BANDWIDTH pairs, e.g. auto/scale,true/median")
    a = ap.parse_args(argv)
    names = a.sets.split(",")
    rules_path = os.path.join(HERE, "defaults_rules.json")
    tuned_path = os.path.join(HERE, "defaults_tuned.json")
    if a.part == "rules":
        only = a.only.split(",") if a.only else None
        _merge(rules_path, run_rules(names, only=only), ("set", "standardize", "bandwidth", "lambda_rule"))
    elif a.part == "rules-lambda":  # other fixed λ with the chosen rules (auto / scale)
        for lam in a.lambdas.split(","):
            _merge(rules_path, run_rules(names, lam, ("auto",), ["auto/scale"]),
                   ("set", "standardize", "bandwidth", "lambda_rule"))
    elif a.part == "rules-1/n":  # λ = 1/n with the preprocessing rule auto
        _merge(rules_path, run_rules(names, "1/n", ("auto",)), ("set", "standardize", "bandwidth", "lambda_rule"))
    elif a.part == "auto":
        _merge(os.path.join(HERE, "defaults_auto.json"), run_auto(names, a.runs.split(",")), ("set", "run"))
    elif a.part == "tuned":
        _merge(tuned_path, run_tuned(names, _read(rules_path)), ("set",))
    else:
        table(_read(rules_path), _read(tuned_path))


def _read(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _merge(path, rows, key):
    """Add ``rows``, each stamped with its run (run_record()), to the JSON list at ``path``, replacing rows with the
    same key."""
    from kopt.cli.bench.roofline import run_record

    def ident(r):  # rows written before the λ rule was a key are the λ = 1e-4 runs
        return tuple(r.get(k, "1e-4" if k == "lambda_rule" else None) for k in key)

    stamp = run_record()
    rows = [{**r, **stamp} for r in rows]
    new = {ident(r) for r in rows}
    kept = [r for r in _read(path) if ident(r) not in new]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(kept + rows, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
