"""Every smooth loss on M Nyström centers by Newton's method, each step's system solved by preconditioned CG.

The model is f(x) = k(x, C) w + b₀ on the spec's M seeded centers, b₀ the loss's best constant (fixed), and the
objective λ/2 wᵀRw + (1/n) Σ w_i ℓ(y_i, f(x_i)) for any smooth loss with a conjugate and a bounded curvature (the
logistic loss, the squared hinge, Huber, the square loss, and a third party's that declares ``curvature`` and
``smoothness``).  One iteration is one Newton step (:mod:`kopt.nystrom.smooth`): CG on the Newton system -- the
square loss's system on rows weighed by the loss's curvature -- each CG step one pass of kernel blocks over the rows,
the preconditioner the curvature-weighted estimate of that system from the drawn centers and, where the rows are
many, more seeded rows (``kopt.nystrom.estimate_positions``); a step length by backtracking, no pass; one float64 pass at the new point, whose gradient, curvature and
certificate serve the next step.  The relative duality gap of that pass is the stopping rule (``tol``).  Memory is
O(M²) (U and the preconditioner's factor in one M × M buffer, the preconditioner's estimate in a second where it is
made from kernel values) plus one block of kernel values per thread plus O(n C) scores.

One-vs-rest for a binary loss on class ids: every class its own Newton (own CG step sizes, own line search) on the
same passes, the preconditioner's curvature the classes' mean.

A checkpoint is the coefficients (whitened) and the forcing terms: a resumed run makes the same float64
pass at the same point and continues with the same bits.  A λ path warm-starts each λ from the last
(``lambda_warm_start``).
"""
from __future__ import annotations

import numpy as np

from kopt.contract.iterative import Check, Step, common_options
from kopt.numerics.backend import to_numpy
from kopt.nystrom import NystromCG, NystromSolver, dense_centers
from kopt.nystrom.smooth import NewtonRows, SmoothNewton, best_offset, estimate_positions, newton_loss


