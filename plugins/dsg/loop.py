"""The iteration loop shared by DSG, UDSG and CDSG (the policies live in :mod:`kopt_plugins.dsg.solver`).

One iteration: draw the batch, predict it from every block (fused with every block's adjoint when
CDSG checks all blocks), let the policy pick a new block or an old one and the step, shrink
through the global scale, write the block's coefficient, track ‖f‖² and the objective estimate,
evaluate on the seeded row subsets when due, and report (with the checkpoint state).
"""
from __future__ import annotations

import numpy as np

from kopt.backend import to_numpy
from kopt.errors import DataError
from kopt.metrics import evaluate
from kopt.predictors import FeatureExpansion
from kopt.result import SolverOutput

from .expansion import BlockExpansion
from .featuremap import feature_map
from .objective import LossTerms
from .options import schedule
from .sampling import BatchSampler, dense
from .tracking import RunningObjective, ScoreTracker


class Context:
    """What a policy may look at in iteration t (``cross``, ``zeta_sq``: CDSG only)."""

    expansion = None
    gamma = 0.0
    B = 1
    grad_sq = 0.0
    variance = 0.0
    grad_bound = None
    cross = None
    zeta_sq = 0.0
    candidates = None


class Loop:
    """One run of a :class:`DoublyStochastic` solver on a problem."""

    def __init__(self, solver, problem, run):
        self.solver, self.problem, self.run_ctx = solver, problem, run
        o = self.o = solver.options
        self.xp = problem.xp
        self.B = int(o.batch_size)
        if self.B > problem.n:
            raise DataError(
                f"solver.batch_size = {self.B} is larger than the {problem.n} training rows; "
                f"set solver.batch_size <= {problem.n}"
            )
        self.T = int(o.iterations)
        self.fmap = feature_map(problem)
        self.F = self.fmap.block_size
        C = problem.n_outputs if problem.loss.target == "multiclass" else None
        self.C = C
        self.exp = BlockExpansion(self.xp, self.F, C, averaging=o.averaging)
        self.terms = LossTerms(problem)
        self.sampler = BatchSampler(problem, self.B, o.sampling)
        self.objective = RunningObjective(o.objective_window)
        self.norm_sq = 0.0
        self.new_steps = self.reuse_steps = 0
        ctx = self.ctx = Context()
        ctx.expansion, ctx.B = self.exp, self.B
        solver.prepare(problem, self.fmap, ctx)
        if run.resume_state is not None:
            self._restore(run.resume_state)
        self.eval_every = int(o.eval_every)
        self.train_rows, self.train_tracker, self.test_tracker = None, None, None
        n_eval = int(o.eval_rows)
        if n_eval:
            self.train_rows = (np.arange(problem.n) if n_eval >= problem.n else
                               np.sort(problem.rng("eval", 0).choice(problem.n, size=n_eval, replace=False)))
            self.train_tracker = self._tracker(dense(problem.X, self.train_rows, self.xp, problem.dtype))
        if self.eval_every and problem.X_test is not None and problem.y_test_raw is not None:
            n_test, cap = problem.X_test.shape[0], int(o.eval_test_rows)
            self.test_rows = (np.arange(n_test) if not cap or cap >= n_test else
                              np.sort(problem.rng("eval", 1).choice(n_test, size=cap, replace=False)))
            self.test_tracker = self._tracker(dense(problem.X_test, self.test_rows, self.xp, problem.dtype))

    def _tracker(self, X):
        tr = ScoreTracker(X, self.xp, self.problem.dtype, self.C)
        if not self.exp.averaging:  # the averaged iterate changes every block: evaluate it from scratch
            tr.pending = {j: self.exp.coef[j].copy() for j in range(self.exp.m)}
            self.exp.listeners.append(tr)
        return tr

    def _scores(self, tracker):
        exp = self.exp
        if not exp.averaging:
            return tracker.sync(self.fmap, exp)
        if exp.m == 0:
            return tracker.scores
        return self.fmap.predict(tracker.X, exp.averaged_coefficients(), blocks=exp.blocks[: exp.m].tolist())

    # -- one iteration -------------------------------------------------------------
    def step(self, t):
        p, xp, exp, ctx, B, F = self.problem, self.xp, self.exp, self.ctx, self.B, self.F
        rng = self.sampler.generator(t)
        rows = self.sampler.rows(t, rng)
        Xb = dense(p.X, rows, xp, p.dtype)
        G, cand = None, None
        n_cand = int(getattr(self.o, "candidates", 0) or 0)
        if self.solver.block_gradients and exp.m and (n_cand == 0 or n_cand >= exp.m):
            # f_t(x_b) and Φ_kᵀℓ'(f_t(x_b)) of every block k in one feature evaluation
            pred, G = self.fmap.predict_adjoint(
                Xb, exp.coef[: exp.m], lambda f, lo, hi: self.terms.grad(exp.scale * f, rows[lo:hi]),
                blocks=exp.blocks[: exp.m].tolist())
            u = exp.scale * pred
            cand = np.arange(exp.m)
        else:
            u = exp.predict(self.fmap, Xb)
        loss_value, g = self.terms.value_and_grad(u, rows)
        if self.solver.block_gradients and exp.m and cand is None:
            # check ``candidates`` old blocks drawn uniformly (after the rows, from the same generator)
            cand = np.sort(rng.choice(exp.m, size=n_cand, replace=False))
            G = self.fmap.adjoint(Xb, g, blocks=exp.blocks[cand].tolist())
        if G is not None:
            c = exp.coef[xp.asarray(cand)]
            ctx.cross = to_numpy(exp.scale / B * (c * G).reshape(len(cand), -1).sum(axis=1))  # ⟨f_k, ζ⟩
            ctx.zeta_sq = float((G * G).sum()) / (len(cand) * B * B * F)  # ‖ζ‖², averaged over the blocks
        ctx.candidates = cand
        ctx.gamma = self.o.step_size * schedule(self.o, t)
        ctx.grad_sq = float((g * g).sum()) / B
        k, eta = self.solver.choose(t, rng, ctx)
        if k is None:
            block = exp.m + 1
            a = self.fmap.adjoint(Xb, g, blocks=[block])[0]  # Φ_ωᵀ ℓ'  (F[, C])
        else:
            block = int(exp.blocks[k])
            a = G[int(np.searchsorted(cand, k))] if G is not None else self.fmap.adjoint(Xb, g, blocks=[block])[0]
        zeta_sq = ctx.zeta_sq if G is not None else float((a * a).sum()) / (B * B * F)
        rho = 1.0 - eta * p.lam
        objective = loss_value + 0.5 * p.lam * self.norm_sq
        # ‖f‖² by the reproducing property: ‖ρf − ηζ‖² with ⟨f_t, ζ⟩ = mean ℓ'·f_t(x_b)
        cross = float((g * u).sum()) / B
        self.norm_sq = rho * rho * self.norm_sq - 2.0 * rho * eta * cross + eta * eta * zeta_sq
        coef = a * (-eta / (B * F))
        exp.shrink(rho)
        if k is None:
            exp.add_block(block, coef, norm=eta * eta * zeta_sq)
            self.new_steps += 1
        else:
            dnorm = None if G is None else -2.0 * rho * eta * ctx.cross[np.searchsorted(cand, k)] + eta * eta * zeta_sq
            exp.update_block(k, coef, dnorm=dnorm)
            self.reuse_steps += 1
        exp.accumulate()
        self.terms.step_offset(u, ctx.gamma)
        return self.objective.update(objective), eta

    def evaluate(self):
        """``(metrics, extra)`` of an evaluation iteration."""
        p, metrics, extra = self.problem, {}, {}
        if self.test_tracker is not None:
            scores = to_numpy(self._scores(self.test_tracker) + self.terms.intercept)
            metrics = evaluate(p.loss.target, np.asarray(p.y_test_raw)[self.test_rows], scores, p.preprocessor)
        if self.train_tracker is not None:
            u = self._scores(self.train_tracker)
            extra["train_loss"] = self.terms.mean_value(u, self.train_rows)
            extra["train_objective"] = extra["train_loss"] + 0.5 * p.lam * self.norm_sq
        return metrics, extra

    def run(self):
        run, exp = self.run_ctx, self.exp
        t = run.start_iteration
        objective, stopped = self.objective.value, False
        for t in range(run.start_iteration + 1, self.T + 1):
            objective, eta = self.step(t)
            metrics, extra = {}, {}
            if (self.eval_every and t % self.eval_every == 0) or t == self.T:
                metrics, extra = self.evaluate()
            if not run.report(t, objective=objective, rows=self.B, metrics=metrics, state=self.state,
                              n_blocks=exp.m, step=eta, **extra):
                stopped = True
                break
        final = objective
        if self.train_tracker is not None and not stopped:
            final = self.evaluate()[1]["train_objective"]
        coef = to_numpy(exp.averaged_coefficients()) if exp.averaging else exp.coefficients()
        predictor = FeatureExpansion(
            {"coef": coef, "blocks": exp.blocks[: exp.m].copy()},
            {"scale": 1.0, "seed": self.fmap.seed, "block_size": self.F, "dtype": str(self.fmap.dtype),
             "intercept": self.terms.intercept},
        )
        info = {"n_blocks": exp.m, "new_steps": self.new_steps, "reuse_steps": self.reuse_steps,
                "eval_test_rows": 0 if self.test_tracker is None else int(self.test_rows.size),
                "block_size": self.F, "batch_size": self.B, "norm_sq_estimate": self.norm_sq,
                "objective_estimate": objective}
        if self.terms.has_offset:
            info["offset"] = self.terms.tau
        if self.ctx.variance:
            info["variance"] = self.ctx.variance
        msg = f"stopped at iteration {t}" if stopped else f"{t} iterations, {exp.m} feature blocks"
        return SolverOutput(predictor, n_iter=t, success=not stopped, message=msg, objective=final, info=info)

    # -- checkpoints -----------------------------------------------------------------
    def state(self):
        s = self.exp.state()
        s.update(self.objective.state())
        s.update({"norm_sq": self.norm_sq, "tau": self.terms.tau,
                  "new_steps": self.new_steps, "reuse_steps": self.reuse_steps})
        return s

    def _restore(self, state):
        self.exp.restore(state)
        self.objective.restore(state)
        self.norm_sq = float(state["norm_sq"])
        self.terms.tau = float(state["tau"])
        self.new_steps, self.reuse_steps = int(state["new_steps"]), int(state["reuse_steps"])
