"""Where DBCD-TR gets K_BB and K_{B,:}α from: the exact kernel, or a fixed random-feature map.

Both engines expose the same operations on a block of rows ``idx``:

``prepare(idx)``
    returns ``(K_BB, (Kα)_B)`` in float64 and remembers what ``update`` needs;
``update(delta)``
    folds the block's change ``delta = α_B^new − α_B^old`` into the engine's state;
``scores(rows)``
    the decision values f(x_i) = (Kα)_i on training rows (for the primal and the gap);
``test_scores(alpha, X)`` / ``predictor(alpha)``
    holdout decision values and the model's predictor.

Exact engine (Zhang & Lai (2025) "exact Joker"): keeps ``u = Kα`` (n × C, float64).
``(Kα)_B`` is ``u_B``; after the block, ``u += K_{:,B} δ`` in row chunks —
the same O(n|B|d) kernel evaluations as computing K_{B,:}α afresh, but the
primal and the duality gap then cost O(n), not O(n²).

Feature engine ("inexact Joker", Sec. 2.3): ψ(x) = φ(x)/√M with the spec's
seeded feature map; keeps θ̃ = Σ α_i φ(x_i) (M × C, float64, unscaled) so
``(Kα)_B = φ(X_B)θ̃/M`` and ``K_BB = φ(X_B)φ(X_B)ᵀ/M``.  φ(X_B) is held for
the block (|B| × M) when it fits ``block_memory_mb``, else regenerated for
the update; memory O(|B|² + |B|·M + M·d), never an n × M matrix.

Parallelism: the solver runs with BLAS held to one thread (the skeleton's ``blas =
"single"``) and the engines split their work (row chunks, feature blocks) over
``threads`` pool threads (:mod:`kopt.numerics.threads`); NumPy's BLAS calls and ufuncs release the
GIL.  On a shared machine this avoids the multi-threaded BLAS spin-waits that made a
512 × 512 Cholesky 20× slower.
"""
from __future__ import annotations

import numpy as np

from kopt.models.predictors import FeatureExpansion, KernelExpansion
from kopt.numerics import rows as _rows
from kopt.numerics import threads as _threads
from kopt.numerics.backend import to_numpy
from kopt.numerics.linalg import cblas_syrk, syrk_lower

_CHUNK_ELEMS = 1 << 21  # kernel entries per row chunk (8 MB in float32)


