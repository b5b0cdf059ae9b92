"""Iterate averaging for expansions whose blocks are written once and then only scaled.

A DSG iterate is f_u = s_u Σ_{j<u} c̃_j ψ_j with a global scale s_u (the product of the
decays 1 − γλ) and stored coefficients c̃_j written at step j+1.  The average of the iterates
u = a+1..t (Dai et al. 2014, Sec. 7.1 evaluates the averaged iterate) is therefore the same
expansion with per-block weights

    w_j = (1/(t − a)) Σ_{u = max(a, j)+1}^{t} s_u,

so averaging costs one number per step.  ``a`` is 0 ("all"), ⌊T/2⌋ ("tail") or T ("none": the
last iterate, w_j = s_t).
"""
from __future__ import annotations

import numpy as np


def averaging_start(kind: str, iterations: int) -> int:
    """a: the last iterate left out of the average."""
    return {"all": 0, "tail": int(iterations) // 2, "none": int(iterations)}[kind]


class ScaleHistory:
    """The scales s_1..s_t of an expansion, and the averaging weights they give."""

    def __init__(self, iterations, start):
        self.s = np.zeros(int(iterations) + 1)  # s[u] = scale after step u; s[0] unused
        self.start = int(start)
        self.t = 0

    def record(self, t, scale):
        self.s[t] = scale
        self.t = t

    def averaging(self, t=None):
        """Whether iterate t is an average of more than the last iterate."""
        t = self.t if t is None else t
        return t > self.start

    def weights(self, t=None):
        """w_j for blocks j = 0..t−1 (host float64)."""
        t = self.t if t is None else t
        if not self.averaging(t):
            return np.full(t, self.s[t])
        cs = np.cumsum(self.s[: t + 1])  # cs[u] = s_1 + … + s_u
        lo = np.maximum(np.arange(t), self.start)
        return (cs[t] - cs[lo]) / (t - self.start)

    def state(self, prefix):
        return {prefix + "scales": self.s[: self.t + 1]}

    def restore(self, st, prefix, t):
        self.s[: t + 1] = np.asarray(st[prefix + "scales"])
        self.t = int(t)


class RunningMean:
    """The average of a tracked vector over steps a+1..t (the vector itself before that)."""

    def __init__(self, xp, size, start):
        self.xp = xp
        self.sum = xp.zeros(size, dtype=np.float64)
        self.start = int(start)
        self.count = 0

    def add(self, t, value):
        if t > self.start:
            self.sum += value
            self.count += 1

    def value(self, current):
        return current if self.count == 0 else self.sum / self.count

    def state(self, prefix):
        return {prefix + "sum": self.sum, prefix + "count": self.count}

    def restore(self, st, prefix):
        self.sum[...] = self.xp.asarray(st[prefix + "sum"])
        self.count = int(st[prefix + "count"])
