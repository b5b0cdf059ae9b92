"""The model of a ``gp`` run: posterior mean everywhere, variance and a predictive interval.

arrays
    ``coef`` (T, F) and ``blocks`` (T,): the mean Σ_j ψ'_j(x)ᵀ coef_j (ω' map, seed ``seed``).
    variance "operator": ``op_beta`` (packed β, see :mod:`kopt_plugins.gp.operator`), ``op_weights`` (T,)
    (scale or averaging weight of each column), ``op_rows`` (T, B, d).
    variance "test_points": ``points`` (m, d) standardized test rows, ``point_variance`` (m,).
meta
    ``seed``, ``omega_seed``, ``block_size``, ``dtype``, ``variance``, ``noise_variance``,
    ``interval``, ``interval_level``, ``unknown_points``, ``averaging``.

``decision_function`` is the mean on the solver's scale (the model's preprocessor maps it to
the target's units).  ``predict_extra`` returns, in the target's units, ``variance`` (of the
latent f(x), clipped at 0), and ``lower``/``upper``: mean ∓ z·sd with z the normal quantile of
``interval_level`` and sd² = variance (+ σ² for an ``observation`` interval).
"""
from __future__ import annotations

from statistics import NormalDist

import numpy as np

from kopt.contract.components import Predictor
from kopt.errors import DataError
from kopt.numerics.features import FeatureMap

from .operator import _col_offset, evaluate_diag

#: a row within this (standardized, per coordinate) distance of a stored test point is that point
POINT_TOL = 1e-5


class GPPosterior(Predictor):
    """Posterior mean and variance of GP regression fitted by doubly stochastic gradients."""

    name = "gp_posterior"

    def _fmap(self, ctx, d, seed):
        m = self.meta
        return FeatureMap(ctx.kernel, d, seed=seed, block_size=m["block_size"], dtype=m["dtype"], xp=ctx.xp)

    def decision_function(self, X, ctx):
        fmap = self._fmap(ctx, X.shape[1], self.meta["seed"])
        blocks = [int(b) for b in self.arrays["blocks"]]
        if not blocks:
            return ctx.xp.zeros(X.shape[0], dtype=np.float64)
        return fmap.predict(X, self.arrays["coef"], blocks=blocks)

    def latent_variance(self, X, ctx):
        """Posterior variance of f(x) on the solver's scale, unclipped (NaN where unknown)."""
        xp = ctx.xp
        kind = self.meta["variance"]
        if kind == "operator":
            prior = xp.asarray(ctx.kernel.diag(xp.asarray(X)), dtype=np.float64)
            return prior - self.operator_diag(X, ctx)
        if kind == "test_points":
            idx = self.point_index(X)
            out = xp.full(X.shape[0], np.nan)
            ok = idx >= 0
            if ok.any():
                out[xp.asarray(ok)] = xp.asarray(self.arrays["point_variance"])[xp.asarray(idx[ok])]
            return out
        raise DataError("this gp model was fitted with variance: none; it predicts the posterior mean only "
                        "(refit with solver.variance: test_points or operator)")

    def operator_diag(self, X, ctx):
        xp, m = ctx.xp, self.meta
        rows = xp.asarray(self.arrays["op_rows"])
        B = rows.shape[1] if rows.shape[0] else 0
        beta = xp.asarray(self.arrays["op_beta"])

        def column(j):
            o = _col_offset(j, B)
            return beta[o: o + (j + 1) * B * B].reshape((j + 1) * B, B)

        fp = self._fmap(ctx, X.shape[1], m["seed"])
        fo = self._fmap(ctx, X.shape[1], m["omega_seed"])
        return evaluate_diag(fp, fo, column, rows, self.arrays["op_weights"], X, xp)

    def point_index(self, X):
        """Index of each row of ``X`` among the stored test points (−1 if absent), on the host."""
        P = np.ascontiguousarray(np.asarray(_host(self.arrays["points"])))
        Xh = np.ascontiguousarray(np.asarray(_host(X), dtype=P.dtype))
        lookup = {P[i].tobytes(): i for i in range(P.shape[0])}
        idx = np.array([lookup.get(Xh[i].tobytes(), -1) for i in range(Xh.shape[0])], dtype=np.int64)
        miss = np.nonzero(idx < 0)[0]
        if miss.size and P.shape[0]:  # rows written with fewer digits: the nearest point within POINT_TOL
            P64 = P.astype(np.float64)
            pp = (P64 * P64).sum(axis=1)
            for lo in range(0, miss.size, 1024):
                rows = miss[lo: lo + 1024]
                Q = Xh[rows].astype(np.float64)
                d2 = (Q * Q).sum(axis=1)[:, None] + pp[None, :] - 2.0 * Q @ P64.T
                near = np.argmin(d2, axis=1)
                ok = d2[np.arange(rows.size), near] <= POINT_TOL**2 * P.shape[1]
                idx[rows[ok]] = near[ok]
        if (idx < 0).any() and self.meta.get("unknown_points", "error") == "error":
            first = int(np.nonzero(idx < 0)[0][0])
            raise DataError(
                f"this gp model (variance: test_points) knows the variance only at the {P.shape[0]} test points it "
                f"was fitted for; row {first + 1} of the data (and {int((idx < 0).sum()) - 1} more) is not one of "
                "them. Predict on the training spec's test split, refit with solver.variance: operator (any point), "
                "or set solver.unknown_points: nan to get NaN variance there (the mean is always available)"
            )
        return idx

    def predict_extra(self, X, ctx):
        xp, m = ctx.xp, self.meta
        if m["variance"] == "none":
            return {}
        mean = xp.asarray(self.decision_function(X, ctx), dtype=np.float64)
        var = self.latent_variance(X, ctx)
        var = xp.where(xp.isnan(var), var, xp.maximum(var, 0.0))
        spread = var + m["noise_variance"] if m["interval"] == "observation" else var
        z = NormalDist().inv_cdf(0.5 + 0.5 * float(m["interval_level"]))
        half = z * xp.sqrt(spread)
        pre = ctx.preprocessor
        y_scale = float(getattr(pre, "y_scale", 1.0)) if pre is not None else 1.0
        decode = (lambda s: pre.decode(_host(s))) if pre is not None else _host
        return {"variance": _host(var) * y_scale**2, "lower": decode(mean - half), "upper": decode(mean + half)}


def _host(a):
    from kopt.numerics.backend import to_numpy

    return to_numpy(a)
