"""What solvers return, and what ``kopt.solve`` returns."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SolverOutput:
    """A solver's answer: the predictor plus its certificate, what ``Solver.run`` returns.

    The core turns it into the :class:`Result` of :func:`kopt.solve` (the model, the test metrics, the report).

    Parameters
    ----------
    predictor, n_iter, success, message, objective, dual, gap, status, info, held_out
        The attributes below.

    Attributes
    ----------
    predictor : Predictor
        What the model evaluates (:class:`kopt.contract.components.Predictor`).
    n_iter : int
        The iterations run.
    success : bool
        Whether the solver reached its tolerance (a direct solve: True).
    message : str
        How it stopped, in words.
    objective : float or None
        The primal objective in kopt's convention, λ/2‖f‖² + mean ℓ.
    dual, gap : float or None
        The dual objective and the duality gap, where the form has them.
    status : str
        ``"converged"``, ``"iteration_cap"``, ``"interrupted"``, ``"diverged"`` or ``"done"`` (a direct solve).
    info : dict
        The solver's own figures, copied into the report's ``solver_info``.
    held_out : callable or None
        A function of no arguments returning the scores of the calibration's held-out rows by a model of the
        solve's settings not fitted on them (``{"rows", "scores", "words"}``, as in
        :class:`~kopt.contract.components.Plan`), or None; the probability calibration then needs no second solve.

    Examples
    --------
    >>> from kopt.contract.result import SolverOutput
    >>> out = SolverOutput(predictor=None, n_iter=12, objective=0.31, dual=0.30, gap=0.01, status="converged")
    >>> out.success, out.gap
    (True, 0.01)
    """

    predictor: object
    n_iter: int
    success: bool = True
    message: str = ""
    objective: float | None = None
    dual: float | None = None
    gap: float | None = None
    status: str = "done"
    info: dict = field(default_factory=dict)
    held_out: object = None


@dataclass(frozen=True)
class Result:
    """The result of :func:`kopt.solve`: the model, its objective and certificate, the test metrics and the report.

    Built complete by :func:`kopt.solve`; nothing changes it afterwards.

    Parameters
    ----------
    model, objective, dual, gap, n_iter, success, status, message, metrics, trace, timings, info, report
        The attributes below.
    snapshot, lambda_auto, auto
        The attributes below (None unless asked for or chosen).

    Attributes
    ----------
    model : Model
        The trained model.
    objective : float or None
        The primal objective λ/2‖f‖² + mean ℓ.
    dual : float or None
        The dual objective, where the form has one.
    gap : float or None
        The duality gap ``objective - dual``: an upper bound on how far the objective is from its optimum.
    n_iter : int
        The iterations run.
    success : bool
        Whether the solver reached its tolerance (or solved directly).
    status : str
        ``"converged"``, ``"iteration_cap"``, ``"interrupted"``, ``"diverged"`` or ``"done"``.
    message : str
        The solver's words on how it stopped.
    metrics : dict
        Test metrics (``accuracy``, ``auc``, ``rmse``, ...) when the data has a test split.
    trace : list
        The convergence trace, one record per check.
    timings : dict
        Seconds per stage (``load_s``, ``fit_s``, ``wall_s``, ...).
    info : dict
        The solver's own figures.
    report : dict
        The JSON report ``kopt solve`` writes.
    snapshot : Snapshot or None
        The final solver state, with ``kopt.solve(..., keep_state=True)``.
    lambda_auto : dict or None
        With ``model.regularizer.lambda: auto``: the λ chosen, the validation metric along the path and its cost.
    auto : dict or None
        With ``solver: auto``: the route, centers, bandwidth and λ chosen, the trials and why
        (``report["auto"]``).

    Examples
    --------
    >>> import numpy as np
    >>> import kopt
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
    ...                   "regularizer": {"name": "l2", "lambda": 1e-3}},
    ...         "solver": {"name": "krr_exact"}}
    >>> result = kopt.solve(spec, data=(X[:40], X[:40, 0], X[40:], X[40:, 0]))
    >>> result.success, sorted(result.metrics)
    (True, ['mae', 'r2', 'rmse'])
    >>> result.report["objective"] == result.objective
    True
    """

    model: object
    objective: float | None
    dual: float | None
    gap: float | None
    n_iter: int
    success: bool
    status: str
    message: str
    metrics: dict
    trace: list
    timings: dict
    info: dict
    report: dict
    snapshot: object = None
    lambda_auto: dict = None
    auto: dict = None

    def __repr__(self):
        m = ", ".join(f"{k}={v:.4g}" for k, v in self.metrics.items() if isinstance(v, float))
        gap = f", gap={self.gap:.3g}" if self.gap is not None else ""
        obj = f"{self.objective:.6g}" if self.objective is not None else "n/a"
        return f"Result(objective={obj}{gap}, n_iter={self.n_iter}, success={self.success}, {m})"
