"""Joker's dual route: block coordinate descent with a trust region per block (Zhang & Lai 2025, Alg. 1-3).

Iteration t picks a block B of ``batch_size`` rows of a fixed random partition (uniformly from
``problem.rng("blocks", t)``, or greedily in exact mode) and minimises Zhang & Lai's dual

    J(α) = ½ αᵀKα + (1/λ_J) Σ ξ*_{y_i}(−λ_J α_i)   over the box of dom ξ*

over α_B by the trust-region solver of :mod:`.trust_region`, with K_BB and (Kα)_B from the
exact kernel or the random features (:mod:`.engines`).  kopt's dual is D(α) = −λ J(α).
"""
from __future__ import annotations

import math

import numpy as np

from kopt.contract.iterative import Check, Step
from kopt.numerics import rows as _rows
from kopt.numerics.backend import to_numpy

from .dualterms import DualTerms
from .engines import ExactEngine, FeatureEngine
from .trust_region import FactorCache, solve_block


class DualBlocks:
    """The state and steps of the dual route (exact kernel or random features)."""

    def __init__(self, problem, Y, lam_j, options, engine_name, threads, engine=None):
        o = self.o = options
        xp = problem.xp
        self.problem = problem
        n = problem.n
        self.lam = problem.lam
        self.lam_j = lam_j
        self.Y = Y
        self.C = Y.shape[1]
        dtype = problem.dtype
        self.w = problem.sample_weight  # row weights (mean 1) or None
        self.terms = [DualTerms(problem.loss, Y[:, c], lam_j, dtype, weights=self.w) for c in range(self.C)]
        if engine is not None:  # a distributed round's engine (kopt_plugins.joker.rounds)
            self.engine = engine
        elif engine_name == "exact":
            self.engine = ExactEngine(problem, self.C, dtype, threads)
        else:
            self.engine = FeatureEngine(problem, self.C, o.block_memory_mb, threads, o.model_kernel, o.gram)
        self.name = self.engine.name
        self.bs = min(o.batch_size, n)
        self.blocks, self.block_of = _partition(problem, self.bs)
        self.nblocks = len(self.blocks)
        self.greedy = o.selection == "greedy" or (o.selection == "auto" and engine_name == "exact")
        self.kdiag = _kernel_diag(problem, dtype) if self.greedy else None
        self.max_radius = None if o.max_radius == "auto" else float(o.max_radius)
        self.factors = FactorCache(o.factor_cache_mb * 2**20)
        self.everything = xp.arange(n)
        self.alpha = xp.zeros((n, self.C), dtype=np.float64)
        self.fsum = np.zeros(self.C)
        self.refresh_fsum()
        self.stats = {"rows": 0, "tr_steps": 0, "cg_steps": 0, "accepted": 0}

    def cadence(self):
        # the gap costs O(n) in exact mode (u = Kα is kept) and a pass over the data with features
        return (1 if self.engine.name == "exact" else self.nblocks), self.nblocks

    def refresh_fsum(self):
        """The separable sum Σ f_i(α_i) per output, recomputed exactly; returns Σ|f_i(α_i)| (its terms' size)."""
        values = [t.values(self.alpha[:, c], self.everything) for c, t in enumerate(self.terms)]
        self.fsum = np.array([float(v.sum()) for v in values])
        return sum(float(abs(v).sum()) for v in values)

    # -- one block ------------------------------------------------------------------------------
    def step(self, t):
        j = self._greedy_block() if self.greedy else int(self.problem.rng("blocks", t).integers(self.nblocks))
        idx = self.problem.xp.asarray(self.blocks[j])
        old = self.alpha[idx]
        new = self._solve(idx, old, j)
        for c, term in enumerate(self.terms):
            self.fsum[c] += term.value(new[:, c], idx) - term.value(old[:, c], idx)
        self.engine.update(new - old)
        self.alpha[idx] = new
        J = 0.5 * to_numpy(self.engine.norm_sq(self.alpha)) + self.fsum
        return Step(rows=int(idx.shape[0]), dual=float(-self.lam * J.sum()))

    def _solve(self, idx, old, j):
        """Solve block ``idx`` for every output (Zhang & Lai 2025, Alg. 1); returns the block's new α."""
        o = self.o
        xp = self.problem.xp
        K, gbar = self.engine.prepare(idx)
        new = xp.empty_like(old)
        true_kernel = self.engine.true_kernel if self.engine.exact_model else None
        for c, term in enumerate(self.terms):
            a0 = term.project(old[:, c], idx)  # Zhang & Lai (2025) Sec. 3.2: start inside the shrunk box
            gb = gbar[:, c]
            moved = a0 - old[:, c]
            if bool(xp.any(moved != 0)):
                gb = gb + (true_kernel(moved) if true_kernel is not None else K @ moved)
            res = solve_block(K, gb, a0, term, idx, max_steps=o.tr_iterations, cg_iter=o.cg_iterations,
                              inner_tol=o.inner_tol, eta=o.eta, max_radius=self.max_radius, newton=o.newton,
                              cache=self.factors.slot((j, c)), true_kernel=true_kernel)
            new[:, c] = res.a
            self.stats["tr_steps"] += res.tr_steps
            self.stats["cg_steps"] += res.cg_steps
            self.stats["accepted"] += res.accepted
        self.stats["rows"] += int(idx.shape[0])
        return new

    def _greedy_block(self):
        """The block of the partition with the largest summed one-coordinate decrease (block Gauss–Southwell-q)."""
        xp = self.problem.xp
        u = self.engine.u
        score = self.terms[0].coordinate_decrease(self.alpha[:, 0], u[:, 0], self.kdiag, self.everything)
        for c in range(1, len(self.terms)):
            score = score + self.terms[c].coordinate_decrease(self.alpha[:, c], u[:, c], self.kdiag, self.everything)
        per_block = xp.zeros(self.nblocks, dtype=np.float64)
        _scatter_add(xp, per_block, self.block_of, score)
        return int(xp.argmax(per_block))

    # -- certificate ----------------------------------------------------------------------------
    def check(self, rows):
        """Primal, dual and gap in kopt's convention (summed over one-vs-rest outputs)."""
        fabs = self.refresh_fsum()  # recompute the separable sum exactly (erases the drift of the running sum)
        xp, problem = self.problem.xp, self.problem
        norm = to_numpy(self.engine.norm_sq(self.alpha))
        D = float((-self.lam * (0.5 * norm + self.fsum)).sum())
        scale = float(self.lam * (abs(norm).sum() + fabs))  # the dual's terms and the primal's quadratic
        if rows is None:
            scores = self.engine.scores(None)
            loss_mean = sum(float(self._weigh(problem.loss.value(scores[:, c], self.Y[:, c]), None).mean())
                            for c in range(self.C))
            P = float(0.5 * self.lam * norm.sum() + loss_mean)
            scale += abs(loss_mean)
        else:
            # P − D = mean_i FY_i with FY_i = ℓ(y_i, f_i) + ℓ*(v_i) − v_i f_i ≥ 0, v_i = −λ n α_i
            # (Fenchel–Young per row; Σ_i λ n α_i f_i / n = λ‖f‖²).  Sampling FY_i, which all vanish
            # at the optimum, estimates the gap far better than sampling the primal's loss alone.
            r = xp.asarray(rows)
            scores = self.engine.scores(r)
            gap = 0.0
            for c, term in enumerate(self.terms):
                a = self.alpha[r, c]
                fy = self._weigh(problem.loss.value(scores[:, c], self.Y[r, c]), r) + self.lam_j * term.values(a, r) \
                    + self.lam_j * a * scores[:, c]
                gap += float(fy.mean())
            P = D + gap
            scale += abs(gap)
        return Check(objective=P, dual=D, scale=scale)

    def _weigh(self, values, rows):
        """Per-row loss values times the row weights (unchanged without weights)."""
        if self.w is None:
            return values
        return values * (self.w if rows is None else self.w[rows])

    def decision_function(self, X):
        return self.engine.test_scores(self.alpha, X)

    # -- checkpoint and model -------------------------------------------------------------------
    def state(self):
        return {"alpha": self.alpha, "fsum": self.fsum.copy(), **self.stats, **self.engine.state()}

    def restore(self, saved):
        self.alpha = self.problem.xp.asarray(saved["alpha"], dtype=np.float64)
        if "fsum" in saved:
            self.fsum = np.asarray(saved["fsum"], dtype=np.float64)
        else:  # a warm start at another λ (JokerSolver.warm_state): the sum is recomputed
            self.refresh_fsum()
        self.stats = {k: int(saved[k]) for k in self.stats}
        self.engine.restore(saved)

    def predictor(self):
        predictor, pinfo = self.engine.predictor(self.alpha)
        return predictor, {"batch_size": self.bs, "n_blocks": self.nblocks, "epochs": self.stats["rows"] / self.problem.n,
                           **self.stats, **pinfo}


