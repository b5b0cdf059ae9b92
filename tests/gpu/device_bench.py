"""The GPU check's comparison: every solver family solved with ``backend: cupy`` against NumPy.

``python tests/gpu/device_bench.py compare`` solves the quick start and one spec of each solver family
(:data:`CASES`) twice, with ``backend: numpy`` and with ``backend: cupy``, and checks

* every holdout metric within 0.1 points (accuracy and AUC: 0.001 absolute; RMSE and the other
  error metrics: 0.1% relative),
* the primal objective and the dual within float32 rounding: a relative difference of at most
  :data:`OBJECTIVE_RTOL` = 2⁻¹⁶ (256 float32 units of 2⁻²⁴: the runs differ only in the order of
  float32 sums, cuBLAS against OpenBLAS),

and reports the iteration counts, gaps, the largest difference of the test decision values and
both wall times.  Each case runs in its own process under its own time limit (a hang or a
crash on the GPU costs that case, not the rest) and prints one JSON line; ``--out DIR`` also
appends them to ``DIR/compare.jsonl``.

``--dry-run`` (or ``KOPT_DEVICE_DRY_RUN=1``) runs the same code with NumPy on both sides, so
everything but the CuPy calls is exercised on a machine without a GPU; there both runs must be
bit-identical (same spec, seed and backend).  Both solves get the same arrays, read once; ``--rows N`` cuts them to
the first N training and N/2 test rows and ``--tiny`` also caps iterations and sizes (the CPU test uses both).

``features`` and ``joker`` (device roofline, the feature engine and Joker's iteration on the
device) live in :mod:`device_rates`; this module's command line dispatches to them.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

#: float32 rounding for objectives: 256 units of the float32 unit roundoff 2⁻²⁴
OBJECTIVE_RTOL = 2.0 ** -16
#: 0.1 points: accuracy-like metrics (fractions) absolute, error metrics relative
METRIC_ATOL = 1e-3
METRIC_RTOL = 1e-3
#: metrics compared in absolute points (fractions in [0, 1]); the rest relative
POINT_METRICS = ("accuracy", "auc", "balanced_accuracy", "r2")

#: the packaged preset every case without packaged data is moved to (a bare GPU machine has no other data)
HIGGS12K = {"source": "higgs-12k", "standardize": True}


@dataclass(frozen=True)
class Case:
    """One comparison: a packaged spec, what it is for, and the changes both backends get."""

    name: str
    spec: str
    family: str
    changes: dict = field(default_factory=dict)  # merged into the spec (both backends)
    tiny: dict = field(default_factory=dict)  # merged on top with --tiny
    three_classes: bool = False  # the labels split into 3 classes (:func:`three_classes`): no packaged set has more


CASES = (  # the most telling first: a stage that runs out of time loses the last ones
    Case("quickstart", "quickstart", "joker features (the quick start)", tiny={"solver": {"iterations": 5}}),
    Case("joker_exact", "joker_huber_higgs12k", "joker exact", tiny={"solver": {"iterations": 4}}),
    Case("joker_features", "joker_klr_higgs12k", "joker features (logistic)",
         {"model": {"features": {"count": 4096}}, "solver": {"mode": "features"}},
         tiny={"solver": {"iterations": 4}, "model": {"features": {"count": 512}}}),
    Case("joker_primal", "joker_nystrom_krr_higgs12k", "joker primal (Nystrom)",
         tiny={"solver": {"iterations": 3}, "model": {"features": {"count": 100}}}),
    Case("krr_exact", "krr_exact_higgs12k", "krr_exact"),
    Case("auto", "auto_higgs12k", "auto (the defaults: the search, then krr_nystrom)",
         {"solver": {"name": "auto", "max_centers": 1024}}, tiny={"solver": {"max_centers": 256}}),
    Case("krr_nystrom", "auto_higgs12k", "krr_nystrom (1,024 centers)",
         {"solver": {"name": "krr_nystrom"}, "model": {"features": {"kind": "nystrom", "count": 1024},
                                                       "regularizer": {"name": "l2", "lambda": 1.0e-4}}},
         tiny={"model": {"features": {"count": 128}}}),
    Case("krr_pcg", "auto_higgs12k", "krr_pcg (1,024 centers, preconditioned CG to a relative gap of 1e-6)",
         {"solver": {"name": "krr_pcg", "tol": 1.0e-6},
          "model": {"features": {"kind": "nystrom", "count": 1024}, "regularizer": {"name": "l2", "lambda": 1.0e-4}}},
         tiny={"model": {"features": {"count": 128}}, "solver": {"iterations": 5}}),
    Case("svm_nystrom", "auto_svm_higgs12k", "svm_nystrom (the squared hinge, 1,024 centers)",
         {"solver": {"name": "svm_nystrom"}, "model": {"features": {"kind": "nystrom", "count": 1024},
                                                       "regularizer": {"name": "l2", "lambda": 1.0e-4}}},
         tiny={"model": {"features": {"count": 128}}}),
    Case("newton_pcg", "auto_svm_higgs12k", "newton_pcg (the logistic loss, 1,024 centers, Newton-CG to a relative gap of 1e-6)",
         {"solver": {"name": "newton_pcg", "tol": 1.0e-6},
          "model": {"loss": {"name": "logistic"}, "features": {"kind": "nystrom", "count": 1024},
                    "regularizer": {"name": "l2", "lambda": 1.0e-4}}},
         tiny={"model": {"features": {"count": 128}}, "solver": {"iterations": 3}}),
    Case("krr_pairs", "auto_higgs12k", "krr_pairs (one-vs-one, every row a center; 3 classes of higgs-12k)",
         {"solver": {"name": "krr_pairs"}, "model": {"features": {"kind": "nystrom", "count": 7500},
                                                     "regularizer": {"name": "l2", "lambda": 1.0e-4}}},
         three_classes=True),
    Case("gp", "gp_dai_operator", "gp (posterior variance operator)",
         {"output": {"checkpoint_every": 0}},
         tiny={"data": {"options": {"n_train": 256, "n_test": 64}}, "solver": {"iterations": 6, "holdout_every": 3}}),
    Case("dsg", "dsg_a9a", "dsg", {"data": HIGGS12K, "solver": {"iterations": 200}},
         tiny={"solver": {"iterations": 6, "check_every": 3}}),
    Case("udsg", "udsg_a9a", "udsg", {"data": HIGGS12K, "solver": {"iterations": 200}},
         tiny={"solver": {"iterations": 6, "check_every": 3}}),
    Case("cdsg", "cdsg_a9a", "cdsg", {"data": HIGGS12K, "solver": {"iterations": 200}},
         tiny={"solver": {"iterations": 6, "check_every": 3}}),
    Case("adsg", "adsg_a9a_rff_logistic", "adsg (random features)", {"data": HIGGS12K},
         tiny={"solver": {"iterations": 2}, "model": {"features": {"count": 512}}}),
    *(Case(name, "adsg_a9a_rff_logistic", f"{name} (an ADSG baseline)", {"data": HIGGS12K, "solver": {"name": name}},
           tiny={"solver": {"iterations": 2}, "model": {"features": {"count": 512}}})
      for name in ("svrg", "mrbcd", "katyusha")),
)


def dry_run_default() -> bool:
    return os.environ.get("KOPT_DEVICE_DRY_RUN", "") not in ("", "0")


def merge(base: dict, changes: dict) -> dict:
    """``base`` with ``changes`` merged in, nested dicts key by key (a deep copy)."""
    out = copy.deepcopy(base)
    for k, v in changes.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def case_spec(case: Case, backend: str, tiny=False) -> dict:
    """The case's spec as a dict: the packaged spec, its changes, no output files, ``backend``."""
    import yaml

    from kopt.spec.packaged import path_of

    with open(path_of(case.spec), encoding="utf-8") as fh:
        spec = yaml.safe_load(fh)
    spec = merge(spec, case.changes)
    if tiny:
        spec = merge(spec, case.tiny)
    spec["backend"] = backend
    spec["output"] = merge(spec.get("output", {}), {"dir": f"runs/device-check/{case.name}-{backend}"})
    return spec


