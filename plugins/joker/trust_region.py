"""The block subproblem of DBCD-TR: trust region + truncated CG–Steihaug under a box (Zhang & Lai 2025, Alg. 1–2).

For a block B with kernel block ``K = K_BB`` and ``gbar = (Kα)_B`` the solver
minimises, over the box ``lo ≤ a ≤ hi``,

    J(a) − J(a_0) = ½ sᵀK s + sᵀ gbar + f(a_0 + s) − f(a_0),    s = a − a_0.

Each trust-region step builds the model ``m(s) = gᵀs + ½ sᵀQ s`` with
``g = gbar + f'(a)`` and ``Q = K + diag(f''(a))`` (the Hessian capped for
logistic, Zhang & Lai (2025) Sec. 3.2) and approximately minimises it by
:func:`steihaug` under ``‖s‖ ≤ Δ`` and the box.  The step is accepted when
ρ = (actual decrease)/(model decrease) > η; Δ ← Δ/4 when ρ < ½ and
Δ ← min(2Δ, Δmax) when ρ > ¾ and the step reached the boundary
(docs/joker.md).

Two refinements over the paper's Alg. 2, both standard and both documented in
docs/joker.md:

* *Active set.*  Variables at a bound whose gradient points out of the box
  are held fixed during the CG (two-metric projection, Gafni & Bertsekas
  1984, which Zhang & Lai (2025) cites).  Without it the first CG direction of an SVM
  block with many bound-constrained α leaves the box at once and Alg. 2
  returns (almost) nothing.
* *Orthants for a conjugate kink* (SVR: f = smooth + κ|a|).  This is
  Zhang & Lai (2025) App. B.2's sign-linearised subproblem, made exact by adding the
  orthant of each variable to its box: inside the orthant κ|a| = κσa is
  linear, the model is exact, and a variable that reaches 0 re-chooses its
  orthant at the next step from the sign of its subgradient.
"""
from __future__ import annotations

import math

import numpy as np


def steihaug(Q, g, lo, hi, radius, max_iter, rtol, xp):
    """Truncated CG–Steihaug for ``min gᵀs + ½ sᵀQs`` s.t. ``‖s‖ ≤ radius``, ``lo ≤ s ≤ hi``.

    Parameters
    ----------
    Q : array (m, m), symmetric positive semidefinite.
    g : array (m,)
    lo, hi : arrays (m,) with ``lo ≤ 0 ≤ hi``.
    radius : float
    max_iter : int
    rtol : float
        stop when ‖r‖ ≤ rtol ‖g‖.
    xp : array namespace

    Returns
    -------
    s : array (m,), inside the box.
    on_boundary : bool, whether the step was stopped by the trust-region boundary.
    n_iter : int, CG iterations.
    """
    s = xp.zeros_like(g)
    r = -g
    d = r.copy()
    rr = float(r @ r)
    stop = (rtol * rtol) * rr
    on_boundary = False
    it = 0
    if rr == 0.0:
        return s, False, 0
    for it in range(1, max_iter + 1):
        Qd = Q @ d
        dQd = float(d @ Qd)
        w = rr / dQd if dQd > 0.0 else math.inf  # no curvature along d (singular Q): go to a boundary
        s_next = s + w * d if math.isfinite(w) else None
        out_region = s_next is None or float(s_next @ s_next) > radius * radius
        out_box = s_next is None or bool(xp.any(s_next < lo)) or bool(xp.any(s_next > hi))
        if out_region or out_box:
            # Zhang & Lai (2025) Alg. 2 stops here (at the region boundary, or where the box is left) and
            # projects into the box.  That projection can raise the model; the point where d first
            # meets a bound or the region boundary never does.  Keep the better of the two (for the
            # quadratic losses the model is J itself).
            t_region = _to_boundary(s, d, radius)
            t_box = _to_box(s, d, lo, hi, xp)
            first = s + min(t_region, t_box, w) * d
            clipped = xp.minimum(xp.maximum(s + min(t_region, w) * d, lo), hi)
            if model(Q, g, clipped) < model(Q, g, first):
                s, on_boundary = clipped, out_region
            else:
                s, on_boundary = first, t_region <= min(t_box, w)
            break
        s = s_next
        r = r - w * Qd
        rr_new = float(r @ r)
        if rr_new <= stop:
            break
        d = r + (rr_new / rr) * d
        rr = rr_new
    return xp.minimum(xp.maximum(s, lo), hi), on_boundary, it


