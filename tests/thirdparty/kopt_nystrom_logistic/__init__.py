"""kopt-nystrom-logistic: kernel logistic regression on Nyström centers, each Newton step solved by kopt's
preconditioned conjugate gradients.

A third-party solver written against kopt's public API only (docs/plugin-guide.md, "Solvers on Nyström
centers").  The model is f(x) = k(x, C) w on the spec's M centers C (``model.features.count``; the kind
``nystrom`` is the solver's default), with ‖f‖² = wᵀRw, R = K_CC = UᵀU.  In the whitened coordinates v = U w
it minimises

    J(v) = λ/2 ‖v‖² + (1/n) Σ_i w_i ℓ(y_i, f_i),   f = K U⁻¹ v,   K = k(X, C),   w_i the row weights.

Newton's step from v is a weighted ridge regression on the same centers (iteratively reweighted least squares):

    (T_D + λI) v⁺ = U⁻ᵀ Kᵀ D y⁺ / n,   D_i = w_i ℓ''(f_i),   y⁺_i = f_i − ℓ'(f_i)/ℓ''(f_i),

kopt.nystrom.NystromCG's system for row weights D and targets y⁺: ``factors.reweighted(X, y⁺, D)`` (its right-hand
side made in the first refresh's pass; U is made once, the preconditioner at each step).  CG starts at the current v, where its
residual is −∇J(v), so the step's accuracy is relative to the gradient, and runs until its preconditioned
residual is ``forcing`` times the first.  A backtracking line search on J costs no pass (the scores are linear in
v).  Each iteration ends with one float64 pass at the new point (RowPass.predict_adjoint): the scores f and
Kᵀ(w ⊙ ℓ'(f)), which give the next Newton system and the certificate (kopt.nystrom.certificate): P − D at the
dual point α_i = −w_i ℓ'(f_i)/(λn).
"""
from __future__ import annotations

import numpy as np

from kopt.contract.hookspecs import hookimpl
from kopt.contract.iterative import Check, Step, common_options
from kopt.numerics.backend import to_numpy
from kopt.numerics.objectives import primal
from kopt.nystrom import NystromCG, NystromSolver, certificate


