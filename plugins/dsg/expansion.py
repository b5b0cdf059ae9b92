"""The doubly stochastic model: coefficients of seeded feature blocks under one global scale.

f(x) = s · Σ_j φ_{ω_j}(x)ᵀ c_j, with ω_j regenerated from block index ``blocks[j]``
(:func:`kopt.numerics.features.block_rng`).  The shrink f ← (1 − γλ) f of every step touches
only the scalar s (Dai et al. 2014, Alg. 1 line 6 without the O(t) loop); a new block or an
update of block j writes c_j = α_j / s.  When s leaves [1e-6, 1e6] it is folded into the
coefficients (a deterministic event, so a resumed run repeats it bit for bit): the stored c_j
stay within a few decades of the true α_j, so the float32 feature products of
:meth:`kopt.numerics.features.FeatureMap.predict` neither underflow nor overflow.

CDSG's per-block scalars ‖f_j‖²_H (the functional form of Li & Póczos's β_j², see
:mod:`kopt_plugins.dsg.checking`) live here too, stored divided by s² so the shrink reaches them.
Objects that keep scores of fixed rows (:class:`kopt_plugins.dsg.tracking.ScoreTracker`)
subscribe to coefficient changes, so evaluating a holdout set costs one block per
changed block, not one per block.

On a Dask cluster every worker keeps a copy of the expansion (:mod:`kopt_plugins.dsg.distributed`):
with ``journal`` a list, every write (:meth:`shrink`, :meth:`add_block`, :meth:`update_block`,
:meth:`accumulate`) is also recorded as ``(method, args)``, and a copy that replays the records in
order (:meth:`replay`) holds the same bits -- O(F·C) floats per step instead of the whole expansion.
"""
from __future__ import annotations

import numpy as np

from kopt.numerics.backend import to_numpy

_LOW, _HIGH = 1e-6, 1e6


