"""Joker: dual block coordinate descent with trust region (DBCD-TR, papers/004 Alg. 3).

kopt's objective is ``λ/2 ‖f‖² + (1/n) Σ ℓ(y_i, f(x_i))``; papers/004 writes
``½‖θ‖² + (1/λ_J) Σ ℓ`` — the same minimiser with ``λ_J = λ n``
(:func:`kopt.objectives.joker_lambda`).  The solver works in papers/004's
scaling internally: it minimises

    J(α) = ½ αᵀKα + (1/λ_J) Σ ξ*_{y_i}(−λ_J α_i)   over the box of dom ξ*,

and reports kopt's dual ``D(α) = −λ J(α)`` (the same α: f = Σ α_i k(x_i, ·)
in both conventions), kopt's primal, and the duality gap ``P − D``.  The
stopping rule is the *relative* gap ``(P − D) / max(|P|, |D|)`` ≤ ``tol``.
"""
from __future__ import annotations

import math

import numpy as np

from kopt import objectives
from kopt.components import Solver
from kopt.result import SolverOutput

from .dualterms import DualTerms
from .engines import ExactEngine, FeatureEngine, dense_rows
from .trust_region import FactorCache, solve_block


class JokerSolver(Solver):
    """DBCD-TR on the dual, exact kernel or random features (papers/004)."""

    name = "joker"
    summary = "dual block coordinate descent with trust region (Joker, papers/004)"
    forms = ("dual",)
    targets = ("real", "binary")
    needs_conjugate = True
    kernel_mode = "either"
    one_vs_rest = True
    params = {
        "mode": {"enum": ["auto", "exact", "features"], "default": "auto",
                 "description": "exact: K_BB and K_B,:α from the kernel (n up to ~1e5); features: the random-feature "
                                "map of model.features (count M); auto: exact when n <= auto_exact_rows"},
        "auto_exact_rows": {"type": "integer", "minimum": 1, "default": 50000,
                            "description": "largest training set mode auto solves exactly"},
        "block_size": {"type": "integer", "minimum": 1, "default": 512, "description": "|B|, rows per block"},
        "selection": {"enum": ["auto", "random", "greedy"], "default": "auto",
                      "description": "random: a uniformly drawn block of a fixed partition (papers/004); greedy: the |B| "
                                     "rows with the largest one-coordinate decrease of the dual (exact mode only, where "
                                     "the full gradient is kept); auto: greedy in exact mode, random with features"},
        "iterations": {"type": "integer", "minimum": 1, "default": 10000, "description": "block iterations (cap)"},
        "tol": {"type": "number", "minimum": 0, "default": 1.0e-3,
                "description": "stop when the relative duality gap (P - D) / max(|P|, |D|) is at most tol"},
        "check_every": {"type": ["integer", "null"], "minimum": 1, "default": None,
                        "description": "iterations between primal/gap checks, the stopping rule (default: every "
                                       "iteration in exact mode, where the gap costs O(n); one epoch, ceil(n/|B|), "
                                       "with features, where it costs a pass over the data)"},
        "holdout_every": {"type": ["integer", "null"], "minimum": 0, "default": None,
                          "description": "iterations between holdout metrics in the trace (default: one epoch; "
                                         "0: none -- the result's metrics are computed at the end either way)"},
        "gap_rows": {"type": "integer", "minimum": 0, "default": 0,
                     "description": "estimate the primal and the gap on this many seeded training rows (0: all rows)"},
        "holdout_rows": {"type": "integer", "minimum": 0, "default": 0,
                         "description": "holdout rows scored at intermediate checks (0: all); the final metrics use all"},
        "tr_iterations": {"type": "integer", "minimum": 1, "default": 50, "description": "trust-region steps per block (T_TR)"},
        "cg_iterations": {"type": "integer", "minimum": 1, "default": 50, "description": "CG steps per trust-region step"},
        "inner_tol": {"type": "number", "exclusiveMinimum": 0, "default": 1.0e-4,
                      "description": "a block is solved when its projected gradient falls by this factor"},
        "newton": {"type": "boolean", "default": True,
                   "description": "try the exact minimiser of the trust-region model (Cholesky of Q_FF) before CG-Steihaug; "
                                  "it is used only when it lies inside the trust region and the box"},
        "eta": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.25, "default": 0.125,
                "description": "trust-region acceptance threshold on rho"},
        "max_radius": {"oneOf": [{"type": "number", "exclusiveMinimum": 0}, {"const": "auto"}], "default": "auto",
                       "description": "trust-region radius cap (auto: 4 sqrt(|B|) x the block's alpha scale, so the first radius spans the box)"},
        "threads": {"type": ["integer", "null"], "minimum": 1, "default": None,
                    "description": "worker threads for kernel columns and feature blocks (default: the CPUs this "
                                   "process may use); BLAS itself is kept to one thread"},
        "model_kernel": {"enum": ["features", "exact"], "default": "features",
                         "description": "features mode: the K_BB of the trust-region model -- features: "
                                        "psi(X_B) psi(X_B)^T (papers/004 Alg. 3, |B|^2 M flops); exact: k(X_B, X_B) "
                                        "(|B|^2 d flops) while J, rho and K_B,:alpha keep the features, so the "
                                        "answer is the same; needs phi(X_B) within block_memory_mb"},
        "factor_cache_mb": {"type": "integer", "minimum": 0, "default": 128,
                            "description": "keep Cholesky factors of fixed blocks between visits (losses with a constant "
                                           "conjugate curvature) within this budget"},
        "block_memory_mb": {"type": "integer", "minimum": 1, "default": 256,
                            "description": "features mode: keep phi(X_B) between the solve and the update when it fits"},
    }

    def check_spec(self, spec):
        model = spec["model"]
        reg = model.get("regularizer") or {}
        if reg.get("name") != "l2":
            yield ("model", "regularizer", "name"), (
                f"solver 'joker' solves the dual of the L2-regularised problem; regularizer {reg.get('name')!r} "
                "is not supported (use l2)")
        elif not reg.get("lambda", 0) > 0:
            yield ("model", "regularizer", "lambda"), "solver 'joker' needs lambda > 0 (the dual box scales with 1/(lambda n))"
        if self.options.selection == "greedy" and self.options.mode != "exact":
            yield ("solver", "selection"), (
                "selection 'greedy' needs mode: exact (the full dual gradient is kept only in exact mode); "
                "use selection: random, or set mode: exact")
        if self.options.mode == "features":
            from kopt.plugins import registry

            kcls = registry().get("kernel", model["kernel"]["name"])
            if not kcls.has_features:
                yield ("solver", "mode"), (
                    f"mode 'features' needs a kernel with a random-feature sampler and {kcls.name!r} has none; "
                    "use mode: exact")

    # ------------------------------------------------------------------------------------------------
    def run(self, problem, run):
        o = self.options
        xp = problem.xp
        n = problem.n
        lam = problem.lam
        lam_j = objectives.joker_lambda(lam, n)
        mode = o.mode
        if mode == "auto":
            mode = "exact" if n <= o.auto_exact_rows or not problem.kernel.has_features else "features"
        Y = _label_matrix(problem)
        C = Y.shape[1]
        dtype = problem.dtype
        terms = [DualTerms(problem.loss, Y[:, c], lam_j, dtype) for c in range(C)]
        threads = o.threads or _cpus()
        if mode == "exact":
            engine = ExactEngine(problem, C, dtype, threads)
        else:
            engine = FeatureEngine(problem, C, problem.features["count"], o.block_memory_mb, threads,
                                   o.model_kernel)
        try:
            with single_blas():
                return self._run(problem, run, engine, terms, Y, lam, lam_j)
        finally:
            engine.close()

    def _run(self, problem, run, engine, terms, Y, lam, lam_j):
        o = self.options
        xp = problem.xp
        n = problem.n
        C = Y.shape[1]
        mode = engine.name
        dtype = problem.dtype
        bs = min(o.block_size, n)
        blocks, block_of = _partition(problem, bs)
        nblocks = len(blocks)
        T = o.iterations
        every = o.check_every or (1 if mode == "exact" else nblocks)
        holdout_every = nblocks if o.holdout_every is None else o.holdout_every
        everything = xp.arange(n)
        gap_rows = _sample(problem.rng("gap_rows"), n, o.gap_rows, xp)
        test_rows = None
        if problem.X_test is not None and o.holdout_rows:
            test_rows = _sample(problem.rng("holdout_rows"), problem.X_test.shape[0], o.holdout_rows, xp)
        greedy = o.selection == "greedy" or (o.selection == "auto" and mode == "exact")
        kdiag = _kernel_diag(problem, dtype) if greedy else None
        max_radius = None if o.max_radius == "auto" else float(o.max_radius)

        factors = FactorCache(o.factor_cache_mb * 2**20)
        alpha = xp.zeros((n, C), dtype=np.float64)
        fsum = np.array([t.value(alpha[:, c], everything) for c, t in enumerate(terms)])
        start = run.start_iteration
        if run.resume_state is not None:
            st = run.resume_state
            alpha = xp.asarray(st["alpha"], dtype=np.float64)
            fsum = np.asarray(st["fsum"], dtype=np.float64)
            engine.restore(st)

        def state():
            return {"alpha": alpha, "fsum": fsum.copy(), **engine.state()}

        stats = {"tr_steps": 0, "cg_steps": 0, "accepted": 0}
        last = None
        t = start
        for t in range(start + 1, T + 1):
            if greedy:
                j = _greedy_block(terms, alpha, engine.u, kdiag, everything, block_of, nblocks, xp)
            else:
                j = int(problem.rng("blocks", t).integers(nblocks))
            idx = xp.asarray(blocks[j])
            old = alpha[idx]
            new = self._block(engine, terms, idx, old, factors.slot, j, max_radius, stats)
            for c, term in enumerate(terms):
                fsum[c] += term.value(new[:, c], idx) - term.value(old[:, c], idx)
            engine.update(new - old)
            alpha[idx] = new
            J = 0.5 * _host(engine.norm_sq(alpha)) + fsum
            dual = float(-lam * J.sum())
            holdout = bool(holdout_every) and (t % holdout_every == 0 or t == T)
            if t % every == 0 or t == T or holdout:
                # recompute the separable sum exactly (erases the drift of the running sum)
                fsum = np.array([tm.value(alpha[:, c], everything) for c, tm in enumerate(terms)])
                last = self._check(problem, engine, terms, Y, alpha, fsum, lam, gap_rows, test_rows, holdout)
                last["iteration"] = t
                keep_going = run.report(t, objective=last["primal"], dual=last["dual"], gap=last["gap"], rows=bs,
                                        metrics=last["metrics"], rel_gap=last["rel_gap"], state=state)
                if last["rel_gap"] <= o.tol or not keep_going:
                    break
            else:
                if not run.report(t, dual=dual, rows=bs, state=state):
                    break
        if last is None or last["iteration"] != t:
            fsum = np.array([tm.value(alpha[:, c], everything) for c, tm in enumerate(terms)])
            last = self._check(problem, engine, terms, Y, alpha, fsum, lam, gap_rows, None, False)
        predictor, pinfo = engine.predictor(alpha)
        success = last["rel_gap"] <= o.tol
        message = (f"relative duality gap {last['rel_gap']:.3g} <= tol {o.tol:g} after {t} iterations" if success else
                   f"relative duality gap {last['rel_gap']:.3g} > tol {o.tol:g} after {t} iterations "
                   "(raise solver.iterations, or loosen solver.tol)")
        info = {"mode": engine.name, "lambda_joker": lam_j, "block_size": bs, "n_blocks": nblocks,
                "epochs": t * bs / n, "rel_gap": last["rel_gap"], "one_vs_rest": C > 1 and problem.loss.target != "real",
                "gap_rows": int(gap_rows.shape[0]) if gap_rows is not None else n, **stats, **pinfo}
        return SolverOutput(predictor, n_iter=t, success=success, message=message, objective=last["primal"],
                            dual=last["dual"], gap=last["gap"], info=info)

    def _block(self, engine, terms, idx, old, slot, j, max_radius, stats):
        """Solve block ``idx`` for every output (papers/004 Alg. 1); returns the block's new α."""
        o = self.options
        xp = terms[0].xp
        K, gbar = engine.prepare(idx)
        new = xp.empty_like(old)
        true_kernel = engine.true_kernel if getattr(engine, "exact_model", False) else None
        for c, term in enumerate(terms):
            a0 = term.project(old[:, c], idx)  # papers/004 Sec. 3.2: start inside the shrunk box
            gb = gbar[:, c]
            moved = a0 - old[:, c]
            if bool(xp.any(moved != 0)):
                gb = gb + (true_kernel(moved) if true_kernel is not None else K @ moved)
            res = solve_block(K, gb, a0, term, idx, max_steps=o.tr_iterations, cg_iter=o.cg_iterations,
                              inner_tol=o.inner_tol, eta=o.eta, max_radius=max_radius, newton=o.newton,
                              cache=slot((j, c)), true_kernel=true_kernel)
            new[:, c] = res.a
            stats["tr_steps"] += res.tr_steps
            stats["cg_steps"] += res.cg_steps
            stats["accepted"] += res.accepted
        return new

    # ------------------------------------------------------------------------------------------------
    def _check(self, problem, engine, terms, Y, alpha, fsum, lam, gap_rows, test_rows, holdout):
        """Primal, dual and gap in kopt's convention (summed over one-vs-rest outputs), and holdout metrics."""
        xp = problem.xp
        norm = _host(engine.norm_sq(alpha))
        scores = engine.scores(gap_rows)
        dual = -lam * (0.5 * norm + fsum)
        D = float(dual.sum())
        if gap_rows is None:
            loss_mean = np.array([float(problem.loss.value(scores[:, c], Y[:, c]).mean()) for c in range(Y.shape[1])])
            P = float((0.5 * lam * norm + loss_mean).sum())
            gap = P - D
        else:
            # P − D = mean_i FY_i with FY_i = ℓ(y_i, f_i) + ℓ*(v_i) − v_i f_i ≥ 0, v_i = −λ n α_i
            # (Fenchel–Young per row; Σ_i λ n α_i f_i / n = λ‖f‖²).  Sampling FY_i, which all vanish
            # at the optimum, estimates the gap far better than sampling the primal's loss alone.
            lam_j = terms[0].lam_j
            gap = 0.0
            for c, term in enumerate(terms):
                a = alpha[gap_rows, c]
                fy = problem.loss.value(scores[:, c], Y[gap_rows, c]) + lam_j * term.values(a, gap_rows) \
                    + lam_j * a * scores[:, c]
                gap += float(fy.mean())
            P = D + gap
        rel = gap / max(abs(P), abs(D), 1e-300)
        metrics = {}
        if holdout and problem.X_test is not None and problem.y_test_raw is not None:
            Xt = problem.X_test if test_rows is None else _take(problem.X_test, test_rows, xp)
            s = engine.test_scores(alpha, Xt)
            s = s[:, 0] if s.shape[1] == 1 else s
            if test_rows is None:
                metrics = problem.holdout_metrics(s)
            else:
                from kopt.metrics import evaluate

                yt = np.asarray(problem.y_test_raw)[_host(test_rows)]
                metrics = evaluate(problem.preprocessor.target, yt, _host(s), problem.preprocessor)
        return {"primal": P, "dual": D, "gap": gap, "rel_gap": rel, "metrics": metrics}


