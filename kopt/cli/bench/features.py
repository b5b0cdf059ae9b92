"""``kopt bench``: micro-benchmarks of the feature engine against the machine's own roofline.

``kopt bench features`` measures, in one run and on the same data, for every M:

* prediction ψ(X)ᵀθ (:meth:`kopt.numerics.features.FeatureMap.predict`),
* the θ update ψ(X)v (:meth:`~kopt.numerics.features.FeatureMap.adjoint`) and the fused
  predict + adjoint of a gradient step (:meth:`~kopt.numerics.features.FeatureMap.predict_adjoint`),
* the float32 cos throughput of this machine on 1 and on all worker threads (the roofline:
  every Fourier feature costs one sin or cos),
* scikit-learn's ``RBFSampler.transform`` (float64, when scikit-learn is installed) on a
  row subsample sized to take about a second,

all as G features/s (rows × M / seconds, median of ``repeat`` runs).
"""
from __future__ import annotations

import os

import numpy as np

from ...files.atomic import dumps
from ...numerics import threads as _threads
from ...numerics.features import FeatureMap
from .roofline import cos_roofline, median_time, run_record, sgemm_rate


def sklearn_rate(X, M, sigma, repeat, work=2e7):
    """(G features/s, rows) of RBFSampler.transform (float64), or None without scikit-learn."""
    try:
        from sklearn.kernel_approximation import RBFSampler
    except ImportError:
        return None
    rows = int(min(X.shape[0], max(256, work // M)))
    Xs = np.asarray(X[:rows], dtype=np.float64)
    sampler = RBFSampler(gamma=0.5 / sigma**2, n_components=M, random_state=0).fit(Xs)
    t = median_time(lambda: sampler.transform(Xs), repeat)
    return rows * M / t / 1e9, rows


def run_features(rows=100_000, dim=28, features=(4096, 32768), repeat=3, block_size=512, threads=None,
                 fused=True, sklearn=True, log=print):
    """Run the benchmark and return its figures as a dict (see the module docstring)."""
    from ...contract.registry import registry

    threads = _threads.resolve_threads(threads)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, dim)).astype(np.float32)
    sigma = float(np.sqrt(dim))
    kernel = registry().get("kernel", "gaussian")(bandwidth=sigma)
    load0 = os.getloadavg()
    result = {
        "rows": rows, "dim": dim, "block_size": block_size, "threads": threads, "repeat": repeat,
        "dtype": "float32", "kernel": f"gaussian (bandwidth {sigma:.3g}, sincos pairs)",
        **run_record(),
    }
    elements = int(min(1 << 27, max(1 << 20, rows * max(features))))  # as much work as one predict, capped
    cos1 = cos_roofline(1, elements=elements, repeat=repeat)
    cosT = cos_roofline(threads, elements=elements, repeat=repeat) if threads > 1 else cos1
    gemm = sgemm_rate(dim, block_size, elements=elements, repeat=repeat)
    result["roofline"] = {"cos_1_thread": cos1, f"cos_{threads}_threads": cosT, "cos_all_threads": cosT,
                          "sgemm_gflops_1_thread": gemm}
    log(f"kopt bench features: n={rows} d={dim} float32, blocks of {block_size}, {threads} threads, "
        f"numpy {np.__version__}")
    log(f"roofline: float32 cos {cos1:.2f} G/s on 1 thread, {cosT:.2f} G/s on {threads}; "
        f"engine-shaped sgemm {gemm:.0f} GFLOP/s per thread")
    log(f"{'M':>7} {'predict':>9} {'θ update':>9} {'fused':>9} {'% of cos':>9} {'sklearn':>9}  (G features/s)")
    runs = []
    for M in features:
        fm = FeatureMap(kernel, dim, seed=0, block_size=block_size, count=M, threads=threads)
        entry = measure_map(fm, X, rng, repeat, fused=fused, timer=median_time)
        sk = sklearn_rate(X, entry["M"], sigma, repeat) if sklearn else None
        if sk is not None:
            entry["sklearn_rbfsampler"], entry["sklearn_rows"] = sk
        entry["predict_fraction_of_cos_roofline"] = entry["predict"] / cosT
        runs.append(entry)
        fz = f"{entry['fused_predict_adjoint']:9.3f}" if fused else f"{'-':>9}"
        skz = f"{sk[0]:9.4f}" if sk else f"{'n/a':>9}"
        log(f"{entry['M']:>7} {entry['predict']:9.3f} {entry['theta_update']:9.3f} {fz} "
            f"{100 * entry['predict_fraction_of_cos_roofline']:8.0f}% {skz}")
    result["runs"] = runs
    result["loadavg_before_after"] = [list(load0), list(os.getloadavg())]
    return result


def measure_map(fm, X, rng, repeat, *, fused=True, timer=median_time):
    """G features/s of ``fm``'s predict, θ update and fused predict + adjoint on ``X`` (one dict).

    ``X`` lives on ``fm.xp``'s device; ``timer(fn, repeat)`` returns the median seconds of ``fn``
    (on a GPU it synchronizes the device around each call: tests/gpu/device_rates.py).
    """
    xp = fm.xp
    rows, nb, F = X.shape[0], fm.n_blocks, fm.block_size
    coef = xp.asarray(rng.standard_normal((nb, F)).astype(np.float32))
    v = xp.asarray(rng.standard_normal(rows).astype(np.float32))
    work = rows * nb * F
    fm.predict(X[:1024], coef)  # warm up the pool and the BLAS limiter (on a GPU: compile the kernels)
    t_pred = timer(lambda: fm.predict(X, coef), repeat)
    t_adj = timer(lambda: fm.adjoint(X, v), repeat)
    entry = {"M": nb * F, "predict": work / t_pred / 1e9, "theta_update": work / t_adj / 1e9,
             "predict_seconds": t_pred, "theta_update_seconds": t_adj}
    if fused:
        t_f = timer(lambda: fm.predict_adjoint(X, coef, lambda f, lo, hi: v[lo:hi]), repeat)
        entry["fused_predict_adjoint"] = work / t_f / 1e9  # features evaluated once for both products
        entry["fused_seconds"] = t_f
    return entry


def features(args):
    """``kopt bench features`` (args: rows, dim, features, repeat, json)."""
    res = run_features(rows=args.rows, dim=args.dim, features=tuple(args.features), repeat=args.repeat)
    if getattr(args, "json", None):
        with open(args.json, "w") as fh:
            fh.write(dumps(res, indent=2))
        print(f"wrote {args.json}")
    return 0
