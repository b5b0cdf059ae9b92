"""Nyström kernel ridge regression by a direct solve: the square loss on M centres, every output at once.

The minimiser of λ/2 wᵀRw + (1/n) Σ w_i ½‖k(x_i, C) w − y_i‖² over the span of k(c_j, ·) for M
seeded training rows C (:func:`kopt.nystrom.choose_centers`, less those the kernel cannot tell from the
others: :func:`kopt.nystrom.center_basis`), from one M × M Cholesky of the whitened system
T + λI (:class:`.system.NystromSystem`): O(n M² + M³) flops and O(M²) memory whatever n.
Classification labels are ±1 targets (one column, or one per class for multiclass ids: the
classes share the factorisation), less their mean: the model is k(x, C) w + μ with μ the labels' mean,
fixed and unpenalised (:func:`.system.target_offset`).  It reports the primal, the dual of the Nyström problem and
their gap like every dual solver: the dual point is α_i = −w_i ℓ'(f_i)/(λn), its norm
αᵀK R⁻¹Kᵀα (one more pass over the rows), so the gap is the solve's own rounding.
"""
from __future__ import annotations

import numpy as np

from kopt import nystrom_cache
from kopt import rows as _rows
from kopt.backend import get_namespace, to_numpy
from kopt.errors import KoptError
from kopt.iterative import Check, IterativeSolver, Step
from kopt.linalg import solve_triangular
from kopt.memory import matrices
from kopt.nystrom import center_basis, choose_centers
from kopt.objectives import dual, primal
from kopt.predictors import KernelExpansion
from kopt.threads import blas_threads

from .system import kept_centers, residual_pass, row_chunks, system_plan, target_offset


class NystromKRR(IterativeSolver):
    name = "krr_nystrom"
    summary = "kernel ridge regression on M Nystrom centres by one Cholesky (every class at once)"
    forms = ("primal", "dual")
    targets = ("real", "binary")
    kernel_mode = "features"
    feature_kinds = ("nystrom",)
    one_vs_rest = True
    needs_conjugate = True
    stopping = "none"
    blas = "all"  # the Gram's rank-k updates are BLAS; a GEMM's bits do not depend on its thread count
    sample_weight = True
    warm_start = False  # a direct solve: nothing to continue
    iteration_unit = "the system and its Cholesky solve (one iteration)"
    params = {}

    memory_key = "model.features.count"

    def memory_plan(self, sizes):
        """The system (:func:`.system.system_plan`: T and U, M x M float64 each, a chunk of kernel values), the
        centred targets and the scores of every training row (n x outputs float64 each)."""
        return [*system_plan(sizes),
                matrices(2, sizes.n, sizes.outputs, "float64", "the targets, centred, and the rows' scores")]

    def check_spec(self, spec):
        if spec.loss.name != "square":
            yield ("model", "loss", "name"), (
                f"solver {self.name!r} solves the square loss only, not {spec.loss.name!r}; use solver joker "
                "(mode: primal on Nystrom centres) for other losses, or solver: auto")

    def init(self, problem, dense_centers=True):
        """The solver's state; ``dense_centers=False`` leaves ``C`` (the dense centres) None until
        :func:`_dense_centers` makes them (a planned system brings its own)."""
        centers = choose_centers(problem, problem.features.count)
        C = _dense_centers(problem, centers) if dense_centers else None
        Y = problem.label_matrix()
        intercept = target_offset(Y, problem.sample_weight)  # fixed: the solve fits the centred targets
        return {"problem": problem, "centers": centers, "C": C, "Y": Y - intercept, "intercept": intercept,
                "w": None, "weights": problem.sample_weight, "system": None}

    def step(self, state, t):
        problem = state["problem"]
        # a kept system inside kopt.nystrom_cache.sharing() (a grid search's fits that differ only in λ)
        system = state.pop("system", None) or nystrom_cache.system(
            problem.kernel, problem.X, state["Y"], state["C"], dtype=problem.dtype, weights=state["weights"])
        state["system"] = None
        try:
            w, scores, Ktr, steps = system.refine(problem.lam, problem.X, state["Y"], state["weights"])
        except np.linalg.LinAlgError:
            raise KoptError("the regularized Nystrom system is not positive definite; raise lambda") from None
        state.update(w=w, scores=scores, Ktr=Ktr, U=system.U, C=system.C, refinements=steps)
        return Step(rows=problem.n)

    def check(self, state, rows):
        """P and D over every row, from the last float64 pass (the refinement's) at the final w."""
        if state["w"] is None:
            return Check()
        problem, w, Y, U = state["problem"], state["w"], state["Y"], state["U"]
        n, lam, loss = problem.n, problem.lam, problem.loss
        weights = state["weights"]
        if state.get("scores") is None:  # resumed from a checkpoint: one pass
            state["scores"], state["Ktr"] = residual_pass(problem.kernel, state["C"], problem.dtype, w, problem.X, Y,
                                                          weights)
        scores, Ktr = state["scores"], state["Ktr"]
        P = D = scale = 0.0
        for c in range(Y.shape[1]):
            p, d, s = certificate(loss, lam, Y[:, c], scores[:, c], Ktr[:, c], w[:, c], U, weights)
            P, D, scale = P + p, D + d, scale + s
        return Check(objective=P, dual=D, scale=scale, terms=n + int(w.shape[0]),
                     extra={"refinements": int(state.get("refinements", 0))})

    def decision_function(self, state, X):
        problem = state["problem"]
        out = problem.xp.empty((X.shape[0], state["w"].shape[1]), dtype=np.float64)
        coef = state["w"].astype(problem.dtype)
        k = problem.kernel.bind(state["C"])
        for lo, hi in row_chunks(X, state["C"].shape[0], problem.kernel):
            rows = _rows.kernel_rows(problem.kernel, X, slice(lo, hi), problem.xp, problem.dtype)
            out[lo:hi] = k(rows) @ coef
        return out + state["intercept"]

    def save(self, state):
        return {} if state["w"] is None else {"w": to_numpy(state["w"])}

    def load(self, problem, saved):
        planned = "system" in saved  # solver: auto's plan: the system its search built on every training row
        state = self.init(problem, dense_centers=not planned)
        if planned:
            state["system"] = _planned_system(problem, state, saved)
            state["reused_system"] = state["system"] is not None
            if state["system"] is None:
                state["C"] = _dense_centers(problem, state["centers"])
            else:  # the system keeps its own dense centres (a second copy was reuters' peak: 136 MB at 4,096)
                state["C"] = state["system"].C
        if "w" in saved:
            state["w"] = problem.xp.asarray(saved["w"], dtype=np.float64)
            C = _dense_centers(problem, state["centers"]) if state.get("reused_system") else state["C"]
            with blas_threads(1):  # as NystromSystem factors it: the same centres and bits of U, so the same certificate
                kept, state["U"] = center_basis(problem.kernel, C)
            state["C"] = kept_centers(C, kept)
        return state

    def finish(self, state):
        coef = to_numpy(state["w"])
        intercept = to_numpy(state["intercept"]).astype(float).tolist()
        if coef.shape[1] == 1:
            coef, intercept = coef[:, 0], intercept[0]
        predictor = KernelExpansion({"support": to_numpy(state["C"]), "coef": coef}, {"intercept": intercept})
        info = {"n_centers": int(state["C"].shape[0]),
                "centers_dropped": int(state["centers"].shape[0] - state["C"].shape[0])}
        if "reused_system" in state:
            info["reused_search_system"] = state["reused_system"]
        return predictor, info