def _partition(problem, bs):
    """papers/004 App. B.1: a fixed random partition of the rows into ⌈n/|B|⌉ blocks (sorted rows),
    and each row's block index on the backend."""
    n = problem.n
    perm = problem.rng("partition").permutation(n)
    blocks = [np.sort(b) for b in np.array_split(perm, math.ceil(n / bs))]
    block_of = np.empty(n, dtype=np.int64)
    for b, rows in enumerate(blocks):
        block_of[rows] = b
    return blocks, problem.xp.asarray(block_of)


def _greedy_block(terms, alpha, u, kdiag, everything, block_of, nblocks, xp):
    """The block of the fixed partition with the largest summed one-coordinate decrease (block Gauss–Southwell-q)."""
    score = terms[0].coordinate_decrease(alpha[:, 0], u[:, 0], kdiag, everything)
    for c in range(1, len(terms)):
        score = score + terms[c].coordinate_decrease(alpha[:, c], u[:, c], kdiag, everything)
    per_block = xp.zeros(nblocks, dtype=np.float64)
    _scatter_add(xp, per_block, block_of, score)
    return int(xp.argmax(per_block))


def _scatter_add(xp, out, index, values):
    if xp is np:
        np.add.at(out, index, values)
    else:  # pragma: no cover - GPU only
        import cupyx

        cupyx.scatter_add(out, index, values)


