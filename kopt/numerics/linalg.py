"""Dense linear algebra on NumPy or CuPy, robust at the sizes exact solvers meet.

The OpenBLAS bundled with SciPy segfaulted in a 2-thread Cholesky at
n = 16,512 on the development machine (fine at 12,000), so large
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


def cholesky(A, *, overwrite=False, block=BLOCK, direct_max=DIRECT_MAX, zero_upper=True, released=False):
    """Lower Cholesky factor L (A = L Lᵀ, upper triangle zero) of a symmetric positive-definite matrix.

    Only A's lower triangle is read.  ``zero_upper=False`` leaves whatever the upper triangle held
    (LAPACK's output) for callers that only hand L to :func:`cho_solve` / ``solve_triangular(lower=True)``,
    which read the lower triangle alone: zeroing it costs a pass and a copy of each block
    (docs/design/blas-threads.md).
    ``released``: factor a C-order NumPy A through NumPy's LAPACKE with the GIL released (:func:`released_cholesky`),
    for factors made on kopt's worker threads (SciPy's holds the GIL: the threads ran one factor at a time).
    Raises ``numpy.linalg.LinAlgError`` when A is not positive definite.
    """
    xp = get_namespace(A)
    sl = _scipy_linalg(xp)
    L = A if overwrite else A.copy()
    n = L.shape[0]
    if n <= direct_max:
        if xp is np and released and released_cholesky(L) is not None:
            if zero_upper:
                _zero_upper(L, block)
            return L
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


def ridge_factor(A, shift, d=None, released=False):
    """The lower Cholesky factor L of DAD + shift·I (D = diag(d), or I), made in A's buffer (A float64, its lower
    triangle read; L in its lower triangle, the strict upper one left as it was): weighted kernel ridge regression's
    system, which :func:`ridge_apply` solves.  Raises ``numpy.linalg.LinAlgError`` when it is not positive definite.
    ``released``: the factor with the GIL released (:func:`cholesky`)."""
    xp = get_namespace(A)
    if d is not None:
        A *= d[:, None]
        A *= d[None, :]
    A[xp.diag_indices(A.shape[0])] += shift
    return cholesky(A, overwrite=True, zero_upper=False, released=released)


def ridge_apply(L, y, d=None, released=False):
    """α = Dβ with L Lᵀ β = Dy, for :func:`ridge_factor`'s L (or a leading block of it: the system of the leading
    rows alone)."""
    return cho_solve(L, y, released=released) if d is None else d * cho_solve(L, d * y, released=released)


def ridge_solve(A, y, shift, d=None, released=False):
    """α with (DAD + shift·I)β = Dy, α = Dβ (D = diag(d), or I): weighted kernel ridge regression's stationarity
    condition, (A + shift·W⁻¹)α = y on rows of weight w = d² > 0 (a row of weight 0 gets α = 0).  A (float64; its
    lower triangle is read) is overwritten.  Raises ``numpy.linalg.LinAlgError`` when DAD + shift·I is not positive
    definite.  ``released``: the factor and the solves with the GIL released (:func:`cholesky`)."""
    return ridge_apply(ridge_factor(A, shift, d, released), y, d, released)


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


def cho_solve(L, b, *, released=False):
    """Solve (L Lᵀ) x = b.  ``released``: through NumPy's CBLAS with the GIL released (:func:`released_trsm`), for
    solves on kopt's worker threads."""
    if released and get_namespace(L) is np:
        x = np.asfortranarray(np.array(b, dtype=L.dtype).reshape(len(b), -1))  # a copy: solved in place
        if released_trsm(L, x, trans=False, lower=True) and released_trsm(L, x, trans=True, lower=True):
            return x.reshape(np.shape(b))
    sl = _scipy_linalg(get_namespace(L))
    # only L's lower triangle is read (its upper one may hold other data: NystromSystem factors in T's buffer),
    # and no finiteness scan of L (an M × M pass per call, a visible share of a profiled fit:
    # docs/design/blas-threads.md): a factor is finite
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
# not overlap two of them (docs/design/blas-threads.md).  NumPy's bundled OpenBLAS
# exports the CBLAS entry point; a ctypes call releases the GIL, and the library is the one
# :mod:`kopt.numerics.threads` already holds to one thread inside the worker pool, so every call is a
# single-threaded, deterministic BLAS call -- the sums are bit-identical on any thread count.

