"""The predictor kinds built into kopt's model files.

Solver plugins build one of these (or register their own
:class:`kopt.contract.components.Predictor` subclass through ``kopt_register_predictors``).
They are registered like any other predictor, by the built-in plugin
``kopt_plugins.predictors``.
"""
from __future__ import annotations

import numpy as np

from ..contract.components import Predictor


class KernelExpansion(Predictor):
    """f(x) = Σ_i coef_i k(s_i, x) + b over stored support points ``support``; meta ``intercept`` (optional): b,
    a number or one per output column."""

    name = "kernel_expansion"

    def decision_function(self, X, ctx):
        from ..numerics import rows as _rows
        from ..numerics import threads as _threads

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


def class_pairs(n_classes):
    """The pairs (a, b), a < b, of ``n_classes`` classes in SVC's order: the pairs :class:`PairwiseVotes` holds."""
    return [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]


class PairwiseVotes(Predictor):
    """One-vs-one: for every pair of classes (a, b) a kernel expansion f_ab(x) = Σ_j coef_j k(s_j, x) + b_ab on
    its own columns of the stored support points, positive for a; each pair votes, as SVC's one-vs-one does.

    arrays: ``support`` (S, d); ``pairs`` (P, 2) class positions; ``offsets`` (P + 1,): pair p's terms are
    ``columns[offsets[p]:offsets[p + 1]]`` (positions in ``support``) with ``coef`` at the same positions;
    ``intercepts`` (P,).  meta: ``n_classes``.  The scores are one column per class: its votes, plus the pairs'
    summed confidence squashed into (−⅓, ⅓), which breaks ties without overturning a vote
    (:func:`vote_scores`)."""

    name = "pairwise_votes"

    def decision_function(self, X, ctx):
        a = self.arrays
        return pairwise_scores(ctx.kernel, ctx.xp, X, a["support"], a["coef"], a["columns"], a["offsets"],
                               a["intercepts"], a["pairs"], int(self.meta["n_classes"]))


def pairwise_scores(kernel, xp, X, support, coef, columns, offsets, intercepts, pairs, n_classes):
    """:class:`PairwiseVotes`' scores of the rows X: k(X, support) a chunk of rows at a time, each pair's expansion on
    its columns, then :func:`vote_scores`."""
    from ..numerics import rows as _rows

    S = xp.asarray(support)
    coef = xp.asarray(coef, dtype=S.dtype)
    pairs, offsets, columns = np.asarray(pairs), np.asarray(offsets), np.asarray(columns)
    intercepts = np.asarray(intercepts, dtype=np.float64)
    out = xp.empty((X.shape[0], n_classes), dtype=np.float64)
    k = kernel.bind(S)
    step = max(1, (1 << 22) // max(1, S.shape[0]))  # ~16 MB of float32 kernel values per chunk: few chunks x pairs
    cols = [xp.asarray(columns[offsets[p]:offsets[p + 1]]) for p in range(len(pairs))]
    for lo, hi in _rows.chunks(X.shape[0], step):
        K = k(_rows.kernel_rows(kernel, X, slice(lo, hi), xp, S.dtype))
        F = xp.empty((hi - lo, len(pairs)), dtype=np.float64)
        for p in range(len(pairs)):
            F[:, p] = K[:, cols[p]] @ coef[offsets[p]:offsets[p + 1]] + intercepts[p]
        out[lo:hi] = vote_scores(F, pairs, n_classes)
    return out


def vote_scores(F, pairs, n_classes):
    """Per class: the votes of the pairs' scores ``F`` (rows × P; pair p = (a, b) votes a where F > 0, else b) plus
    the summed confidence c (F for a, −F for b) as c / (3(|c| + 1)), inside (−⅓, ⅓): it orders classes with equal
    votes and never one with fewer votes above one with more.  Two products with the pairs' one-hot class matrices
    (no loop over the C(C − 1)/2 pairs)."""
    from ..numerics.backend import get_namespace

    xp = get_namespace(F)
    pairs = np.asarray(pairs)
    first = np.zeros((len(pairs), n_classes))
    second = np.zeros((len(pairs), n_classes))
    first[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    second[np.arange(len(pairs)), pairs[:, 1]] = 1.0
    first, second = xp.asarray(first), xp.asarray(second)
    up = (F > 0).astype(np.float64)
    votes = up @ first + (1.0 - up) @ second
    conf = F @ (first - second)
    return votes + conf / (3.0 * (xp.abs(conf) + 1.0))


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
        from ..numerics.features import FeatureMap

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
        from ..numerics import rows as _rows

        if _rows.is_sparse(X):
            return np.asarray(X @ w) + b
        xp = ctx.xp
        return xp.asarray(X) @ xp.asarray(w) + xp.asarray(b)

