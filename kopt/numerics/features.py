"""The random-feature engine: seeded blocks, fused blocked evaluation on every core.

Block ``j`` of a feature map is drawn from a counter-based generator keyed by
``(seed, j)`` on the host (:func:`block_rng`), so any block is regenerated
bit-identically, in any order, on NumPy and CuPy alike (the device receives a
copy of the host draw).  Features are *unscaled*:
E[φ_ω(x) φ_ω(x')] = k(x, x') for each feature; solvers fold the 1/√M scale into
their coefficients.

``predict`` (ψ(X)ᵀθ), ``adjoint`` (ψ(X)v) and the fused ``predict_adjoint`` never
hold an n × M matrix: rows are cut into chunks whose (rows × block) feature
buffer stays in the core's L2 cache; each chunk is transformed once
(``kernel.prepare_rows``, e.g. ``[x, 1]`` so the phase rides in the GEMM) and then
every block is evaluated into the same buffer and immediately reduced with a
GEMV (the cos is fused with the following product through the cache).  The
kernel's constant feature scale (√2 for Fourier features) is applied to the
reduced vector, not to the buffer.  On NumPy the chunks are spread over a pool
of threads (``threads``, default: ``kopt.numerics.threads.resolve_threads``) with per-part buffers: BLAS and NumPy ufuncs release the GIL, and
BLAS itself is held to one thread meanwhile.  The work is cut into a fixed number
of parts (:data:`kopt.numerics.threads.PARTS`, whatever the thread count), each owning an
interleaved set of chunks, and the partial sums are added in part order, so results
depend neither on timing nor on the number of threads.

Kernels may implement the fast path ``prepare_rows(X)`` / ``raw_features(P,
params, out) -> (Z, scale)`` (see ``plugins/kernels/_base.py``); a kernel
with ``features`` alone works too.
"""
from __future__ import annotations

import contextlib
import math
import threading

import numpy as np

from . import rows as _rows
from . import threads as _threads
from .backend import get_namespace
from .memory import check_allocation

_STREAM = 0x6B6F7074  # "kopt": separates feature draws from other seeded streams

#: bytes of one thread's (rows × block) feature buffer on NumPy (half of a 2 MB L2)
CHUNK_BYTES = 1 << 20
#: bytes of the (rows × M) buffer of the fused predict_adjoint, per thread
FUSED_BYTES = 1 << 22
#: fewest rows per chunk of the fused predict_adjoint (fewer rows: Python overhead dominates at large M)
FUSED_MIN_ROWS = 64
#: bytes of feature parameters generated at once (larger maps go in groups of blocks)
PARAM_BYTES = 1 << 26
#: below this many features (rows × features) NumPy work stays on the calling thread
MIN_PARALLEL = 1 << 18
#: from this many features on, BLAS is held to one thread (OpenBLAS threads small GEMMs badly)
MIN_BLAS_LIMIT = 1 << 15


def block_rng(seed: int, block: int) -> np.random.Generator:
    """The generator of feature block ``block`` (Philox keyed by seed and block index)."""
    return np.random.Generator(np.random.Philox(np.random.SeedSequence([int(seed), _STREAM, int(block)])))


_is_sparse = _rows.is_sparse


def _matmul(xp, A, B, out):
    """``out[...] = A @ B``; BLAS writes straight into ``out`` on NumPy."""
    if xp is np:
        np.matmul(A, B, out=out)
    else:
        out[...] = A @ B


class _Evaluator:
    """The kernel's fast path ``prepare_rows`` / ``raw_features`` (:class:`kopt.contract.components.Kernel`).

    The base class defaults fall back on ``features`` (identity rows, scale 1.0).  ``raw``
    returns ``(parts, scale)``: a tuple of ``(rows, w)`` arrays whose side-by-side
    concatenation, times ``scale``, is the block.
    """

    def __init__(self, kernel):
        self.kernel = kernel

    def prepare(self, X):
        return self.kernel.prepare_rows(X)

    def raw(self, P, params, out):
        Z, scale = self.kernel.raw_features(P, params, out=out)
        return (Z if isinstance(Z, tuple) else (Z,)), scale


