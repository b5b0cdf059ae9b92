"""The predictor kinds built into kopt's model files.

Solver plugins build one of these (or register their own
:class:`kopt.components.Predictor` subclass through ``kopt_register_predictors``).
They are registered like any other predictor, by the built-in plugin
``kopt_plugins.predictors``.
"""
from __future__ import annotations

import numpy as np

from .components import Predictor


class KernelExpansion(Predictor):
    """f(x) = Σ_i coef_i k(s_i, x) + b over stored support points ``support``; meta ``intercept`` (optional): b,
    a number or one per output column."""

    name = "kernel_expansion"

    def decision_function(self, X, ctx):
        from . import rows as _rows
        from . import threads as _threads

        xp = ctx.xp
        S = xp.asarray(self.arrays["support"])
        coef = xp.asarray(self.arrays["coef"])
        out = xp.empty((X.shape[0],) + tuple(coef.shape[1:]), dtype=np.float64)
        # row chunks of ~1 MB of kernel values (the kernel's temporaries stay small and in cache),
        # spread over kopt's worker threads with BLAS held to one thread
        step = max(1, (1 << 18) // max(1, S.shape[0]))
        chunks = _rows.chunks(X.shape[0], step)
        threads = _threads.resolve_threads(None) if xp is np else 1

        def work(t):
            for lo, hi in chunks[t::threads]:
                Xc = _rows.kernel_rows(ctx.kernel, X, slice(lo, hi), xp, S.dtype)
                out[lo:hi] = ctx.kernel.exact(Xc, S) @ coef

        with _threads.blas_threads(1) if xp is np else _nullcontext():
            _threads.parallel_map(work, range(threads), threads)
        intercept = (self.meta or {}).get("intercept")
        if intercept is not None:
            out += xp.asarray(intercept, dtype=np.float64)
        return out


def _nullcontext():
    import contextlib

    return contextlib.nullcontext()


class FeatureExpansion(Predictor):
    """f(x) = scale · Σ_j φ_{ω_j}(x)ᵀ coef_j, with the ω_j regenerated from the feature seed.

    arrays: ``coef`` (nb, F) or (nb, F, C); ``blocks`` (nb,) block indices.
    meta: ``scale``, ``seed``, ``block_size``, ``dtype``; optional ``intercept`` added to every
    score (e.g. −τ of novelty detection).
    """

    name = "feature_expansion"

    def decision_function(self, X, ctx):
        from .features import FeatureMap

        m = self.meta
        fmap = FeatureMap(ctx.kernel, X.shape[1], seed=m["seed"], block_size=m["block_size"], dtype=m["dtype"], xp=ctx.xp)
        blocks = [int(b) for b in self.arrays["blocks"]]
        # the engine densifies sparse rows (scipy CSR) a chunk at a time
        out = m.get("scale", 1.0) * fmap.predict(X, self.arrays["coef"], blocks=blocks)
        return out + m["intercept"] if m.get("intercept") else out


class LinearPredictor(Predictor):
    """f(x) = xᵀw + b on the (standardized) input features; X may be sparse."""

    name = "linear"

    def decision_function(self, X, ctx):
        w = self.arrays["w"]
        b = self.arrays.get("b", 0.0)
        from . import rows as _rows

        if _rows.is_sparse(X):
            return np.asarray(X @ w) + b
        xp = ctx.xp
        return xp.asarray(X) @ xp.asarray(w) + xp.asarray(b)