def case_data(spec: dict, rows=None, classes3=False):
    """The spec's data read once, as ``(X, y, X_test, y_test)`` for both solves; ``rows``: only the
    first ``rows`` training and ``rows // 2`` test rows; ``classes3``: the labels as :func:`three_classes`."""
    import kopt
    from kopt.data import load_data

    ds = load_data(kopt.load_spec(spec)["data"])
    if ds.X_test is None:
        raise ValueError(f"spec {spec['name']!r} has no test set to compare the models on")
    n, m = (rows, max(1, rows // 2)) if rows else (None, None)
    y, y_test = np.asarray(ds.y)[:n], np.asarray(ds.y_test)[:m]
    if classes3:
        y, y_test = three_classes(ds.X[:n], y), three_classes(ds.X_test[:m], y_test)
    return ds.X[:n], y, ds.X_test[:m], y_test


def three_classes(X, y):
    """Binary labels as 3 classes: 0, and 1 split by the sign of the second column (HIGGS's lepton η: a
    multiclass case from the packaged binary rows)."""
    col = np.asarray(X[:, 1].todense()).ravel() if hasattr(X, "todense") else np.asarray(X[:, 1])
    return np.where(y > 0, np.where(col > 0, 2, 1), 0)


def _solve(spec, data):
    import kopt

    t0 = time.perf_counter()
    r = kopt.solve(spec, data=data, progress=False, write=False)
    seconds = time.perf_counter() - t0
    return r, seconds


def _side(r, seconds):
    def num(v):
        return None if v is None else float(v)

    return {"backend": r.report.get("backend"), "backend_note": r.report.get("backend_note"),
            "objective": num(r.objective), "dual": num(r.dual), "gap": num(r.gap), "n_iter": int(r.n_iter),
            "status": r.status, "metrics": {k: num(v) for k, v in r.metrics.items() if isinstance(v, (int, float))},
            "seconds": seconds}


def rel_diff(a, b):
    """|a - b| / max(|a|, |b|) (0 for two zeros; None when either is missing)."""
    if a is None or b is None:
        return None
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def compare_results(ref: dict, dev: dict) -> dict:
    """The checks of the module docstring: ``{"ok": bool, "failures": [...], "diffs": {...}}``."""
    failures, diffs = [], {}
    for key in ("objective", "dual"):
        d = rel_diff(ref[key], dev[key])
        diffs[f"{key}_rel"] = d
        if d is not None:
            diffs[f"{key}_float32_units"] = d / 2.0 ** -24
            if not d <= OBJECTIVE_RTOL:
                failures.append(f"{key}: numpy {ref[key]!r}, device {dev[key]!r}: relative difference {d:.3g} "
                                f"> {OBJECTIVE_RTOL:.3g} (float32 rounding)")
        elif (ref[key] is None) != (dev[key] is None):
            failures.append(f"{key}: numpy {ref[key]!r}, device {dev[key]!r}")
    for name, a in ref["metrics"].items():
        b = dev["metrics"].get(name)
        if b is None:
            failures.append(f"metric {name}: missing on the device run")
            continue
        point = any(name.endswith(p) for p in POINT_METRICS)
        d = abs(a - b) if point else rel_diff(a, b)
        diffs[f"metric_{name}"] = d
        if not d <= (METRIC_ATOL if point else METRIC_RTOL):
            failures.append(f"metric {name}: numpy {a:.6g}, device {b:.6g} (differ by "
                            f"{'%.3g points' % (100 * d) if point else '%.3g%%' % (100 * d)}; allowed 0.1)")
    diffs["n_iter"] = dev["n_iter"] - ref["n_iter"]
    diffs["gap_rel"] = rel_diff(ref["gap"], dev["gap"])
    return {"ok": not failures, "failures": failures, "diffs": diffs}


def prediction_diffs(ref_model, dev_model, X) -> dict:
    """Largest differences of the two models' outputs on ``X``, relative to max(1, max |NumPy's|).

    ``decision_rel``: the decision values; ``variance_rel``: a GP's posterior variance.  Reported,
    not checked: the metrics and the objective are the checks.
    """
    from kopt.numerics.backend import to_numpy

    def rel(a, b):
        a = np.asarray(to_numpy(a), dtype=np.float64)
        b = np.asarray(to_numpy(b), dtype=np.float64)
        return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(a))))) if a.size else 0.0

    out = {"decision_rel": rel(ref_model.decision_function(X), dev_model.decision_function(X))}
    extra = ref_model.predict_extra(X)
    if "variance" in extra:
        out["variance_rel"] = rel(extra["variance"], dev_model.predict_extra(X)["variance"])
    return out


