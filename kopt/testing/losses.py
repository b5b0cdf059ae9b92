"""Property checks for :class:`kopt.contract.components.Loss` plugins (built-in or third-party).

Every ``check_*`` function takes a loss *instance* and test points, raises
``AssertionError`` with a message naming the loss, the property and the worst
point, and returns None.  :func:`check_loss` draws its own points and runs them all::

    from kopt.testing import check_loss
    check_loss(MyLoss(delta=0.5))          # raises AssertionError on the first violation

Conventions checked (docs/losses.md, docs/plugin-guide.md): ``conj(v, y)`` is finite on
the closed box ``conj_box(y)`` and ``+inf`` outside it (a loss with ``conj_sum_zero = True``
also needs Σ_c v_c = 0); ``grad`` is a subgradient, equal to the derivative where ℓ is
differentiable; ``curvature`` is the second derivative (diagonal of the Hessian for
multiclass losses) wherever the gradient is differentiable.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ..contract.components import Loss
from . import _samples as S
from ._variants import LOSS_VALUES, run_at_other_values

F64 = np.float64


def _fail(loss, what, bad, /, **arrays):
    """Raise AssertionError describing the first point where ``bad`` holds.

    ``loss``, ``what`` and ``bad`` are positional-only, so any name (``loss=`` too) labels an array.
    """
    bad = np.asarray(bad)
    idx = np.argwhere(bad)[0]
    row = int(idx[0]) if idx.size else 0
    parts = []
    for k, a in arrays.items():
        a = np.asarray(a)
        val = a[row] if a.ndim >= 1 and a.shape[0] == bad.shape[0] else a
        parts.append(f"{k}={np.array2string(np.asarray(val), precision=10)}")
    raise AssertionError(f"loss {loss.name!r}: {what} ({int(bad.sum())} of {bad.size} points); first: " + ", ".join(parts))


def _rows(a):
    """Per-row reduction for (n, C) arrays; identity for (n,)."""
    return a.sum(axis=1) if a.ndim == 2 else a


def _directions(x, loss, conjugate):
    """Unit directions for finite differences: scalar 1; e_c (multiclass); e_c − e_{c+1} on Σ v = 0."""
    if x.ndim == 1:
        return [np.ones_like(x)]
    C = x.shape[1]
    eye = np.eye(C)
    if conjugate and S.sum_zero(loss):
        return [np.broadcast_to(eye[c] - eye[(c + 1) % C], x.shape) for c in range(C)]
    return [np.broadcast_to(eye[c], x.shape) for c in range(C)]


def _quotients(f, x, f0, hh, h, d):
    """One-sided and central difference quotients of f along d, and where f has a kink.

    Where the quotients at step h disagree, they are recomputed at h/100: a true kink keeps
    its jump, while a kink merely *near* x, or a Hölder-continuous derivative (|r|^p with
    p < 2 at r = 0), loses it, and the finer quotients are used instead.
    """
    fp, fm = np.asarray(f(x + hh * d), F64), np.asarray(f(x - hh * d), F64)
    right, left = (fp - f0) / h, (f0 - fm) / h
    jump = np.abs(right - left)
    kink = jump > 1e-2 * (1.0 + np.abs(right + left) / 2)
    used = h.copy()
    if np.any(kink):
        h2, hh2 = h / 100, hh / 100
        fp2, fm2 = np.asarray(f(x + hh2 * d), F64), np.asarray(f(x - hh2 * d), F64)
        right2, left2 = (fp2 - f0) / h2, (f0 - fm2) / h2
        jump2 = np.abs(right2 - left2)
        refine = kink & ~((jump2 > 0.9 * jump) & (jump2 > 1e-2 * (1.0 + np.abs(right2 + left2) / 2)))
        right, left = np.where(refine, right2, right), np.where(refine, left2, left)
        used = np.where(refine, h2, h)
        kink &= ~refine
    return left, right, 0.5 * (left + right), kink, used


def _check_derivatives(loss, f, g, H, x, dirs, label, *, expect_smooth, rtol=1e-5, atol=1e-6):
    """Compare g (a subgradient) and H (diagonal second derivative) with finite differences of f."""
    G, Hd = np.asarray(g(x), F64), np.asarray(H(x), F64)
    if G.shape != x.shape or Hd.shape != x.shape:
        raise AssertionError(f"loss {loss.name!r}: {label} gradient/curvature shapes {G.shape}, {Hd.shape} != {x.shape}")
    if np.any(Hd < 0):
        _fail(loss, f"{label} curvature is negative (ℓ must be convex)", _rows(Hd < 0) > 0, x=x, curvature=Hd)
    scale = 1.0 + (np.abs(x).max(axis=1) if x.ndim == 2 else np.abs(x))
    h = 1e-6 * scale
    hh = h[:, None] if x.ndim == 2 else h
    f0 = np.asarray(f(x), F64)
    for d in dirs:
        gd, hd = _rows(G * d), _rows(Hd * d * d)
        left, right, central, kink, used = _quotients(f, x, f0, hh, h, d)
        slack = atol + 1e-8 * np.abs(f0)
        sub_bad = (gd < np.minimum(left, right) - slack) | (gd > np.maximum(left, right) + slack)
        if np.any(sub_bad):
            _fail(loss, f"{label} gradient is not a subgradient (outside the one-sided difference quotients)",
                  sub_bad, x=x, grad=gd, left=left, right=right)
        if expect_smooth and np.any(kink):
            _fail(loss, f"{label} declares smooth but has a kink", kink, x=x, left=left, right=right)
        tol = atol + rtol * np.abs(central) + 4e-16 * np.abs(f0) / used
        bad = ~kink & (np.abs(gd - central) > tol)
        if np.any(bad):  # ℓ' varying fast on [x − h, x + h] (e.g. |r|^{p−1} near 0): a 100× finer step
            fine = (np.asarray(f(x + hh * d / 100), F64) - np.asarray(f(x - hh * d / 100), F64)) / (2 * h / 100)
            bad &= np.abs(gd - fine) > atol + rtol * np.abs(fine) + 4e-14 * np.abs(f0) / h
        if np.any(bad):  # still unresolved: ℓ convex ⇒ the central quotient is ℓ'(ξ) ∈ [ℓ'(x − h), ℓ'(x + h)]
            gm_, gp_ = _rows(np.asarray(g(x - hh * d), F64) * d), _rows(np.asarray(g(x + hh * d), F64) * d)
            unresolved = np.abs(gp_ - gm_) > 10 * tol
            bracketed = (central >= np.minimum(gm_, gp_) - tol) & (central <= np.maximum(gm_, gp_) + tol)
            bad &= ~(unresolved & bracketed)
        if np.any(bad):
            _fail(loss, f"{label} gradient differs from finite differences", bad, x=x, grad=gd, fd=central)
        gp, gm = _rows(np.asarray(g(x + hh * d), F64) * d), _rows(np.asarray(g(x - hh * d), F64) * d)
        gr, gl = (gp - gd) / h, (gd - gm) / h
        hp, hm = _rows(np.asarray(H(x + hh * d), F64) * d * d), _rows(np.asarray(H(x - hh * d), F64) * d * d)
        # ℓ'' about constant over [x − h, x + h] (not near a singularity such as |r|^{p−2} at r = 0)
        resolved = (np.abs(hp - hm) <= 1e-2 * (1.0 + np.abs(hd))) & (np.abs(hp + hm - 2 * hd) <= 1e-2 * (1.0 + np.abs(hd)))
        smooth_g = ~kink & resolved & (np.abs(gr - gl) <= 1e-2 * (1.0 + np.abs(gr + gl))) & np.isfinite(hd)
        fd2 = (gp - gm) / (2 * h)
        bad = smooth_g & (np.abs(hd - fd2) > 10 * atol + 1e-4 * np.abs(fd2))
        if np.any(bad):
            fine = (_rows(np.asarray(g(x + hh * d / 100), F64) * d) - _rows(np.asarray(g(x - hh * d / 100), F64) * d)) / (2 * h / 100)
            bad &= np.abs(hd - fine) > 10 * atol + 1e-4 * np.abs(fine) + 4e-14 * np.abs(gd) / h
        if np.any(bad):
            _fail(loss, f"{label} curvature differs from finite differences of the gradient", bad,
                  x=x, curvature=hd, fd=fd2)


def check_gradients(loss: Loss, u: np.ndarray, y: np.ndarray) -> None:
    """``grad`` is a subgradient and equals dℓ/du where ℓ is differentiable; ``curvature`` is d²ℓ/du².

    Parameters
    ----------
    loss : Loss
        The loss instance.
    u : array
        Scores (``(n,)``, or ``(n, C)`` for a multiclass loss).
    y : array
        Labels encoded for the loss's target.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> square = registry().get("loss", "square")()
    >>> u, y = np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.0])
    >>> kt.check_gradients(square, u, y)
    """
    u = np.asarray(u, F64)
    _check_derivatives(loss, lambda a: loss.value(a, y), lambda a: loss.grad(a, y),
                       lambda a: loss.curvature(a, y), u, _directions(u, loss, False), "primal",
                       expect_smooth=loss.smooth)


def check_conj_gradients(loss: Loss, v: np.ndarray, y: np.ndarray) -> None:
    """``conj_grad`` and ``conj_curvature`` match finite differences of ``conj`` at interior points v.

    Parameters
    ----------
    loss : Loss
        The loss instance, with a conjugate.
    v : array
        Points inside the conjugate's domain.
    y : array
        Labels encoded for the loss's target.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> square = registry().get("loss", "square")()
    >>> u, y = np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.0])
    >>> kt.check_conj_gradients(square, u, y)
    """
    v = np.asarray(v, F64)
    if not np.all(np.isfinite(np.asarray(loss.conj(v, y), F64))):
        raise AssertionError(f"loss {loss.name!r}: check_conj_gradients needs points inside the domain")
    _check_derivatives(loss, lambda a: loss.conj(a, y), lambda a: loss.conj_grad(a, y),
                       lambda a: loss.conj_curvature(a, y), v, _directions(v, loss, True), "conjugate",
                       expect_smooth=False)


def check_convexity(loss: Loss, u1: np.ndarray, u2: np.ndarray, y: np.ndarray) -> None:
    """Midpoint convexity: ℓ((u1 + u2)/2) ≤ (ℓ(u1) + ℓ(u2))/2.

    Parameters
    ----------
    loss : Loss
        The loss instance.
    u1, u2 : array
        Two sets of scores.
    y : array
        Labels encoded for the loss's target.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> square = registry().get("loss", "square")()
    >>> u, y = np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.0])
    >>> kt.check_convexity(square, u, u + 1.0, y)
    """
    u1, u2 = np.asarray(u1, F64), np.asarray(u2, F64)
    a, b = loss.value(u1, y), loss.value(u2, y)
    m = loss.value(0.5 * (u1 + u2), y)
    bad = m > 0.5 * (a + b) + 1e-9 * (1 + np.abs(a) + np.abs(b))
    if np.any(bad):
        _fail(loss, "value is not convex in u (midpoint test)", bad, u1=u1, u2=u2, mid=m, chord=0.5 * (a + b))


def check_bounds(loss: Loss, u: np.ndarray, y: np.ndarray) -> None:
    """``abs(grad)`` ≤ ``grad_bound()``, and the gradient is ``smoothness()``-Lipschitz, where the loss declares them.

    Parameters
    ----------
    loss : Loss
        The loss instance.
    u : array
        Scores (``(n,)``, or ``(n, C)`` for a multiclass loss).
    y : array
        Labels encoded for the loss's target.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> square = registry().get("loss", "square")()
    >>> u, y = np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.0])
    >>> kt.check_bounds(square, u, y)
    """
    u = np.asarray(u, F64)
    g = np.asarray(loss.grad(u, y), F64)
    M = loss.grad_bound()
    if M is not None:
        bad = np.abs(g) > M * (1 + 1e-12) + 1e-12
        if np.any(bad):
            _fail(loss, f"|grad| exceeds grad_bound() = {M}", _rows(bad) > 0, u=u, grad=g)
    L = loss.smoothness()
    if L is not None:
        if not loss.smooth:
            raise AssertionError(f"loss {loss.name!r}: smoothness() = {L} but smooth is False")
        u2 = u[::-1].copy()
        g2 = np.asarray(loss.grad(u2, y), F64)
        norm = (lambda a: np.sqrt(_rows(a * a))) if u.ndim == 2 else np.abs
        bad = norm(g - g2) > L * norm(u - u2) * (1 + 1e-9) + 1e-12
        if np.any(bad):
            _fail(loss, f"grad is not smoothness() = {L} Lipschitz", bad, u=u, u2=u2, grad=g, grad2=g2)


def check_fenchel_young(loss: Loss, u: np.ndarray, y: np.ndarray, v: np.ndarray) -> None:
    """Fenchel-Young: ℓ(u) + ℓ*(v) ≥ ⟨u, v⟩ for v in the domain, with equality at v = grad(u).

    Parameters
    ----------
    loss : Loss
        The loss instance.
    u : array
        Scores (``(n,)``, or ``(n, C)`` for a multiclass loss).
    y : array
        Labels encoded for the loss's target.
    v : array
        Points of the conjugate's domain.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> square = registry().get("loss", "square")()
    >>> u, y = np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.0])
    >>> kt.check_fenchel_young(square, u, y, np.array([0.5, -0.5, 1.0]))
    """
    u, v = np.asarray(u, F64), np.asarray(v, F64)
    lu = np.asarray(loss.value(u, y), F64)
    gap = lu + np.asarray(loss.conj(v, y), F64) - _rows(u * v)
    tol = 1e-9 * (1 + np.abs(lu) + np.abs(_rows(u * v)))
    if np.any(gap < -tol):
        _fail(loss, "Fenchel–Young inequality ℓ(u) + ℓ*(v) ≥ uv fails", gap < -tol, u=u, v=v, gap=gap)
    g = np.asarray(loss.grad(u, y), F64)
    eq = lu + np.asarray(loss.conj(g, y), F64) - _rows(u * g)
    tol = 1e-9 * (1 + np.abs(lu) + np.abs(_rows(u * g)))
    if np.any(~(np.abs(eq) <= tol)):
        _fail(loss, "Fenchel–Young equality ℓ(u) + ℓ*(ℓ'(u)) = u ℓ'(u) fails", ~(np.abs(eq) <= tol),
              u=u, grad=g, gap=eq)


def check_conj_domain(loss: Loss, y: np.ndarray, rng: np.random.Generator | None = None, n_classes: int = 3) -> None:
    """ℓ* is finite on the closed box ``conj_box(y)`` (with Σ v = 0 where declared) and +inf outside.

    Parameters
    ----------
    loss : Loss
        The loss instance, with a conjugate.
    y : array
        Labels encoded for the loss's target.
    rng : numpy.random.Generator, optional
        Where the random points come from (seed 0 by default).
    n_classes : int, optional
        Classes, for a multiclass loss.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> square = registry().get("loss", "square")()
    >>> u, y = np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.0])
    >>> kt.check_conj_domain(square, y)
    """
    rng = rng or np.random.default_rng(0)
    lo, hi = S.conj_box(loss, y, n_classes)
    if np.any(lo > hi):
        _fail(loss, "conj_box has lo > hi", _rows(lo > hi) > 0, lo=lo, hi=hi)
    v = S.sample_duals(loss, y, rng, n_classes)
    c = np.asarray(loss.conj(v, y), F64)
    if not np.all(np.isfinite(c)):
        _fail(loss, "conj is not finite inside conj_box", ~np.isfinite(c), v=v, conj=c, lo=lo, hi=hi)
    for step in (1e-3, 0.5, 10.0):
        for side, edge, sign in (("below lo", lo, -1.0), ("above hi", hi, 1.0)):
            fin = np.isfinite(edge)
            if not fin.any():
                continue
            w = np.clip(np.abs(edge), 1.0, None) * step
            out = np.where(fin, edge + sign * w, v)
            if S.sum_zero(loss):  # leave the box in one coordinate, keep Σ v = 0 via another
                col = np.argmax(fin, axis=1)
                out = v.copy()
                rows = np.arange(v.shape[0])
                out[rows, col] = (edge + sign * w)[rows, col]
                out[rows, (col + 1) % v.shape[1]] -= out[rows, col] - v[rows, col]
            c = np.asarray(loss.conj(out, y), F64)
            if out.ndim == 2:
                c = np.broadcast_to(c, (out.shape[0],))
                moved = fin.any(axis=1)
            else:
                moved = fin
            bad = moved & ~np.isposinf(c)
            if np.any(bad):
                _fail(loss, f"conj must be +inf {side} of conj_box", bad, v=out, conj=c, lo=lo, hi=hi)
    if S.sum_zero(loss):
        off = v + 1e-2 * np.eye(v.shape[1])[0]
        c = np.asarray(loss.conj(off, y), F64)
        if np.any(~np.isposinf(c)):
            _fail(loss, "conj must be +inf off the hyperplane Σ v = 0", ~np.isposinf(c), v=off, conj=c)


def check_biconjugate(loss: Loss, u: np.ndarray, y: np.ndarray, *, grid: int = 4001,
                      rtol: float = 1e-5) -> bool | None:
    """ℓ**(u) = sup over v in the domain of uv − ℓ*(v), computed on a grid, equals ℓ(u).

    Parameters
    ----------
    loss : Loss
        The loss instance.
    u : array
        Scores (``(n,)``, or ``(n, C)`` for a multiclass loss).
    y : array
        Labels encoded for the loss's target.
    grid : int, optional
        Points of the grid over the conjugate's domain.
    rtol : float, optional
        Relative tolerance.

    Returns
    -------
    bool or None
        False where the check does not apply (a multiclass loss without a sum-zero domain, or more than three classes); None when it passed.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> square = registry().get("loss", "square")()
    >>> u, y = np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.0])
    >>> kt.check_biconjugate(square, u, y)
    """
    u = np.asarray(u, F64)
    lu = np.asarray(loss.value(u, y), F64)
    if u.ndim == 2:
        if not S.sum_zero(loss) or u.shape[1] > 3:
            return False  # grid sup only over the (≤ 2-dimensional) shifted simplex
        lo, _ = S.conj_box(loss, y, u.shape[1])
        P = S.simplex_grid(u.shape[1], 120)
        u, y, lu = u[:8], np.asarray(y)[:8], lu[:8]
        best = np.full(u.shape[0], -np.inf)
        for i in range(u.shape[0]):
            V = P + lo[i]
            c = np.asarray(loss.conj(V, np.full(V.shape[0], np.asarray(y)[i])), F64)
            best[i] = np.max(V @ u[i] - c)
        tol = 5e-3 * (1 + np.abs(lu))
    else:
        lo, hi = S.conj_box(loss, y)
        g = np.asarray(loss.grad(u, y), F64)
        w = 1.0 + np.abs(g)
        a, b = np.maximum(lo, g - w), np.minimum(hi, g + w)
        t = np.linspace(0.0, 1.0, grid)
        V = a[:, None] + (b - a)[:, None] * t[None, :]
        fine = 2.0 ** -np.arange(1, 60)
        # the sup of a differentiable loss is at v = ℓ'(u): points close to it on both sides, so a maximiser near an
        # end of the domain (u = −8 for the logistic: v ≈ 3e-4) is not missed by the grid's spacing.  Every point is
        # in the domain, so each only tightens the lower bound sup_grid ≤ ℓ**(u)
        at_g = np.clip(g[:, None] + np.concatenate([-fine, [0.0], fine])[None, :] * w[:, None], a[:, None], b[:, None])
        near = [a[:, None] + (b - a)[:, None] * fine, b[:, None] - (b - a)[:, None] * fine,
                np.where((a <= 0) & (b >= 0), 0.0, a)[:, None], at_g]
        V = np.hstack([V, *near])
        Y = np.broadcast_to(np.asarray(y, F64)[:, None], V.shape).copy()
        c = np.asarray(loss.conj(V, Y), F64)
        best = np.max(u[:, None] * V - c, axis=1)
        tol = rtol * (1 + np.abs(lu))
    bad = ~(np.abs(best - lu) <= tol)
    if np.any(bad):
        _fail(loss, "numeric biconjugate sup_v uv − ℓ*(v) differs from ℓ(u)", bad, u=u, loss=lu, biconjugate=best)


def check_prox(loss: Loss, u: np.ndarray, y: np.ndarray, steps: tuple[float, ...] = (0.1, 1.0, 10.0)) -> bool:
    """``prox(u, y, s)`` is argmin_z ℓ(z) + (z − u)²/(2s), against a vectorized golden-section reference.

    Parameters
    ----------
    loss : Loss
        The loss instance.
    u : array
        Scores (``(n,)``, or ``(n, C)`` for a multiclass loss).
    y : array
        Labels encoded for the loss's target.
    steps : tuple of float, optional
        The step sizes s tried.

    Returns
    -------
    bool
        True where the loss has a prox and it was checked; False where ``prox`` raises ``NotImplementedError``.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> square = registry().get("loss", "square")()
    >>> u, y = np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.0])
    >>> kt.check_prox(square, u, y)
    True
    """
    u = np.asarray(u, F64)
    for s in steps:
        try:
            z = np.asarray(loss.prox(u, y, s), F64)
        except NotImplementedError:
            return False
        if u.ndim == 2:
            continue

        def phi(t, s=s):
            return np.asarray(loss.value(t, y), F64) + (t - u) ** 2 / (2 * s)

        R = 4.0 * (1.0 + s) * (1.0 + np.abs(u) + np.abs(np.asarray(y, F64)))
        lo, hi = u - R, u + R
        r = (np.sqrt(5.0) - 1) / 2
        for _ in range(100):
            c, d = hi - r * (hi - lo), lo + r * (hi - lo)
            left = phi(c) <= phi(d)
            hi, lo = np.where(left, d, hi), np.where(left, lo, c)
        ref = 0.5 * (lo + hi)
        bad = ~(np.abs(z - ref) <= 1e-6 * (1 + np.abs(ref))) & ~(phi(z) <= phi(ref) + 1e-12 * (1 + np.abs(phi(ref))))
        if np.any(bad):
            _fail(loss, f"prox(step={s}) is not the minimiser of ℓ(z) + (z − u)²/(2 step)", bad, u=u, prox=z, argmin=ref)
    return True


def check_dtypes(loss: Loss, u: np.ndarray, y: np.ndarray, v: np.ndarray | None = None) -> None:
    """float32 inputs give float32 outputs of the same shape, close to the float64 results.

    Parameters
    ----------
    loss : Loss
        The loss instance.
    u : array
        Scores (``(n,)``, or ``(n, C)`` for a multiclass loss).
    y : array
        Labels encoded for the loss's target.
    v : array, optional
        Points of the conjugate's domain, to check the conjugate's methods too.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> square = registry().get("loss", "square")()
    >>> u, y = np.array([-1.0, 0.5, 2.0]), np.array([0.0, 1.0, 1.0])
    >>> kt.check_dtypes(square, u, y)
    """
    y = np.asarray(y)
    if np.issubdtype(y.dtype, np.floating):
        y = y.astype(np.float32).astype(F64)
    u32 = np.asarray(u, np.float32)
    calls = [("value", u32, u32.astype(F64)), ("grad", u32, u32.astype(F64)), ("curvature", u32, u32.astype(F64))]
    if v is not None and loss.has_conjugate:
        v32 = np.asarray(v, np.float32)
        v64 = v32.astype(F64)
        if S.sum_zero(loss):  # float32 rounding leaves Σ v ≈ 1e-8; the float64 reference needs Σ v = 0
            v64 = v64 - v64.mean(axis=1, keepdims=True)
        calls += [("conj", v32, v64), ("conj_grad", v32, v64), ("conj_curvature", v32, v64)]
    for meth, x32, x64 in calls:
        ref = np.asarray(getattr(loss, meth)(x64, y), F64)
        out = getattr(loss, meth)(x32, y)
        if out.dtype != np.float32:
            raise AssertionError(f"loss {loss.name!r}: {meth} turned float32 input into {out.dtype}")
        if out.shape != ref.shape:
            raise AssertionError(f"loss {loss.name!r}: {meth} float32 shape {out.shape} != float64 {ref.shape}")
        o = out.astype(F64)
        # at a jump of the method, float32 rounding of the residual may land on either side
        dx = 1e-6 * (1 + np.abs(x64))
        same = np.zeros(o.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            for r in (ref, getattr(loss, meth)(x64 - dx, y), getattr(loss, meth)(x64 + dx, y)):
                r = np.asarray(r, F64)
                same |= (o == r) | (np.abs(o - r) <= 1e-4 * (1 + np.abs(r)))
        if np.any(~same):
            _fail(loss, f"{meth} in float32 is inaccurate", _rows(~same) > 0 if same.ndim == 2 else ~same,
                  x=x64, float32=o, float64=ref)


def check_labels_validation(loss: Loss, y_good: np.ndarray, n_classes: int = 3) -> bool:
    """Encoded labels pass ``check_labels``; wrongly encoded ones raise ``kopt.DataError``.

    Parameters
    ----------
    loss : Loss
        The loss instance.
    y_good : array
        Labels encoded for the loss's target.
    n_classes : int, optional
        Classes, for a multiclass loss.

    Returns
    -------
    bool
        True where checked; False for an unlabeled loss (nothing to check).

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> hinge = registry().get("loss", "hinge")()
    >>> kt.check_labels_validation(hinge, np.array([1.0, -1.0, 1.0]))
    True
    """
    if loss.target == "unlabeled":
        return False
    from ..errors import DataError

    loss.check_labels(y_good)
    bad = {"binary": [1.0, 0.0], "multiclass": [0, 1.5], "two_sample": [0.0, 2.0], "real": [0.0, np.nan]}
    try:
        loss.check_labels(np.asarray(bad[loss.target]))
    except DataError:
        return True
    raise AssertionError(f"loss {loss.name!r}: check_labels accepted {bad[loss.target]} for target {loss.target!r}")


def check_interface(loss: Loss) -> None:
    """The declared attributes: ``name``, ``target``, the flags, a valid parameter schema, ``n_outputs``.

    Parameters
    ----------
    loss : Loss
        The loss instance.
    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kt.check_interface(registry().get("loss", "huber")())
    """
    import jsonschema

    if not isinstance(loss.name, str) or not loss.name:
        raise AssertionError(f"{type(loss).__name__}: name must be a non-empty string")
    if loss.target not in S.TARGETS:
        raise AssertionError(f"loss {loss.name!r}: target {loss.target!r} is not one of {S.TARGETS}")
    for flag in ("smooth", "has_conjugate"):
        if not isinstance(getattr(loss, flag), bool):
            raise AssertionError(f"loss {loss.name!r}: {flag} must be a bool")
    jsonschema.Draft202012Validator.check_schema(type(loss).schema())
    want = 3 if S.is_multiclass(loss) else 1
    if loss.n_outputs(3) != want:
        raise AssertionError(f"loss {loss.name!r}: n_outputs(3) = {loss.n_outputs(3)}, expected {want}")


CHECKS = ("interface", "labels", "convexity", "gradients", "bounds", "conj_domain", "fenchel_young",
          "biconjugate", "conj_gradients", "conj_edges", "prox", "dtypes")


def check_loss(loss: Loss, labels: np.ndarray | None = None, *, n: int = 40, n_classes: int = 3, seed: int = 0,
               skip: Iterable[str] = (), vary: bool = True) -> list[str]:
    """Run every loss check on points drawn from ``seed``; returns the names of the checks run.

    The checks are :data:`~kopt.testing.CHECKS`; those a loss does not declare (a conjugate, a prox, a gradient
    bound) are not run.

    Parameters
    ----------
    loss : Loss
        The loss instance.
    labels : array, optional
        Labels encoded for the loss's target; drawn when omitted.
    n : int, optional
        Points drawn.
    n_classes : int, optional
        Classes, for a multiclass loss.
    seed : int, optional
        The points' seed.
    skip : iterable of str, optional
        Names from :data:`~kopt.testing.CHECKS` to leave out.
    vary : bool, optional
        Repeat the checks on the loss rebuilt with each numeric parameter that is 1 set to the values of
        :data:`~kopt.testing.LOSS_VALUES`.

    Returns
    -------
    list of str
        The checks run, in order.

    Raises
    ------
    AssertionError
        A check fails; the message names the loss, the check and the first offending point.
    ValueError
        ``skip`` names an unknown check.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> ran = kt.check_loss(registry().get("loss", "hinge")())
    >>> ran[:4]
    ['interface', 'labels', 'convexity', 'gradients']
    """
    unknown = set(skip) - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown checks {sorted(unknown)}; known: {', '.join(CHECKS)}")
    ran = _check_loss(loss, labels, n, n_classes, seed, skip)
    if vary:
        run_at_other_values(loss, LOSS_VALUES, lambda other: _check_loss(other, labels, n, n_classes, seed, skip),
                            "check_loss")
    return ran


def _check_loss(loss, labels, n, n_classes, seed, skip):
    rng = np.random.default_rng(seed)
    y = S.sample_labels(loss, n, rng, n_classes) if labels is None else np.asarray(labels)
    u = S.sample_scores(loss, y, rng, n_classes)
    u2 = S.sample_scores(loss, y, rng, n_classes)
    v = S.sample_duals(loss, y, rng, n_classes) if loss.has_conjugate else None
    inner = S.sample_duals(loss, y, rng, n_classes, interior=0.05) if loss.has_conjugate else None
    steps = [
        ("interface", lambda: check_interface(loss)),
        ("labels", lambda: check_labels_validation(loss, y, n_classes)),
        ("convexity", lambda: check_convexity(loss, u, u2, y)),
        ("gradients", lambda: check_gradients(loss, u, y)),
        ("bounds", lambda: check_bounds(loss, u, y)),
    ]
    if loss.has_conjugate:
        steps += [
            ("conj_domain", lambda: check_conj_domain(loss, y, rng, n_classes)),
            ("fenchel_young", lambda: check_fenchel_young(loss, u, y, v)),
            ("biconjugate", lambda: check_biconjugate(loss, u, y)),
            ("conj_gradients", lambda: check_conj_gradients(loss, inner, y)),
            ("conj_edges", lambda: check_conj_edges(loss, y, n_classes)),
        ]
    steps += [("prox", lambda: check_prox(loss, u, y)),
              ("dtypes", lambda: check_dtypes(loss, u, y, inner))]
    ran = []
    for name, fn in steps:
        if name not in skip and fn() is not False:
            ran.append(name)
    return ran


def check_conj_edges(loss: Loss, y: np.ndarray, n_classes: int = 3) -> bool | None:
    """In float32, ℓ* stays finite approaching every finite edge of its box and matches float64 there.

    Parameters
    ----------
    loss : Loss
        The loss instance, with a conjugate.
    y : array
        Labels encoded for the loss's target.
    n_classes : int, optional
        Classes, for a multiclass loss.

    Returns
    -------
    bool or None
        False where the check does not apply (a sum-zero domain, or no finite box edge); None when it passed.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kt.check_conj_edges(registry().get("loss", "hinge")(), np.array([1.0, -1.0]))
    """
    lo, hi = S.conj_box(loss, y, n_classes)
    if S.sum_zero(loss) or lo.ndim != 1:
        return False
    both = np.isfinite(lo) & np.isfinite(hi)
    if not both.any():
        return False
    lo32, hi32, yb = lo[both].astype(np.float32), hi[both].astype(np.float32), np.asarray(y)[both]
    width = (hi32 - lo32)[:, None]
    t = (2.0 ** -np.arange(1, 40)).astype(np.float32)[None, :]
    pts = np.hstack([lo32[:, None] + width * t, hi32[:, None] - width * t, lo32[:, None], hi32[:, None],
                     np.nextafter(lo32, hi32)[:, None], np.nextafter(hi32, lo32)[:, None]]).astype(np.float32)
    Y = np.broadcast_to(yb[:, None], pts.shape).copy()
    c32 = np.asarray(loss.conj(pts, Y))
    c64 = np.asarray(loss.conj(pts.astype(F64), Y), F64)
    if not np.all(np.isfinite(c32)):
        _fail(loss, "float32 conj is not finite near a box edge", ~np.isfinite(c32).all(axis=1), v=pts, conj=c32)
    # the scale of the terms of a conjugate (v², vy, ε|v|, entropies), so the tolerance is relative
    # where ℓ* itself is tiny: bEnt(a) ≈ a log a at a = 2⁻³⁹ must keep its digits (Zhang & Lai 2025, Sec. 3.2)
    P = pts.astype(F64)
    terms = np.abs(P) * (np.abs(P) + np.abs(np.asarray(Y, F64)) + 1)
    f32 = np.finfo(np.float32)
    bad = np.abs(c32.astype(F64) - c64) > 64 * f32.eps * (np.abs(c64) + terms) + f32.tiny  # tiny: subnormal points
    if np.any(bad):
        _fail(loss, "float32 conj is inaccurate near a box edge", bad.any(axis=1), v=pts, float32=c32, float64=c64)
