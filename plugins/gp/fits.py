"""Doubly stochastic KRR fits of the posterior mean and of one function per test point.

Column 0 is the posterior mean: square loss, targets y, λ = σ²/n (see ``exact.gp_lambda``).
Columns 1..m (formulation 2 of Dai et al. (2014) Sec. 4) are f*_i = k(·)ᵀ(K + σ²I)⁻¹k*_i: the same
problem with targets k(x*_i, x_j); the variance at x*_i is k(x*_i, x*_i) − f*_i(x*_i).
All columns share the batch and the feature block of an iteration, so one step is one
multi-output DSG step (mini-batch form):

    R     = f_t(X_b) − Y_b                                  (B × C residuals)
    α_t   = −γ_t/(B F) · ψ_t(X_b)ᵀ R                        (F × C, ψ_t the unscaled block t)
    f_t+1 = (1 − γ_t λ) f_t + ψ_t(·)ᵀ α_t

``track`` keeps f on every training row (and on the test points) up to date, so a step
costs O(nF + nBm) whatever t and memory is O(n(1+m)); ``regenerate`` is Dai et al. (2014) Alg. 1:
f_t(X_b) sums every earlier block, O(tBF(1+m)) a step, and stores every α_t -- the paper's
O(tm) memory (O(tFm) with blocks of F features).  Both give the same iterates.
"""
from __future__ import annotations

import numpy as np

from .averaging import RunningMean, ScaleHistory


