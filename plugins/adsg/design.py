"""The design matrix A (rows a_i) that ADSG's coordinates live in, and its blocks.

Three kinds share one small interface, so the epoch kernels in
:mod:`kopt_plugins.adsg.epochs` are written once:

* :class:`SparseDesign` -- the input features of a scipy CSR matrix (kernel
  ``linear`` on LIBSVM data).  NumPy only; a mini-batch row gather costs
  O(nnz(a_I)), a block gradient O(Ω + nnz(a_I)).
* :class:`DenseDesign` -- a dense backend array (``xp`` is NumPy or CuPy):
  dense input features, or random features materialised once when the
  n × M matrix fits the solver's ``feature_memory_mb`` cap.
* :class:`FeatureDesign` -- random features regenerated per mini-batch from
  the seeded feature blocks (never an n × M matrix).  A coordinate block is a
  block of ω: block ``l`` of x is the coefficient vector of feature block ``l``.

Every design holds ``edges`` (B + 1 column boundaries of the coordinate
blocks) and offers ``dot(v)`` = A v, ``tdot(g)`` = Aᵀ g, ``rows(I)`` (a
mini-batch of rows with ``dot`` and ``block_tdot``), ``row_norms_sq()`` and
``block_gram_matvec(v)`` (for the block smoothness estimate).
"""
from __future__ import annotations

import numpy as np

from kopt.numerics import rows as _rows
from kopt.numerics.backend import to_numpy


def block_edges(dim: int, blocks: int) -> np.ndarray:
    """Boundaries of ``blocks`` contiguous, non-empty coordinate blocks of sizes ⌊D/B⌋ or ⌈D/B⌉."""
    if not 1 <= blocks <= dim:
        raise ValueError(f"need 1 <= blocks <= dim, got blocks={blocks}, dim={dim}")
    return (np.arange(blocks + 1, dtype=np.int64) * dim) // blocks


class SparseRows:
    """Rows ``I`` of a CSR matrix, gathered once: ``dot`` and ``block_tdot`` reuse the gather."""

    __slots__ = ("cols", "vals", "rid", "b", "_sorted")

    def __init__(self, design, I):
        indptr, indices, data = design.indptr, design.indices, design.data
        b = len(I)
        self.b = b
        if b == 1:
            i = int(I[0])
            lo, hi = indptr[i], indptr[i + 1]
            self.cols, self.vals, self.rid = indices[lo:hi], data[lo:hi], None
            self._sorted = True
            return
        st = indptr[I]
        ln = indptr[I + 1] - st
        csum = np.cumsum(ln)
        pos = np.arange(csum[-1] if b else 0, dtype=np.int64) + np.repeat(st - (csum - ln), ln)
        self.cols, self.vals = indices[pos], data[pos]
        self.rid = np.repeat(np.arange(b), ln)
        self._sorted = False

    def dot(self, v):
        """a_iᵀ v for the rows of the batch, shape (b,)."""
        if self.rid is None:
            return np.array([np.dot(self.vals, v[self.cols])])
        return np.bincount(self.rid, weights=self.vals * v[self.cols], minlength=self.b)

    def block_tdot(self, c, lo, hi):
        """Σ_i c_i [a_i]_{lo:hi}, shape (hi - lo,)."""
        out = np.zeros(hi - lo)
        cols, vals = self.cols, self.vals
        if self._sorted:
            p0, p1 = np.searchsorted(cols, (lo, hi))
            out[cols[p0:p1] - lo] = c[0] * vals[p0:p1]
            return out
        m = (cols >= lo) & (cols < hi)
        return np.bincount(cols[m] - lo, weights=vals[m] * c[self.rid[m]], minlength=hi - lo)

    def tdot(self, c, dim):
        """Σ_i c_i a_i as a dense vector of length ``dim``."""
        if self.rid is None:
            out = np.zeros(dim)
            out[self.cols] = c[0] * self.vals
            return out
        return np.bincount(self.cols, weights=self.vals * c[self.rid], minlength=dim)


class SparseDesign:
    """Input features of a scipy CSR matrix (float64 arithmetic, NumPy only)."""

    xp = np
    kind = "input features (sparse)"

    def __init__(self, A, blocks):
        A = A.tocsr()
        if not A.has_sorted_indices:
            A = A.sorted_indices()
        A.sum_duplicates()
        self.A = A
        self.indptr = A.indptr.astype(np.int64)
        self.indices = A.indices.astype(np.int64)
        self.data = A.data.astype(np.float64)
        self.n, self.dim = A.shape
        self.edges = block_edges(self.dim, blocks)
        self._coo = None

    def dot(self, v):
        return np.asarray(self.A @ v, dtype=np.float64)

    def tdot(self, g):
        return np.asarray(self.A.T @ g, dtype=np.float64)

    def rows(self, I):
        return SparseRows(self, np.asarray(I, dtype=np.int64))

    def row_norms_sq(self):
        return np.bincount(np.repeat(np.arange(self.n), np.diff(self.indptr)), weights=self.data**2, minlength=self.n)

    def block_gram_matvec(self, v):
        """For every block l at once: (1/n) A_lᵀ A_l v_l, as one length-D vector."""
        if self._coo is None:
            rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
            blk = np.searchsorted(self.edges, self.indices, side="right") - 1
            self._coo = (rows, blk, rows * (len(self.edges) - 1) + blk)
        rows, blk, cell = self._coo
        nb = len(self.edges) - 1
        P = np.bincount(cell, weights=self.data * v[self.indices], minlength=self.n * nb)
        return np.bincount(self.indices, weights=self.data * P[cell], minlength=self.dim) / self.n


