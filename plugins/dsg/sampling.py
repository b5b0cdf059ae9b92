"""Mini-batches: which rows iteration t uses.

Every draw comes from ``problem.rng("batch", t)`` (or, for epoch-wise shuffling, from
``problem.rng("epoch", e)``), a generator keyed by the spec's seed and the counter, so a
run resumed at iteration t0 draws exactly the batches an uninterrupted run draws.
"""
from __future__ import annotations

import numpy as np


class BatchSampler:
    """Rows of iteration t: ``uniform`` (i.i.d. with replacement, Dai et al. 2014) or ``shuffle``.

    ``shuffle`` walks through a fresh seeded permutation every epoch; iteration t takes
    positions (t−1)B … tB−1 of the concatenated permutations, so one epoch is n/B
    iterations and batches may straddle two epochs.
    """

    def __init__(self, problem, batch_size, mode="uniform"):
        self.problem = problem
        self.n = int(problem.n)
        self.B = int(batch_size)
        self.mode = mode
        self._perms = {}

    def generator(self, t):
        """The generator of iteration t (rows first, then whatever the solver draws)."""
        return self.problem.rng("batch", t)

    def rows(self, t, rng):
        """Sorted row indices of iteration t (sorted: cheaper gathers, same mean)."""
        if self.mode == "uniform":
            return np.sort(rng.integers(0, self.n, size=self.B))
        start = (t - 1) * self.B
        parts, pos, need = [], start, self.B
        while need:
            e, off = divmod(pos, self.n)
            take = min(need, self.n - off)
            parts.append(self._perm(e)[off : off + take])
            pos += take
            need -= take
        return np.sort(np.concatenate(parts))

    def _perm(self, e):
        p = self._perms.get(e)
        if p is None:
            p = self.problem.rng("epoch", e).permutation(self.n)
            self._perms = {k: v for k, v in self._perms.items() if k >= e - 1}
            self._perms[e] = p
        return p
