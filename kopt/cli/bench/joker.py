"""``kopt bench joker``: Joker's block iteration at Zhang & Lai's HIGGS setting -- its cost against the floor,
the time each variant needs to a duality-gap certificate, and the projection of Zhang & Lai's run.

Three measurements, each one command short enough for a shared machine, each printing JSON lines
(``kind``: ``cost``, ``certificate``, ``projection``) that the last one combines:

``kopt bench joker`` (**cost**)
    On ``rows`` HIGGS-shaped rows (28 standard-normal features; labels from a fixed nonlinear rule
    with 25% of them flipped, so that about 75% is the best accuracy, as on HIGGS; the cost of an
    iteration does not depend on the values), Joker-Huber with a Laplacian kernel at Zhang & Lai's
    λ_J = 2⁻⁷ runs ``iterations`` block iterations of features mode (Zhang & Lai 2025, Alg. 3) for each M
    and each **variant** (the block size |B| and how K_BB is formed, see :data:`VARIANTS`).  The
    median seconds per iteration and per row are compared with the floor: the time, at this
    machine's measured rates, of the work the iteration cannot skip --

    * |B|·M cosines (the block's features, at the measured float32 cos rate on all threads),
    * the projections [X_B, 1]·W (|B|·(d+1)·M flops) and the two |B|×M products (K_B,:α and the
      θ update), at the measured single-thread GEMM rate times the threads,
    * the model's K_BB = φ(X_B)φ(X_B)ᵀ: 2|B|²M flops formed by a GEMM (Zhang & Lai 2025, Alg. 3, "the floor
      as now"), |B|²M by a symmetric rank-k update (``syrk_floor_s``); ``floor_without_gram``
      leaves it out.

    It also times scoring (seconds per row), which the gap checks and the holdout cost.

``kopt bench joker --certificate`` (**time to a certificate**)
    Each variant runs ``epochs`` epochs on ``rows`` rows at M = ``features`` with the relative
    duality gap estimated ``checks`` times per epoch on ``check_rows`` seeded rows (the unbiased
    Fenchel–Young estimate of docs/joker.md; the checks' time is left out of the seconds).

``kopt bench joker --project FILE...`` (**projection**; reads the two kinds of lines)
    The yardstick is the relative gap today's iteration (``today``: |B| = 512, K_BB by GEMM) reaches
    after 1 and 3 epochs (and after Zhang & Lai's 50,000 × 512 / 8.8M = 2.91 epochs).  Each variant's
    epochs to reach it come from its certificate curve (linear interpolation between checks); times
    at M = 10⁵ are those epochs × the rows × the variant's measured seconds per row at that M.  The
    projection of Zhang & Lai's run adds a gap estimate on ``gap_rows`` rows every 512,000 rows
    processed and the scoring of the ``test_rows`` holdout.
"""
from __future__ import annotations

import json
import math
import os
import time

import numpy as np

from ...files.atomic import dumps
from ...numerics import threads as _threads
from .roofline import blas_env, blas_kernels, cos_roofline, gemm_rate, machine, run_record

#: name -> (|B|, K_BB method).  ``today`` is the iteration with K_BB by a GEMM per feature block.
VARIANTS = {"today": (512, "gemm"), "syrk-512": (512, "syrk"), "syrk-256": (256, "syrk"),
            "syrk-128": (128, "syrk"), "syrk-64": (64, "syrk")}
#: Zhang & Lai's HIGGS run (Table A.3): 50,000 iterations of |B| = 512 on 8.8M training rows
PAPER = {"iterations": 50_000, "batch_size": 512, "train_rows": 8_800_000, "test_rows": 2_200_000, "M": 100_000}


def header(threads):
    """The machine line every part prints: CPU flags, BLAS kernels, load."""
    m = machine()
    blas = ", ".join(f"{b['library']} {b['version']} ({b['for']}): {b['kernel']} kernels" for b in blas_kernels())
    env = " ".join(f"{k}={v}" for k, v in blas_env().items()) or "no OPENBLAS_* variables"
    return (f"{m['cpu']}, {threads} threads; CPU flags {' '.join(m['cpu_flags'])}; BLAS {blas} [{env}]; "
            f"load {m['loadavg'][0]:.2f}")


