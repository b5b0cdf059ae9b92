"""Weak and strong duality of a loss in kopt's convention, on small exact-kernel problems.

Primal P(f) = λ/2 ‖f‖² + (1/n) Σ ℓ(y_i, f(x_i)); for f_α = Σ α_i k(x_i, ·) the dual is
D(α) = −(1/n) Σ ℓ*(−λ n α_i) − λ/2 αᵀKα (:mod:`kopt.numerics.objectives`).  Weak duality
P(f_α) ≥ D(α) holds for every feasible α (−λ n α_i ∈ dom ℓ*); at the primal optimum
α* = −ℓ'(f*)/(λ n) the gap closes.
"""
from __future__ import annotations

import numpy as np

from ..contract.components import Loss
from ..numerics import objectives
from . import _samples as S


def gaussian_gram(X: np.ndarray, bandwidth: float = 1.0) -> np.ndarray:
    """The exact Gaussian kernel matrix of ``X``, through the registered ``gaussian`` kernel.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The points.
    bandwidth : float, optional
        The bandwidth.

    Returns
    -------
    ndarray of shape (n, n)
        k(X, X).

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> kt.gaussian_gram(np.array([[0.0], [1.0]])).round(4)
    array([[1.    , 0.6065],
           [0.6065, 1.    ]])
    """
    from ..contract.registry import registry

    return np.asarray(registry().get("kernel", "gaussian")(bandwidth=bandwidth).exact(X, X), dtype=np.float64)


def _quad(alpha, K):
    """αᵀKα (summed over outputs for (n, C) coefficients)."""
    return float(np.sum(alpha * (K @ alpha)))


def check_weak_duality(loss: Loss, K: np.ndarray, y: np.ndarray, lam: float, rng: np.random.Generator | None = None,
                       *, trials: int = 5, n_classes: int = 3) -> bool:
    """Weak duality: P(f_α) ≥ D(α) and the gap is ≥ 0 at random feasible α, box edges included.

    Parameters
    ----------
    loss : Loss
        The loss instance, with a conjugate.
    K : ndarray of shape (n, n)
        A kernel matrix (:func:`~kopt.testing.gaussian_gram`).
    y : array of shape (n,)
        Labels encoded for the loss's target.
    lam : float
        λ.
    rng : numpy.random.Generator, optional
        Where the points come from (seed 0 by default).
    trials : int, optional
        Points tried.
    n_classes : int, optional
        Classes, for a multiclass loss.

    Returns
    -------
    bool
        True when checked; False for a loss without a conjugate.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> hinge = registry().get("loss", "hinge")()
    >>> kt.check_weak_duality(hinge, kt.gaussian_gram(X), np.array([1.0, -1.0, 1.0, -1.0, 1.0, 1.0]), 0.1)
    True
    """
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


def check_strong_duality(loss: Loss, K: np.ndarray, y: np.ndarray, lam: float, *, rtol: float = 1e-6) -> bool:
    """Strong duality: at the optimum the duality gap vanishes (the sign and scaling of the dual convention).

    A smooth loss's optimum solves λ n α + ℓ'(Kα) = 0; a nonsmooth scalar loss's maximizes D over the box, which
    needs ℓ* differentiable inside its box (hinge, absolute, quantile).

    Parameters
    ----------
    loss : Loss
        The loss instance, with a conjugate.
    K : ndarray of shape (n, n)
        A kernel matrix (:func:`~kopt.testing.gaussian_gram`).
    y : array of shape (n,)
        Labels encoded for the loss's target.
    lam : float
        λ.
    rtol : float, optional
        Relative tolerance of the gap (loosened to 1e-4 for a nonsmooth loss, solved by a first-order method).

    Returns
    -------
    bool
        True when checked; False for a loss without a conjugate, or a nonsmooth multiclass one.

    Raises
    ------
    AssertionError
        The property fails; the message names the component, the property and the first offending point.

    Examples
    --------
    >>> import numpy as np
    >>> import kopt.testing as kt
    >>> from kopt.contract.registry import registry
    >>> X = np.random.default_rng(0).normal(size=(6, 2))
    >>> square = registry().get("loss", "square")()
    >>> kt.check_strong_duality(square, kt.gaussian_gram(X), X[:, 0], 0.1)
    True
    """
    if not loss.has_conjugate or (not loss.smooth and S.is_multiclass(loss)):
        return False
    alpha = _optimal_alpha(loss, K, y, lam)
    scores, q = K @ alpha, _quad(alpha, K)
    p = objectives.primal(loss, y, scores, lam, q)
    gap = objectives.gap(loss, y, alpha, scores, lam, q)
    tol = (rtol if loss.smooth else max(rtol, 1e-4)) * (1 + abs(p))
    if not (abs(gap) <= tol):
        raise AssertionError(f"loss {loss.name!r}: duality gap {gap!r} at the optimum (primal {p!r}, λ={lam})")
    return True


def _optimal_alpha(loss, K, y, lam):
    from scipy.optimize import minimize, root

    n = K.shape[0]
    if loss.smooth:
        shape = (n, loss.n_outputs(int(np.max(y)) + 1)) if S.is_multiclass(loss) else (n,)

        def stationarity(a):  # λ n α + ℓ'(Kα) = 0 ⇔ the primal gradient K(λα + ℓ'(Kα)/n) vanishes
            alpha = a.reshape(shape)
            return (lam * n * alpha + np.asarray(loss.grad(K @ alpha, y), np.float64)).ravel()

        res = root(stationarity, np.zeros(int(np.prod(shape))), method="hybr", tol=1e-13)
        # α from the optimal scores through the stationarity condition
        return -np.asarray(loss.grad(K @ res.x.reshape(shape), y), np.float64) / (lam * n)
    lo, hi = S.conj_box(loss, y)
    c = lam * n

    def neg_dual(a):  # −D(α) = mean ℓ*(−λnα) + λ/2 αᵀKα
        v = -c * a
        val = float(np.mean(loss.conj(v, y))) + 0.5 * lam * float(a @ K @ a)
        return val, -lam * np.asarray(loss.conj_grad(v, y), np.float64) + lam * (K @ a)

    bounds = list(zip(np.where(np.isfinite(hi), -hi / c, -np.inf), np.where(np.isfinite(lo), -lo / c, np.inf)))
    bounds = [(None if not np.isfinite(a) else a, None if not np.isfinite(b) else b) for a, b in bounds]
    x0 = np.clip(np.zeros(n), [b[0] if b[0] is not None else -np.inf for b in bounds],
                 [b[1] if b[1] is not None else np.inf for b in bounds])
    res = minimize(neg_dual, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 5000, "ftol": 1e-14, "gtol": 1e-10})
    return res.x
