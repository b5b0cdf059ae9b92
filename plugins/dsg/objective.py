"""What the solvers need from a loss, for every target kind the loss plugins define.

* labelled losses (real, binary, multiclass): ``loss.value(u, y)``, ``loss.grad(u, y)``;
  multiclass scores and gradients are ``(n, C)``.
* ``unlabeled`` losses (novelty detection, Dai et al. (2014) Sec. 4) have an offset: τ travels in the
  label slot and has its own gradient ``loss.offset_grad(u, τ)``; the solver
  steps τ ← τ − γ_t · mean offset_grad next to the f step, and the model's decision
  function is f(x) − τ (an intercept of −τ).
* ``two_sample`` losses (KL density ratio): y ∈ {0, 1} marks the sample; every row's loss and
  gradient is multiplied by its weight ``loss.balance_weights(y)``, so the mean over rows is the
  paper's objective for any sample sizes.

Both are capabilities declared on :class:`kopt.contract.components.Loss` (``has_offset`` /
``offset_grad``, ``has_balance_weights`` / ``balance_weights``).

Sample weights (``problem.sample_weight``, mean 1; the solvers declare ``sample_weight``) go through
the same mechanism: every row's loss and gradient -- and the offset's gradient -- is multiplied by
its weight (times its balance weight, for a two-sample loss), in the steps and in the checks'
objective alike.
"""
from __future__ import annotations

import numpy as np

from kopt.errors import DataError


class LossTerms:
    """Mini-batch loss values and gradients of ``problem.loss`` (plus the offset τ, if any)."""

    def __init__(self, problem):
        self.loss = problem.loss
        self.y = problem.y
        self.xp = problem.xp
        self.has_offset = self.loss.has_offset
        self.tau = 0.0
        self.weights = None
        if self.y is None and not self.has_offset and problem.partitions is None:
            # (on a Dask cluster the labels stay on the workers, each of which has its own LossTerms)
            raise DataError(f"loss {self.loss.name!r} needs labels and the training data has none")
        if self.loss.has_balance_weights:
            try:
                self.weights = self.xp.asarray(self.loss.balance_weights(self.y), dtype=np.float64)
            except ValueError as exc:
                raise DataError(f"loss {self.loss.name!r}: {exc}") from None
        if problem.sample_weight is not None:
            w = self.xp.asarray(problem.sample_weight, dtype=np.float64)
            self.weights = w if self.weights is None else self.weights * w

    def _label(self, rows):
        if self.has_offset:
            return self.tau
        return self.y if rows is None else self.y[self.xp.asarray(rows)]

    def _weights(self, rows, like):
        if self.weights is None:
            return None
        w = self.weights if rows is None else self.weights[self.xp.asarray(rows)]
        return w if like.ndim == 1 else w[:, None]

    def value_and_grad(self, u, rows):
        """``(mean loss, per-row gradient)`` at scores ``u`` of the rows ``rows``."""
        total, g = self.sum_and_grad(u, rows)
        return total / u.shape[0], g

    def sum_and_grad(self, u, rows):
        """``(summed loss, per-row gradient)`` at scores ``u`` of the rows ``rows`` (weighted as above).

        The sum over rows, not the mean: a batch spread over partitions sums the pieces; the
        caller divides by the batch size (float(x.sum()) / B is the bits of x.mean())."""
        lab = self._label(rows)
        val = self.loss.value(u, lab)
        g = self.loss.grad(u, lab)
        w = self._weights(rows, g)
        if w is not None:
            g = g * w
            val = val * (w if val.ndim == 1 else w[:, 0])
        return float(val.sum()), g

    def grad(self, u, rows):
        """Per-row (weighted) loss gradient at scores ``u`` of the rows ``rows``."""
        g = self.loss.grad(u, self._label(rows))
        w = self._weights(rows, g)
        return g if w is None else g * w

    def mean_value(self, u, rows):
        """Mean loss at scores ``u`` of the rows ``rows`` (None: every row; the exact objective's loss part)."""
        return self.sum_value(u, rows) / u.shape[0]

    def sum_value(self, u, rows):
        """Summed loss at scores ``u`` of the rows ``rows`` (None: every row): the checks' pieces."""
        lab = self._label(rows)
        val = self.loss.value(u, lab)
        w = self._weights(rows, val)
        if w is not None:
            val = val * w
        return float(val.sum())

    def offset_sum(self, u, rows=None):
        """Σ ∂ℓ/∂τ over the rows ``rows`` at their scores ``u`` (0 for a loss without an offset)."""
        if not self.has_offset:
            return 0.0
        g = self.loss.offset_grad(u, self.tau)
        w = self._weights(rows, g)
        return float((g if w is None else g * w).sum())

    def shift_offset(self, gamma, mean_grad):
        """τ ← τ − γ · (mean ∂ℓ/∂τ over the batch)."""
        if self.has_offset:
            self.tau -= gamma * mean_grad

    def step_offset(self, u, gamma, rows=None):
        """τ ← τ − γ · mean ∂ℓ/∂τ on the batch scores ``u`` of the rows ``rows`` (novelty detection)."""
        if self.has_offset:
            self.shift_offset(gamma, self.offset_sum(u, rows) / u.shape[0])

    @property
    def intercept(self):
        """What the decision function adds to f(x): −τ for losses with an offset, else 0."""
        return -self.tau if self.has_offset else 0.0
