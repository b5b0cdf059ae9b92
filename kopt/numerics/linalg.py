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


def cholesky(A, *, overwrite=False, block=BLOCK, direct_max=DIRECT_MAX, zero_upper=True):
    """Lower Cholesky factor L (A = L Lᵀ, upper triangle zero) of a symmetric positive-definite matrix.

    Only A's lower triangle is read.  ``zero_upper=False`` leaves whatever the upper triangle held
    (LAPACK's output) for callers that only hand L to :func:`cho_solve` / ``solve_triangular(lower=True)``,
    which read the lower triangle alone: zeroing it costs a pass and a copy of each block
    (docs/benchmarks.md, "Measurements behind the code's choices").
    Raises ``numpy.linalg.LinAlgError`` when A is not positive definite.
    """
    xp = get_namespace(A)
    sl = _scipy_linalg(xp)
    L = A if overwrite else A.copy()
    n = L.shape[0]
    if n <= direct_max:
        if xp is np:
            if L.flags.c_contiguous and not L.flags.f_contiguous:
                # LAPACK factors Fortran order in place, and given C order it factors a copy (one M × M more):
                # A's lower triangle in C order is the upper one of its Fortran-order transpose, whose
                # upper factor U (A = UᵀU) is, read back in C order, the lower factor L = Uᵀ
                U, _ = sl.cho_factor(L.T, lower=False, overwrite_a=True, check_finite=False)
                L = U.T
            else:
                L, _ = sl.cho_factor(L, lower=True, overwrite_a=True, check_finite=False)
            if zero_upper:
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
    if zero_upper:
        _zero_upper(L, block)
    return L


def ridge_solve(A, y, shift, d=None):
    """α with (DAD + shift·I)β = Dy, α = Dβ (D = diag(d), or I): weighted kernel ridge regression's stationarity
    condition, (A + shift·W⁻¹)α = y on rows of weight w = d² > 0 (a row of weight 0 gets α = 0).  A (float64; its
    lower triangle is read) is overwritten.  Raises ``numpy.linalg.LinAlgError`` when DAD + shift·I is not positive
    definite."""
    xp = get_namespace(A)
    if d is not None:
        A *= d[:, None]
        A *= d[None, :]
    A[xp.diag_indices(A.shape[0])] += shift
    L = cholesky(A, overwrite=True, zero_upper=False)  # cho_solve reads the lower triangle alone
    return cho_solve(L, y) if d is None else d * cho_solve(L, d * y)


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
    # only L's lower triangle is read (its upper one may hold other data: NystromSystem factors in T's buffer),
    # and no finiteness scan of L (an M × M pass per call, a visible share of a profiled fit: docs/benchmarks.md,
    # "Measurements behind the code's choices"): a factor is finite
    z = sl.solve_triangular(L, b, lower=True, check_finite=False)
    return sl.solve_triangular(L, z, lower=True, trans="T", check_finite=False)


def solve_triangular(L, b, *, lower=True, trans="N", unit_diagonal=False):
    """Solve L x = b (``trans="T"``: Lᵀ x = b) for a triangular ``L`` on NumPy or CuPy: only L's triangle named by
    ``lower`` is read, and with ``unit_diagonal`` not its diagonal either (taken as ones)."""
    return _scipy_linalg(get_namespace(L)).solve_triangular(L, b, lower=lower, trans=trans, unit_diagonal=unit_diagonal)



# -- symmetric rank-k update through NumPy's own OpenBLAS -------------------------------------------
#
# K_BB = Z Zᵀ is symmetric: BLAS's ?syrk computes one triangle, half the flops of the GEMM.  SciPy's
# wrapper (scipy.linalg.blas.ssyrk) holds the GIL for the whole call, so kopt's worker threads could
# not overlap two of them (docs/benchmarks.md, "Measurements behind the code's choices").  NumPy's bundled OpenBLAS
# exports the CBLAS entry point; a ctypes call releases the GIL, and the library is the one
# :mod:`kopt.numerics.threads` already holds to one thread inside the worker pool, so every call is a
# single-threaded, deterministic BLAS call -- the sums are bit-identical on any thread count.