def _data(rows, dim, seed=0, flip=0.25):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, dim)).astype(np.float32)
    y = np.where(np.sin(X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] > 0, 1.0, 0.0)
    if flip:
        y = np.where(rng.random(rows) < flip, 1.0 - y, y)  # label noise: ~75% is the best accuracy, as on HIGGS
    return X, y


def joker_spec(M, batch_size, iterations, lam, gram="auto", check_every=0, check_rows=0, backend="numpy",
               name="bench_joker"):
    """Zhang & Lai's HIGGS setting as ``kopt bench joker`` runs it (Huber, Laplacian features, dual); the GPU
    check's rates (tests/gpu/device_rates.py) run the same spec on another backend."""
    return {"name": name, "seed": 0, "data": {"standardize": False},
            "model": {"loss": {"name": "huber", "delta": 1.0, "target": "binary"},
                      "kernel": {"name": "laplacian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": lam}, "form": "dual",
                      "features": {"count": M, "block_size": 512, "dtype": "float32"}},
            "solver": {"name": "joker", "mode": "features", "batch_size": batch_size, "iterations": iterations,
                       "tol": 0.0, "check_every": check_every, "check_rows": check_rows, "holdout_every": 0,
                       "gram": gram},
            "backend": backend, "output": {"model": False, "report": False}}


def _solve(spec, X, y):
    import warnings

    import kopt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kopt.solve(spec, data=(X, y))


def iteration_cost(X, y, M, batch_size, iterations, lam, gram="gemm"):
    """Median and spread of the seconds per block iteration (warm: the first two are left out)."""
    # the run's final gap check on 1,000 rows only (on all of them it would cost more than the iterations)
    r = _solve(joker_spec(M, batch_size, iterations, lam, gram, check_rows=min(1000, X.shape[0])), X, y)
    t = np.array([rec["elapsed"] for rec in r.trace])
    steps = np.diff(t)[2:-1]  # warm-up left out, and the last: it holds the final check
    return {"median_s": float(np.median(steps)), "min_s": float(steps.min()), "max_s": float(steps.max()),
            "iterations_timed": int(steps.size)}, r


def scoring_cost(model, X, repeat=2):
    """Seconds per scored row."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        model.decision_function(X)
        best = min(best, time.perf_counter() - t0)
    return best / X.shape[0]


def floors(M, batch_size, dim, cos_rate, gemm_gflops):
    """Seconds of the iteration's unavoidable work at the measured rates (see the module docstring)."""
    B = batch_size
    cos_s = B * M / (cos_rate * 1e9)
    proj_s = 2.0 * B * (dim + 1) * (M / 2) / (gemm_gflops * 1e9)  # sin/cos pairs share a projection
    products_s = 2 * 2.0 * B * M / (gemm_gflops * 1e9)
    gram_s = 2.0 * B * B * M / (gemm_gflops * 1e9)
    rest = cos_s + proj_s + products_s
    return {"cos_s": cos_s, "projection_s": proj_s, "products_s": products_s, "gram_s": gram_s,
            "floor_s": rest + gram_s, "syrk_floor_s": rest + gram_s / 2, "floor_without_gram_s": rest}


def _variants(names):
    names = list(names) if names else list(VARIANTS)
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        from ...errors import KoptError

        raise KoptError(f"unknown Joker variant(s) {unknown}; known: {', '.join(VARIANTS)}")
    return names


