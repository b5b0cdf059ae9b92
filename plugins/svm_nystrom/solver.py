"""The squared hinge (L2-SVM) on M Nyström centers with a bias, by active-set Newton (:mod:`.newton`).

The minimiser of λ/2 wᵀRw + (1/n) Σ w_i ½ max(0, 1 − y_i (k(x_i, C) w + b))² over w and the unpenalised bias b,
for M seeded training rows C (:func:`kopt.nystrom.choose_centers`, less those the kernel cannot tell from the
others: :func:`kopt.nystrom.center_basis`).  One iteration is one Newton step of one class (±1 one-vs-rest
columns for multiclass ids, one class after the other on one M × M buffer); a class is done when a step leaves
the rows inside its margin as they were, and ends with one direct solve on those rows
(:meth:`.newton.HingeNewton.polish`: a resumed run ends on the bits of the run it continues).  Memory: two M × M float64 arrays (the margin rows' system and R's
factor), L⁻¹ of the features of at most M/8 rows that crossed the margin since the last factor (the steps between
factors solve by Woodbury's identity), and O(n) per class for the scores, whatever n.

It reports the primal, the dual of the Nyström problem at the model's bias and their gap: with b fixed the loss
is ℓ(u + b), whose conjugate is ℓ*(v) − v b, so D = D₀(α) − λ b Σ α_i for α_i = −w_i ℓ'(f_i)/(λn); at the joint
minimiser Σ α_i = 0 (the bias's own optimality), reported as ``bias_gradient``.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.iterative import Check, IterativeSolver, Step, common_options
from kopt.models.predictors import KernelExpansion
from kopt.numerics import rows as _rows
from kopt.numerics.backend import to_numpy
from kopt.numerics.linalg import solve_triangular
from kopt.numerics.objectives import dual, primal
from kopt.numerics.threads import resolve_threads
from kopt.nystrom.centers import centers_used, choose_centers
from kopt.nystrom.newton import CACHE_BYTES, MAX_STEPS, HingeNewton, held_columns_plan
from kopt.nystrom.system import NystromSystem, row_chunks, system_plan


def svm_plan(sizes, threads):
    """:meth:`NystromSVM.memory_plan`."""
    from kopt.numerics.memory import matrices
    from kopt.nystrom.system import SCORE_ENTRIES

    n, M = sizes.n, min(sizes.count, sizes.n)
    held = n * M * sizes.itemsize
    plan = list(system_plan(sizes))
    workers = max(1, min(int(threads), 8))
    if held <= CACHE_BYTES:
        # the passes and the margin rows' updates read the held values as float64 chunks: the system's chunk as the
        # kernel computes it is gone by then (measured: docs/design/memory.md)
        plan = [item for item in plan if "the same chunk as computed" not in item[0]]
        plan.append(matrices(1, n, M, sizes.dtype, "the rows' kernel values, held between passes"))
        plan.append((f"{workers} workers' chunks of held kernel values in a margin pass (float64, and the rows inside "
                     f"the margin)", workers * SCORE_ENTRIES * 16))
    else:
        plan.append((f"{workers} workers' chunks of kernel values in a margin pass (as computed, float64, and the rows "
                     f"inside the margin)", workers * SCORE_ENTRIES * (2 * sizes.itemsize + 16)))
    plan.append(held_columns_plan(M, n))
    return plan + [matrices(sizes.outputs, n, 1, "float64", "every class's scores"),
                   matrices(4, n, 1, "float64", "one class's Newton: scores, the last step's, residuals, margin rows")]


class NystromSVM(IterativeSolver):
    name = "svm_nystrom"
    summary = "the squared hinge (L2-SVM) on M Nystrom centers with a bias, by active-set Newton"
    forms = ("primal", "dual")
    targets = ("binary",)
    kernel_mode = "features"
    feature_kinds = ("nystrom",)
    default_feature_kind = "nystrom"  # a spec naming the solver and no model.features.kind gets nystrom
    one_vs_rest = True
    needs_conjugate = True
    stopping = "gap"
    blas = "all"
    sample_weight = True
    iteration_unit = ("one Newton step of one class: a pass over every row, the rows that crossed the margin in or "
                      "out of the M x M system, and its Cholesky factor")
    params = common_options(iterations=200, tol=1e-6)

    memory_key = "model.features.count"
    memory_hint = "or use solver joker (dual blocks: memory O(n) whatever the features)"

    def memory_plan(self, sizes):
        """The system (:func:`kopt.nystrom.system.system_plan`: the margin rows' T and R's factor U, M x M float64
        each, a chunk of kernel values); the rows' kernel values held between passes where they fit
        :data:`kopt.nystrom.newton.CACHE_BYTES`; every class's scores (n x outputs float64) and one class's Newton
        arrays per row (its scores, the last step's, the margin mask and a pass's residuals); each worker's chunk of a
        margin pass's kernel values."""
        return svm_plan(sizes, resolve_threads(getattr(self.options, "threads", None)))

    def check_spec(self, spec):
        if spec.loss.name != "squared_hinge":
            ok = spec.solvers_accepting()  # the solvers whose own checks accept this spec
            yield ("model", "loss", "name"), (
                f"solver 'svm_nystrom' solves the squared hinge only, not {spec.loss.name!r}"
                + (f"; solvers that accept this spec: {', '.join(ok)}" if ok else ""))

    def init(self, problem):
        centers = choose_centers(problem, problem.features.count)
        Y = problem.label_matrix()
        return {"problem": problem, "centers": centers, "Y": Y, "weights": problem.sample_weight,
                "system": None, "in_T": None, "V": None, "B": np.zeros(Y.shape[1]), "F": None, "sums": {},
                "newton": None, "done": [False] * Y.shape[1], "steps": [0] * Y.shape[1],
                "line_searches": 0, "start": None}

    def _system(self, state):
        problem = state["problem"]
        C = _rows.dense(problem.X, problem.xp.asarray(state["centers"]), problem.xp, problem.dtype, order="F")
        # one target column: T does not read the targets, and a class's b is its own Newton's
        system = NystromSystem(problem.kernel, problem.X, state["Y"][:, :1], C, dtype=problem.dtype,
                               weights=state["weights"], own_centers=True)
        system.whitened()
        return system

    def step(self, state, t):
        problem, xp = state["problem"], state["problem"].xp
        if state["system"] is None:
            state["system"] = self._system(state)
        system = state["system"]
        k = state["Y"].shape[1]
        if state["V"] is None:
            state["V"] = xp.zeros((system.M, k), dtype=np.float64)
            state["F"] = xp.zeros((problem.n, k), dtype=np.float64)
        c = next((c for c, done in enumerate(state["done"]) if not done), None)  # the classes run one after another
        if c is None:
            return Step(rows=0)
        newton = state["newton"]
        if newton is None:
            start = state.pop("start", None) or {}
            v = start.get("v") if start.get("v") is not None else (state["V"][:, c] if state["steps"][c] else None)
            b = start.get("b", state["B"][c])
            newton = state["newton"] = HingeNewton(system, problem.X, state["Y"][:, c], problem.lam,
                                                   state["weights"], v=v, b=b, in_T=state["in_T"])
        newton.step()
        if newton.converged:  # the end: one direct solve on the margin rows (the same bits however the steps went)
            newton.polish()
        state["V"][:, c], state["B"][c], state["F"][:, c] = newton.v, newton.b, newton.f
        state["sums"][c] = newton.sums[:, 0].copy()
        state["steps"][c] += 1
        state["line_searches"] += newton.line_searches
        newton.line_searches = 0
        state["in_T"] = newton.in_T
        if newton.converged or state["steps"][c] >= MAX_STEPS:
            newton.settle()  # the system's T the margin rows' again (the next class starts from it)
            state["done"][c] = True
            state["newton"] = None
        return Step(rows=problem.n, objective=None, extra={"class": int(c), "moved": int(newton.moved)})

    def check(self, state, rows):
        """P and D over every row at the current iterate (from the last pass of each class; a class not started
        is at f = 0, where α = 0 is dual-feasible: D = 0)."""
        if state["V"] is None:
            return Check()
        problem, xp = state["problem"], state["problem"].xp
        n, lam, loss, weights = problem.n, problem.lam, problem.loss, state["weights"]
        system = state["system"]
        P = D = scale = 0.0
        bias_gradient = 0.0
        for c in range(state["Y"].shape[1]):
            y = state["Y"][:, c]
            if c not in state["sums"]:
                f = xp.zeros(n, dtype=np.float64)
                P += primal(loss, y, f, lam, 0.0, weights)
                scale += 2.0 * float(xp.mean(xp.abs(loss.value(f, y))))
                continue
            f, v, b = state["F"][:, c], state["V"][:, c], float(state["B"][c])
            norm_p = float(xp.sum(v * v))
            g = loss.grad(f, y)
            alpha = -(g if weights is None else g * weights) / (lam * n)
            z = solve_triangular(system.U, -state["sums"][c] / (lam * n), lower=False, trans="T")  # U⁻ᵀKᵀα
            norm_d = float(xp.sum(z * z))
            sum_alpha = float(xp.sum(alpha))
            P += primal(loss, y, f, lam, norm_p, weights)
            D += dual(loss, y, alpha, lam, norm_d, weights) - lam * b * sum_alpha
            scale += lam * (norm_p + norm_d) + 2.0 * float(xp.mean(xp.abs(loss.value(f, y)))) + abs(lam * b * sum_alpha)
            bias_gradient = max(bias_gradient, abs(sum_alpha) * lam)
        return Check(objective=P, dual=D, scale=scale, terms=n + int(system.M),
                     extra={"newton_steps": list(state["steps"]), "line_searches": int(state["line_searches"]),
                            "bias_gradient": bias_gradient})

    def decision_function(self, state, X):
        problem, system = state["problem"], state["system"]
        W = system.coef(state["V"]).astype(problem.dtype)
        out = problem.xp.empty((X.shape[0], W.shape[1]), dtype=np.float64)
        k = problem.kernel.bind(system.C)
        for lo, hi in row_chunks(X, system.M, problem.kernel):
            out[lo:hi] = k(_rows.kernel_rows(problem.kernel, X, slice(lo, hi), problem.xp, problem.dtype)) @ W
        return out + problem.xp.asarray(state["B"])

    def save(self, state):
        if state["V"] is None:
            return {}
        return {"V": to_numpy(state["V"]), "B": np.asarray(state["B"], dtype=np.float64),
                "done": np.asarray(state["done"]), "steps": np.asarray(state["steps"])}

    def load(self, problem, saved):
        """A resumed run (``V``, ``B``: the whitened coefficients and biases so far), or ``solver: auto``'s start:
        the search's system on every training row (``system``, ``in_T``: the rows its T sums) and, for one class,
        the search's solution at the chosen λ (``v``, ``b``)."""
        state = self.init(problem)
        xp = problem.xp
        if "system" in saved:
            system = saved["system"]
            if np.array_equal(np.asarray(saved["centers"]), state["centers"]) and system.n == problem.n:
                state["system"], state["in_T"] = system, saved.get("in_T")
                state["start"] = {"v": saved.get("v"), "b": float(saved.get("b", 0.0))}
                state["reused_system"] = True
            else:
                state["reused_system"] = False
        if "V" in saved:
            state["V"] = xp.asarray(saved["V"], dtype=np.float64)
            state["B"] = np.asarray(saved["B"], dtype=np.float64)
            state["done"] = [bool(d) for d in saved["done"]]
            state["steps"] = [int(s) for s in saved["steps"]]
            state["F"] = xp.zeros((problem.n, state["V"].shape[1]), dtype=np.float64)
            if state["system"] is None:
                state["system"] = self._system(state)
            for c in range(len(state["done"])):  # the scores and sums of every class started (one pass each)
                if state["steps"][c]:
                    h = HingeNewton(state["system"], problem.X, state["Y"][:, c], problem.lam, state["weights"],
                                    v=state["V"][:, c], b=state["B"][c], in_T=xp.zeros(problem.n, dtype=bool))
                    h.score()
                    state["F"][:, c], state["sums"][c] = h.f, h.sums[:, 0].copy()
        return state

    def finish(self, state):
        system = state["system"]
        coef = to_numpy(system.coef(state["V"]))
        intercept = np.asarray(state["B"], dtype=float).tolist()
        if coef.shape[1] == 1:
            coef, intercept = coef[:, 0], intercept[0]
        predictor = KernelExpansion({"support": to_numpy(system.C), "coef": coef}, {"intercept": intercept})
        info = {**centers_used(state["problem"].features.count, state["centers"].shape[0], system.M),
                "newton_steps": list(state["steps"]), "line_searches": int(state["line_searches"])}
        if "reused_system" in state:
            info["reused_search_system"] = state["reused_system"]
        return predictor, info