_CBLAS_ROW_MAJOR, _CBLAS_LOWER, _CBLAS_NO_TRANS = 101, 122, 111
#: (symbol, integer type) of ?syrk's CBLAS entry in the OpenBLAS builds NumPy and SciPy wheels bundle
_SYRK_SYMBOLS = (("scipy_cblas_{p}syrk64_", "int64"), ("cblas_{p}syrk64_", "int64"),
                 ("scipy_cblas_{p}syrk", "int32"), ("cblas_{p}syrk", "int32"))
_syrk_cache = {}


def _numpy_blas_path():
    """The file of the BLAS library NumPy's matmul calls (threadpoolctl's view), or None."""
    import os

    from threadpoolctl import threadpool_info

    npdir = os.path.dirname(os.path.abspath(np.__file__))
    site = os.path.dirname(npdir)
    for info in threadpool_info():
        path = info.get("filepath") or ""
        if info.get("user_api") == "blas" and info.get("internal_api") == "openblas" and (
                path.startswith(npdir) or os.path.basename(os.path.dirname(path)) == "numpy.libs"
                and os.path.dirname(os.path.dirname(path)) == site):
            return path
    return None


def cblas_syrk(dtype):
    """The CBLAS ``?syrk`` (float32: ``ssyrk``, float64: ``dsyrk``) of NumPy's OpenBLAS as a ctypes
    function ``(fn, int_type)``, or None where there is none (another BLAS, a NumPy without a
    bundled OpenBLAS) -- callers then use a GEMM."""
    import ctypes

    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        return None
    key = dtype.char
    if key in _syrk_cache:
        return _syrk_cache[key]
    found = None
    try:
        path = _numpy_blas_path()
        lib = ctypes.CDLL(path) if path else None
    except (OSError, ImportError):
        lib = None
    if lib is not None:
        prefix = "s" if dtype == np.float32 else "d"
        real = ctypes.c_float if dtype == np.float32 else ctypes.c_double
        for template, itype in _SYRK_SYMBOLS:
            fn = getattr(lib, template.format(p=prefix), None)
            if fn is None:
                continue
            cint = ctypes.c_int64 if itype == "int64" else ctypes.c_int32
            fn.restype = None
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, cint, cint, real, ctypes.c_void_p, cint,
                           real, ctypes.c_void_p, cint]
            found = fn
            break
    _syrk_cache[key] = found
    return found


def syrk_lower(Z, out, *, accumulate=False):
    """``out``'s lower triangle ← Z Zᵀ (+ its old value with ``accumulate``); the strict upper triangle
    of ``out`` is not touched.  Z: C-contiguous (m, k); out: C-contiguous (m, m), same dtype.

    Half the flops of ``Z @ Z.T``, through NumPy's OpenBLAS with the GIL released
    (:func:`cblas_syrk`); raises ``RuntimeError`` where that entry point is missing.
    """
    fn = cblas_syrk(Z.dtype)
    if fn is None:
        raise RuntimeError("no CBLAS ?syrk in NumPy's BLAS; use a GEMM")
    m, k = Z.shape
    if out.shape != (m, m) or out.dtype != Z.dtype or not (Z.flags.c_contiguous and out.flags.c_contiguous):
        raise ValueError("syrk_lower: Z (m, k) and out (m, m) must be C-contiguous arrays of one dtype")
    if m == 0:
        return out
    if k == 0:
        if not accumulate:
            out[np.tril_indices(m)] = 0
        return out
    fn(_CBLAS_ROW_MAJOR, _CBLAS_LOWER, _CBLAS_NO_TRANS, m, k, 1.0, Z.ctypes.data, k, 1.0 if accumulate else 0.0,
       out.ctypes.data, m)
    return out
