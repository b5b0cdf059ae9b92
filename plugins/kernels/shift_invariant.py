"""Shift-invariant kernels on R^d with random Fourier features √2 cos(ωᵀx + b) (Dai et al. 2014, Table 1).

=========  ====================================================  ==========================================
kernel     k(x, x'), δ = x − x', σ = bandwidth                   ω (per feature)
=========  ====================================================  ==========================================
gaussian   exp(−‖δ‖₂² / (2σ²))                                   N(0, σ⁻² I)
laplacian  exp(−‖δ‖₁ / σ)                                        ω_i ~ Cauchy(0, 1/σ) i.i.d.
cauchy     ∏_i 1 / (1 + δ_i² / σ²)                               ω_i ~ Laplace(0, 1/σ) i.i.d.
matern     Matérn ν ∈ {1/2, 3/2, 5/2}, length scale σ, of ‖δ‖₂   multivariate t, 2ν d.o.f., scale 1/σ
=========  ====================================================  ==========================================

Table 1 writes the Cauchy kernel as ∏ 2/(1 + δ_i²) against the unnormalised
density exp(−‖ω‖₁); kopt normalises both (k(x, x) = 1, ω_i has density
(σ/2) exp(−σ|ω_i|)), which is the same kernel up to the constant 2^d.
"""
from __future__ import annotations

import numpy as np

from kopt.numerics.backend import get_namespace
from kopt.numerics.rows import is_sparse

from ._base import RandomFourierKernel
from ._util import dense, float_pair, l1_dists, sq_dists

__all__ = ["sq_dists", "RandomFourierKernel", "GaussianKernel", "LaplacianKernel", "CauchyKernel", "MaternKernel"]


class GaussianKernel(RandomFourierKernel):
    """k(x, x') = exp(−‖x − x'‖² / (2σ²)); ω ~ N(0, σ⁻² I)."""

    name = "gaussian"
    summary = "Gaussian RBF"
    bandwidth_metric = "l2"
    sparse_rows = True

    def exact(self, X, Y):
        """exp(−‖x − y‖²/(2σ²)) as one GEMM and one exp pass.

        With a = [x/σ, −‖x/σ‖²/2, 1] and b = [y/σ, 1, −‖y/σ‖²/2], aᵀb = −‖x − y‖²/(2σ²): the
        distance, the scaling and the constants all ride in the GEMM, so the n × m array sees
        only the exp (and a clip at 0 where the rounding could lift a value past 1: :func:`_exp_of_exponents`)
        -- faster than forming ‖x − y‖² first (docs/design/kernel-passes.md).
        """
        if is_sparse(X):
            return _gaussian_sparse_rows(X, Y, self.bandwidth)
        xp, X, Y = float_pair(X, Y)
        A, B = _augmented(xp, X, self.bandwidth, left=True), _augmented(xp, Y, self.bandwidth, left=False)
        return _exp_of_exponents(xp, A @ B.T, _height(A, left=True) + _height(B, left=False), X.shape[1])

    def bind(self, Y):
        """k(·, Y) with Y's side of the GEMM made once: its augmented rows for dense X, its transpose and norms
        for CSR X (each was made per chunk of rows)."""
        sigma = self.bandwidth
        xp = get_namespace(Y)
        Y = dense(Y)
        if not np.issubdtype(Y.dtype, np.floating):
            Y = xp.asarray(Y, dtype=np.float64)
        prepared = {}

        def k(X):
            if is_sparse(X):
                if "sparse" not in prepared:
                    prepared["sparse"] = _sparse_side(Y)
                return _gaussian_sparse_rows(X, Y, sigma, prepared["sparse"])
            xq, X, _ = float_pair(X, Y[:1])
            if X.dtype not in prepared:
                B = _augmented(xq, xq.asarray(Y, dtype=X.dtype), sigma, left=False)
                prepared[X.dtype] = B, _height(B, left=False)
            B, height = prepared[X.dtype]
            A = _augmented(xq, X, sigma, left=True)
            return _exp_of_exponents(xq, A @ B.T, _height(A, left=True) + height, X.shape[1])

        return k

    def sample_omega(self, rng, n_in, count):
        return rng.standard_normal((n_in, count)) / self.bandwidth


