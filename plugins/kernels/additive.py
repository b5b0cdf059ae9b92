"""Additive homogeneous kernels on nonnegative data (histograms): k(x, x') = Σ_i k₁(x_i, x'_i).

Each k₁ is 1-homogeneous and factors as k₁(a, b) = √(ab) κ(log a − log b)
with κ(λ) = E_ω[cos(ωλ)] (Vedaldi & Zisserman 2012; Dai et al. (2014) Table 1):

===============  ======================================  ==============================================
kernel           k₁(a, b)                                density of ω
===============  ======================================  ==============================================
hellinger        √(ab)                                   ω = 0 (features ωᵀ√x, ω Rademacher, below)
chi2             2ab / (a + b)                           sech(πω)                   (κ = sech(λ/2))
intersection     min(a, b)                               2 / (π(1 + 4ω²)), Cauchy(0, 1/2)  (κ = e^{−|λ|/2})
jensen_shannon   a/2 log₂((a+b)/a) + b/2 log₂((a+b)/b)   sech(πω) / (ln 2 · (1 + 4ω²))
===============  ======================================  ==============================================

Table 1's features are the d-vector [e^{−iω log x_j} √x_j]_j.  kopt's features
are scalar, so a feature also picks a coordinate j, uniform over 1..d (the kernel is
the mixture (1/d) Σ_j d·k₁(x_j, x'_j), Dai et al. (2014) Theorem 3; a block cycles through
the coordinates from a random offset):
φ(x) = √(2d) √x_j cos(ω log x_j + b), paired with the sine as in
:class:`~kopt_plugins.kernels._base.RandomFourierKernel`.  Then
E[φ(x)φ(x')] = Σ_j √(x_j x'_j) κ(log x_j − log x'_j) = k(x, x').  Table 1's
Jensen–Shannon density sech(πω)/(log 4 (1 + 4ω²)) integrates to 1/2; kopt uses the
normalised one (k₁(a, a) = a).  Zero entries: k₁(0, b) = 0 and √0 = 0, so log 0
is clamped to a finite number without effect.
"""
from __future__ import annotations

import numpy as np

from kopt.numerics.backend import get_namespace

from ._base import SINCOS, TWO_PI, FeatureKernel, matmul_into, out_buffer, pieces
from ._util import check_min, float_pair, per_coordinate


class _Nonnegative:
    """Mixin: data must be ≥ 0 (DataError otherwise)."""

    input_domain = "nonnegative"
    bandwidth_metric = None

    def check_input(self, X):
        check_min(self, X, 0.0, what="nonnegative features (x ≥ 0, e.g. histograms)")


class HellingerKernel(_Nonnegative, FeatureKernel):
    """k(x, x') = Σ_i √(x_i x'_i); φ(x) = ωᵀ√x with ω uniform on {−1, +1}^d."""

    name = "hellinger"
    summary = "Hellinger kernel (x ≥ 0)"

    def exact(self, X, Y):
        self.check_input(X)
        self.check_input(Y)
        xp, X, Y = float_pair(X, Y)
        return xp.sqrt(X) @ xp.sqrt(Y).T

    def diag(self, X):
        xp, X, _ = float_pair(X, X)
        return X.sum(axis=1)

    def sample(self, rng, n_in, count):
        return {"W": rng.integers(0, 2, size=(n_in, count)) * 2.0 - 1.0}

    def prepare_rows(self, X):
        return get_namespace(X).sqrt(X)

    def raw_features(self, P, params, out=None):
        xp = get_namespace(P)
        W = params["W"]
        Z = out_buffer(xp, out, P.shape[0], W.shape[1], P, W)
        xp.matmul(P, W, out=Z)
        return Z, 1.0


