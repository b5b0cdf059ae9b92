"""Base classes of the built-in kernels: the fast-path protocol and random Fourier features.

Every built-in kernel with features implements two methods that
:class:`kopt.numerics.features.FeatureMap` uses on its hot path (declared with defaults on
:class:`kopt.contract.components.Kernel`, so third-party kernels may implement ``features`` alone):

``prepare_rows(X)``
    per-row input transform, computed once per row chunk and shared by all
    feature blocks (e.g. ``[x, 1]`` so that the phase ``b`` rides in the GEMM);
``raw_features(P, params, out=None) -> (Z, scale)``
    the features of one block are ``scale * Z``; the engine folds ``scale``
    into the reduced vectors instead of spending a pass over ``Z``.  ``Z`` is an
    ``(n, F)`` array or a tuple of C-contiguous pieces whose side-by-side
    concatenation is the block (e.g. the cos and the sin halves): NumPy's SIMD
    sin/cos run slower on strided views (docs/design/kernel-passes.md), so each piece is
    contiguous, carved out of the (contiguous) ``out`` buffer when one is given.

``features(X, params, out)`` is defined from these two, so the fast path and the
public method cannot disagree.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.components import BANDWIDTH_PARAMS, Kernel
from kopt.numerics.backend import get_namespace

from ._util import dense, resolved_bandwidth

TWO_PI = 2.0 * np.pi

SINCOS = {
    "description": "evaluate Fourier features in (cos, sin) pairs that share one frequency and phase: each "
    "feature keeps its distribution, the pair has lower variance and costs half a GEMM",
    "type": "boolean",
    "default": True,
}


def out_buffer(xp, out, rows, count, *arrays):
    """``out`` or a fresh ``(rows, count)`` array of the arrays' result dtype."""
    if out is not None:
        return out
    return xp.empty((rows, count), dtype=np.result_type(*[a.dtype for a in arrays]))


def pieces(xp, out, rows, widths, *arrays):
    """Contiguous ``(rows, w)`` arrays, one per width, laid end to end in ``out`` (or fresh memory)."""
    total = rows * sum(widths)
    if out is not None and out.flags.c_contiguous and out.size >= total:
        flat = out.reshape(-1)
    else:
        flat = xp.empty(total, dtype=out.dtype if out is not None else np.result_type(*[a.dtype for a in arrays]))
    res, at = [], 0
    for w in widths:
        res.append(flat[at:at + rows * w].reshape(rows, w))
        at += rows * w
    return res


def assemble(xp, Z, out):
    """The ``(n, F)`` block from ``raw_features``' result (an array or a tuple of pieces), into ``out``."""
    if not isinstance(Z, tuple):
        if out is not None and Z is not out:
            out[...] = Z
            return out
        return Z
    n, F = Z[0].shape[0], sum(z.shape[1] for z in Z)
    res = xp.empty((n, F), dtype=Z[0].dtype) if out is None else out
    at = 0
    for z in Z:
        res[:, at:at + z.shape[1]] = z
        at += z.shape[1]
    return res


def matmul_into(xp, A, B, out):
    """``out[...] = A @ B`` (BLAS writes straight into ``out`` on NumPy)."""
    if xp is np:
        return np.matmul(A, B, out=out)
    out[...] = A @ B
    return out


class FeatureKernel(Kernel):
    """A kernel whose features are ``scale * raw_features(prepare_rows(X), params)``."""

    def raw_features(self, P, params, out=None):
        """``(Z, scale)`` with the unscaled features equal to ``scale * Z``."""
        raise NotImplementedError

    def features(self, X, params, out=None):
        X = dense(X)
        xp = get_namespace(X)
        # fresh memory for the raw block: pieces carved out of ``out`` would overlap their destination
        Z, scale = self.raw_features(self.prepare_rows(X), params)
        Z = assemble(xp, Z, out)
        if scale != 1.0:
            Z *= Z.dtype.type(scale)
        return Z


class RandomFourierKernel(FeatureKernel):
    """Shift-invariant kernels k(t(x) − t(x')) with φ(x) = √2 cos(ωᵀt(x) + b), b ~ U[0, 2π].

    Subclasses draw ω (``sample_omega``) and may transform the input (``transform``,
    the identity here).  With ``sincos`` (default) block ``count = F`` holds
    ``h = ceil(F/2)`` frequencies: feature ``f < h`` is √2 cos(u_f) and feature
    ``h + g`` is √2 sin(u_g), ``u = Wᵀt(x) + b``.  Each single feature is still
    distributed as in the paper (b uniform makes the sine a cosine with phase
    b − π/2), so E[φ_f(x) φ_f(x')] = k(x, x') holds feature by feature; the pair
    sums to 2 cos(ωᵀ(t(x) − t(x'))) exactly (Sutherland & Schneider 2015: lower
    variance than independent phases).

    params: ``Wb`` (d+1, h) -- the frequencies with the phases as last row -- and
    ``b`` (F,), the phase of every feature (a sine repeats its partner's phase).
    """

    params = {**BANDWIDTH_PARAMS, "sincos": SINCOS}

    @property
    def bandwidth(self) -> float:
        """The numeric bandwidth σ (``options.bandwidth``); a clear error while it is still 'median'.

        ``kopt.contract.bandwidth.resolve_bandwidth`` turns 'median' into a number before the kernel is built.
        """
        return resolved_bandwidth(self)

    def sample_omega(self, rng, n_in, count):
        """``(n_in, count)`` frequencies, float64, from the kernel's spectral density."""
        raise NotImplementedError

    def transform(self, X):
        """t(x): the kernel is shift invariant in t(x) (identity here)."""
        return X

    def sample(self, rng, n_in, count):
        h = (count + 1) // 2 if self.options.sincos else count
        W = np.asarray(self.sample_omega(rng, n_in, h), dtype=np.float64)
        b = rng.uniform(0.0, TWO_PI, size=h)
        return {"Wb": np.vstack([W, b[None, :]]), "b": np.concatenate([b, b[: count - h]])}

    def prepare_rows(self, X):
        xp = get_namespace(X)
        T = self.transform(X)
        P = xp.empty((T.shape[0], T.shape[1] + 1), dtype=T.dtype)
        P[:, :-1] = T
        P[:, -1] = 1.0
        return P

    def raw_features(self, P, params, out=None):
        xp = get_namespace(P)
        Wb = params["Wb"]
        count, h = params["b"].shape[0], Wb.shape[1]
        m = count - h
        U, S = pieces(xp, out, P.shape[0], (h, m), P, Wb)
        matmul_into(xp, P, Wb, U)
        if m:
            xp.sin(U if m == h else U[:, :m], out=S)
        xp.cos(U, out=U)
        return ((U, S) if m else (U,)), float(np.sqrt(2.0))

    def diag(self, X):
        X = dense(X)
        return get_namespace(X).ones(X.shape[0], dtype=X.dtype if X.dtype.kind == "f" else np.float64)