def run_case(case: Case, *, dry_run=False, rows=None, tiny=False) -> dict:
    """Solve one case on NumPy and on the device backend (NumPy again in a dry run); one JSON record."""
    device = "numpy" if dry_run else "cupy"
    rec = {"stage": "compare", "case": case.name, "spec": case.spec, "family": case.family,
           "device_backend": device, "dry_run": dry_run, "rows": rows, "tiny": tiny}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # spec advice and iteration caps: expected here, never the point
            _compare_case(case, device, rows, tiny, rec)
    except Exception as exc:  # recorded, never fatal to the other cases
        import traceback

        rec.update(ok=False, failures=[f"{type(exc).__name__}: {exc}"], traceback=traceback.format_exc()[-4000:])
    rec["seconds"] = time.perf_counter() - t0
    return rec


def _compare_case(case, device, rows, tiny, rec):
    spec_np, spec_dev = case_spec(case, "numpy", tiny), case_spec(case, device, tiny)
    data = case_data(spec_np, rows, case.three_classes)
    ref, t_ref = _solve(spec_np, data)
    dev, t_dev = _solve(spec_dev, data)
    rec["numpy"], rec["device"] = _side(ref, t_ref), _side(dev, t_dev)
    rec.update(compare_results(rec["numpy"], rec["device"]))
    rec["diffs"].update(prediction_diffs(ref.model, dev.model, data[2]))


