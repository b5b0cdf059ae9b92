"""Helpers shared by the built-in kernels: distances, dense views, input checks."""
from __future__ import annotations

import numpy as np

from kopt.errors import DataError
from kopt.numerics.backend import get_namespace
from kopt.numerics.rows import is_sparse  # noqa: E402  (the one test for scipy sparse input)


def dense(X):
    """``X`` as a dense array of its namespace (SciPy sparse input becomes a NumPy array)."""
    if is_sparse(X):
        return np.asarray(X.toarray())
    return X


def float_pair(X, Y):
    """``(xp, X, Y)`` as dense arrays of one floating dtype (float32 stays float32)."""
    X, Y = dense(X), dense(Y)
    xp = get_namespace(X, Y)
    dt = np.result_type(X.dtype, Y.dtype)
    if not np.issubdtype(dt, np.floating):
        dt = np.dtype(np.float64)
    return xp, xp.asarray(X, dtype=dt), xp.asarray(Y, dtype=dt)


def sq_dists(X, Y):
    """Squared Euclidean distances ``(n, m)``, clipped at 0."""
    xp, X, Y = float_pair(X, Y)
    xx = (X * X).sum(axis=1)[:, None]
    yy = (Y * Y).sum(axis=1)[None, :]
    D = X @ Y.T
    D *= -2.0
    D += xx
    D += yy
    return xp.maximum(D, 0.0, out=D)


def l1_dists(X, Y):
    """Manhattan distances ``(n, m)``, one coordinate at a time (no n x m x d temporary)."""
    xp, X, Y = float_pair(X, Y)
    D = xp.zeros((X.shape[0], Y.shape[0]), dtype=X.dtype)
    T = xp.empty_like(D)
    for k in range(X.shape[1]):
        xp.subtract(X[:, k, None], Y[None, :, k], out=T)
        xp.abs(T, out=T)
        D += T
    return D


def per_coordinate(X, Y, fn):
    """Σ_k fn(X[:, k, None], Y[None, :, k]) over coordinates: additive kernels, ``(n, m)``."""
    xp, X, Y = float_pair(X, Y)
    D = xp.zeros((X.shape[0], Y.shape[0]), dtype=X.dtype)
    for k in range(X.shape[1]):
        D += fn(xp, X[:, k, None], Y[None, :, k])
    return D


def check_min(kernel, X, lower, strict=False, what=None):
    """Raise DataError unless every entry of ``X`` is ``>= lower`` (``> lower`` when ``strict``)."""
    if X is None:
        return
    data = X.data if is_sparse(X) else X
    if data.size == 0:
        return
    xp = get_namespace(data)
    lo = float(xp.min(data))
    if is_sparse(X) and X.nnz < X.shape[0] * X.shape[1]:
        lo = min(lo, 0.0)  # implicit zeros
    bad = not (lo > lower if strict else lo >= lower) or not np.isfinite(float(xp.max(data)))
    if bad:
        need = what or (f"entries > {lower:g}" if strict else f"entries >= {lower:g}")
        raise DataError(
            f"kernel {kernel.name!r} needs {need}, but the data has minimum {lo:g} (or non-finite values); "
            "features are z-scored by default -- set data.standardize: false for histogram-like data"
        )


def resolved_bandwidth(kernel):
    """The kernel's numeric bandwidth; a clear error while it is still 'median'."""
    bw = kernel.options.bandwidth
    if isinstance(bw, str):
        raise ValueError(
            f"kernel {kernel.name!r}: bandwidth {bw!r} is not resolved; build kernels through "
            "kopt.running.assemble.build_kernel, resolve it with kopt.contract.bandwidth.resolve_bandwidth, or pass a number"
        )
    return float(bw)