def run_joker(rows=1_000_000, dim=28, features=(16384, 100_000), batch_size=None, iterations=12, threads=None,
              variants=("today", "syrk-512", "syrk-128"), score_rows=100_000,
              project_iterations=PAPER["iterations"], check_every=1000, gap_rows=200_000,
              test_rows=PAPER["test_rows"], train_rows=PAPER["train_rows"], log=print):
    """The cost lines: seconds per iteration and per row of each variant at each M, against the floor.

    ``batch_size`` (an older calling convention) replaces the variants by ``today``'s GEMM at that |B|.
    Each line also projects Zhang & Lai's run *at today's epochs* (``project_iterations`` × 512 rows),
    the first projection's figure; the certificate-based projection is :func:`project`'s.
    """
    threads = _threads.resolve_threads(threads)
    X, y = _data(rows, dim)
    lam = 2.0**-7 / rows  # Zhang & Lai's λ_J = 2^-7 in kopt's convention at this n
    cos_rate = cos_roofline(threads)
    gemm1 = gemm_rate(1)
    gemm_all = gemm1 * threads  # kopt's threads each run a single-threaded BLAS
    todo = [(f"gemm-{batch_size}", batch_size, "gemm")] if batch_size else \
        [(v, *VARIANTS[v]) for v in _variants(variants)]
    out = {"kind": "cost", "rows": rows, "dim": dim, "threads": threads, **run_record(),
           "blas": blas_kernels(),
           "blas_env": blas_env(), "roofline": {"cos_G_per_s_all_threads": cos_rate, "sgemm_gflops_1_thread": gemm1,
                                                "sgemm_gflops_used": gemm_all}, "by_M": []}
    log(f"kopt bench joker: {rows:,} HIGGS-shaped rows; {header(threads)}; cos {cos_rate:.2f} G/s, "
        f"sgemm {gemm1:.0f} GFLOP/s per thread")
    rows_processed = project_iterations * PAPER["batch_size"]
    for M in features:
        per_row = None
        for name, B, gram in todo:
            cost, result = iteration_cost(X, y, M, B, iterations, lam, gram)
            floor = floors(M, B, dim, cos_rate, gemm_all)
            if per_row is None:
                per_row = scoring_cost(result.model, X[:score_rows])
            its = rows_processed / B
            checks = rows_processed // (check_every * PAPER["batch_size"])
            check_s = gap_rows * per_row
            total_s = its * cost["median_s"] + checks * check_s + test_rows * per_row
            entry = {"M": M, "variant": name, "batch_size": B, "gram": result.info.get("gram", gram),
                     "seconds_per_iteration": cost, "seconds_per_row": cost["median_s"] / B, **floor,
                     "ratio_to_floor": cost["median_s"] / floor["floor_s"],
                     "ratio_to_syrk_floor": cost["median_s"] / floor["syrk_floor_s"],
                     "ratio_to_floor_without_gram": cost["median_s"] / floor["floor_without_gram_s"],
                     "seconds_per_scored_row": per_row,
                     "projection": {"rows_processed": rows_processed, "train_rows": train_rows,
                                                "gap_rows": gap_rows, "checks": checks, "test_rows": test_rows,
                                                "iterations_s": its * cost["median_s"], "checks_s": checks * check_s,
                                                "holdout_s": test_rows * per_row, "total_hours": total_s / 3600.0},
                     "loadavg": list(os.getloadavg())}
            out["by_M"].append(entry)
            log(f"M = {M:>7,} {name:>9} (|B| = {B}, K_BB by {gram}): {cost['median_s']:.4f} s/iteration "
                f"[{cost['min_s']:.4f}, {cost['max_s']:.4f}], {cost['median_s'] / B * 1e6:.1f} us/row; floor "
                f"{floor['floor_s']:.4f} s ({floor['gram_s']:.4f} of it K_BB), {entry['ratio_to_floor']:.2f}x; "
                f"syrk floor {floor['syrk_floor_s']:.4f} s; without K_BB {floor['floor_without_gram_s']:.4f} s; "
                f"scoring {per_row * 1e6:.2f} us/row; load {entry['loadavg'][0]:.2f}")
    out["loadavg_after"] = list(os.getloadavg())
    return out


