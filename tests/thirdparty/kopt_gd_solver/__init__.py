"""kopt-gd-solver: full-batch gradient descent on the primal over the spec's random features.

A complete third-party solver on kopt's solver skeleton, written against kopt's public API only
(docs/plugin-guide.md, "Writing a solver").  With ψ = φ/√M the spec's M random features
(``model.features``), it minimises over θ ∈ R^M

    P(θ) = λ/2 ‖θ‖² + (1/n) Σ ℓ(y_i, ψ(x_i)ᵀθ)

by θ ← θ − η ∇P(θ), with η = 1/L and L = λ + (Lipschitz constant of ℓ') · mean_i ‖ψ(x_i)‖², a bound
on the curvature of P.  One iteration is one pass over the rows, which also gives the dual
objective at α_i = −ℓ'(f_i)/(λn): the skeleton stops when the relative duality gap is at most tol.
"""
from __future__ import annotations

import math

import numpy as np

from kopt.contract.hookspecs import hookimpl
from kopt.contract.iterative import Check, IterativeSolver, Step, common_options
from kopt.models.predictors import FeatureExpansion
from kopt.numerics import bound_features as feature_rows
from kopt.numerics.backend import to_numpy
from kopt.numerics.objectives import dual, primal


class GradientDescent(IterativeSolver):
    name = "gd"
    summary = "full-batch gradient descent on the primal over random features (example plugin)"
    forms = ("primal",)
    targets = ("real", "binary")
    needs_smooth_loss = True
    needs_conjugate = True  # the dual objective gives the stopping rule
    kernel_mode = "features"
    stopping = "gap"
    iteration_unit = "one pass over the training rows: a full gradient and a step"
    blas = "single"  # the feature engine runs its own threads
    divergence_hint = "lower solver.step_size"
    params = {
        **common_options(iterations=500, tol=1e-4),
        "step_size": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
                      "description": "step η (null: 1/L from the loss's Lipschitz constant)"},
        "memory_mb": {"type": "number", "exclusiveMinimum": 0, "default": 256,
                      "description": "keep the n x M features in memory within this budget, else regenerate them"},
    }

    def check_spec(self, spec):
        if spec.regularizer.name != "l2" or not spec.regularizer.lam > 0:
            yield ("model", "regularizer"), "solver 'gd' needs regularizer l2 with lambda > 0"
        if self.options.step_size is None and spec.loss.smoothness() is None:
            yield ("solver", "step_size"), f"loss {spec.loss.name!r} gives no Lipschitz constant; set solver.step_size"

    # -- the skeleton's contract ------------------------------------------------------------
    def init(self, problem):
        return self._start(problem, None)

    def load(self, problem, saved):
        return self._start(problem, saved["theta"])

    def save(self, st):
        return {"theta": to_numpy(st["theta"])}

    def step(self, st, t):
        self._evaluate(st, st["theta"] - st["eta"] * st["grad"])
        return Step(rows=st["problem"].n, objective=st["P"])

    def check(self, st, rows):
        return Check(objective=st["P"], dual=st["D"])  # exact, from the last pass

    def cadence(self, st):
        return 1, 10  # check every iteration (it is free), holdout metrics every 10

    def decision_function(self, st, X):
        fmap = st["fmap"]
        coef = st["theta"].reshape(fmap.n_blocks, fmap.block_size) / math.sqrt(fmap.count)
        return fmap.predict(X, coef)

    def finish(self, st):
        fmap = st["fmap"]
        predictor = FeatureExpansion(
            {"coef": to_numpy(st["theta"]).reshape(fmap.n_blocks, fmap.block_size),
             "blocks": np.arange(fmap.n_blocks)},
            {"scale": 1.0 / math.sqrt(fmap.count), "seed": fmap.seed, "block_size": fmap.block_size,
             "dtype": str(fmap.dtype)})
        return predictor, {"step_size": st["eta"], "n_features": fmap.count}

    # -- the mathematics ----------------------------------------------------------------------
    def _start(self, problem, theta):
        """The run's state at θ (None: zeros); a resumed run recomputes everything else from θ."""
        fmap = problem.feature_map(threads=self.n_threads)
        rows = feature_rows.bind(fmap, problem.X, int(self.options.memory_mb * 2**20), threads=self.n_threads)
        st = {"problem": problem, "fmap": fmap, "rows": rows}
        st["eta"] = self.options.step_size or 1.0 / (problem.lam + problem.loss.smoothness() * _mean_sq_norm(rows))
        self._evaluate(st, problem.xp.zeros(fmap.count) if theta is None else problem.xp.asarray(theta))
        return st

    def _evaluate(self, st, theta):
        """Move to θ: scores, P, ∇P and D at α = −ℓ'(f)/(λn), from one pass over the rows."""
        p = st["problem"]
        loss, y, lam, n = p.loss, p.y, p.lam, p.n
        f, G = st["rows"].predict_adjoint(theta, lambda f, lo, hi: loss.grad(f[:, 0], y[lo:hi])[:, None])
        f, g = f[:, 0], G[:, 0] / n  # the scores Ψθ and (1/n) Ψᵀℓ'(f)
        alpha = -loss.grad(f, y) / (lam * n)  # then Ψᵀα = −g/λ, so αᵀKα = ‖g‖²/λ²
        st.update(theta=theta, grad=lam * theta + g, P=primal(loss, y, f, lam, float(theta @ theta)),
                  D=dual(loss, y, alpha, lam, float(g @ g) / lam**2))


def _mean_sq_norm(rows):
    """mean_i ‖ψ(x_i)‖² = trace(ΨᵀΨ)/n, at least the largest eigenvalue of ΨᵀΨ/n."""
    xp, total = rows.xp, 0.0
    for lo in range(0, rows.n, 4096):
        Z = rows.features(xp.arange(lo, min(rows.n, lo + 4096))).astype(np.float64)
        total += float((Z * Z).sum())
    return total / rows.n


@hookimpl
def kopt_register_solvers(register):
    register(GradientDescent)
