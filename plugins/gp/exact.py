"""The closed-form GP posterior (Dai et al. 2014, eq. 9): the oracle the DSG estimates are checked against.

With prior f ~ GP(0, k) and noise y = f(x) + ε, ε ~ N(0, σ²), at test points x*:

    mean(x*)     = k*ᵀ (K + σ² I)⁻¹ y
    variance(x*) = k(x*, x*) − k*ᵀ (K + σ² I)⁻¹ k*        (of the latent f(x*); add σ² for y*)

Small n only: the n × n kernel matrix is formed and factored in float64.
"""
from __future__ import annotations

import numpy as np

from kopt.numerics.backend import get_namespace
from kopt.numerics.linalg import cho_solve, cholesky, solve_triangular
from kopt.numerics.threads import blas_threads


def gp_lambda(noise_variance: float, n: int) -> float:
    """kopt's λ of the GP posterior mean: ``λ = σ² / n``.

    kopt minimises ``λ/2 ‖f‖² + (1/n) Σ (y_i − f(x_i))²/2``, whose minimiser is
    ``f = k(·)ᵀ (K + nλ I)⁻¹ y`` (exact KRR); it equals the posterior mean
    ``k(·)ᵀ (K + σ² I)⁻¹ y`` iff ``nλ = σ²``.  Dai et al. (2014) Sec. 4
    say "ν = 2σ²": that holds for ``Σ (y_i − f(x_i))² + ν/2 ‖f‖²`` (a sum, no ½), not for
    kopt's mean of halved squares; tests/plugins/gp/test_gp.py checks λ = σ²/n against the closed
    form and that λ = 2σ² gives a different fit.
    """
    return float(noise_variance) / float(n)


def exact_posterior(kernel, X, y, X_star, noise_variance, *, variance=True, chunk=4096):
    """``(mean, variance)`` of the GP posterior at ``X_star`` (variance None if not asked).

    Parameters
    ----------
    kernel : kopt Kernel with a numeric bandwidth.
    X, y : training inputs ``(n, d)`` and targets ``(n,)``.
    X_star : test inputs ``(m, d)``.
    noise_variance : σ² > 0.
    """
    xp = get_namespace(X)
    X = xp.asarray(X, dtype=np.float64)
    Xs = xp.asarray(X_star, dtype=np.float64)
    y = xp.asarray(y, dtype=np.float64)
    n = X.shape[0]
    A = kernel.exact(X, X)
    A[xp.diag_indices(n)] += float(noise_variance)
    L = cholesky(A, overwrite=True)
    alpha = cho_solve(L, y)
    mean = xp.empty(Xs.shape[0])
    var = xp.empty(Xs.shape[0]) if variance else None
    for lo in range(0, Xs.shape[0], chunk):
        hi = min(Xs.shape[0], lo + chunk)
        Ks = kernel.exact(Xs[lo:hi], X)
        mean[lo:hi] = Ks @ alpha
        if variance:
            V = solve_triangular(L, Ks.T)
            var[lo:hi] = kernel.diag(Xs[lo:hi]).astype(np.float64) - (V * V).sum(axis=0)
    return mean, var


def expected_iterates(kernel, X, y, X_star, noise_variance, step_size, iterations, at, averaging="tail"):
    """``[(mean, variance), ...]`` at ``X_star`` of the *expected* DSG iterate after each of ``at`` steps.

    The updates of the mean, of the test-point fits and of the operator Â are unbiased and linear in
    their unknown, so with a constant step γ their expectation is full-batch gradient descent on the
    same objective: in the eigenbasis K = U diag(μ) Uᵀ direction k reaches the fraction
    1 − ρ_k^t of the posterior's, ρ_k = 1 − γ(μ_k + σ²)/n, and an average of iterates averages those
    fractions.  By Jensen no run is closer on average: the floor set by conditioning and Σγ alone.
    ``averaging`` and ``iterations`` (T) give the averaged iterates as the solver's option does.
    """
    from .averaging import averaging_start

    X, Xs, y = (np.asarray(a, dtype=np.float64) for a in (X, X_star, y))
    n, s2 = X.shape[0], float(noise_variance)
    with blas_threads(1):  # OpenBLAS's 2-thread eigh is twice slower on the shared machine
        mu, U = np.linalg.eigh(kernel.exact(X, X))
    mu = np.maximum(mu, 0.0)
    KU = kernel.exact(Xs, X) @ U
    rho = 1.0 - float(step_size) * (mu + s2) / n
    start = averaging_start(averaging, iterations)
    prior, Uy = np.asarray(kernel.diag(Xs), dtype=np.float64), U.T @ y
    out = []
    for t in at:
        if t > start:  # the mean of 1 − ρ^u over the averaged iterates u = start+1..t
            w = 1.0 - (rho[None, :] ** np.arange(start + 1, t + 1)[:, None]).mean(axis=0)
        else:
            w = 1.0 - rho**t
        out.append((KU @ (w * Uy / (mu + s2)), prior - ((KU**2) * (w / (mu + s2))).sum(axis=1)))
    return out


def rel_error(estimate, reference) -> float:
    """Relative L2 error ‖estimate − reference‖ / ‖reference‖ (host float)."""
    xp = get_namespace(reference)
    e = xp.asarray(estimate, dtype=np.float64) - xp.asarray(reference, dtype=np.float64)
    return float(xp.linalg.norm(e) / xp.linalg.norm(xp.asarray(reference, dtype=np.float64)))
