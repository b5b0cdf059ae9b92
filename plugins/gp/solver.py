"""The ``gp`` solver: GP regression posterior by doubly stochastic gradients (papers/001 Sec. 4, App. D).

Iteration t draws B rows uniformly (``problem.rng("gp_batch", t)``) and block t−1 of two
independent feature maps: ω' (seed ``model.features.seed``) for the mean, the test-point
fits and the second argument of Â; ω (a seed derived from it) for the first argument of Â.
The mean and the test-point fits take one multi-output DSG step (:mod:`kopt_plugins.gp.fits`); the
operator Â gets its new column (:mod:`kopt_plugins.gp.operator`).  λ = σ²/n throughout.

The solver runs on the skeleton (:mod:`kopt.contract.iterative`) with no stopping rule (``stopping =
"none"``): it runs its ``iterations``.  A check is the test evaluation -- interval coverage
and, with ``compare_exact``, the relative errors against the closed-form posterior -- next to
the holdout metrics of the mean; by default both come once, at the end (``holdout_every: k``
gives them every k iterations).  Non-finite residuals end the run as ``diverged``.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.iterative import Check, Diverged, IterativeSolver, Step

from .options import PARAMS, advise, check, gamma
from .state import GPState


class GPSolver(IterativeSolver):
    """Posterior mean (KRR with λ = σ²/n) and variance (operator Â or one fit per test point)."""

    name = "gp"
    summary = "GP regression posterior mean and variance by doubly stochastic gradients (papers/001 Sec. 4)"
    forms = ("gp",)
    targets = ("real",)
    kernel_mode = "features"
    stopping = "none"
    iteration_unit = "one mini-batch of batch_size rows and one new feature block (of each map)"
    # the steps are many small and medium GEMMs: OpenBLAS's threads cost more than they give there
    # (docs/benchmarks.md, "Measurements behind the code's choices"), so BLAS is held to one thread for the whole run
    blas = "single"
    # T sizes the variance operator's storage and starts the tail average at ⌊T/2⌋: a run continued
    # with a larger cap would not end where a fresh run with that cap ends
    warm_start = False
    divergence_hint = "lower solver.step_size (a stable step keeps step_size·λ_max(K_bb)/batch_size below 2)"
    params = PARAMS

    def check_spec(self, spec):
        advise(self.options, spec)
        yield from check(self.options, spec)

    # -- the skeleton's contract ---------------------------------------------------------------
    def init(self, problem):
        return GPState(self.options, problem, self.n_threads)

    def load(self, problem, saved):
        st = self.init(problem)
        st.restore(saved)
        return st

    def save(self, st):
        return st.save()

    def cadence(self, st):
        # no stopping rule: a check is the test evaluation, by default once, at the end
        return 0, st.T

    def step(self, st, t):
        p, xp = st.problem, st.xp
        rows = xp.asarray(p.rng("gp_batch", t).integers(0, st.n, size=st.B))
        Xb = p.X[rows]
        Pb = st.fp.block(Xb, t - 1)
        g = gamma(self.options, t)
        R = st.fits.step(t, Xb, rows, g, Pb)
        if st.op is not None:
            st.op.step(t, Xb, g, Pb)
        batch_mse = float((R[:, 0] ** 2).mean())
        if not np.isfinite(batch_mse) or not np.isfinite(float(xp.abs(R).max())):
            raise Diverged(f"non-finite residuals (step γ_t = {g:g})")
        return Step(rows=st.B, extra={"batch_mse": batch_mse})

    def check(self, st, rows):
        """The test evaluation (coverage, errors vs the closed form); the GP has no training objective here."""
        return Check(metrics=st.evaluate())

    def decision_function(self, st, X):
        return st.mean_at(X)

    def scorer(self, st, X):
        if X is st.X_test:  # the whole test split: its mean is tracked (track mode) or evaluated once per check
            return st.test_mean
        return lambda: st.mean_at(X)

    def finish(self, st):
        return st.predictor(), st.info()