def certificate(rows=1_000_000, dim=28, features=2048, variants=("today", "syrk-128"), epochs=3.0, checks=4,
                check_rows=100_000, threads=None, log=print):
    """The certificate lines: each variant's relative duality gap after every 1/``checks`` epoch."""
    threads = _threads.resolve_threads(threads)
    X, y = _data(rows, dim)
    lam = 2.0**-7 / rows
    log(f"kopt bench joker --certificate: {rows:,} HIGGS-shaped rows, M = {features:,}, {epochs:g} epochs, gap on "
        f"{min(rows, check_rows):,} rows {checks}x per epoch; {header(threads)}")
    lines = []
    for name in _variants(variants):
        B, gram = VARIANTS[name]
        nblocks = math.ceil(rows / B)
        every = max(1, nblocks // checks)
        spec = joker_spec(features, B, int(round(epochs * nblocks)), lam, gram, check_every=every,
                     check_rows=min(rows, check_rows))
        t0 = time.perf_counter()
        r = _solve(spec, X, y)
        wall = time.perf_counter() - t0
        steps = np.diff([0.0] + [rec["elapsed"] for rec in r.trace])
        checked = np.array(["rel_gap" in rec for rec in r.trace])
        # an iteration with a check also holds the check's scoring; "seconds" leaves the checks out:
        # iterations done × the median seconds of an iteration without one
        per_it = float(np.median(steps[~checked][2:]))
        curve = [{"iteration": rec["iteration"], "epochs": rec["iteration"] * B / rows, "rel_gap": rec["rel_gap"],
                  "seconds": rec["iteration"] * per_it} for rec in r.trace if "rel_gap" in rec]
        line = {"kind": "certificate", "variant": name, "batch_size": B, "gram": gram, "rows": rows, "M": features,
                "threads": threads, "check_rows": min(rows, check_rows), "curve": curve,
                "seconds_per_iteration_median": per_it, "wall_s": wall, "blas": blas_kernels(), "blas_env": blas_env(),
                "loadavg": list(os.getloadavg())}
        lines.append(line)
        log(f"{name:>9} (|B| = {B}): " + ", ".join(f"{c['epochs']:.2f} ep {c['rel_gap']:.4f}" for c in curve)
            + f"; {per_it * 1e3:.2f} ms/iteration; load {line['loadavg'][0]:.2f}")
    return lines


def epochs_to(curve, gap):
    """Epochs at which the (decreasing) gap curve first reaches ``gap``, interpolated linearly between
    checks; None when it never does within the curve."""
    prev_e, prev_g = 0.0, None
    for c in curve:
        e, g = c["epochs"], c["rel_gap"]
        if g <= gap:
            if prev_g is None or prev_g == g:
                return e
            return prev_e + (e - prev_e) * (prev_g - gap) / (prev_g - g)
        prev_e, prev_g = e, g
    return None


def gap_at(curve, epochs):
    """The gap of a curve at ``epochs`` (linear interpolation between checks; None beyond the curve)."""
    prev = None
    for c in curve:
        if c["epochs"] >= epochs - 1e-9:
            if prev is None or c["epochs"] == prev["epochs"]:
                return c["rel_gap"]
            w = (epochs - prev["epochs"]) / (c["epochs"] - prev["epochs"])
            return prev["rel_gap"] + w * (c["rel_gap"] - prev["rel_gap"])
        prev = c
    return None


def project(lines, M=PAPER["M"], rows=1_000_000, gap_rows=200_000, check_rows_every=512_000, log=print):
    """The projection lines from cost and certificate lines (see the module docstring)."""
    costs = {}
    for line in lines:
        if line.get("kind") == "cost":
            for e in line["by_M"]:
                costs.setdefault(e["M"], {})[e["variant"]] = e
    certs = {line["variant"]: line for line in lines if line.get("kind") == "certificate"}
    if "today" not in certs:
        from ...errors import KoptError

        raise KoptError("the projection needs today's certificate curve "
                        "(kopt bench joker --certificate --variants today)")
    base = certs["today"]["curve"]
    paper_epochs = PAPER["iterations"] * PAPER["batch_size"] / PAPER["train_rows"]
    targets = {"1 epoch": gap_at(base, 1.0), "3 epochs": gap_at(base, 3.0), "paper": gap_at(base, paper_epochs)}
    at_M = costs.get(M, {})
    out = []
    for name, cert in certs.items():
        cost = at_M.get(name)
        entry = {"kind": "projection", "variant": name, "batch_size": cert["batch_size"], "gram": cert["gram"],
                 "certificate_rows": cert["rows"], "certificate_M": cert["M"], "M": M, "targets": targets,
                 "paper_epochs": paper_epochs}
        for key, gap in targets.items():
            ep = None if gap is None else epochs_to(cert["curve"], gap)
            entry[f"epochs_to_{key.replace(' ', '_')}"] = ep
            if cost is not None and ep is not None:
                entry[f"seconds_to_{key.replace(' ', '_')}_at_{rows}_rows"] = ep * rows * cost["seconds_per_row"]
        if cost is not None and entry["epochs_to_paper"] is not None:
            processed = entry["epochs_to_paper"] * PAPER["train_rows"]
            checks = processed // check_rows_every
            it_s = processed * cost["seconds_per_row"]
            checks_s = checks * gap_rows * cost["seconds_per_scored_row"]
            hold_s = PAPER["test_rows"] * cost["seconds_per_scored_row"]
            entry["paper_run"] = {"rows_processed": processed, "iterations": processed / cost["batch_size"],
                                  "iterations_s": it_s, "checks": checks, "checks_s": checks_s, "holdout_s": hold_s,
                                  "total_hours": (it_s + checks_s + hold_s) / 3600.0,
                                  "seconds_per_row": cost["seconds_per_row"],
                                  "cost_load": cost.get("loadavg")}
        out.append(entry)
        msg = ", ".join(f"{k}: {entry[f'epochs_to_{k.replace(chr(32), chr(95))}']:.2f} ep"
                        if entry[f"epochs_to_{k.replace(' ', '_')}"] is not None else f"{k}: not reached"
                        for k in targets)
        run = entry.get("paper_run")
        secs = [(k, entry.get(f"seconds_to_{k.replace(' ', '_')}_at_{rows}_rows")) for k in ("1 epoch", "3 epochs")]
        msg += "".join(f"; {k}'s gap on {rows:,} rows at M = {M:,}: {v:.0f} s" for k, v in secs if v is not None)
        log(f"{name:>9} (|B| = {cert['batch_size']}): to today's gap after {msg}"
            + (f"; Zhang & Lai's run at M = {M:,}: {run['total_hours']:.2f} h ({run['iterations_s'] / 3600:.2f} h "
               f"iterations, {run['checks_s'] / 3600:.2f} h checks, {run['holdout_s'] / 3600:.2f} h holdout)"
               if run else ""))
    return out


def _emit(lines, path):
    if not path:
        return
    with open(path, "a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(dumps(line) + "\n")  # strict JSON: a non-finite figure is written as null
    print(f"appended {len(lines)} line(s) to {path}")


def joker(args) -> int:
    """``kopt bench joker`` (args: rows, features, batch_size, iterations, variants, certificate, epochs,
    checks, check_rows, project, json)."""
    variants = getattr(args, "variants", None)
    if getattr(args, "project", None):
        lines = []
        for path in args.project:
            with open(path, encoding="utf-8") as fh:
                lines += [json.loads(s) for s in fh if s.strip()]
        M = PAPER["M"] if not args.features or PAPER["M"] in args.features else args.features[0]
        _emit(project(lines, M=M, rows=args.rows), args.json)
        return 0
    if getattr(args, "certificate", False):
        _emit(certificate(rows=args.rows, features=args.features[0], variants=variants or ("today", "syrk-128"),
                          epochs=args.epochs, checks=args.checks, check_rows=args.check_rows), args.json)
        return 0
    res = run_joker(rows=args.rows, features=tuple(args.features), batch_size=args.batch_size,
                    iterations=args.iterations, variants=variants or ("today", "syrk-512", "syrk-128"))
    _emit([res], args.json)
    return 0


# -- the trust-region model through products only: measured, not shipped (docs/design/joker-iteration.md) --

def _pcg(apply_A, b, apply_P, tol, max_iter):
    """Preconditioned CG on A s = b from 0: the products it took to reach ‖r‖ ≤ tol‖b‖ (None: not within
    ``max_iter``)."""
    s = np.zeros_like(b)
    r = b.copy()
    z = apply_P(r)
    d = z.copy()
    rz = float(r @ z)
    stop = tol * float(np.linalg.norm(b))
    for k in range(1, max_iter + 1):
        Ad = apply_A(d)
        w = rz / float(d @ Ad)
        s += w * d
        r -= w * Ad
        if float(np.linalg.norm(r)) <= stop:
            return k
        z = apply_P(r)
        rz_new = float(r @ z)
        d = z + (rz_new / rz) * d
        rz = rz_new
    return None


def product_solve(rows=1_000_000, dim=28, M=100_000, batch_size=512, lam_j=2.0**-7, tol=1e-4, max_iter=2000,
                  jacobi=64, ranks=(32, 128), threads=None, log=print):
    """Could the block's trust-region model use K_BB only through products φ(X_B)(φ(X_B)ᵀv)?

    For one block of HIGGS-shaped rows at M features: the time to form K_BB (syrk, the shipped route), the
    time of one product through φ(X_B) kept in memory (|B|·M floats read twice), and the products that
    conjugate gradients needs on the block's Newton system (K_BB + λ_J I) s = −g at α = 0 (g = −y: the
    first step of every block) to a relative residual ``tol`` (the inner tolerance) -- plain, with the
    block-Jacobi preconditioner of ``jacobi``-row diagonal blocks (|B|·jacobi·M flops to form), and with
    rank-r randomized Nyström preconditioners (Frangella, Tropp & Udell 2023; 4|B|M·r flops to form).
    The product-only route pays preconditioner + products × product time; the shipped route pays K_BB.
    """
    threads = _threads.resolve_threads(threads)
    X, y = _data(min(rows, 50_000), dim)
    spec = joker_spec(M, batch_size, 1, lam_j / X.shape[0], "syrk")
    import kopt
    from kopt.api import assemble

    problem = assemble(kopt.load_spec(spec, check_files=False), (X, y))
    rng = np.random.default_rng(0)
    idx = np.sort(rng.choice(X.shape[0], batch_size, replace=False))
    fmap = problem.feature_map(M)
    scale = 1.0 / math.sqrt(fmap.count)
    Phi = (fmap.transform(problem.X[idx]) * np.float32(scale)).astype(np.float32)  # ψ(X_B), (|B|, M)
    from ...numerics.linalg import syrk_lower

    out = np.zeros((batch_size, batch_size), np.float32)
    with _threads.blas_threads(threads):
        t_gram = _median_time(lambda: syrk_lower(Phi, out), 3)
        v = rng.standard_normal(batch_size).astype(np.float32)
        t_prod = _median_time(lambda: Phi @ (Phi.T @ v), 5)
    K = out.astype(np.float64)
    K = np.tril(K) + np.tril(K, -1).T
    A = K + lam_j * np.eye(batch_size)
    b = np.where(y[idx] > 0, 1.0, -1.0)
    res = {"kind": "product_solve", "M": M, "batch_size": batch_size, "lambda_joker": lam_j, "tol": tol,
           "threads": threads, "gram_s": t_gram, "product_s": t_prod, "gram_in_products": t_gram / t_prod,
           "condition": float(np.linalg.cond(A)), "loadavg": list(os.getloadavg())}
    prods = {"none": _pcg(lambda s: A @ s, b, lambda r: r, tol, max_iter)}
    blocks = [slice(i, min(batch_size, i + jacobi)) for i in range(0, batch_size, jacobi)]
    inv = [np.linalg.inv(A[s, s]) for s in blocks]

    def jac(r):
        z = np.empty_like(r)
        for s, Ai in zip(blocks, inv):
            z[s] = Ai @ r[s]
        return z

    prods[f"block_jacobi_{jacobi}"] = _pcg(lambda s: A @ s, b, jac, tol, max_iter)
    build = {f"block_jacobi_{jacobi}": t_gram * jacobi / batch_size}
    for r in ranks:
        Om, _ = np.linalg.qr(rng.standard_normal((batch_size, r)))
        Yn = K @ Om  # K's sketch: 2 products with r columns through φ(X_B)
        nu = 1e-10 * np.linalg.norm(Yn)
        Yn = Yn + nu * Om
        C = np.linalg.cholesky(Om.T @ Yn)
        Bn = np.linalg.solve(C, Yn.T).T
        U, S, _ = np.linalg.svd(Bn, full_matrices=False)
        lam_hat = np.maximum(S**2 - nu, 0.0)
        top = lam_hat[-1] + lam_j

        def nys(x, U=U, lam_hat=lam_hat, top=top):
            Ux = U.T @ x
            return U @ (Ux * (top / (lam_hat + lam_j))) + (x - U @ Ux)

        prods[f"nystrom_{r}"] = _pcg(lambda s: A @ s, b, nys, tol, max_iter)
        Om32 = Om.astype(np.float32)
        with _threads.blas_threads(threads):
            build[f"nystrom_{r}"] = _median_time(lambda: Phi @ (Phi.T @ Om32), 3)  # K_BB Ω through φ(X_B)
    res["products"] = prods
    res["seconds"] = {k: (build.get(k, 0.0) + (n if n is not None else max_iter) * t_prod) for k, n in prods.items()}
    res["seconds"]["form K_BB (syrk)"] = t_gram
    log(f"M = {M:,}, |B| = {batch_size}: K_BB by syrk {t_gram * 1e3:.1f} ms = {t_gram / t_prod:.1f} products of "
        f"{t_prod * 1e3:.2f} ms; cond(K_BB + λ_J I) = {res['condition']:.3g}; CG products to {tol:g}: "
        + ", ".join(f"{k} {v}" for k, v in prods.items()) + "; seconds: "
        + ", ".join(f"{k} {v:.3f}" for k, v in res["seconds"].items()))
    return res


def _median_time(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))
