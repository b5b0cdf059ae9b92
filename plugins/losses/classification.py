"""Binary classification losses ℓ(y, u), y ∈ {−1, +1}, with conjugates (Zhang & Lai 2025, Table 2).

With s = y u and b = v y (so b ≤ 0 on every domain below):

=============  ======================  =====================  ============
loss           ℓ(y, u)                 ξ*_y(v)                domain
=============  ======================  =====================  ============
hinge          max(0, 1 − s)           b                      −1 ≤ b ≤ 0
squared_hinge  max(0, 1 − s)²/2        v²/2 + b               b ≤ 0
logistic       log(1 + e^{−s})         bEnt(−b)               −1 ≤ b ≤ 0
=============  ======================  =====================  ============
"""
from __future__ import annotations

import numpy as np

from kopt.numerics.backend import get_namespace

from ._common import BuiltinLoss, as_float, float_dtype, inf_outside, outside, sigmoid, xlogx


class _BinaryLoss(BuiltinLoss):
    """Shared label handling: y ∈ {−1, +1} cast to the dtype of u."""

    target = "binary"
    has_conjugate = True

    def _y(self, y, like):
        return as_float(get_namespace(like), y, like)

    def _box(self, y, bounded):
        """lo/hi of {−1 ≤ vy ≤ 0} (bounded) or {vy ≤ 0}: y = +1 → v ≤ 0, y = −1 → v ≥ 0."""
        xp = get_namespace(y)
        y = as_float(xp, y, y)
        zero = xp.zeros(y.shape, dtype=y.dtype)
        far = -y if bounded else xp.where(y > 0, -np.inf, np.inf).astype(y.dtype)
        return xp.minimum(zero, far), xp.maximum(zero, far)

    def _nan_outside(self, out, v, y, bounded=True):
        xp = get_namespace(v)
        lo, hi = self._box(y, bounded)
        return xp.where(outside(xp, v, lo, hi), xp.asarray(np.nan, dtype=out.dtype), out)


class HingeLoss(_BinaryLoss):
    """ℓ = max(0, 1 − yu) (L1-SVM); ξ*_y(v) = vy on −1 ≤ vy ≤ 0."""

    name = "hinge"
    summary = "hinge max(0, 1 − yu) (L1-SVC)"
    smooth = False

    def value(self, u, y):
        xp = get_namespace(u)
        return xp.maximum(1 - self._y(y, u) * u, 0)

    def grad(self, u, y):
        """−y where yu < 1, else 0 (the subgradient 0 at the kink yu = 1)."""
        xp = get_namespace(u)
        y = self._y(y, u)
        return xp.where(y * u < 1, -y, xp.zeros_like(u))

    def curvature(self, u, y):
        return get_namespace(u).zeros_like(u)

    def grad_bound(self):
        return 1.0

    def conj(self, v, y):
        xp = get_namespace(v)
        lo, hi = self._box(self._y(y, v), True)
        return inf_outside(xp, v * self._y(y, v), v, lo, hi)

    def conj_grad(self, v, y):
        y = self._y(y, v)
        return self._nan_outside(y * get_namespace(v).ones_like(v), v, y)

    def conj_curvature(self, v, y):
        return self._nan_outside(get_namespace(v).zeros_like(v), v, self._y(y, v))

    def conj_box(self, y):
        return self._box(y, True)

    def prox(self, u, y, step):
        """In t = yz, w = yu: t = w if w ≥ 1; w + step if w ≤ 1 − step; else 1."""
        xp = get_namespace(u)
        y = self._y(y, u)
        w = y * u
        t = xp.where(w >= 1, w, xp.where(w <= 1 - step, w + step, xp.ones_like(w)))
        return y * t


