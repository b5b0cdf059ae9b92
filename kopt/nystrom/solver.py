"""The base of solvers on Nyström centers, and the certificate of the Nyström problem.

A solver on M centers subclasses :class:`NystromSolver` and supplies ``step`` and ``check`` (and, for a memory
plan, ``memory_plan``).  The base holds what every such solver shares:

* ``init`` -- the seeded centers (:func:`kopt.nystrom.choose_centers`), their dense rows, the label matrix less
  its fixed offset (:func:`kopt.nystrom.target_offset`) and the sample weights;
* ``decision_function``, ``save``, ``load`` and ``finish`` on the coefficients ``state["w"]`` (M x outputs) over the
  kept centers ``state["C"]``: the model is a :class:`kopt.models.predictors.KernelExpansion`;
* the declarations a Nyström solver makes: ``kernel_mode = "features"``, ``feature_kinds = ("nystrom",)``,
  ``one_vs_rest``, ``sample_weight`` and ``memory_key``.

:func:`certificate` gives P, D and the rounding scale of one output column from a float64 pass's scores: the dual
point is α_i = −w_i ℓ'(f_i)/(λn), its norm αᵀK R⁻¹Kᵀα = ‖U⁻ᵀ Kᵀα‖² with R = K_CC = UᵀU, so P − D is a valid gap
for any convex loss with a conjugate (docs/plugin-guide.md, "Solvers on Nyström centers").
"""
from __future__ import annotations

import numpy as np

from ..contract.iterative import IterativeSolver
from ..models.predictors import KernelExpansion
from ..numerics import rows as _rows
from ..numerics.backend import get_namespace, to_numpy
from ..numerics.linalg import solve_triangular
from ..numerics.objectives import dual, primal
from ..numerics.threads import blas_threads
from .centers import center_basis, centers_used, choose_centers
from .factors import upper_times
from .system import kept_centers, row_chunks, target_offset


def certificate(loss, lam, y, scores, Ktr, w, U, weights=None):
    """One output column's ``(P, D, scale)`` at the coefficients ``w`` on centers with R = UᵀU.

    ``y`` (n,): the column's targets as the solve fits them; ``scores`` (n,): f = K w from a float64 pass (K the n x M
    kernel values k(X, C), in the problem's dtype, their products in float64); ``Ktr`` (M,): Kᵀr from the same pass,
    r_i = w_i ℓ'(f_i) -- the loss's gradient at the scores, times the row weights (for the square loss ℓ'(f) = f − y,
    so r_i = w_i (f_i − y_i)); ``w`` (M,): the coefficients on the kept centers; ``U``: :func:`center_basis`'s factor
    of their R = K_CC; ``weights``: the row weights (mean 1) or None.

    P = λ/2 wᵀRw + (1/n) Σ w_i ℓ(y_i, f_i) (``wᵀRw = ‖Uw‖²``); D is the dual at α_i = −w_i ℓ'(f_i)/(λn), whose
    norm in the Nyström kernel K R⁻¹ Kᵀ is αᵀK R⁻¹ Kᵀα = ‖U⁻ᵀ Kᵀα‖² = ‖U⁻ᵀ Ktr‖²/(λn)².  ``scale`` is the size of
    the terms P − D cancels, λ(wᵀRw + αᵀK R⁻¹Kᵀα) + 2 mean|ℓ|: the skeleton's rounding bound of the gap
    (:func:`kopt.contract.iterative.rounding_bound`) reads it as :attr:`Check.scale` (docs/reliability.md)."""
    xp = get_namespace(scores)
    n = y.shape[0]
    norm_p = float(xp.sum(upper_times(U, w) ** 2))  # wᵀRw (U's upper triangle alone: its buffer may hold more)
    z = solve_triangular(U, -Ktr / (lam * n), lower=False, trans="T")
    norm_d = float(xp.sum(z * z))  # αᵀK R⁻¹ Kᵀα
    g = loss.grad(scores, y)
    alpha = -(g if weights is None else g * weights) / (lam * n)
    P = primal(loss, y, scores, lam, norm_p, weights)
    D = dual(loss, y, alpha, lam, norm_d, weights)
    return P, D, lam * (norm_p + norm_d) + 2.0 * float(xp.mean(xp.abs(loss.value(scores, y))))


def dense_centers(problem, centers):
    """The centers' rows (positions ``centers`` of the training rows), dense in the problem's dtype, on its
    backend."""
    return _rows.dense(problem.X, problem.xp.asarray(centers), problem.xp, problem.dtype)


