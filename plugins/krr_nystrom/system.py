"""The normal equations of kernel ridge regression on M Nyström centres, and their λ path.

For centres C (M training rows) the model is f(x) = k(x, C) w with ‖f‖² = wᵀRw, R = K_CC (+ a
jitter that makes its Cholesky factor exist).  kopt's objective with the square loss,
λ/2 wᵀRw + (1/n) Σ_i w_i ½ (k(x_i, C) w − y_i)², is minimised by

    (A/n + λ R) w = B/n,   A = Σ_i w_i k_i k_iᵀ,  B = Σ_i w_i k_i y_iᵀ   (k_i = k(x_i, C)),

one M × M system for every output column (one-vs-rest's C classes share A and R: one-hot
targets cost one factorisation for all classes).  A and B are accumulated a chunk of rows at a
time -- k(X_chunk, C) in the problem's dtype, its product in that dtype, the sum in float64 -- so
memory is O(M² + chunk · M), never n × M.  A path of λ values reuses A, B and R: each λ is one
M × M Cholesky (M³/3 flops, against n M² for A), so a λ path costs a small fraction of the system.
"""
from __future__ import annotations

import numpy as np

from kopt import rows as _rows
from kopt.backend import get_namespace
from kopt.linalg import cho_solve, cholesky
from kopt.nystrom import center_factor
from kopt.threads import blas_threads

#: kernel values per chunk of rows (the chunk's k(X, C) is at most this many entries: 64 MiB in float32)
CHUNK_ENTRIES = 1 << 24


def _gram_update(A, K):
    """A += Kᵀ K in float64 (the products of float32 kernel values round only in float64): the upper
    triangle by a rank-k update on NumPy."""
    xp = get_namespace(K)
    K = K.astype(np.float64)
    if xp is np:
        from scipy.linalg import blas

        A += blas.dsyrk(1.0, K, trans=1, lower=0)  # upper triangle; the lower one is mirrored once at the end
    else:  # pragma: no cover - GPU only
        A += xp.triu(K.T @ K).astype(np.float64)