def _sparse_side(Y):
    """(Yᵀ contiguous, ‖y‖²) of dense centers Y, for :func:`_gaussian_sparse_rows` (NumPy)."""
    Y = np.asarray(Y)
    return np.ascontiguousarray(Y.T), np.einsum("ij,ij->i", Y, Y)


def _gaussian_sparse_rows(X, Y, sigma, side=None):
    """exp(−‖x − y‖²/(2σ²)) for CSR rows X and dense Y: xᵀy by a sparse product (the rows' nonzeros times
    Y's rows: far faster than densifying wide rows, docs/design/kernel-passes.md),
    then the norms and the exp."""
    Y = np.asarray(dense(Y))
    dt = np.result_type(X.dtype, Y.dtype)
    if not np.issubdtype(dt, np.floating):
        dt = np.dtype(np.float64)
    X = X.tocsr().astype(dt, copy=False)
    if side is None or side[0].dtype != dt:
        # ‖y‖² without a Y-sized temporary (Y * Y made one on every call:
        # docs/design/memory.md)
        side = _sparse_side(Y.astype(dt, copy=False))
    Yt, yy = side
    K = np.asarray(X @ Yt, dtype=dt)
    scale = dt.type(1.0 / sigma**2)
    K *= scale
    hx, hy = np.asarray(X.multiply(X).sum(axis=1), dtype=dt).ravel() * (scale / 2), yy * (scale / 2)
    K -= hx[:, None]
    K -= hy[None, :]
    # the exponent's rounding is the augmented GEMM's: a d-term inner product and the two norms
    heights = (float(hx.max()) if hx.size else 0.0) + (float(hy.max()) if hy.size else 0.0)
    return _exp_of_exponents(np, K, heights, X.shape[1])


#: the exponents are clipped at 0 only where their rounding could lift a kernel value past 1 + CLIP_ABOVE
#: (:func:`_exp_of_exponents`)
CLIP_ABOVE = 2.0 ** -10


def _exp_of_exponents(xp, K, heights, d):
    """exp(K) in place for the augmented GEMM's exponents K = A Bᵀ on d columns (true values ≤ 0), clipped at 0
    first only where the GEMM's rounding could lift a value past 1 + :data:`CLIP_ABOVE` (the sparse rows' exponents,
    xᵀy by a sparse product less the two norms, carry the same terms and take the same rule).

    Each exponent is a (d + 2)-term inner product whose absolute terms sum to at most 2(|hₓ| + |h_y|), h = −‖x/σ‖²/2
    the augmented rows' norm column, and h carries its own d-term rounding: so no computed exponent exceeds its true
    value by more than 1.5 (d + 2) ε ``heights`` (ε the dtype's epsilon, ``heights`` = max |hₓ| + max |h_y|: the
    standard dot-product bound).  Below CLIP_ABOVE the clip would move no value by more than the rounding already
    moves its neighbours (an exponent of −10⁻⁶ computed as +10⁻⁶ is as far from its truth either way), and it costs a
    fifth of a pass (docs/design/kernel-passes.md); above, it keeps every value at
    most 1, and finite for rows far larger than the bandwidth."""
    if 1.5 * (d + 2) * float(np.finfo(K.dtype).eps) * heights > CLIP_ABOVE:
        xp.minimum(K, 0.0, out=K)
    return xp.exp(K, out=K)


def _height(A, left):
    """max |h| over augmented rows ``A`` (:func:`_augmented`): the largest ‖x/σ‖²/2 (0 for no rows)."""
    if A.shape[0] == 0:
        return 0.0
    d = A.shape[1] - 2
    return float(-A[:, d if left else d + 1].min())


