"""One epoch (the inner loop) of ADSG I, ADSG II and the momentum-free baseline.

All three take the same inputs and return the same :class:`Iterates`, so the
solver drives them with one outer loop and the tests can feed them identical
draws.  Vectors are float64 arrays of the design's namespace; ``snap`` holds
the snapshot x̃ with r̃ = A x̃, d̃ = ℓ'(r̃) and ∇F(x̃) = Aᵀ d̃ / n.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: ADSG II folds β into u once β falls below this (keeps 1/β finite; see ``adsg2_epoch``)
RESCALE_BELOW = 1e-12


@dataclass
class Iterates:
    """x_k, z_k and the snapshot x̃ of Alg. 1 (absolute coordinates)."""

    x: object
    z: object
    x_tilde: object


@dataclass
class Snapshot:
    """x̃ with r̃ = A x̃, d̃ = ℓ'(r̃, y), g̃ = ∇F(x̃), and F's data term at x̃."""

    x: object
    r: object
    d: object
    g: object
    loss_mean: float


def snapshot(design, loss, y, x) -> Snapshot:
    """One full pass: the residual, loss derivative and gradient at ``x``."""
    r = design.dot(x)
    d = loss.grad(r, y)
    g = design.tdot(d) / design.n
    return Snapshot(x, r, d, g, float(loss.value(r, y).mean()))


def _index(xp, I):
    return I if xp is np else xp.asarray(I)


def adsg1_epoch(design, loss, y, reg, it: Iterates, snap: Snapshot, p, draws, sigma: int) -> Iterates:
    """ADSG I (Shen et al. 2017, Alg. 1, lines 6–15): the reference, O(D) per inner step."""
    xp = design.xp
    edges = design.edges
    B = len(edges) - 1
    x, z, xt = it.x.copy(), it.z.copy(), snap.x
    x_sigma = None
    for j, (I, l) in enumerate(draws, 1):
        yv = p.alpha1 * x + p.alpha2 * z + p.alpha3 * xt
        R = design.rows(I)
        Ix = _index(xp, I)
        c = (loss.grad(R.dot(yv), y[Ix]) - snap.d[Ix]) / len(I)
        lo, hi = edges[l], edges[l + 1]
        v = snap.g[lo:hi] + R.block_tdot(c, lo, hi)
        z_old = z[lo:hi].copy()
        z[lo:hi] = reg.prox(z_old - p.eta * v, p.eta)
        x = yv
        x[lo:hi] += (p.alpha2 * B) * (z[lo:hi] - z_old)
        if j == sigma:
            x_sigma = x.copy()
    return Iterates(x, z, x_sigma)


def adsg2_epoch(design, loss, y, reg, it: Iterates, snap: Snapshot, p, draws, sigma: int) -> Iterates:
    """ADSG II (Shen et al. 2017, Alg. 2): the same iterates with O(Ω + nnz(a_I)) per inner step.

    x̄_j = β_{j−1} u_j + γ ẑ_j + ẋ, ȳ_j = β_{j−1} u_{j−1} + γ ẑ_{j−1} + ẋ and
    z̄_j = ẑ_j + ẋ, with β_j = α₁ β_{j−1}, β_{−1} = 1 and γ = α₂/(α₂ + α₃).
    Only block l of ẑ and u changes in a step; a_iᵀȳ is assembled from
    a_iᵀu, a_iᵀẑ and the cached a_iᵀẋ = r̃_i.  β decays like α₁^j and
    underflows within an epoch (α₁ = 0 in the first epoch of Thm. 3), so
    whenever β_{j−1} < ``RESCALE_BELOW`` it is folded into u (u ← β u, β ← 1):
    the represented iterates are unchanged and the O(D) cost recurs only once
    every log(1e12)/(1 − α₁) ≈ 27.6/(1 − α₁) steps.
    """
    xp = design.xp
    edges = design.edges
    B = len(edges) - 1
    xd = snap.x
    zh = it.z - xd
    gamma = p.alpha2 / (p.alpha2 + p.alpha3)
    u = it.x - gamma * zh - xd
    c_u = p.alpha2 * B - gamma
    beta = p.alpha1  # β_{j−1} at the start of step j: β₀ = α₁ (β₋₁ = 1 gives x̄₀ = ξ)
    x_sigma = None
    for j, (I, l) in enumerate(draws, 1):
        if beta < RESCALE_BELOW:
            u *= beta
            beta = 1.0
        R = design.rows(I)
        Ix = _index(xp, I)
        t = beta * R.dot(u) + gamma * R.dot(zh) + snap.r[Ix]
        c = (loss.grad(t, y[Ix]) - snap.d[Ix]) / len(I)
        lo, hi = edges[l], edges[l + 1]
        v = snap.g[lo:hi] + R.block_tdot(c, lo, hi)
        z_old = zh[lo:hi].copy()
        x_blk = xd[lo:hi]
        z_new = reg.prox(z_old + x_blk - p.eta * v, p.eta) - x_blk
        zh[lo:hi] = z_new
        u[lo:hi] += (c_u / beta) * (z_new - z_old)
        if j == sigma:
            x_sigma = beta * u + gamma * zh + xd
        beta_last = beta
        beta *= p.alpha1
    x_last = beta_last * u + gamma * zh + xd
    return Iterates(x_last, zh + xd, x_sigma)


def plain_epoch(design, loss, y, reg, it: Iterates, snap: Snapshot, eta: float, draws) -> Iterates:
    """The loop without momenta: proximal SVRG on one random block per step (MRBCD-style).

    With a single block (edges = [0, D]) this is plain proximal SVRG.  The next
    snapshot is the last iterate.
    """
    xp = design.xp
    edges = design.edges
    x = it.x.copy()
    for I, l in draws:
        R = design.rows(I)
        Ix = _index(xp, I)
        c = (loss.grad(R.dot(x), y[Ix]) - snap.d[Ix]) / len(I)
        lo, hi = edges[l], edges[l + 1]
        v = snap.g[lo:hi] + R.block_tdot(c, lo, hi)
        x[lo:hi] = reg.prox(x[lo:hi] - eta * v, eta)
    return Iterates(x, x, x)


def katyusha_epoch(design, loss, y, reg, it: Iterates, snap: Snapshot, p, draws) -> Iterates:
    """One epoch of proximal Katyusha (Allen-Zhu 2018, Alg. 1 with Option I; Alg. 2 when μ = 0).

    ``it.x`` carries y_k, ``it.z`` carries z_k (both continue across epochs);
    ``p`` holds τ₁, τ₂, α (the z step), ``eta_y`` = 1/(3L) (the y step) and
    ``ratio`` = 1 + ασ, the growth of the snapshot weights.  Per step

        x = τ₁ z + τ₂ x̃ + (1 − τ₁ − τ₂) y,   ∇̃ = ∇F(x̃) + ∇f_I(x) − ∇f_I(x̃),
        z ← prox_{αP}(z − α ∇̃),               y ← prox_{P/(3L)}(x − ∇̃/(3L)),

    and the next snapshot is Σ_j r^(j−1) y_j / Σ_j r^(j−1), r = ``ratio``,
    accumulated as a running average (q_j = W_(j−1)/w_j: no overflowing powers).
    """
    xp = design.xp
    dim = design.dim
    yk, z, xt = it.x.copy(), it.z.copy(), snap.x
    avg = xp.zeros(dim)
    rest = 1.0 - p.tau1 - p.tau2
    q = 0.0
    for I, _ in draws:
        x = p.tau1 * z + p.tau2 * xt + rest * yk
        R = design.rows(I)
        Ix = _index(xp, I)
        c = (loss.grad(R.dot(x), y[Ix]) - snap.d[Ix]) / len(I)
        g = snap.g + R.tdot(c, dim)
        z = reg.prox(z - p.alpha * g, p.alpha)
        yk = reg.prox(x - p.eta_y * g, p.eta_y)
        avg += (yk - avg) / (q + 1.0)
        q = (q + 1.0) / p.ratio
    return Iterates(yk, z, avg)