class BlockExpansion:
    """Coefficients ``coef[:m]`` (m, F[, C]) of the blocks ``blocks[:m]``, times ``scale``.

    Parameters
    ----------
    xp : module
        numpy or cupy; ``coef`` lives there (float64), everything else on the host.
    block_size : int
        F, the features per block.
    n_outputs : int or None
        C for multi-output losses (coefficients (F, C)); None for scalar outputs.
    """

    def __init__(self, xp, block_size, n_outputs=None, capacity=64, averaging=False):
        self.xp = xp
        self.averaging = bool(averaging)
        self.F = int(block_size)
        self.out = () if n_outputs is None else (int(n_outputs),)
        self.coef = xp.zeros((capacity, self.F) + self.out, dtype=np.float64)
        self.norms = np.zeros(capacity, dtype=np.float64)
        self.blocks = np.zeros(capacity, dtype=np.int64)
        self.m = 0
        self.scale = 1.0
        self.listeners = []
        # iterate averaging (Dai et al. 2014, Sec. 7.1 plots f̂_t = (1/t) Σ_i f_i): Σ_i of the true coefficients
        self.avg_sum = xp.zeros_like(self.coef) if self.averaging else None
        self.avg_count = 0
        self.journal = None  # a list: every write is also recorded there (workers' copies replay it)

    def _record(self, name, *args):
        if self.journal is not None:  # arrays are copied to the host: the record outlives the caller's buffer
            self.journal.append((name, tuple(to_numpy(a).copy() if hasattr(a, "shape") else a for a in args)))

    def replay(self, records):
        """Apply the writes ``records`` (what another expansion's ``journal`` recorded), in order."""
        for name, args in records:
            getattr(self, name)(*args)

    # -- reading ---------------------------------------------------------------
    def predict(self, fmap, X):
        """f(X) = s Σ_j φ_j(X) c_j: ``(n,)`` or ``(n, C)`` float64 (zeros without blocks)."""
        if self.m == 0:
            return self.xp.zeros((X.shape[0],) + self.out, dtype=np.float64)
        return self.scale * fmap.predict(X, self.coef[: self.m], blocks=self.blocks[: self.m].tolist())

    def block_norms(self):
        """‖f_j‖²_H of every block with the scale applied: ``(m,)``."""
        return self.scale * self.scale * self.norms[: self.m]

    def coefficients(self):
        """The model's coefficients with the scale folded in, on the host: ``(m, F[, C])``."""
        return to_numpy(self.coef[: self.m] * self.scale)

    def averaged_coefficients(self):
        """Coefficients of the averaged iterate (1/k) Σ_i f_i (device array)."""
        return self.avg_sum[: self.m] / max(1, self.avg_count)

    def accumulate(self):
        """Add the current iterate to the average: O(mF) per iteration (B·d times less than a step)."""
        self._record("accumulate")
        if self.averaging:
            self.avg_sum[: self.m] += self.scale * self.coef[: self.m]
            self.avg_count += 1

    # -- writing ---------------------------------------------------------------
    def shrink(self, rho):
        """f ← ρ f (every coefficient and β), through the global scale."""
        rho = float(rho)
        self._record("shrink", rho)
        if rho == 0.0:
            self.coef[: self.m] = 0.0
            self.norms[: self.m] = 0.0
            self.scale = 1.0
            for lis in self.listeners:
                lis.rescale(0.0)
            return
        self.scale *= rho
        if not _LOW <= abs(self.scale) <= _HIGH:
            self._fold()

    def add_block(self, index, alpha, norm=None):
        """Append block ``index`` with true coefficient ``alpha`` (F[, C]) and ‖f_j‖² ``norm``."""
        self._record("add_block", int(index), alpha, norm)
        if self.m == self.blocks.shape[0]:
            self._grow()
        j = self.m
        c = self.xp.asarray(alpha, dtype=np.float64) / self.scale
        self.coef[j] = c
        self.blocks[j] = int(index)
        if norm is not None:
            self.norms[j] = norm / (self.scale * self.scale)
        self.m += 1
        for lis in self.listeners:
            lis.note(j, c)
        return j

    def update_block(self, j, delta, dnorm=None):
        """c_j += delta / s (``delta`` a true-scale change); ‖f_j‖² += dnorm."""
        self._record("update_block", int(j), delta, dnorm)
        c = self.xp.asarray(delta, dtype=np.float64) / self.scale
        self.coef[j] += c
        if dnorm is not None:
            self.norms[j] += dnorm / (self.scale * self.scale)
        for lis in self.listeners:
            lis.note(j, c)

    def _fold(self):
        s = self.scale
        self.coef[: self.m] *= s
        self.norms[: self.m] *= s * s
        self.scale = 1.0
        for lis in self.listeners:
            lis.rescale(s)

    def _grow(self):
        cap = 2 * self.blocks.shape[0]
        coef = self.xp.zeros((cap, self.F) + self.out, dtype=np.float64)
        coef[: self.m] = self.coef[: self.m]
        if self.averaging:
            avg = self.xp.zeros_like(coef)
            avg[: self.m] = self.avg_sum[: self.m]
            self.avg_sum = avg
        norms = np.zeros(cap, dtype=np.float64)
        norms[: self.m] = self.norms[: self.m]
        blocks = np.zeros(cap, dtype=np.int64)
        blocks[: self.m] = self.blocks[: self.m]
        self.coef, self.norms, self.blocks = coef, norms, blocks

    # -- checkpoints -------------------------------------------------------------
    def state(self):
        s = {"coef": to_numpy(self.coef[: self.m]).copy(), "norms": self.norms[: self.m].copy(),
             "blocks": self.blocks[: self.m].copy(), "scale": self.scale, "n_blocks": self.m}
        if self.averaging:
            s.update(avg_sum=to_numpy(self.avg_sum[: self.m]).copy(), avg_count=self.avg_count)
        return s

    def restore(self, state):
        m = int(state["n_blocks"])
        cap = max(64, 1 << max(0, (m - 1)).bit_length())
        self.coef = self.xp.zeros((cap, self.F) + self.out, dtype=np.float64)
        self.norms = np.zeros(cap, dtype=np.float64)
        self.blocks = np.zeros(cap, dtype=np.int64)
        if m:
            self.coef[:m] = self.xp.asarray(np.asarray(state["coef"], dtype=np.float64).reshape((m, self.F) + self.out))
            self.norms[:m] = np.asarray(state["norms"], dtype=np.float64).reshape(m)
            self.blocks[:m] = np.asarray(state["blocks"], dtype=np.int64)
        self.m = m
        self.scale = float(state["scale"])
        if self.averaging:
            self.avg_sum = self.xp.zeros_like(self.coef)
            if m:
                self.avg_sum[:m] = self.xp.asarray(np.asarray(state["avg_sum"], dtype=np.float64).reshape(
                    (m, self.F) + self.out))
            self.avg_count = int(state["avg_count"])
