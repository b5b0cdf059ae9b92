"""Dense linear algebra on NumPy or CuPy, robust at the sizes exact solvers meet.

The OpenBLAS bundled with SciPy segfaulted in a 2-thread Cholesky at
n = 16,512 on the development machine (fine at 12,000; DESIGN.md), so large
factorisations here are blocked: LAPACK only ever factors ``BLOCK``-sized
diagonal blocks, the rest is triangular solves and GEMM updates.
"""
from __future__ import annotations

import numpy as np

from .backend import get_namespace

BLOCK = 4096
#: up to this size LAPACK factors the whole matrix at once (fast, and known to be safe here)
DIRECT_MAX = 12000


def _scipy_linalg(xp):
    if xp is np:
        import scipy.linalg as sl
    else:  # pragma: no cover - GPU only
        import cupyx.scipy.linalg as sl
    return sl


def cholesky(A, *, overwrite=False, block=BLOCK, direct_max=DIRECT_MAX):
    """Lower Cholesky factor L (A = L Lᵀ, upper triangle zero) of a symmetric positive-definite matrix.

    Raises ``numpy.linalg.LinAlgError`` when A is not positive definite.
    """
    xp = get_namespace(A)
    sl = _scipy_linalg(xp)
    L = A if overwrite else A.copy()
    n = L.shape[0]
    if n <= direct_max:
        if xp is np:
            L, _ = sl.cho_factor(L, lower=True, overwrite_a=True, check_finite=False)
            _zero_upper(L, block)
            return L
        return _chol_small(L, xp)
    for k in range(0, n, block):
        e = min(n, k + block)
        L[k:e, k:e] = _chol_small(L[k:e, k:e], xp)
        if e < n:
            # L_ik = A_ik L_kk^{-T}
            L[e:, k:e] = sl.solve_triangular(L[k:e, k:e], L[e:, k:e].T, lower=True).T
            # A_ii -= L_ik L_ikᵀ (lower part is what later steps read)
            L[e:, e:] -= L[e:, k:e] @ L[e:, k:e].T
    _zero_upper(L, block)
    return L


def _zero_upper(L, block):
    """Zero the strict upper triangle in place, one row block at a time (no n x n index arrays)."""
    xp = get_namespace(L)
    n = L.shape[0]
    for k in range(0, n, block):
        e = min(n, k + block)
        L[k:e, e:] = 0
        L[k:e, k:e] = xp.tril(L[k:e, k:e])


def _chol_small(A, xp):
    L = xp.linalg.cholesky(A)
    if not bool(xp.all(xp.isfinite(xp.diagonal(L)))):
        raise np.linalg.LinAlgError("matrix is not positive definite")
    return L


def cho_solve(L, b):
    """Solve (L Lᵀ) x = b."""
    sl = _scipy_linalg(get_namespace(L))
    z = sl.solve_triangular(L, b, lower=True)
    return sl.solve_triangular(L, z, lower=True, trans="T")


def solve_triangular(L, b, *, lower=True, trans="N"):
    """Solve L x = b (``trans="T"``: Lᵀ x = b) for a triangular ``L`` on NumPy or CuPy."""
    return _scipy_linalg(get_namespace(L)).solve_triangular(L, b, lower=lower, trans=trans)

