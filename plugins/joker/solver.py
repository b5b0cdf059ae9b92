"""Joker: dual block coordinate descent with trust region (DBCD-TR, Zhang & Lai (2025) Alg. 3).

kopt's objective is ``λ/2 ‖f‖² + (1/n) Σ ℓ(y_i, f(x_i))``; Zhang & Lai (2025) writes
``½‖θ‖² + (1/λ_J) Σ ℓ`` -- the same minimiser with ``λ_J = λ n`` (:func:`joker_lambda`).
The solver works in Zhang & Lai's scaling internally: it minimises

    J(α) = ½ αᵀKα + (1/λ_J) Σ ξ*_{y_i}(−λ_J α_i)   over the box of dom ξ*,

and reports kopt's dual ``D(α) = −λ J(α)`` (the same α: f = Σ α_i k(x_i, ·) in both
conventions), kopt's primal, and the duality gap ``P − D``; the skeleton stops at a relative
gap ``(P − D) / max(|P|, |D|)`` ≤ ``tol``.  One iteration is one block of ``batch_size`` rows.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.iterative import IterativeSolver, common_options

from . import primal, rounds
from .blocks import DualBlocks, exact_plan, features_plan


def joker_lambda(lam: float, n: int) -> float:
    """λ of Zhang & Lai (2025) (½‖θ‖² + (1/λ_J) Σℓ) equivalent to kopt's λ (λ/2‖f‖² + mean ℓ)."""
    return lam * n


def kopt_lambda(lam_joker: float, n: int) -> float:
    """Inverse of :func:`joker_lambda`."""
    return lam_joker / n


