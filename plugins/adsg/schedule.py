"""ADSG's per-epoch parameters (Shen et al. 2017, Thm. 1–3), its snapshot rule and the random draws.

Notation of Shen et al. (2017) Alg. 1: B blocks, mini-batch b, inner length m,
L (every f_i is L-smooth), L_B (F is L_B-smooth along each block), μ (P is
μ-strongly convex), κ = (L + L_B)/μ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the three parameter settings of Shen et al. (2017) and the theorem each one comes from
SETTINGS = {
    "strongly_convex": "Thm. 1: α₂ = min{1, √(n/κ)}/(2B), α₃ = 1/(2B)",
    "general_convex": "Thm. 2: α₂ = 2/(s + 4B), α₃ = 1/(2B), μ = 0",
    "unregularized": "Thm. 3 (P ≡ 0): α₂ = 2/(s + 4), α₃ = 1/2, μ = 0",
}


@dataclass(frozen=True)
class EpochParams:
    """α₁, α₂, α₃, L̄, the step η and the snapshot weight θ of one epoch."""

    alpha1: float
    alpha2: float
    alpha3: float
    Lbar: float
    eta: float
    theta: float


def resolve_setting(setting: str, mu: float, regularizer_is_zero: bool) -> str:
    """``auto`` -> strongly convex when μ > 0, Thm. 3 when P ≡ 0, else the general convex setting."""
    if setting != "auto":
        return setting
    if mu > 0:
        return "strongly_convex"
    return "unregularized" if regularizer_is_zero else "general_convex"


def epoch_params(setting: str, s: int, *, B: int, L: float, L_B: float, mu: float, n: int) -> EpochParams:
    """Alg. 1 lines 1, 3, 4 for epoch ``s`` (0-based) under one of :data:`SETTINGS`."""
    if setting == "strongly_convex":
        if mu <= 0:
            raise ValueError("the strongly convex setting needs mu > 0")
        kappa = (L + L_B) / mu
        a2 = min(1.0, math.sqrt(n / kappa)) / (2 * B)
        a3 = 1.0 / (2 * B)
    elif setting == "general_convex":
        a2, a3, mu = 2.0 / (s + 4 * B), 1.0 / (2 * B), 0.0
    elif setting == "unregularized":
        a2, a3, mu = 2.0 / (s + 4), 0.5, 0.0
    else:
        raise ValueError(f"unknown setting {setting!r}")
    a1 = max(0.0, 1.0 - a2 - a3)
    Lbar = L / (B * a3) + L_B
    eta = 1.0 / (Lbar * a2 * B)
    theta = 1.0 + mu / (Lbar * B * B * a2 + (B - 1) * mu)
    return EpochParams(a1, a2, a3, Lbar, eta, theta)


def sample_sigma(rng: np.random.Generator, theta: float, m: int) -> int:
    """σ ∈ {1..m} with P(σ) ∝ θ^(σ−1) (Alg. 1 line 14); uniform when θ = 1.

    σ = m − K with K a geometric variable of ratio q = 1/θ truncated to
    {0..m−1}, drawn by inverting its distribution function in log space.
    """
    if theta <= 1.0:
        return int(rng.integers(1, m + 1))
    u = rng.random()
    log_q = -math.log1p(theta - 1.0)
    total = -math.expm1(m * log_q)  # 1 − q^m
    k = math.floor(math.log1p(-u * total) / log_q)
    return m - min(max(k, 0), m - 1)


def steps(rng_for_chunk, m: int, n: int, b: int, B: int, chunk: int = 4096):
    """The (mini-batch, block) draws of one epoch: yields ``(I, l)`` for j = 1..m.

    ``rng_for_chunk(c)`` returns the generator of chunk ``c`` of steps, so the
    draws depend only on (seed, epoch, chunk) and a resumed run repeats them.
    Mini-batches are drawn uniformly with replacement, blocks uniformly.
    """
    for c, lo in enumerate(range(0, m, chunk)):
        k = min(chunk, m - lo)
        rng = rng_for_chunk(c)
        I = rng.integers(0, n, size=(k, b))
        ls = rng.integers(0, B, size=k) if B > 1 else np.zeros(k, dtype=np.int64)
        for t in range(k):
            yield I[t], int(ls[t])
