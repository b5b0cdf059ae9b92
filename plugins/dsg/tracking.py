"""Scores of fixed row sets kept up to date by changed blocks only, and the running objective.

A :class:`ScoreTracker` holds u = Σ_j φ_j(X) c_j for a fixed matrix X (the skeleton's
holdout subset, or its seeded check rows of the training set): the solvers' ``scorer`` and
``check`` read their scores from one.  The expansion tells it which
coefficients changed (:meth:`note`) and when the scale was folded (:meth:`rescale`);
:meth:`sync` then evaluates only the changed blocks.  A DSG run of T iterations
therefore spends n_rows·F·d per iteration on its evaluations, against B·t·F·d for the
iteration itself: evaluating every k iterations costs the same as evaluating once.
"""
from __future__ import annotations

import numpy as np

from kopt.numerics import rows as _rows


class ScoreTracker:
    """Incrementally maintained scores of the rows ``X`` under a :class:`BlockExpansion`.

    Parameters
    ----------
    X : array or scipy CSR matrix
        The fixed rows; kept as a dense ``dtype`` array of ``xp`` (sparse rows are densified
        ``chunk`` rows at a time).
    xp : module
        numpy or cupy.
    dtype : numpy dtype
        The feature map's evaluation dtype.
    n_outputs : int or None
        C for multi-output losses; None for scalar outputs.
    """

    def __init__(self, X, xp, dtype, n_outputs=None, chunk=8192):
        self.xp = xp
        n = X.shape[0]
        self.X = _dense(X, xp, dtype, chunk)
        self.scores = xp.zeros((n,) + (() if n_outputs is None else (int(n_outputs),)), dtype=np.float64)
        self.pending = {}

    @property
    def n(self):
        return self.X.shape[0]

    def note(self, j, delta):
        """Coefficient c_j changed by ``delta`` (in the expansion's current units)."""
        if j in self.pending:
            self.pending[j] = self.pending[j] + delta
        else:
            self.pending[j] = delta.copy()

    def rescale(self, factor):
        """The expansion multiplied every coefficient by ``factor`` (scale folding)."""
        self.scores *= factor
        for j in self.pending:
            self.pending[j] = self.pending[j] * factor

    def sync(self, fmap, expansion):
        """Bring the scores up to date; returns s·u (the true decision values)."""
        if self.pending:
            pos = sorted(self.pending)
            coef = self.xp.stack([self.pending[j] for j in pos])
            blocks = [int(expansion.blocks[j]) for j in pos]
            self.scores += fmap.predict(self.X, coef, blocks=blocks)
            self.pending = {}
        return expansion.scale * self.scores


def _dense(X, xp, dtype, chunk):
    """All rows of ``X`` as one dense ``dtype`` array of ``xp``; a sparse matrix ``chunk`` rows at a time."""
    if not _rows.is_sparse(X):
        return _rows.dense(X, None, xp, dtype)
    out = xp.empty(X.shape, dtype=dtype)
    for lo, hi in _rows.chunks(X.shape[0], chunk):
        out[lo:hi] = _rows.dense(X, slice(lo, hi), xp, dtype)
    return out


class RunningObjective:
    """Exponential moving average of the mini-batch objective, window ``w`` iterations.

    The weight of the newest value is max(1/k, 2/(w + 1)) after k values, so the first
    values form a plain running mean and later ones a moving window.
    """

    def __init__(self, window):
        self.window = int(window)
        self.count = 0
        self.value = None

    def update(self, x):
        self.count += 1
        w = max(1.0 / self.count, 2.0 / (self.window + 1))
        self.value = float(x) if self.value is None else self.value + w * (float(x) - self.value)
        return self.value

    def state(self):
        return {"ema_count": self.count, "ema_value": self.value}

    def restore(self, state):
        self.count = int(state["ema_count"])
        v = state.get("ema_value")
        self.value = None if v is None else float(v)
