"""Penalties P(w) with a blockwise prox and their strong-convexity constants.

All three are coordinate-separable, so ``prox`` works on any block (any array shape):

==========  =====================================  ======================================  ==========
name        P(w)                                   prox_{sP}(w)                            μ
==========  =====================================  ======================================  ==========
l2          λ/2 ‖w‖²                               w / (1 + sλ)                            λ
l1          λ ‖w‖₁                                 S(w, sλ)                                0
elastic_net λ (r ‖w‖₁ + (1 − r)/2 ‖w‖²)            S(w, sλr) / (1 + sλ(1 − r))             λ(1 − r)
==========  =====================================  ======================================  ==========

S(w, t) = sign(w) max(|w| − t, 0) is soft thresholding; r is ``l1_ratio`` (scikit-learn's
ElasticNet convention with alpha = λ).
"""
from __future__ import annotations

from kopt.contract.components import Regularizer
from kopt.numerics.backend import get_namespace


def soft_threshold(w, t):
    """sign(w) · max(|w| − t, 0), elementwise."""
    xp = get_namespace(w)
    return xp.sign(w) * xp.maximum(xp.abs(w) - t, 0)


def _sum(w, f):
    """float of Σ f(w) accumulated in float64."""
    return float(f(w).sum(dtype="float64"))


class L2(Regularizer):
    """P(w) = λ/2 ‖w‖²; prox_{sP}(w) = w / (1 + sλ); strongly convex with constant λ."""

    name = "l2"
    summary = "ridge λ/2‖w‖²"

    def value(self, w):
        return 0.5 * self.lam * _sum(w, lambda a: a * a)

    def prox(self, w, step):
        return w / (1.0 + step * self.lam)

    def strong_convexity(self):
        return self.lam


class L1(Regularizer):
    """P(w) = λ ‖w‖₁; prox_{sP} = soft thresholding at sλ; not strongly convex (μ = 0)."""

    name = "l1"
    summary = "lasso λ‖w‖₁ (sparse coefficients; primal feature-space solvers)"

    def value(self, w):
        return self.lam * _sum(w, get_namespace(w).abs)

    def prox(self, w, step):
        return soft_threshold(w, step * self.lam)

    def strong_convexity(self):
        return 0.0


class ElasticNet(Regularizer):
    """P(w) = λ (r ‖w‖₁ + (1 − r)/2 ‖w‖²) with r = ``l1_ratio``; μ = λ (1 − r)."""

    name = "elastic_net"
    summary = "elastic net λ(r‖w‖₁ + (1−r)/2‖w‖²)"
    params = {
        **Regularizer.params,
        "l1_ratio": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5,
                     "description": "r in [0, 1]: weight of the ℓ1 part (1 = lasso, 0 = ridge)"},
    }

    def value(self, w):
        xp = get_namespace(w)
        r = self.options.l1_ratio
        return self.lam * (r * _sum(w, xp.abs) + 0.5 * (1 - r) * _sum(w, lambda a: a * a))

    def prox(self, w, step):
        r = self.options.l1_ratio
        return soft_threshold(w, step * self.lam * r) / (1.0 + step * self.lam * (1 - r))

    def strong_convexity(self):
        return self.lam * (1 - self.options.l1_ratio)
