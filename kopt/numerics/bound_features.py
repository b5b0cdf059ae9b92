"""A fixed feature map bound to fixed rows: the passes an M-dimensional solver makes over its data.

``bind(fmap, X, memory_bytes)`` returns an object with one API whether the n × M features are
kept in memory (when they fit ``memory_bytes``: every later pass is two memory-bound products)
or regenerated on every pass (the engine's fused, blocked evaluation; never an n × M matrix):

``predict(v)``
    Ψv, float64 ``(n, C)``, for coefficients ``v`` ``(M, C)`` on ψ = φ/√M;
``predict_adjoint(v, fn)``
    ``(Ψv, Ψᵀ fn(Ψv))`` with one feature evaluation; ``fn(pred_rows, lo, hi)`` is row-wise;
``gram(weights)``
    Σ_i w_i ψ(x_i) ψ(x_i)ᵀ, ``(M, M)`` in the map's dtype, upper triangle only;
``features(rows)``
    ψ of some rows, ``(k, M)`` in the map's dtype (low-rank updates of a Gram).

Scaling: ψ = φ/√M, so ‖θ‖² of a model f = ψᵀθ is its RKHS norm under the random-feature kernel.

Precision: features and their products are in the map's dtype (float32 by default), each chunk's
products summed into float64; the Gram is float64 (``gram``): Newton–CG on an ill-conditioned
problem needs a preconditioner more exact than float32 sums give, while float32 products do no harm
(docs/design/nystrom-system.md).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from . import rows as _rows
from . import threads as _threads
from .backend import get_namespace


def bind(fmap, X, memory_bytes: int, threads: int | None = None):
    """``fmap`` (with a fixed count M) bound to rows ``X``: materialised within ``memory_bytes``, else streamed."""
    n, M = X.shape[0], fmap.count
    if n * M * fmap.dtype.itemsize <= memory_bytes:
        return MaterializedRows(fmap, X, threads)
    return StreamedRows(fmap, X, threads)


class StreamedRows:
    """Features regenerated on every pass by the engine (memory O(M d + chunk))."""

    materialized = False

    def __init__(self, fmap, X, threads=None):
        self.fmap, self.X, self.xp, self.dtype = fmap, X, fmap.xp, fmap.dtype
        self.n, self.M = X.shape[0], fmap.count
        self.root = math.sqrt(self.M)
        self.threads = _threads.resolve_threads(threads)

    def _coef(self, v):
        return (v / self.root).reshape(self.fmap.n_blocks, self.fmap.block_size, -1)

    def predict(self, v):
        return self.fmap.predict(self.X, self._coef(v)).reshape(self.n, -1)

    def predict_adjoint(self, v, fn):
        pred, G = self.fmap.predict_adjoint(self.X, self._coef(v), fn)
        return pred.reshape(self.n, -1), G.reshape(self.M, -1) / self.root

    def gram(self, weights=None):
        return gram(self, weights)

    def features(self, rows):
        """ψ of ``rows``, featurised over the worker threads."""
        xp = self.fmap.xp
        Z = xp.empty((int(rows.shape[0]), self.M), dtype=self.dtype)

        pieces = _threads.split(Z.shape[0], _threads.PARTS)  # a fixed cut: the same bits on any thread count

        def work(p):
            if p >= len(pieces):
                return
            lo, hi = pieces[p]
            Z[lo:hi] = self.fmap.transform(_rows.take(self.X, rows[lo:hi]))

        with _threads.blas_threads(1):
            _threads.map_parts(work, _threads.PARTS, self.threads)
        Z *= Z.dtype.type(1.0 / self.root)
        return Z


class ChunkedRows:
    """The passes over rows cut into fixed chunks: subclasses give ``_block(lo, hi)``, the (chunk × M)
    features of rows lo:hi, in ``dtype``.

    The chunks are dealt to ``kopt.numerics.threads.PARTS`` parts (chunk c to part c mod PARTS) and the
    parts' sums added in order: the bits do not depend on the thread count.
    """

    materialized = False

    def _ranges(self, p):
        """The chunks of part ``p``."""
        return self.chunks[p::_threads.PARTS]

    def predict(self, v: np.ndarray) -> np.ndarray:
        """The scores ψ(X) v: every row's features times ``v``, a chunk at a time.

        Parameters
        ----------
        v : array of shape (M,) or (M, k)
            Coefficients on the features.

        Returns
        -------
        array of shape (n, k)
            The scores, float64 (products in the features' dtype).
        """
        xp = self.xp
        vv = xp.asarray(v, dtype=self.dtype).reshape(self.M, -1)
        out = xp.empty((self.n, vv.shape[1]), dtype=np.float64)

        def work(p):
            for lo, hi in self._ranges(p):
                out[lo:hi] = self._block(lo, hi) @ vv

        with _threads.blas_threads(1):
            _threads.map_parts(work, _threads.PARTS, self.threads)
        return out

    def predict_adjoint(self, v: np.ndarray,
                        fn: Callable[[np.ndarray, int, int], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The scores ψ(X) v and ψ(X)ᵀ fn(scores) in one evaluation of each chunk's features.

        Parameters
        ----------
        v : array of shape (M,) or (M, k)
            Coefficients on the features.
        fn : callable
            ``fn(pred_rows, lo, hi)``, row-wise: given the float64 scores of rows lo:hi, returns what multiplies them,
            ``(hi - lo, k)`` or ``(hi - lo,)``.  It runs on kopt's worker threads, on disjoint rows.

        Returns
        -------
        scores : array of shape (n, k)
            ψ(X) v, float64.
        G : array of shape (M, k)
            ψ(X)ᵀ fn(scores), the parts summed in part order in float64.
        """
        xp = self.xp
        vv = xp.asarray(v, dtype=self.dtype).reshape(self.M, -1)
        pred = xp.empty((self.n, vv.shape[1]), dtype=np.float64)

        def work(p):
            acc = xp.zeros((self.M, vv.shape[1]), dtype=np.float64)
            for lo, hi in self._ranges(p):
                block = self._block(lo, hi)
                pred[lo:hi] = block @ vv
                w = xp.asarray(fn(pred[lo:hi], lo, hi), dtype=self.dtype).reshape(hi - lo, -1)
                acc += block.T @ w
            return acc

        with _threads.blas_threads(1):
            parts = _threads.map_parts(work, _threads.PARTS, self.threads)
        G = parts[0]
        for p in parts[1:]:  # part order: deterministic
            G += p
        return pred, G

    def gram(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Σ_i w_i ψ(x_i)ᵀ ψ(x_i) over the rows, summed in float64.

        Parameters
        ----------
        weights : array of shape (n,), optional
            Row weights (1 each without them; rows of weight 0 cost nothing).

        Returns
        -------
        array of shape (M, M)
            The sum in its upper triangle (the strict lower one is not meaningful).
        """
        return gram(self, weights)


class MaterializedRows(ChunkedRows):
    """ψ(X) kept as an n × M array of the map's dtype (built once, a row chunk at a time)."""

    materialized = True
    #: rows per chunk of the threaded products (a chunk of ψ stays in cache between its two products)
    CHUNK_BYTES = 1 << 20

    def __init__(self, fmap, X, threads=None):
        xp = fmap.xp
        self.fmap, self.xp, self.dtype = fmap, xp, fmap.dtype
        self.n, self.M = X.shape[0], fmap.count
        self.threads = _threads.resolve_threads(threads)
        self.Psi = xp.empty((self.n, self.M), dtype=fmap.dtype)
        scale = fmap.dtype.type(1.0 / math.sqrt(self.M))
        for lo, hi in _rows.chunks(self.n, max(1, (1 << 24) // max(1, self.M * fmap.dtype.itemsize))):
            block = fmap.transform(_rows.take(X, slice(lo, hi)))
            block *= scale
            self.Psi[lo:hi] = block
        step = max(16, self.CHUNK_BYTES // max(1, self.M * fmap.dtype.itemsize))
        self.chunks = _rows.chunks(self.n, step)

    def _block(self, lo, hi):
        return self.Psi[lo:hi]

    def features(self, rows):
        return self.Psi[rows]


def gram(op, weights=None, *, chunk_bytes=1 << 23):
    """Σ_i w_i ψ(x_i) ψ(x_i)ᵀ over the rows of ``op`` with w_i > 0 (all rows without weights).

    The upper triangle of an ``(M, M)`` float64 array: a symmetric rank-k update per chunk of
    ``op.features(rows)`` (cast to float64) on ``op.threads`` BLAS threads.  float64 costs twice
    float32's flops, and it is what makes the Gram a preconditioner Newton–CG can trust on an
    ill-conditioned problem (docs/design/nystrom-system.md).  Rows of weight 0 cost nothing.
    """
    xp = op.xp
    G = xp.zeros((op.M, op.M), dtype=np.float64)
    if weights is None:
        rows, scale = xp.arange(op.n), None
    else:
        w = xp.asarray(weights, dtype=np.float64)
        rows = xp.nonzero(w > 0)[0]
        scale = xp.sqrt(w[rows])
    step = max(1, chunk_bytes // max(1, op.M * 8))
    for lo in range(0, int(rows.shape[0]), step):
        Z = op.features(rows[lo:lo + step]).astype(np.float64)
        if scale is not None:
            Z *= scale[lo:lo + step, None]
        syrk_update(G, Z, 1.0, op.threads)
    return G


def syrk_update(G, Z, alpha, threads=1):
    """``G += alpha ZᵀZ`` on the upper triangle of the square ``G``, in place; ``Z`` is cast to ``G``'s dtype.

    The triangle is cut into ``kopt.numerics.threads.PARTS`` column bands of equal area, each a GEMM on
    one BLAS thread, spread over ``threads`` worker threads: a multi-threaded BLAS ``syrk`` (or
    Cholesky) gives different bits on different thread counts, this gives the same on any.  The
    strictly lower triangle of the diagonal blocks is written too; nothing reads it.
    """
    xp = get_namespace(G)
    Z = xp.asarray(Z, dtype=G.dtype)
    M = G.shape[0]
    parts = _threads.PARTS
    edges = sorted({int(round(M * ((k / parts) ** 0.5))) for k in range(parts + 1)})
    bands = [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]

    def work(p):
        if p < len(bands):
            lo, hi = bands[p]
            T = Z[:, :hi].T @ Z[:, lo:hi]
            if alpha == 1.0:
                G[:hi, lo:hi] += T
            elif alpha == -1.0:
                G[:hi, lo:hi] -= T
            else:
                T *= alpha
                G[:hi, lo:hi] += T

    with _threads.blas_threads(1):
        _threads.map_parts(work, parts, threads)
    return G
