"""Regression losses ℓ(y, u) = ρ(u − y) with their conjugates ξ*_y(v) = ρ*(v) + v y.

Every loss here depends on the residual r = u − y only, so ξ*_y(v) = v y + ρ*(v)
(Zhang & Lai 2025, Table 2; docs/losses.md):

====================  ===========================  ================  ==============
loss                  ρ(r)                         ρ*(v)             domain of ξ*
====================  ===========================  ================  ==============
square                r²/2                         v²/2              R
huber(δ)              r²/2 if |r| ≤ δ, else        v²/2              [−δ, δ]
                      δ|r| − δ²/2
absolute              |r|                          0                 [−1, 1]
lp(p), 1/p + 1/q = 1  |r|^p / p                    |v|^q / q         R
epsilon_insensitive   max(0, |r| − ε)              ε|v|              [−1, 1]
quantile(τ)           max(−τ r, (1 − τ) r)         0                 [−τ, 1 − τ]
====================  ===========================  ================  ==============

``square`` and ``huber`` also train classifiers by regression on ±1 labels
(``target: binary``; Zhang & Lai (2025) Joker-KRR / Joker-Huber on HIGGS).
"""
from __future__ import annotations

import numpy as np

from kopt.contract.components import POSITIVE
from kopt.numerics.backend import get_namespace

from ._common import REAL_OR_BINARY, BuiltinLoss, RealOrBinaryTarget, as_float, float_dtype, inf_outside, outside


class _ResidualLoss(BuiltinLoss):
    """ℓ(y, u) = ρ(u − y): subclasses give ρ, ρ', ρ'', ρ*, (ρ*)', (ρ*)'' and the box of ρ*."""

    target = "real"
    has_conjugate = True

    def _r(self, u, y):
        return u - as_float(get_namespace(u), y, u)

    def _y(self, y, like):
        return as_float(get_namespace(like), y, like)

    def _lohi(self):
        """Bounds (lo, hi) of dom ρ* as Python floats (may be ±inf)."""
        return -np.inf, np.inf

    def conj_box(self, y):
        xp = get_namespace(y)
        lo, hi = self._lohi()
        dt = float_dtype(y)
        return xp.full(y.shape, lo, dtype=dt), xp.full(y.shape, hi, dtype=dt)

    def _mask(self, out, v, fill):
        xp = get_namespace(v)
        lo, hi = self._lohi()
        return xp.where(outside(xp, v, lo, hi), xp.asarray(fill, dtype=out.dtype), out)

    def conj(self, v, y):
        xp = get_namespace(v)
        lo, hi = self._lohi()
        return inf_outside(xp, self._rho_conj(v) + v * self._y(y, v), v, lo, hi)

    def conj_grad(self, v, y):
        return self._mask(self._rho_conj_grad(v) + self._y(y, v), v, np.nan)

    def conj_curvature(self, v, y):
        return self._mask(self._rho_conj_curv(v), v, np.nan)

    def value(self, u, y):
        return self._rho(self._r(u, y))

    def grad(self, u, y):
        return self._rho_grad(self._r(u, y))

    def curvature(self, u, y):
        return self._rho_curv(self._r(u, y))

    def prox(self, u, y, step):
        """y + prox of ρ at the residual u − y."""
        y = self._y(y, u)
        return y + self._rho_prox(u - y, step)


class _HalfSquareConjugate(_ResidualLoss):
    """ρ*(v) = v²/2: square's on R, Huber's on [−δ, δ] (the box is ``_lohi``)."""

    def _rho_conj(self, v):
        return 0.5 * v * v

    def _rho_conj_grad(self, v):
        return v

    def _rho_conj_curv(self, v):
        return get_namespace(v).ones_like(v)


class SquareLoss(RealOrBinaryTarget, _HalfSquareConjugate):
    """ℓ(y, u) = (y − u)²/2; ξ*_y(v) = v²/2 + v y on R (kernel ridge regression, GP mean)."""

    name = "square"
    summary = "squared error (KRR, GP mean; target: binary for classification by regression)"
    smooth = True
    params = {"target": REAL_OR_BINARY}

    # r²/2 is its own conjugate: ρ, ρ' and ρ'' are ρ*, (ρ*)' and (ρ*)''
    _rho = _HalfSquareConjugate._rho_conj
    _rho_grad = _HalfSquareConjugate._rho_conj_grad
    _rho_curv = _HalfSquareConjugate._rho_conj_curv

    def _rho_prox(self, w, step):
        return w / (1 + step)

    def smoothness(self):
        return 1.0


