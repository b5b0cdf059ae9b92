"""The records :mod:`.planner`'s steps hand on, and what a search returns: typed, so that a step's result is read by
name (``trial.score``), never by a dictionary key.  :meth:`Trial.record`, :meth:`LossChoice.record` and
:meth:`CenterChoice.record` give the report's entries (``report["auto"]``)."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import scoring


@dataclass
class Trial:
    """One model the search scored: a center count, a bandwidth and the best λ of its path.

    ``path`` maps each λ tried to its validation score (:func:`.scoring.path_words`).  A squared-hinge trial also
    keeps its system's square-loss path (``square_*``) and its Newton steps; ``loss`` names the loss where the two
    compete (the loss left to auto); ``skipped`` says why a bandwidth was not tried for the hinge; ``center_rule``
    is ``rpcholesky`` where its centers are randomly pivoted Cholesky's (uniform where unset).
    """

    centers: int
    bandwidth_factor: float
    bandwidth: float | None
    lam: float
    score: float
    lam_index: int
    path: dict
    loss: str | None = None
    seconds: float = 0.0
    square_lam_index: int | None = None
    square_score: float | None = None
    square_path: dict | None = None
    newton_steps: int | None = None
    skipped: str | None = None
    center_rule: str | None = None

    def record(self) -> dict:
        """The report's entry (``report["auto"]["trials"]``): the fields set, as JSON holds them."""
        out = {"centers": self.centers, "bandwidth_factor": self.bandwidth_factor, "bandwidth": self.bandwidth,
               "lam": self.lam, "score": self.score, "lam_index": self.lam_index, "path": self.path}
        if self.loss is not None:
            out["loss"] = self.loss
        out["seconds"] = self.seconds
        for name in ("square_lam_index", "square_score", "square_path", "newton_steps", "skipped", "center_rule"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass
class HingeSolution:
    """The squared hinge's solution at its best λ (:func:`hinge_path`): the whitened coefficients ``v``, the offset
    ``b``, the fit rows inside its margin, the rows the system's T sums (``in_T``), the Newton steps the path took,
    and the validation rows' scores."""

    v: object
    b: float
    inside: object
    in_T: object
    steps: int
    val_scores: np.ndarray


@dataclass
class LossChoice:
    """The loss left to auto: the squared hinge against the square loss on the first size's chosen system
    (:func:`_screen_loss`).  ``screen`` is set where the hinge won the screen and a square-loss model won the
    ladder."""

    chosen: str
    centers: int
    bandwidth_factor: float
    square_score: float
    squared_hinge_score: float
    square_lambda: float
    squared_hinge_lambda: float
    gain: float
    standard_error: float
    newton_steps: int
    seconds: float
    why: str
    screen: str | None = None

    def record(self) -> dict:
        """``report["auto"]["loss"]``."""
        out = {k: getattr(self, k) for k in ("chosen", "centers", "bandwidth_factor", "square_score",
                                             "squared_hinge_score", "square_lambda", "squared_hinge_lambda", "gain",
                                             "standard_error", "newton_steps", "seconds", "why")}
        if self.screen is not None:
            out["screen"] = self.screen
        return out


@dataclass
class CenterChoice:
    """The centers' rule at the first size (:func:`_screen_centers`): randomly pivoted Cholesky's centers against the
    uniform ones, at the chosen bandwidth."""

    chosen: str
    centers: int
    bandwidth_factor: float
    uniform_score: float
    rpcholesky_score: float
    gain: float
    standard_error: float
    seconds: float
    why: str

    def record(self) -> dict:
        """``report["auto"]["centers_rule"]``."""
        return dict(vars(self))


@dataclass
class Rows:
    """The search's split of the training rows: fit rows on the device, the validation rows' targets on the host.

    ``Y_fit`` and ``Y_val_centered`` are the targets less their mean ``intercept`` (the systems fit Y − μ);
    ``Y_val`` is the validation targets as given, which the scores (plus μ) are compared with.  ``y_fit``: the ±1 labels the squared
    hinge reads (None where it is not measured).
    """

    fit: np.ndarray
    validation: np.ndarray
    metric: str
    intercept: np.ndarray
    y_scale: float
    X_fit: object
    Y_fit: object
    w_fit: object
    X_val: object
    Y_val: np.ndarray
    w_val: np.ndarray | None
    Y_val_centered: object
    w_val_device: object
    y_fit: object
    d: int
    outputs: int

    @property
    def n_fit(self) -> int:
        return len(self.fit)

    @property
    def n_val(self) -> int:
        return len(self.validation)

    def outcomes(self, S) -> np.ndarray:
        """The validation rows' outcomes of scores ``S`` (host, the intercept added)."""
        return scoring.outcomes(self.metric, S, self.Y_val, self.y_scale, self.w_val)


@dataclass
class Search:
    """What :func:`search` measured: the ``best`` trial, every trial, the split's description, the seconds
    spent, the metric, and the best trial's system over every training row (:attr:`system`, made by ``make_system``
    where it is first read: a :class:`kopt.nystrom.system.NystromSystem` on the centers ``centers``, indices into the
    training rows, for the targets less their mean ``intercept``)."""

    best: Trial
    trials: list
    split: str
    seconds: float
    metric: str
    #: makes :attr:`system` (the best trial's system restored, and the validation rows' sums added): called once, where
    #: the system is first read, so that a search whose model is not taken (the column check's) never pays for it
    make_system: Callable[[], object]
    centers: np.ndarray
    intercept: np.ndarray
    #: the squared hinge's start (a hinge search): ``in_T`` (the training rows the system's T sums), ``v``, ``b``
    hinge_start: dict | None = None
    #: the validation rows (indices into the training rows) and the best trial's scores of them, ``(n_va, C)``: the
    #: scores of a model not fitted on those rows, which the probability calibration is fitted on
    validation_rows: np.ndarray | None = None
    validation_scores: np.ndarray | None = None
    #: the loss left to auto: the squared hinge measured against the square loss
    loss_choice: LossChoice | None = None
    #: randomly pivoted Cholesky's centers measured against uniform ones (a ``screen_centers`` search)
    center_choice: CenterChoice | None = None

    @functools.cached_property
    def system(self):
        """The best trial's system over every training row, made on first reading (``make_system``), on the BLAS
        threads the search's systems were made on (the same bits wherever it is read)."""
        from kopt.numerics import threads

        with threads.scipy_blas():
            system, self.make_system = self.make_system(), None
        return system
