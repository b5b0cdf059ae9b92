"""The posterior variance operator Â by doubly stochastic gradients (Dai et al. 2014, Sec. 4 and App. D).

A = C(C + σ²/n I)⁻¹ minimises (1/2n) Σ ‖k(x_i,·) − A k(x_i,·)‖² + σ²/(2n) ‖A‖²_HS, and
k*ᵀ(K + σ²I)⁻¹k* = Â(x*, x*).  The paper's estimate, with two independent feature draws ω_t
(first argument) and ω'_t (second argument) per step, is

    Â = Σ_{i ≤ j} φ_{ω_i}(·) θ_ij φ_{ω'_j}(·)
    θ_ij ← (1 − σ²γ_t/n) θ_ij                                   (i ≤ j < t)
    θ_it = −γ_t Σ_{j ≥ i}^{t−1} θ_ij φ_{ω'_j}(x_t) φ_{ω'_t}(x_t)    (i < t)
    θ_tt = γ_t φ_{ω_t}(x_t) φ_{ω'_t}(x_t).

In kopt's mini-batch, block form (B rows X_t, F features ψ_t = φ_{ω_t}, ψ'_t = φ_{ω'_t} per
step, k̂_t(x, z) = ψ_t(x)ᵀψ_t(z)/F) the F × F blocks θ_ij have rank ≤ B and are kept as
B × B blocks β_ij in batch coordinates:

    θ_ij = ψ_i(X_i)ᵀ β_ij ψ'_j(X_j) / F²,        Â(x, z) = Σ_{i ≤ j} k̂_i(x, X_i) β_ij k̂'_j(X_j, z)
    β_it = −(γ_t/B) Σ_{j=i}^{t−1} β_ij k̂'_j(X_j, X_t)     (i < t),      β_tt = (γ_t/B) I_B,

then every older β is multiplied by 1 − γ_tλ, λ = σ²/n (one global scale factor).  The
θ-update above is the B = F = 1 case; ``tests/plugins/gp/test_gp_operator.py`` checks the two forms
against each other.  Memory: T(T+1)/2 blocks of B² float64 -- O(T²); a step costs
O(t²B³), a variance evaluation O(t²B²) per point.
"""
from __future__ import annotations

import numpy as np

from kopt.numerics.threads import blas_threads

from .averaging import ScaleHistory


def _col_offset(j, B):
    """Start of column block j in the packed β (column blocks 0..j−1 hold (k+1)·B² numbers each)."""
    return B * B * j * (j + 1) // 2