def _augmented(xp, X, sigma, left):
    """[X/σ, −‖X/σ‖²/2, 1] (``left``) or [X/σ, 1, −‖X/σ‖²/2]: the rows of the Gaussian kernel's GEMM."""
    n, d = X.shape
    A = xp.empty((n, d + 2), dtype=X.dtype)
    A[:, :d] = X
    A[:, :d] *= X.dtype.type(1.0 / sigma)
    half = -0.5 * (A[:, :d] * A[:, :d]).sum(axis=1)
    A[:, d], A[:, d + 1] = (half, 1.0) if left else (1.0, half)
    return A


class LaplacianKernel(RandomFourierKernel):
    """k(x, x') = exp(−‖x − x'‖₁ / σ); ω_i ~ Cauchy(0, 1/σ) independently per coordinate."""

    name = "laplacian"
    summary = "Laplacian (L1) kernel"
    bandwidth_metric = "l1"

    def exact(self, X, Y):
        xp = get_namespace(X, Y)
        D = l1_dists(X, Y)
        D *= -1.0 / self.bandwidth
        return xp.exp(D, out=D)

    def sample_omega(self, rng, n_in, count):
        return rng.standard_cauchy((n_in, count)) / self.bandwidth


class CauchyKernel(RandomFourierKernel):
    """k(x, x') = ∏_i 1 / (1 + (x_i − x'_i)² / σ²); ω_i ~ Laplace(0, 1/σ) per coordinate."""

    name = "cauchy"
    summary = "Cauchy (product) kernel"
    bandwidth_metric = "l2"

    def exact(self, X, Y):
        xp, X, Y = float_pair(X, Y)
        K = xp.ones((X.shape[0], Y.shape[0]), dtype=X.dtype)
        T = xp.empty_like(K)
        inv = 1.0 / self.bandwidth
        for k in range(X.shape[1]):
            xp.subtract(X[:, k, None] * inv, Y[None, :, k] * inv, out=T)
            T *= T
            T += 1.0
            K /= T
        return K

    def sample_omega(self, rng, n_in, count):
        return rng.laplace(0.0, 1.0 / self.bandwidth, size=(n_in, count))


class MaternKernel(RandomFourierKernel):
    """Matérn kernel of ‖x − x'‖₂ with smoothness ν ∈ {1/2, 3/2, 5/2} and length scale σ.

    With r = ‖x − x'‖/σ: ν = 1/2: e^{−r}; ν = 3/2: (1 + √3 r) e^{−√3 r};
    ν = 5/2: (1 + √5 r + 5r²/3) e^{−√5 r}.  Its spectral density is proportional
    to (2ν/σ² + ‖ω‖²)^{−(ν + d/2)}: a multivariate t with 2ν degrees of freedom
    and scale 1/σ, drawn as ω = z / (σ √(g/ν)), z ~ N(0, I), g ~ Gamma(ν, 1).
    """

    name = "matern"
    summary = "Matérn kernel (ν = 1/2, 3/2, 5/2)"
    bandwidth_metric = "l2"
    params = {
        **RandomFourierKernel.params,
        "nu": {"description": "smoothness ν", "enum": [0.5, 1.5, 2.5], "default": 1.5},
    }

    def exact(self, X, Y):
        xp = get_namespace(X, Y)
        R = sq_dists(X, Y)
        xp.sqrt(R, out=R)
        R *= 1.0 / self.bandwidth
        nu = self.options.nu
        if nu == 0.5:
            return xp.exp(-R)
        if nu == 1.5:
            R *= np.sqrt(3.0)
            return (1.0 + R) * xp.exp(-R)
        R *= np.sqrt(5.0)
        return (1.0 + R + R * R / 3.0) * xp.exp(-R)

    def sample_omega(self, rng, n_in, count):
        z = rng.standard_normal((n_in, count))
        nu = float(self.options.nu)
        g = rng.gamma(nu, 1.0, size=count)
        return z / (self.bandwidth * np.sqrt(g / nu))[None, :]
