"""DSG, UDSG and CDSG: doubly stochastic functional gradient descent (papers/001, papers/000).

Iteration t draws B rows (``problem.rng("batch", t)``), evaluates f_t on them by
regenerating every feature block of the model, and takes one functional gradient step

    f_{t+1} = (1 − η λ) f_t − η ζ_t,   ζ_t = (1/B) Σ_b ℓ'(f_t(x_b), y_b) (1/F) φ_ω(x_b)ᵀ φ_ω(·)

along a block ω of F features: a *new* block with index m + 1 and η = γ_t (DSG, papers/001
Alg. 1), or an *existing* block k — every G+U iterations U are re-use steps with k uniform
(UDSG, papers/000 Alg. 3), or k and η come from the checking rule (CDSG, Alg. 4,
:mod:`kopt_plugins.dsg.checking`).  The (1/F) makes every block an unbiased estimate of the kernel,
so the functional step does not depend on F.
"""
from __future__ import annotations

import numpy as np

from kopt.components import Solver

from .checking import checking_steps, feature_variance
from .options import CDSG, COMMON, UDSG, check_cdsg, check_udsg, schedule, step_cap


class DoublyStochastic(Solver):
    """Common loop of the family; subclasses choose the block of each step (:meth:`choose`)."""

    forms = ("primal",)
    targets = ("real", "binary", "multiclass", "unlabeled", "two_sample")
    kernel_mode = "features"
    params = COMMON
    #: the policy needs Φ_kᵀℓ' of every block each iteration (fused with the prediction)
    block_gradients = False

    # -- the policy ----------------------------------------------------------------
    def prepare(self, problem, fmap, ctx):
        """Called once before the loop (CDSG estimates σ² and M here)."""

    def choose(self, t, rng, ctx):
        """``(k, eta)``: k = None adds a new block with step eta; else update block k."""
        return None, ctx.gamma

    # -- the loop ------------------------------------------------------------------
    def run(self, problem, run):
        from .loop import Loop

        return Loop(self, problem, run).run()


class DSG(DoublyStochastic):
    """Doubly stochastic gradient descent: one new feature block per iteration (papers/001)."""

    name = "dsg"
    summary = "doubly stochastic functional gradient, one new feature block per step (papers/001)"


class UDSG(DoublyStochastic):
    """DSG that re-uses a uniformly drawn old block in U of every G+U iterations (papers/000 Alg. 3)."""

    name = "udsg"
    summary = "DSG re-using old feature blocks uniformly, G new + U re-use steps per period (papers/000)"
    params = {**COMMON, **UDSG}

    def check_spec(self, spec):
        yield from check_udsg(spec["solver"])

    def choose(self, t, rng, ctx):
        G, U = self.options.grow, self.options.reuse
        # papers/000 Alg. 3 tests mod(i, G+U) < G with i from 1, which would re-use a block
        # before any exists; its proof's set G = {i : (i−1) mod (G+U) < G} is what we use.
        if (t - 1) % (G + U) < G or ctx.expansion.m == 0:
            return None, ctx.gamma
        return int(rng.integers(ctx.expansion.m)), ctx.gamma


class CDSG(DoublyStochastic):
    """DSG with checking: re-use the block whose eq. 9 step is largest when it beats γ_t (papers/000 Alg. 4)."""

    name = "cdsg"
    block_gradients = True
    summary = "DSG re-using the old block chosen by the checking rule with expected line search (papers/000)"
    params = {**COMMON, **CDSG}

    def check_spec(self, spec):
        yield from check_cdsg(spec["solver"])

    def prepare(self, problem, fmap, ctx):
        o = self.options
        ctx.variance = o.variance
        if ctx.variance is None:
            ctx.variance = feature_variance(problem, fmap)
        ctx.grad_bound = o.grad_bound

    def choose(self, t, rng, ctx):
        exp = ctx.expansion
        if exp.m == 0:
            return None, ctx.gamma
        # M² of eq. 9: the user's bound, else the batch's mean ℓ'² (an estimate of E ℓ'² ≤ M²)
        m2 = ctx.grad_sq if ctx.grad_bound is None else ctx.grad_bound ** 2
        cand = ctx.candidates
        steps = checking_steps(exp.block_norms()[cand], ctx.cross, ctx.zeta_sq, ctx.gamma, m2 * ctx.variance / ctx.B)
        i = int(np.argmax(steps))
        k, eta = int(cand[i]), float(steps[i])
        if not eta > ctx.gamma:
            return None, ctx.gamma
        cap = step_cap(self.options)
        if cap is not None:
            eta = min(eta, cap * schedule(self.options, t))
        return k, eta
