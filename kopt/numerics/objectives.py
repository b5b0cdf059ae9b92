"""Primal and dual objectives in kopt's convention, and the duality gap.

Primal (kopt's scaling, docs/losses.md):  P(f) = λ/2 ‖f‖²_H + (1/n) Σ ℓ(y_i, f(x_i)).
For f = Σ α_i k(x_i, ·) (or θ = Σ α_i φ(x_i) with random features) the dual is

    D(α) = −(1/n) Σ ℓ*_{y_i}(−λ n α_i) − λ/2 αᵀKα,

so P(f_α) − D(α) = λ αᵀKα + (1/n) Σ [ℓ(y_i, (Kα)_i) + ℓ*(−λ n α_i)] ≥ 0 by
Fenchel–Young, with equality exactly at the optimum.  Joker's scaling
(Zhang & Lai (2025): ½‖θ‖² + (1/λ_J) Σ ℓ) is the same problem with λ_J = λ n; the
Joker plugin converts (``kopt_plugins.joker.solver.joker_lambda``).
"""
from __future__ import annotations


def primal(loss, y, scores, lam, norm_sq, weights=None):
    """λ/2 ‖f‖² + mean ℓ(y, f(x)); ``norm_sq`` = ‖f‖²_H (e.g. αᵀKα or ‖θ‖²).

    ``weights``: per-row weights w (``problem.sample_weight``, mean 1): the loss term is mean w_i ℓ_i.
    """
    values = loss.value(scores, y)
    if weights is not None:
        values = values * weights
    return float(0.5 * lam * norm_sq + values.mean())


def dual(loss, y, alpha, lam, norm_sq, weights=None):
    """−(1/n) Σ ℓ*(−λ n α_i) − λ/2 ‖f_α‖²; +inf-free only for feasible α.

    With row weights the row's loss is w_i ℓ, whose conjugate is the perspective w_i ℓ*(v/w_i);
    a row of weight 0 contributes 0 at α_i = 0 and +inf elsewhere.
    """
    n = alpha.shape[0]
    v = -lam * n * alpha
    if weights is None:
        return float(-loss.conj(v, y).mean() - 0.5 * lam * norm_sq)
    from .backend import get_namespace

    xp = get_namespace(alpha)
    live = weights > 0
    safe = xp.where(live, weights, 1.0)
    values = loss.conj(v / (safe if v.ndim == 1 else safe[:, None]), y)
    at_zero = (v == 0) if v.ndim == 1 else xp.all(v == 0, axis=1)
    terms = xp.where(live, safe * values, xp.where(at_zero, 0.0, xp.inf))
    return float(-terms.mean() - 0.5 * lam * norm_sq)


def gap(loss, y, alpha, scores, lam, norm_sq, weights=None):
    """P(f_α) − D(α) for f_α = Σ α_i k(x_i, ·) with scores (Kα)_i and ‖f_α‖² = αᵀKα."""
    return primal(loss, y, scores, lam, norm_sq, weights) - dual(loss, y, alpha, lam, norm_sq, weights)
