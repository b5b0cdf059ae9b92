"""CDSG's checking rule: the closed-form step of papers/000 eq. (9), and its variance σ².

For every existing block k with accumulated scalar β_k (the block's coefficient without
the feature values, papers/000 Sec. 4.2) and the mean loss gradient g of the batch, the
largest step s ≥ 0 that keeps the doubly stochastic error bound no worse than a fresh
DSG step of size γ_t is the larger root of the quadratic inequality

    2‖β_k − s g‖² + 2 s² M² σ² / B  ≤  ‖β_k‖² + γ_t² ‖g‖²                     (eq. 9)

(papers/000 writes η = −s and β + ηg; ‖·‖ is |·| for one output and the Euclidean norm
over the C outputs of a multiclass loss).  Rearranged: A s² − 2b s + c ≤ 0 with
A = 2(‖g‖² + M²σ²/B), b = 2⟨β_k, g⟩, c = ‖β_k‖² − γ_t²‖g‖², so

    s_k = (b + √(b² − A c)) / A   when b² ≥ A c and the root is ≥ 0, else no step.

The paper divides the variance term by B²; the variance of a mean of B i.i.d. terms is
σ²/B, which is what we use (docs/dsg.md derives it; the term is O(1/B) either way).
"""
from __future__ import annotations

import numpy as np

from .sampling import dense


def checking_steps(beta, g, gamma, var_term):
    """Largest admissible step s_k ≥ 0 per block (``-inf`` where none exists).

    Parameters
    ----------
    beta : ndarray, shape (m,) or (m, C)
        The blocks' true-scale β_k.
    g : float or ndarray, shape (C,)
        Mean loss gradient of the batch.
    gamma : float
        The DSG step γ_t the new-block alternative would take.
    var_term : float
        M²σ²/B.

    Returns
    -------
    ndarray, shape (m,)
    """
    beta = np.asarray(beta, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    if beta.ndim == 1:
        bg, bb, gg = beta * g, beta * beta, float(g * g)
    else:
        bg, bb, gg = beta @ g, (beta * beta).sum(axis=1), float(g @ g)
    A = 2.0 * (gg + var_term)
    out = np.full(beta.shape[0], -np.inf)
    if A <= 0.0:
        return out
    b = 2.0 * bg
    c = bb - gamma * gamma * gg
    disc = b * b - A * c
    ok = disc >= 0
    root = (b[ok] + np.sqrt(disc[ok])) / A
    out[ok] = np.where(root >= 0, root, -np.inf)
    return out


def feature_variance(problem, fmap, rows=128, features=256):
    """σ² = E_x E_ω Var_y [φ_ω(y) φ_ω(x) − k(y, x)] on a seeded subsample (papers/000 Sec. 4.2).

    Uses feature block 0, which the solvers never put in a model (their blocks are 1, 2, ...).
    """
    xp = problem.xp
    n = problem.n
    idx = np.sort(problem.rng("variance", 0).choice(n, size=min(n, rows), replace=False))
    X = dense(problem.X, idx, xp, problem.dtype)
    P = fmap.block(X, 0)[:, :features].astype(np.float64)
    K = problem.kernel.exact(X, X).astype(np.float64)
    # Phi[i, j, f] = φ_f(x_i) φ_f(y_j) − k(x_i, y_j); variance over j, mean over i and f
    Phi = P[:, None, :] * P[None, :, :] - K[:, :, None]
    return float(Phi.var(axis=1).mean())
