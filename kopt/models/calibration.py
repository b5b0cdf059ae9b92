"""Probabilities from a classifier's margins: Platt sigmoids fitted on held-out scores.

A margin loss (square, squared hinge, hinge, ...) scores rows on no probability scale.  Its model file carries a
*calibration*: for two classes one sigmoid P(classes[1] | f) = σ(a·f + b) of the score; for more, one sigmoid per
one-vs-rest column, P(c | f) ∝ σ(a_c·f_c + b_c), normalised over the classes.  Each sigmoid is Platt's (1999),
fitted as Lin, Lin and Weng (2007, "A note on Platt's probabilistic outputs for support vector machines") do:
the targets smoothed to (N₊ + 1)/(N₊ + 2) and 1/(N₋ + 2), the weighted log loss minimised by Newton's method with a
backtracking line search and a tiny ridge on the Hessian.  The scores must come from rows the scoring model was
not fitted on (:mod:`kopt.api` says which: ``solver: auto``'s validation rows, or a seeded internal split).

Isotonic regression is not used: it is a step function (ties and flat stretches at probabilities 0 and 1, an
infinite log loss on a row past the last step) and needs many more held-out rows per class than two parameters
do; the sigmoid's log loss against SVC's calibrations is the measured check (docs/design/calibration.md).
"""
from __future__ import annotations

import numpy as np

#: the calibration's ``method`` in the model file
METHOD = "sigmoid"
#: the share of the training rows a seeded internal split holds out for the calibration (``solver: auto``'s own
#: validation share: the same rows)
SHARE = 0.2
#: Newton's stopping rule on the gradient's largest entry, and its step cap (Lin, Lin and Weng use 1e-5 and 100)
GRAD_TOL = 1e-5
MAX_STEPS = 100
#: the ridge added to the Hessian's diagonal, and the smallest line-search step
RIDGE = 1e-12
MIN_STEP = 1e-10


def held_out_rows(n, seed):
    """``(fit rows, held-out rows)`` of the seeded internal split the calibration scores: ``make_splits(n, seed,
    validation=SHARE)``, the rows ``solver: auto`` holds out for validation."""
    from ..running.validation import make_splits

    (fit, held), = make_splits(n, seed, validation=SHARE)
    return fit, held


def _loss(z, t, w):
    """Σ w (log(1 + e^z) − t z): the log loss of σ(z) against the targets t."""
    return float(np.sum(w * (np.logaddexp(0.0, z) - t * z)))


def platt(f, positive, weights=None):
    """``(a, b)`` of the sigmoid σ(a·f + b) fitted to ``positive`` (bool per row) on the scores ``f``."""
    from scipy.special import expit

    f = np.asarray(f, dtype=np.float64).ravel()
    positive = np.asarray(positive, dtype=bool).ravel()
    w = np.ones_like(f) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    n_pos, n_neg = float(w[positive].sum()), float(w[~positive].sum())
    t = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    a, b = 0.0, float(np.log((n_pos + 1.0) / (n_neg + 1.0)))
    value = _loss(a * f + b, t, w)
    for _ in range(MAX_STEPS):
        p = expit(a * f + b)
        r = w * (p - t)
        g = np.array([float(r @ f), float(r.sum())])
        if np.max(np.abs(g)) < GRAD_TOL:
            break
        h = w * p * (1.0 - p)
        H = np.array([[float(h @ (f * f)) + RIDGE, float(h @ f)], [float(h @ f), float(h.sum()) + RIDGE]])
        d = -np.linalg.solve(H, g)
        slope = float(g @ d)
        step = 1.0
        while step >= MIN_STEP:
            na, nb = a + step * d[0], b + step * d[1]
            new = _loss(na * f + nb, t, w)
            if new < value + 1e-4 * step * slope:
                break
            step /= 2.0
        else:
            break  # no step lowers the loss: at the minimum to rounding
        a, b, value = na, nb, new
    return float(a), float(b)


def fit(scores, labels, n_classes, weights=None, *, source=""):
    """The calibration of held-out ``scores`` (``(n,)``/``(n, 1)`` for two classes, ``(n, C)`` one column per
    class) with their class positions ``labels`` (0 .. C−1, ``classes`` order): a JSON-able dict."""
    S = np.asarray(scores, dtype=np.float64)
    if S.ndim == 1:
        S = S[:, None]
    labels = np.asarray(labels).astype(np.int64).ravel()
    if S.shape[1] == 1:
        pairs = [platt(S[:, 0], labels == 1, weights)]
    else:
        pairs = [platt(S[:, c], labels == c, weights) for c in range(S.shape[1])]
    return {"method": METHOD, "a": [p[0] for p in pairs], "b": [p[1] for p in pairs], "rows": int(S.shape[0]),
            "n_classes": int(n_classes), "source": source}


def log_proba(calibration, scores):
    """Log class probabilities ``(n, C)`` of ``scores`` under ``calibration`` (:func:`fit`'s dict)."""
    from scipy.special import log_expit

    S = np.asarray(scores, dtype=np.float64)
    if S.ndim == 1:
        S = S[:, None]
    a, b = np.asarray(calibration["a"], dtype=np.float64), np.asarray(calibration["b"], dtype=np.float64)
    if S.shape[1] != a.size:
        raise ValueError(f"the calibration has {a.size} sigmoid(s) and the scores {S.shape[1]} column(s)")
    z = S * a + b
    if a.size == 1:
        return np.column_stack([log_expit(-z[:, 0]), log_expit(z[:, 0])])
    logp = log_expit(z)
    return logp - np.logaddexp.reduce(logp, axis=1, keepdims=True)


def check(calibration, source):
    """A model file's ``calibration`` field, checked: a :class:`kopt.errors.ModelFileError` naming what is wrong."""
    from ..errors import ModelFileError

    if calibration is None:
        return
    ok = (isinstance(calibration, dict) and calibration.get("method") == METHOD
          and isinstance(calibration.get("a"), list) and isinstance(calibration.get("b"), list)
          and len(calibration["a"]) == len(calibration["b"]) >= 1
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
                  for v in calibration["a"] + calibration["b"]))
    if not ok:
        raise ModelFileError(f"{source}: field 'calibration' must be {{method: {METHOD}, a: [numbers], b: [numbers]}} "
                             "with as many finite a as b")
