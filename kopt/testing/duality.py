"""Weak and strong duality of a loss in kopt's convention, on small exact-kernel problems.

Primal P(f) = λ/2 ‖f‖² + (1/n) Σ ℓ(y_i, f(x_i)); for f_α = Σ α_i k(x_i, ·) the dual is
D(α) = −(1/n) Σ ℓ*(−λ n α_i) − λ/2 αᵀKα (:mod:`kopt.objectives`).  Weak duality
P(f_α) ≥ D(α) holds for every feasible α (−λ n α_i ∈ dom ℓ*); at the primal optimum
α* = −ℓ'(f*)/(λ n) the gap closes.
"""
from __future__ import annotations

import numpy as np

from .. import objectives
from . import _samples as S


def gaussian_gram(X, bandwidth=1.0):
    """Exact Gaussian kernel matrix, through the registered ``gaussian`` kernel plugin."""
    from ..plugins import registry

    return np.asarray(registry().get("kernel", "gaussian")(bandwidth=bandwidth).exact(X, X), dtype=np.float64)


def _quad(alpha, K):
    """αᵀKα (summed over outputs for (n, C) coefficients)."""
    return float(np.sum(alpha * (K @ alpha)))


def check_weak_duality(loss, K, y, lam, rng=None, *, trials=5, n_classes=3):
    """P(f_α) ≥ D(α) and ``objectives.gap`` ≥ 0 for random feasible α (including box edges)."""
    if not loss.has_conjugate:
        return False
    rng = rng or np.random.default_rng(0)
    n = K.shape[0]
    for _ in range(trials):
        v = S.sample_duals(loss, y, rng, n_classes)
        alpha = -v / (lam * n)
        scores, q = K @ alpha, _quad(alpha, K)
        p = objectives.primal(loss, y, scores, lam, q)
        d = objectives.dual(loss, y, alpha, lam, q)
        g = objectives.gap(loss, y, alpha, scores, lam, q)
        tol = 1e-9 * (1 + abs(p) + abs(d))
        if not (np.isfinite(d) and p >= d - tol and g >= -tol):
            raise AssertionError(
                f"loss {loss.name!r}: weak duality fails: primal {p!r} < dual {d!r} (gap {g!r}) at λ={lam}, "
                f"feasible −λnα = {np.array2string(np.asarray(v).ravel()[:6], precision=6)}..."
            )
    return True


def check_strong_duality(loss, K, y, lam, *, rtol=1e-6):
    """For a smooth loss with a conjugate: at the primal optimum α* the duality gap vanishes.

    α* solves the optimality condition λ n α + ℓ'(Kα) = 0 (scipy's ``root``); the dual is
    evaluated at the same α, so this also checks the sign and scaling of the dual convention.
    """
    if not (loss.has_conjugate and loss.smooth):
        return False
    from scipy.optimize import root

    n = K.shape[0]
    shape = (n, loss.n_outputs(int(np.max(y)) + 1)) if S.is_multiclass(loss) else (n,)

    def stationarity(a):  # λ n α + ℓ'(Kα) = 0 ⇔ the primal gradient K(λα + ℓ'(Kα)/n) vanishes
        alpha = a.reshape(shape)
        return (lam * n * alpha + np.asarray(loss.grad(K @ alpha, y), np.float64)).ravel()

    res = root(stationarity, np.zeros(int(np.prod(shape))), method="hybr", tol=1e-13)
    f_star = K @ res.x.reshape(shape)
    # α from the optimal scores through the stationarity condition
    alpha = -np.asarray(loss.grad(f_star, y), np.float64) / (lam * n)
    scores, q = K @ alpha, _quad(alpha, K)
    p = objectives.primal(loss, y, scores, lam, q)
    gap = objectives.gap(loss, y, alpha, scores, lam, q)
    if not (abs(gap) <= rtol * (1 + abs(p))):
        raise AssertionError(f"loss {loss.name!r}: duality gap {gap!r} at the primal optimum (primal {p!r}, λ={lam})")
    return True