def _partition(problem, bs):
    """Zhang & Lai (2025) App. B.1: a fixed random partition of the rows into ⌈n/|B|⌉ blocks (sorted rows),
    and each row's block index on the backend."""
    n = problem.n
    perm = problem.rng("partition").permutation(n)
    blocks = [np.sort(b) for b in np.array_split(perm, math.ceil(n / bs))]
    block_of = np.empty(n, dtype=np.int64)
    for b, rows in enumerate(blocks):
        block_of[rows] = b
    return blocks, problem.xp.asarray(block_of)


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
    for lo, hi in _rows.chunks(problem.n, 1 << 16):
        out[lo:hi] = xp.asarray(problem.kernel.diag(_rows.dense(problem.X, slice(lo, hi), xp, dtype)), dtype=np.float64)
    return out


#: bytes per training row and output the features route holds (α, the labels, the dual box's two bounds, the check's
#: scores and loss values), and per row whatever the outputs (the partition's row indices, the rows' index range);
#: together they cover the measured peak (docs/design/memory.md)
ROW_BYTES_PER_OUTPUT = 48
ROW_BYTES = 48
#: the BLAS's work buffers the block products touch, per worker thread: with the workers' block buffers, what was
#: measured above the cached factors (docs/design/memory.md)
BLAS_BUFFERS = 12 << 20