def certificate(loss, lam, y, scores, Ktr, w, U, weights=None):
    """One output column's primal, dual and rounding scale at the coefficients w on centres with R = UᵀU, from the
    float64 pass's scores f and Kᵀr (r_i = w_i (f_i − y_i)): the dual point α = −w_i ℓ'(f_i)/(λn), its norm
    αᵀK R⁻¹ Kᵀα (so the gap is the solve's own rounding)."""
    xp = get_namespace(scores)
    n = y.shape[0]
    norm_p = float(xp.sum((U @ w) ** 2))  # wᵀRw
    z = solve_triangular(U, -Ktr / (lam * n), lower=False, trans="T")
    norm_d = float(xp.sum(z * z))  # αᵀK R⁻¹ Kᵀα
    g = loss.grad(scores, y)
    alpha = -(g if weights is None else g * weights) / (lam * n)
    P = primal(loss, y, scores, lam, norm_p, weights)
    D = dual(loss, y, alpha, lam, norm_d, weights)
    return P, D, lam * (norm_p + norm_d) + 2.0 * float(xp.mean(xp.abs(loss.value(scores, y))))


def _dense_centers(problem, centers):
    """The centres' rows, dense in the problem's dtype."""
    return _rows.dense(problem.X, problem.xp.asarray(centers), problem.xp, problem.dtype)


def _planned_system(problem, state, saved):
    """The planner's :class:`NystromSystem`, if it is this problem's: the same centres, kernel, dtype and
    rows (else None: the solve builds its own, as it would without a plan)."""
    system = saved["system"]
    same = (np.array_equal(np.asarray(saved["centers"]), state["centers"]) and system.n == problem.n
            and np.array_equal(to_numpy(saved["intercept"]), to_numpy(state["intercept"]))
            and system.dtype == np.dtype(problem.dtype) and type(system.kernel) is type(problem.kernel)
            and system.kernel.options.as_dict() == problem.kernel.options.as_dict()
            and system.Bn.shape[1] == state["Y"].shape[1])
    return system if same else None

