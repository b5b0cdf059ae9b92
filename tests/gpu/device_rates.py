"""The GPU check's figures: the device's own roofline, the feature engine and Joker's iteration on it.

``python tests/gpu/device_bench.py roofline|features|joker [--dry-run] [--out DIR]``:

* ``roofline`` -- float32 cos (G elements/s on a large buffer), a device copy (GB/s, bytes read
  plus written), a square float32 GEMM (GFLOP/s; CuPy's default, no TF32) and the feature
  engine's own kernels on its shapes: the projection ``[X, 1] W`` (rows × 29 × 256), the sin+cos
  of a block and the reduction GEMV.  ``engine_floor_G_per_s`` is the rate those three kernels
  allow one after another: what ``predict`` would reach if it paid nothing else.
* ``features`` -- what ``kopt bench features`` measures (:func:`kopt.cli.bench.features.measure_map`:
  predict, θ update, fused predict + adjoint) with the map and the rows on the device, each
  rate also as a fraction of the device's cos roofline and of the engine floor (target: ≥ 50%).
* ``joker`` -- Joker's seconds per block iteration at Zhang & Lai's HIGGS setting (Huber, Laplacian
  features, |B| = 512, M = 16,384 and 10⁵, HIGGS-shaped rows), as ``kopt bench joker`` measures it on
  NumPy, against the same floor (|B|·M cosines, the projection, the two |B|×M products and the Gram
  K_BB) at the device's measured rates.  Timed from two synchronized solves (``k`` and ``k + K``
  iterations), so the device's queue cannot hide work; targets: ≤ 1.5× the floor, and Zhang & Lai's
  50,000 iterations in ≤ 10 minutes.
* ``pcg`` -- ``krr_pcg`` (the Falkon-class route: Nyström centers, preconditioned CG, one pass of kernel blocks
  per iteration) on HIGGS-shaped rows: seconds per CG iteration on NumPy and on CuPy at 10⁵ rows and M = 4,096,
  and the same model on both (objective, certified gap, the largest difference of the test scores), then CuPy
  alone at 10⁶ rows and M = 4,096 and 16,384 (:data:`PCG_CONFIGS`).

Every measurement synchronizes the device around each timed call (:func:`kopt.numerics.backend.synchronize`).
``--dry-run`` runs all of it with NumPy at small sizes (the GPU's code paths without CuPy).
"""
from __future__ import annotations

import json
import os
import time
import warnings

import numpy as np

from kopt.cli.bench import joker
from kopt.cli.bench.joker import floors  # the iteration's floor, the same model on the CPU and the device
from kopt.numerics.backend import synchronize

#: feature counts of a dry run (small, two of them, as the real run has)
DRY_FEATURES = (512, 1024)
#: roofline sizes of a dry run or a ``--small`` one
SMALL_ROOFLINE = dict(elements=1 << 18, gemm_n=256, rows=1 << 11, repeat=3)


def device(dry_run):
    """``(xp, info)``: CuPy and its device description, or NumPy in a dry run."""
    if dry_run:
        from kopt.cli.bench.roofline import machine

        return np, {"device": "numpy (dry run)", "dry_run": True, **machine()}
    from kopt.numerics.backend import cupy_device_info, resolve

    return resolve("cupy").xp, {**cupy_device_info(), "dry_run": False,
                                "CUPY_TF32": os.environ.get("CUPY_TF32", "0")}


