"""DSG, UDSG and CDSG: doubly stochastic functional gradient descent (Dai et al. 2014, Li & Póczos 2016).

Iteration t draws B rows (``problem.rng("batch", t)``), evaluates f_t on them by
regenerating every feature block of the model, and takes one functional gradient step

    f_{t+1} = (1 − η λ) f_t − η ζ_t,   ζ_t = (1/B) Σ_b ℓ'(f_t(x_b), y_b) (1/F) φ_ω(x_b)ᵀ φ_ω(·)

along a block ω of F features: a *new* block with index m + 1 and η = γ_t (DSG, Dai et al. (2014)
Alg. 1), or an *existing* block k — every G+U iterations U are re-use steps with k uniform
(UDSG, Li & Póczos (2016) Alg. 3), or k and η come from the checking rule (CDSG, Alg. 4,
:mod:`kopt_plugins.dsg.checking`).  The (1/F) makes every block an unbiased estimate of the kernel,
so the functional step does not depend on F.

The family runs on the solver skeleton (:mod:`kopt.contract.iterative`): one iteration is one such step,
there is no duality gap (``stopping = "none"``: the run ends at the iteration cap), and a check
is the exact training objective λ/2 N_t + mean ℓ on the skeleton's seeded check rows (N_t the
running estimate of ‖f_t‖²_H).  The policies -- which block, which step -- are :meth:`choose`
and :meth:`prepare`; the run's state is a :class:`kopt_plugins.dsg.state.RunState`.

The step reads the batch only through sums (:mod:`kopt_plugins.dsg.batch`), so the same step runs on a
Dask cluster as data-parallel mini-batches: each partition sums its share of the batch and the client
adds the pieces (:mod:`kopt_plugins.dsg.distributed`, docs/scale.md).
"""
from __future__ import annotations

import numpy as np

from kopt.contract.iterative import Check, IterativeSolver, Step
from kopt.models.predictors import FeatureExpansion
from kopt.numerics.backend import to_numpy

from .batch import BatchRequest
from .checking import checking_steps, feature_variance
from .options import CDSG, COMMON, UDSG, advise_cdsg, check_cdsg, check_udsg, schedule, step_cap
from .state import RunState


