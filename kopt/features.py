"""The random-feature engine: seeded blocks, fused blocked evaluation.

Block ``j`` of a feature map is drawn from a counter-based generator keyed by
``(seed, j)`` on the host, so any block is regenerated bit-identically, in any
order, on NumPy and CuPy alike.  Features are *unscaled*:
E[φ_ω(x) φ_ω(x')] = k(x, x') for each feature; solvers fold the 1/√M scale
into their coefficients.  ``predict`` (ψ(X)ᵀθ) and ``adjoint`` (ψ(X)v) work in
row chunks and never hold an n × M matrix.
"""
from __future__ import annotations

import math

import numpy as np

from .backend import get_namespace

_STREAM = 0x6B6F7074  # "kopt": separates feature draws from other seeded streams


def block_rng(seed: int, block: int) -> np.random.Generator:
    """The generator of feature block ``block`` (Philox keyed by seed and block index)."""
    return np.random.Generator(np.random.Philox(np.random.SeedSequence([int(seed), _STREAM, int(block)])))


class FeatureMap:
    """ψ: R^d -> R^M as ``n_blocks`` blocks of ``block_size`` features of ``kernel``."""

    def __init__(self, kernel, n_in, *, seed, block_size=512, count=None, dtype="float32", xp=np, cache_blocks=0,
                 row_chunk=4096):
        self.kernel = kernel
        self.n_in = int(n_in)
        self.seed = int(seed)
        self.block_size = int(block_size)
        self.dtype = np.dtype(dtype)
        self.xp = xp
        self.n_blocks = math.ceil(count / self.block_size) if count else None
        self.cache_blocks = int(cache_blocks)
        self.row_chunk = int(row_chunk)
        self._cache = {}

    @property
    def count(self):
        return None if self.n_blocks is None else self.n_blocks * self.block_size

    def block_params(self, j: int) -> dict:
        p = self._cache.get(j)
        if p is not None:
            return p
        host = self.kernel.sample(block_rng(self.seed, j), self.n_in, self.block_size)
        p = {k: self.xp.asarray(np.asarray(v, dtype=self.dtype) if np.asarray(v).dtype.kind == "f" else v)
             for k, v in host.items()}
        if len(self._cache) < self.cache_blocks:
            self._cache[j] = p
        return p

    def block(self, X, j: int, out=None):
        """Unscaled features of block ``j``: ``(n, block_size)``."""
        return self.kernel.features(self._as(X), self.block_params(j), out=out)

    def transform(self, X, blocks=None):
        """All requested blocks side by side, ``(n, len(blocks) * block_size)`` (small n only)."""
        blocks = self._blocks(blocks)
        X = self._as(X)
        return self.xp.concatenate([self.block(X, j) for j in blocks], axis=1)

    def predict(self, X, coef, blocks=None):
        """Σ_j φ_j(X) coef[j]; ``coef`` is ``(nb, F)`` or ``(nb, F, C)``; returns ``(n,)`` or ``(n, C)``."""
        xp = self.xp
        blocks = self._blocks(blocks)
        X = self._as(X)
        coef = xp.asarray(coef)
        n = X.shape[0]
        out = xp.zeros((n,) + tuple(coef.shape[2:]), dtype=np.float64)
        for bi, j in enumerate(blocks):
            params = self.block_params(j)
            c = coef[bi].astype(self.dtype, copy=False)
            for lo in range(0, n, self.row_chunk):
                hi = min(n, lo + self.row_chunk)
                out[lo:hi] += self.kernel.features(X[lo:hi], params) @ c
        return out

    def adjoint(self, X, v, blocks=None):
        """out[j] = φ_j(X)ᵀ v for each block: ``(nb, F)`` or ``(nb, F, C)``."""
        xp = self.xp
        blocks = self._blocks(blocks)
        X = self._as(X)
        v = xp.asarray(v).astype(self.dtype, copy=False)
        n = X.shape[0]
        out = xp.zeros((len(blocks), self.block_size) + tuple(v.shape[1:]), dtype=np.float64)
        for bi, j in enumerate(blocks):
            params = self.block_params(j)
            for lo in range(0, n, self.row_chunk):
                hi = min(n, lo + self.row_chunk)
                out[bi] += self.kernel.features(X[lo:hi], params).T @ v[lo:hi]
        return out

    def _blocks(self, blocks):
        if blocks is None:
            if self.n_blocks is None:
                raise ValueError("this FeatureMap has no fixed count; pass the block indices")
            return range(self.n_blocks)
        return blocks

    def _as(self, X):
        xp = self.xp
        if get_namespace(X) is not xp or X.dtype != self.dtype:
            X = xp.asarray(X, dtype=self.dtype)
        return X
