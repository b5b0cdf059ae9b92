"""Exact KRR: α = (K + nλI)⁻¹ y, the minimiser of λ/2‖f‖² + (1/n) Σ (y_i − f(x_i))²/2.

With row weights w (``problem.sample_weight``, mean 1) it minimises λ/2‖f‖² + (1/n) Σ w_i (y_i − f(x_i))²/2,
whose stationarity condition (nλI + WK)α = Wy is solved through the symmetric positive definite
system (DKD + nλI)β = Dy, α = Dβ with D = W^½: on rows with w_i > 0 that is (K + nλW⁻¹)α = y, and
rows of weight 0 get α_i = 0.

Small n only (the n × n kernel matrix is formed in float64).  It is the oracle the iterative
solvers are tested against, so it reports the primal and dual objectives and their gap like
any dual solver.  It runs on the solver skeleton as a single iteration (the factorisation).
"""
from __future__ import annotations

import numpy as np

from kopt.contract.iterative import Check, IterativeSolver, Step
from kopt.errors import DataError, KoptError
from kopt.models.predictors import KernelExpansion
from kopt.numerics import rows as _rows
from kopt.numerics.backend import to_numpy
from kopt.numerics.linalg import ridge_solve
from kopt.numerics.memory import matrices
from kopt.numerics.objectives import dual, primal


class ExactKRR(IterativeSolver):
    name = "krr_exact"
    summary = "exact kernel ridge regression (Cholesky); the correctness oracle"
    forms = ("primal", "dual")
    targets = ("real", "binary")
    kernel_mode = "exact"
    needs_conjugate = True
    stopping = "none"
    iteration_unit = "the Cholesky solve (one iteration)"
    # one thread: a threaded LAPACK Cholesky gives other bits on other CPU counts, and every kopt model
    # is bit-identical whatever the thread count (docs/reliability.md)
    blas = "single"
    sample_weight = True
    warm_start = False  # a direct solve: there is nothing to continue
    params = {
        "max_rows": {"type": "integer", "minimum": 1, "default": 30000,
                     "description": "refuse larger training sets (the kernel matrix takes 8 n² bytes)"},
        "jitter": {"type": "number", "minimum": 0, "default": 0.0, "description": "added to the diagonal"},
    }

    memory_key = "data.max_rows"
    memory_hint = "or use solver krr_nystrom (memory O(M^2) on M centers, whatever n)"

    def memory_plan(self, sizes):
        """The n x n kernel matrix and its Cholesky factor (float64, the factor made in a copy) and the rows in
        float64 (the test rows' kernel against them, n_test x n, comes after the factor is freed)."""
        n = sizes.n
        return [matrices(2, n, n, "float64", "the kernel matrix and its Cholesky factor"),
                matrices(1, sizes.n, sizes.d + 2, "float64", "the training rows, augmented for the kernel")]

    def check_spec(self, spec):
        if spec.loss.name != "square":
            ok = spec.solvers_accepting()  # the solvers whose own checks accept this spec
            yield ("model", "loss", "name"), (
                f"solver 'krr_exact' solves the square loss only, not {spec.loss.name!r}"
                + (f"; solvers that accept this spec: {', '.join(ok)}" if ok else ""))

    def init(self, problem):
        n = problem.n
        if n > self.options.max_rows:
            raise DataError(
                f"krr_exact forms the {n} x {n} kernel matrix ({8 * n * n / 2**30:.1f} GiB); "
                f"max_rows is {self.options.max_rows}. Use solver joker for large n, or raise solver.max_rows")
        xp = problem.xp
        w = problem.sample_weight
        return {"problem": problem, "X": _rows.dense(problem.X, None, xp, np.float64),  # sparse: K is dense anyway
                "y": xp.asarray(problem.y, dtype=np.float64), "alpha": None, "scores": None,
                "weights": None if w is None else xp.asarray(w, dtype=np.float64)}

    def step(self, state, t):
        problem, X, y = state["problem"], state["X"], state["y"]
        xp, n = problem.xp, problem.n
        K = problem.kernel.exact(X, X)
        d = None if state["weights"] is None else xp.sqrt(state["weights"])
        try:
            state["alpha"] = ridge_solve(K.copy(), y, n * problem.lam + self.options.jitter, d)
        except np.linalg.LinAlgError:
            raise KoptError("the regularized kernel matrix is not positive definite; increase lambda or jitter") from None
        state["scores"] = K @ state["alpha"]
        return Step(rows=n)

    def check(self, state, rows):
        problem, y, alpha, scores = state["problem"], state["y"], state["alpha"], state["scores"]
        if alpha is None:
            return Check()
        norm_sq = float(alpha @ scores)
        w = state["weights"]
        return Check(objective=primal(problem.loss, y, scores, problem.lam, norm_sq, w),
                     dual=dual(problem.loss, y, alpha, problem.lam, norm_sq, w))

    def decision_function(self, state, X):
        problem = state["problem"]
        Xd = _rows.dense(X, None, problem.xp, np.float64)
        return problem.kernel.exact(Xd, state["X"]) @ state["alpha"]

    def save(self, state):
        # after the solve, α is the answer: a run interrupted there resumes with it (and its scores)
        return {} if state["alpha"] is None else {"alpha": to_numpy(state["alpha"])}

    def load(self, problem, saved):
        state = self.init(problem)
        if "alpha" in saved:
            state["alpha"] = problem.xp.asarray(saved["alpha"], dtype=np.float64)
            state["scores"] = problem.kernel.exact(state["X"], state["X"]) @ state["alpha"]
        return state

    def finish(self, state):
        predictor = KernelExpansion({"support": to_numpy(state["X"]), "coef": to_numpy(state["alpha"])}, {})
        return predictor, {"n_support": state["problem"].n}
