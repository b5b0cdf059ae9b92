"""Nyström kernel ridge regression by a direct solve: the square loss on M centers, every output at once.

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

from kopt.contract.iterative import Check, Step
from kopt.errors import KoptError
from kopt.numerics.memory import matrices
from kopt.nystrom import NystromSolver, certificate, residual_pass, system_plan
from kopt.nystrom import cache as nystrom_cache


class NystromKRR(NystromSolver):
    name = "krr_nystrom"
    summary = "kernel ridge regression on M Nystrom centers by one Cholesky (every class at once)"
    stopping = "none"
    blas = "all"  # the Gram's rank-k updates are BLAS; a GEMM's bits do not depend on its thread count
    warm_start = False  # a direct solve: nothing to continue
    iteration_unit = "the system and its Cholesky solve (one iteration)"
    params = {}
    losses = ("square",)

    def memory_plan(self, sizes):
        """The system (:func:`.system.system_plan`: T and U, M x M float64 each, a chunk of kernel values), the
        centered targets and the scores of every training row (n x outputs float64 each)."""
        return [*system_plan(sizes),
                matrices(2, sizes.n, sizes.outputs, "float64", "the targets, centered, and the rows' scores")]

    def step(self, state, t):
        problem = state["problem"]
        # a kept system inside kopt.nystrom.cache.sharing() (a grid search's fits that differ only in λ)
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

