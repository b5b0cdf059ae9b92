"""Nyström kernel ridge regression by preconditioned conjugate gradients: the square loss on M centers at any n.

The same problem as ``krr_nystrom`` (:mod:`kopt.nystrom.system`): with R = K_CC = UᵀU and v = U w,

    (T + λ I) v = b,   T = U⁻ᵀ (A/n) U⁻¹,   b = U⁻ᵀ B/n,   A = Σ_i w_i k_i k_iᵀ,   B = Σ_i w_i k_i y_iᵀ.

``krr_nystrom`` forms A (n M² flops, the cost that grows past any budget at 10⁶ rows and thousands of centers);
this solver never does.  Each iteration is one pass over the rows (:class:`.passes.RowPass`): the kernel block
k(X_chunk, C) is made on the fly, multiplies the search direction and then its own transpose, and is dropped:
n M (d + 2C) flops and n M kernel values a pass, memory O(M²) plus one block per thread plus O(n C) scores.

The preconditioner is the centers' own estimate of T.  The centers are a uniform sample of the rows, so
A/n ≈ w̄ K_CC K_CC / M, and T ≈ (w̄/M) U Uᵀ: its Cholesky factor L L ᵀ = (w̄/M) U Uᵀ + λ I (M³/3 flops once)
makes CG's iteration count nearly independent of λ and n (the preconditioner of Rudi, Carratino & Rosasco 2017,
Zhang & Lai's anchor "Falkon", in kopt's whitened coordinates).  Every output column (one-hot classes) runs its
own CG on the same passes.

The certificate is ``krr_nystrom``'s (:func:`kopt.nystrom.certificate`): P and D of the
Nyström problem from the scores f = K w and Kᵀr, r_i = w_i (f_i − y_i).  Both are carried by the iterations
(f += α K p, Kᵀ r = n Uᵀ (T v − b)): the duality gap is checked at every iteration at the cost of O(n C), and
it is the stopping rule (``tol``).  A λ path warm-starts each λ from the last (``lambda_warm_start``).  A warm start
is checked before the first step, at no pass: one already solved to ``tol`` (``solver: auto``'s search certifies its
λ on the same rows) ends after 0 iterations, with no preconditioner factored.

On a Dask cluster (``execution.engine: dask``, ``--scheduler``) the same CG runs on the client over the partitions
(:mod:`.distributed`): the same centers, gathered once; one map-reduce round per iteration (each partition's
Kᵀ K p and its rows' loss sums, the scores kept on its worker); the same model to the solve's tolerance.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.iterative import Check, Step, common_options
from kopt.numerics.backend import to_numpy
from kopt.nystrom import NystromCG, NystromSolver, dense_centers

#: what :meth:`kopt.nystrom.NystromCG.confirm` keeps in CG's state (the best confirmed dual, where the last
#: confirmation was and its residual, the replacements so far): in the checkpoint beside CG's own vectors
CONFIRM_STATE = ("best_dual", "refreshed_at", "refreshed_residual", "gap_triggered", "replacements")


class NystromPCG(NystromSolver):
    name = "krr_pcg"
    summary = ("kernel ridge regression on M Nystrom centers by preconditioned conjugate gradients: O(M^2) memory, "
               "one pass over the rows per iteration (every class at once)")
    stopping = "gap"
    blas = "all"  # the M x M factors are SciPy's BLAS; each pass holds BLAS to one thread and runs kopt's workers
    warm_start = True  # the checkpoint holds CG's whole state: a resumed run continues the same iterations
    lambda_warm_start = True
    iteration_unit = "one conjugate-gradient step: one pass of kernel blocks over the rows"
    divergence_hint = "raise lambda"
    params = common_options(iterations=100, tol=1e-4)
    losses = ("square",)
    distributed = True  # one round over the partitions per iteration on a Dask cluster (.distributed, docs/scale.md)
    distributed_held_out = True  # data.held_out's rows weigh 0 on the workers too (kopt.distributed.cg.PartitionCG)

    #: CG's state, all of it in the checkpoint
    STATE = ("v", "Tv", "scores", "r", "p", "rz", "t")

    memory_hint = "or lower features.count (one M x M float64 matrix, M the center count)"

    def memory_plan(self, sizes):
        """U and the preconditioner's factor (one M x M float64 buffer: :mod:`kopt.nystrom.factors`) and the blocks of
        the product that factors it; a block of kernel values per worker thread (its float32 values and the certificate
        pass's float64 copy); the dense centers; CG's carried n x outputs float64 arrays (the targets, the scores, a
        pass's products, the certificate's refreshed copy)."""
        from kopt.numerics.memory import matrices
        from kopt.numerics.threads import resolve_threads
        from kopt.nystrom.factors import product_block
        from kopt.nystrom.passes import CHUNK_ENTRIES

        M = min(sizes.count, sizes.n)
        threads = resolve_threads(getattr(self.options, "threads", None))
        rows = max(16, CHUNK_ENTRIES // max(1, M))
        return [matrices(1, M, M, "float64", "U and the preconditioner's factor, one buffer"),
                matrices(3 * threads, min(product_block(M), M), M, "float64", "the preconditioner's product, a block of rows per "
                                                                    "thread"),
                matrices(threads, rows, M, "float64", "a block of kernel values per thread (float64 copy)"),
                matrices(threads, rows, M, sizes.dtype, "a block of kernel values per thread"),
                matrices(2, M, sizes.d + 2, sizes.dtype, "the dense centers, and as the kernel reads them"),
                matrices(5, sizes.n, sizes.outputs, "float64", "the targets, the scores, a pass's products, the "
                                                               "certificate's copy, the weights")]

    def cadence(self, state):
        return 1, 0  # the gap every iteration (O(n C) from what CG carries); holdout metrics at the end

    def init(self, problem, start=None, factors=None, model=None, refreshed=None):
        """CG at v = 0, or from ``start`` (v of a run at another λ, or of the planner's solve on most rows), or from
        ``model`` ``(C, w)``: another model of the same kernel on the same columns (``solver: auto``'s search),
        projected on these centers (:meth:`kopt.nystrom.NystromCG.projected`); ``factors``: a :class:`.cg.NystromCG`
        whose U is reused where it was made on this problem's centers, kernel and dtype (``solver: auto``'s search);
        ``refreshed``: that CG's state at ``start`` as its last confirmation refreshed it, taken with no pass where
        this problem's rows, targets and weights are its own (:meth:`kopt.nystrom.NystromCG.refreshed_here`): its
        arrays are taken over, not copied, and the dict is emptied (``take``: the n x k scores held once)."""
        if problem.partitions is not None:  # on a Dask cluster
            from . import distributed

            return distributed.init(problem, start, model)
        state = super().init(problem, dense_centers=False)
        state["reused_factors"] = factors is not None and _same_centers(problem, state["centers"], factors)
        if state["reused_factors"]:
            cg = factors.reweighted(problem.X, state["Y"], state["weights"], threads=self.n_threads)
        else:
            cg = NystromCG(problem.kernel, problem.X, state["Y"], dense_centers(problem, state["centers"]),
                           dtype=problem.dtype, weights=state["weights"], threads=self.n_threads)
        if model is not None:
            start = cg.projected(*model)
        # a warm start's direction, and the preconditioner's factor, wait for the first step: the start may already be
        # solved (the search's λ, certified there), which the check before any step finds with no pass
        if refreshed is not None and cg.refreshed_here(refreshed):  # the search's own rows: its products stand
            begun = cg.start(problem.lam, refreshed=refreshed, direction=False, take=True)
        else:
            begun = cg.start(problem.lam, start, direction=False)
        state.update(cg=cg, C=cg.C, U=cg.U, **begun)
        state["w"] = cg.coef(state["v"])
        return state

    def check_at_start(self, state):
        """A warm start is checked before the first step: its state is refreshed (float64 products), so its
        certificate is a confirmed one and costs no pass (:meth:`kopt.nystrom.NystromCG.confirm`).

        Parameters
        ----------
        state : dict
            The state :meth:`init` made.

        Returns
        -------
        bool
            Whether it is a warm start's refreshed state (not on a Dask cluster, whose start makes its direction).
        """
        return bool(state.get("precise"))

    def step(self, state, t):
        cg = state["cg"]
        cg.step(state)
        state["t"] = t
        state["w"] = cg.coef(state["v"])
        return Step(rows=state["problem"].n, extra={"residual": float(cg.xp.max(cg.relative_residual(state)))})

    def check(self, state, rows):
        """The certificate :meth:`.cg.NystromCG.confirm` gives: the carried one (float32 products, no pass) says when to
        confirm, and only a confirmed one -- one pass with float64 products, which CG continues from (residual
        replacement) -- can stop the solve.  At the iteration cap the confirmation refreshes a copy and the state is not
        changed, so a run continued with a larger cap ends where a fresh one does.  D is the best confirmed dual value
        (``best_dual``, in the checkpoint), None before the first; the carried gap is the trace field
        ``carried_rel_gap``."""
        problem, cg = state["problem"], state["cg"]
        t = state.get("t", 0)
        P, D, scale, carried, _ = cg.confirm(state, t, self.options.tol, problem.loss, state["Y"],
                                             final=t >= self.options.iterations)
        return Check(objective=P, dual=D, scale=scale, terms=problem.n + int(cg.M),
                     extra={"passes": int(cg.passes), "carried_rel_gap": float(carried)})

    def save(self, state):
        best = {k: np.float64(state[k]) for k in CONFIRM_STATE if k in state}
        if state["problem"].partitions is not None:  # the scores gathered from the workers (one round)
            return {**{k: to_numpy(state[k]) for k in self.STATE if k != "scores"},
                    "scores": state["cg"].scores(state), **best}
        # a warm start judged before its first step has no direction yet: saved without it, loaded as a warm start
        return {**{k: to_numpy(state[k]) for k in self.STATE if k in state}, **best}

    def load(self, problem, saved):
        if set(self.STATE) <= set(saved):  # a checkpoint: CG continues exactly where it stopped
            state = self.init(problem)
            on_workers = problem.partitions is not None
            for k in self.STATE:
                if not (on_workers and k == "scores"):
                    state[k] = problem.xp.asarray(saved[k])
            if on_workers:  # the scores go back to the workers
                state["cg"].restore(state, saved["scores"])
            for k in CONFIRM_STATE:  # none before the first check (or in older checkpoints): confirm sets them
                if saved.get(k) is not None:
                    state[k] = float(saved[k])
            state["w"] = state["cg"].coef(state["v"])
            return state
        # a warm start (another λ, or solver: auto's search): CG restarts from v, on the search's factors where they
        # are this problem's (the same centers, kernel and dtype), or from the search's model projected on its centers
        return self.init(problem, start=saved.get("v"), factors=saved.get("factors"), model=saved.get("model"),
                         refreshed=saved.get("refreshed"))

    def warm_state(self, saved, lam_from, lam_to):
        return {"v": saved["v"]}

    def partition_scorer(self, state, rows):
        """On a Dask cluster: the holdout rows ``rows`` of the test partitions (None: all) scored on the workers."""
        score = state["cg"].scorer(rows, state["intercept"])
        return lambda: score(state["w"])

    def finish(self, state):
        predictor, info = super().finish(state)
        info["passes"] = int(state["cg"].passes)
        info["replacements"] = int(state.get("replacements", 0))  # confirmations CG continued from (check)
        info["reused_search_factors"] = bool(state.get("reused_factors"))
        if state["problem"].partitions is not None:
            info.update(state["cg"].summary())
        return predictor, info


def _same_centers(problem, centers, cg):
    """Whether :class:`.cg.NystromCG` ``cg`` was made on the rows ``centers`` of this problem's rows, with its kernel
    and dtype."""
    kernel = problem.kernel
    return (cg.n == problem.n and cg.dtype == np.dtype(problem.dtype) and type(cg.kernel) is type(kernel)
            and cg.kernel.options.as_dict() == kernel.options.as_dict()
            and np.array_equal(getattr(cg, "centers", None), centers))