class SquaredHingeLoss(_BinaryLoss):
    """ℓ = max(0, 1 − yu)²/2 (L2-SVM); ξ*_y(v) = v²/2 + vy on vy ≤ 0."""

    name = "squared_hinge"
    summary = "squared hinge max(0, 1 − yu)²/2 (L2-SVC)"
    smooth = True

    def value(self, u, y):
        xp = get_namespace(u)
        m = xp.maximum(1 - self._y(y, u) * u, 0)
        return 0.5 * m * m

    def grad(self, u, y):
        xp = get_namespace(u)
        y = self._y(y, u)
        return -y * xp.maximum(1 - y * u, 0)

    def curvature(self, u, y):
        """1 where yu < 1, else 0."""
        return (self._y(y, u) * u < 1).astype(float_dtype(u))

    def smoothness(self):
        return 1.0

    def conj(self, v, y):
        xp = get_namespace(v)
        y = self._y(y, v)
        lo, hi = self._box(y, False)
        return inf_outside(xp, 0.5 * v * v + v * y, v, lo, hi)

    def conj_grad(self, v, y):
        y = self._y(y, v)
        return self._nan_outside(v + y, v, y, False)

    def conj_curvature(self, v, y):
        return self._nan_outside(get_namespace(v).ones_like(v), v, self._y(y, v), False)

    def conj_box(self, y):
        return self._box(y, False)

    def prox(self, u, y, step):
        """In t = yz, w = yu: t = w if w ≥ 1, else (w + step)/(1 + step)."""
        xp = get_namespace(u)
        y = self._y(y, u)
        w = y * u
        return y * xp.where(w >= 1, w, (w + step) / (1 + step))


class LogisticLoss(_BinaryLoss):
    """ℓ = log(1 + e^{−yu}) (KLR); ξ*_y(v) = bEnt(a), a = −vy ∈ [0, 1].

    bEnt(a) = a log a + (1 − a) log(1 − a) is evaluated on m = min(a, 1 − a) (exact in
    binary floating point for a ≥ ½, Sterbenz) as m log m + (1 − m) log1p(−m): no
    cancellation at either edge, so float32 keeps full relative accuracy for a down to
    the smallest normal number and up to 1 − 2⁻²⁴ (Zhang & Lai 2025, Sec. 3.2).
    """

    name = "logistic"
    summary = "logistic log(1 + e^{−yu}) (KLR)"
    smooth = True

    def value(self, u, y):
        xp = get_namespace(u)
        return xp.logaddexp(xp.zeros_like(u), -self._y(y, u) * u)

    def grad(self, u, y):
        xp = get_namespace(u)
        y = self._y(y, u)
        return -y * sigmoid(xp, -y * u)

    def curvature(self, u, y):
        xp = get_namespace(u)
        s = self._y(y, u) * u
        return sigmoid(xp, s) * sigmoid(xp, -s)

    def grad_bound(self):
        return 1.0

    def smoothness(self):
        return 0.25

    def _m(self, v, y):
        """(a, m, sign): a = −vy, m = min(a, 1 − a) clipped into [0, ½], sign = +1 if a ≤ ½."""
        xp = get_namespace(v)
        a = -v * self._y(y, v)
        low = a <= 0.5
        m = xp.clip(xp.where(low, a, 1 - a), 0, 0.5)
        return a, m, xp.where(low, 1, -1).astype(v.dtype)

    def conj(self, v, y):
        xp = get_namespace(v)
        a, m, _ = self._m(v, y)
        ent = xlogx(xp, m) + (1 - m) * xp.log1p(-m)
        return inf_outside(xp, ent, a, xp.zeros_like(a), xp.ones_like(a))

    def conj_grad(self, v, y):
        """−y · logit(a); ∓inf at the edges a = 0, 1."""
        xp = get_namespace(v)
        y = self._y(y, v)
        a, m, sign = self._m(v, y)
        safe = xp.where(m > 0, m, xp.ones_like(m))
        logit_m = xp.where(m > 0, xp.log(safe) - xp.log1p(-m), xp.asarray(-np.inf, dtype=v.dtype))
        return self._nan_outside(-y * sign * logit_m, v, y)

    def conj_curvature(self, v, y):
        """1 / (a (1 − a)); +inf at the edges."""
        xp = get_namespace(v)
        _, m, _ = self._m(v, y)
        den = m * (1 - m)
        safe = xp.where(den > 0, den, xp.ones_like(den))
        out = xp.where(den > 0, 1 / safe, xp.asarray(np.inf, dtype=v.dtype))
        return self._nan_outside(out, v, y)

    def conj_box(self, y):
        return self._box(y, True)
