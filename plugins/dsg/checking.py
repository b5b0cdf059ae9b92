"""CDSG's checking rule: the closed-form step of Li & Póczos (2016) eq. (9), and its variance σ².

Li & Póczos (2016) eq. (9) (one point, B = 1): with β_k the old block's coefficient without its
feature values and g the new gradient, the largest step s such that re-using block k keeps
the doubly stochastic error bound no worse than a new block with step γ_t solves

    2(β_k − s g)² + 2(s M σ)² ≤ β_k² + (γ_t g)²                               (eq. 9)

(the paper writes η = −s and β + ηg).  Its three scalars are, up to the kernel's bound
(κ + φ)² the paper factors out, the H-inner products of the block's function
f_k = β_k k(x_k, ·) and the new functional gradient ζ = g k(x_t, ·):  β_k² ~ ‖f_k‖²,
β_k g ~ ⟨f_k, ζ⟩, g² ~ ‖ζ‖².  For mini-batches and blocks of F features kopt uses exactly
these inner products (docs/dsg.md derives the rule and why it keeps Thm. 14):

    2‖f_k − s ζ‖² + 2 s² v ≤ ‖f_k‖² + γ_t² ‖ζ‖²,   v = M² σ² / B,

with ζ = (1/B) Σ_b ℓ'_b k(x_b, ·) the batch's functional gradient,
⟨f_k, ζ⟩ = (1/B) Σ_b ℓ'_b f_k(x_b) (reproducing property: one adjoint of every block, fused
with the prediction), ‖ζ‖² estimated by the blocks' features, ‖f_k‖² tracked per block.
Rearranged: A s² − 2b s + c ≤ 0 with A = 2(‖ζ‖² + v), b = 2⟨f_k, ζ⟩, c = ‖f_k‖² − γ_t²‖ζ‖²:

    s_k = (b + √(b² − A c)) / A   when b² ≥ A c and the root is ≥ 0, else no step.

Re-use pays (s_k > γ_t) only when ζ is well aligned with f_k (cosine above 1/2): the step
then *undoes* part of the block's earlier overshoot, the situation of Li & Póczos (2016) Sec. 4.2.
Reading eq. 9 literally with g the *mean* gradient of a batch lets s grow like 1/|g| when the
batch gradients cancel while f moves by s·RMS(ℓ'); that reading diverges on regression.
"""
from __future__ import annotations

import numpy as np

from kopt.numerics import rows as _rows


def checking_steps(norms, cross, zeta_sq, gamma, var_term):
    """Largest admissible step s_k ≥ 0 per block (``-inf`` where none exists).

    Parameters
    ----------
    norms : ndarray, shape (m,)
        ‖f_k‖²_H of every block.
    cross : ndarray, shape (m,)
        ⟨f_k, ζ⟩_H.
    zeta_sq : float
        ‖ζ‖²_H of the batch's functional gradient.
    gamma : float
        The DSG step γ_t the new-block alternative would take.
    var_term : float
        M²σ²/B.

    Returns
    -------
    ndarray, shape (m,)
    """
    norms = np.maximum(np.asarray(norms, dtype=np.float64), 0.0)
    cross = np.asarray(cross, dtype=np.float64)
    A = 2.0 * (float(zeta_sq) + float(var_term))
    out = np.full(norms.shape[0], -np.inf)
    if not A > 0.0:
        return out
    b = 2.0 * cross
    c = norms - gamma * gamma * zeta_sq
    disc = b * b - A * c
    ok = disc >= 0
    root = (b[ok] + np.sqrt(disc[ok])) / A
    out[ok] = np.where(root >= 0, root, -np.inf)
    return out


def feature_variance(problem, fmap, rows=128, features=256):
    """σ² = E_x E_ω Var_y [φ_ω(y) φ_ω(x) − k(y, x)] on a seeded subsample (Li & Póczos 2016, Sec. 4.2).

    Uses feature block 0, which the solvers never put in a model (their blocks are 1, 2, ...).
    """
    xp = problem.xp
    n = problem.n
    idx = np.sort(problem.rng("variance", 0).choice(n, size=min(n, rows), replace=False))
    if problem.partitions is not None:  # on a Dask cluster: the same rows, fetched from their partitions
        X = xp.asarray(problem.partitions.take(idx), dtype=problem.dtype)
    else:
        X = _rows.dense(problem.X, xp.asarray(idx), xp, problem.dtype)
    P = fmap.block(X, 0)[:, :features].astype(np.float64)
    K = problem.kernel.exact(X, X).astype(np.float64)
    # Phi[i, j, f] = φ_f(x_i) φ_f(y_j) − k(x_i, y_j); variance over j, mean over i and f
    Phi = P[:, None, :] * P[None, :, :] - K[:, :, None]
    return float(Phi.var(axis=1).mean())