def _row_chunks(n, per_row):
    """Row ranges of about _CHUNK_ELEMS / per_row rows, at least one per part (never a function of the threads)."""
    return _rows.chunks(n, min(_CHUNK_ELEMS // max(1, per_row), -(-n // _threads.PARTS)))


def _part(n, p, parts):
    """Part ``p`` of ``range(n)`` cut into ``parts`` contiguous ranges (maybe empty)."""
    return (p * n // parts, (p + 1) * n // parts)


def _on_parts(work, n, xp, threads):
    """``[work(range) for each part of range(n)]``: :data:`kopt.numerics.threads.PARTS` parts on NumPy (the same bits on any
    thread count), one on a GPU (one thread there, and each part's buffers and launches are paid once, not 8 times)."""
    parts = _threads.PARTS if xp is np else 1
    return _threads.map_parts(lambda p: work(_part(n, p, parts)), parts, threads)


def gram_method(gram, xp, dtype):
    """How the feature engine forms K_BB = φ(X_B)φ(X_B)ᵀ: ``syrk`` (one triangle, half the flops, through
    NumPy's OpenBLAS: :func:`kopt.numerics.linalg.syrk_lower`) or ``gemm`` (the full product).  ``auto``: syrk
    where that BLAS entry point exists (NumPy on a CPU), else gemm; an explicit ``syrk`` without it
    falls back to gemm too (the answer is the same matrix, up to rounding)."""
    if gram == "gemm" or xp is not np:
        return "gemm"
    return "syrk" if cblas_syrk(dtype) is not None else "gemm"


class ExactEngine:
    """K_BB and (Kα)_B from ``kernel.exact``; maintains u = Kα."""

    name = "exact"

    def __init__(self, problem, n_out, dtype, threads=1):
        self.X = problem.X
        self.kernel = problem.kernel
        self.xp = problem.xp
        self.dtype = np.dtype(dtype)
        self.n = problem.n
        self.u = self.xp.zeros((self.n, n_out), dtype=np.float64)
        self.threads = threads if self.xp is np else 1
        self._XB = None

    exact_model = False  # the trust-region model's K_BB is the problem's own

    def prepare(self, idx):
        xp = self.xp
        XB = _rows.dense(self.X, idx, xp, self.dtype)
        K = xp.asarray(self.kernel.exact(XB, XB), dtype=np.float64)
        K = 0.5 * (K + K.T)
        self._XB = XB
        return K, self.u[idx]

    def update(self, delta):
        # K_{:,B} δ in the kernel's working precision (float32 by default: a float64 copy of each
        # chunk would cost as much as the kernel itself); u accumulates in float64.
        xp = self.xp
        XB = self._XB
        d = delta.astype(self.dtype)

        def work(rng):
            lo, hi = rng
            Kc = self.kernel.exact(_rows.dense(self.X, slice(lo, hi), xp, self.dtype), XB)
            self.u[lo:hi] += Kc.astype(self.dtype, copy=False) @ d

        _threads.parallel_map(work, _row_chunks(self.n, XB.shape[0]), self.threads)

    def norm_sq(self, alpha):
        return (alpha * self.u).sum(axis=0)

    def scores(self, rows=None):
        return self.u if rows is None else self.u[rows]

    def test_scores(self, alpha, X):
        xp = self.xp
        sv = xp.nonzero(xp.any(alpha != 0, axis=1))[0]
        out = xp.zeros((X.shape[0], alpha.shape[1]), dtype=np.float64)
        if sv.size == 0:
            return out
        S = _rows.dense(self.X, sv, xp, self.dtype)
        coef = alpha[sv].astype(self.dtype)

        def work(rng):
            lo, hi = rng
            Xc = _rows.dense(X, slice(lo, hi), xp, self.dtype)
            out[lo:hi] = self.kernel.exact(Xc, S).astype(self.dtype, copy=False) @ coef

        _threads.parallel_map(work, _row_chunks(X.shape[0], S.shape[0]), self.threads)
        return out

    def predictor(self, alpha):
        xp = self.xp
        sv = xp.nonzero(xp.any(alpha != 0, axis=1))[0]
        S = to_numpy(_rows.dense(self.X, sv, xp, self.dtype))
        coef = to_numpy(alpha[sv])
        if coef.shape[1] == 1:
            coef = coef[:, 0]
        return KernelExpansion({"support": S, "coef": coef}, {}), {"n_support": int(sv.size)}

    def state(self):
        return {"u": self.u}

    def restore(self, state):
        if "u" not in state:  # a refit start (JokerSolver.refit_state): u = Kα afresh, in row chunks
            self.u = self.test_scores(self.xp.asarray(state["alpha"], dtype=np.float64), self.X)
            return
        self.u = self.xp.asarray(state["u"], dtype=np.float64)



class FeatureEngine:
    """K_BB and (Kα)_B from the random-feature map ψ = φ/√M; maintains θ̃ = Σ α_i φ(x_i)."""

    name = "features"

    def __init__(self, problem, n_out, block_memory_mb=256, threads=1, model_kernel="features", gram="auto"):
        self.X = problem.X
        self.kernel = problem.kernel
        self.model_kernel = model_kernel
        self.xp = problem.xp
        self.fmap = problem.feature_map(cache_blocks="all")  # keep ω, b of every block: O(M d) memory, no redraws
        self.nb = self.fmap.n_blocks
        self.dtype = self.fmap.dtype
        self.F = self.fmap.block_size
        self.M = self.nb * self.F
        self.theta = self.xp.zeros((self.nb, self.F, n_out), dtype=np.float64)
        self.block_memory = block_memory_mb * 2**20
        self.threads = threads if self.xp is np else 1
        self.gram = gram_method(gram, self.xp, self.dtype)
        self._P = None
        self._Phi = None
        self.exact_model = False

    def prepare(self, idx):
        """``(K_BB, (Kα)_B)``; with ``model_kernel: exact`` (and φ(X_B) kept) K_BB is k(X_B, X_B).

        One sweep over the feature blocks, split between the worker threads: each block's
        features of the rows B are generated into a per-thread buffer (the kernel's fast path:
        the rows are prepared once, the cos/sin pieces are never assembled) and immediately
        reduced -- into the thread's K_BB (a |B| × |B| GEMM per block, the iteration's
        dominant |B|²M cost) and (Kα)_B -- so φ(X_B) is never held as a whole.  The update
        regenerates the features (M cosines again: cheaper than writing and re-reading the
        |B| × M matrix when M is large).

        With ``model_kernel: exact`` the trust-region *model* uses the exact kernel block
        (|B|²d flops) while J, ρ and (Kα)_B use the features through :meth:`true_kernel` (two
        |B|·M products per step, on φ(X_B) kept within ``block_memory_mb``): the iterates still
        converge to the random-feature problem's solution, whose optimality condition involves
        only (Kα)_B.
        """
        xp = self.xp
        XB = _rows.dense(self.X, idx, xp, self.dtype)
        m = XB.shape[0]
        keep = self.model_kernel == "exact" and m * self.M * self.dtype.itemsize <= self.block_memory
        P = self.kernel.prepare_rows(XB)
        C = self.theta.shape[2]
        phis = [None] * self.nb
        K_scale = [1.0]  # the kernel's constant feature scale, squared (the same for every block)
        syrk = self.gram == "syrk" and not keep

        G = 1 if keep else self._group(m)

        def work(rng):
            lo, hi = rng
            K = None if keep else xp.zeros((m, m), dtype=np.float64)
            # syrk writes the lower triangle only: T's upper triangle stays 0, K's too until the end
            T = (xp.zeros if syrk else xp.empty)((m, m), dtype=self.dtype)
            g = xp.zeros((m, C), dtype=np.float64)
            buf = xp.empty((m, G * self.F), dtype=self.dtype)
            Z = xp.empty((m, G * self.F), dtype=self.dtype)
            for j in range(lo, hi, G):
                j2 = min(hi, j + G)
                parts, scale = self.kernel.raw_features(P, self._params(j, j2), out=buf)
                parts = parts if isinstance(parts, tuple) else (parts,)
                K_scale[0] = scale * scale
                if syrk:  # the iteration's |B|²M, half of it: one triangle per piece (kopt.numerics.linalg.syrk_lower)
                    for piece, th in zip(parts, self._theta_pieces(j, j2, parts)):
                        g += (piece @ th.astype(self.dtype)) * scale
                    for q, piece in enumerate(parts):
                        syrk_lower(piece, T, accumulate=q > 0)
                    K += T
                    continue
                # the pieces (cos | sin) side by side in one (|B|, G·F) matrix: one GEMM for the Gram
                # instead of one per piece, which is faster (docs/design/joker-iteration.md)
                at = 0
                for piece in parts:
                    Z[:, at:at + piece.shape[1]] = piece
                    at += piece.shape[1]
                Zj = Z[:, :at]
                th = self.theta[j] if j2 == j + 1 else xp.concatenate(self._theta_pieces(j, j2, parts))
                g += (Zj @ th.astype(self.dtype)) * scale
                if keep:
                    phis[j] = Zj * self.dtype.type(scale)
                    continue
                if xp is np:
                    np.matmul(Zj, Zj.T, out=T)  # the iteration's |B|²M (docs/design/joker-iteration.md)
                    K += T
                else:  # pragma: no cover - GPU
                    K += Zj @ Zj.T
            return K, g

        out = _on_parts(work, self.nb, xp, self.threads)
        g = out[0][1]
        for _, gp in out[1:]:
            g += gp
        g *= 1.0 / self.M
        if keep:
            K = xp.asarray(self.kernel.exact(XB, XB), dtype=np.float64)
        else:
            K = out[0][0]
            for Kp, _ in out[1:]:
                K += Kp
            K *= K_scale[0] / self.M
        if syrk:
            K += xp.tril(K, -1).T  # the lower triangle mirrored (the upper one is still 0)
        else:
            K = 0.5 * (K + K.T)
        self._P = P
        self._Phi = phis if keep else None
        self.exact_model = keep
        return K, g

    # -- feature blocks in groups -----------------------------------------------------------------
    def _group(self, m):
        """Feature blocks generated together for a block of ``m`` rows, so that no feature block pays the
        per-call overhead alone.  On a CPU about 1 MB of float32 features (1 block at |B| = 512, 8 at 64:
        the group stays in cache).  On a GPU about 64 MB (64 blocks at |B| = 512): there every array call
        is a kernel launch and a Python round trip, and one block's cosines take far less than a call -- per-block
        calls kept Zhang & Lai's HIGGS iteration far above its floor on an H200
        (docs/design/kernel-passes.md).
        Groups lie inside the fixed parts, so results do not depend on the thread count.  1 where the
        kernel's features are not column-separable (see :meth:`_groupable`)."""
        if not self._groupable():
            return 1
        if self.xp is not np:
            return max(1, (1 << 24) // max(1, m * self.F))
        return max(1, min(16, (1 << 18) // max(1, m * self.F)))

    def _groupable(self):
        """Whether the kernel's features of blocks j..j2 are its ``raw_features`` with every parameter
        array concatenated along its last (feature) axis, each piece laid out block after block --
        true of the random Fourier kernels; checked once on three rows, not assumed."""
        if getattr(self, "_groupable_flag", None) is None:
            self._groupable_flag = False
            if self.nb >= 2:
                try:
                    P = self.kernel.prepare_rows(_rows.dense(self.X, slice(0, 3), self.xp, self.dtype))
                    singles = [self.kernel.raw_features(P, self.fmap.block_params(j)) for j in (0, 1)]
                    both, _ = self.kernel.raw_features(P, self._params(0, 2))
                    both = tuple(map(to_numpy, both)) if isinstance(both, tuple) else (to_numpy(both),)
                    ok = True
                    for j, (one, _) in enumerate(singles):
                        one = tuple(map(to_numpy, one)) if isinstance(one, tuple) else (to_numpy(one),)
                        ok = ok and len(one) == len(both)
                        for a, b in zip(one, both):
                            w = a.shape[1]
                            # a wrong layout is off by O(1); float32 projections of different widths may
                            # round the (large) phases differently, by ~|ωᵀx|·ε
                            ok = ok and b.shape[1] == 2 * w and np.allclose(a, b[:, j * w:(j + 1) * w], rtol=0,
                                                                            atol=1e-3)
                    self._groupable_flag = bool(ok)
                except Exception:  # a kernel whose parameters do not concatenate: one block at a time
                    self._groupable_flag = False
                self._group_cache = {}
        return self._groupable_flag

    def _params(self, j, j2):
        """The parameters of feature blocks j..j2-1 (one block's own, or the concatenation, cached)."""
        if j2 == j + 1:
            return self.fmap.block_params(j)
        cache = self.__dict__.setdefault("_group_cache", {})
        p = cache.get((j, j2))
        if p is None:
            blocks = [self.fmap.block_params(i) for i in range(j, j2)]
            p = {k: (self.xp.concatenate([b[k] for b in blocks], axis=-1) if getattr(blocks[0][k], "ndim", 0) else
                     blocks[0][k]) for k in blocks[0]}
            p = cache.setdefault((j, j2), p)
        return p

    def _theta_pieces(self, j, j2, parts):
        """θ̃'s rows matching each piece of the features of blocks j..j2-1 (piece q of block i sits at
        columns (i − j)·w_q of the grouped piece, and at offset Σ_{r<q} w_r of θ̃[i])."""
        out, at = [], 0
        for piece in parts:
            w = piece.shape[1] // (j2 - j)
            out.append(self.theta[j:j2, at:at + w].reshape((j2 - j) * w, -1))
            at += w
        return out

    def true_kernel(self, s):
        """φ(X_B)(φ(X_B)ᵀ s)/M for the block of the last :meth:`prepare` (φ(X_B) kept)."""
        sd = s.astype(self.dtype)

        def work(rng):
            out = self.xp.zeros(s.shape[0], dtype=np.float64)
            for j in range(*rng):
                Z = self._Phi[j]
                out += Z @ (Z.T @ sd)
            return out

        parts = _on_parts(work, self.nb, self.xp, self.threads)
        out = parts[0]
        for p in parts[1:]:
            out += p
        return out * (1.0 / self.M)

    def update(self, delta):
        """θ̃ += φ(X_B)ᵀ δ (the features kept by :meth:`prepare`, or generated again)."""
        xp = self.xp
        d = delta.astype(self.dtype)
        m = d.shape[0]

        G = 1 if self._Phi is not None else self._group(m)

        def work(rng):
            lo, hi = rng
            buf = xp.empty((m, G * self.F), dtype=self.dtype)
            for j in range(lo, hi, G):
                if self._Phi is not None:
                    self.theta[j] += self._Phi[j].T @ d
                    continue
                j2 = min(hi, j + G)
                parts, scale = self.kernel.raw_features(self._P, self._params(j, j2), out=buf)
                parts = parts if isinstance(parts, tuple) else (parts,)
                at = 0
                for Z in parts:
                    w = Z.shape[1] // (j2 - j)
                    self.theta[j:j2, at:at + w] += ((Z.T @ d) * scale).reshape(j2 - j, w, d.shape[1])
                    at += w

        _on_parts(work, self.nb, xp, self.threads)
        self._Phi = None

    def norm_sq(self, alpha=None):
        return (self.theta * self.theta).sum(axis=(0, 1)) / self.M

    def _predict(self, X, rows=None):
        xp = self.xp
        n = X.shape[0] if rows is None else len(rows)
        out = xp.zeros((n, self.theta.shape[2]), dtype=np.float64)

        step = 1 << 16  # FeatureMap.predict spreads each chunk over its own threads
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            sel = slice(lo, hi) if rows is None else rows[lo:hi]
            out[lo:hi] = self.fmap.predict(_rows.dense(X, sel, xp, self.dtype), self.theta)
        out *= 1.0 / self.M
        return out

    def scores(self, rows=None):
        return self._predict(self.X, rows)

    def test_scores(self, alpha, X):
        return self._predict(X)

    def predictor(self, alpha):
        coef = to_numpy(self.theta)
        if coef.shape[2] == 1:
            coef = coef[:, :, 0]
        meta = {"scale": 1.0 / self.M, "seed": self.fmap.seed, "block_size": self.F, "dtype": self.dtype.name}
        return FeatureExpansion({"coef": coef, "blocks": np.arange(self.nb)}, meta), {"n_features": self.M,
                                                                                     "gram": self.gram}

    def state(self):
        return {"theta": self.theta}

    def restore(self, state):
        if "theta" not in state:  # a refit start (JokerSolver.refit_state): θ̃ = Σ α_i φ(x_i) afresh
            theta = self.fmap.adjoint(self.X, self.xp.asarray(state["alpha"], dtype=np.float64))
            self.theta = self.xp.asarray(theta, dtype=np.float64).reshape(self.theta.shape)
            return
        self.theta = self.xp.asarray(state["theta"], dtype=np.float64)

