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

    def __getstate__(self):  # a pickle holds the arrays, not the groups made from them
        return {k: v for k, v in self.__dict__.items() if k != "_groups"}

    def decision_function(self, X, ctx):
        a = self.arrays
        if getattr(self, "_groups", None) is None:  # made once a model: the support rows by the pairs they serve
            self._groups = pair_groups(a["coef"], a["columns"], a["offsets"], len(a["pairs"]))
        return pairwise_scores(ctx.kernel, ctx.xp, X, a["support"], a["coef"], a["columns"], a["offsets"],
                               a["intercepts"], a["pairs"], int(self.meta["n_classes"]), self._groups)


def pairwise_scores(kernel, xp, X, support, coef, columns, offsets, intercepts, pairs, n_classes, groups=None):
    """:class:`PairwiseVotes`' scores of the rows X: k(X, support) a chunk of rows at a time, every pair's expansion on
    its columns, then :func:`vote_scores`.

    The support rows are taken in groups that serve the same pairs (:func:`pair_groups`; ``groups``: its result where
    the caller holds it): one-vs-one on every row has a group per class, each serving the C − 1 pairs of its class, so
    a chunk's pair scores are C products of its kernel values with a (rows of the class) × (C − 1) coefficient block --
    C(C − 1) n flops a row, not a gather of every pair's columns (325 pairs of 26 classes: ten times faster).  The
    chunks run on kopt's worker threads, BLAS held to one thread inside."""
    from ..numerics import rows as _rows
    from ..numerics import threads as _threads

    groups = pair_groups(coef, columns, offsets, len(pairs)) if groups is None else groups
    order, bounds, members, blocks = groups
    S = xp.asarray(np.asarray(support)[order])  # the support rows group by group
    blocks = [xp.asarray(B, dtype=np.float64) for B in blocks]
    members = [xp.asarray(m) for m in members]  # index arrays on the backend (CuPy indexes with its own)
    intercepts = np.asarray(intercepts, dtype=np.float64)
    out = xp.empty((X.shape[0], n_classes), dtype=np.float64)
    k = kernel.bind(S)
    step = max(1, (1 << 20) // max(1, S.shape[0]))  # ~8 MB of kernel values per chunk (in float64)
    chunks = _rows.chunks(X.shape[0], step)
    threads = _threads.resolve_threads(None) if xp is np else 1

    def work(t):
        for lo, hi in chunks[t::threads]:
            # the products in float64: a pair's two classes' sums have opposite signs, and in float32 their
            # rounding flipped the votes of pairs scored near 0
            K = k(_rows.kernel_rows(kernel, X, slice(lo, hi), xp, S.dtype)).astype(np.float64)
            F = xp.zeros((hi - lo, len(pairs)), dtype=np.float64)
            F += xp.asarray(intercepts)
            for (a, z), served, B in zip(bounds, members, blocks):
                F[:, served] += K[:, a:z] @ B
            out[lo:hi] = vote_scores(F, pairs, n_classes)

    with _threads.blas_threads(1) if xp is np else _nullcontext():
        _threads.parallel_map(work, range(threads), threads)
    return out


def pair_groups(coef, columns, offsets, n_pairs):
    """The support rows of a :class:`PairwiseVotes` model grouped by the pairs whose expansions use them: ``(order,
    bounds, members, blocks)`` -- ``order`` the support positions group by group, ``bounds[g]`` group g's ``(lo, hi)``
    in that order, ``members[g]`` the pairs it serves (sorted), ``blocks[g]`` its coefficients, (rows of g) × (pairs
    it serves), 0 where a pair does not use a row (a row listed twice in a pair adds its coefficients)."""
    coef = np.asarray(coef, dtype=np.float64)
    columns, offsets = np.asarray(columns, dtype=np.int64), np.asarray(offsets, dtype=np.int64)
    pair_of = np.repeat(np.arange(n_pairs), np.diff(offsets))
    by_row = np.lexsort((pair_of, columns))  # entries by support row, then by pair
    rows, served, values = columns[by_row], pair_of[by_row], coef[by_row]
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if len(rows) else np.zeros(0, dtype=np.int64)
    ends = np.r_[starts[1:], len(rows)]
    keyed = {}  # the pairs a row serves -> the group's number
    group_of = np.empty(len(starts), dtype=np.int64)
    members = []
    for r, (lo, hi) in enumerate(zip(starts, ends)):
        key = served[lo:hi].tobytes()
        if key not in keyed:
            keyed[key] = len(members)
            members.append(np.unique(served[lo:hi]))
        group_of[r] = keyed[key]
    by_group = np.argsort(group_of, kind="stable")  # the support rows (of ``starts``) group by group, in row order
    order = rows[starts][by_group]
    counts = np.bincount(group_of, minlength=len(members))
    first = np.r_[0, np.cumsum(counts)]
    position = np.empty(len(starts), dtype=np.int64)  # each row's place inside its group
    position[by_group] = np.arange(len(starts)) - first[group_of[by_group]]
    entry_row = np.repeat(np.arange(len(starts)), ends - starts)  # each entry's row (of ``starts``)
    entry_group = group_of[entry_row]
    blocks = []
    for g, served_pairs in enumerate(members):
        mine = np.flatnonzero(entry_group == g)
        block = np.zeros((int(counts[g]), len(served_pairs)))
        np.add.at(block, (position[entry_row[mine]], np.searchsorted(served_pairs, served[mine])), values[mine])
        blocks.append(block)
    bounds = [(int(first[g]), int(first[g + 1])) for g in range(len(members))]
    return order, bounds, members, blocks


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