_CBLAS_ROW_MAJOR, _CBLAS_COL_MAJOR, _CBLAS_LOWER, _CBLAS_UPPER = 101, 102, 122, 121
_CBLAS_NO_TRANS, _CBLAS_TRANS, _CBLAS_LEFT, _CBLAS_RIGHT, _CBLAS_NON_UNIT = 111, 112, 141, 142, 131
#: (symbol, integer type) of each entry point in the OpenBLAS builds NumPy and SciPy wheels bundle: CBLAS ?syrk, ?trsm
#: and ?gemm, LAPACKE ?potrf
_SYMBOLS = {
    "syrk": (("scipy_cblas_{p}syrk64_", "int64"), ("cblas_{p}syrk64_", "int64"),
             ("scipy_cblas_{p}syrk", "int32"), ("cblas_{p}syrk", "int32")),
    "trsm": (("scipy_cblas_{p}trsm64_", "int64"), ("cblas_{p}trsm64_", "int64"),
             ("scipy_cblas_{p}trsm", "int32"), ("cblas_{p}trsm", "int32")),
    "gemm": (("scipy_cblas_{p}gemm64_", "int64"), ("cblas_{p}gemm64_", "int64"),
             ("scipy_cblas_{p}gemm", "int32"), ("cblas_{p}gemm", "int32")),
    # LAPACKE's _work entry: no scan of the matrix for NaNs before the factor (a factor of NaNs fails anyway)
    "potrf": (("scipy_LAPACKE_{p}potrf_work64_", "int64"), ("LAPACKE_{p}potrf_work64_", "int64"),
              ("scipy_LAPACKE_{p}potrf_work", "int32"), ("LAPACKE_{p}potrf_work", "int32")),
}
_entry_cache = {}


def _argtypes(kind, cint, real):
    import ctypes

    e, p = ctypes.c_int, ctypes.c_void_p
    if kind == "syrk":  # order, uplo, trans, n, k, alpha, A, lda, beta, C, ldc
        return [e, e, e, cint, cint, real, p, cint, real, p, cint], None
    if kind == "trsm":  # order, side, uplo, trans, diag, m, n, alpha, A, lda, B, ldb
        return [e, e, e, e, e, cint, cint, real, p, cint, p, cint], None
    if kind == "gemm":  # order, transA, transB, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc
        return [e, e, e, cint, cint, cint, real, p, cint, p, cint, real, p, cint], None
    return [e, ctypes.c_char, cint, p, cint], cint  # potrf: layout, uplo, n, A, lda -> info


