"""Penalties P(w) with blockwise prox."""
from __future__ import annotations

from kopt.components import Regularizer


class L2(Regularizer):
    """P(w) = λ/2 ‖w‖²; prox_{sP}(w) = w / (1 + sλ); strongly convex with constant λ."""

    name = "l2"
    summary = "ridge λ/2‖w‖²"

    def value(self, w):
        return 0.5 * self.lam * float((w * w).sum())

    def prox(self, w, step):
        return w / (1.0 + step * self.lam)

    def strong_convexity(self):
        return self.lam