class JokerSolver(IterativeSolver):
    """DBCD-TR on the dual, exact kernel or random features (Zhang & Lai 2025)."""

    name = "joker"
    summary = "dual block coordinate descent with trust region (Joker, Zhang & Lai 2025)"
    forms = ("dual",)
    targets = ("real", "binary")
    needs_conjugate = True
    kernel_mode = "either"
    one_vs_rest = True
    sample_weight = True
    distributed = True  # features mode: CoCoA+ rounds on a Dask cluster (.rounds)
    lambda_warm_start = True
    refit_warm_start = True
    feature_kinds = ("random", "nystrom")
    iteration_unit = "one block of batch_size rows (a trust-region solve of its dual variables)"
    divergence_hint = "raise model.regularizer.lambda"
    params = {
        **common_options(iterations=10000, batch_size=512, tol=1.0e-3),
        "mode": {"enum": ["auto", "exact", "features", "primal"], "default": "auto",
                 "description": "exact: dual blocks, K_BB and K_B,:α from the kernel (n up to ~1e5); features: dual "
                                "blocks on the random-feature map of model.features (count M); primal: Newton-CG on "
                                "the M random features, preconditioned by their M x M Gram (losses with a Lipschitz "
                                "gradient; n >> M); auto: see docs/joker.md ('Routes') -- the report says which it took"},
        "auto_exact_rows": {"type": "integer", "minimum": 1, "default": 50000,
                            "description": "largest training set mode auto solves exactly"},
        "primal_max_features": {"type": "integer", "minimum": 1, "default": 8192,
                                "description": "largest M for which mode auto takes the primal route (its Gram takes "
                                               "4 M^2 bytes)"},
        "selection": {"enum": ["auto", "random", "greedy"], "default": "auto",
                      "description": "random: a uniformly drawn block of a fixed partition (Zhang & Lai 2025); greedy: the "
                                     "block of the partition with the largest one-coordinate decrease of the dual "
                                     "(exact mode only, where the full gradient is kept); auto: greedy in exact mode, "
                                     "random with features"},
        "tr_iterations": {"type": "integer", "minimum": 1, "default": 50, "description": "trust-region steps per block (T_TR)"},
        "cg_iterations": {"type": "integer", "minimum": 1, "default": 50,
                          "description": "CG steps per trust-region step (dual routes) or per Newton step (primal)"},
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
                                        "psi(X_B) psi(X_B)^T (Zhang & Lai 2025, Alg. 3, |B|^2 M flops); exact: k(X_B, X_B) "
                                        "(|B|^2 d flops) while J, rho and K_B,:alpha keep the features, so the "
                                        "answer is the same; needs phi(X_B) within block_memory_mb"},
        "gram": {"enum": ["auto", "syrk", "gemm"], "default": "auto",
                 "description": "features mode: how K_BB = phi(X_B) phi(X_B)^T is formed -- syrk: one triangle "
                                "(half the flops) through NumPy's OpenBLAS; gemm: the full product; auto: syrk "
                                "where NumPy's BLAS has it (CPU), else gemm"},
        "factor_cache_mb": {"type": "integer", "minimum": 0, "default": 128,
                            "description": "keep Cholesky factors of fixed blocks between visits (losses with a "
                                           "constant conjugate curvature) within this budget"},
        "primal_warm_start": {"type": "boolean", "default": True,
                              "description": "primal route, squared-hinge-like losses (curvature 0 or 1) with n >= 8M: "
                                             "start from the solution on a seeded fifth of the rows, so the full "
                                             "problem's Gram is paid on its active rows only"},
        "feature_memory_mb": {"type": "integer", "minimum": 0, "default": 512,
                              "description": "primal route: keep the n x M features in memory when they take at most "
                                             "this many MiB (every later pass is then two memory-bound products), "
                                             "else regenerate them on every pass"},
        "block_memory_mb": {"type": "integer", "minimum": 1, "default": 256,
                            "description": "features mode: keep phi(X_B) between the solve and the update when it fits"},
        "local_epochs": {"type": "number", "exclusiveMinimum": 0, "default": 1.0,
                         "description": "on a Dask cluster (execution.engine: dask): passes of DBCD-TR blocks each "
                                        "worker makes over its rows per round; one iteration is then one round"},
    }

    memory_key = "model.features.count"

    def memory_plan(self, sizes):
        """The features route (dual blocks on random features): per training row the dual variables, the labels, the
        dual box, the block partition and the check's scores (:data:`ROW_BYTES`); the Cholesky factors of visited blocks
        kept within ``factor_cache_mb``; each worker's block buffers; the feature parameters; the BLAS's work
        buffers.  The exact route (:func:`.blocks.exact_plan`): the same per row, and u = Kα; K_BB; each worker's
        chunk of kernel values.  The primal route (:func:`.primal.primal_plan`): the features where they are kept,
        the M x M Gram (and Nystrom's R), Newton's arrays."""
        problem = sizes.problem
        if problem is None:
            route = self.options.mode
        else:
            route = self.route_for(sizes.n, sizes.count, sizes.kind, problem.loss, problem.kernel)
        if route == "features":
            return features_plan(self.options, sizes, self.n_threads)
        if route == "exact":
            return exact_plan(self.options, sizes, self.n_threads)
        if route == "primal":
            return primal.primal_plan(self.options, sizes, self.n_threads)
        return []

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
        random = spec["model"]["features"]["kind"] == "random"
        if o.mode in ("features", "primal") and random and not spec.kernel_class.has_features:
            yield ("solver", "mode"), (
                f"mode {o.mode!r} needs a kernel with a random-feature sampler and {spec.kernel_class.name!r} has "
                "none; use mode: exact")
        if spec["model"]["features"]["kind"] == "nystrom":
            if o.mode in ("exact", "features"):
                yield ("solver", "mode"), (
                    f"Nystrom features (model.features.kind: nystrom) are solved by the primal route; mode {o.mode!r} "
                    "does not use them. Use mode: primal or auto")
            elif not primal.eligible(spec.loss):
                yield ("model", "features", "kind"), (
                    f"Nystrom features need the primal route, which needs a loss with a Lipschitz gradient; "
                    f"{spec.loss.name!r} has none. Use kind: random (the dual handles it), or a smooth loss")
        if spec["execution"]["engine"] == "dask":
            if o.mode not in ("features", "auto"):
                yield ("solver", "mode"), (
                    f"on a Dask cluster Joker runs its features mode (CoCoA+ rounds of dual blocks); mode {o.mode!r} "
                    "runs on one machine only. Use mode: features (or auto), or drop execution / --scheduler")
            elif spec["model"]["features"]["kind"] != "random":
                yield ("model", "features", "kind"), (
                    "on a Dask cluster Joker needs random features (kind: random); Nystrom features run on one machine")
        if o.mode == "primal" and not primal.eligible(spec.loss):
            yield ("solver", "mode"), (
                f"mode 'primal' needs a loss with a Lipschitz gradient (Loss.smoothness()); {spec.loss.name!r} has "
                "none. Use mode: features (the dual), or a smooth loss (square, huber, squared_hinge, logistic)")

    # -- route ----------------------------------------------------------------------------------
    def route(self, problem) -> str:
        """The route mode ``auto`` takes on this problem (see docs/joker.md, 'Routes').

        The model decides first: Nyström features are solved on the primal route; otherwise the
        exact kernel up to ``auto_exact_rows`` (auto never trades the exact kernel for random
        features where the exact one is affordable), random features beyond.  With random
        features the solver follows: the primal route for a loss with a Lipschitz gradient when
        n >= 2M and M <= ``primal_max_features``, the dual blocks otherwise.
        """
        return self.route_for(problem.n, problem.features.count, problem.features.kind, problem.loss, problem.kernel)

    def route_for(self, n, M, kind, loss, kernel) -> str:
        """:meth:`route` of n training rows, M features of ``kind``, ``loss`` and ``kernel``."""
        o = self.options
        if o.mode != "auto":
            return o.mode
        if kind == "nystrom":
            return "primal"
        if n <= o.auto_exact_rows or not kernel.has_features:
            return "exact"
        if primal.eligible(loss) and M <= o.primal_max_features and n >= 2 * M:
            return "primal"
        return "features"

    # -- the skeleton's contract: delegated to the route's state -------------------------------
    def init(self, problem, subsample_start=True):
        if problem.partitions is not None:
            return rounds.DistributedBlocks(problem, self.options, _label_matrix)
        Y = _label_matrix(problem)
        lam_j = joker_lambda(problem.lam, problem.n)
        route = self.route(problem)
        if route == "primal":
            return primal.PrimalFeatures(problem, Y, lam_j, cg_iterations=self.options.cg_iterations,
                                         memory_bytes=self.options.feature_memory_mb * 2**20, threads=self.n_threads,
                                         warm_start=self.options.primal_warm_start and subsample_start)
        return DualBlocks(problem, Y, lam_j, self.options, route, self.n_threads)

    def load(self, problem, saved):
        st = self.init(problem, subsample_start=not saved.get("lambda_path", False))
        st.restore(saved)
        return st

    def warm_state(self, saved, lam_from, lam_to):
        """A λ-path start: the dual routes keep λ_J α -- the conjugate variable, whose box does not
        depend on λ -- so α (and Kα, θ̃ = Σ α_i φ(x_i)) scale by λ_from/λ_to and stay feasible; the
        primal route keeps θ, the function itself.  Counters restart at 0 and the separable dual
        sum and the preconditioner are rebuilt for the new λ."""
        out = {k: v for k, v in saved.items() if k not in ("fsum", "preconditioner_weights")}
        if "alpha" in out:
            ratio = lam_from / lam_to
            for key in ("alpha", "u", "theta"):
                if key in out:
                    out[key] = out[key] * ratio
        out = {k: (0 if isinstance(v, (int, np.integer)) else v) for k, v in out.items()}
        return {**out, "lambda_path": True}

    def refit_state(self, saved, rows, n):
        """``lambda: auto``'s refit: the dual routes keep the conjugate variable λ_J α of the validation
        solve's rows (λ_J = λ n, so α scales by n_sub/n) and start the held-out rows at 0, inside the
        box; Kα (exact) or θ̃ = Σ α_i φ(x_i) (features) and the dual sum are recomputed for the new
        rows.  The primal route starts as usual (its θ lives on the subset's Nystrom centers; the
        route has its own subsample start)."""
        alpha = saved.get("alpha")
        if alpha is None or "u" not in saved and "theta" not in saved:
            return None
        alpha = np.asarray(alpha, dtype=np.float64)
        if alpha.ndim != 2 or alpha.shape[0] != len(rows):
            return None
        full = np.zeros((n, alpha.shape[1]), dtype=np.float64)
        full[np.asarray(rows)] = alpha * (len(rows) / n)
        return {"alpha": full, "rows": 0, "tr_steps": 0, "cg_steps": 0, "accepted": 0, "lambda_path": True}

    def save(self, st):
        return st.state()

    def cadence(self, st):
        return st.cadence()

    def step(self, st, t):
        return st.step(t)

    def check(self, st, rows):
        return st.check(rows)

    def decision_function(self, st, X):
        return st.decision_function(X)

    def finish(self, st):
        predictor, info = st.predictor()
        info = {"mode": st.name, "lambda_joker": st.lam_j,
                "one_vs_rest": st.C > 1 and st.problem.loss.target != "real", **info}
        return predictor, info


def _label_matrix(problem):
    """Labels as an (n, C) float64 matrix: one column, or ±1 one-vs-rest columns for multiclass ids."""
    return problem.label_matrix()
