"""The separable part of Joker's dual, f(α) = (1/λ_J) Σ ξ*_{y_i}(−λ_J α_i), built from any loss.

Zhang & Lai (2025) (eq. 4) minimises ``J(α) = ½ αᵀKα + f(α)`` over the box
``−λ_J α_i ∈ dom ξ*_{y_i}``.  Every loss plugin with a conjugate provides
``conj``, ``conj_grad``, ``conj_curvature`` and ``conj_box`` in the variable
``v = −λ_J α``; this module turns them into the value, gradient, Hessian
diagonal and box of ``f`` in α:

    f_i(α_i)   = ξ*(−λ_J α_i) / λ_J
    f_i'(α_i)  = −ξ*'(−λ_J α_i)
    f_i''(α_i) = λ_J ξ*''(−λ_J α_i)
    box        = [−hi/λ_J, −lo/λ_J]  for dom ξ* = [lo, hi]

Two loss families need more than that (Zhang & Lai 2025, Sec. 3.2 and App. B.2):

* **Unbounded conjugate slope at a box edge** (logistic: bEnt has infinite
  derivative at 0 and 1).  The box is shrunk by ``margin`` = the spacing of
  the floats (in the features' dtype) at the largest box edge, and the
  Hessian diagonal used in the trust-region model is capped at
  ``margin^(-1/2)``.  Detected by probing ``conj_grad`` at the box edges.
* **A kink of the conjugate at v = 0** (ε-insensitive: ξ* = ε|v| + vy).  f is
  then ``smooth(α) + κ|α|``; the solver works orthant by orthant (see
  :mod:`.trust_region`).  κ is read off ``conj_grad`` just left and right of 0.
"""
from __future__ import annotations

import numpy as np

from kopt.numerics.backend import to_numpy

_PROBE = 1e-9  # relative offset used to read one-sided conjugate slopes at v = 0


