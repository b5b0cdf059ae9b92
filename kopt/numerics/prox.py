"""Proximal operators for loss plugins: a safeguarded Newton prox that works for any differentiable convex loss.

A loss's ``prox(u, y, step)`` is argmin_z ℓ(y, z) + (z − u)²/(2 step).  Losses with a closed
form implement it directly; any other loss with ``grad`` and ``curvature`` can return
:func:`newton_prox`::

    from kopt.numerics.prox import newton_prox

    class LogCosh(Loss):
        ...
        def prox(self, u, y, step):
            return newton_prox(self, u, y, step)
"""
from __future__ import annotations

from .backend import get_namespace

__all__ = ["newton_prox"]


def newton_prox(loss, u, y, step, *, max_iter=60):
    """argmin_z ℓ(y, z) + (z − u)²/(2 step), elementwise, by bracketed Newton steps.

    The minimiser is the root of g(z) = ℓ'(z) + (z − u)/step.  Because ℓ' is monotone
    the root lies between ``u`` and ``u − step ℓ'(u)``; Newton steps that leave that
    bracket are replaced by bisection, so the iteration converges for every
    differentiable convex loss, including those with unbounded curvature.

    Parameters
    ----------
    loss : kopt.contract.components.Loss
        Any loss with ``grad(u, y)`` and ``curvature(u, y)`` (elementwise in ``u``).
    u : array
        Points (NumPy or CuPy, floating); the result has their dtype and shape.
    y : array or scalar
        The labels passed on to ``loss.grad`` and ``loss.curvature``.
    step : float or array
        Step size > 0 (broadcast against ``u``).
    max_iter : int
        Upper bound on the Newton/bisection iterations (they stop earlier once no point moves).

    Returns
    -------
    array
        The prox, same shape and dtype as ``u``.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.contract.registry import registry
    >>> loss = registry().get("loss", "logistic")()
    >>> z = newton_prox(loss, np.array([0.0, 2.0]), np.array([1.0, -1.0]), 1.0)
    """
    xp = get_namespace(u)
    step = xp.asarray(step, dtype=u.dtype)
    g0 = loss.grad(u, y)
    lo = xp.minimum(u, u - step * g0)
    hi = xp.maximum(u, u - step * g0)
    z = 0.5 * (lo + hi)
    for _ in range(max_iter):
        g = loss.grad(z, y) + (z - u) / step
        lo = xp.where(g < 0, z, lo)
        hi = xp.where(g > 0, z, hi)
        zn = z - g / (loss.curvature(z, y) + 1.0 / step)
        inside = (zn > lo) & (zn < hi) & xp.isfinite(zn)
        z_new = xp.where(g == 0, z, xp.where(inside, zn, 0.5 * (lo + hi)))
        if bool(xp.all(z_new == z)):
            break
        z = z_new
    return z