def features_plan(options, sizes, threads):
    """The features route's :mod:`kopt.numerics.memory` plan (:meth:`kopt_plugins.joker.solver.JokerSolver.memory_plan`)."""
    from kopt.numerics.memory import matrices

    n, C, M, itemsize = sizes.n, sizes.outputs, sizes.count, sizes.itemsize
    m = min(options.batch_size, n)
    F = sizes.problem.features.block_size if sizes.problem is not None else 512
    G = max(1, min(16, (1 << 18) // max(1, m * F)))  # FeatureEngine._group on a CPU
    workers = max(1, min(threads, 8))
    blocks = -(-n // m)
    visited = min(blocks, options.iterations)  # one block an iteration: at most this many factors to keep
    cache = min(options.factor_cache_mb * 2**20, visited * C * 8 * m * m)
    return [("per training row: the dual variables, labels, dual box and scores",
             n * (ROW_BYTES + ROW_BYTES_PER_OUTPUT * C)),
            ("the visited blocks' Cholesky factors (at most solver.factor_cache_mb)", int(cache)),
            (f"{workers} workers' block buffers (K_BB, its features)",
             workers * (m * m * (8 + itemsize) + 3 * m * G * F * itemsize + 8 * m * C)),
            matrices(1, -(-M // F) * F, sizes.d + 1, sizes.dtype, "the feature parameters"),
            matrices(2, -(-M // F) * F, C, "float64", "the coefficients and the model's copy"),
            ("the BLAS's work buffers", workers * BLAS_BUFFERS)]


def exact_plan(options, sizes, threads):
    """The exact route's :mod:`kopt.numerics.memory` plan: per training row what the features route holds
    (:data:`ROW_BYTES`), u = Kα (outputs float64) and, with greedy selection, the kernel's diagonal; the visited
    blocks' factors within ``factor_cache_mb``; the block's K_BB and the trust region's m x m arrays; each worker's
    chunk of kernel values against the block (``_CHUNK_ELEMS`` in the features' dtype and as the kernel computes
    them); the BLAS's work buffers."""
    from kopt.numerics.memory import matrices

    from .engines import _CHUNK_ELEMS

    n, C, itemsize = sizes.n, sizes.outputs, sizes.itemsize
    m = min(options.batch_size, n)
    workers = max(1, min(threads, 8))
    visited = min(-(-n // m), options.iterations)
    cache = min(options.factor_cache_mb * 2**20, visited * C * 8 * m * m)
    problem = sizes.problem
    if problem is not None:  # factors are kept only where the conjugate's curvature is constant (DualTerms)
        y = np.asarray(to_numpy(problem.y[:64]), dtype=np.float64)
        if problem.preprocessor.target == "multiclass" and problem.loss.target == "binary":
            y = np.where(y == 0, 1.0, -1.0)
        if not DualTerms(problem.loss, y, problem.lam * n, problem.dtype).constant_hessian:
            cache = 0
    greedy = options.selection in ("auto", "greedy")
    return [("per training row: the dual variables, labels, dual box, scores and u = K alpha",
             n * (ROW_BYTES + (8 if greedy else 0) + (ROW_BYTES_PER_OUTPUT + 8) * C)),
            ("the visited blocks' Cholesky factors (at most solver.factor_cache_mb)", int(cache)),
            matrices(4, m, m, "float64", "the block's K_BB and the trust region's model"),
            (f"{workers} workers' chunks of kernel values against the block", workers * _CHUNK_ELEMS * 2 * itemsize),
            ("the BLAS's work buffers", workers * BLAS_BUFFERS)]
