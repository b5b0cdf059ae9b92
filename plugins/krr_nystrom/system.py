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

#: the largest condition number of A/n + λR a λ path point may have (float64: 1e-4 / 1.1e-16)
MAX_CONDITION = 1e-4 / float(np.finfo(np.float64).eps)
#: entries per chunk of rows: the chunk's k(X, C) and its dense rows are each at most this many (64 MiB in
#: float32), so wide sparse rows (text: tens of thousands of columns) are densified a few hundred at a time
CHUNK_ENTRIES = 1 << 24
#: rows per chunk of the Gram's rank-k updates: at most this many kernel values (16 MiB in float32, its float64
#: copy 32 MiB); a rank-k update of 1,024 rows at M = 4,096 already runs at the BLAS's full rate
GRAM_ENTRIES = 1 << 22


def row_chunks(X, M):
    """``(lo, hi)`` row ranges of X whose kernel values against M centres, and whose dense rows, stay
    within :data:`CHUNK_ENTRIES`."""
    return _rows.chunks(X.shape[0], max(1, CHUNK_ENTRIES // max(1, M, X.shape[1])))


def _gram_update(A, K):
    """A += Kᵀ K (K float64), the lower triangle only: in place by a rank-k update on NumPy (no M × M
    temporary; A's upper triangle is not touched)."""
    xp = get_namespace(K)
    if xp is np:
        from scipy.linalg import blas

        # in Fortran order A.T's upper triangle is A's lower one; Kᵀ is a Fortran-order view of the C-order K,
        # which BLAS reads without a copy (1.4x faster than trans=1 on K, measured at 6000 x 1024)
        out = blas.dsyrk(1.0, K.T, beta=1.0, c=A.T, trans=0, lower=0, overwrite_c=1)
        if not np.shares_memory(out, A):  # pragma: no cover - a SciPy that copied c after all
            A[...] = out.T
    else:  # pragma: no cover - GPU only
        A += K.T @ K


class NystromSystem:
    """The normal equations of the training rows ``X`` (dense or CSR) for targets ``Y`` (n × k) on centres ``C``.

    ``weights``: per-row weights (mean 1) or None; ``kernel``: a kernel instance (its bandwidth a
    number).  Kernel values are computed in ``dtype``, A's products in float64: a float32 A (1.6x faster
    here) is not positive definite below λ ~ 1e-6, where large clean sets want λ (measured:
    docs/defaults.md), and the search must score the system the final solve factors.  Attributes:
    ``An`` = A/n (M × M, float64; its lower triangle holds A/n -- every factorisation reads that one),
    ``Bn`` = B/n (M × k), ``n``, ``U`` and ``jitter`` (R = UᵀU, :func:`kopt.nystrom.center_factor`),
    ``R`` = K_CC + jitter·I (symmetric).
    """

    def __init__(self, kernel, X, Y, C, dtype=np.float32, weights=None):
        xp = get_namespace(C)
        self.kernel, self.C, self.dtype, self.xp = kernel, C, np.dtype(dtype), xp
        self.M = C.shape[0]
        self.n = 0
        self.An = xp.zeros((self.M, self.M), dtype=np.float64)
        self.Bn = xp.zeros((self.M, Y.shape[1]), dtype=np.float64)
        self.add_rows(X, Y, weights)
        with blas_threads(1):
            self.U, self.jitter, self.R = center_factor(kernel, C, keep_matrix=True)

    def add_rows(self, X, Y, weights=None, K=None):
        """Add rows to the system: A += Σ w_i k_i k_iᵀ, B += Σ w_i k_i y_iᵀ, n += rows (``K``: their kernel
        values k(X, C) when at hand -- ``solver: auto`` adds its validation rows this way, so the solve on
        every row reuses the search's system).  Kernel values are computed in row chunks of
        :data:`GRAM_ENTRIES` (their float64 copy included), so memory stays O(M²) whatever n."""
        xp = self.xp
        rows = (K if K is not None else X).shape[0]
        A, B = self.An, self.Bn
        if self.n:
            A *= self.n
            B *= self.n
        step = max(1, GRAM_ENTRIES // max(1, self.M, 0 if K is not None else X.shape[1]))
        for lo, hi in _rows.chunks(rows, step):
            Kc = K[lo:hi] if K is not None else self.features(_rows.dense(X, slice(lo, hi), xp, self.dtype))
            Kc = Kc.astype(np.float64)
            Yc = Y[lo:hi]
            if weights is not None:
                w = weights[lo:hi]
                Yc = Yc * w[:, None]
                Kc_w = Kc * xp.sqrt(w)[:, None]
                _gram_update(A, Kc_w)
            else:
                _gram_update(A, Kc)
            B += Kc.T @ Yc
        self.n += rows
        A *= 1.0 / self.n
        B *= 1.0 / self.n

    def _matrix(self, lam):
        """A/n + λR (its lower triangle: what the factorisations read)."""
        H = self.R * lam
        H += self.An
        return H

    def features(self, X):
        """k(X, C) in the system's dtype (X dense, or sparse: densified a chunk of rows at a time)."""
        if not _rows.is_sparse(X) and X.shape[0] * max(self.M, X.shape[1]) <= CHUNK_ENTRIES:
            return self.kernel.exact(X, self.C).astype(self.dtype, copy=False)
        out = self.xp.empty((X.shape[0], self.M), dtype=self.dtype)
        for lo, hi in row_chunks(X, self.M):
            out[lo:hi] = self.kernel.exact(_rows.dense(X, slice(lo, hi), self.xp, self.dtype), self.C)
        return out

    def _cholesky(self, H):
        """The lower Cholesky factor of H (overwritten), or None where H is not positive definite."""
        try:
            with blas_threads(1):  # a threaded LAPACK Cholesky of this size is slower, and its bits vary
                return cholesky(H, overwrite=True, zero_upper=False)
        except np.linalg.LinAlgError:
            return None

    def factor(self, lam):
        """The lower Cholesky factor of A/n + λR (+ δI, see below).

        A/n + λR is positive definite in exact arithmetic (R is); rounding can break that at a λ far
        below A's scale, so a failed factorisation is retried with δI added, δ from the features'
        rounding of A's diagonal upwards (x10 a try): that λ is then effectively δ-regularised, which
        :meth:`refine` corrects for the final solve (the search's :meth:`path` refuses such a λ)."""
        H0 = self._matrix(lam)
        delta = float(np.finfo(self.dtype).eps) * float(self.xp.trace(H0)) / self.M
        for attempt in range(8):
            H = H0.copy()
            if attempt:
                H[np.diag_indices(self.M)] += delta * 10.0 ** (attempt - 1)
            L = self._cholesky(H)
            if L is not None:
                return L
        raise np.linalg.LinAlgError("the Nystrom system A/n + lambda R is not positive definite")

    def solve(self, lam, L=None):
        """w (M × k) minimising λ/2 wᵀRw + (1/n) Σ w_i ½‖k_iᵀw − y_i‖²; ``L``: :meth:`factor`'s, if at hand."""
        L = self.factor(lam) if L is None else L
        with blas_threads(1):
            return cho_solve(L, self.Bn)

    def refine(self, lam, X, Y, weights=None, steps=4, tol=1e-9):
        """The solve, refined against float64 residuals (mixed-precision iterative refinement: each step
        one pass over the rows, corrected through the same factor); returns ``(w, scores, Ktr, steps)``
        with the scores and Kᵀr of the returned w."""
        L = self.factor(lam)
        w = self.solve(lam, L)
        rhs = float(self.xp.sqrt(self.xp.sum(self.Bn ** 2))) or 1.0
        for k in range(steps + 1):
            scores, Ktr = residual_pass(self.kernel, self.C, self.dtype, w, X, Y, weights)
            g = lam * (self.R @ w) + Ktr / self.n  # the gradient of the objective at w
            if k == steps or float(self.xp.sqrt(self.xp.sum(g * g))) <= tol * rhs:
                return w, scores, Ktr, k
            with blas_threads(1):
                w = w - cho_solve(L, g)

    def path(self, lams, K_val):
        """Scores ``K_val @ w(λ)`` for every λ of ``lams`` (validation rows' k(X_val, C) given); None for a λ
        the system does not resolve: A/n + λR does not factor, or its condition number -- at least the
        squared spread of the Cholesky factor's diagonal -- exceeds :data:`MAX_CONDITION`, where the
        solution's float64 rounding (cond · 1.1e-16) would pass 1e-4: that solution is not λ's."""
        K = K_val.astype(np.float64)
        out = []
        for lam in lams:
            L = self._cholesky(self._matrix(lam))
            d = None if L is None else self.xp.abs(self.xp.diagonal(L))
            if d is None or float((d.max() / d.min()) ** 2) > MAX_CONDITION:
                out.append(None)
                continue
            out.append(K @ self.solve(lam, L))
        return out


def residual_pass(kernel, C, dtype, w, X, Y, weights=None):
    """One float64 pass over the rows X at w: the scores f = k(X, C) w and Kᵀr with r_i = w_i (f_i − y_i)."""
    xp = get_namespace(C)
    M = C.shape[0]
    scores = xp.empty((X.shape[0], w.shape[1]), dtype=np.float64)
    Ktr = xp.zeros(w.shape, dtype=np.float64)
    for lo, hi in row_chunks(X, M):
        K = kernel.exact(_rows.dense(X, slice(lo, hi), xp, dtype), C).astype(np.float64)
        f = K @ w
        scores[lo:hi] = f
        r = f - Y[lo:hi]
        if weights is not None:
            r = r * weights[lo:hi, None]
        Ktr += K.T @ r
    return scores, Ktr
