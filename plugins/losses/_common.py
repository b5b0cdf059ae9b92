"""Shared machinery of the built-in losses: label checks, dtype handling, stable helpers.

Conventions every built-in loss follows (docs/losses.md):

* ``value``/``grad``/``curvature`` are ℓ(y, u), ∂ℓ/∂u and ∂²ℓ/∂u² (the almost-everywhere
  second derivative; 0 at a kink) elementwise in ``u``; at a kink ``grad`` returns one
  subgradient.
* ``conj(v, y) = sup_u v u − ℓ(y, u)`` returns ``+inf`` outside ``conj_box(y)`` and a finite
  value on the closed box; ``conj_grad``/``conj_curvature`` are its derivatives in ``v``
  (±inf where the conjugate is vertical at a box edge).
* outputs keep the floating dtype of ``u`` (or ``v``); labels are cast to it.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.components import Loss
from kopt.numerics.prox import newton_prox

REAL_OR_BINARY = {
    "description": "labels the loss is trained on: 'real' (regression) or 'binary' ({-1,+1}, classification "
    "by regression, scored with accuracy/AUC)",
    "enum": ["real", "binary"],
    "default": "real",
}


def float_dtype(a):
    """The floating dtype results on ``a`` should have (float64 for integer input)."""
    dt = getattr(a, "dtype", None)
    if dt is not None and np.issubdtype(dt, np.floating):
        return dt
    return np.dtype(np.float64)


def as_float(xp, a, like):
    """``a`` as an array of ``like``'s floating dtype (labels, parameters)."""
    return xp.asarray(a, dtype=float_dtype(like))


def outside(xp, v, lo, hi):
    """Boolean mask of ``v`` outside the closed box ``[lo, hi]`` (nan counts as outside)."""
    return ~((v >= lo) & (v <= hi))


def inf_outside(xp, value, v, lo, hi):
    """``value`` with ``+inf`` wherever ``v`` leaves ``[lo, hi]``."""
    return xp.where(outside(xp, v, lo, hi), xp.asarray(np.inf, dtype=value.dtype), value)


def xlogx(xp, x):
    """x log x with 0 log 0 = 0 (x ≥ 0)."""
    safe = xp.where(x > 0, x, xp.ones_like(x))
    return xp.where(x > 0, x * xp.log(safe), xp.zeros_like(x))


def sigmoid(xp, z):
    """1 / (1 + e^{-z}) without overflow in either tail."""
    e = xp.exp(-xp.abs(z))
    return xp.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


class BuiltinLoss(Loss):
    """Base of the built-in losses: parameters are read from ``self.options``; the prox defaults to Newton.

    Label validation is the core's ``Loss.check_labels``.
    """

    def prox(self, u, y, step):
        """argmin_z ℓ(y, z) + (z − u)²/(2 step) by safeguarded Newton (:func:`kopt.numerics.prox.newton_prox`)."""
        return newton_prox(self, u, y, step)


class RealOrBinaryTarget:
    """Mixin for losses with the ``target`` parameter (:data:`REAL_OR_BINARY`): it sets the instance's target."""

    def __init__(self, **params):
        super().__init__(**params)
        self.target = self.options.target
