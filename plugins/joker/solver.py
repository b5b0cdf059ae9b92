"""Joker: dual block coordinate descent with trust region (DBCD-TR, papers/004 Alg. 3).

kopt's objective is ``λ/2 ‖f‖² + (1/n) Σ ℓ(y_i, f(x_i))``; papers/004 writes
``½‖θ‖² + (1/λ_J) Σ ℓ`` -- the same minimiser with ``λ_J = λ n`` (:func:`joker_lambda`).
The solver works in papers/004's scaling internally: it minimises

    J(α) = ½ αᵀKα + (1/λ_J) Σ ξ*_{y_i}(−λ_J α_i)   over the box of dom ξ*,

and reports kopt's dual ``D(α) = −λ J(α)`` (the same α: f = Σ α_i k(x_i, ·) in both
conventions), kopt's primal, and the duality gap ``P − D``; the skeleton stops at a relative
gap ``(P − D) / max(|P|, |D|)`` ≤ ``tol``.  One iteration is one block of ``batch_size`` rows.
"""
from __future__ import annotations

import math

import numpy as np

from kopt import rows as _rows
from kopt.backend import to_numpy
from kopt.iterative import Check, IterativeSolver, Step, common_options

from .dualterms import DualTerms
from .engines import ExactEngine, FeatureEngine
from .trust_region import FactorCache, solve_block


def joker_lambda(lam: float, n: int) -> float:
    """λ of papers/004 (½‖θ‖² + (1/λ_J) Σℓ) equivalent to kopt's λ (λ/2‖f‖² + mean ℓ)."""
    return lam * n


def kopt_lambda(lam_joker: float, n: int) -> float:
    """Inverse of :func:`joker_lambda`."""
    return lam_joker / n