class NystromLogistic(NystromSolver):
    name = "nystrom_logistic"
    summary = "kernel logistic regression on Nystrom centers: Newton steps by preconditioned CG (example plugin)"
    forms = ("primal",)
    targets = ("binary",)
    one_vs_rest = False  # one output column: the Newton weights D differ from class to class
    losses = ("logistic",)  # the base's check_spec refuses the others
    needs_smooth_loss = True
    stopping = "gap"
    blas = "single"  # the passes run on kopt's worker threads, BLAS held to one thread inside them
    iteration_unit = "one Newton step: CG on the reweighted rows, a line search, a float64 pass"
    divergence_hint = "raise lambda"
    params = {
        **common_options(iterations=30, tol=1e-8),
        "cg_steps": {"type": "integer", "minimum": 1, "default": 50, "description": "CG steps per Newton step, at most"},
        "forcing": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 1e-4,
                    "description": "CG stops when its preconditioned residual is this share of the first"},
    }

    # -- the skeleton's contract (decision_function and finish are NystromSolver's) -----------------------
    def init(self, problem):
        return self._start(problem, None)

    def load(self, problem, saved):
        return self._start(problem, saved["v"])

    def save(self, st):
        return {"v": to_numpy(st["v"])}

    def cadence(self, st):
        return 1, 5  # the certificate is free (from the last pass); holdout metrics every 5 iterations

    def step(self, st, t):
        problem, cg, v, f = st["problem"], st["cg"], st["v"], st["scores"]
        xp, loss, y, lam, wts = problem.xp, problem.loss, st["y"], problem.lam, st["weights"]
        cg.set_lambda(lam)  # the preconditioner (w̄/M) UUᵀ + λI of the Newton system at v (in U's buffer)
        s = cg.refresh({"v": v.copy()})  # CG's state at v, float64 products: its residual is −∇J(v) to rounding
        s["p"] = cg.precondition(s["r"])
        s["rz"] = xp.sum(s["r"] * s["p"], axis=0)
        f0, rz0, steps = s["scores"][:, 0].copy(), float(s["rz"][0]), 0
        while steps < self.options.cg_steps and rz0 > 0 and float(s["rz"][0]) > self.options.forcing ** 2 * rz0:
            cg.step(s)
            steps += 1
        d, df = s["v"] - v, s["scores"][:, 0] - f0  # the step, and the scores' change along it

        def J(a):
            return primal(loss, y, f + a * df, lam, float(xp.sum((v + a * d) ** 2)), wts)

        slope = lam * float(xp.sum(v * d)) + float(xp.mean(_w(wts, loss.grad(f, y)) * df))
        a, J0 = 1.0, J(0.0)
        while a > 1e-10 and not (J(a) <= J0 + 1e-4 * a * slope or J(a) <= J0):
            a *= 0.5
        self._move(st, v + a * d if a > 1e-10 else v, cg)
        return Step(rows=problem.n, objective=st["P"], extra={"cg_steps": steps, "step_length": a})

    def check(self, st, rows):
        return Check(objective=st["P"], dual=st["D"], scale=st["scale"], terms=st["problem"].n + st["cg"].M)

    def finish(self, st):
        predictor, info = super().finish(st)
        return predictor, {**info, "passes": st["passes"] + st["cg"].passes}

    # -- the mathematics ----------------------------------------------------------------------------------
    def _start(self, problem, v):
        """The state at v (None: 0).  The factors (U, the kept centers) are made here, once; a resumed run
        makes the same ones and the same Newton system from v alone."""
        st = super().init(problem)  # the seeded centers C, the labels, the row weights
        y = problem.label_matrix()[:, 0]  # ±1: logistic fits them as they are (no fixed intercept)
        factors = NystromCG(problem.kernel, problem.X, y[:, None], st["C"], dtype=problem.dtype,
                            weights=st["weights"], threads=self.n_threads)
        st.update(y=y, Y=y[:, None], intercept=problem.xp.zeros(1), C=factors.C, U=factors.U)
        v = problem.xp.zeros((factors.M, 1)) if v is None else problem.xp.asarray(v, dtype=np.float64)
        self._move(st, v, factors)
        return st

    def _move(self, st, v, cg):
        """Go to v: one float64 pass (the scores and Kᵀ(w ⊙ ℓ'(f))), the certificate, the Newton system at v."""
        problem, loss, y, wts = st["problem"], st["problem"].loss, st["y"], st["weights"]
        w = cg.coef(v)  # the coefficients on the kept centers, U⁻¹v
        S, G = cg.rows.predict_adjoint(w, lambda f, lo, hi: _w(wts, loss.grad(f, y[lo:hi, None]), lo, hi))
        f, Ktr = S[:, 0], G[:, 0]
        P, D, scale = certificate(loss, problem.lam, y, f, Ktr, w[:, 0], cg.U, wts)
        g, c = loss.grad(f, y), loss.curvature(f, y)
        target = problem.xp.where(c > 0, f - g / problem.xp.where(c > 0, c, 1.0), f)  # y⁺ = f − ℓ'/ℓ''
        st.update(v=v, w=w, scores=f, P=P, D=D, scale=scale, passes=st.get("passes", 0) + cg.passes,
                  cg=cg.reweighted(problem.X, target[:, None], _w(wts, c), threads=self.n_threads))


def _w(weights, a, lo=None, hi=None):
    """a times the row weights (of rows lo:hi), or a itself without weights."""
    if weights is None:
        return a
    w = weights if lo is None else weights[lo:hi]
    return a * (w if a.ndim == 1 else w[:, None])


@hookimpl
def kopt_register_solvers(register):
    register(NystromLogistic)
