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

from typing import Iterator

import numpy as np
from numpy.typing import ArrayLike

from ..contract.components import Loss, Predictor
from ..contract.iterative import IterativeSolver
from ..contract.problem import Problem
from ..models.predictors import KernelExpansion
from ..numerics import rows as _rows
from ..numerics.backend import get_namespace, to_numpy
from ..numerics.linalg import solve_triangular
from ..numerics.objectives import dual, primal
from ..numerics.threads import blas_threads
from .centers import center_basis, centers_used, choose_centers
from .factors import upper_times
from .system import kept_centers, row_chunks, target_offset


def certificate(loss: Loss, lam: float, y: np.ndarray, scores: np.ndarray, Ktr: np.ndarray, w: np.ndarray,
                U: np.ndarray, weights: np.ndarray | None = None) -> tuple[float, float, float]:
    """One output column's ``(P, D, scale)`` at the coefficients ``w`` on centers with R = UᵀU.

    P = λ/2 wᵀRw + (1/n) Σ w_i ℓ(y_i, f_i) (wᵀRw = ‖Uw‖²); D is the dual at α_i = −w_i ℓ'(f_i)/(λn), whose norm in
    the Nyström kernel K R⁻¹ Kᵀ is ‖U⁻ᵀ Kᵀα‖².  P − D is then a valid duality gap for any convex loss with a
    conjugate.  ``scale`` is the size of the terms P − D cancels, λ(wᵀRw + αᵀK R⁻¹Kᵀα) + 2 mean|ℓ|: the skeleton's
    bound of the gap's rounding reads it as :attr:`Check.scale <kopt.contract.iterative.Check>`.

    Parameters
    ----------
    loss : Loss
        The loss, with a conjugate.
    lam : float
        λ.
    y : array of shape (n,)
        The column's targets as the solve fits them.
    scores : array of shape (n,)
        f = K w from a pass with float64 products.
    Ktr : array of shape (M,)
        Kᵀr from the same pass, r_i = w_i ℓ'(f_i) (for the square loss, w_i (f_i − y_i)).
    w : array of shape (M,)
        The coefficients on the kept centers.
    U : ndarray of shape (M, M)
        :func:`center_basis`'s factor of their R = K_CC.
    weights : array of shape (n,), optional
        The row weights (mean 1).

    Returns
    -------
    P, D, scale : float
        The primal and dual objectives, and the rounding scale of P − D.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> Y = np.sin(X[:, :1])
    >>> from kopt.nystrom import center_basis, certificate, kept_centers, residual_pass
    >>> kept, U = center_basis(kernel, X[:20])
    >>> C = kept_centers(X[:20], kept)
    >>> w = np.zeros((len(kept), 1))
    >>> scores, Ktr = residual_pass(kernel, C, np.float64, w, X, Y)
    >>> square = registry().get("loss", "square")()
    >>> P, D, scale = certificate(square, 1e-3, Y[:, 0], scores[:, 0], Ktr[:, 0], w[:, 0], U)
    >>> bool(P >= D)
    True
    """
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


def dense_centers(problem: Problem, centers: np.ndarray) -> np.ndarray:
    """The centers' rows, dense in the problem's dtype, on its backend.

    Parameters
    ----------
    problem : Problem
        The assembled problem.
    centers : array of int
        Positions of the centers among the training rows (:func:`choose_centers`).

    Returns
    -------
    array of shape (len(centers), d)
        The rows.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt
    >>> from kopt.running.assemble import assemble
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> spec = kopt.load_spec({"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                                  "regularizer": {"name": "l2", "lambda": 1e-3},
    ...                                  "features": {"kind": "nystrom", "count": 20}},
    ...                        "solver": {"name": "krr_pcg"}})
    >>> problem = assemble(spec, (X, X[:, 0]))
    >>> from kopt.nystrom import choose_centers, dense_centers
    >>> C = dense_centers(problem, choose_centers(problem, 20))
    >>> C.shape, C.dtype
    ((20, 2), dtype('float32'))
    """
    return _rows.dense(problem.X, problem.xp.asarray(centers), problem.xp, problem.dtype)


