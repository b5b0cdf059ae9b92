"""How ``solver: auto`` scores a model on its validation rows and decides whether one model beat another.

Every stage of the search (:mod:`.planner`'s ladder, :mod:`.large`'s grown centers and bandwidth probe,
:mod:`.columns`' column scales) scores a model by its per-row outcomes on the same held-out rows and compares two
models by the paired difference of those outcomes, so one rule says when a gain is real: at least
:data:`MIN_GAIN`, and more than :data:`GAIN_ERRORS` standard errors of the paired difference
(docs/design/center-ladder.md).
"""
from __future__ import annotations

import math

import numpy as np

#: a gain smaller than this is no gain: accuracy points (absolute, as a fraction), or RMSE (relative).  A third of
#: the tolerance kopt's defaults are held to (0.3 points, 2% of RMSE), so the sizes a ladder leaves out could not add
#: up to it (docs/design/center-ladder.md)
MIN_GAIN = {"accuracy": 0.001, "balanced_accuracy": 0.001, "weighted_accuracy": 0.001, "rmse": 0.0067}
#: a gain within this many standard errors of the paired difference (:func:`gain_error`) is one the validation rows
#: cannot tell from noise
GAIN_ERRORS = 1.0


def resolves_gain(metric, rows) -> bool:
    """Whether ``rows`` validation rows can resolve a gain of :data:`MIN_GAIN`: at least 1/MIN_GAIN of them, so that
    one row's outcome moves the score by at most that gain."""
    return rows >= math.ceil(1.0 / MIN_GAIN[metric])


def metric_of(problem) -> str:
    """The search's metric: ``rmse`` for a real target; ``balanced_accuracy`` where the spec asks for balanced
    classes (``data.class_weight: balanced``), ``weighted_accuracy`` where it gives the classes' weights; else
    ``accuracy``."""
    if problem.preprocessor.target == "real":
        return "rmse"
    given = (problem.spec.get("data") or {}).get("class_weight")
    return "accuracy" if given is None else "balanced_accuracy" if given == "balanced" else "weighted_accuracy"


def outcomes(metric, S, Y, y_scale, weights=None) -> np.ndarray:
    """Per validation row: 1/0 for a right/wrong class, or the squared error in the target's units.

    ``S``: the model's scores of the rows, ``(n, outputs)``; ``Y``: their targets (±1 columns, one-hot class
    columns, or the real target scaled by ``1 / y_scale``).  Balanced accuracy weighs a row 1 / (classes × its class's
    rows), weighted accuracy by its weight (``weights``: the rows'), each normalised to mean 1 over the rows, so the
    mean of the outcomes is the metric.
    """
    if metric == "rmse":
        return ((S[:, 0] - Y[:, 0]) * y_scale) ** 2
    if S.shape[1] == 1:
        right, truth = (np.sign(S[:, 0]) == np.sign(Y[:, 0])).astype(np.float64), Y[:, 0] > 0
    else:
        right, truth = (np.argmax(S, axis=1) == np.argmax(Y, axis=1)).astype(np.float64), np.argmax(Y, axis=1)
    if metric == "balanced_accuracy":
        _, index, counts = np.unique(truth, return_inverse=True, return_counts=True)
        right = right * (len(truth) / (len(counts) * counts[index.ravel()]))
    elif metric == "weighted_accuracy" and weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        right = right * (weights / weights.mean())
    return right


def score(metric, rows) -> float:
    """The validation score of per-row :func:`outcomes`: higher is better (accuracy, or −RMSE)."""
    return -float(np.sqrt(np.mean(rows))) if metric == "rmse" else float(np.mean(rows))


def tied(metric, value):
    """The key a λ path ranks its scores by: the score itself, or for the weighted metrics its whole multiples of
    :data:`MIN_GAIN`, so that a difference smaller than a gain is a tie (which the larger λ wins): a few heavy rows
    make every other row's weight a sliver."""
    if metric in ("balanced_accuracy", "weighted_accuracy") and np.isfinite(value):
        return math.floor(value / MIN_GAIN[metric] + 1e-9)
    return value


def gain(metric, old, new) -> float:
    """What the score ``new`` gained over ``old``: accuracy points (as a fraction), or the relative cut in RMSE."""
    if metric == "rmse":
        return (new - old) / abs(old) if old else 0.0  # scores are −RMSE
    return new - old


def gain_error(metric, old_rows, new_rows) -> float:
    """The standard error of :func:`gain` between two models scored on the same rows: the spread of the per-row
    differences of their :func:`outcomes` (paired), in :func:`gain`'s units."""
    n = len(old_rows)
    if n < 2:
        return 0.0
    error = float(np.std(new_rows - old_rows, ddof=1)) / math.sqrt(n)
    if metric == "rmse":  # a relative cut in RMSE: d(MSE) / (2 MSE), by the delta method
        mse = float(np.mean(old_rows))
        return error / (2.0 * mse) if mse > 0 else 0.0
    return error


def gain_words(metric, value) -> str:
    """A gain as the log and the report say it: ``0.12 points`` or ``1.30% of RMSE``."""
    return f"{100 * value:.2f}% of RMSE" if metric == "rmse" else f"{100 * value:.2f} points"


def path_words(lambdas, scores) -> dict:
    """A λ path's scores as the report keeps them: ``{"1e-05": 0.91234, ...}``, None where the λ was not a choice."""
    return {f"{lambdas[i]:g}": (round(scores[i], 6) if np.isfinite(scores[i]) else None) for i in sorted(scores)}


def digits(x) -> float:
    """``x`` to the 6 significant digits a chosen spec records (so the final solve's kernel is the one scored)."""
    return float(f"{x:.6g}")
