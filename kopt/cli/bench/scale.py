"""``kopt bench scale``: kopt's routes and the large-scale peers from 10^5 rows up, on generated data.

Sets (generated offline into ``$KOPT_DATA/generated``, docs/datasets.md): ``higgs-shaped`` (28 features, an
exact Bayes accuracy of 90%), ``digits-8v6`` and ``digits-10`` (MNIST-8M-style deformed digits, tested
on real held-out ones).  The largest size asked for is generated first (its rows/s are reported on a
``data`` line); the smaller sizes are its first rows.

Configurations, each fit in a process of its own (its own process group: killed with its children past
``--time-limit``, and reported ``timed_out``):

* ``spec``: a spec naming only the data, the square loss and a gaussian kernel (``solver: auto``);
* ``estimator``: ``KernelClassifier()`` on the arrays;
* ``joker_rff``: the main job's route, specs/huber_higgs.yaml's Joker on 16,384 random features with its
  λ = 2^-7 / n (binary sets only);
* ``falkon``: Falkon (falkon + torch, the benchmark-only ``bench-scale`` extra) on the CPU, M centers,
  gaussian kernel of scikit-learn's ``gamma="scale"`` width; ``falkon_lean``: Falkon at M = 4,096 with its kernel
  blocks held to 100 MB, at σ x 0.5, 1 and 2 of that width, each its own fit (the best σ's line, the grid's cost);
  ``falkon_hopt``: Falkon tuned by its own optimiser (``falkon.hopt``'s ``NystromCompReg`` on 20,000 seeded rows: a
  σ per column from that width, the penalty and the centers), then M = 4,096 on every row, its tuning seconds
  beside its fit's (:func:`kopt.cli.bench.falkon_peer.falkon_hopt`, the ``kopt bench family`` peer's); the Falkon
  configurations are skipped with a line when Falkon is not installed;
* ``nystroem_sgd`` and ``nystroem_ridge``: scikit-learn's ``Nystroem(1000)`` then ``SGDClassifier`` or
  ``RidgeClassifier``;
* ``svc``: ``SVC(C=10)``, with at most 600 s: once it times out on a set, larger sizes of that set are
  skipped (``skipped`` lines say so).

Features are given to the peers as a scikit-learn user would: z-scored where kopt's ``standardize: auto``
z-scores them (higgs-shaped), pixels / 255 for the digits.  Each JSON line: the set, rows, config,
``status``, fit and predict seconds, the process's peak resident memory (data pages it touched included),
test accuracy, the certificate where the route reports one, what auto chose, the CPU flags and the BLAS
kernels (threadpoolctl), the date and commit.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np

#: set -> (preset, task)
SETS = {
    "higgs-shaped": ("higgs-shaped", "binary"),
    "digits-8v6": ("deformed-digits-8v6", "binary"),
    "digits-10": ("deformed-digits", "multiclass"),
}
ROWS = (100_000, 300_000, 1_000_000, 3_000_000)
#: asked for when memory allows (:func:`default_rows`)
LARGEST = 8_000_000
CONFIGS = ("spec", "estimator", "joker_rff", "falkon", "falkon_lean", "falkon_hopt", "nystroem_sgd", "nystroem_ridge",
           "svc")
#: SVC's own limit (seconds): past it, the sizes above are skipped
SVC_LIMIT_S = 600.0
#: Nystroem components of the scikit-learn peers, and Falkon's centers
PEER_COMPONENTS = 1000
FALKON_CENTERS = 10_000
FALKON_PENALTY = 1e-6
FALKON_ITERATIONS = 20
#: Falkon's kernel blocks are held to this share of the memory available (its ``max_cpu_mem``; unbounded, its CPU path
#: asked for more than the machine had: docs/design/memory.md)
FALKON_MEMORY_SHARE = 0.5
#: ``falkon_lean``: Falkon at the center count and block memory of its own lean setting (M = 4,096, its kernel blocks
#: held to 100 MB), at three bandwidths, each its own fit: σ of ``gamma="scale"`` times these factors
FALKON_LEAN_CENTERS = 4096
FALKON_LEAN_MEMORY = 1e8
FALKON_LEAN_SIGMAS = (0.5, 1.0, 2.0)


#: the deformed digits' real test digits (``--test-digits``: the last N of the 10,000 mnist digits; None: the
#: preset's 2,000, 389 of them 8s and 6s).  Set by :func:`scale` and by the child's ``--test-digits``.
TEST_DIGITS = None


def data_spec(name: str, rows: int) -> dict:
    preset, _ = SETS[name]
    options = {"rows": int(rows)}
    if TEST_DIGITS and name.startswith("digits"):
        options["test_digits"] = int(TEST_DIGITS)
    return {"source": preset, "options": options}


def spec_of(name: str, rows: int) -> dict:
    """The defaults' spec: only the data, the square loss and a gaussian kernel."""
    return {"name": f"scale_{name}_{rows}", "data": data_spec(name, rows),
            "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "output": {"model": False, "report": False, "plot": False}}


def joker_spec(name: str, rows: int) -> dict:
    """specs/huber_higgs.yaml with this set's data and its λ converted for ``rows`` training rows."""
    import yaml

    from ...spec.packaged import resolve_spec_arg

    with open(resolve_spec_arg("huber_higgs"), encoding="utf-8") as fh:
        spec = yaml.safe_load(fh)
    spec["name"] = f"scale_joker_{name}_{rows}"
    spec["data"] = data_spec(name, rows)
    spec["model"]["regularizer"]["lambda"] = 2.0 ** -7 / rows  # Zhang & Lai's λ_J = 2^-7 in kopt's scaling
    spec["solver"]["holdout_every"] = 0
    spec["output"] = {"model": False, "report": False, "plot": False, "checkpoint_every": 0}
    return spec


def default_rows(sets) -> list:
    """ROWS, and 8*10^6 when every set's training rows fit 1.5x in the memory available now."""
    from ...numerics.memory import available_bytes

    widest = max(784 * 4 if SETS[s][0].startswith("deformed") else 28 * 4 for s in sets)
    fits = 1.5 * LARGEST * (widest + 8) + 0.5e9 < available_bytes()
    return list(ROWS) + ([LARGEST] if fits else [])


# -- the child processes -------------------------------------------------------------------------------
def _load(name, rows):
    from ...data import load_data

    return load_data(data_spec(name, rows))


def _peer_features(name, ds):
    """The rows as a scikit-learn user feeds them: z-scored (higgs-shaped), or pixels / 255 (digits)."""
    X, Xt = ds.X, ds.X_test
    if SETS[name][0].startswith("deformed"):
        return np.multiply(X, np.float32(1 / 255)), np.multiply(Xt, np.float32(1 / 255))
    mean = np.asarray(X.mean(axis=0, dtype=np.float64), dtype=np.float32)
    scale = np.asarray(X.std(axis=0, dtype=np.float64), dtype=np.float32)
    return (X - mean) / scale, (Xt - mean) / scale


def _gamma_scale(X, rows=20_000, seed=0):
    """scikit-learn's ``gamma="scale"``, 1 / (d Var X), on a seeded subsample."""
    idx = np.random.default_rng(seed).choice(X.shape[0], min(rows, X.shape[0]), replace=False)
    return 1.0 / (X.shape[1] * float(np.var(np.asarray(X[np.sort(idx)], dtype=np.float64))))


def _timed(fit, predict):
    t0 = time.perf_counter()
    fit()
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = predict()
    return fit_s, time.perf_counter() - t0, pred


def run_config(name: str, rows: int, config: str) -> dict:
    """One fit of one configuration on one size (in a child process): what its JSON line reports."""
    task = SETS[name][1]
    warnings.simplefilter("ignore")
    if config in ("spec", "joker_rff"):
        import kopt

        spec = spec_of(name, rows) if config == "spec" else joker_spec(name, rows)
        r = kopt.solve(spec, progress=config == "spec")  # auto's log on the child's stderr (--out FILE.log keeps it)
        auto = r.auto or {}
        cert = {k: r.info[k] for k in ("rel_gap", "gap", "duality_gap", "primal", "dual") if k in r.info}
        out = {"accuracy": r.metrics.get("accuracy"), "fit_s": r.timings["fit_s"] + r.timings.get("auto_s", 0.0),
               "search_s": r.timings.get("auto_s", 0.0), "predict_s": r.timings.get("predict_test_s"),
               "certificate": cert or None, "success": r.success, "n_iter": r.n_iter}
        if config == "spec":
            out["auto"] = {k: auto.get(k) for k in ("route", "centers", "lambda", "bandwidth", "column_scales",
                                                    "column_check", "why", "final_work_flops", "budget", "held_out")}
            # where the time went: each stage's trials (centers, λ, score, seconds) and the solve's own timings
            out["stages"] = [{k: t.get(k) for k in ("centers", "bandwidth", "lam", "score", "seconds", "rows",
                                                    "cg_steps")} for t in auto.get("trials") or []]
            out["timings"] = dict(r.timings)
            out["detail"] = f"solver auto -> {auto.get('route')}, {auto.get('centers')} centers"
        else:
            out["detail"] = (f"joker on {spec['model']['features']['count']} random features, "
                             f"{spec['solver']['iterations']} iterations, lambda {spec['model']['regularizer']['lambda']:.3g}")
        return out
    ds = _load(name, rows)
    y, yt = np.asarray(ds.y), np.asarray(ds.y_test)
    if config == "estimator":
        from ...sklearn import KernelClassifier

        est = KernelClassifier()
        fit_s, predict_s, pred = _timed(lambda: est.fit(ds.X, y), lambda: est.predict(ds.X_test))
        return {"accuracy": float(np.mean(pred == yt)), "fit_s": fit_s, "predict_s": predict_s, "certificate": None,
                "auto": {"route": est.route_, "centers": est.n_features_, "lambda": est.lam_},
                "detail": f"KernelClassifier() -> {est.route_}, {est.n_features_} centers"}
    X, Xt = _peer_features(name, ds)
    gamma = _gamma_scale(X)
    if config == "falkon":
        return _run_falkon(X, y, Xt, yt, gamma, task)
    if config == "falkon_lean":
        return _run_falkon_lean(X, y, Xt, yt, gamma, task)
    if config == "falkon_hopt":
        return _run_falkon_hopt(X, y, Xt, yt, gamma, task)
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifier, SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC

    if config == "svc":
        model, detail = SVC(C=10.0, gamma="scale"), "SVC(C=10, gamma='scale')"
    else:
        last = SGDClassifier(random_state=0) if config == "nystroem_sgd" else RidgeClassifier()
        model = make_pipeline(Nystroem(gamma=gamma, n_components=PEER_COMPONENTS, random_state=0), last)
        detail = f"Nystroem({PEER_COMPONENTS}, gamma='scale') + {type(last).__name__}()"
    fit_s, predict_s, pred = _timed(lambda: model.fit(X, y), lambda: model.predict(Xt))
    return {"accuracy": float(np.mean(pred == yt)), "fit_s": fit_s, "predict_s": predict_s, "certificate": None,
            "detail": detail}


def _run_falkon(X, y, Xt, yt, gamma, task, centers=FALKON_CENTERS, max_mem=None):
    import falkon  # noqa: F401  (ImportError: the parent reports the configuration as skipped)
    import torch
    from falkon import Falkon, FalkonOptions
    from falkon.kernels import GaussianKernel

    from ...numerics.memory import available_bytes

    classes = np.unique(y)
    if task == "binary":
        Y = np.where(y == classes[-1], 1.0, -1.0)[:, None]
    else:
        Y = (y[:, None] == classes[None, :]).astype(np.float64)
    sigma = float(np.sqrt(1.0 / (2.0 * gamma)))  # exp(-|x-y|^2 / (2 sigma^2)) = exp(-gamma |x-y|^2)
    M = min(centers, X.shape[0])
    memory = FALKON_MEMORY_SHARE * available_bytes() if max_mem is None else max_mem
    model = Falkon(kernel=GaussianKernel(sigma=sigma), penalty=FALKON_PENALTY, M=M, maxiter=FALKON_ITERATIONS, seed=0,
                   options=FalkonOptions(use_cpu=True, keops_active="no", max_cpu_mem=memory))
    Xtr, Ytr = torch.from_numpy(np.ascontiguousarray(X, np.float32)), torch.from_numpy(Y.astype(np.float32))
    Xte = torch.from_numpy(np.ascontiguousarray(Xt, np.float32))
    fit_s, predict_s, scores = _timed(lambda: model.fit(Xtr, Ytr), lambda: model.predict(Xte).numpy())
    pred = np.where(scores[:, 0] > 0, classes[-1], classes[0]) if task == "binary" else classes[np.argmax(scores, 1)]
    return {"accuracy": float(np.mean(pred == yt)), "fit_s": fit_s, "predict_s": predict_s, "certificate": None,
            "detail": f"Falkon(M={M}, gaussian sigma {sigma:.3g}, penalty {FALKON_PENALTY:g}, {FALKON_ITERATIONS} CG "
                      f"iterations, max_cpu_mem {memory:.3g}) on the CPU", "peer_library": torch_library(torch)}


def torch_library(torch):
    """What Falkon's arithmetic runs on: torch's version, its BLAS as its build reports it, and its threads (the
    ``machine`` record names NumPy's and SciPy's BLAS only: torch links its own, statically)."""
    built = [line.strip(" -") for line in torch.__config__.show().splitlines()]
    blas = next((line for line in built if "Math Kernel Library" in line or "OpenBLAS" in line), None)
    return {"torch": torch.__version__, "blas": blas, "threads": int(torch.get_num_threads())}


def _run_falkon_lean(X, y, Xt, yt, gamma, task):
    """Falkon at M = 4,096 with 100 MB kernel blocks, one fit per σ of :data:`FALKON_LEAN_SIGMAS`: the line is the best
    σ's (by test accuracy: σ given to it), with every σ's accuracy and fit, and the grid's whole fit time."""
    fits = []
    for f in FALKON_LEAN_SIGMAS:
        fits.append((f, _run_falkon(X, y, Xt, yt, gamma * f ** -2, task, centers=FALKON_LEAN_CENTERS,
                                    max_mem=FALKON_LEAN_MEMORY)))
    f, best = max(fits, key=lambda item: item[1]["accuracy"])
    return {**best, "sigma_factor": f, "grid": [{"sigma_factor": g, "accuracy": r["accuracy"], "fit_s": r["fit_s"]}
                                                 for g, r in fits],
            "grid_fit_s": sum(r["fit_s"] for _, r in fits),
            "detail": best["detail"] + f"; the best of sigma x{', x'.join(f'{g:g}' for g in FALKON_LEAN_SIGMAS)} "
                                       "of the scale rule, each its own fit"}


def _run_falkon_hopt(X, y, Xt, yt, gamma, task):
    """Falkon tuned by ``falkon.hopt`` (:func:`.falkon_peer.falkon_hopt`, every column's σ starting at the scale
    rule's), then fit at M = 4,096 with 100 MB kernel blocks: the line's ``fit_s`` is that fit's, ``tune_s`` the
    tuning's."""
    import torch
    from falkon import FalkonOptions

    from . import falkon_peer

    options = FalkonOptions(use_cpu=True, keops_active="no", max_cpu_mem=FALKON_LEAN_MEMORY)
    out = falkon_peer.falkon_hopt(np.ascontiguousarray(X, np.float32), y, np.ascontiguousarray(Xt, np.float32), yt,
                                  task, options, sigma0=float(np.sqrt(1.0 / (2.0 * gamma))))
    return {**out, "predict_s": None, "certificate": None, "peer_library": torch_library(torch)}


def child_main(argv=None):
    """``python -m kopt.cli.bench.scale --child CONFIG --set NAME --rows N``: one JSON line on stdout."""
    import argparse

    from ...numerics.memory import peak_rss_mb
    from .roofline import machine

    ap = argparse.ArgumentParser(prog="python -m kopt.cli.bench.scale")
    ap.add_argument("--child", choices=CONFIGS, required=True)
    ap.add_argument("--set", dest="name", choices=list(SETS), required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--test-digits", type=int)
    ap.add_argument("--falkon-sigmas", type=float, nargs="+")
    a = ap.parse_args(argv)
    global TEST_DIGITS, FALKON_LEAN_SIGMAS
    TEST_DIGITS = a.test_digits
    if a.falkon_sigmas:
        FALKON_LEAN_SIGMAS = tuple(a.falkon_sigmas)
    if a.child.startswith("falkon"):
        try:
            import falkon  # noqa: F401
        except ImportError as exc:
            print(json.dumps({"status": "skipped", "why": f"falkon is not installed ({exc}); pip install "
                                                          "'kopt[bench-scale]' (docs/benchmarks.md)"}))
            return 0
    out = run_config(a.name, a.rows, a.child)
    out.update(status="ok", peak_mb=peak_rss_mb(), machine=machine())
    from ...files.atomic import dumps

    print(dumps(out))
    return 0


# -- the parent ----------------------------------------------------------------------------------------
def run_child(args: list, time_limit: float, log_file=None, _command=None) -> dict:
    """Run ``python -m kopt.cli.bench.scale *args`` in a process group of its own; kill the whole group past
    ``time_limit`` seconds.  The JSON object of its last stdout line, or a ``timed_out``/``error`` one.  ``log_file``:
    the child's stderr (its progress lines) is appended there as it is written, so a child killed at its time limit
    leaves its log up to then.  ``_command``: what runs instead of the child module (tests)."""
    t0 = time.perf_counter()
    log = open(log_file, "a", encoding="utf-8") if log_file else None
    if log is not None:
        log.write(f"# {' '.join(args)}\n")
        log.flush()
    try:
        command = [sys.executable, "-m", "kopt.cli.bench.scale"] if _command is None else _command
        proc = subprocess.Popen([*command, *args], stdout=subprocess.PIPE,
                                stderr=log if log is not None else subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=time_limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"status": "timed_out", "wall_s": round(time.perf_counter() - t0, 1),
                    "why": f"killed after its time limit of {time_limit:g} s"
                           + (f"; its log up to then: {log_file}" if log_file else "")}
    finally:
        if log is not None:
            log.close()
    wall = round(time.perf_counter() - t0, 1)
    if proc.returncode != 0:
        if err is None:  # the child's stderr went to the log
            with open(log_file, encoding="utf-8", errors="replace") as fh:
                err = "".join(fh.readlines()[-4:])
        tail = (err or out).strip().splitlines()[-4:]
        return {"status": "error", "wall_s": wall, "why": f"exit {proc.returncode}: " + " | ".join(tail)}
    try:
        line = json.loads(out.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"status": "error", "wall_s": wall, "why": "no JSON line on stdout"}
    line["wall_s"] = wall
    return line


def revision() -> str | None:
    """The checkout's short commit (None outside a git checkout)."""
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def prepare(name: str, rows: int) -> dict:
    """Generate (or find) the set at ``rows`` rows; the ``data`` line."""
    from ...data.progress import drawing

    t0 = time.perf_counter()
    with drawing(True):
        ds = _load(name, rows)
    info = ds.info
    digits = {"test_digits": TEST_DIGITS} if TEST_DIGITS and name.startswith("digits") else {}
    return {"kind": "data", "set": name, "rows": rows, "n_test": info["n_test"], **digits,
            "seconds": round(time.perf_counter() - t0, 2),
            "generated_now": info.get("generated_generated_now"), "rows_per_s": info.get("generated_rows_per_s"),
            "bayes_accuracy": info.get("bayes_accuracy")}


def bench(sets, rows, configs, time_limit, out=None, log=print) -> list:
    """Every (set, rows, config) line, largest data first generated; each appended to ``out`` as it comes."""
    from ...files.atomic import dumps
    from .roofline import run_record

    base = {**run_record(), "commit": revision()}
    lines = []

    def emit(line):
        line = {**base, **line}
        lines.append(line)
        text = dumps(line)
        print(text, flush=True)
        if out:
            with open(out, "a", encoding="utf-8") as fh:
                fh.write(text + "\n")

    for name in sets:
        emit(prepare(name, max(rows)))
        svc_out = None
        for n in sorted(rows):
            for config in configs:
                head = {"kind": "fit", "set": name, "rows": n, "config": config, "time_limit_s": time_limit}
                if config == "joker_rff" and SETS[name][1] != "binary":
                    emit({**head, "status": "skipped", "why": "the main job's huber loss is binary"})
                    continue
                if config == "svc" and svc_out is not None:
                    emit({**head, "status": "skipped", "why": f"SVC did not finish within {SVC_LIMIT_S:g} s at "
                                                              f"{svc_out:,} rows"})
                    continue
                limit = min(time_limit, SVC_LIMIT_S) if config == "svc" else time_limit
                log(f"kopt bench scale: {name} {n:,} rows {config} (limit {limit:g} s)", file=sys.stderr, flush=True)
                extra = ["--test-digits", str(TEST_DIGITS)] if TEST_DIGITS and name.startswith("digits") else []
                if config == "falkon_lean":
                    extra += ["--falkon-sigmas", *(f"{f:g}" for f in FALKON_LEAN_SIGMAS)]
                res = run_child(["--child", config, "--set", name, "--rows", str(n), *extra], limit,
                                log_file=out + ".log" if out else None)
                if config == "svc" and res["status"] == "timed_out":
                    svc_out = n
                emit({**head, "time_limit_s": limit, **res})
    return lines


# -- the plot -------------------------------------------------------------------------------------------
def plot(lines, path):
    """Test error and fit time against rows, log-log, one line per set and configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fits = [ln for ln in lines if ln.get("kind") == "fit" and ln.get("status") == "ok" and ln.get("accuracy") is not None]
    fig, (ax_err, ax_t) = plt.subplots(1, 2, figsize=(11, 4.2))
    keys = sorted({(ln["set"], ln["config"]) for ln in fits})
    colours = {c: f"C{i}" for i, c in enumerate(CONFIGS)}  # one colour per configuration, one marker per set
    markers = {s: m for s, m in zip(SETS, ("o", "s", "^"))}
    for s, c in keys:
        pts = sorted((ln["rows"], 1.0 - ln["accuracy"], ln["fit_s"]) for ln in fits if ln["set"] == s and ln["config"] == c)
        r, e, t = (np.array(v) for v in zip(*pts))
        style = {"color": colours.get(c), "marker": markers.get(s, "o"), "label": f"{s}: {c}"}
        ax_err.plot(r, e, **style)
        ax_t.plot(r, t, **style)
    for s in sorted({ln["set"] for ln in lines if ln.get("bayes_accuracy")}):
        bayes = next(ln["bayes_accuracy"] for ln in lines if ln.get("set") == s and ln.get("bayes_accuracy"))
        ax_err.axhline(1.0 - bayes, color="grey", ls="--", lw=1, label=f"{s}: Bayes error")
    for ax, what in ((ax_err, "test error (1 - accuracy)"), (ax_t, "fit seconds")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("training rows")
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.legend(fontsize=7, loc="upper left")
    dates = sorted({f"{ln.get('date')}, {ln.get('commit')}" for ln in lines})
    fig.suptitle("kopt bench scale (" + "; ".join(dates) + ")", fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def read_lines(path) -> list:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def scale(args) -> int:
    """``kopt bench scale`` (args: sets, rows, configs, time_limit, out, plot, plot_only)."""
    from ...errors import KoptError
    from .runs import chosen_sets

    sets = chosen_sets(args.sets, SETS)
    configs = list(args.configs or CONFIGS)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise KoptError(f"unknown configuration {', '.join(unknown)}; configurations: {', '.join(CONFIGS)}")
    if args.plot_only:
        if not (args.out and os.path.isfile(args.out)):
            raise KoptError("--plot-only draws the lines of --out FILE; give an existing JSON-lines file")
        print(plot(read_lines(args.out), args.plot or "scale.png"))
        return 0
    rows = sorted(args.rows or default_rows(sets))
    global TEST_DIGITS, FALKON_LEAN_SIGMAS
    TEST_DIGITS = getattr(args, "test_digits", None)
    if getattr(args, "falkon_sigmas", None):
        FALKON_LEAN_SIGMAS = tuple(args.falkon_sigmas)
    lines = bench(sets, rows, configs, args.time_limit, args.out)
    if args.plot:
        print(plot(read_lines(args.out) if args.out else lines, args.plot), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(child_main())