class AdditiveHomogeneousKernel(_Nonnegative, FeatureKernel):
    """Base: k = Σ_i k₁(x_i, x'_i) with k₁(a, b) = √(ab) κ(log(a/b)); subclasses give k₁ and ω's density.

    params: ``Wb`` (d+1, h) -- a one-hot matrix with ω_f in row j_f and the phase
    b_f in the last row --, ``j`` (h,) the coordinates, ``b`` (F,) the phases.
    """

    params = {"sincos": SINCOS}

    def k1(self, xp, a, b):
        """The one-dimensional kernel, elementwise (broadcasting)."""
        raise NotImplementedError

    def sample_frequency(self, rng, count):
        """``count`` draws of ω from the spectral density of κ."""
        raise NotImplementedError

    def exact(self, X, Y):
        self.check_input(X)
        self.check_input(Y)
        return per_coordinate(X, Y, self.k1)

    def diag(self, X):
        xp, X, _ = float_pair(X, X)
        return X.sum(axis=1)  # k₁(a, a) = a for every kernel here

    def sample(self, rng, n_in, count):
        h = (count + 1) // 2 if self.options.sincos else count
        # coordinates cycle from a uniform random offset: each feature's j is uniform (unbiased
        # feature by feature) while a block covers the coordinates evenly (less variance than i.i.d. j)
        j = (int(rng.integers(0, n_in)) + np.arange(h)) % n_in
        w = np.asarray(self.sample_frequency(rng, h), dtype=np.float64)
        b = rng.uniform(0.0, TWO_PI, size=h)
        Wb = np.zeros((n_in + 1, h))
        Wb[j, np.arange(h)] = w
        Wb[n_in] = b
        return {"Wb": Wb, "j": j.astype(np.int64), "b": np.concatenate([b, b[: count - h]])}

    def prepare_rows(self, X):
        """``[log x, 1, √x]`` side by side, ``(n, 2d + 1)``."""
        xp = get_namespace(X)
        n, d = X.shape
        P = xp.empty((n, 2 * d + 1), dtype=X.dtype)
        xp.maximum(X, np.finfo(X.dtype).tiny, out=P[:, :d])
        xp.log(P[:, :d], out=P[:, :d])
        P[:, d] = 1.0
        xp.sqrt(X, out=P[:, d + 1 :])
        return P

    def raw_features(self, P, params, out=None):
        xp = get_namespace(P)
        Wb, j = params["Wb"], params["j"]
        count, h = params["b"].shape[0], Wb.shape[1]
        d = Wb.shape[0] - 1
        m = count - h
        U, V = pieces(xp, out, P.shape[0], (h, m), P, Wb)
        matmul_into(xp, P[:, : d + 1], Wb, U)
        S = xp.take(P[:, d + 1 :], j, axis=1)  # √x_j of every feature's coordinate
        if m:
            xp.sin(U if m == h else U[:, :m], out=V)
            V *= S if m == h else S[:, :m]
        xp.cos(U, out=U)
        U *= S
        return ((U, V) if m else (U,)), float(np.sqrt(2.0 * d))


def _safe_div(xp, num, den):
    return num / xp.where(den > 0, den, 1.0)


class Chi2Kernel(AdditiveHomogeneousKernel):
    """k(x, x') = Σ_i 2 x_i x'_i / (x_i + x'_i); ω ~ sech(πω) (hyperbolic secant)."""

    name = "chi2"
    summary = "additive χ² kernel (x ≥ 0)"

    def k1(self, xp, a, b):
        s = a + b
        return 2.0 * a * _safe_div(xp, b, s)  # 2ab/(a+b) without overflow for tiny or huge entries

    def sample_frequency(self, rng, count):
        return sample_sech(rng, count)


class IntersectionKernel(AdditiveHomogeneousKernel):
    """k(x, x') = Σ_i min(x_i, x'_i); ω ~ Cauchy(0, 1/2)."""

    name = "intersection"
    summary = "histogram intersection kernel (x ≥ 0)"

    def k1(self, xp, a, b):
        return xp.minimum(a, b)

    def sample_frequency(self, rng, count):
        return 0.5 * rng.standard_cauchy(count)


class JensenShannonKernel(AdditiveHomogeneousKernel):
    """k(x, x') = Σ_i x_i/2 log₂((x_i+x'_i)/x_i) + x'_i/2 log₂((x_i+x'_i)/x'_i); ω ~ sech(πω)/(ln2 (1+4ω²))."""

    name = "jensen_shannon"
    summary = "Jensen–Shannon kernel (x ≥ 0)"

    def k1(self, xp, a, b):
        ls = xp.log2(xp.where(a + b > 0, a + b, 1.0))
        ta = a * (ls - xp.log2(xp.where(a > 0, a, 1.0)))  # a log₂((a+b)/a), 0 at a = 0, no overflow
        tb = b * (ls - xp.log2(xp.where(b > 0, b, 1.0)))
        return 0.5 * (ta + tb)

    def sample_frequency(self, rng, count):
        # rejection from sech(πω): accept with probability 1 / (1 + 4ω²) (rate ln 2 ≈ 0.69)
        out = np.empty(0)
        while out.size < count:
            need = count - out.size
            w = sample_sech(rng, 2 * need + 16)
            keep = w[rng.uniform(size=w.size) * (1.0 + 4.0 * w * w) < 1.0]
            out = np.concatenate([out, keep[:need]])
        return out


def sample_sech(rng, count):
    """Draws from the hyperbolic secant density sech(πω) (CDF (2/π) arctan e^{πω}), by inversion."""
    u = rng.uniform(np.finfo(float).tiny, 1.0, size=count)
    return np.log(np.tan(0.5 * np.pi * u)) / np.pi


__all__ = ["HellingerKernel", "Chi2Kernel", "IntersectionKernel", "JensenShannonKernel", "sample_sech"]