class HuberLoss(RealOrBinaryTarget, _HalfSquareConjugate):
    """Huber(δ): r²/2 for |r| ≤ δ, δ|r| − δ²/2 beyond; ξ*_y(v) = v²/2 + v y on [−δ, δ].

    Huber = ½(·)² □ δ|·| (infimal convolution), so its conjugate is the sum of
    conjugates: v²/2 plus the indicator of [−δ, δ] (Zhang & Lai 2025, Prop. 2).
    """

    name = "huber"
    summary = "Huber(δ) robust regression (target: binary for classification by regression)"
    smooth = True
    params = {
        "delta": {**POSITIVE, "default": 1.0, "description": "transition |u − y| = δ from quadratic to linear"},
        "target": REAL_OR_BINARY,
    }

    def _lohi(self):
        d = float(self.options.delta)
        return -d, d

    def _rho(self, r):
        xp = get_namespace(r)
        a = xp.abs(r)
        d = self.options.delta
        return xp.where(a <= d, 0.5 * r * r, d * a - 0.5 * d * d)

    def _rho_grad(self, r):
        d = self.options.delta
        return get_namespace(r).clip(r, -d, d)

    def _rho_curv(self, r):
        """1 for |r| ≤ δ, 0 beyond.

        At |r| = δ the second derivative jumps; 1 (the quadratic side) is the element of the
        generalized Hessian a Newton method wants there: with binary labels and δ = 1 every row
        sits on the kink at u = 0, where 0 would make the first Newton step a gradient step.
        """
        return (get_namespace(r).abs(r) <= self.options.delta).astype(float_dtype(r))

    def _rho_prox(self, w, step):
        xp = get_namespace(w)
        d = self.options.delta
        return xp.where(xp.abs(w) <= d * (1 + step), w / (1 + step), w - step * d * xp.sign(w))

    def grad_bound(self):
        return float(self.options.delta)

    def smoothness(self):
        return 1.0


class _PiecewiseLinear(_ResidualLoss):
    """ρ piecewise linear: zero curvature, and ξ* is the linear term v·y alone on its box."""

    def _rho_curv(self, r):
        return get_namespace(r).zeros_like(r)

    def _rho_conj(self, v):
        return get_namespace(v).zeros_like(v)

    def _rho_conj_grad(self, v):
        return get_namespace(v).zeros_like(v)

    def _rho_conj_curv(self, v):
        return get_namespace(v).zeros_like(v)


class AbsoluteLoss(_PiecewiseLinear):
    """ℓ = |u − y| (least absolute deviation); ξ*_y(v) = v y on [−1, 1]."""

    name = "absolute"
    summary = "absolute error |u − y| (L1 / median regression)"
    smooth = False

    def _lohi(self):
        return -1.0, 1.0

    def _rho(self, r):
        return get_namespace(r).abs(r)

    def _rho_grad(self, r):
        return get_namespace(r).sign(r)


    def _rho_prox(self, w, step):
        xp = get_namespace(w)
        return xp.sign(w) * xp.maximum(xp.abs(w) - step, 0)

    def grad_bound(self):
        return 1.0