class DualTerms:
    """``f`` of one binary/real problem: labels ``y`` (n,), Joker's ``lam_j`` = λ n.

    Parameters
    ----------
    loss : kopt.contract.components.Loss
        A loss with ``has_conjugate``.
    y : array (n,)
        Labels as the solver sees them (±1 or reals), float64, on the backend.
    lam_j : float
        Zhang & Lai's λ (``kopt_plugins.joker.solver.joker_lambda``).
    weights : array (n,) or None
        Row weights w_i (``problem.sample_weight``, mean 1): the primal is ½‖θ‖² + (1/λ_J) Σ w_i ℓ_i,
        i.e. row i has its own λ_i = λ_J / w_i, and every formula below holds row by row with λ_i.
    dtype : numpy dtype
        The working precision of the kernel values; sets the KLR margin.
    """

    def __init__(self, loss, y, lam_j, dtype=np.float32, weights=None):
        from kopt.numerics.backend import get_namespace

        self.loss = loss
        self.y = y
        self.xp = get_namespace(y)
        xp = self.xp
        # λ of each row: λ_J, or λ_J / w_i with row weights (the weighted loss w ℓ has conjugate w ℓ*(·/w))
        self.lam_j = float(lam_j) if weights is None else float(lam_j) / xp.asarray(weights, dtype=np.float64)
        lo, hi = loss.conj_box(y)
        lo = xp.asarray(lo, dtype=np.float64) * xp.ones_like(y, dtype=np.float64)
        hi = xp.asarray(hi, dtype=np.float64) * xp.ones_like(y, dtype=np.float64)
        # α-box: v = −λ_J α ∈ [lo, hi]
        self.lower = -hi / self.lam_j
        self.upper = -lo / self.lam_j
        self._inward()
        self.margin_needed = self._probe_edges(lo, hi)
        self.kink = self._probe_kink()
        self.margin = 0.0
        self.hess_cap = np.inf
        t = np.dtype(dtype).type
        if self.margin_needed:
            edge = float(xp.max(xp.where(xp.isfinite(self.upper), xp.abs(self.upper), 0.0)))
            edge = max(edge, float(xp.max(xp.where(xp.isfinite(self.lower), xp.abs(self.lower), 0.0))))
            self.margin = float(t(edge) - np.nextafter(t(edge), t(0)))
            self.hess_cap = self.margin ** -0.5
            self.lower = xp.where(xp.isfinite(self.lower), self.lower + self.margin, self.lower)
            self.upper = xp.where(xp.isfinite(self.upper), self.upper - self.margin, self.upper)
        elif self._probe_unbounded_curvature():
            # e.g. L_p regression with p > 2: ξ*'' = (q−1)|v|^(q−2) is infinite at v = 0.  Same cap
            # as Zhang & Lai's KLR, with the spacing taken at the typical size of α.
            scale = self.alpha_scale(self._sample())
            self.hess_cap = float(t(scale) - np.nextafter(t(scale), t(0))) ** -0.5
        self.constant_hessian = self._probe_constant_hessian()

    def _inward(self):
        """Move finite α-bounds inward by ulps until ξ*(−λ_J α) is finite there (−λ_J(−hi/λ_J) may round past hi)."""
        xp = self.xp
        for attr, toward in (("lower", np.inf), ("upper", -np.inf)):
            b = getattr(self, attr)
            for _ in range(8):
                fin = xp.isfinite(b)
                with np.errstate(all="ignore"):
                    c = self.loss.conj(-self.lam_j * xp.where(fin, b, 0.0), self.y)  # λ per row
                bad = fin & ~xp.isfinite(c)
                if not bool(bad.any()):
                    break
                b = xp.where(bad, xp.nextafter(b, toward), b)
            setattr(self, attr, b)

    # -- detection ------------------------------------------------------------
    def _sample(self, k=64):
        """A few distinct rows to probe (the properties are per label value)."""
        idx = np.unique(np.linspace(0, self.y.shape[0] - 1, min(k, self.y.shape[0])).astype(np.int64))
        return self.xp.asarray(idx)

    def _probe_edges(self, lo, hi):
        idx = self._sample()
        y = self.y[idx]
        with np.errstate(all="ignore"):
            for edge in (lo[idx], hi[idx]):
                fin = self.xp.isfinite(edge)
                if not bool(fin.any()):
                    continue
                g = self.loss.conj_grad(self.xp.where(fin, edge, 0.0), y)
                if not bool(self.xp.all(self.xp.isfinite(g[fin]))):
                    return True
        return False

    def _probe_kink(self):
        """κ with ξ*(v) = smooth(v) + κ|v| near v = 0 (0 when ξ* is differentiable at 0)."""
        idx = self._sample()
        y = self.y[idx]
        xp = self.xp
        h = _PROBE * max(1.0, float(xp.max(xp.abs(y))))
        inside = (self.lower[idx] < 0) & (self.upper[idx] > 0)
        if not bool(inside.any()):
            return 0.0
        with np.errstate(all="ignore"):
            gp = self.loss.conj_grad(xp.full(y.shape, h), y)
            gm = self.loss.conj_grad(xp.full(y.shape, -h), y)
            cp = self.loss.conj_curvature(xp.full(y.shape, h), y)
        jump = 0.5 * (gp - gm) - h * xp.where(xp.isfinite(cp), cp, 0.0)
        jump = to_numpy(jump[inside])
        k = float(np.median(jump))
        return k if k > 1e-7 * max(1.0, float(np.max(np.abs(to_numpy(y))))) else 0.0

    def _probe_unbounded_curvature(self):
        idx = self._sample()
        xp = self.xp
        with np.errstate(all="ignore"):
            h = self._lam(idx) * self.loss.conj_curvature(xp.zeros(idx.shape[0]), self.y[idx])
        return not bool(xp.all(xp.isfinite(h) & (h < 1e12)))

    def _probe_constant_hessian(self):
        """True when f'' does not depend on α (quadratic or linear conjugates: KRR, Huber, SVMs, SVR)."""
        if self.margin_needed:
            return False
        idx = self._sample()
        xp = self.xp
        lo, hi = self.lower[idx], self.upper[idx]
        vals = []
        for w in (0.1, 0.5, 0.9):
            with np.errstate(all="ignore"):
                a = xp.where(xp.isfinite(lo) & xp.isfinite(hi), lo + w * (hi - lo),
                             xp.where(xp.isfinite(lo), lo + w, xp.where(xp.isfinite(hi), hi - w, w - 0.5)))
                vals.append(self.hess(a, idx))
        return all(bool(xp.all(xp.abs(v - vals[0]) <= 1e-12 * (1 + xp.abs(vals[0])))) for v in vals[1:])

    def _lam(self, idx):
        """λ of rows ``idx``: λ_J, or λ_J / w_i with row weights."""
        return self.lam_j if np.isscalar(self.lam_j) else self.lam_j[idx]

    # -- values -----------------------------------------------------------------
    def value(self, a, idx):
        """Σ_i f_i(a_i) over rows ``idx`` (float)."""
        return float(self.values(a, idx).sum())

    def values(self, a, idx):
        """f_i(a_i) elementwise; rows exactly on an edge of the unshrunk box are taken as limits."""
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = self._lam(idx)
            out = self.loss.conj(-lam * a, self.y[idx]) / lam
        if self.margin_needed:
            out = self.xp.where(self.xp.isnan(out) & (a == 0), 0.0, out)
        return out

    def grad(self, a, idx):
        """f'(a) of the smooth part (κ·sign(a) excluded for kinked losses; see :meth:`split_grad`)."""
        g = -self.loss.conj_grad(-self._lam(idx) * a, self.y[idx])
        if self.kink:
            g = g - self.kink * self.xp.sign(a)
        return g

    def smooth_grad_at_zero(self, idx):
        """The smooth part's slope at a = 0 (kinked losses)."""
        xp = self.xp
        y = self.y[idx]
        h = _PROBE * max(1.0, float(xp.max(xp.abs(y)))) if y.size else _PROBE
        return 0.5 * (-self.loss.conj_grad(xp.full(y.shape, -h), y) - self.loss.conj_grad(xp.full(y.shape, h), y))

    def hess(self, a, idx):
        """The (capped) Hessian diagonal f''(a) used in the quadratic model."""
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = self._lam(idx)
            h = lam * self.loss.conj_curvature(-lam * a, self.y[idx])
        h = self.xp.where(self.xp.isfinite(h), h, np.inf)
        if np.isfinite(self.hess_cap):
            h = self.xp.minimum(h, self.hess_cap)
        return self.xp.maximum(h, 0.0)

    def box(self, idx):
        return self.lower[idx], self.upper[idx]

    def project(self, a, idx):
        """``a`` clipped into the (possibly shrunk) box of rows ``idx``."""
        return self.xp.minimum(self.xp.maximum(a, self.lower[idx]), self.upper[idx])

    def coordinate_decrease(self, a, Ka, kdiag, idx):
        """Decrease of J possible by moving each α_i alone (the Gauss–Southwell-q score).

        ``Ka`` = (Kα)_i and ``kdiag`` = K_ii on rows ``idx``.  For each row the
        one-dimensional model g t + ½ (K_ii + f''_i) t² is minimised over the
        box (and, for a kinked conjugate, the orthant a subgradient step picks).
        """
        xp = self.xp
        g = Ka + self.grad(a, idx)
        lo, hi = self.box(idx)
        lo = lo - a
        hi = hi - a
        if self.kink:
            g = xp.where(a == 0, Ka + self.smooth_grad_at_zero(idx), g)
            up = (a > 0) | ((a == 0) & (g + self.kink < 0))
            down = (a < 0) | ((a == 0) & (g - self.kink > 0))
            g = g + self.kink * xp.where(up, 1.0, xp.where(down, -1.0, 0.0))
            lo = xp.where(up, xp.maximum(lo, -a), lo)
            hi = xp.where(down, xp.minimum(hi, -a), hi)
            stuck = ~(up | down)
            lo = xp.where(stuck, 0.0, lo)
            hi = xp.where(stuck, 0.0, hi)
        d = kdiag + self.hess(a, idx)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = xp.where(d > 0, -g / d, -xp.sign(g) * np.inf)
        t = xp.minimum(xp.maximum(t, lo), hi)
        t = xp.where(xp.isfinite(t), t, 0.0)
        return -(g * t + 0.5 * d * t * t)

    def alpha_scale(self, idx):
        """A typical |α| on rows ``idx``: the largest finite box edge, else max|y|/λ_J."""
        xp = self.xp
        lo, hi = self.box(idx)
        edges = xp.concatenate([xp.abs(lo[xp.isfinite(lo)]), xp.abs(hi[xp.isfinite(hi)])])
        s = float(edges.max()) if edges.size else 0.0
        if s == 0.0:
            s = (float(xp.max(xp.abs(self.y[idx]))) + 1.0) / float(xp.min(xp.asarray(self._lam(idx))))
        return s