class JokerSolver(IterativeSolver):
    """DBCD-TR on the dual, exact kernel or random features (papers/004)."""

    name = "joker"
    summary = "dual block coordinate descent with trust region (Joker, papers/004)"
    forms = ("dual",)
    targets = ("real", "binary")
    needs_conjugate = True
    kernel_mode = "either"
    one_vs_rest = True
    iteration_unit = "one block of batch_size rows (a trust-region solve of its dual variables)"
    divergence_hint = "raise model.regularizer.lambda"
    params = {
        **common_options(iterations=10000, batch_size=512, tol=1.0e-3),
        "mode": {"enum": ["auto", "exact", "features"], "default": "auto",
                 "description": "exact: K_BB and K_B,:α from the kernel (n up to ~1e5); features: the random-feature "
                                "map of model.features (count M); auto: exact when n <= auto_exact_rows"},
        "auto_exact_rows": {"type": "integer", "minimum": 1, "default": 50000,
                            "description": "largest training set mode auto solves exactly"},
        "selection": {"enum": ["auto", "random", "greedy"], "default": "auto",
                      "description": "random: a uniformly drawn block of a fixed partition (papers/004); greedy: the "
                                     "block of the partition with the largest one-coordinate decrease of the dual "
                                     "(exact mode only, where the full gradient is kept); auto: greedy in exact mode, "
                                     "random with features"},
        "tr_iterations": {"type": "integer", "minimum": 1, "default": 50, "description": "trust-region steps per block (T_TR)"},
        "cg_iterations": {"type": "integer", "minimum": 1, "default": 50, "description": "CG steps per trust-region step"},
        "inner_tol": {"type": "number", "exclusiveMinimum": 0, "default": 1.0e-4,
                      "description": "a block is solved when its projected gradient falls by this factor"},
        "newton": {"type": "boolean", "default": True,
                   "description": "try the exact minimiser of the trust-region model (Cholesky of Q_FF) before "
                                  "CG-Steihaug; it is used only when it lies inside the trust region and the box"},
        "eta": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.25, "default": 0.125,
                "description": "trust-region acceptance threshold on rho"},
        "max_radius": {"oneOf": [{"type": "number", "exclusiveMinimum": 0}, {"const": "auto"}], "default": "auto",
                       "description": "trust-region radius cap (auto: 4 sqrt(|B|) x the block's alpha scale, so the "
                                      "first radius spans the box)"},
        "model_kernel": {"enum": ["features", "exact"], "default": "features",
                         "description": "features mode: the K_BB of the trust-region model -- features: "
                                        "psi(X_B) psi(X_B)^T (papers/004 Alg. 3, |B|^2 M flops); exact: k(X_B, X_B) "
                                        "(|B|^2 d flops) while J, rho and K_B,:alpha keep the features, so the "
                                        "answer is the same; needs phi(X_B) within block_memory_mb"},
        "factor_cache_mb": {"type": "integer", "minimum": 0, "default": 128,
                            "description": "keep Cholesky factors of fixed blocks between visits (losses with a "
                                           "constant conjugate curvature) within this budget"},
        "block_memory_mb": {"type": "integer", "minimum": 1, "default": 256,
                            "description": "features mode: keep phi(X_B) between the solve and the update when it fits"},
    }

    def check_spec(self, spec):
        reg = spec.regularizer
        o = self.options
        if reg.name != "l2":
            yield ("model", "regularizer", "name"), (
                f"solver 'joker' solves the dual of the L2-regularised problem; regularizer {reg.name!r} "
                "is not supported (use l2)")
        elif not reg.lam > 0:
            yield ("model", "regularizer", "lambda"), "solver 'joker' needs lambda > 0 (the dual box scales with 1/(lambda n))"
        if o.selection == "greedy" and o.mode != "exact":
            yield ("solver", "selection"), (
                "selection 'greedy' needs mode: exact (the full dual gradient is kept only in exact mode); "
                "use selection: random, or set mode: exact")
        if o.mode == "features" and not spec.kernel_class.has_features:
            yield ("solver", "mode"), (
                f"mode 'features' needs a kernel with a random-feature sampler and {spec.kernel_class.name!r} has "
                "none; use mode: exact")

    # -- the skeleton's contract ---------------------------------------------------------------
    def init(self, problem):
        return _State(self, problem)

    def load(self, problem, saved):
        st = _State(self, problem)
        st.alpha = problem.xp.asarray(saved["alpha"], dtype=np.float64)
        st.fsum = np.asarray(saved["fsum"], dtype=np.float64)
        st.stats = {k: int(saved[k]) for k in st.stats}
        st.engine.restore(saved)
        return st

    def save(self, st):
        return {"alpha": st.alpha, "fsum": st.fsum.copy(), **st.stats, **st.engine.state()}

    def cadence(self, st):
        # the gap costs O(n) in exact mode (u = Kα is kept) and a pass over the data with features
        return (1 if st.engine.name == "exact" else st.nblocks), st.nblocks

    def step(self, st, t):
        if st.greedy:
            j = _greedy_block(st)
        else:
            j = int(st.problem.rng("blocks", t).integers(st.nblocks))
        idx = st.problem.xp.asarray(st.blocks[j])
        old = st.alpha[idx]
        new = self._block(st, idx, old, j)
        for c, term in enumerate(st.terms):
            st.fsum[c] += term.value(new[:, c], idx) - term.value(old[:, c], idx)
        st.engine.update(new - old)
        st.alpha[idx] = new
        J = 0.5 * to_numpy(st.engine.norm_sq(st.alpha)) + st.fsum
        return Step(rows=int(idx.shape[0]), dual=float(-st.lam * J.sum()))

    def check(self, st, rows):
        """Primal, dual and gap in kopt's convention (summed over one-vs-rest outputs)."""
        st.refresh_fsum()  # recompute the separable sum exactly (erases the drift of the running sum)
        xp, problem = st.problem.xp, st.problem
        norm = to_numpy(st.engine.norm_sq(st.alpha))
        D = float((-st.lam * (0.5 * norm + st.fsum)).sum())
        if rows is None:
            scores = st.engine.scores(None)
            loss_mean = sum(float(problem.loss.value(scores[:, c], st.Y[:, c]).mean()) for c in range(st.C))
            P = float(0.5 * st.lam * norm.sum() + loss_mean)
        else:
            # P − D = mean_i FY_i with FY_i = ℓ(y_i, f_i) + ℓ*(v_i) − v_i f_i ≥ 0, v_i = −λ n α_i
            # (Fenchel–Young per row; Σ_i λ n α_i f_i / n = λ‖f‖²).  Sampling FY_i, which all vanish
            # at the optimum, estimates the gap far better than sampling the primal's loss alone.
            r = xp.asarray(rows)
            scores = st.engine.scores(r)
            gap = 0.0
            for c, term in enumerate(st.terms):
                a = st.alpha[r, c]
                fy = problem.loss.value(scores[:, c], st.Y[r, c]) + st.lam_j * term.values(a, r) \
                    + st.lam_j * a * scores[:, c]
                gap += float(fy.mean())
            P = D + gap
        return Check(objective=P, dual=D)

    def decision_function(self, st, X):
        return st.engine.test_scores(st.alpha, X)

    def finish(self, st):
        predictor, pinfo = st.engine.predictor(st.alpha)
        info = {"mode": st.engine.name, "lambda_joker": st.lam_j, "batch_size": st.bs, "n_blocks": st.nblocks,
                "epochs": st.stats["rows"] / st.problem.n,
                "one_vs_rest": st.C > 1 and st.problem.loss.target != "real", **st.stats, **pinfo}
        return predictor, info

    # -- one block ------------------------------------------------------------------------------
    def _block(self, st, idx, old, j):
        """Solve block ``idx`` for every output (papers/004 Alg. 1); returns the block's new α."""
        o = self.options
        xp = st.problem.xp
        K, gbar = st.engine.prepare(idx)
        new = xp.empty_like(old)
        true_kernel = st.engine.true_kernel if st.engine.exact_model else None
        for c, term in enumerate(st.terms):
            a0 = term.project(old[:, c], idx)  # papers/004 Sec. 3.2: start inside the shrunk box
            gb = gbar[:, c]
            moved = a0 - old[:, c]
            if bool(xp.any(moved != 0)):
                gb = gb + (true_kernel(moved) if true_kernel is not None else K @ moved)
            res = solve_block(K, gb, a0, term, idx, max_steps=o.tr_iterations, cg_iter=o.cg_iterations,
                              inner_tol=o.inner_tol, eta=o.eta, max_radius=st.max_radius, newton=o.newton,
                              cache=st.factors.slot((j, c)), true_kernel=true_kernel)
            new[:, c] = res.a
            st.stats["tr_steps"] += res.tr_steps
            st.stats["cg_steps"] += res.cg_steps
            st.stats["accepted"] += res.accepted
        st.stats["rows"] += int(idx.shape[0])
        return new