class LpLoss(_ResidualLoss):
    """ℓ = |u − y|^p / p, p > 1; ξ*_y(v) = |v|^q / q + v y on R with 1/p + 1/q = 1.

    Differentiable for every p > 1; ℓ'' = (p − 1)|r|^{p−2} is unbounded near r = 0 when
    p < 2 and at large |r| when p > 2, so ``smoothness()`` is None unless p = 2.
    """

    name = "lp"
    summary = "L_p regression |u − y|^p / p (p > 1)"
    smooth = True
    params = {"p": {"type": "number", "exclusiveMinimum": 1, "default": 1.5, "description": "exponent p > 1"}}

    @property
    def q(self):
        """The conjugate exponent q = p / (p − 1)."""
        p = self.options.p
        return p / (p - 1.0)

    @staticmethod
    def _pow(xp, a, e):
        """|a|^e with 0^e = inf for e < 0 (no division warning)."""
        a = xp.abs(a)
        if e >= 0:
            return a**e
        safe = xp.where(a > 0, a, xp.ones_like(a))
        return xp.where(a > 0, safe**e, xp.asarray(np.inf, dtype=a.dtype))

    def _rho(self, r):
        p = self.options.p
        return self._pow(get_namespace(r), r, p) / p

    def _rho_grad(self, r):
        xp = get_namespace(r)
        return xp.sign(r) * self._pow(xp, r, self.options.p - 1)

    def _rho_curv(self, r):
        return (self.options.p - 1) * self._pow(get_namespace(r), r, self.options.p - 2)

    def _rho_conj(self, v):
        return self._pow(get_namespace(v), v, self.q) / self.q

    def _rho_conj_grad(self, v):
        xp = get_namespace(v)
        return xp.sign(v) * self._pow(xp, v, self.q - 1)

    def _rho_conj_curv(self, v):
        return (self.q - 1) * self._pow(get_namespace(v), v, self.q - 2)

    def _rho_prox(self, w, step):
        """t = sign(w) s with s ≥ 0 the root of step·s^{p−1} + s = |w| (bracketed Newton)."""
        xp = get_namespace(w)
        target = xp.abs(w)
        lo, hi = xp.zeros_like(target), target.copy()
        s = target.copy()
        p = self.options.p
        for _ in range(80):
            f = step * self._pow(xp, s, p - 1) + s - target
            lo = xp.where(f < 0, s, lo)
            hi = xp.where(f > 0, s, hi)
            fp = step * (p - 1) * self._pow(xp, s, p - 2) + 1
            sn = s - f / fp
            ok = (sn > lo) & (sn < hi) & xp.isfinite(sn)
            s_new = xp.where(f == 0, s, xp.where(ok, sn, 0.5 * (lo + hi)))
            if bool(xp.all(s_new == s)):
                break
            s = s_new
        return xp.sign(w) * s

    def smoothness(self):
        return 1.0 if self.options.p == 2 else None


class EpsilonInsensitiveLoss(_ResidualLoss):
    """ℓ = max(0, |u − y| − ε) (SVR); ξ*_y(v) = ε|v| + v y on [−1, 1]."""

    name = "epsilon_insensitive"
    summary = "ε-insensitive max(0, |u − y| − ε) (SVR)"
    smooth = False
    params = {"epsilon": {"type": "number", "minimum": 0, "default": 0.1, "description": "width ε of the tube"}}

    def _lohi(self):
        return -1.0, 1.0

    def _rho(self, r):
        xp = get_namespace(r)
        return xp.maximum(xp.abs(r) - self.options.epsilon, 0)

    def _rho_grad(self, r):
        xp = get_namespace(r)
        return xp.where(xp.abs(r) > self.options.epsilon, xp.sign(r), xp.zeros_like(r))

    def _rho_curv(self, r):
        return get_namespace(r).zeros_like(r)

    def _rho_conj(self, v):
        return self.options.epsilon * get_namespace(v).abs(v)

    def _rho_conj_grad(self, v):
        return self.options.epsilon * get_namespace(v).sign(v)

    def _rho_conj_curv(self, v):
        return get_namespace(v).zeros_like(v)

    def _rho_prox(self, w, step):
        xp = get_namespace(w)
        a, e = xp.abs(w), self.options.epsilon
        t = xp.where(a <= e, a, xp.where(a <= e + step, xp.asarray(e, dtype=w.dtype), a - step))
        return xp.sign(w) * t

    def grad_bound(self):
        return 1.0


class QuantileLoss(_PiecewiseLinear):
    """Pinball loss max(τ(y − u), (1 − τ)(u − y)); ξ*_y(v) = v y on [−τ, 1 − τ] (Dai et al. 2014, Sec. 4)."""

    name = "quantile"
    summary = "quantile (pinball) loss for the τ-quantile"
    smooth = False
    params = {"tau": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.5,
                      "description": "quantile level τ in (0, 1)"}}

    def _lohi(self):
        tau = float(self.options.tau)
        return -tau, 1.0 - tau

    def _rho(self, r):
        tau = self.options.tau
        return get_namespace(r).maximum(-tau * r, (1 - tau) * r)

    def _rho_grad(self, r):
        """1 − τ for u ≥ y, −τ below (Dai et al.'s choice at the kink)."""
        xp, tau = get_namespace(r), self.options.tau
        return xp.where(r >= 0, xp.asarray(1 - tau, dtype=r.dtype), xp.asarray(-tau, dtype=r.dtype))


    def _rho_prox(self, w, step):
        xp = get_namespace(w)
        tau = self.options.tau
        hi, lo = step * (1 - tau), -step * tau
        return xp.where(w > hi, w - hi, xp.where(w < lo, w - lo, xp.zeros_like(w)))

    def grad_bound(self):
        tau = self.options.tau
        return float(max(tau, 1 - tau))
