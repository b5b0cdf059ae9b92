"""Primal and dual objectives in kopt's convention, and the duality gap.

Primal (ALGORITHMS.md §0, kopt scaling):  P(f) = λ/2 ‖f‖²_H + (1/n) Σ ℓ(y_i, f(x_i)).
For f = Σ α_i k(x_i, ·) (or θ = Σ α_i φ(x_i) with random features) the dual is

    D(α) = −(1/n) Σ ℓ*_{y_i}(−λ n α_i) − λ/2 αᵀKα,

so P(f_α) − D(α) = λ αᵀKα + (1/n) Σ [ℓ(y_i, (Kα)_i) + ℓ*(−λ n α_i)] ≥ 0 by
Fenchel–Young, with equality exactly at the optimum.  Joker's scaling
(papers/004: ½‖θ‖² + (1/λ_J) Σ ℓ) is the same problem with λ_J = λ n; the
Joker plugin converts (``kopt_plugins.joker.solver.joker_lambda``).
"""
from __future__ import annotations


def primal(loss, y, scores, lam, norm_sq):
    """λ/2 ‖f‖² + mean ℓ(y, f(x)); ``norm_sq`` = ‖f‖²_H (e.g. αᵀKα or ‖θ‖²)."""
    return float(0.5 * lam * norm_sq + loss.value(scores, y).mean())


def dual(loss, y, alpha, lam, norm_sq):
    """−(1/n) Σ ℓ*(−λ n α_i) − λ/2 ‖f_α‖²; +inf-free only for feasible α."""
    n = alpha.shape[0]
    return float(-loss.conj(-lam * n * alpha, y).mean() - 0.5 * lam * norm_sq)


def gap(loss, y, alpha, scores, lam, norm_sq):
    """P(f_α) − D(α) for f_α = Σ α_i k(x_i, ·) with scores (Kα)_i and ‖f_α‖² = αᵀKα."""
    return primal(loss, y, scores, lam, norm_sq) - dual(loss, y, alpha, lam, norm_sq)