class _State:
    """Everything one Joker run holds (the skeleton passes it back to every call)."""

    def __init__(self, solver, problem):
        o = solver.options
        xp = problem.xp
        self.problem = problem
        n = problem.n
        self.lam = problem.lam
        self.lam_j = joker_lambda(self.lam, n)
        mode = o.mode
        if mode == "auto":
            mode = "exact" if n <= o.auto_exact_rows or not problem.kernel.has_features else "features"
        self.Y = _label_matrix(problem)
        self.C = self.Y.shape[1]
        dtype = problem.dtype
        self.terms = [DualTerms(problem.loss, self.Y[:, c], self.lam_j, dtype) for c in range(self.C)]
        threads = solver.n_threads
        if mode == "exact":
            self.engine = ExactEngine(problem, self.C, dtype, threads)
        else:
            self.engine = FeatureEngine(problem, self.C, o.block_memory_mb, threads, o.model_kernel)
        self.bs = min(o.batch_size, n)
        self.blocks, self.block_of = _partition(problem, self.bs)
        self.nblocks = len(self.blocks)
        self.greedy = o.selection == "greedy" or (o.selection == "auto" and mode == "exact")
        self.kdiag = _kernel_diag(problem, dtype) if self.greedy else None
        self.max_radius = None if o.max_radius == "auto" else float(o.max_radius)
        self.factors = FactorCache(o.factor_cache_mb * 2**20)
        self.everything = xp.arange(n)
        self.alpha = xp.zeros((n, self.C), dtype=np.float64)
        self.fsum = np.zeros(self.C)
        self.refresh_fsum()
        self.stats = {"rows": 0, "tr_steps": 0, "cg_steps": 0, "accepted": 0}

    def refresh_fsum(self):
        self.fsum = np.array([t.value(self.alpha[:, c], self.everything) for c, t in enumerate(self.terms)])


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


def _greedy_block(st):
    """The block of the fixed partition with the largest summed one-coordinate decrease (block Gauss–Southwell-q)."""
    xp = st.problem.xp
    u = st.engine.u
    score = st.terms[0].coordinate_decrease(st.alpha[:, 0], u[:, 0], st.kdiag, st.everything)
    for c in range(1, len(st.terms)):
        score = score + st.terms[c].coordinate_decrease(st.alpha[:, c], u[:, c], st.kdiag, st.everything)
    per_block = xp.zeros(st.nblocks, dtype=np.float64)
    _scatter_add(xp, per_block, st.block_of, score)
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
    for lo, hi in _rows.chunks(problem.n, 1 << 16):
        out[lo:hi] = xp.asarray(problem.kernel.diag(_rows.dense(problem.X, slice(lo, hi), xp, dtype)), dtype=np.float64)
    return out


def _label_matrix(problem):
    """Labels as an (n, C) float64 matrix: one column, or ±1 one-vs-rest columns for multiclass ids."""
    xp = problem.xp
    y = problem.y
    if problem.preprocessor.target == "multiclass" and problem.loss.target == "binary":
        ids = y.astype(np.int64)
        classes = xp.arange(problem.n_classes)
        return xp.where(ids[:, None] == classes[None, :], 1.0, -1.0)
    return xp.asarray(y, dtype=np.float64)[:, None]