class DenseRows:
    """Rows ``I`` of a dense design (any backend); ``R`` is the (b, D) block of A."""

    __slots__ = ("R",)

    def __init__(self, R):
        self.R = R

    def dot(self, v):
        return self.R @ v

    def block_tdot(self, c, lo, hi):
        return self.R[:, lo:hi].T @ c

    def tdot(self, c, dim):
        return self.R.T @ c


class DenseDesign:
    """A dense (n, D) design on the backend ``xp`` (float64 vectors, stored dtype kept)."""

    kind = "dense"

    def __init__(self, A, blocks=None, *, edges=None, xp=np, kind=None):
        self.A = A
        self.xp = xp
        self.n, self.dim = A.shape
        self.edges = block_edges(self.dim, blocks) if edges is None else np.asarray(edges, dtype=np.int64)
        if kind:
            self.kind = kind

    def dot(self, v):
        return (self.A @ v.astype(self.A.dtype, copy=False)).astype(np.float64, copy=False)

    def tdot(self, g):
        return (self.A.T @ g.astype(self.A.dtype, copy=False)).astype(np.float64, copy=False)

    def rows(self, I):
        idx = self.xp.asarray(I)
        return DenseRows(self.A[idx].astype(np.float64))

    def row_norms_sq(self):
        xp = self.xp
        out = xp.empty(self.n)
        step = 4096
        for lo in range(0, self.n, step):
            R = self.A[lo:lo + step].astype(np.float64)
            out[lo:lo + step] = (R * R).sum(axis=1)
        return out

    def block_gram_matvec(self, v):
        xp = self.xp
        out = xp.empty(self.dim)
        for lo, hi in zip(self.edges[:-1], self.edges[1:]):
            t = self.A[:, lo:hi] @ v[lo:hi].astype(self.A.dtype)
            out[lo:hi] = (self.A[:, lo:hi].T @ t).astype(np.float64)
        return out / self.n


class FeatureDesign:
    """Random features ψ(x)/√M regenerated per mini-batch from the feature seed.

    ``fmap`` is the problem's :class:`kopt.numerics.features.FeatureMap`; its blocks are
    the coordinate blocks.  Never holds an n × M matrix: a full product works
    in row chunks, a mini-batch evaluates only its own b rows.
    """

    kind = "random features (regenerated)"

    def __init__(self, fmap, X, xp, row_chunk=2048):
        self.fmap, self.X, self.xp = fmap, X, xp
        self.n = X.shape[0]
        self.nb = fmap.n_blocks
        self.F = fmap.block_size
        self.dim = self.nb * self.F
        self.scale = 1.0 / np.sqrt(self.dim)
        self.edges = np.arange(self.nb + 1, dtype=np.int64) * self.F
        self.row_chunk = row_chunk

    def _features(self, Xr):
        return self.fmap.transform(Xr).astype(np.float64) * self.scale

    def dot(self, v):
        coef = v.reshape(self.nb, self.F)
        return self.fmap.predict(self.X, coef) * self.scale

    def tdot(self, g):
        return self.fmap.adjoint(self.X, g).reshape(-1) * self.scale

    def rows(self, I):
        return DenseRows(self._features(_rows.take(self.X, self.xp.asarray(I))))

    def row_norms_sq(self):
        xp = self.xp
        out = xp.empty(self.n)
        for lo in range(0, self.n, self.row_chunk):
            R = self._features(self.X[lo:lo + self.row_chunk])
            out[lo:lo + self.row_chunk] = (R * R).sum(axis=1)
        return out

    def subsample(self, rows):
        """A :class:`DenseDesign` of the given rows (for the smoothness estimate)."""
        R = self._features(_rows.take(self.X, self.xp.asarray(rows)))
        return DenseDesign(R, edges=self.edges, xp=self.xp)


def materialize_features(fmap, X, xp, dtype, row_chunk=2048):
    """ψ(X)/√M as one dense (n, M) backend array, filled block by block in row chunks."""
    n = X.shape[0]
    M = fmap.n_blocks * fmap.block_size
    A = xp.empty((n, M), dtype=dtype)
    scale = dtype.type(1.0 / np.sqrt(M))
    for j in range(fmap.n_blocks):
        params_cols = slice(j * fmap.block_size, (j + 1) * fmap.block_size)
        for lo in range(0, n, row_chunk):
            A[lo:lo + row_chunk, params_cols] = fmap.block(X[lo:lo + row_chunk], j) * scale
    return A


def block_smoothness(design, rng, iterations=40):
    """max_l λ_max((1/n) A_lᵀ A_l) by a power iteration run on all blocks at once.

    Returns ``(L_B, per_block)``; the Rayleigh quotients are lower bounds that
    converge to the block maxima.
    """
    xp = design.xp
    edges = design.edges
    v = xp.asarray(rng.standard_normal(design.dim))
    seg = np.repeat(np.arange(len(edges) - 1), np.diff(edges))
    seg_x = xp.asarray(seg)
    nb = len(edges) - 1

    def block_sums(w):
        return xp.asarray(np.bincount(seg, weights=to_numpy(w), minlength=nb))

    lam = xp.zeros(nb)
    for _ in range(iterations):
        norms = xp.sqrt(block_sums(v * v))
        norms = xp.where(norms > 0, norms, 1.0)
        v = v / norms[seg_x]
        w = design.block_gram_matvec(v)
        lam = block_sums(v * w)
        v = w
    lam = to_numpy(lam)
    return float(lam.max()), lam
