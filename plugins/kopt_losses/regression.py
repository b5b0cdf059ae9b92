"""Regression losses ℓ(y, u) with their conjugates ξ*_y(v) (ALGORITHMS.md §0)."""
from __future__ import annotations

import numpy as np

from kopt.backend import get_namespace
from kopt.components import Loss


class SquareLoss(Loss):
    """ℓ(y, u) = (y − u)²/2; ξ*_y(v) = v²/2 + v y on R (kernel ridge regression)."""

    name = "square"
    summary = "squared error (KRR, GP mean)"
    target = "real"
    smooth = True
    has_conjugate = True

    def value(self, u, y):
        r = u - y
        return 0.5 * r * r

    def grad(self, u, y):
        return u - y

    def curvature(self, u, y):
        return get_namespace(u).ones_like(u)

    def smoothness(self):
        return 1.0

    def conj(self, v, y):
        return 0.5 * v * v + v * y

    def conj_grad(self, v, y):
        return v + y

    def conj_curvature(self, v, y):
        return get_namespace(v).ones_like(v)

    def conj_box(self, y):
        xp = get_namespace(y)
        return xp.full(y.shape, -np.inf), xp.full(y.shape, np.inf)

    def prox(self, u, y, step):
        return (u + step * y) / (1.0 + step)
