"""Skewed multiplicative kernels and kernels on the semigroup (R₊^d, +) (Dai et al. 2014, Table 1).

===========================  =====================================================  ================================
kernel                       k(x, x')                                               features, ω
===========================  =====================================================  ================================
skewed_chi2 (c)              ∏_i 2√((x_i+c)(x'_i+c)) / (x_i + x'_i + 2c)           √2 cos(ωᵀlog(x+c) + b), ω_i ~ sech(πω)
skewed_intersection (c)      ∏_i min(√((x_i+c)/(x'_i+c)), √((x'_i+c)/(x_i+c)))     √2 cos(ωᵀlog(x+c) + b), ω_i ~ Cauchy(0, 1/2)
exponential_semigroup (β)    exp(−β Σ_i √(x_i + x'_i))                              exp(−ωᵀx), ω_i ~ Lévy(0, β²/2)
reciprocal_semigroup (λ)     ∏_i λ / (x_i + x'_i + λ)                               exp(−ωᵀx), ω_i ~ Exp(rate λ)
===========================  =====================================================  ================================

Inputs: the skewed kernels need x_i > −c; the semigroup kernels need x ≥ 0.
Table 1 prints the skewed χ² factor 2 outside the product; it belongs inside
(k(x, x) = 1 = ∏ sech(0)).  Table 1 prints the exponential-semigroup density as
β/(2√π) ω^{−3/2} exp(−β/(4ω)); the Laplace transform of that is exp(−√β · √s),
so for k = exp(−β Σ √(x_i + x'_i)) the exponent must read β²/(4ω): a Lévy law
with scale β²/2, drawn as β² / (2 z²), z ~ N(0, 1) (tests check E[φφ'] = k).
"""
from __future__ import annotations

import numpy as np

from kopt.contract.components import POSITIVE
from kopt.numerics.backend import get_namespace

from ._base import SINCOS, FeatureKernel, RandomFourierKernel, out_buffer
from ._util import check_min, float_pair
from .additive import sample_sech


class _Skewed(RandomFourierKernel):
    """Shift-invariant in t(x) = log(x + c); needs x_i > −c."""

    bandwidth_metric = None
    params = {
        "skew": {**POSITIVE, "description": "skewness c (inputs must satisfy x > −c)", "default": 1.0},
        "sincos": SINCOS,
    }

    input_domain = "x > -skew"

    def check_input(self, X):
        c = self.options.skew
        check_min(self, X, -c, strict=True, what=f"features x > −c = {-c:g}")

    def transform(self, X):
        return get_namespace(X).log(X + X.dtype.type(self.options.skew))

    def _lambda(self, X, Y):
        """``(xp, t(X), t(Y))`` after checking both inputs."""
        self.check_input(X)
        self.check_input(Y)
        xp, X, Y = float_pair(X, Y)
        return xp, self.transform(X), self.transform(Y)


class SkewedChi2Kernel(_Skewed):
    """k = ∏_i sech((log(x_i + c) − log(x'_i + c)) / 2); ω_i ~ sech(πω)."""

    name = "skewed_chi2"
    summary = "skewed multiplicative χ² kernel (x > −c)"

    def exact(self, X, Y):
        xp, TX, TY = self._lambda(X, Y)
        S = xp.zeros((TX.shape[0], TY.shape[0]), dtype=TX.dtype)
        for k in range(TX.shape[1]):
            L = xp.abs(TX[:, k, None] - TY[None, :, k])
            # log sech(L/2) = −L/2 − log((1 + e^{−L})/2), stable for large L
            S -= 0.5 * L + xp.log1p(xp.exp(-L)) - np.log(2.0)
        return xp.exp(S)

    def sample_omega(self, rng, n_in, count):
        return sample_sech(rng, n_in * count).reshape(n_in, count)


class SkewedIntersectionKernel(_Skewed):
    """k = ∏_i exp(−|log(x_i + c) − log(x'_i + c)| / 2); ω_i ~ Cauchy(0, 1/2)."""

    name = "skewed_intersection"
    summary = "skewed multiplicative intersection kernel (x > −c)"

    def exact(self, X, Y):
        xp, TX, TY = self._lambda(X, Y)
        S = xp.zeros((TX.shape[0], TY.shape[0]), dtype=TX.dtype)
        for k in range(TX.shape[1]):
            S += xp.abs(TX[:, k, None] - TY[None, :, k])
        return xp.exp(-0.5 * S)

    def sample_omega(self, rng, n_in, count):
        return 0.5 * rng.standard_cauchy((n_in, count))


class _Semigroup(FeatureKernel):
    """k(x, x') = ψ(x + x') with features exp(−ωᵀx), ω ≥ 0; needs x ≥ 0."""

    input_domain = "nonnegative"
    bandwidth_metric = None

    def check_input(self, X):
        check_min(self, X, 0.0, what="nonnegative features (x ≥ 0)")

    def raw_features(self, P, params, out=None):
        xp = get_namespace(P)
        W = params["W"]
        Z = out_buffer(xp, out, P.shape[0], W.shape[1], P, W)
        xp.matmul(P, W, out=Z)
        xp.negative(Z, out=Z)
        xp.exp(Z, out=Z)
        return Z, 1.0


class ExponentialSemigroupKernel(_Semigroup):
    """k = exp(−β Σ_i √(x_i + x'_i)); ω_i ~ Lévy(0, β²/2), i.e. β² / (2 z²)."""

    name = "exponential_semigroup"
    summary = "exponential semigroup kernel (x ≥ 0)"
    params = {"beta": {**POSITIVE, "description": "β", "default": 1.0}}

    def exact(self, X, Y):
        self.check_input(X)
        self.check_input(Y)
        xp, X, Y = float_pair(X, Y)
        S = xp.zeros((X.shape[0], Y.shape[0]), dtype=X.dtype)
        for k in range(X.shape[1]):
            S += xp.sqrt(X[:, k, None] + Y[None, :, k])
        return xp.exp(-self.options.beta * S)

    def diag(self, X):
        xp, X, _ = float_pair(X, X)
        return xp.exp(-self.options.beta * xp.sqrt(2.0 * X).sum(axis=1))

    def sample(self, rng, n_in, count):
        z = rng.standard_normal((n_in, count))
        return {"W": self.options.beta**2 / (2.0 * np.maximum(z * z, 1e-300))}


class ReciprocalSemigroupKernel(_Semigroup):
    """k = ∏_i λ / (x_i + x'_i + λ); ω_i ~ Exponential(rate λ)."""

    name = "reciprocal_semigroup"
    summary = "reciprocal semigroup kernel (x ≥ 0)"
    params = {"scale": {**POSITIVE, "description": "λ of Dai et al. (2014) Table 1", "default": 1.0}}

    def exact(self, X, Y):
        self.check_input(X)
        self.check_input(Y)
        xp, X, Y = float_pair(X, Y)
        K = xp.ones((X.shape[0], Y.shape[0]), dtype=X.dtype)
        lam = self.options.scale
        for k in range(X.shape[1]):
            K *= lam / (X[:, k, None] + Y[None, :, k] + lam)
        return K

    def diag(self, X):
        xp, X, _ = float_pair(X, X)
        lam = self.options.scale
        return xp.prod(lam / (2.0 * X + lam), axis=1)

    def sample(self, rng, n_in, count):
        return {"W": rng.exponential(1.0 / self.options.scale, size=(n_in, count))}