class DSGFits:
    """The mean (and formulation-2) fits of one GP run.

    Parameters
    ----------
    fmap : kopt.numerics.features.FeatureMap
        The ω' map: block t−1 is the block of iteration t.
    X, y : training rows (dense, on the backend) and standardized targets.
    lam : float
        λ = σ²/n.
    iterations : int
        T (coefficient storage is allocated for it).
    mode : "track" or "regenerate".
    kernel : the exact kernel (targets of the formulation-2 columns).
    avg_start : int
        Iterates after this one are averaged (:mod:`kopt_plugins.gp.averaging`).
    points : array or None
        The test points x*_i of formulation 2 (None: mean only).
    monitor : array or None
        Rows whose mean is tracked (the test split; track mode only).
    """

    def __init__(self, fmap, X, y, lam, iterations, mode, kernel, xp, avg_start, points=None, monitor=None):
        self.fmap, self.X, self.y, self.lam, self.mode, self.kernel, self.xp = fmap, X, y, lam, mode, kernel, xp
        self.points = points
        self.m = 0 if points is None else int(points.shape[0])
        self.C = 1 + self.m
        self.F = F = fmap.block_size
        self.scale = 1.0  # coef = scale · stored
        self.vscale = 1.0  # V = vscale · stored
        self.t = 0
        self.hist = ScaleHistory(iterations, avg_start)
        # the mean's coefficients always; the test-point columns only when regenerating
        cols = self.C if mode == "regenerate" else 1
        self.coef = xp.zeros((int(iterations), F, cols), dtype=np.float64)
        track = mode == "track"
        self.V = xp.zeros((X.shape[0], self.C), dtype=np.float64) if track else None
        self.monitor = monitor if track else None
        self.Vmon = None if self.monitor is None else xp.zeros(self.monitor.shape[0], dtype=np.float64)
        self.D = xp.zeros(self.m, dtype=np.float64) if (track and self.m) else None
        self.avg_mon = None if self.Vmon is None else RunningMean(xp, self.Vmon.shape[0], avg_start)
        self.avg_D = None if self.D is None else RunningMean(xp, self.m, avg_start)

    # -- state ----------------------------------------------------------------
    def state(self):
        st = {"fit_scale": self.scale, "fit_vscale": self.vscale, "fit_coef": self.coef[: self.t]}
        st.update(self.hist.state("fit_"))
        for name in ("V", "Vmon", "D"):
            if getattr(self, name) is not None:
                st["fit_" + name] = getattr(self, name)
        for name in ("avg_mon", "avg_D"):
            if getattr(self, name) is not None:
                st.update(getattr(self, name).state(f"fit_{name}_"))
        return st

    def restore(self, st, t):
        xp = self.xp
        self.t = int(t)
        self.scale, self.vscale = float(st["fit_scale"]), float(st["fit_vscale"])
        self.coef[: self.t] = xp.asarray(st["fit_coef"])
        self.hist.restore(st, "fit_", t)
        for name in ("V", "Vmon", "D"):
            if getattr(self, name) is not None:
                getattr(self, name)[...] = xp.asarray(st["fit_" + name])
        for name in ("avg_mon", "avg_D"):
            if getattr(self, name) is not None:
                getattr(self, name).restore(st, f"fit_{name}_")

    # -- one iteration --------------------------------------------------------
    def targets(self, Xb, rows):
        """``(B, C)``: y, then k(x_b, x*_i) for the test-point columns."""
        xp = self.xp
        Y = xp.empty((Xb.shape[0], self.C), dtype=np.float64)
        Y[:, 0] = self.y[rows]
        if self.m:
            Y[:, 1:] = self.kernel.exact(xp.asarray(Xb, dtype=np.float64), xp.asarray(self.points, dtype=np.float64))
        return Y

    def values(self, Xb, rows):
        """f_t at the batch, ``(B, C)``."""
        if self.mode == "track":
            return self.vscale * self.V[rows]
        if self.t == 0:
            return self.xp.zeros((Xb.shape[0], self.C), dtype=np.float64)
        return self.scale * self.fmap.predict(Xb, self.coef[: self.t], blocks=range(self.t))

    def step(self, t, Xb, rows, gamma, Pb):
        """Iteration ``t`` (1-based) on batch rows ``rows`` (``Xb = X[rows]``, ``Pb = ψ_t(Xb)``); returns R."""
        B, F = Xb.shape[0], self.F
        R = self.values(Xb, rows) - self.targets(Xb, rows)
        c = gamma / (B * F)
        # α_t of every column (regenerate) or of the mean alone (track: the others need no coefficients)
        Rc = R if self.mode == "regenerate" else R[:, :1]
        a = (-c) * (Pb.T.astype(np.float64) @ Rc)  # (F, C) or (F, 1)
        decay = 1.0 - gamma * self.lam
        self.scale *= decay
        self.coef[t - 1] = a / self.scale
        if self.mode == "track":
            self._track(t, Pb, a, R, c, decay)
        self.t = t
        self.hist.record(t, self.scale)
        return R

    def _track(self, t, Pb, a, R, c, decay):
        fmap, dt, j = self.fmap, self.fmap.dtype, t - 1
        self.vscale *= decay
        if self.C == 1:
            self.V += fmap.predict(self.X, a[None], blocks=[j]) / self.vscale
        else:  # rank-B update with K̂_t(X, X_b) (n × B): cheaper than ψ_t(X) α_t as C > B
            K = fmap.predict(self.X, Pb.T[None], blocks=[j]).astype(dt)
            self.V += K @ ((-c / self.vscale) * R).astype(dt)
        if self.monitor is None and not self.m:
            return
        Pp = fmap.block(self.monitor if self.monitor is not None else self.points, j)
        if self.monitor is not None:
            self.Vmon *= decay
            self.Vmon += Pp @ a[:, 0].astype(dt)
            self.avg_mon.add(t, self.Vmon)
        if self.m:
            if self.points is not self.monitor:
                Pp = fmap.block(self.points, j)
            Kp = Pp @ Pb.T  # (m, B): F·k̂_t(x*_i, x_b)
            self.D *= decay
            self.D += (Kp * ((-c) * R[:, 1:].T).astype(dt)).sum(axis=1, dtype=np.float64)
            self.avg_D.add(t, self.D)

    # -- results (averaged iterates where averaging has started) ---------------
    def mean_coef(self):
        """``(t, F)`` coefficients of the (averaged) mean, weights folded in."""
        w = self.xp.asarray(self.hist.weights())
        return w[:, None] * self.coef[: self.t, :, 0]

    def mean_at_monitor(self):
        """The (averaged) mean on the monitored rows (track mode), else None."""
        return None if self.Vmon is None else self.avg_mon.value(self.Vmon)

    def point_values(self):
        """f*_i(x*_i) of the (averaged) formulation-2 fits, ``(m,)``."""
        if self.D is not None:
            return self.avg_D.value(self.D)
        xp = self.xp
        w = self.hist.weights()
        out = xp.zeros(self.m, dtype=np.float64)
        for j in range(self.t):
            Pp = self.fmap.block(self.points, j).astype(np.float64)
            out += w[j] * (Pp * self.coef[j, :, 1:].T).sum(axis=1)
        return out

    def train_mse(self):
        """Mean squared residual of the current mean on the training rows (track mode), else None."""
        if self.V is None:
            return None
        r = self.vscale * self.V[:, 0] - self.y
        return float((r * r).mean())
