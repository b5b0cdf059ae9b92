"""Kernels of inner products: linear, arc-cosine (Cho & Saul), polynomial by TensorSketch (Pham & Pagh).

=============  ==============================================  =============================================
kernel         k(x, x')                                        features
=============  ==============================================  =============================================
linear         xᵀx'  (exact only; SciPy CSR accepted)          --
arccos         (1/π) ‖x‖ⁿ‖x'‖ⁿ J_n(θ), n ∈ {0, 1}              √2 Θ(ωᵀx)(ωᵀx)ⁿ, ω ~ N(0, I)
polynomial     (γ xᵀx' + c)^p                                  √F · TensorSketch_F([√γ x, √c]) coordinate
=============  ==============================================  =============================================

Arc-cosine: θ = angle(x, x'), J_0 = π − θ, J_1 = sin θ + (π − θ) cos θ.  The
features are those of Table 1 without the cosine; the √2 makes
E[φ(x)φ(x')] = k(x, x') (Cho & Saul 2009, eq. 1 has the factor 2).  A zero
row has all features 0, so kopt defines k(0, ·) = 0 for order 0 too.

TensorSketch: block ``F`` draws p independent count sketches C_k (hash
h_k: [d+1] → [F], signs s_k) and evaluates z = IFFT(∏_k FFT(C_k x̃)).  Every
coordinate is unbiased up to the factor F: E[z_j(x) z_j(x')] = (x̃ᵀx̃')^p / F
(the sign products of distinct index tuples average to 0, and Σ_k h_k mod F is
uniform), hence φ_j = √F z_j.
"""
from __future__ import annotations

import numpy as np

from kopt.contract.components import Kernel
from kopt.numerics.backend import get_namespace

from ._base import FeatureKernel, out_buffer
from ._util import float_pair, is_sparse


class LinearKernel(Kernel):
    """k(x, x') = xᵀx' on the raw (possibly sparse) features; no random features (ADSG's linear mode)."""

    name = "linear"
    summary = "linear kernel xᵀy"
    has_features = False
    linear_input_features = True
    bandwidth_metric = None

    def exact(self, X, Y):
        if is_sparse(X) or is_sparse(Y):
            K = X @ Y.T
            K = K.toarray() if is_sparse(K) else K
            dt = np.result_type(X.dtype, Y.dtype)
            return np.asarray(K, dtype=dt if dt.kind == "f" else np.float64)
        xp, X, Y = float_pair(X, Y)
        return X @ Y.T

    def diag(self, X):
        if is_sparse(X):
            sq = X.multiply(X).sum(axis=1)
            return np.asarray(sq, dtype=X.dtype if X.dtype.kind == "f" else np.float64).ravel()
        xp, X, _ = float_pair(X, X)
        return (X * X).sum(axis=1)

    def sample(self, rng, n_in, count):
        raise NotImplementedError("the linear kernel has no random features (has_features = False)")

    def features(self, X, params, out=None):
        raise NotImplementedError("the linear kernel has no random features (has_features = False)")


class ArcCosineKernel(FeatureKernel):
    """Arc-cosine kernel of order 0 (step) or 1 (ReLU); features √2 Θ(ωᵀx)(ωᵀx)ⁿ, ω ~ N(0, I)."""

    name = "arccos"
    summary = "arc-cosine kernel (order 0 or 1)"
    bandwidth_metric = None
    params = {"order": {"description": "n: 0 (step features) or 1 (ReLU features)", "enum": [0, 1], "default": 1}}

    def exact(self, X, Y):
        xp, X, Y = float_pair(X, Y)
        nx = xp.sqrt((X * X).sum(axis=1))[:, None]
        ny = xp.sqrt((Y * Y).sum(axis=1))[None, :]
        G = X @ Y.T
        nn = nx * ny
        zero = nn == 0
        c = xp.clip(G / xp.where(zero, 1.0, nn), -1.0, 1.0)
        theta = xp.arccos(c)
        if self.options.order == 0:
            K = 1.0 - theta / np.pi
        else:
            K = nn * (xp.sqrt(xp.maximum(1.0 - c * c, 0.0)) + (np.pi - theta) * c) / np.pi
        return xp.where(zero, 0.0, K).astype(X.dtype, copy=False)

    def diag(self, X):
        xp, X, _ = float_pair(X, X)
        sq = (X * X).sum(axis=1)
        return (sq > 0).astype(X.dtype) if self.options.order == 0 else sq

    def sample(self, rng, n_in, count):
        return {"W": rng.standard_normal((n_in, count))}

    def raw_features(self, P, params, out=None):
        xp = get_namespace(P)
        W = params["W"]
        Z = out_buffer(xp, out, P.shape[0], W.shape[1], P, W)
        xp.matmul(P, W, out=Z)
        if self.options.order == 0:
            xp.heaviside(Z, Z.dtype.type(0), out=Z)
        else:
            xp.maximum(Z, Z.dtype.type(0), out=Z)
        return Z, float(np.sqrt(2.0))


class PolynomialKernel(FeatureKernel):
    """k(x, x') = (γ xᵀx' + c)^p with unbiased TensorSketch features (one sketch of size F per block)."""

    name = "polynomial"
    summary = "polynomial kernel (TensorSketch features)"
    bandwidth_metric = None
    params = {
        "degree": {"description": "p", "type": "integer", "minimum": 1, "maximum": 16, "default": 2},
        "coef0": {"description": "c ≥ 0", "type": "number", "minimum": 0, "default": 1.0},
        "gamma": {"description": "γ > 0 scaling xᵀx'", "type": "number", "exclusiveMinimum": 0, "default": 1.0},
    }

    def exact(self, X, Y):
        o = self.options
        xp, X, Y = float_pair(X, Y)
        G = X @ Y.T
        G *= o.gamma
        G += o.coef0
        return G**o.degree

    def diag(self, X):
        o = self.options
        xp, X, _ = float_pair(X, X)
        return (o.gamma * (X * X).sum(axis=1) + o.coef0) ** o.degree

    def sample(self, rng, n_in, count):
        p = int(self.options.degree)
        C = np.zeros((p, n_in + 1, count))
        rows = np.arange(n_in + 1)
        for k in range(p):
            h = rng.integers(0, count, size=n_in + 1)
            s = rng.integers(0, 2, size=n_in + 1) * 2.0 - 1.0
            C[k, rows, h] = s
        return {"C": C}

    def prepare_rows(self, X):
        xp = get_namespace(X)
        P = xp.empty((X.shape[0], X.shape[1] + 1), dtype=X.dtype)
        P[:, :-1] = X
        P[:, :-1] *= X.dtype.type(np.sqrt(self.options.gamma))
        P[:, -1] = np.sqrt(self.options.coef0)
        return P

    def raw_features(self, P, params, out=None):
        xp = get_namespace(P)
        C = params["C"]
        F = C.shape[2]
        Z = out_buffer(xp, out, P.shape[0], F, P, C)
        p = int(self.options.degree)
        if p == 1:
            xp.matmul(P, C[0], out=Z)
        else:
            acc = xp.fft.rfft(P @ C[0], axis=1)
            for k in range(1, p):
                acc *= xp.fft.rfft(P @ C[k], axis=1)
            Z[...] = xp.fft.irfft(acc, n=F, axis=1)
        return Z, float(np.sqrt(F))