class NystromSolver(IterativeSolver):
    """An iterative solver on the problem's M Nyström centers (``model.features.kind: nystrom``)."""

    forms = ("primal", "dual")
    targets = ("real", "binary")
    kernel_mode = "features"
    feature_kinds = ("nystrom",)
    default_feature_kind = "nystrom"  # a spec naming the solver and no model.features.kind gets nystrom
    one_vs_rest = True
    needs_conjugate = True
    sample_weight = True
    memory_key = "model.features.count"
    #: the losses this solver solves (None: any loss the certificate takes, a convex loss with a conjugate)
    losses = None

    def check_spec(self, spec):
        """Refuse a loss outside :attr:`losses` (where it is not None), naming the registered solvers that accept
        the spec (``spec.solvers_accepting()``: their declared capabilities and checks decide)."""
        if self.losses is not None and spec.loss.name not in self.losses:
            yield ("model", "loss", "name"), loss_refusal(self.name, " or ".join(self.losses), spec)

    def init(self, problem, dense_centers=True):
        """The state every Nyström solver starts from: ``centers`` (positions of the seeded centers), ``C`` (their
        dense rows; None with ``dense_centers=False``, where the solver makes them itself), ``Y`` (the label matrix
        less ``intercept``, its fixed weighted mean), ``weights`` and ``w`` (None until a step sets it)."""
        centers = choose_centers(problem, problem.features.count)
        C = _dense(problem, centers) if dense_centers else None
        Y = problem.label_matrix()
        intercept = target_offset(Y, problem.sample_weight)  # fixed: the solve fits the centered targets
        return {"problem": problem, "centers": centers, "C": C, "Y": Y - intercept, "intercept": intercept,
                "w": None, "weights": problem.sample_weight, "system": None}

    def decision_function(self, state, X):
        """k(X, C) w + intercept for rows X (standardized, on the backend), a chunk of rows at a time: float64
        ``(n, outputs)``, from ``state["w"]`` (M x outputs), ``state["C"]`` (the kept centers) and
        ``state["intercept"]``; the kernel values and their product in the problem's dtype."""
        problem = state["problem"]
        out = problem.xp.empty((X.shape[0], state["w"].shape[1]), dtype=np.float64)
        coef = state["w"].astype(problem.dtype)
        k = problem.kernel.bind(state["C"])
        for lo, hi in row_chunks(X, state["C"].shape[0], problem.kernel):
            rows = _rows.kernel_rows(problem.kernel, X, slice(lo, hi), problem.xp, problem.dtype)
            out[lo:hi] = k(rows) @ coef
        return out + state["intercept"]

    def save(self, state):
        """``{"w": ...}``: the coefficients alone (nothing before a step set them); :meth:`load` rebuilds the rest."""
        return {} if state["w"] is None else {"w": to_numpy(state["w"])}

    def load(self, problem, saved):
        """The state of a checkpoint's ``w``; a ``saved["system"]`` (``solver: auto``'s plan: the system its search
        built on every training row) is reused where it is this problem's."""
        planned = "system" in saved
        state = self.init(problem, dense_centers=not planned)
        if planned:
            state["system"] = _planned_system(problem, state, saved)
            state["reused_system"] = state["system"] is not None
            if state["system"] is None:
                state["C"] = _dense(problem, state["centers"])
            else:  # the system keeps its own dense centers (a second copy set a peak: docs/benchmarks.md,
                # "Measurements behind the code's choices")
                state["C"] = state["system"].C
        if "w" in saved:
            state["w"] = problem.xp.asarray(saved["w"], dtype=np.float64)
            C = _dense(problem, state["centers"]) if state.get("reused_system") else state["C"]
            with blas_threads(1):  # as NystromSystem factors it: the same centers and bits of U, so the same certificate
                kept, state["U"] = center_basis(problem.kernel, C)
            state["C"] = kept_centers(C, kept)
        return state

    def finish(self, state):
        """A :class:`kopt.models.predictors.KernelExpansion` over the kept centers ``state["C"]`` with coefficients
        ``state["w"]`` and the fixed ``state["intercept"]``; info ``centers_asked``, ``n_centers`` and ``centers_dropped``
        (the centers :func:`center_basis` did not keep), and ``centers_note`` with a warning when the model uses
        fewer centers than ``model.features.count`` asks (:func:`kopt.nystrom.centers.centers_used`)."""
        coef = to_numpy(state["w"])
        intercept = to_numpy(state["intercept"]).astype(float).tolist()
        if coef.shape[1] == 1:
            coef, intercept = coef[:, 0], intercept[0]
        predictor = KernelExpansion({"support": to_numpy(state["C"]), "coef": coef}, {"intercept": intercept})
        info = centers_used(state["problem"].features.count, state["centers"].shape[0], state["C"].shape[0])
        if "reused_system" in state:
            info["reused_search_system"] = state["reused_system"]
        return predictor, info


_dense = dense_centers


def _planned_system(problem, state, saved):
    """The planner's :class:`kopt.nystrom.NystromSystem`, if it is this problem's: the same centers, kernel, dtype
    and rows (else None: the solve builds its own, as it would without a plan)."""
    system = saved["system"]
    same = (np.array_equal(np.asarray(saved["centers"]), state["centers"]) and system.n == problem.n
            and np.array_equal(to_numpy(saved["intercept"]), to_numpy(state["intercept"]))
            and system.dtype == np.dtype(problem.dtype) and type(system.kernel) is type(problem.kernel)
            and system.kernel.options.as_dict() == problem.kernel.options.as_dict()
            and system.Bn.shape[1] == state["Y"].shape[1])
    return system if same else None


def loss_refusal(solver, losses, spec):
    """The sentence refusing ``spec``'s loss for ``solver``, which solves ``losses`` (words) only: the registered
    solvers that accept the spec as written are named (``spec.solvers_accepting()``), none where none does."""
    ok = spec.solvers_accepting()
    text = f"solver {solver!r} solves the {losses} loss only, not {spec.loss.name!r}"
    return text + (f"; solvers that accept this spec: {', '.join(ok)}" if ok else "")