class DoublyStochastic(IterativeSolver):
    """The step, checks and model of the family; subclasses choose the block of each step (:meth:`choose`)."""

    forms = ("primal",)
    targets = ("real", "binary", "multiclass", "unlabeled", "two_sample")
    kernel_mode = "features"
    params = COMMON
    sample_weight = True  # every row's loss and gradient times its weight (objective.LossTerms)
    distributed = True  # data-parallel mini-batches on a Dask cluster (.distributed, docs/scale.md)
    stopping = "none"
    iteration_unit = "one mini-batch of batch_size rows and one feature-block step"
    divergence_hint = "lower solver.step_size (or raise solver.step_offset)"
    memory_hint = ("lower solver.iterations or model.features.block_size (the model keeps a block of coefficients "
                   "for every step that adds one)")

    def memory_plan(self, sizes):
        """The model (:class:`.expansion.BlockExpansion`): a block of F x outputs float64 coefficients for every
        step that adds one (:meth:`new_blocks`), in a buffer of the next power of two of them (at least 64) and, with
        ``averaging``, their running sum; the first check's copies of every block (its score tracker's pending
        changes, and them stacked for one prediction) and a prediction's copy of them in the features' dtype; the check
        rows' and test rows' scores.  On a Dask cluster
        the model is on every worker and nothing is checked here."""
        return dsg_plan(self, sizes)

    def new_blocks(self, iterations):
        """The most blocks a run of ``iterations`` steps adds (DSG and CDSG: one a step at most)."""
        return int(iterations)

    def check_spec(self, spec):
        loss = spec.loss
        if spec["execution"]["engine"] == "dask" and loss.has_balance_weights:
            yield ("model", "loss", "name"), (
                f"loss {loss.name!r} weighs every row by its sample's share of the whole training set, which a Dask "
                f"cluster does not compute yet; run {self.name!r} with it on one machine (drop execution / --scheduler)")

    # -- the policy ----------------------------------------------------------------
    def prepare(self, problem, fmap, ctx):
        """Called once when a run's state is built (CDSG estimates σ² and M here)."""

    def choose(self, t, rng, ctx):
        """``(k, eta)``: k = None adds a new block with step eta; else update block k.

        A policy whose :meth:`checked_blocks` is None chooses *before* the batch is evaluated (so the batch
        evaluation -- one round trip on a Dask cluster -- computes just the adjoint the step needs): it may
        read ``t``, ``rng`` (after the rows), ``ctx.expansion`` and ``ctx.gamma``, not the batch's
        ``ctx.grad_sq``.  A policy that checks blocks chooses after, with ``ctx.cross`` and ``ctx.zeta_sq``."""
        return None, ctx.gamma

    def checked_blocks(self):
        """Old blocks whose gradient Φ_kᵀℓ' the policy needs each iteration: None (none), 0 (all) or a count."""
        return None

    # -- the skeleton's contract ---------------------------------------------------------
    def init(self, problem):
        return RunState(self, problem)

    def load(self, problem, saved):
        return RunState(self, problem).restore(saved)

    def save(self, st):
        return st.save()

    def cadence(self, st):
        # checks only at the end by default; holdout metrics at the checks unless holdout_every says otherwise
        return 0, self.options.check_every or 0

    def step(self, st, t):
        """One step.  The batch's sums come from ``st.data`` (:mod:`kopt_plugins.dsg.batch`): this process's
        rows on one machine, the partitions' pieces added on a Dask cluster; the rest is the same either way."""
        p, xp, exp, ctx, B, F = st.problem, st.xp, st.expansion, st.ctx, st.B, st.F
        rng = st.sampler.generator(t)
        rows = st.sampler.rows(t, rng)
        ctx.gamma = self.options.step_size * schedule(self.options, t)
        n_cand = self.checked_blocks()
        cand, fused = None, False
        if n_cand is not None and exp.m:
            if n_cand == 0 or n_cand >= exp.m:
                cand, fused = np.arange(exp.m), True  # every block: one fused prediction + adjoint
            else:  # ``n_cand`` old blocks drawn uniformly (after the rows, from the same generator)
                cand = np.sort(rng.choice(exp.m, size=n_cand, replace=False))
        # a policy that checks no blocks chooses before the batch is evaluated (it reads only t, the
        # generator after the rows, m and γ_t), so the batch evaluation computes exactly the adjoint it needs
        choice = self.choose(t, rng, ctx) if n_cand is None else None
        new_block = exp.m + 1
        if choice is None:
            extra, prefetch = [], [new_block]
        else:
            extra, prefetch = [new_block if choice[0] is None else int(exp.blocks[choice[0]])], []
        sums = st.data.evaluate(BatchRequest(rows, fused, None if cand is None else exp.blocks[cand].tolist(),
                                             extra, prefetch, st.terms.tau, t))
        loss_value = sums.loss / B
        G = sums.G
        if G is not None:
            c = exp.coef[xp.asarray(cand)]
            ctx.cross = to_numpy(exp.scale / B * (c * G).reshape(len(cand), -1).sum(axis=1))  # ⟨f_k, ζ⟩
            ctx.zeta_sq = float((G * G).sum()) / (len(cand) * B * B * F)  # ‖ζ‖², averaged over the blocks
        ctx.candidates = cand
        ctx.grad_sq = sums.grad_sq / B
        k, eta = self.choose(t, rng, ctx) if choice is None else choice
        if k is None:
            block = new_block
            a = st.data.late_adjoint(sums, block)  # Φ_ωᵀ ℓ'  (F[, C])
        else:
            block = int(exp.blocks[k])
            a = G[int(np.searchsorted(cand, k))] if G is not None else st.data.late_adjoint(sums, block)
        zeta_sq = ctx.zeta_sq if G is not None else float((a * a).sum()) / (B * B * F)
        rho = 1.0 - eta * p.lam
        objective = loss_value + 0.5 * p.lam * st.norm_sq
        # ‖f‖² by the reproducing property: ‖ρf − ηζ‖² with ⟨f_t, ζ⟩ = mean ℓ'·f_t(x_b)
        cross = sums.cross / B
        st.norm_sq = rho * rho * st.norm_sq - 2.0 * rho * eta * cross + eta * eta * zeta_sq
        coef = a * (-eta / (B * F))
        exp.shrink(rho)
        if k is None:
            exp.add_block(block, coef, norm=eta * eta * zeta_sq)
            st.new_steps += 1
        else:
            dnorm = None if G is None else -2.0 * rho * eta * ctx.cross[np.searchsorted(cand, k)] + eta * eta * zeta_sq
            exp.update_block(k, coef, dnorm=dnorm)
            st.reuse_steps += 1
        exp.accumulate()
        st.terms.shift_offset(ctx.gamma, sums.offset / B)
        return Step(rows=B, objective=st.objective.update(objective), extra={"n_blocks": exp.m, "step": eta})

    def check(self, st, rows):
        """The exact training objective λ/2 N_t + mean ℓ(f(x_i)) on the check rows (N_t: the ‖f‖² estimate)."""
        loss_sum, count = st.data.check_sums(rows, st.terms.tau)
        train_loss = loss_sum / count
        return Check(objective=train_loss + 0.5 * st.problem.lam * st.norm_sq,
                     extra={"train_loss": train_loss, "objective_estimate": st.objective.value})

    def scorer(self, st, X):
        """Scores of the holdout subset ``X``, kept up to date by the changed blocks only."""
        tracker = st.tracker(X)
        st.holdout_rows = int(X.shape[0])
        return lambda: st.scores(tracker) + st.terms.intercept

    def partition_scorer(self, st, rows):
        """On a Dask cluster: the holdout subset ``rows`` (None: every test row) scored on the workers."""
        score = st.data.holdout_scorer(rows)
        st.holdout_rows = int(sum(st.problem.partitions.test_rows)) if rows is None else int(rows.shape[0])

        def run():
            scores, y = score()
            return scores + st.terms.intercept, y

        return run

    def decision_function(self, st, X):
        exp = st.expansion
        if not exp.averaging or exp.m == 0:
            return exp.predict(st.fmap, X) + st.terms.intercept
        return st.fmap.predict(X, exp.averaged_coefficients(), blocks=exp.blocks[: exp.m].tolist()) + st.terms.intercept

    def finish(self, st):
        exp = st.expansion
        coef = to_numpy(exp.averaged_coefficients()) if exp.averaging else exp.coefficients()
        predictor = FeatureExpansion(
            {"coef": coef, "blocks": exp.blocks[: exp.m].copy()},
            {"scale": 1.0, "seed": st.fmap.seed, "block_size": st.F, "dtype": str(st.fmap.dtype),
             "intercept": st.terms.intercept},
        )
        info = {"n_blocks": exp.m, "new_steps": st.new_steps, "reuse_steps": st.reuse_steps,
                "holdout_rows": st.holdout_rows, "block_size": st.F, "batch_size": st.B,
                "norm_sq_estimate": st.norm_sq, "objective_estimate": st.objective.value}
        if st.terms.has_offset:
            info["offset"] = st.terms.tau
        if st.ctx.variance:
            info["variance"] = st.ctx.variance
        if hasattr(st.data, "summary"):  # on a Dask cluster: partitions, round trips, payload
            info.update(st.data.summary())
        return predictor, info


