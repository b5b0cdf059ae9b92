"""Shift-invariant kernels: exact form and random Fourier features √2 cos(ωᵀx + b)."""
from __future__ import annotations

import numpy as np

from kopt.backend import get_namespace
from kopt.components import BANDWIDTH_PARAMS, Kernel


def sq_dists(X, Y):
    xp = get_namespace(X, Y)
    xx = (X * X).sum(axis=1)[:, None]
    yy = (Y * Y).sum(axis=1)[None, :]
    return xp.maximum(xx + yy - 2.0 * (X @ Y.T), 0.0)


class RandomFourierKernel(Kernel):
    """Base of kernels whose features are φ_ω(x) = √2 cos(ωᵀx + b), b ~ U[0, 2π]."""

    params = dict(BANDWIDTH_PARAMS)

    def __init__(self, **params):
        super().__init__(**params)
        self.bandwidth = params.get("bandwidth", "median")

    def sample_omega(self, rng, n_in, count):
        raise NotImplementedError

    def sample(self, rng, n_in, count):
        W = self.sample_omega(rng, n_in, count)
        b = rng.uniform(0.0, 2.0 * np.pi, size=count)
        return {"W": W, "b": b}

    def features(self, X, params, out=None):
        xp = get_namespace(X)
        Z = xp.matmul(X, params["W"], out=out)
        Z += params["b"]
        xp.cos(Z, out=Z)
        Z *= Z.dtype.type(np.sqrt(2.0))
        return Z


class GaussianKernel(RandomFourierKernel):
    """k(x, x') = exp(−‖x − x'‖² / (2σ²)); ω ~ N(0, σ⁻² I)."""

    name = "gaussian"
    summary = "Gaussian RBF"
    bandwidth_metric = "l2"

    def exact(self, X, Y):
        xp = get_namespace(X, Y)
        return xp.exp(sq_dists(X, Y) * (-0.5 / self.bandwidth**2))

    def diag(self, X):
        return get_namespace(X).ones(X.shape[0], dtype=X.dtype)

    def sample_omega(self, rng, n_in, count):
        return rng.standard_normal((n_in, count)) / self.bandwidth
