"""The ``gp`` solver: GP regression posterior by doubly stochastic gradients (Dai et al. 2014, Sec. 4, App. D).

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


def gp_plan(o, sizes):
    """:meth:`GPSolver.memory_plan` (the sizing :meth:`.state.GPState._check_memory` checks against
    ``max_memory_mb``, and the rest)."""
    from kopt.numerics.memory import matrices

    from .options import operator_bytes

    problem = sizes.problem
    n, d, T, B = sizes.n, sizes.d, int(o.iterations), int(o.batch_size)
    F = int(problem.features.block_size) if problem is not None else 512
    m = int(sizes.n_test)
    kind = o.variance
    if o.evaluation == "auto":
        mode = "track" if (kind == "test_points" or 2 * n <= T * B) else "regenerate"
    else:
        mode = o.evaluation
    C = 1 + (m if kind == "test_points" else 0)
    plan = [matrices(T, F, C if mode == "regenerate" else 1, "float64", "the fits' coefficients, a block per step")]
    if mode == "track":
        plan.append(matrices(1, n, C, "float64", "the fits' scores on every training row (track)"))
        plan.append(matrices(4, m, 1, "float64", "the test rows' tracked mean and its average"))
    if kind == "operator":
        beta = operator_bytes(T, B, F) - 4 * T * B * F
        plan += [(f"the variance operator's beta, {T:,}({T:,} + 1)/2 blocks of {B:,} x {B:,} float64", beta),
                 (f"every step's batch and its features, and the test variance's: {T:,} x {B:,} rows of "
                  f"{d:,} + 2 x {F:,} {sizes.dtype.name}", T * B * (d + 2 * F) * sizes.itemsize)]
        plan.append(matrices(1, min(m, 512), T * B, "float64", "a chunk of test rows' kernel against the batches"))
    if o.compare_exact:
        chunk = min(m, 4096)
        plan += [matrices(1, n, n, "float64", "the closed form's kernel matrix, factored in place"),
                 matrices(2, chunk, n, "float64", "a chunk of test rows' kernel values and their solve"),
                 matrices(1, n, d, "float64", "the training rows in float64")]
    return plan


class GPSolver(IterativeSolver):
    """Posterior mean (KRR with λ = σ²/n) and variance (operator Â or one fit per test point)."""

    name = "gp"
    summary = "GP regression posterior mean and variance by doubly stochastic gradients (Dai et al. 2014, Sec. 4)"
    forms = ("gp",)
    targets = ("real",)
    kernel_mode = "features"
    stopping = "none"
    iteration_unit = "one mini-batch of batch_size rows and one new feature block (of each map)"
    # the steps are many small and medium GEMMs: OpenBLAS's threads cost more than they give there
    # (docs/design/blas-threads.md), so BLAS is held to one thread for the whole run
    blas = "single"
    # T sizes the variance operator's storage and starts the tail average at ⌊T/2⌋: a run continued
    # with a larger cap would not end where a fresh run with that cap ends
    warm_start = False
    divergence_hint = "lower solver.step_size (a stable step keeps step_size·λ_max(K_bb)/batch_size below 2)"
    params = PARAMS
    memory_hint = ("lower solver.iterations or solver.batch_size or the test split, or set solver.evaluation "
                   "(track: O(n m), regenerate: O(T F m))")

    def memory_plan(self, sizes):
        """What :class:`.state.GPState` allocates for T iterations: the fits' coefficients (T x F x columns float64)
        and in track mode their scores on every training row; with ``variance: operator`` the operator's β
        (T(T+1)/2 blocks of B x B float64), every step's batch and its features (T x B x (d + F)), and the test
        variance's per-block features; with ``compare_exact`` the closed-form posterior (the n x n kernel matrix
        and its factor in float64, a chunk of test rows' kernel values and their solve)."""
        return gp_plan(self.options, sizes)

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