#: memory a solver holds per random feature beyond the map's parameters (see FeatureMap._check_memory)
BYTES_PER_FEATURE = 40


class FeatureMap:
    """ψ: R^d → R^M as ``n_blocks`` blocks of ``block_size`` features of ``kernel``.

    Parameters
    ----------
    kernel : kopt.contract.components.Kernel
        A kernel with ``has_features``.
    n_in : int
        Input dimension d.
    seed : int
        Feature seed; block ``j`` is drawn from ``block_rng(seed, j)``.
    block_size : int
        Features per block (F).
    count : int, optional
        Total features M (rounded up to whole blocks); without it every call names its blocks.
    dtype : str
        Evaluation dtype (float32 by default); reductions accumulate in float64.
    xp : module
        numpy or cupy.
    cache_blocks : int
        Blocks of parameters kept on the device: the first ``cache_blocks`` blocks met are kept
        for good (solvers sweep their blocks cyclically, where a least-recently-used cache
        smaller than the sweep misses every time and keeping the first ones met hits
        cache/m of them, the most any cache of that size can); 0 regenerates every use.
    row_chunk : int
        Upper bound on the rows evaluated at once (NumPy picks cache-sized chunks below it).
    threads : int, optional
        NumPy worker threads (default ``kopt.numerics.threads.resolve_threads``).
    """

    def __init__(self, kernel, n_in, *, seed, block_size=512, count=None, dtype="float32", xp=np, cache_blocks=0,
                 row_chunk=4096, threads=None):
        self.kernel = kernel
        self.n_in = int(n_in)
        self.seed = int(seed)
        self.block_size = int(block_size)
        self.dtype = np.dtype(dtype)
        self.xp = xp
        self.n_blocks = math.ceil(count / self.block_size) if count else None
        self.cache_blocks = int(cache_blocks)
        self.row_chunk = max(1, int(row_chunk))
        self.threads = _threads.resolve_threads(threads)
        self._cache = {}
        self._lock = threading.Lock()
        self._eval = _Evaluator(kernel)
        self._check_memory()

    def _check_memory(self):
        """Refuse, before any allocation, a map whose parameters and weights cannot fit in memory."""
        blocks = 1 + min(self.cache_blocks, self.n_blocks or 0)
        params = blocks * self.block_size * (self.n_in + 1) * self.dtype.itemsize
        # per feature: float64 weights, their update and the saved model's copy (BYTES_PER_FEATURE is the
        # measured count with a margin: docs/design/memory.md)
        weights = BYTES_PER_FEATURE * (self.count or 0)
        lower = "lower model.features.count" + (", model.features.cache_blocks" if self.cache_blocks else "")
        check_allocation(params + weights, f"model.features: {self.count or self.block_size:,} random features "
                         f"on {self.n_in:,} inputs (blocks of {self.block_size:,})", lower + " or block_size")

    @property
    def count(self):
        return None if self.n_blocks is None else self.n_blocks * self.block_size

    # -- parameters ---------------------------------------------------------
    def host_params(self, j: int) -> dict:
        """Block ``j``'s parameters as drawn on the host (NumPy, float64/int)."""
        return self.kernel.sample(block_rng(self.seed, j), self.n_in, self.block_size)

    def block_params(self, j: int) -> dict:
        """Block ``j``'s parameters on the device, floats in ``dtype`` (regenerated unless cached)."""
        j = int(j)
        p = self._cache.get(j)
        if p is not None:
            return p
        host = self.host_params(j)
        p = {k: self.xp.asarray(np.asarray(v, dtype=self.dtype) if np.asarray(v).dtype.kind == "f" else v)
             for k, v in host.items()}
        if len(self._cache) < self.cache_blocks:
            with self._lock:
                if len(self._cache) < self.cache_blocks:
                    p = self._cache.setdefault(j, p)
        return p

    # -- single blocks and small dense maps ---------------------------------
    def block(self, X, j: int, out=None):
        """Unscaled features of block ``j``: ``(n, block_size)``."""
        X = self._input(X, dense=True)
        return self.kernel.features(X, self.block_params(j), out=out)

    def transform(self, X, blocks=None):
        """All requested blocks side by side, ``(n, len(blocks) * block_size)`` (small n only)."""
        blocks = list(self._blocks(blocks))
        X = self._input(X, dense=True)
        F = self.block_size
        out = self.xp.empty((X.shape[0], len(blocks) * F), dtype=self.dtype)
        for bi, j in enumerate(blocks):
            dst = out[:, bi * F:(bi + 1) * F]
            Z = self.kernel.features(X, self.block_params(j), out=dst)
            if Z is not dst:
                dst[...] = Z
        return out

    # -- fused blocked evaluation -------------------------------------------
    def predict(self, X, coef, blocks=None):
        """Σ_j φ_j(X) coef[j]; ``coef`` is ``(nb, F)`` or ``(nb, F, C)``; returns float64 ``(n,)`` or ``(n, C)``."""
        xp = self.xp
        blocks = list(self._blocks(blocks))
        X = self._input(X)
        coef = xp.asarray(coef, dtype=self.dtype)
        self._check_coef(coef, blocks)
        n = X.shape[0]
        tail = tuple(coef.shape[2:])
        out = xp.zeros((n,) + tail, dtype=np.float64)

        def start(rows, by_rows):  # split by blocks, every thread sums its own copy of the rows
            return {"tmp": xp.empty((rows,) + tail, dtype=self.dtype), "out": out if by_rows else xp.zeros_like(out)}

        def visit(state, lo, hi, bi, Z, scale):
            tmp, dst = state["tmp"][: hi - lo], state["out"][lo:hi]
            at = 0
            for part in Z:
                w = part.shape[1]
                _matmul(xp, part, coef[bi, at:at + w], tmp)
                if scale != 1.0:
                    tmp *= tmp.dtype.type(scale)
                dst += tmp
                at += w

        states, by_rows = self._sweep(X, blocks, start, visit)
        if not by_rows:
            for st in states:  # part order: deterministic
                out += st["out"]
        return out

    def adjoint(self, X, v, blocks=None):
        """out[j] = φ_j(X)ᵀ v for each block: float64 ``(nb, F)`` or ``(nb, F, C)``."""
        xp = self.xp
        blocks = list(self._blocks(blocks))
        X = self._input(X)
        v = xp.asarray(v, dtype=self.dtype)
        if v.shape[0] != X.shape[0]:
            raise ValueError(f"adjoint: v has {v.shape[0]} rows, X has {X.shape[0]}")
        tail = tuple(v.shape[1:])
        F = self.block_size
        scales = [1.0] * len(blocks)

        def start(rows, by_rows):
            return {"acc": xp.zeros((len(blocks), F) + tail, dtype=np.float64),
                    "g": xp.empty((F,) + tail, dtype=self.dtype)}

        def visit(state, lo, hi, bi, Z, scale):
            g = state["g"]
            at = 0
            for part in Z:
                w = part.shape[1]
                _matmul(xp, part.T, v[lo:hi], g[at:at + w])
                at += w
            state["acc"][bi] += g
            scales[bi] = scale

        states, _ = self._sweep(X, blocks, start, visit)
        if not states:
            return xp.zeros((len(blocks), F) + tail, dtype=np.float64)
        out = states[0]["acc"]
        for st in states[1:]:
            out += st["acc"]
        self._apply_scales(out, scales)
        return out

    def predict_adjoint(self, X, coef, fn, blocks=None):
        """Fused ``pred = predict(X, coef)`` and ``grad = adjoint(X, fn(pred))`` with one feature evaluation.

        ``fn(pred_rows, lo, hi)`` maps the float64 predictions of rows ``lo:hi`` to the
        vector (or ``(rows, C)`` matrix) ``v`` of those rows, e.g.
        ``lambda f, lo, hi: loss.grad(f, y[lo:hi])``; it must be row-wise, is called
        from worker threads and must not call back into the engine.  Returns ``(pred, grad)``.  Every row's features of all
        blocks are held at once (chunks of ``FUSED_BYTES``), so this pays off when M is
        moderate, e.g. a mini-batch gradient over a fixed feature map.
        """
        xp = self.xp
        blocks = list(self._blocks(blocks))
        X = self._input(X)
        coef = xp.asarray(coef, dtype=self.dtype)
        self._check_coef(coef, blocks)
        n, nb, F = X.shape[0], len(blocks), self.block_size
        tail = tuple(coef.shape[2:])
        rows = self._rows_per_chunk(n, nb * F, FUSED_BYTES, floor=FUSED_MIN_ROWS)
        chunks = [(lo, min(n, lo + rows)) for lo in range(0, n, rows)]
        if xp is not np or len(chunks) < self._parts(n, nb * F, nb):
            # too few rows to share out (a mini-batch): two passes split by blocks keep every core busy.  On a GPU
            # always: holding every block's features of a chunk caps the chunk at FUSED_BYTES / M rows, and each
            # (chunk, block) pair is a dozen kernel launches: the fused pass ran an order of magnitude slower than
            # the two passes on an H200 (docs/design/kernel-passes.md)
            pred = self.predict(X, coef, blocks)
            return pred, self.adjoint(X, xp.asarray(fn(pred, 0, n)), blocks)
        parts = self._parts(n, nb * F, len(chunks))
        params = [self.block_params(j) for j in blocks]
        pred = xp.zeros((n,) + tail, dtype=np.float64)
        scales = [1.0] * nb

        def work(t):
            acc = xp.zeros((nb, F) + tail, dtype=np.float64)
            buf = xp.empty((nb, rows, F), dtype=self.dtype)  # buf[bi, :r] is contiguous
            tmp = xp.empty((rows,) + tail, dtype=self.dtype)
            g = xp.empty((F,) + tail, dtype=self.dtype)
            held = [None] * nb
            for lo, hi in chunks[t::parts]:
                r = hi - lo
                P = self._eval.prepare(self._rows(X, lo, hi))
                for bi in range(nb):
                    held[bi], scales[bi] = self._eval.raw(P, params[bi], buf[bi, :r])
                    at = 0
                    for part in held[bi]:
                        w = part.shape[1]
                        _matmul(xp, part, coef[bi, at:at + w], tmp[:r])
                        if scales[bi] != 1.0:
                            tmp[:r] *= tmp.dtype.type(scales[bi])
                        pred[lo:hi] += tmp[:r]
                        at += w
                vr = xp.asarray(fn(pred[lo:hi], lo, hi), dtype=self.dtype)
                for bi in range(nb):
                    at = 0
                    for part in held[bi]:
                        w = part.shape[1]
                        _matmul(xp, part.T, vr, g[at:at + w])
                        at += w
                    if scales[bi] != 1.0:
                        g *= g.dtype.type(scales[bi])
                    acc[bi] += g
            return acc

        accs = self._run(work, parts, n * nb * F >= MIN_BLAS_LIMIT)
        grad = accs[0]
        for a in accs[1:]:
            grad += a
        return pred, grad

    # -- internals -----------------------------------------------------------
    def _sweep(self, X, blocks, start, visit):
        """Evaluate every (row chunk, block) pair once and hand the features to ``visit``.

        With enough row chunks each worker thread takes the chunks ``t, t + T, ...`` and
        evaluates every block on a chunk before moving on, so the prepared rows are reused
        (blocks go in groups whose parameters fit ``PARAM_BYTES``).  With fewer chunks than
        threads (a mini-batch against many blocks) the threads split the blocks instead and
        draw their blocks' parameters themselves (NumPy's generators release the GIL).
        ``start(rows, by_rows)`` makes each worker's state, in thread order, on the calling
        thread; returns ``(states, by_rows)``.
        """
        xp = self.xp
        n, F = X.shape[0], self.block_size
        if n == 0 or not blocks:
            return [], True
        rows = self._rows_per_chunk(n, F, CHUNK_BYTES)
        chunks = [(lo, min(n, lo + rows)) for lo in range(0, n, rows)]
        big = n * F * len(blocks) >= MIN_BLAS_LIMIT
        parts = self._parts(n, F * len(blocks), max(len(chunks), len(blocks)))
        by_rows = len(chunks) >= parts
        states = [start(rows, by_rows) for _ in range(parts)]

        if not by_rows:
            items = list(enumerate(blocks))

            def work(t):
                state = states[t]
                buf = xp.empty((rows, F), dtype=self.dtype)
                prepared = [self._eval.prepare(self._rows(X, lo, hi)) for lo, hi in chunks]
                for bi, j in items[t::parts]:
                    p = self.block_params(j)
                    for (lo, hi), P in zip(chunks, prepared):
                        Z, scale = self._eval.raw(P, p, buf[: hi - lo])
                        visit(state, lo, hi, bi, Z, scale)

            self._run(work, parts, big)
            return states, by_rows

        for group in self._groups(blocks):
            params = [(bi, self.block_params(j)) for bi, j in group]

            def work(t, params=params):
                state = states[t]
                buf = xp.empty((rows, F), dtype=self.dtype)
                for lo, hi in chunks[t::parts]:
                    P = self._eval.prepare(self._rows(X, lo, hi))
                    Zb = buf[: hi - lo]
                    for bi, p in params:
                        Z, scale = self._eval.raw(P, p, Zb)
                        visit(state, lo, hi, bi, Z, scale)

            self._run(work, parts, big)
        return states, by_rows

    def _run(self, work, parts, big):
        """``[work(p) for p in range(parts)]`` on ``threads`` pool threads; BLAS held to one thread for ``big`` work.

        The limit matters on one thread too: OpenBLAS spreads a (256 × 29) @ (29 × 256) GEMM over
        its own threads, far slower than one thread on a loaded 2-core machine
        (docs/design/blas-threads.md).
        """
        with _threads.blas_threads(1) if big and self.xp is np else contextlib.nullcontext():
            return _threads.map_parts(work, parts, self.threads)

    def _parts(self, n, features, n_units):
        """How many parts the work is cut into: a function of the work's size, never of the thread count."""
        if self.xp is not np or n * features < MIN_PARALLEL:
            return 1
        return max(1, min(_threads.PARTS, n_units))

    def _rows_per_chunk(self, n, width, budget, floor=8):
        """Rows per chunk: a ``budget``-byte buffer on NumPy (at least ``floor`` rows), large chunks on CuPy."""
        if self.xp is not np:
            return max(1, min(n, max(self.row_chunk, (1 << 26) // max(1, width * self.dtype.itemsize))))
        rows = budget // max(1, width * self.dtype.itemsize)
        return int(max(1, min(n, max(floor, min(self.row_chunk, rows)))))

    def _groups(self, blocks):
        """``[(position, block index), ...]`` groups whose parameters fit ``PARAM_BYTES``."""
        items = list(enumerate(blocks))
        per_block = sum(int(v.nbytes) for v in self.block_params(blocks[0]).values())
        size = max(1, PARAM_BYTES // max(1, per_block))
        return [items[i:i + size] for i in range(0, len(items), size)]

    def _apply_scales(self, out, scales):
        for bi, s in enumerate(scales):
            if s != 1.0:
                out[bi] *= s

    def _check_coef(self, coef, blocks):
        if coef.ndim < 2 or coef.shape[0] != len(blocks) or coef.shape[1] != self.block_size:
            raise ValueError(f"coef must be (n_blocks={len(blocks)}, block_size={self.block_size}[, C]), "
                             f"got {tuple(coef.shape)}")

    def _rows(self, X, lo, hi):
        """Rows ``lo:hi`` as a dense array of ``dtype`` (sparse chunks are densified here)."""
        if _is_sparse(X):
            return self.xp.asarray(X[lo:hi].toarray(), dtype=self.dtype)
        return X[lo:hi]

    def _blocks(self, blocks):
        if blocks is None:
            if self.n_blocks is None:
                raise ValueError("this FeatureMap has no fixed count; pass the block indices")
            return range(self.n_blocks)
        return blocks

    def _input(self, X, dense=False):
        """``X`` checked by the kernel, as CSR or as an array of ``dtype`` on the backend (``dense``: always an array)."""
        if _is_sparse(X):
            X = X.tocsr()
        else:
            xp = self.xp
            if get_namespace(X) is not xp or X.dtype != self.dtype:
                X = xp.asarray(X, dtype=self.dtype)
        self.kernel.check_input(X)
        if dense and _is_sparse(X):
            X = self._rows(X, 0, X.shape[0])
        return X