def dsg_plan(solver, sizes):
    """:meth:`DoublyStochastic.memory_plan`."""
    from kopt.numerics.memory import matrices

    o = solver.options
    problem = sizes.problem
    F = int(problem.features.block_size) if problem is not None else 512
    C = int(problem.n_outputs) if problem is not None and problem.loss.target == "multiclass" else 1
    m = solver.new_blocks(o.iterations)
    capacity = max(64, 1 << max(0, m - 1).bit_length())  # BlockExpansion doubles its buffer from 64 blocks
    unit = F * C * 8
    plan = [(f"the model's buffer of {capacity:,} blocks of {F:,} x {C} float64 coefficients"
             + (", and their running sum (averaging)" if o.averaging else ""), (2 if o.averaging else 1) * capacity * unit)]
    if o.averaging:
        plan.append((f"the averaged coefficients of {m:,} blocks", m * unit))
    else:
        plan.append((f"the first check's two copies of {m:,} blocks' coefficients", 2 * m * unit))
    itemsize = sizes.itemsize
    plan.append((f"a prediction's copy of {m:,} blocks' coefficients in {sizes.dtype.name}", m * F * C * itemsize))
    check = sizes.n if not o.check_rows or o.check_rows >= sizes.n else int(o.check_rows)
    plan.append(matrices(2, check + sizes.n_test, C, "float64", "the check and test rows' scores"))
    return plan


class DSG(DoublyStochastic):
    """Doubly stochastic gradient descent: one new feature block per iteration (Dai et al. 2014)."""

    name = "dsg"
    summary = "doubly stochastic functional gradient, one new feature block per step (Dai et al. 2014)"


class UDSG(DoublyStochastic):
    """DSG that re-uses a uniformly drawn old block in U of every G+U iterations (Li & Póczos 2016, Alg. 3)."""

    name = "udsg"
    summary = "DSG re-using old feature blocks uniformly, G new + U re-use steps per period (Li & Póczos 2016)"
    params = {**COMMON, **UDSG}

    def check_spec(self, spec):
        yield from super().check_spec(spec)
        yield from check_udsg(self.options)

    def new_blocks(self, iterations):
        """The steps of ``iterations`` that add a block: those with (t - 1) mod (G + U) < G, and the first."""
        G, U = self.options.grow, self.options.reuse
        full, rest = divmod(int(iterations), G + U)
        return max(1 if iterations else 0, full * G + min(rest, G))

    def choose(self, t, rng, ctx):
        G, U = self.options.grow, self.options.reuse
        # Li & Póczos (2016) Alg. 3 tests mod(i, G+U) < G with i from 1, which would re-use a block
        # before any exists; its proof's set G = {i : (i−1) mod (G+U) < G} is what we use.
        if (t - 1) % (G + U) < G or ctx.expansion.m == 0:
            return None, ctx.gamma
        return int(rng.integers(ctx.expansion.m)), ctx.gamma


class CDSG(DoublyStochastic):
    """DSG with checking: re-use the block whose eq. 9 step is largest when it beats γ_t (Li & Póczos 2016, Alg. 4)."""

    name = "cdsg"
    summary = "DSG re-using the old block chosen by the checking rule with expected line search (Li & Póczos 2016)"
    params = {**COMMON, **CDSG}

    def check_spec(self, spec):
        advise_cdsg(self.options, spec)
        yield from super().check_spec(spec)
        yield from check_cdsg(self.options)

    def checked_blocks(self):
        return self.options.candidates

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