def timed(xp, fn, repeat=3):
    """Median seconds of ``fn()`` over ``repeat`` synchronized calls, after one warm-up call."""
    fn()
    synchronize(xp)
    times = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        fn()
        synchronize(xp)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _host(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def roofline(xp, *, elements=1 << 26, gemm_n=8192, rows=1 << 16, dim=28, block=512, repeat=5):
    """The device's rates (module docstring); a dict of figures."""
    rng = np.random.default_rng(0)
    a = xp.asarray(_host(rng, elements, 4.0))
    b = xp.empty_like(a)
    t_cos = timed(xp, lambda: xp.cos(a, out=b), repeat)
    t_copy = timed(xp, lambda: xp.copyto(b, a), repeat)
    a = b = None  # released before the GEMM's operands
    A = xp.asarray(_host(rng, (gemm_n, gemm_n)))
    B = xp.asarray(_host(rng, (gemm_n, gemm_n)))
    C = xp.empty_like(A)
    t_gemm = timed(xp, lambda: xp.matmul(A, B, out=C), repeat)
    A = B = C = None
    h = block // 2
    P = xp.asarray(_host(rng, (rows, dim + 1)))
    W = xp.asarray(_host(rng, (dim + 1, h)))
    U = xp.empty((rows, h), dtype=np.float32)
    S = xp.empty((rows, h), dtype=np.float32)
    Z = xp.asarray(_host(rng, (rows, block)))
    c = xp.asarray(_host(rng, block))
    g = xp.empty(rows, dtype=np.float32)
    t_proj = timed(xp, lambda: xp.matmul(P, W, out=U), repeat)

    def sincos():
        xp.sin(U, out=S)
        xp.cos(U, out=U)

    t_sincos = timed(xp, sincos, repeat)
    t_gemv = timed(xp, lambda: xp.matmul(Z, c, out=g), repeat)
    features = rows * block
    floor_s = t_proj + t_sincos + t_gemv
    return {"cos_G_per_s": elements / t_cos / 1e9, "copy_GB_per_s": 8.0 * elements / t_copy / 1e9,
            "sgemm_gflops": 2.0 * gemm_n ** 3 / t_gemm / 1e9, "sgemm_n": gemm_n,
            "engine_projection_gflops": 2.0 * rows * (dim + 1) * h / t_proj / 1e9,
            "engine_sincos_G_per_s": features / t_sincos / 1e9, "engine_gemv_G_per_s": features / t_gemv / 1e9,
            "engine_floor_G_per_s": features / floor_s / 1e9, "engine_rows": rows, "engine_block": block,
            "elements": elements, "repeat": repeat}


def run_roofline(dry_run=False, small=False, log=print, save=None):
    xp, info = device(dry_run)
    rates = roofline(xp, **(SMALL_ROOFLINE if dry_run or small else {}))
    log(f"device roofline on {info['device']}: cos {rates['cos_G_per_s']:.1f} G/s, copy "
        f"{rates['copy_GB_per_s']:.0f} GB/s, sgemm {rates['sgemm_gflops']:.0f} GFLOP/s, engine floor "
        f"{rates['engine_floor_G_per_s']:.1f} G features/s")
    return {"stage": "roofline", "machine": info, "roofline": rates}


def run_features(dry_run=False, small=False, rows=1_000_000, dim=28, features=(4096, 32768), repeat=3,
                 block_size=512, log=print, save=None):
    """``kopt bench features`` on the device, beside the device's roofline measured in the same run."""
    from kopt.cli.bench.features import measure_map
    from kopt.contract.registry import registry
    from kopt.numerics.features import FeatureMap

    xp, info = device(dry_run)
    if dry_run or small:
        rows, features, repeat = min(rows, 2048), DRY_FEATURES, 1
    rates = roofline(xp, **(SMALL_ROOFLINE if dry_run or small else {}))
    rng = np.random.default_rng(0)
    X = xp.asarray(_host(rng, (rows, dim)))
    sigma = float(np.sqrt(dim))
    kernel = registry().get("kernel", "gaussian")(bandwidth=sigma)
    res = {"stage": "features", "machine": info, "rows": rows, "dim": dim, "block_size": block_size,
           "dtype": "float32", "kernel": f"gaussian (bandwidth {sigma:.3g}, sincos pairs)", "roofline": rates,
           "runs": [], "target": "predict >= 50% of the device's cos roofline"}
    for M in features:
        fm = FeatureMap(kernel, dim, seed=0, block_size=block_size, count=M, xp=xp)
        entry = measure_map(fm, X, rng, repeat, timer=lambda fn, r: timed(xp, fn, r))
        for key in ("predict", "theta_update", "fused_predict_adjoint"):
            entry[f"{key}_fraction_of_cos_roofline"] = entry[key] / rates["cos_G_per_s"]
            entry[f"{key}_fraction_of_engine_floor"] = entry[key] / rates["engine_floor_G_per_s"]
        res["runs"].append(entry)
        if save:
            save(res)  # what is measured survives a later M running out of time
        log(f"features M = {entry['M']:>6}: predict {entry['predict']:.2f} G/s "
            f"({100 * entry['predict_fraction_of_cos_roofline']:.0f}% of cos, "
            f"{100 * entry['predict_fraction_of_engine_floor']:.0f}% of the engine floor), θ update "
            f"{entry['theta_update']:.2f}, fused {entry['fused_predict_adjoint']:.2f} G/s")
    return res


def higgs_shaped(rows, dim=28, seed=0):
    """Rows shaped like HIGGS (28 standard-normal features) with labels from a fixed nonlinear rule.

    The same rule as ``kopt bench joker``: the cost of an iteration does not depend on the values.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, dim)).astype(np.float32)
    y = np.where(np.sin(X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] > 0, 1.0, 0.0)
    return X, y


def joker_spec(M, batch_size, iterations, lam, backend):
    """:func:`kopt.cli.bench.joker.joker_spec` (Zhang & Lai's HIGGS setting) on ``backend``."""
    return joker.joker_spec(M, batch_size, iterations, lam, backend=backend, name="device_joker")


def _solve_seconds(spec, data):
    import kopt

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tol 0: every run stops at its iteration cap
        r = kopt.solve(spec, data=data)
    return time.perf_counter() - t0, r


def run_joker(dry_run=False, small=False, rows=262_144, features=(16384, 100_000), batch_size=512, warm=3,
              timed_iters=20, score_rows=100_000, project_iterations=50_000, log=print, save=None):
    """Seconds per Joker block iteration on the device: (T(warm + timed) - T(warm)) / timed."""
    from kopt.numerics.backend import to_numpy

    xp, info = device(dry_run)
    backend = "numpy" if dry_run else "cupy"
    if dry_run or small:
        rows, features, timed_iters, score_rows = min(rows, 2048), DRY_FEATURES, 2, 512
    rates = roofline(xp, **(SMALL_ROOFLINE if dry_run or small else {}))
    X, y = higgs_shaped(rows)
    lam = 2.0 ** -7 / rows  # Zhang & Lai's λ_J = 2^-7 in kopt's convention at this n
    _solve_seconds(joker_spec(1024, batch_size, 2, lam, backend), (X[:4096], y[:4096]))  # imports, kernels
    out = {"stage": "joker", "machine": info, "rows": rows, "batch_size": batch_size, "roofline": rates,
           "by_M": [], "targets": {"ratio_to_floor": 1.5, "paper_run_minutes": 10.0}}
    for M in features:
        t_warm, _ = _solve_seconds(joker_spec(M, batch_size, warm, lam, backend), (X, y))
        t_all, r = _solve_seconds(joker_spec(M, batch_size, warm + timed_iters, lam, backend), (X, y))
        per_it = max(t_all - t_warm, 0.0) / timed_iters
        steps = np.diff([rec["elapsed"] for rec in r.trace])[2:-1]
        floor = floors(M, batch_size, X.shape[1], rates["cos_G_per_s"], rates["sgemm_gflops"])
        Xs = X[:score_rows]
        t_score = timed(xp, lambda: to_numpy(r.model.decision_function(Xs)), 1)
        entry = {"M": M, "seconds_per_iteration": per_it, "solve_seconds": [t_warm, t_all],
                 "iterations": [warm, warm + timed_iters],
                 "trace_median_s": float(np.median(steps)) if steps.size else None,
                 **floor, "ratio_to_floor": per_it / floor["floor_s"],
                 "ratio_to_floor_without_gram": per_it / floor["floor_without_gram_s"],
                 "seconds_per_scored_row": t_score / Xs.shape[0],
                 "paper_run_minutes": project_iterations * per_it / 60.0, "paper_iterations": project_iterations}
        out["by_M"].append(entry)
        if save:
            save(out)
        log(f"joker M = {M:>7,}: {per_it * 1e3:.2f} ms/iteration, floor {floor['floor_s'] * 1e3:.2f} ms "
            f"({entry['ratio_to_floor']:.2f}x); Zhang & Lai's {project_iterations:,} iterations: "
            f"{entry['paper_run_minutes']:.1f} min (target <= 10)")
    return out


def _write_file(res, out_dir, name):
    """``out_dir/name`` as JSON, replaced whole (write, then rename): a kill never leaves half a file."""
    path = os.path.join(out_dir, name)
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=2, default=str)
    os.replace(path + ".tmp", path)


def _write(res, args, name):
    print(json.dumps(res, default=str), flush=True)
    if args.out:
        _write_file(res, args.out, name)


def _stage(fn, name):
    def run(args):
        import sys

        kwargs = {k: getattr(args, k) for k in ("rows", "features") if getattr(args, k, None)}
        if "features" in kwargs:
            kwargs["features"] = tuple(kwargs["features"])
        def save(partial):
            if args.out:
                _write_file(partial, args.out, name)

        res = fn(dry_run=args.dry_run, small=args.small, log=lambda s: print(s, file=sys.stderr, flush=True),
                 save=save, **kwargs)
        _write(res, args, name)
        return 0

    return run


def add_commands(sub, common):
    """The ``roofline``, ``features`` and ``joker`` subcommands of ``python tests/gpu/device_bench.py``."""

    def common_small(q):
        common(q)
        q.add_argument("--small", action="store_true", help="the dry run's sizes, on the device (a smoke test)")
    q = sub.add_parser("roofline", help="the device's cos, copy, GEMM and engine-kernel rates")
    common_small(q)
    q.set_defaults(func=_stage(run_roofline, "roofline.json"))
    q = sub.add_parser("features", help="kopt bench features on the device, against its roofline")
    common_small(q)
    q.add_argument("--rows", type=int, default=1_000_000)
    q.add_argument("--features", type=int, nargs="+", default=[4096, 32768])
    q.set_defaults(func=_stage(run_features, "bench_features.json"))
    q = sub.add_parser("joker", help="Joker's seconds per iteration on the device at Zhang & Lai's HIGGS setting")
    common_small(q)
    q.add_argument("--rows", type=int, default=262_144)
    q.add_argument("--features", type=int, nargs="+", default=[16384, 100_000])
    q.set_defaults(func=_stage(run_joker, "bench_joker_device.json"))
    q = sub.add_parser("pcg", help="krr_pcg's seconds per CG iteration on the device beside NumPy, and the same model")
    common_small(q)
    q.set_defaults(func=_stage(run_pcg, "bench_pcg_device.json"))


#: ``pcg``'s settings ``(rows, M, with NumPy beside)``, in order: the first compares the backends, the others time
#: the device alone (NumPy at 10⁶ rows and 16,384 centers would take minutes an iteration)
PCG_CONFIGS = ((100_000, 4096, True), (1_000_000, 4096, False), (1_000_000, 16384, False))
#: a dry run's (NumPy on both sides)
DRY_PCG_CONFIGS = ((2048, 128, True), (4096, 256, False))


def pcg_spec(M, iterations, backend, lam=1e-4, bandwidth=6.0):
    """krr_pcg on M centers (the square loss on ±1 labels), ``iterations`` CG steps (tol 0: every step runs).  At
    λ = 1e-4 eight steps certify a relative gap of about 1e-3 (10⁴ rows, M = 512): the two backends' models are
    compared near the answer, not early in the iterations."""
    return {"name": "device_pcg", "seed": 0, "backend": backend,
            "model": {"loss": {"name": "square", "target": "binary"},
                      "kernel": {"name": "gaussian", "bandwidth": bandwidth},
                      "regularizer": {"name": "l2", "lambda": lam}, "features": {"kind": "nystrom", "count": M}},
            "solver": {"name": "krr_pcg", "iterations": iterations, "tol": 0.0}}


def run_pcg(dry_run=False, small=False, configs=None, iterations=8, test_rows=20_000, log=print, save=None):
    """Seconds per krr_pcg iteration (the median of the trace's steps after the first, each with its certificate)
    on NumPy and on the device; where both ran, the two models compared."""
    from kopt.numerics.backend import to_numpy

    _, info = device(dry_run)
    device_backend = "numpy" if dry_run else "cupy"
    if configs is None:
        configs = DRY_PCG_CONFIGS if dry_run or small else PCG_CONFIGS
    if dry_run or small:
        iterations, test_rows = min(iterations, 4), 512
    X_all, y_all = higgs_shaped(max(n for n, _, _ in configs) + test_rows)
    Xt, yt = X_all[-test_rows:], y_all[-test_rows:]
    out = {"stage": "pcg", "machine": info, "iterations": iterations, "test_rows": test_rows, "runs": []}
    for n, M, beside in configs:
        data = (X_all[:n], y_all[:n], Xt, yt)
        entry = {"rows": n, "M": M}
        scores = {}
        for side, backend in ((("numpy", "numpy"),) if beside else ()) + (("device", device_backend),):
            try:
                t, r = _solve_seconds(pcg_spec(M, iterations, backend), data)
            except Exception as exc:  # recorded; the next setting still runs
                entry[side] = {"backend": backend, "error": f"{type(exc).__name__}: {exc}"[:500]}
                log(f"pcg n = {n:,} M = {M:,} {backend}: {entry[side]['error']}")
                continue
            steps = np.diff([rec["elapsed"] for rec in r.trace])[1:]
            entry[side] = {"backend": backend, "seconds_per_iteration": float(np.median(steps)) if steps.size else None,
                           "solve_seconds": t, "objective": float(r.objective), "rel_gap": r.info.get("rel_gap"),
                           "n_iter": int(r.n_iter), "passes": r.info.get("passes"),
                           "accuracy": r.metrics.get("accuracy")}
            scores[side] = np.asarray(to_numpy(r.model.decision_function(Xt)), dtype=np.float64)
            log(f"pcg n = {n:>9,} M = {M:>6,} {backend}: {entry[side]['seconds_per_iteration']:.3f} s/iteration, "
                f"solve {t:.1f} s, relative gap {r.info.get('rel_gap')}")
        if len(scores) == 2:
            a, b = entry["numpy"], entry["device"]
            entry["same_model"] = {"objective_rel": abs(a["objective"] - b["objective"]) / abs(a["objective"]),
                                   "max_score_diff": float(np.max(np.abs(scores["numpy"] - scores["device"])))}
            entry["speedup"] = a["seconds_per_iteration"] / b["seconds_per_iteration"]
        out["runs"].append(entry)
        if save:
            save(out)
    return out
