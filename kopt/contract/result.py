"""What solvers return, and what ``kopt.solve`` returns."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SolverOutput:
    """A solver's answer: the predictor plus its certificate.

    ``objective`` is the primal objective in kopt's convention
    (λ/2‖f‖² + mean ℓ); ``dual`` and ``gap`` where the form has them.  ``status`` is
    "converged", "iteration_cap", "interrupted", "diverged" or "done" (a direct solve).
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
    #: None, or a function of no arguments returning ``{"rows", "scores", "words"}`` (the shape of
    #: :class:`kopt.contract.components.Plan`'s ``held_out``) or None: the scores of the calibration's held-out rows
    #: (:func:`kopt.models.calibration.held_out_rows`) by a model of the solve's settings not fitted on them, made
    #: during the solve -- the probability calibration then needs no second solve.  Called only where it calibrates.
    held_out: object = None


@dataclass(frozen=True)
class Result:
    """The result of :func:`kopt.solve` (built complete; nothing changes it afterwards)."""

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
    #: the final solver state (:class:`kopt.running.checkpoint.Snapshot`) with ``kopt.solve(..., keep_state=True)``
    snapshot: object = None
    #: ``model.regularizer.lambda: auto``: what was chosen (``lambda``, the validation ``metric`` and its
    #: value per ``path`` point, ``select_s``, ``refit_warm``; :class:`kopt.running.validation.LambdaChoice`); else None
    lambda_auto: dict = None
    #: ``solver: auto``: what it measured and chose (``route``, ``centers``, ``bandwidth``, ``lambda``,
    #: ``validation_score``, ``trials``, ``search_s``, ``why``; report["auto"]); else None
    auto: dict = None

    def __repr__(self):
        m = ", ".join(f"{k}={v:.4g}" for k, v in self.metrics.items() if isinstance(v, float))
        gap = f", gap={self.gap:.3g}" if self.gap is not None else ""
        obj = f"{self.objective:.6g}" if self.objective is not None else "n/a"
        return f"Result(objective={obj}{gap}, n_iter={self.n_iter}, success={self.success}, {m})"
