"""Joker's primal route: Newton on M features, certified by the dual of Zhang & Lai (2025).

With M features ψ(x) and n ≫ M, Zhang & Lai's problem in its own scaling,

    min_θ  F(θ) = ½ θᵀRθ + (1/λ_J) Σ_i ℓ(y_i, ψ(x_i)ᵀθ),

is an M-dimensional smooth problem for a loss with a Lipschitz gradient (square, Huber, squared
hinge, logistic).  The features are the spec's random ones, ψ = φ/√M with R = I, or Nyström's,
ψ(x) = k(x, C) on M training rows C with R = K_CC (``model.features.kind: nystrom``,
:mod:`kopt.nystrom`).  Each iteration is one Newton step: H s = −g with H = R + Ψᵀ D Ψ / λ_J
(D = ℓ''(u), u = Ψθ), solved by conjugate gradients preconditioned with the Cholesky factor of
P = R + Ψᵀ W Ψ / λ_J, the M × M Gram at weights W (float32; n M²/2 multiply-adds, once).  When
D differs from W on few rows -- piecewise-quadratic losses (Huber, squared hinge) whose rows
cross a kink -- the Gram is updated by those rows (a rank-k change, k M² flops) and refactored,
so P = H and CG converges in one or two products; otherwise (the logistic loss) P is kept and
CG does more products.  Each product is one fused pass over the rows, on features kept in
memory when they fit ``feature_memory_mb`` and regenerated otherwise (:mod:`kopt.numerics.bound_features`).
A backtracking (Armijo) line search needs no pass: Ψ(θ + t s) = u + t Ψs, and Ψs comes out of
the CG products.  For the square loss the first step is the exact solution.

The certificate is Zhang & Lai's dual at α = −ℓ'(u)/λ_J -- feasible for every such loss -- with
Ψᵀα = Rθ − g (g, the gradient, is at hand), so the duality gap costs O(n) (and one solve with R
for Nyström) and no pass:

    kopt's P = λ F(θ),    kopt's D = −λ [½ (Rθ − g)ᵀR⁻¹(Rθ − g) + (1/λ_J) Σ_i ξ*_{y_i}(ℓ'(u_i))].

One-vs-rest outputs share the passes and the preconditioner (W = the largest D over outputs).
"""
from __future__ import annotations

import numpy as np

from kopt.contract.iterative import Check, Step
from kopt.models.predictors import FeatureExpansion, KernelExpansion
from kopt.numerics import rows as _rows
from kopt.numerics import threads as _threads
from kopt.numerics.backend import get_namespace, to_numpy
from kopt.numerics.bound_features import bind, syrk_update
from kopt.nystrom.centers import NystromRows, add_center_kernel, center_basis, centers_used, choose_centers

#: Armijo constant of the line search
ARMIJO = 1e-4
#: CG products after which a continuous-curvature preconditioner is rebuilt
REBUILD_CG = 8
#: warm start (squared hinge: curvature 0/1 that is not constant) when n is at least this many times M
WARM_START_FACTOR = 8
#: Newton steps of the warm start, at most, and the relative gap that ends it sooner
WARM_START_STEPS = 6
WARM_START_TOL = 1e-2
#: the warm start solves on n / WARM_START_FRACTION rows (at least 4M)
WARM_START_FRACTION = 12
#: factor the preconditioner in float64 up to this many features (8·M² bytes; the Gram is float64 always)
FLOAT64_FACTOR = 2048