class NystromSolver(IterativeSolver):
    """Base of the iterative solvers on the problem's M Nyström centers (``model.features.kind: nystrom``).

    A subclass supplies ``step`` and ``check`` (and, for a memory plan, ``memory_plan``); the base holds what every
    such solver shares: ``init`` (the seeded centers, their dense rows, the label matrix less its fixed offset and
    the sample weights), and ``decision_function``, ``save``, ``load`` and ``finish`` on the coefficients
    ``state["w"]`` (M × outputs) over the kept centers ``state["C"]``.  The model is a kernel expansion over the
    kept centers.  :func:`certificate` gives the gap of any convex loss with a conjugate.

    Attributes
    ----------
    losses : tuple of str or None
        The losses the solver solves; None: any loss the certificate takes.
    kernel_mode, feature_kinds, default_feature_kind, one_vs_rest, needs_conjugate, sample_weight, memory_key
        The declarations of a Nyström solver (:class:`kopt.contract.components.Solver`): random features are not
        used, ``nystrom`` centers are, binary losses train one-vs-rest, rows may be weighted, and the memory plan
        grows with ``model.features.count``.

    Examples
    --------
    >>> from kopt.contract.registry import registry
    >>> from kopt.nystrom import NystromSolver
    >>> pcg = registry().get("solver", "krr_pcg")
    >>> issubclass(pcg, NystromSolver), pcg.default_feature_kind
    (True, 'nystrom')
    """

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

    def check_spec(self, spec) -> Iterator[tuple[tuple, str]]:
        """Refuse a loss outside :attr:`losses` (where it is not None), naming the registered solvers that accept the
        spec (``spec.solvers_accepting()``: their declared capabilities and checks decide).

        Parameters
        ----------
        spec : kopt.spec.Spec
            The resolved spec.

        Yields
        ------
        tuple
            ``(key_path, message)`` for a loss this solver does not solve.

        Examples
        --------
        >>> import kopt
        >>> from kopt.contract.registry import registry
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"}}})
        >>> [path for path, text in registry().get("solver", "krr_nystrom")().check_spec(spec)]
        [('model', 'loss', 'name')]
        """
        if self.losses is not None and spec.loss.name not in self.losses:
            yield ("model", "loss", "name"), loss_refusal(self.name, " or ".join(self.losses), spec)

    def init(self, problem: Problem, dense_centers: bool = True) -> dict:
        """The state every Nyström solver starts from.

        The seeded centers (:func:`choose_centers`, from the spec's seed), their dense rows, the label matrix less its
        fixed weighted mean (the intercept, unpenalized) and the sample weights.

        Parameters
        ----------
        problem : Problem
            The assembled problem.
        dense_centers : bool, optional
            Make the centers' dense rows; False where the solver makes them itself.

        Returns
        -------
        dict
            ``problem``, ``centers`` (positions of the seeded centers), ``C`` (their dense rows, or None), ``Y`` (the
            label matrix less ``intercept``), ``intercept``, ``weights``, ``w`` (None until a step sets it) and
            ``system`` (None).

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> from kopt.testing import solver_for
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "square"},
        ...                                  "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3},
        ...                                  "features": {"kind": "nystrom", "count": 20}},
        ...                        "solver": {"name": "krr_nystrom"}, "backend": "numpy"})
        >>> problem = assemble(spec, (X, np.sin(X[:, 0])))
        >>> solver = solver_for(spec)  # krr_nystrom: a NystromSolver that keeps the base's methods
        >>> state = solver.init(problem)
        >>> state["C"].shape, state["Y"].shape, state["w"] is None
        ((20, 2), (200, 1), True)
        """
        centers = choose_centers(problem, problem.features.count)
        C = _dense(problem, centers) if dense_centers else None
        Y = problem.label_matrix()
        intercept = target_offset(Y, problem.sample_weight)  # fixed: the solve fits the centered targets
        return {"problem": problem, "centers": centers, "C": C, "Y": Y - intercept, "intercept": intercept,
                "w": None, "weights": problem.sample_weight, "system": None}

    def decision_function(self, state: dict, X: ArrayLike) -> np.ndarray:
        """k(X, C) w + intercept for rows ``X``, a chunk of rows at a time.

        The kernel values and their product are in the problem's dtype.

        Parameters
        ----------
        state : dict
            The solver's state: ``w`` (M × outputs), ``C`` (the kept centers) and ``intercept``.
        X : array or sparse matrix of shape (m, d)
            Rows, standardized as the training rows are, on the backend.

        Returns
        -------
        array of shape (m, outputs)
            The scores, float64.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> from kopt.testing import solver_for
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "square"},
        ...                                  "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3},
        ...                                  "features": {"kind": "nystrom", "count": 20}},
        ...                        "solver": {"name": "krr_nystrom"}, "backend": "numpy"})
        >>> problem = assemble(spec, (X, np.sin(X[:, 0])))
        >>> solver = solver_for(spec)  # krr_nystrom: a NystromSolver that keeps the base's methods
        >>> state = solver.init(problem)
        >>> step = solver.step(state, 1)
        >>> solver.decision_function(state, problem.X[:3]).shape
        (3, 1)
        """
        problem = state["problem"]
        out = problem.xp.empty((X.shape[0], state["w"].shape[1]), dtype=np.float64)
        coef = state["w"].astype(problem.dtype)
        k = problem.kernel.bind(state["C"])
        for lo, hi in row_chunks(X, state["C"].shape[0], problem.kernel):
            rows = _rows.kernel_rows(problem.kernel, X, slice(lo, hi), problem.xp, problem.dtype)
            out[lo:hi] = k(rows) @ coef
        return out + state["intercept"]

    def save(self, state: dict) -> dict:
        """What a checkpoint keeps: the coefficients alone (nothing before a step set them); :meth:`load` rebuilds
        the rest.

        Parameters
        ----------
        state : dict
            The solver's state.

        Returns
        -------
        dict
            ``{"w": array}``, or ``{}`` before the first step.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> from kopt.testing import solver_for
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "square"},
        ...                                  "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3},
        ...                                  "features": {"kind": "nystrom", "count": 20}},
        ...                        "solver": {"name": "krr_nystrom"}, "backend": "numpy"})
        >>> problem = assemble(spec, (X, np.sin(X[:, 0])))
        >>> solver = solver_for(spec)  # krr_nystrom: a NystromSolver that keeps the base's methods
        >>> state = solver.init(problem)
        >>> solver.save(state)
        {}
        >>> step = solver.step(state, 1)
        >>> sorted(solver.save(state))
        ['w']
        """
        return {} if state["w"] is None else {"w": to_numpy(state["w"])}

    def load(self, problem: Problem, saved: dict) -> dict:
        """The state of a checkpoint's ``w``, the centers and their factor made again from the problem.

        A ``saved["system"]`` (``solver: auto``'s plan: the system its search built on every training row) is reused
        where it is this problem's: the same centers, rows, targets, dtype and kernel.

        Parameters
        ----------
        problem : Problem
            The assembled problem.
        saved : dict
            What :meth:`save` returned (or a plan's ``system``, ``centers`` and ``intercept``).

        Returns
        -------
        dict
            The state, as :meth:`init` makes it, with ``w`` and ``U`` where ``saved`` has ``w``.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> from kopt.testing import solver_for
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "square"},
        ...                                  "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3},
        ...                                  "features": {"kind": "nystrom", "count": 20}},
        ...                        "solver": {"name": "krr_nystrom"}, "backend": "numpy"})
        >>> problem = assemble(spec, (X, np.sin(X[:, 0])))
        >>> solver = solver_for(spec)  # krr_nystrom: a NystromSolver that keeps the base's methods
        >>> state = solver.init(problem)
        >>> step = solver.step(state, 1)
        >>> again = solver.load(problem, solver.save(state))
        >>> bool(np.allclose(solver.decision_function(again, problem.X), solver.decision_function(state, problem.X)))
        True
        """
        planned = "system" in saved
        state = self.init(problem, dense_centers=not planned)
        if planned:
            state["system"] = _planned_system(problem, state, saved)
            state["reused_system"] = state["system"] is not None
            if state["system"] is None:
                state["C"] = _dense(problem, state["centers"])
            else:  # the system keeps its own dense centers (a second copy set a peak:
                # docs/design/memory.md)
                state["C"] = state["system"].C
        if "w" in saved:
            state["w"] = problem.xp.asarray(saved["w"], dtype=np.float64)
            C = _dense(problem, state["centers"]) if state.get("reused_system") else state["C"]
            with blas_threads(1):  # as NystromSystem factors it: the same centers and bits of U, so the same certificate
                kept, state["U"] = center_basis(problem.kernel, C)
            state["C"] = kept_centers(C, kept)
        return state

    def finish(self, state: dict) -> tuple[Predictor, dict]:
        """The model and the solver's facts: a kernel expansion over the kept centers with coefficients ``w`` and the
        intercept.

        Parameters
        ----------
        state : dict
            The solver's state after its last step.

        Returns
        -------
        predictor : Predictor
            A ``kernel_expansion`` predictor (support: the kept centers).
        info : dict
            The centers asked, drawn and dropped, with a note where the basis kept fewer centers than
            ``model.features.count`` asks.

        Examples
        --------
        >>> import numpy as np
        >>> import kopt
        >>> from kopt.api import assemble
        >>> from kopt.testing import solver_for
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> spec = kopt.load_spec({"model": {"loss": {"name": "square"},
        ...                                  "kernel": {"name": "gaussian", "bandwidth": 1.0},
        ...                                  "regularizer": {"name": "l2", "lambda": 1e-3},
        ...                                  "features": {"kind": "nystrom", "count": 20}},
        ...                        "solver": {"name": "krr_nystrom"}, "backend": "numpy"})
        >>> problem = assemble(spec, (X, np.sin(X[:, 0])))
        >>> solver = solver_for(spec)  # krr_nystrom: a NystromSolver that keeps the base's methods
        >>> state = solver.init(problem)
        >>> step = solver.step(state, 1)
        >>> predictor, info = solver.finish(state)
        >>> predictor.name, info["n_centers"]
        ('kernel_expansion', 20)
        """
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
