"""The ``katyusha`` solver: proximal Katyusha (Allen-Zhu, JMLR 2018), Shen et al.'s accelerated baseline.

Full-vector steps like ``svrg`` (one block of all coordinates) on the same
outer loop (:mod:`kopt_plugins.adsg.solver`): an epoch is ``inner_steps``
mini-batch steps of :func:`kopt_plugins.adsg.epochs.katyusha_epoch` from the
snapshot x̃, then the full-gradient snapshot at the new x̃.

Parameters (Allen-Zhu's Alg. 1 for σ > 0, Alg. 2 for σ = 0; σ = μ, the
regularizer's strong convexity, L the per-row smoothness constant):
m = 2n/b, τ₂ = 1/(2b), τ₁ = min{√(b·m·σ/(3L)), 1/2} (Alg. 2: τ₁ = 2/(s + 4)
in epoch s), α = 1/(3τ₁L), y step 1/(3L).  b = 1 is the paper's Alg. 1
exactly (m = 2n, τ₂ = 1/2); for b > 1 the negative momentum τ₂ = 1/(2b) and
b·m in τ₁ follow the paper's mini-batch section.  ``step_size`` sets the y
step 1/(3L) directly (then L = 1/(3·step_size) in τ₁ and α), which is how a
benchmark tunes it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import epochs
from .solver import COMMON, _VarianceReduced


@dataclass(frozen=True)
class KatyushaParams:
    """τ₁, τ₂, the z step α, the y step 1/(3L) and the snapshot weight ratio 1 + ασ of one epoch."""

    tau1: float
    tau2: float
    alpha: float
    eta_y: float
    ratio: float


def katyusha_params(s: int, *, L: float, sigma: float, m: int, b: int) -> KatyushaParams:
    """Epoch ``s`` (0-based): Alg. 1 when σ > 0, Alg. 2 (τ₁ = 2/(s + 4), plain average) when σ = 0."""
    tau2 = 1.0 / (2 * b)
    if sigma > 0:
        tau1 = min(math.sqrt(b * m * sigma / (3.0 * L)), 0.5)
    else:
        tau1 = 2.0 / (s + 4)
    alpha = 1.0 / (3.0 * tau1 * L)
    return KatyushaParams(tau1, tau2, alpha, 1.0 / (3.0 * L), 1.0 + alpha * sigma)


class Katyusha(_VarianceReduced):
    """Proximal Katyusha: variance reduction with Nesterov and negative ("Katyusha") momentum."""

    name = "katyusha"
    summary = "proximal Katyusha (accelerated SVRG, full-vector steps), Shen et al.'s accelerated baseline"
    single_block = True
    params = {
        **COMMON,
        "inner_steps": {**COMMON["inner_steps"],
                        "description": "inner steps m per epoch (default 2n/b, the paper's m = 2n)"},
        "step_size": {"type": ["number", "null"], "exclusiveMinimum": 0, "default": None,
                      "description": "the y step 1/(3L) (default: L the per-row smoothness constant); "
                                     "τ₁ and α follow from it"},
    }

    def default_inner_steps(self, B, n, b):
        return math.ceil(2 * n / b)

    def prepare(self, st):
        step = self.options.step_size
        L = 1.0 / (3.0 * step) if step else st.L
        sigma = float(st.problem.regularizer.strong_convexity())
        p0 = katyusha_params(0, L=L, sigma=sigma, m=st.m, b=st.b)
        return {"L_katyusha": L, "sigma": sigma, "tau1_0": p0.tau1, "tau2": p0.tau2, "alpha_0": p0.alpha}

    def inner(self, st, s, draws):
        c = st.consts
        p = katyusha_params(s, L=c["L_katyusha"], sigma=c["sigma"], m=st.m, b=st.b)
        return epochs.katyusha_epoch(st.design, st.problem.loss, st.y, st.problem.regularizer, st.it, st.snap,
                                     p, draws)