def primal_plan(options, sizes, threads):
    """The primal route's :mod:`kopt.numerics.memory` plan (:meth:`kopt_plugins.joker.solver.JokerSolver.memory_plan`):
    the n x M features where they fit ``feature_memory_mb`` (:mod:`kopt.numerics.bound_features`; Nystrom:
    k(X, C), :class:`kopt.nystrom.centers.NystromRows`); the preconditioner's Gram (M x M float64: one for a
    constant curvature, factored in place; else the kept Gram and the copy its updates factor); Nystrom's R and its
    factor U (M x M float64 each); a rank update's chunk of features; the warm start's rows (squared-hinge-like
    losses); Newton's arrays over the rows (n x outputs float64: u, D, z, a product's Ψp,
    the labels, the loss values) and over the features; each worker's chunk of features."""
    from kopt.numerics.memory import matrices

    n, C, d, itemsize = sizes.n, sizes.outputs, sizes.d, sizes.itemsize
    problem = sizes.problem
    nystrom = sizes.kind == "nystrom"
    F = int(problem.features.block_size) if problem is not None else 512
    M = min(sizes.count, n) if nystrom else -(-sizes.count // F) * F
    held = n * M * itemsize <= options.feature_memory_mb * 2**20
    constant = problem is not None and _constant_curvature(
        problem.loss, np.asarray(to_numpy(problem.y[:64]), dtype=np.float64).reshape(-1, 1))
    plan = []
    if held:
        plan.append(matrices(1, n, M, sizes.dtype, "the rows' features, kept"))
    grams = 1 if constant else 3
    plan.append(matrices(grams, M, M, "float64", "the preconditioner's Gram" + ("" if constant else
                                                                              ", the kept Gram and its update's copy")))
    if nystrom:
        plan.append(matrices(2, M, M, "float64", "the centers' R = K_CC and its factor U"))
        plan.append(matrices(2, M, d, sizes.dtype, "the centers"))
    else:
        plan.append(matrices(1, M, d + 1, sizes.dtype, "the feature parameters"))
    if not constant:  # _update: the rows whose curvature changed, 1,024 at a time (features, float64, picked, scaled)
        rows = min(n, 1024)
        plan.append((f"a rank update's chunk of {rows:,} rows' {M:,} features: {sizes.dtype.name}, and float64 picked "
                     "and scaled", rows * M * (itemsize + 3 * 8)))
    piecewise = problem is not None and _piecewise_curvature(
        problem.loss, np.asarray(to_numpy(problem.y[:64]), dtype=np.float64).reshape(-1, 1))
    if options.primal_warm_start and piecewise and not constant and n >= WARM_START_FACTOR * M:
        s = max(WARM_START_FACTOR // 2 * M, n // WARM_START_FRACTION)  # PrimalFeatures._warm_start's rows
        plan.append(("the warm start's rows: their features where they fit, and Newton's arrays",
                     (s * M * itemsize if s * M * itemsize <= options.feature_memory_mb * 2**20 else 0)
                     + 8 * s * C * 8))
    workers = max(1, min(threads, 8))
    plan += [matrices(8, n, C, "float64", "Newton's arrays over the rows: u, D, z, Psi p, labels, loss values"),
             matrices(10, M, C, "float64", "Newton's arrays over the features"),
             (f"{workers} workers' chunks of features", workers * 2 * (1 << 20))]
    return plan


def eligible(loss) -> bool:
    """Whether the primal route applies: a loss with a Lipschitz gradient (finite curvature bound)."""
    return loss.smoothness() is not None


class PrimalFeatures:
    """The state and steps of the primal route (see the module docstring)."""

    name = "primal"

    def __init__(self, problem, Y, lam_j, *, cg_iterations, memory_bytes, threads, warm_start=True):
        self.problem = problem
        self.xp = problem.xp
        self.Y = Y
        self.C = Y.shape[1]
        self.lam = problem.lam
        self.lam_j = lam_j
        self.loss = problem.loss
        w = problem.sample_weight  # row weights (mean 1): the loss of row i counts w_i times
        self.w = None if w is None else self.xp.asarray(w, dtype=np.float64)[:, None]
        self.threads = threads
        self.basis = (NystromBasis if problem.features.kind == "nystrom" else RandomBasis)(problem, threads)
        self.rows = self.basis.bind(problem.X, memory_bytes)
        self.M = self.basis.M
        self.max_cg = cg_iterations
        self.constant_curvature = _constant_curvature(self.loss, Y)
        self.piecewise = _piecewise_curvature(self.loss, Y)
        self.last_cg = 0
        self.theta = self.xp.zeros((self.M, self.C), dtype=np.float64)
        self.weights = None  # W of the preconditioner, and its Gram (kept while it can be updated)
        self.gram = None
        self.factor = None
        self.stats = {"passes": 0, "cg_steps": 0, "grams": 0, "gram_updates": 0, "line_search_halvings": 0,
                      "warm_start_rows": 0, "warm_start_passes": 0}
        if warm_start and self.piecewise and not self.constant_curvature and problem.n >= WARM_START_FACTOR * self.M:
            self._warm_start(memory_bytes)
        self._refresh(count=False)  # u = Ψθ, g, D at the start (θ = 0, or the warm start)

    def _warm_start(self, memory_bytes):
        """θ from the same problem on a seeded subsample of the rows (λ_J scaled by s/n).

        Squared-hinge Newton from θ = 0 starts with every row active: its first Gram is the whole
        n M², and five more steps of rank updates shed rows until the active set settles (ijcnn1:
        50,000 → 31,500 → … → 10,000 rows).  Solved first on s = max(4M, n/5) rows, the start is
        already near the final active set, and the full problem's Gram is paid on those rows only.
        """
        n = self.problem.n
        s = max(WARM_START_FACTOR // 2 * self.M, n // WARM_START_FRACTION)
        rows = self.xp.asarray(np.sort(self.problem.rng("primal_warm_start").choice(n, size=s, replace=False)))
        sub = PrimalFeatures.__new__(PrimalFeatures)
        sub.__dict__.update(self.__dict__)
        sub.Y, sub.lam_j = self.Y[rows], self.lam_j * s / n
        sub.w = None if self.w is None else self.w[rows]
        sub.rows = self.basis.bind(_rows.take(self.problem.X, rows), memory_bytes)
        sub.stats = dict(self.stats)
        sub._refresh(count=False)
        for _ in range(WARM_START_STEPS):
            sub.step(0)
            check = sub.check(None)
            if check.rel_gap is not None and check.rel_gap <= WARM_START_TOL:
                break
        self.theta = sub.theta
        self.stats["warm_start_rows"] = int(s)
        self.stats["warm_start_passes"] = sub.stats["passes"]

    def cadence(self):
        # the gap is O(n) from what each step keeps; a handful of steps need no holdout trace
        return 1, 0

    # -- passes over the rows ----------------------------------------------------------------
    def _refresh(self, count=True):
        """u = Ψθ, g = θ + Ψᵀℓ'(u)/λ_J and D = ℓ''(u), exactly, in one fused pass."""
        Y, loss, w = self.Y, self.loss, self.w

        def grad(f, lo, hi):
            g = loss.grad(f, Y[lo:hi])
            return g if w is None else g * w[lo:hi]

        u, G = self.rows.predict_adjoint(self.theta, grad)
        self.stats["passes"] += int(count)
        self.u = u
        self.g = self.basis.metric_product(self.theta) + G / self.lam_j
        self.D = self._weigh(loss.curvature(u, Y))

    def _hessian_product(self, p):
        """(H p, Ψp) for the (M, C) directions p, in one fused pass."""
        D = self.D
        Pp, G = self.rows.predict_adjoint(p, lambda f, lo, hi: D[lo:hi] * f)
        self.stats["passes"] += 1
        return self.basis.metric_product(p) + G / self.lam_j, Pp

    # -- the preconditioner --------------------------------------------------------------------
    def _prepare_preconditioner(self):
        """Make P match the current curvature when that pays (see the module docstring).

        Piecewise-constant curvature (square, Huber, squared hinge: D ∈ {0, 1}): the Gram follows
        D exactly, by a rank-k update on the k rows that changed or by a rebuild on the rows with
        D > 0, whichever touches fewer rows.  Continuous curvature (logistic): P is kept, and
        rebuilt at the current D when the last CG needed more than ``REBUILD_CG`` products.
        """
        xp = self.xp
        w = xp.max(self.D, axis=1)
        if self.factor is None:
            self._build(w)
            return
        if self.gram is None:
            return  # constant curvature: P is H
        if self.piecewise:
            changed = xp.nonzero(w != self.weights)[0]
            if changed.shape[0] == 0:
                return
            if changed.shape[0] <= int(xp.count_nonzero(w)):
                self._update(changed, w)
            else:
                self._build(w)
        elif self.last_cg > REBUILD_CG:
            self._build(w)

    def _build(self, w, count=True):
        self.weights = w
        G = self.rows.gram(w)
        self.stats["grams"] += int(count)
        # a constant curvature never changes W: the Gram need not be kept beside its factor
        self.gram = None if self.constant_curvature else G.copy()
        self._factor(G)

    def _update(self, changed, w, rows=1024):
        """G += Σ_{i changed} (w_i − W_i) ψ_iψ_iᵀ (float64 rank updates, a chunk of rows at a time)."""
        xp = self.xp
        delta = (w - self.weights)[changed]
        for lo in range(0, int(changed.shape[0]), rows):
            Z = self.rows.features(changed[lo:lo + rows]).astype(np.float64)
            d = delta[lo:lo + rows]
            for sign in (1.0, -1.0):
                pick = xp.nonzero(sign * d > 0)[0]
                if pick.shape[0]:
                    syrk_update(self.gram, Z[pick] * xp.sqrt(xp.abs(d[pick]))[:, None], sign, self.threads)
        self.weights = w
        self.stats["gram_updates"] += 1
        self._factor(self.gram.copy())

    def _factor(self, G):
        """Cholesky of R + G/λ_J (upper triangle of G; G is overwritten).

        float64 up to ``FLOAT64_FACTOR`` features (R = K_CC of Nyström features has eigenvalues
        far below the Gram's, which float32 rounds away), float32 beyond with a small ridge where
        the factorisation needs one (PCG absorbs a preconditioner that is a little off).  BLAS runs
        on one thread: a threaded LAPACK gives other bits on other CPU counts (and a small
        factorisation is faster on one thread anyway, many times faster on a busy machine).
        """
        import scipy.linalg

        xp = self.xp
        if self.M > FLOAT64_FACTOR:
            G = G.astype(np.float32)
        G *= G.dtype.type(1.0 / self.lam_j)
        self.basis.add_metric(G)
        diag = G[np.diag_indices(self.M)].copy()
        _mirror(G, to_lower=True)  # the lower triangle keeps a copy: a failed in-place factorisation is undone from it
        for attempt in range(5):
            if attempt:
                _mirror(G, to_lower=False)
            # a ridge of 1e-7, 1e-6, … of the mean diagonal: the float32 Gram is PSD only up to rounding
            ridge = 0.0 if attempt == 0 and G.dtype == np.float64 else float(diag.mean()) * 10.0 ** (attempt - 7)
            G[np.diag_indices(self.M)] = diag + G.dtype.type(ridge)
            try:
                with _threads.blas_threads(1):  # one thread: a threaded LAPACK gives other bits on other CPU counts
                    if xp is np:
                        self.factor = scipy.linalg.cho_factor(G, lower=False, overwrite_a=True, check_finite=False)
                    else:  # pragma: no cover - GPU
                        self.factor = xp.linalg.cholesky(xp.triu(G) + xp.triu(G, 1).T)
                return
            except np.linalg.LinAlgError:
                continue
        raise np.linalg.LinAlgError("the Newton preconditioner is not positive definite, even with a ridge")

    def _precondition(self, r):
        xp = self.xp
        if xp is np:
            import scipy.linalg

            c, lower = self.factor
            return scipy.linalg.cho_solve((c, lower), r.astype(c.dtype), check_finite=False).astype(np.float64)
        import cupyx.scipy.linalg as cl  # pragma: no cover - GPU

        L = self.factor
        z = cl.solve_triangular(L, r.astype(L.dtype), lower=True)
        return cl.solve_triangular(L.T, z, lower=False).astype(np.float64)

    # -- one Newton iteration --------------------------------------------------------------------
    def step(self, t):
        xp = self.xp
        self._prepare_preconditioner()
        s, z, cg = self._newton_direction()
        self.last_cg = cg
        step = self._line_search(s, z)
        self.theta = self.theta + step * s
        self._refresh()
        return Step(rows=self.problem.n * (cg + 1),
                    extra={"cg": cg, "step": step, "grad_norm": float(xp.sqrt((self.g * self.g).sum()))})

    def _newton_direction(self):
        """s ≈ −H⁻¹g by preconditioned CG (all outputs at once), and z = Ψs."""
        xp = self.xp
        g = self.g
        s = xp.zeros_like(g)
        z = xp.zeros_like(self.u)
        r = -g
        q = self._precondition(r)
        d = q.copy()
        rq = (r * q).sum(axis=0)
        gnorm = xp.sqrt((g * g).sum(axis=0))
        # inexact Newton: a relative residual min(0.1, √‖g‖) keeps the convergence superlinear
        target = xp.minimum(0.1, xp.sqrt(gnorm)) * gnorm
        it = 0
        for it in range(1, self.max_cg + 1):
            Hd, Pd = self._hessian_product(d)
            dHd = (d * Hd).sum(axis=0)
            w = xp.where(dHd > 0, rq / xp.where(dHd > 0, dHd, 1.0), 0.0)
            s += w * d
            z += w * Pd
            r -= w * Hd
            if bool(xp.all(xp.sqrt((r * r).sum(axis=0)) <= target)):
                break
            q = self._precondition(r)
            rq_new = (r * q).sum(axis=0)
            d = q + xp.where(rq > 0, rq_new / xp.where(rq > 0, rq, 1.0), 0.0) * d
            rq = rq_new
        self.stats["cg_steps"] += it
        return s, z, it

    def _line_search(self, s, z):
        """The largest t in 1, ½, ¼, … with Armijo's decrease of F along s (no pass: Ψ(θ+ts) = u + tz)."""
        F0 = self._objective(self.theta, self.u)
        slope = float((self.g * s).sum())
        t = 1.0
        for _ in range(30):
            if self._objective(self.theta + t * s, self.u + t * z) <= F0 + ARMIJO * t * slope:
                return t
            t *= 0.5
            self.stats["line_search_halvings"] += 1
        return t

    def _weigh(self, values):
        """Per-row values times the row weights (unchanged without weights)."""
        return values if self.w is None else values * self.w

    def _objective(self, theta, u):
        """F(θ) in Zhang & Lai's scaling (summed over outputs)."""
        return 0.5 * float((theta * self.basis.metric_product(theta)).sum()) \
            + float(self._weigh(self.loss.value(u, self.Y)).sum()) / self.lam_j

    # -- certificate, scores, checkpoint, model ------------------------------------------------
    def check(self, rows):
        """P and D on every row: O(n), no pass (the route keeps u and g; ``rows`` is not needed)."""
        loss, Y, lam, lam_j = self.loss, self.Y, self.lam, self.lam_j
        with np.errstate(all="ignore"):
            conj = self._weigh(loss.conj(loss.grad(self.u, Y), Y))  # v_i = ℓ'(u_i) = −λ_i α_i for every weight
        Rtheta = self.basis.metric_product(self.theta)
        quad_p = 0.5 * float((self.theta * Rtheta).sum())
        values = self._weigh(loss.value(self.u, Y))
        P = lam * (quad_p + float(values.sum()) / lam_j)
        a = Rtheta - self.g  # Ψᵀα for α = −ℓ'(u)/λ_J
        quad_d = 0.5 * float((a * self.basis.metric_solve(a)).sum())
        D = -lam * (quad_d + float(conj.sum()) / lam_j)
        # the terms summed, for the rounding bound of P − D (the dual's quadratic and conjugate terms cancel)
        scale = lam * (abs(quad_p) + abs(quad_d) + float((abs(values)).sum() + abs(conj).sum()) / lam_j)
        return Check(objective=P, dual=D, scale=scale)

    def decision_function(self, X):
        return self.basis.decision_function(X, self.theta)

    def state(self):
        out = {"theta": self.theta, **self.stats}
        if self.factor is not None:
            out["preconditioner_weights"] = self.weights  # a resumed run rebuilds the same preconditioner
        return out

    def restore(self, saved):
        self.theta = self.xp.asarray(saved["theta"], dtype=np.float64)
        self.stats = {k: int(saved[k]) for k in self.stats}
        self._refresh(count=False)  # the saved run counted this pass already
        if "preconditioner_weights" in saved:
            self._build(self.xp.asarray(saved["preconditioner_weights"]), count=False)

    def predictor(self):
        info = {"n_features": self.M, "features": self.basis.kind, "features_in_memory": self.rows.materialized,
                **self.stats}
        if self.basis.kind == "nystrom":  # the centers asked for, drawn and used; a warning when fewer are used
            info.update(centers_used(self.basis.problem.features.count, self.basis.drawn, self.basis.M))
        return self.basis.predictor(self.theta), info


class RandomBasis:
    """The spec's random features, ψ = φ/√M, R = I (a model is a feature expansion)."""

    kind = "random"

    def __init__(self, problem, threads):
        self.threads = threads
        self.fmap = problem.feature_map(cache_blocks="all", threads=threads)
        self.M = self.fmap.count

    def bind(self, X, memory_bytes):
        return bind(self.fmap, X, memory_bytes, self.threads)

    def metric_product(self, v):
        return v

    def metric_solve(self, v):
        return v

    def add_metric(self, G):
        G[np.diag_indices(self.M)] += G.dtype.type(1.0)

    def _coef(self, theta):
        return (theta / np.sqrt(self.M)).reshape(self.fmap.n_blocks, self.fmap.block_size, -1)

    def decision_function(self, X, theta):
        return self.fmap.predict(X, self._coef(theta))

    def predictor(self, theta):
        nb, F = self.fmap.n_blocks, self.fmap.block_size
        coef = to_numpy(theta).reshape(nb, F, -1)
        if coef.shape[2] == 1:
            coef = coef[:, :, 0]
        meta = {"scale": 1.0 / np.sqrt(self.M), "seed": self.fmap.seed, "block_size": F, "dtype": self.fmap.dtype.name}
        return FeatureExpansion({"coef": coef, "blocks": np.arange(nb)}, meta)


class NystromBasis:
    """Nyström features ψ(x) = k(x, C) on seeded training rows C, R = K_CC (a model is a kernel expansion).

    R is kept as its upper Cholesky factor U (R = UᵀU, float64) alone: Rv = Uᵀ(Uv), R⁻¹v by two
    triangular solves, and R itself is added into the preconditioner a band at a time.
    """

    kind = "nystrom"

    def __init__(self, problem, threads):
        xp = self.xp = problem.xp
        self.problem = problem
        self.threads = threads
        self.dtype = problem.dtype
        centers = choose_centers(problem, problem.features.count)
        C = _rows.dense(problem.X, xp.asarray(centers), xp, self.dtype)
        # a well-conditioned basis: centers within kopt.nystrom.CENTER_TOLERANCE of the others' span are dropped
        # (a nearly singular K_CC left Newton-CG at its iteration cap on 150 rows at a long bandwidth)
        kept, self.U = center_basis(problem.kernel, C)
        self.drawn = int(centers.shape[0])  # fewer than features.count where the rows run out (centers_used)
        self.centers, self.C = centers[kept], C[xp.asarray(kept)]
        self.M = self.C.shape[0]
        self._R, self._metric_adds = None, 0

    def bind(self, X, memory_bytes):
        return NystromRows(self.problem.kernel, X, self.C, dtype=self.dtype, memory_bytes=memory_bytes,
                           threads=self.threads)

    def metric_product(self, v):
        return self.U.T @ (self.U @ v)

    def metric_solve(self, v):
        from kopt.numerics.linalg import solve_triangular

        return solve_triangular(self.U, solve_triangular(self.U, v, lower=False, trans="T"), lower=False)

    def add_metric(self, G):
        """G += K_CC: recomputed a band at a time the first time (no second M × M array
        for a single factorisation), kept from the second on (Newton with changing curvature)."""
        if self._R is not None:
            G += self._R.astype(G.dtype, copy=False)
            return
        self._metric_adds += 1
        if self._metric_adds >= 2:
            self._R = self.xp.zeros_like(self.U)
            add_center_kernel(self.problem.kernel, self.C, self._R)
            G += self._R.astype(G.dtype, copy=False)
            return
        add_center_kernel(self.problem.kernel, self.C, G)

    def decision_function(self, X, theta):
        xp = self.problem.xp
        out = xp.empty((X.shape[0], theta.shape[1]), dtype=np.float64)
        coef = theta.astype(self.dtype)
        for lo, hi in _rows.chunks(X.shape[0], max(1, (1 << 20) // max(1, self.M))):
            out[lo:hi] = self.problem.kernel.exact(_rows.dense(X, slice(lo, hi), xp, self.dtype), self.C) @ coef
        return out

    def predictor(self, theta):
        coef = to_numpy(theta)
        if coef.shape[1] == 1:
            coef = coef[:, 0]
        return KernelExpansion({"support": to_numpy(self.C), "coef": coef}, {})


def _mirror(G, to_lower, band=256):
    """Copy G's strict upper triangle onto its lower one (or back), a band of columns at a time."""
    M = G.shape[0]
    for lo in range(0, M, band):
        hi = min(M, lo + band)
        D = G[lo:hi, lo:hi]
        strict = np.tril_indices(hi - lo, -1)
        if to_lower:
            G[hi:, lo:hi] = G[lo:hi, hi:].T
            D[strict] = D.T[strict]
        else:
            G[lo:hi, hi:] = G[hi:, lo:hi].T
            D.T[strict] = D[strict]


def _constant_curvature(loss, Y):
    """Whether ℓ''(u) is the same for every u (the square loss): probed on a few labels and points."""
    xp = get_namespace(Y)
    y = Y[: min(64, Y.shape[0])]
    scale = 1.0 + float(xp.max(xp.abs(y)))
    values = [loss.curvature(y + t * scale, y) for t in (-3.0, -0.5, 0.0, 0.5, 3.0)]
    return all(bool(xp.all(v == values[0])) for v in values[1:])


def _piecewise_curvature(loss, Y):
    """Whether ℓ'' takes at most two values (0 and one constant: Huber, squared hinge), probed on a grid."""
    xp = get_namespace(Y)
    y = Y[: min(64, Y.shape[0])]
    scale = 1.0 + float(xp.max(xp.abs(y)))
    values = xp.concatenate([loss.curvature(y + t * scale, y).ravel() for t in np.linspace(-4.0, 4.0, 33)])
    return int(xp.unique(values).shape[0]) <= 2