def _numpy_blas_entry(kind, dtype):
    """``kind``'s entry point (``"syrk"``, ``"trsm"``, ``"gemm"``, ``"potrf"``) for ``dtype`` in NumPy's OpenBLAS as a ctypes
    function, or None where there is none (another BLAS, a NumPy without a bundled OpenBLAS)."""
    import ctypes

    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        return None
    key = (kind, dtype.char)
    if key in _entry_cache:
        return _entry_cache[key]
    found = None
    try:
        path = _numpy_blas_path()
        lib = ctypes.CDLL(path) if path else None
    except (OSError, ImportError):
        lib = None
    if lib is not None:
        prefix = "s" if dtype == np.float32 else "d"
        real = ctypes.c_float if dtype == np.float32 else ctypes.c_double
        for template, itype in _SYMBOLS[kind]:
            fn = getattr(lib, template.format(p=prefix), None)
            if fn is None:
                continue
            fn.argtypes, fn.restype = _argtypes(kind, ctypes.c_int64 if itype == "int64" else ctypes.c_int32, real)
            found = fn
            break
    _entry_cache[key] = found
    return found


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
    function, or None where there is none (another BLAS, a NumPy without a
    bundled OpenBLAS) -- callers then use a GEMM."""
    return _numpy_blas_entry("syrk", dtype)


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


# -- Cholesky factors and triangular solves with the GIL released ---------------------------------------------------
#
# SciPy's LAPACK and BLAS wrappers hold the GIL for the whole call as well (a factor or a triangular solve on two of
# kopt's worker threads took as long as the two one after the other), so the exact pairs' Choleskys and the Nystrom
# systems' triangular solves ran on one core however many threads were asked.  The same entry points of NumPy's
# OpenBLAS (LAPACKE ?potrf, CBLAS ?trsm) through ctypes release it; each call runs on one BLAS thread inside kopt's
# worker pool, so the bits are the same on any thread count.


def released_cholesky(A):
    """A's lower Cholesky factor in place (A: C-order float64 or float32, its lower triangle read; the strict upper
    triangle is left as it was) through NumPy's LAPACKE ?potrf, the GIL released; None where NumPy's BLAS has no such
    entry (the caller then factors with SciPy).  Raises ``numpy.linalg.LinAlgError`` where A is not positive definite."""
    fn = _numpy_blas_entry("potrf", A.dtype)
    if fn is None or not A.flags.c_contiguous or A.ndim != 2 or A.shape[0] != A.shape[1]:
        return None
    n = A.shape[0]
    if n:
        _potrf_lower(fn, A.ctypes.data, n, n)
    return A


def _potrf_lower(potrf, address, n, lda, c_order=True):
    """The lower Cholesky factor, in place, of the n x n block at ``address`` of a C-order matrix whose rows are
    ``lda`` apart (or a Fortran-order one's, columns ``lda`` apart, with ``c_order=False``): a lower triangle in C
    order is the upper one of its Fortran-order transpose, whose factor U (A = UᵀU), read back in C order, is L = Uᵀ."""
    info = potrf(_CBLAS_COL_MAJOR, b"U" if c_order else b"L", n, address, lda)
    if info != 0:
        raise np.linalg.LinAlgError(f"the matrix is not positive definite (LAPACKE ?potrf info {info})")


def released_trsm(U, B, *, side="left", trans=True, lower=False):
    """B ← op(U)⁻¹ B (``side="left"``) or B op(U)⁻¹ (``"right"``) in place, op(U) = Uᵀ with ``trans`` (U: upper
    triangular, or lower with ``lower``), through NumPy's CBLAS ?trsm with the GIL released.  U and B: one dtype, U
    square and either order, B Fortran order (left: its columns are solved; right: its rows, B a row block of a
    C-order array given as its transpose's column block -- see :func:`kopt.nystrom.system.solve_upper_transposed`).
    Returns False where NumPy's BLAS has no such entry (B untouched), True when solved."""
    fn = _numpy_blas_entry("trsm", B.dtype)
    if fn is None or U.dtype != B.dtype or not B.flags.f_contiguous or not (U.flags.f_contiguous or U.flags.c_contiguous):
        return False
    m, n = B.shape
    if m == 0 or n == 0:
        return True
    # U in C order is Uᵀ in Fortran order: the other triangle, the other transpose
    upper = not lower if U.flags.f_contiguous else lower
    transposed = trans if U.flags.f_contiguous else not trans
    fn(_CBLAS_COL_MAJOR, _CBLAS_LEFT if side == "left" else _CBLAS_RIGHT, _CBLAS_UPPER if upper else _CBLAS_LOWER,
       _CBLAS_TRANS if transposed else _CBLAS_NO_TRANS, _CBLAS_NON_UNIT, m, n, 1.0, U.ctypes.data, U.shape[0],
       B.ctypes.data, m)
    return True


#: the tile of :func:`parted_cholesky`: a 4,096 x 4,096 factor is 16 diagonal blocks, their panels and 136 column
#: updates, each BLAS call at its single-thread rate
PARTED_BLOCK = 256


def parted_cholesky(A, threads=None, block=PARTED_BLOCK):
    """A's lower Cholesky factor in place (A: C-order or Fortran-order float64 or float32, its lower triangle read,
    the strict upper one left as it was), on kopt's worker threads with the same bits on any thread count; None where
    NumPy's BLAS lacks the entries (the caller then factors another way).  Raises ``numpy.linalg.LinAlgError`` where A
    is not positive definite.

    A threaded LAPACK Cholesky's bits follow the thread count (OpenBLAS's ``?potrf`` on 1 and 2 threads differ in the
    last bits, and so does a model solved from it).  Here the work is cut by the matrix, not by the threads:
    right-looking by tiles of ``block``, each diagonal tile one ``?potrf``, each panel's rows in fixed parts one ``?trsm``
    each, and each column of tiles below the panel one ``?syrk`` and one ``?gemm`` -- every call single-threaded, on
    its own part of A (GIL released), so the order of the sums does not depend on which thread runs a part."""
    from . import threads as _threads

    fns = [_numpy_blas_entry(k, A.dtype) for k in ("potrf", "trsm", "syrk", "gemm")]
    if any(f is None for f in fns) or A.ndim != 2 or A.shape[0] != A.shape[1]:
        return None
    if not (A.flags.c_contiguous or A.flags.f_contiguous):
        return None
    potrf, trsm, syrk, gemm = fns
    n = A.shape[0]
    item, base = A.itemsize, A.ctypes.data
    workers = _threads.resolve_threads(threads)
    # the same calls in either order: CBLAS reads each tile in the order given (A[i, j] at its own address)
    rows_first = A.flags.c_contiguous
    order = _CBLAS_ROW_MAJOR if rows_first else _CBLAS_COL_MAJOR

    def at(i, j):  # the address of A[i, j]
        return base + ((i * n + j) if rows_first else (i + j * n)) * item

    edges = list(range(0, n, block)) + [n]
    with _threads.blas_threads(1):
        for t in range(len(edges) - 1):
            lo, hi = edges[t], edges[t + 1]
            b = hi - lo
            _potrf_lower(potrf, at(lo, lo), b, n, rows_first)  # the diagonal tile
            if hi == n:
                break
            rows = _threads.split(n - hi, max(1, min(_threads.PARTS, (n - hi) // 64)))

            def panel(p):  # A[r, lo:hi] <- A[r, lo:hi] L_tt^-T for the part's rows r
                r0, r1 = rows[p]
                trsm(order, _CBLAS_RIGHT, _CBLAS_LOWER, _CBLAS_TRANS, _CBLAS_NON_UNIT, r1 - r0, b, 1.0,
                     at(lo, lo), n, at(hi + r0, lo), n)

            _threads.map_parts(panel, len(rows), workers)
            later = edges[t + 1:]

            def column(c):  # the tiles of column c below the panel: A[i, c] -= L[i, t] L[c, t]^T for i >= c
                c0, c1 = later[c], later[c + 1]
                syrk(order, _CBLAS_LOWER, _CBLAS_NO_TRANS, c1 - c0, b, -1.0, at(c0, lo), n, 1.0,
                     at(c0, c0), n)
                if c1 < n:
                    gemm(order, _CBLAS_NO_TRANS, _CBLAS_TRANS, n - c1, c1 - c0, b, -1.0, at(c1, lo), n,
                         at(c0, lo), n, 1.0, at(c1, c0), n)

            _threads.map_parts(column, len(later) - 1, workers)
    return A
