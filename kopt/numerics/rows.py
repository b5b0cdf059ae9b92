"""Row access for dense backend arrays and scipy CSR matrices alike.

Training and test features are a dense NumPy/CuPy array, or a scipy CSR matrix for sparse
(LIBSVM) input.  Code that needs dense rows asks for them here, a slice or an index array at
a time, so a sparse matrix is only ever densified one chunk at a time.
"""
from __future__ import annotations

import numpy as np

from .backend import to_numpy


def is_sparse(X) -> bool:
    """Whether ``X`` is a scipy sparse matrix (kopt's sparse input)."""
    return hasattr(X, "tocsr") and hasattr(X, "nnz")


def take(X, rows):
    """Rows of ``X`` (a slice or an index array), keeping its kind: CSR stays CSR."""
    if isinstance(rows, slice):
        return X[rows]
    if is_sparse(X):
        return X[to_numpy(rows)]
    return X[rows]


def dense(X, rows, xp, dtype, order=None):
    """Rows of ``X`` (a slice, an index array, or None for all) as a dense ``dtype`` array of ``xp``; ``order``
    "F" makes it Fortran order (without a C-order copy first for sparse rows)."""
    part = X if rows is None else take(X, rows)
    if is_sparse(part):
        return xp.asarray(part.toarray(order=order), dtype=dtype, order=order)
    part = xp.asarray(part)
    part = part if part.dtype == dtype else part.astype(dtype)
    return part if order is None else xp.asarray(part, order=order)


def kernel_rows(kernel, X, rows, xp, dtype):
    """Rows of ``X`` as ``kernel.exact`` takes them: CSR as they are where the kernel evaluates sparse rows
    (:attr:`kopt.contract.components.Kernel.sparse_rows`, on NumPy), else dense ``dtype`` (:func:`dense`)."""
    if is_sparse(X) and getattr(kernel, "sparse_rows", False) and xp is np:
        part = X if rows is None else take(X, rows)
        return part if part.dtype == dtype else part.astype(dtype)
    return dense(X, rows, xp, dtype)


def chunks(n: int, rows_per_chunk: int):
    """``(lo, hi)`` ranges of at most ``rows_per_chunk`` rows covering ``range(n)``."""
    step = max(1, int(rows_per_chunk))
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def on_backend(X, xp):
    """``X`` on the backend: dense arrays move to ``xp``, CSR stays on the host (NumPy only)."""
    return X if is_sparse(X) or X is None else xp.asarray(X)


def sample(rng: np.random.Generator, n: int, k: int):
    """``k`` sorted distinct row indices out of ``n`` drawn with ``rng`` (None when k is 0 or >= n: all rows)."""
    if not k or k >= n:
        return None
    return np.sort(rng.choice(n, size=int(k), replace=False))
