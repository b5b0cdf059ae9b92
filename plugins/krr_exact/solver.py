"""Exact KRR: α = (K + nλI)⁻¹ y, the minimiser of λ/2‖f‖² + (1/n) Σ (y_i − f(x_i))²/2.

Small n only (the n × n kernel matrix is formed in float64).  It is the oracle
the iterative solvers are tested against, so it reports the primal and dual
objectives and their gap like any dual solver.
"""
from __future__ import annotations

import numpy as np

from kopt import objectives
from kopt.components import Solver
from kopt.linalg import cholesky, cho_solve
from kopt.predictors import KernelExpansion
from kopt.result import SolverOutput


class ExactKRR(Solver):
    name = "krr_exact"
    summary = "exact kernel ridge regression (Cholesky); the correctness oracle"
    forms = ("primal", "dual")
    targets = ("real", "binary")
    kernel_mode = "exact"
    needs_conjugate = True
    params = {
        "max_rows": {
            "type": "integer",
            "minimum": 1,
            "default": 30000,
            "description": "refuse larger training sets (the kernel matrix takes 8 n² bytes)",
        },
        "jitter": {"type": "number", "minimum": 0, "default": 0.0, "description": "added to the diagonal"},
    }

    def check_spec(self, spec):
        if spec["model"]["loss"]["name"] != "square":
            yield ("model", "loss", "name"), (
                f"solver 'krr_exact' solves the square loss only, not {spec['model']['loss']['name']!r}; "
                "use solver joker for other losses"
            )

    def run(self, problem, run):
        xp = problem.xp
        n = problem.n
        if n > self.options.max_rows:
            from kopt.errors import DataError

            raise DataError(
                f"krr_exact forms the {n} x {n} kernel matrix ({8 * n * n / 2**30:.1f} GiB); "
                f"max_rows is {self.options.max_rows}. Use solver joker for large n, or raise solver.max_rows"
            )
        X = xp.asarray(problem.X, dtype=np.float64)
        y = xp.asarray(problem.y, dtype=np.float64)
        lam = problem.lam
        K = problem.kernel.exact(X, X)
        A = K.copy()
        A[xp.diag_indices(n)] += n * lam + self.options.jitter
        try:
            L = cholesky(A, overwrite=True)
        except np.linalg.LinAlgError:
            from kopt.errors import KoptError

            raise KoptError("the regularized kernel matrix is not positive definite; increase lambda or jitter") from None
        del A
        alpha = cho_solve(L, y)
        del L
        scores = K @ alpha
        norm_sq = float(alpha @ scores)
        primal = objectives.primal(problem.loss, y, scores, lam, norm_sq)
        dual = objectives.dual(problem.loss, y, alpha, lam, norm_sq)
        metrics = {}
        if problem.X_test is not None:
            Xt = xp.asarray(problem.X_test, dtype=np.float64)
            metrics = problem.holdout_metrics(problem.kernel.exact(Xt, X) @ alpha)
        run.report(1, objective=primal, dual=dual, gap=primal - dual, rows=n, metrics=metrics)
        predictor = KernelExpansion({"support": problem.backend.to_numpy(X), "coef": problem.backend.to_numpy(alpha)}, {})
        return SolverOutput(predictor, n_iter=1, objective=primal, dual=dual, gap=primal - dual,
                            info={"n_support": n})