def _kernel_diag(problem, dtype):
    """K_ii for every training row (float64)."""
    xp = problem.xp
    out = xp.empty(problem.n, dtype=np.float64)
    step = 1 << 16
    for lo in range(0, problem.n, step):
        hi = min(problem.n, lo + step)
        out[lo:hi] = xp.asarray(problem.kernel.diag(dense_rows(problem.X, slice(lo, hi), xp, dtype)), dtype=np.float64)
    return out


_CONTROLLER = []


def single_blas():
    """A context that limits BLAS to one thread (threadpoolctl, when installed), else does nothing."""
    import contextlib

    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController

            _CONTROLLER.append(ThreadpoolController())
        except Exception:  # threadpoolctl missing or unusable
            _CONTROLLER.append(None)
    c = _CONTROLLER[0]
    return c.limit(limits=1, user_api="blas") if c is not None else contextlib.nullcontext()


def _cpus():
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _ovr(problem):
    """One-vs-rest: a binary loss on class ids (kopt.api.assemble encodes them so for this solver)."""
    return problem.preprocessor.target == "multiclass" and problem.loss.target == "binary"


def _label_matrix(problem):
    """Labels as an (n, C) float64 matrix: one column, or ±1 one-vs-rest columns for multiclass ids."""
    xp = problem.xp
    y = problem.y
    if _ovr(problem):
        ids = y.astype(np.int64)
        classes = xp.arange(problem.n_classes)
        return xp.where(ids[:, None] == classes[None, :], 1.0, -1.0)
    return xp.asarray(y, dtype=np.float64)[:, None]


def _sample(rng, n, k, xp):
    if not k or k >= n:
        return None
    return xp.asarray(np.sort(rng.choice(n, size=k, replace=False)))


def _take(X, rows, xp):
    if hasattr(X, "tocsr"):
        return X[_host(rows)]
    return X[rows]


def _host(a):
    from kopt.backend import to_numpy

    return to_numpy(a)