class NystromNewton(NystromSolver):
    name = "newton_pcg"
    summary = ("any smooth loss (logistic, squared hinge, Huber) on M Nystrom centers by Newton steps, each solved by "
               "preconditioned conjugate gradients: O(M^2) memory, one pass over the rows per CG step")
    stopping = "gap"
    blas = "all"  # the preconditioner's M x M work runs on kopt's workers; each pass holds BLAS to one thread
    warm_start = True
    lambda_warm_start = True
    needs_smooth_loss = True
    distributed = True  # one round over the partitions per pass on a Dask cluster (.distributed, docs/scale.md)
    iteration_unit = ("one Newton step: conjugate gradients on the curvature-weighted system (one pass of kernel blocks "
                      "a step), a line search, one float64 pass")
    divergence_hint = "raise lambda"
    params = {
        **common_options(iterations=50, tol=1e-4),
        "cg_steps": {"type": "integer", "minimum": 1, "default": 60,
                     "description": "conjugate-gradient steps (passes over the rows) per Newton step, at most"},
    }
    memory_hint = "or lower features.count (one M x M float64 matrix, M the center count)"

    def check_spec(self, spec):
        loss = spec.loss
        if not newton_loss(loss):
            why = ("it has no conjugate" if not loss.has_conjugate else
                   f"its target is {loss.target}" if loss.target not in ("real", "binary") else
                   "its curvature is unbounded" if loss.smoothness() is None else "it has an offset")
            ok = spec.solvers_accepting()  # the solvers whose own checks accept this spec
            yield ("model", "loss", "name"), (
                f"solver 'newton_pcg' solves smooth losses with a conjugate and a bounded curvature on real or binary "
                f"targets, and loss {loss.name!r} is not one ({why})"
                + (f"; solvers that accept this spec: {', '.join(ok)}" if ok else ""))

    def memory_plan(self, sizes):
        """U and the preconditioner's factor (one M x M float64 buffer) and the blocks of the product that factors it;
        the preconditioner's curvature-weighted estimate (a second M x M float64 matrix, and a block of its rows'
        kernel values per thread); a block of kernel values per worker thread (its float32 values and the float64
        pass's copy); the dense centers; the n x outputs float64 arrays (the targets, the scores with the offset, the
        curvature weights, CG's carried direction scores, a pass's products, the line search's trial scores and loss
        values, the weights)."""
        from kopt.numerics.memory import matrices
        from kopt.numerics.threads import resolve_threads
        from kopt.nystrom.factors import product_block
        from kopt.nystrom.passes import CHUNK_ENTRIES

        M = min(sizes.count, sizes.n)
        threads = resolve_threads(getattr(self.options, "threads", None))
        rows = max(16, CHUNK_ENTRIES // max(1, M))
        return [matrices(1, M, M, "float64", "U and the preconditioner's factor, one buffer"),
                matrices(1, M, M, "float64", "the preconditioner's curvature-weighted estimate"),
                matrices(3 * threads, min(product_block(M), M), M, "float64", "the preconditioner's product and estimate, a block "
                                                                    "of rows per thread"),
                matrices(threads, rows, M, "float64", "a block of kernel values per thread (float64 copy)"),
                matrices(threads, rows, M, sizes.dtype, "a block of kernel values per thread"),
                matrices(2, M, sizes.d + 2, sizes.dtype, "the dense centers, and as the kernel reads them"),
                matrices(9, sizes.n, sizes.outputs, "float64", "the targets, scores, curvature weights, direction "
                                                               "scores, a pass's products, the line search's trial, "
                                                               "the weights")]

    def cadence(self, state):
        return 1, 0  # the certificate comes with every step's float64 pass; holdout metrics at the end

    # -- the skeleton's contract ----------------------------------------------------------------------------
    def init(self, problem, start=None, eta=None, model=None, preconditioner=None):
        """Newton at v = 0, or from ``start`` (whitened coefficients of a run at another λ, or a checkpoint's, with
        ``eta`` its forcing terms), or from ``model`` ``(C, w)``: another model of the same kernel on the same columns
        (``solver: auto``'s search on a sample), projected on these centers (:meth:`kopt.nystrom.NystromCG.projected`);
        one float64 pass."""
        if problem.partitions is not None:  # on a Dask cluster: the same Newton, each pass one round
            from . import distributed

            rows, centers = distributed.rows_of(problem)
            cg, offset = rows.cg, rows.offset
            state = {"problem": problem, "centers": centers, "weights": None, "system": None, "w": None}
            outputs = problem.n_classes if problem.preprocessor.target == "multiclass" else 1
        else:
            state = super().init(problem, dense_centers=False)
            Y = problem.label_matrix()  # as the loss reads them: ±1 (one-vs-rest columns) or real
            outputs, weights = Y.shape[1], state["weights"]
            cg = NystromCG(problem.kernel, problem.X, None, dense_centers(problem, state["centers"]),
                           dtype=problem.dtype, weights=weights, threads=self.n_threads)
            offset = best_offset(problem.loss, Y, weights)
            positions, more = estimate_positions(problem.rng("newton_estimate"), problem.n, problem.d,
                                                 state["centers"], cg.M, problem.features.centers == "uniform")
            rows = NewtonRows(cg, problem.loss, Y, offset, weights, estimate=positions)
            rows.estimate_rows = dense_centers(problem, positions) if more else None
            state["Y"] = Y
        newton = SmoothNewton(rows, problem.lam, tol=self.options.tol, cg_steps=self.options.cg_steps,
                              estimate_rows=rows.estimate_rows)
        xp = problem.xp
        if model is not None:
            start = cg.projected(*model)
        v = xp.zeros((cg.M, outputs), dtype=np.float64) if start is None else xp.asarray(start, dtype=np.float64)
        if v.shape != (cg.M, outputs):
            v = xp.zeros((cg.M, outputs), dtype=np.float64)  # another basis's start: from zero
        state.update(intercept=xp.asarray(offset), cg=cg, rows=rows, newton=newton, C=cg.C, U=cg.U)
        state["newton_state"] = newton.start(v, eta, preconditioner)
        state["w"] = state["newton_state"]["W"]
        return state

    def step(self, state, t):
        ns = state["newton"].step(state["newton_state"])
        state["w"] = ns["W"]
        return Step(rows=state["problem"].n, objective=float(np.sum(ns["P"])),
                    extra={"cg_steps": int(ns["cg_steps"]), "step_length": float(np.min(ns["steps"]))})

    def check(self, state, rows):
        """The certificate of the last float64 pass (no pass of its own): P and D summed over the outputs."""
        ns = state["newton_state"]
        return Check(objective=float(np.sum(ns["P"])), dual=float(np.sum(ns["D"])), scale=float(np.sum(ns["scale"])),
                     terms=state["problem"].n + int(state["cg"].M),
                     extra={"passes": int(state["rows"].passes), "max_rel_gap": float(np.max(ns["rel"]))})

    def save(self, state):
        ns = state["newton_state"]
        saved = {"v": to_numpy(ns["v"]), "eta": np.asarray(ns["eta"], dtype=np.float64)}
        kept = ns.get("preconditioner")
        if kept is not None:  # the kept preconditioner's weights: the resumed run makes the same factor from them
            saved.update(preconditioner_weights=to_numpy(kept["weights"]), preconditioner_steps=int(kept["steps"]))
        return saved

    def load(self, problem, saved):
        """A checkpoint (``v``, ``eta`` and the kept preconditioner's weights: the run continues with the same bits),
        a warm start at another λ (``v`` alone), or ``solver: auto``'s start (``model``: the search's model on a
        sample, projected)."""
        kept = None
        if saved.get("preconditioner_weights") is not None:
            kept = {"weights": saved["preconditioner_weights"], "steps": saved["preconditioner_steps"]}
        return self.init(problem, start=saved.get("v"), eta=saved.get("eta"), model=saved.get("model"),
                         preconditioner=kept)

    def warm_state(self, saved, lam_from, lam_to):
        return {"v": saved["v"]}

    def partition_scorer(self, state, rows):
        """On a Dask cluster: the holdout rows ``rows`` of the test partitions (None: all) scored on the workers."""
        score = state["rows"].scorer(rows, to_numpy(state["intercept"]), state["problem"].dtype)
        return lambda: score(state["w"])

    def finish(self, state):
        predictor, info = super().finish(state)
        info["passes"] = int(state["rows"].passes)
        info["offset"] = to_numpy(state["intercept"]).astype(float).tolist()
        if state["problem"].partitions is not None:
            info.update(state["rows"].summary())
        return predictor, info