class NystromSystem:
    """A and B of the training rows ``X`` (dense or CSR) for targets ``Y`` (n × k) on centres ``C``.

    ``weights``: per-row weights (mean 1) or None.  Kernel values are computed in ``dtype``, A's
    products in float64: a float32 A (1.6x faster here) is not positive definite below λ ~ 1e-6, where
    large clean sets want λ (measured: docs/defaults.md), and the search must score the system the
    final solve factors.  ``kernel``: a kernel instance (its bandwidth a
    number).  Attributes: ``A`` (M × M, float64, symmetric), ``B`` (M × k), ``n``, ``U`` and
    ``jitter`` (R = UᵀU, :func:`kopt.nystrom.center_factor`).
    """

    def __init__(self, kernel, X, Y, C, dtype=np.float32, weights=None):
        xp = get_namespace(C)
        self.kernel, self.C, self.dtype, self.xp = kernel, C, np.dtype(dtype), xp
        M, n = C.shape[0], X.shape[0]
        self.n, self.M = n, M
        self.A = xp.zeros((M, M), dtype=np.float64)
        self.B = xp.zeros((M, Y.shape[1]), dtype=np.float64)
        for lo, hi in _rows.chunks(n, max(1, CHUNK_ENTRIES // max(1, M))):
            K = self.features(_rows.dense(X, slice(lo, hi), xp, self.dtype))
            Yc = Y[lo:hi]
            if weights is not None:
                w = weights[lo:hi]
                Yc = Yc * w[:, None]
                Ks = (K * xp.sqrt(w).astype(self.dtype)[:, None])
                _gram_update(self.A, Ks)
            else:
                _gram_update(self.A, K)
            self.B += K.T.astype(np.float64) @ Yc
        self.A = xp.triu(self.A) + xp.triu(self.A, 1).T
        with blas_threads(1):
            self.U, self.jitter = center_factor(kernel, C)
        self.R = self.U.T @ self.U

    def features(self, X):
        """k(X, C) in the system's dtype."""
        return self.kernel.exact(X, self.C).astype(self.dtype, copy=False)

    def factor(self, lam):
        """The lower Cholesky factor of A/n + λR (+ δI, see below).

        A/n + λR is positive definite in exact arithmetic (R is); rounding can break that at a λ far
        below A's scale, so a failed factorisation is retried with δI added, δ from the features'
        rounding of A's diagonal upwards (x10 a try): that λ is then effectively δ-regularised, which
        the validation path scores like any other and :meth:`refine` corrects for the final solve."""
        H0 = self.A / self.n + lam * self.R
        delta = float(np.finfo(self.dtype).eps) * float(self.xp.trace(H0)) / self.M
        for attempt in range(8):
            H = H0.copy()
            if attempt:
                H[np.diag_indices(self.M)] += delta * 10.0 ** (attempt - 1)
            try:
                with blas_threads(1):  # a threaded LAPACK Cholesky of this size is slower, and its bits vary
                    return cholesky(H, overwrite=True)
            except np.linalg.LinAlgError:
                continue
        raise np.linalg.LinAlgError("the Nystrom system A/n + lambda R is not positive definite")

    def solve(self, lam, L=None):
        """w (M × k) minimising λ/2 wᵀRw + (1/n) Σ w_i ½‖k_iᵀw − y_i‖² (by the float32-accumulated A)."""
        L = self.factor(lam) if L is None else L
        with blas_threads(1):
            return cho_solve(L, self.B / self.n)

    def residual_pass(self, w, X, Y, weights=None):
        """One float64 pass over the rows at w: the scores f = k(X, C) w and Kᵀr with r_i = w_i (f_i − y_i)."""
        return residual_pass(self.kernel, self.C, self.dtype, w, X, Y, weights)

    def refine(self, lam, X, Y, weights=None, steps=4, tol=1e-9):
        """The solve, refined against float64 residuals (mixed-precision iterative refinement: each step
        one pass over the rows, corrected through the same factor); returns ``(w, scores, Ktr, steps)``
        with the scores and Kᵀr of the returned w."""
        L = self.factor(lam)
        w = self.solve(lam, L)
        rhs = float(self.xp.sqrt(self.xp.sum((self.B / self.n) ** 2))) or 1.0
        for k in range(steps + 1):
            scores, Ktr = self.residual_pass(w, X, Y, weights)
            g = lam * (self.R @ w) + Ktr / self.n  # the gradient of the objective at w
            if k == steps or float(self.xp.sqrt(self.xp.sum(g * g))) <= tol * rhs:
                return w, scores, Ktr, k
            with blas_threads(1):
                w = w - cho_solve(L, g)

    def path(self, lams, K_val):
        """Scores ``K_val @ w(λ)`` for every λ of ``lams`` (validation rows' k(X_val, C) given)."""
        K = K_val.astype(np.float64)
        return [K @ self.solve(lam) for lam in lams]


def residual_pass(kernel, C, dtype, w, X, Y, weights=None):
    """One float64 pass over the rows X at w: the scores f = k(X, C) w and Kᵀr with r_i = w_i (f_i − y_i)."""
    xp = get_namespace(C)
    M = C.shape[0]
    scores = xp.empty((X.shape[0], w.shape[1]), dtype=np.float64)
    Ktr = xp.zeros(w.shape, dtype=np.float64)
    for lo, hi in _rows.chunks(X.shape[0], max(1, CHUNK_ENTRIES // max(1, M))):
        K = kernel.exact(_rows.dense(X, slice(lo, hi), xp, dtype), C).astype(np.float64)
        f = K @ w
        scores[lo:hi] = f
        r = f - Y[lo:hi]
        if weights is not None:
            r = r * weights[lo:hi, None]
        Ktr += K.T @ r
    return scores, Ktr