def model(Q, g, s):
    """The quadratic model gᵀs + ½ sᵀQs."""
    return float(g @ s) + 0.5 * float(s @ (Q @ s))


def _to_box(s, d, lo, hi, xp):
    """The largest τ ∈ [0, ∞) with lo ≤ s + τ d ≤ hi (s inside the box)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        up = xp.where(d > 0, (hi - s) / d, np.inf)
        down = xp.where(d < 0, (lo - s) / d, np.inf)
    t = float(xp.minimum(up, down).min()) if d.shape[0] else 0.0
    return max(0.0, t) if math.isfinite(t) else 0.0


def choose_step(Q, g, lo, hi, radius, L, cg_iter, cg_rtol, xp):
    """The trust-region step on the free variables.

    With a Cholesky factor ``L`` of Q the model's minimiser s_N is taken when it is
    inside the region and the box.  Otherwise the candidates are CG–Steihaug's step
    and a projected search along s_N (clip(τ s_N), τ = 1, ½, ¼, ⅛, scaled into the
    region); the one with the lowest model value wins.

    Returns ``(s, on_boundary, cg_iterations)``.
    """
    best = None
    if L is not None:
        from kopt.numerics.linalg import cho_solve

        sN = -cho_solve(L, g)
        nN = float(xp.sqrt(sN @ sN))
        inside = not (bool(xp.any(sN < lo)) or bool(xp.any(sN > hi)))
        if nN <= radius and inside:
            return sN, False, 0
        for tau in (1.0, 0.5, 0.25, 0.125):
            c = xp.minimum(xp.maximum(tau * sN, lo), hi)
            nc = float(xp.sqrt(c @ c))
            onb = nc > radius
            if onb:
                c = c * (radius / nc)
            mc = model(Q, g, c)
            if best is None or mc < best[0]:
                best = (mc, c, onb)
    s, onb, it = steihaug(Q, g, lo, hi, radius, cg_iter, cg_rtol, xp)
    if best is not None and best[0] < model(Q, g, s):
        return best[1], best[2], it
    return s, onb, it


def _to_boundary(s, d, radius):
    """τ ≥ 0 with ‖s + τ d‖ = radius."""
    a = float(d @ d)
    b = float(s @ d)
    c = float(s @ s) - radius * radius
    if a == 0.0:
        return 0.0
    disc = max(b * b - a * c, 0.0)
    return (-b + math.sqrt(disc)) / a


def update_radius(radius, rho, snorm, on_boundary, max_radius):
    """The trust-region radius after a step of length ``snorm`` with ratio ``rho`` (Zhang & Lai 2025, Alg. 1).

    Zhang & Lai (2025) Alg. 1 (lines 8-15): Δ ← Δ/4 when ρ < ½; Δ ← min(2Δ, Δmax) when ρ > ¾ and the
    step reached the boundary (Δ − ‖s‖ < ε); else Δ unchanged.  One deviation, the textbook one
    (Nocedal & Wright Alg. 4.1 notes; Conn, Gould & Toint §17.1): the shrink is ¼·min(Δ, ‖s‖),
    so a poor step that stopped well inside the region (a box bound, or a CG stop) shrinks the
    region below that step instead of leaving a radius it never tested.  "Reached the boundary"
    is ``on_boundary`` or ‖s‖ ≥ 0.999 Δ.
    """
    if rho < 0.5:
        return 0.25 * min(radius, snorm if snorm > 0 else radius)
    if rho > 0.75 and (on_boundary or snorm >= 0.999 * radius):
        return min(2.0 * radius, max_radius)
    return radius


class BlockResult:
    """What :func:`solve_block` returns: the new block values and statistics."""

    __slots__ = ("a", "decrease", "f_change", "tr_steps", "cg_steps", "accepted")

    def __init__(self, a, decrease, f_change, tr_steps, cg_steps, accepted):
        self.a = a
        self.decrease = decrease
        self.f_change = f_change
        self.tr_steps = tr_steps
        self.cg_steps = cg_steps
        self.accepted = accepted


def solve_block(K, gbar, a0, terms, idx, *, max_steps=50, cg_iter=50, cg_rtol=1e-8, inner_tol=1e-4, eta=0.125,
                max_radius=None, newton=True, cache=None, true_kernel=None):
    """Minimise the block subproblem of DBCD-TR (Zhang & Lai 2025, Alg. 1) from ``a0``.

    Parameters
    ----------
    K : array (m, m), float64 -- the kernel block K_BB.
    gbar : array (m,), float64 -- (Kα)_B at ``a0``.
    a0 : array (m,), float64 -- the block's current α (inside the box).
    terms : :class:`.dualterms.DualTerms`
    idx : index array of the block rows (to look up labels and boxes).
    max_steps : trust-region iterations (T_TR).
    cg_iter, cg_rtol : truncated-CG limits.
    inner_tol : stop once ‖projected gradient‖ ≤ inner_tol × its value at ``a0``.
    eta : acceptance threshold η ∈ (0, ¼].
    max_radius : Δmax (default: 4√m × a typical |α| of the block, so that Δ0 = Δmax/4 spans the box).
    newton : try the model's exact minimiser on the free variables first (a Cholesky
        solve of Q_FF); it is taken when it lies inside the trust region and the
        box -- exactly the point CG–Steihaug converges to there -- else CG–Steihaug runs.
    true_kernel : callable s ↦ K_BB s of the problem when ``K`` is only the model's matrix
        (features mode with ``model_kernel: exact``: the model uses the exact kernel block, J
        and ρ the random-feature one, so ρ stays honest); None when ``K`` is K_BB itself.
    cache : a :class:`FactorCache` slot for this block (``get``/``put``); with a constant
        f'' (KRR, Huber, SVMs) Q_FF of a fixed block is the same at every visit.

    Returns
    -------
    BlockResult
        ``decrease`` = J(a0) − J(a) ≥ 0, ``f_change`` = f(a) − f(a0).
    """
    xp = terms.xp
    m = a0.shape[0]
    lo_box, hi_box = terms.box(idx)
    kappa = terms.kink
    if max_radius is None:
        max_radius = 4.0 * math.sqrt(m) * terms.alpha_scale(idx)  # so Δ0 = Δmax/4 spans the box
    radius = 0.25 * max_radius
    a = a0.copy()
    gb = gbar.copy()
    fa = terms.values(a, idx)
    fa_sum = float(fa.sum())
    total_dec = 0.0
    f_change = 0.0
    pg0 = None
    cg_total = 0
    accepted = 0
    gz = terms.smooth_grad_at_zero(idx) if kappa else None
    # (free set, Cholesky factor), reused while Q_FF does not change
    factor = cache.get() if cache is not None and terms.constant_hessian else None
    fresh = True
    step = 0
    for step in range(1, max_steps + 1):
        if fresh:  # gradient, box and Hessian at the current point
            gs = terms.grad(a, idx)
            if kappa:
                gs = xp.where(a == 0, gz, gs)
            G = gb + gs  # gradient of the smooth part of J
            lo, hi = lo_box, hi_box
            if kappa:
                # orthant of each variable: sign of a, or the descent side of the subdifferential at 0
                sig = xp.sign(a)
                at0 = a == 0
                sig = xp.where(at0 & (G + kappa < 0), 1.0, xp.where(at0 & (G - kappa > 0), -1.0, sig))
                G = G + kappa * sig
                lo = xp.where(sig > 0, 0.0, xp.where(sig < 0, lo_box, 0.0))
                hi = xp.where(sig < 0, 0.0, xp.where(sig > 0, hi_box, 0.0))
            pg = _projected(G, a, lo, hi, xp)
            pgn = float(xp.sqrt(pg @ pg))
            if pg0 is None:
                pg0 = pgn
            if pgn == 0.0 or pgn <= inner_tol * pg0:
                break
            # free variables: not pinned at a bound by an outward gradient
            free = ~(((a <= lo) & (G > 0)) | ((a >= hi) & (G < 0)) | (lo == hi))
            fidx = xp.nonzero(free)[0]
            if fidx.size == 0:
                break
            H = terms.hess(a, idx)
            Qf = K[xp.ix_(fidx, fidx)]
            Qf[xp.diag_indices(fidx.shape[0])] += H[fidx]
            if factor is not None and not (terms.constant_hessian and _same(factor[0], fidx, xp)):
                factor = None
            Gf, lof, hif = G[fidx], (lo - a)[fidx], (hi - a)[fidx]
            if newton and factor is None:
                factor = (fidx, _cholesky(Qf, xp))
                if cache is not None and terms.constant_hessian:
                    cache.put(factor)
        sf, on_boundary, it = choose_step(Qf, Gf, lof, hif, radius, factor[1] if newton else None, cg_iter, cg_rtol, xp)
        cg_total += it
        a_new = a.copy()
        a_new[fidx] = xp.minimum(xp.maximum(a[fidx] + sf, lo[fidx]), hi[fidx])  # a + (hi − a) may round past hi
        s = a_new - a
        Ks = K @ s
        pred = -(float(G @ s) + 0.5 * float(s @ (Ks + H * s)))
        if true_kernel is not None:
            Ks = true_kernel(s)
        if pred <= 0.0:
            break
        fn = terms.values(a_new, idx)
        df = float((fn - fa).sum())
        actual = -(0.5 * float(s @ Ks) + float(s @ gb) + df)
        scale = abs(fa_sum) + float(xp.abs(a) @ xp.abs(gb)) + 1e-300
        if terms.constant_hessian and true_kernel is None and math.isfinite(actual):
            # f is quadratic or linear: the model *is* J(a + s) − J(a), so ρ = 1 up to the rounding of
            # the two differences -- which dominates once the decrease is ~1e-14 of J.  Trust the model.
            rho = 1.0
        elif pred <= 1e-14 * scale:  # ρ is rounding noise from here on: the block is solved
            break
        else:
            rho = actual / pred if math.isfinite(actual) else -math.inf
        radius = update_radius(radius, rho, float(xp.sqrt(s @ s)), on_boundary, max_radius)
        fresh = rho > eta
        if fresh:
            a = a_new
            fa = fn
            fa_sum += df
            gb = gb + Ks
            total_dec += actual
            f_change += df
            accepted += 1
        if radius <= 1e-12 * max_radius:
            break
    return BlockResult(a, total_dec, f_change, step, cg_total, accepted)


class FactorCache:
    """Cholesky factors of Q_FF per (block, output), least recently used first out, within a byte budget."""

    def __init__(self, budget_bytes):
        from collections import OrderedDict

        self.budget = int(budget_bytes)
        self.used = 0
        self.items = OrderedDict()

    def slot(self, key):
        return _Slot(self, key)

    def _get(self, key):
        item = self.items.get(key)
        if item is not None:
            self.items.move_to_end(key)
        return item

    def _put(self, key, item):
        size = 0 if item[1] is None else item[1].nbytes + item[0].nbytes
        if size > self.budget:
            return
        old = self.items.pop(key, None)
        if old is not None:
            self.used -= 0 if old[1] is None else old[1].nbytes + old[0].nbytes
        while self.items and self.used + size > self.budget:
            _, ev = self.items.popitem(last=False)
            self.used -= 0 if ev[1] is None else ev[1].nbytes + ev[0].nbytes
        self.items[key] = item
        self.used += size


class _Slot:
    __slots__ = ("cache", "key")

    def __init__(self, cache, key):
        self.cache, self.key = cache, key

    def get(self):
        return self.cache._get(self.key)

    def put(self, item):
        self.cache._put(self.key, item)


def _same(a, b, xp):
    return a.shape == b.shape and bool(xp.all(a == b))


def _cholesky(Q, xp):
    """Lower Cholesky factor of Q, or None when Q is not (numerically) positive definite."""
    try:
        L = xp.linalg.cholesky(Q)
    except Exception:  # numpy raises LinAlgError; cupy returns NaNs
        return None
    if not bool(xp.all(xp.isfinite(xp.diagonal(L)))):
        return None
    d = xp.diagonal(L)
    if float(d.min()) <= 1e-7 * float(d.max()):  # too ill-conditioned to trust: let CG handle it
        return None
    return L


def _projected(G, a, lo, hi, xp):
    """The projected gradient: zero where a bound is active and G points out of the box."""
    out = xp.where((a <= lo) & (G > 0), 0.0, G)
    return xp.where((a >= hi) & (out < 0), 0.0, out)
