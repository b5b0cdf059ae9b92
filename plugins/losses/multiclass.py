"""Multiclass softmax (cross-entropy) loss on C outputs, with its conjugate.

ℓ(y, u) = log Σ_c e^{u_c} − u_y for u ∈ R^C and a class id y.  Its conjugate is the
negative entropy on the probability simplex shifted by the label:

    ξ*_y(v) = Σ_c p_c log p_c,   p = v + e_y,   finite iff p ≥ 0 and Σ_c v_c = 0.

The domain is the box −e_y ≤ v ≤ 1 − e_y (``conj_box``) intersected with the
hyperplane Σ_c v_c = 0; ``conj_sum_zero = True`` declares that extra affine
constraint (a dual solver keeps every row of α summing to zero).  ``conj`` accepts
|Σ v| up to ``1000·eps(dtype)`` (rounding of a solver's updates) and is +inf beyond.
"""
from __future__ import annotations

import numpy as np

from kopt.numerics.backend import get_namespace

from ._common import BuiltinLoss, float_dtype, xlogx


def _onehot(xp, y, shape, dtype):
    out = xp.zeros(shape, dtype=dtype)
    rows = xp.arange(shape[0])
    out[rows, xp.asarray(y).astype(np.int64)] = 1
    return out


class SoftmaxLoss(BuiltinLoss):
    """Multinomial logistic loss: ℓ = logsumexp(u) − u_y; C outputs, class ids 0..C−1."""

    name = "softmax"
    summary = "multiclass softmax cross-entropy (C outputs)"
    target = "multiclass"
    smooth = True
    has_conjugate = True
    #: the conjugate's domain is conj_box ∩ {Σ_c v_c = 0} (see the module docstring)
    conj_sum_zero = True

    def n_outputs(self, n_classes):
        return int(n_classes)

    # -- primal -----------------------------------------------------------------
    @staticmethod
    def _lse_p(u):
        xp = get_namespace(u)
        m = u.max(axis=1, keepdims=True)
        e = xp.exp(u - m)
        s = e.sum(axis=1, keepdims=True)
        return (m + xp.log(s))[:, 0], e / s

    def _check_shape(self, u, y):
        if u.ndim != 2:
            raise ValueError(f"softmax expects scores of shape (n, C), got shape {u.shape}")

    def value(self, u, y):
        self._check_shape(u, y)
        xp = get_namespace(u)
        lse, _ = self._lse_p(u)
        uy = xp.take_along_axis(u, xp.asarray(y).astype(np.int64)[:, None], axis=1)[:, 0]
        return lse - uy

    def grad(self, u, y):
        """softmax(u) − e_y, shape (n, C)."""
        self._check_shape(u, y)
        _, p = self._lse_p(u)
        return p - _onehot(get_namespace(u), y, u.shape, u.dtype)

    def curvature(self, u, y):
        """Diagonal of the Hessian diag(p) − p pᵀ: p_c (1 − p_c)."""
        _, p = self._lse_p(u)
        return p * (1 - p)

    def grad_bound(self):
        return 1.0

    def smoothness(self):
        return 0.5

    # -- conjugate --------------------------------------------------------------
    def _p(self, v, y):
        xp = get_namespace(v)
        p = v + _onehot(xp, y, v.shape, v.dtype)
        tol = 1000 * np.finfo(float_dtype(v)).eps
        bad = ~((p >= 0).all(axis=1) & (xp.abs(v.sum(axis=1)) <= tol))
        return p, bad

    def conj(self, v, y):
        """Σ_c p_c log p_c (p = v + e_y) per row; +inf off the shifted simplex."""
        xp = get_namespace(v)
        p, bad = self._p(v, y)
        ent = xlogx(xp, xp.maximum(p, 0)).sum(axis=1)
        return xp.where(bad, xp.asarray(np.inf, dtype=ent.dtype), ent)

    def conj_grad(self, v, y):
        """log p + 1 (−inf where p_c = 0); nan on rows off the domain.

        Only its component in the hyperplane Σ v = 0 is meaningful: directional
        derivatives along d with Σ d = 0 are ⟨conj_grad, d⟩.
        """
        xp = get_namespace(v)
        p, bad = self._p(v, y)
        safe = xp.where(p > 0, p, xp.ones_like(p))
        g = xp.where(p > 0, xp.log(safe) + 1, xp.asarray(-np.inf, dtype=v.dtype))
        return xp.where(bad[:, None], xp.asarray(np.nan, dtype=v.dtype), g)

    def conj_curvature(self, v, y):
        """Diagonal Hessian 1/p_c (+inf where p_c = 0); nan on rows off the domain."""
        xp = get_namespace(v)
        p, bad = self._p(v, y)
        safe = xp.where(p > 0, p, xp.ones_like(p))
        h = xp.where(p > 0, 1 / safe, xp.asarray(np.inf, dtype=v.dtype))
        return xp.where(bad[:, None], xp.asarray(np.nan, dtype=v.dtype), h)

    def conj_box(self, y, n_classes=None):
        """(−e_y, 1 − e_y), shape (n, C); C defaults to max(y) + 1."""
        xp = get_namespace(y)
        y = xp.asarray(y).astype(np.int64)
        C = int(n_classes) if n_classes is not None else int(y.max()) + 1
        lo = -_onehot(xp, y, (y.shape[0], C), np.float64)
        return lo, lo + 1

    def prox(self, u, y, step):
        raise NotImplementedError(
            "softmax has no elementwise prox (the C outputs are coupled); no kopt solver needs one"
        )