class VarianceOperator:
    """Â as packed column blocks: column j is ``((j+1)B, B)``, rows i = 0..j stacked.

    Parameters
    ----------
    fmap_prime, fmap_omega : kopt.numerics.features.FeatureMap
        The ω' map (shared with the mean) and the independent ω map.
    iterations, batch_size : T and B (storage is allocated for T).
    lam : λ = σ²/n.
    """

    def __init__(self, fmap_prime, fmap_omega, iterations, batch_size, lam, xp, n_in, avg_start=None):
        self.fp, self.fo, self.xp = fmap_prime, fmap_omega, xp
        self.T, self.B, self.lam = int(iterations), int(batch_size), float(lam)
        self.F = fmap_prime.block_size
        self.beta = xp.zeros(_col_offset(self.T, self.B), dtype=np.float64)
        self.rows = xp.zeros((self.T, self.B, int(n_in)), dtype=fmap_prime.dtype)  # X_j of every step
        self.cache = xp.zeros((self.T, self.B, self.F), dtype=fmap_prime.dtype)  # ψ'_j(X_j)
        self.scale = 1.0
        self.t = 0
        self.hist = ScaleHistory(self.T, self.T if avg_start is None else avg_start)

    def column(self, j):
        B = self.B
        o = _col_offset(j, B)
        return self.beta[o: o + (j + 1) * B * B].reshape((j + 1) * B, B)

    # -- state ----------------------------------------------------------------
    def state(self):
        return {"op_beta": self.beta[: _col_offset(self.t, self.B)], "op_rows": self.rows[: self.t],
                "op_scale": self.scale, **self.hist.state("op_")}

    def restore(self, st, t):
        xp = self.xp
        self.t = int(t)
        self.beta[: _col_offset(self.t, self.B)] = xp.asarray(st["op_beta"])
        self.rows[: self.t] = xp.asarray(st["op_rows"])
        self.scale = float(st["op_scale"])
        self.hist.restore(st, "op_", t)
        for j in range(self.t):
            self.cache[j] = self.fp.block(self.rows[j], j)

    # -- one iteration --------------------------------------------------------
    def step(self, t, Xb, gamma, Pb):
        """Iteration ``t`` (1-based): new column t−1 from batch ``Xb`` with ψ'_t(Xb) = ``Pb``."""
        xp, B, F = self.xp, self.B, self.F
        if Xb.shape[0] != B:
            raise ValueError(f"the operator was sized for batches of {B} rows, got {Xb.shape[0]}")
        k = t - 1
        col = self.column(k)
        acc = xp.zeros((k * B, B), dtype=np.float64)
        for j in range(k):
            # P_j = k̂'_j(X_j, X_t), B × B
            P = (self.cache[j] @ self.fp.block(Xb, j).T).astype(np.float64) / F
            acc[: (j + 1) * B] += self.column(j) @ P
        new_scale = self.scale * (1.0 - gamma * self.lam)
        # acc holds Σ_j β̃_ij P_j (stored units); the true β_it is −(γ/B) s · acc
        col[: k * B] = acc * (-(gamma / B) * self.scale / new_scale)
        col[k * B:] = xp.eye(B, dtype=np.float64) * ((gamma / B) / new_scale)
        self.scale = new_scale
        self.rows[k] = Xb
        self.cache[k] = Pb
        self.t = t
        self.hist.record(t, self.scale)

    # -- evaluation -----------------------------------------------------------
    def weights(self):
        """Per-column weights of the (averaged) operator (:mod:`kopt_plugins.gp.averaging`)."""
        return self.hist.weights()

    def diag(self, X, chunk=512):
        """Â(x, x) of the (averaged) operator for the rows of ``X`` (float64)."""
        return evaluate_diag(self.fp, self.fo, self.column, self.rows[: self.t], self.weights(), X, self.xp, chunk,
                             cache=self.cache)


def evaluate_diag(fmap_prime, fmap_omega, column, rows, weights, X, xp, chunk=512, cache=None):
    """Â(x, x) = Σ_{i≤j} k̂_i(x, X_i) w_j β̃_ij k̂'_j(X_j, x) for every row x of ``X``.

    ``column(j)`` returns the stored column block j, ``weights[j]`` its weight (the scale, or
    the averaging weight); ``rows[j]`` is X_j; ``cache[j]`` (optional) is ψ'_j(X_j),
    regenerated when not given.
    """
    with blas_threads(1):  # small GEMMs (see solver.GPSolver.run)
        return _evaluate_diag(fmap_prime, fmap_omega, column, rows, weights, X, xp, chunk, cache)


def _evaluate_diag(fmap_prime, fmap_omega, column, rows, weights, X, xp, chunk, cache):
    T = rows.shape[0]
    B = rows.shape[1] if T else 0
    F = fmap_prime.block_size
    n = X.shape[0]
    out = xp.zeros(n, dtype=np.float64)
    if T == 0 or n == 0:
        return out
    Xc = xp.asarray(X, dtype=fmap_prime.dtype)
    # per block: ψ_j(X_j) (ω map) and ψ'_j(X_j) (ω' map) of the stored batches
    left_rows = [fmap_omega.block(rows[j], j) for j in range(T)]
    right_rows = [cache[j] if cache is not None else fmap_prime.block(rows[j], j) for j in range(T)]
    for lo in range(0, n, chunk):
        x = Xc[lo: lo + chunk]
        r = x.shape[0]
        L = xp.empty((r, T * B), dtype=np.float64)  # k̂_i(x, X_i)
        for i in range(T):
            L[:, i * B:(i + 1) * B] = fmap_omega.block(x, i) @ left_rows[i].T
        L /= F
        acc = xp.zeros(r, dtype=np.float64)
        for j in range(T):
            Rj = (fmap_prime.block(x, j) @ right_rows[j].T).astype(np.float64) / F  # k̂'_j(x, X_j)
            acc += float(weights[j]) * ((L[:, : (j + 1) * B] @ column(j)) * Rj).sum(axis=1)
        out[lo: lo + r] = acc
    return out