def run_isolated(case: Case, *, dry_run, rows, tiny, timeout) -> dict:
    """:func:`run_case` in a child process under ``timeout`` seconds (a hang or a crash is a failed case)."""
    cmd = [sys.executable, os.path.abspath(__file__), "compare-one", case.name]
    cmd += ["--dry-run"] if dry_run else []
    cmd += ["--rows", str(rows)] if rows else []
    cmd += ["--tiny"] if tiny else []
    base = {"stage": "compare", "case": case.name, "spec": case.spec, "family": case.family, "ok": False,
            "dry_run": dry_run}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        tail = (exc.stderr or b"")[-2000:]
        tail = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
        return {**base, "failures": [f"timed out after {timeout} s"], "stderr_tail": tail, "seconds": timeout}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode not in (0, 1) or not lines:
        return {**base, "failures": [f"child exited with status {proc.returncode} and no record"],
                "stderr_tail": proc.stderr[-2000:], "seconds": time.perf_counter() - t0}
    return json.loads(lines[-1])


def compare(args) -> int:
    """``compare``: every case (or ``--cases``), isolated; JSON lines to stdout and ``--out``/compare.jsonl."""
    wanted = args.cases or [c.name for c in CASES]
    by_name = {c.name: c for c in CASES}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        print(f"device_bench: unknown case(s) {', '.join(unknown)}; cases: {', '.join(by_name)}", file=sys.stderr)
        return 2
    out = open(os.path.join(args.out, "compare.jsonl"), "a", encoding="utf-8") if args.out else None
    failed = 0
    try:
        for name in wanted:
            rec = run_isolated(by_name[name], dry_run=args.dry_run, rows=args.rows, tiny=args.tiny,
                               timeout=args.timeout)
            failed += not rec.get("ok")
            line = json.dumps(rec, default=str)
            print(line, flush=True)
            if out:
                out.write(line + "\n")
                out.flush()
            _say(rec)
    finally:
        if out:
            out.close()
    print(f"device_bench compare: {len(wanted) - failed} of {len(wanted)} cases agree"
          f"{' (dry run: numpy on both sides)' if args.dry_run else ''}", file=sys.stderr)
    return 1 if failed else 0


def _say(rec):
    """One human line per case on stderr (stdout holds the JSON lines)."""
    d = rec.get("diffs", {})
    secs = ""
    if "numpy" in rec and "device" in rec:
        secs = f" numpy {rec['numpy']['seconds']:.1f}s, {rec['device']['backend']} {rec['device']['seconds']:.1f}s"
    obj = d.get("objective_rel")
    what = "ok" if rec.get("ok") else "FAIL " + "; ".join(rec.get("failures", []))[:300]
    print(f"  {rec['case']:<15} {what}{secs}" + (f", objective rel. diff {obj:.2g}" if obj is not None else ""),
          file=sys.stderr)


def compare_one(args) -> int:
    by_name = {c.name: c for c in CASES}
    rec = run_case(by_name[args.case], dry_run=args.dry_run, rows=args.rows, tiny=args.tiny)
    print(json.dumps(rec, default=str), flush=True)
    return 0 if rec.get("ok") else 1


def build_parser():
    p = argparse.ArgumentParser(prog="python tests/gpu/device_bench.py", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    def common(q):
        q.add_argument("--dry-run", action="store_true", default=dry_run_default(),
                       help="NumPy in place of CuPy, small sizes (also KOPT_DEVICE_DRY_RUN=1)")
        q.add_argument("--out", "-o", metavar="DIR", help="write the JSON figures into DIR")

    q = sub.add_parser("compare", help="every solver family on the device against NumPy")
    common(q)
    q.add_argument("--cases", nargs="+", metavar="CASE", help=f"only these ({', '.join(c.name for c in CASES)})")
    q.add_argument("--rows", type=int, help="cut each case's data to N training rows (N/2 test rows)")
    q.add_argument("--tiny", action="store_true", help="also cap iterations and sizes (the CPU test)")
    q.add_argument("--timeout", type=float, default=120.0, help="seconds per case (default 120)")
    q.set_defaults(func=compare)
    q = sub.add_parser("compare-one", help=argparse.SUPPRESS)
    q.add_argument("case")
    q.add_argument("--dry-run", action="store_true")
    q.add_argument("--rows", type=int)
    q.add_argument("--tiny", action="store_true")
    q.set_defaults(func=compare_one)

    import device_rates  # beside this file (run as a script, its folder is on sys.path)

    device_rates.add_commands(sub, common)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "out", None):
        os.makedirs(args.out, exist_ok=True)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
