"""What ``solver: auto`` measures for class ids when one-vs-one on every row is the cheaper route (``krr_pairs``).

For C ≥ 3 classes each pair of classes (a, b) is the exact kernel ridge regression of its own rows
(``krr_pairs``' exact pair solve), and the pairs vote, as SVC's one-vs-one does.  All pairs cost
Σ n_ab³/3 flops per solve (about (4/3) n³/C), against n M² for one one-vs-rest Nyström system of M centers: with
many classes and moderate n the pairs are the cheaper of the two, and every row is a center.  :func:`affordable` is
that comparison, at the ladder's top size (``max_centers``).

The pairs' accuracy is flat in λ and in the bandwidth, so the search is coarse
(docs/design/multiclass-pairs.md).  It runs on the same seeded validation split as the Nyström ladder
(:func:`kopt.running.validation.make_splits`): each pair is solved on its fit rows, and the pairs' votes on the
validation rows score a (bandwidth, λ); with more than :data:`SCORED_PAIRS` pairs, a seeded sample of that many pairs
is solved, each scored on its own two classes' validation rows (their accuracy pooled), so the search costs what 10
classes' does.  Bandwidth: the spec's rule at 1x, then √2 longer, and on while the longer one scores higher, else
once √2 shorter (:data:`FACTOR_STEPS` at most), each at the middle of :data:`FIRST_LAMBDAS`; then λ at the chosen
bandwidth: the other :data:`FIRST_LAMBDAS`, and a decade further past the better end while that scores higher.
Kernel values are computed once per bandwidth: each class's block against itself and against the validation rows,
each pair's cross block when the pair is solved.
"""
from __future__ import annotations

import math
import time

import numpy as np

from kopt.numerics import rows as _rows
from kopt.numerics import threads as _threads

from . import scoring

#: the λ values (indices into the planner's λ path of half decades) scored first: 1e-4, 1e-6 and 1e-8 (exact pairs are
#: flat in λ); the bandwidths are compared at the middle one
FIRST_LAMBDAS = (6, 10, 14)
#: the step past the better end while that scores higher: a decade
LAMBDA_STEP = 2
#: the pairs the search solves at most: every pair up to 10 classes (45), scored by their votes on every validation
#: row; with more classes a seeded sample of this many, each scored on its own two classes' validation rows, so the
#: search's cost does not grow as C² (a 26-class set: 45 of 325 pairs)
SCORED_PAIRS = 45
#: the random stream of that sample, beside the spec's seed
PAIRS_STREAM = 0x70616972
#: bandwidth factors tried at most (1x, then √2 steps in the direction that scores higher)
FACTOR_STEPS = 3
#: a pair's rows at most: its float32 kernel matrix and float64 factor, 12 n_ab² bytes (200 MB at 4,096; a pair per
#: worker thread)
MAX_PAIR_ROWS = 4096
#: the rows' dense values at most (256 MB in float32): the pairs keep every training row as a center
MAX_ROW_ENTRIES = 1 << 26


def pair_sizes(ids, n_classes):
    counts = np.bincount(ids, minlength=n_classes)
    return [int(counts[a] + counts[b]) for a in range(n_classes) for b in range(a + 1, n_classes)]


def affordable(problem, ids, max_centers):
    """Whether exact one-vs-one is the multiclass route: 3 or more classes, every pair within
    :data:`MAX_PAIR_ROWS`, the rows within :data:`MAX_ROW_ENTRIES`, and all pairs' Choleskys (Σ n_ab³/3) at most
    one one-vs-rest system at ``max_centers`` centers (n M²)."""
    if problem.n_classes < 3 or problem.n * problem.d > MAX_ROW_ENTRIES:
        return False
    sizes = pair_sizes(ids, problem.n_classes)
    return max(sizes) <= MAX_PAIR_ROWS and sum(s**3 / 3.0 for s in sizes) <= problem.n * float(max_centers) ** 2


def search(problem, *, bandwidth_rule, lambdas, seed, validation, log):
    """Measure exact one-vs-one on the validation split; returns ``(best trial, trials, split words, seconds,
    held out)``, the last ``{"rows": the validation rows, "scores": their vote scores at the chosen settings}`` where
    every pair votes on them (up to :data:`SCORED_PAIRS` pairs), else None.  ``lambdas``: the λ path (the planner's),
    or the spec's one λ."""
    from kopt.running.validation import make_splits

    t0 = time.perf_counter()
    (tr, va), = make_splits(problem.n, seed, validation=validation)
    p = _PairSearch(problem, tr, va, lambdas, bandwidth_rule, seed)
    middle = 0 if len(lambdas) == 1 else FIRST_LAMBDAS[len(FIRST_LAMBDAS) // 2]  # the spec's λ, or 1e-6

    def at_middle(factor):  # the bandwidth is chosen at the middle λ (exact pairs are flat in λ)
        return middle, p.score(factor, [middle], p.blocks_at(factor))[middle]

    with _threads.blas_threads(1):  # pairs on kopt's worker threads, BLAS on one each (no two pools spinning)
        results = _factors(at_middle, p.has_bw)
        factor = max(results, key=lambda g: (results[g][1], -abs(math.log(g))))
        tried = {middle: results[factor][1]}
        if len(lambdas) > 1:  # then λ at that bandwidth
            _lambdas(p, factor, tried)
    i = max(tried, key=lambda j: (tried[j], -j))  # ties: the larger λ
    best = next(t for t in p.trials if t["bandwidth_factor"] == factor and t["lam_index"] == i)
    for f, (j, a) in results.items():
        log(f"auto: one-vs-one on every row ({len(p.pairs)} pairs), bandwidth x{f:g}: validation accuracy {a:.5g} at "
            f"lambda {lambdas[j]:g}")
    log(f"auto: one-vs-one at bandwidth x{factor:g}: best lambda {lambdas[i]:g}, validation accuracy {tried[i]:.5g}")
    split = f"validation {len(va)} of {problem.n} rows, seed {seed}"
    # every pair voting: the chosen settings' scores of the validation rows, by pairs fitted on the other rows (the
    # probabilities are calibrated on them: no second solve); a sample of the pairs scores no row by every pair
    held_out = None if (factor, i) not in p.held else {"rows": va, "scores": p.held[(factor, i)]}
    return best, p.trials, split, time.perf_counter() - t0, held_out


def _lambdas(p, factor, tried):
    """λ at the chosen bandwidth, added to ``tried`` (``{λ index: score}``, the middle λ's in it): the other
    :data:`FIRST_LAMBDAS`, then a decade (:data:`LAMBDA_STEP`) on past the better end while that scores higher."""
    blocks = p.blocks_at(factor)
    tried.update(p.score(factor, [i for i in FIRST_LAMBDAS if i not in tried], blocks))
    while True:
        k = max(tried, key=lambda i: (tried[i], -i))
        nxt = (min(tried) - LAMBDA_STEP if k == min(tried) else max(tried) + LAMBDA_STEP if k == max(tried)
               else None)
        if nxt is None or not 0 <= nxt < len(p.lambdas) or nxt in tried:
            return
        p.t1 = time.perf_counter()
        tried.update(p.score(factor, [nxt], blocks))
        if tried[nxt] <= tried[k]:
            return


class _PairSearch:
    """One pairs search's rows, pairs and the trials it records: each class's fit rows, the validation rows, and the
    pairs scored (every pair up to :data:`SCORED_PAIRS`, else a seeded sample scored on their own classes' rows)."""

    def __init__(self, problem, tr, va, lambdas, bandwidth_rule, seed):
        from kopt.models.predictors import class_pairs
        from kopt.numerics.backend import to_numpy

        xp = problem.xp
        ids = to_numpy(problem.y).astype(np.int64)
        self.C = problem.n_classes
        self.pairs = class_pairs(self.C)
        self.kernel, self.options = problem.kernel, problem.kernel.options.as_dict()
        self.has_bw = "bandwidth" in self.options and bandwidth_rule
        fit_of = [tr[ids[tr] == c] for c in range(self.C)]  # each class's fit rows
        self.X_of = [_rows.dense(problem.X, xp.asarray(r), xp, problem.dtype) for r in fit_of]
        self.X_val = _rows.dense(problem.X, xp.asarray(va), xp, problem.dtype)
        self.y_val = ids[va]
        w = problem.sample_weight
        self.w_of = None if w is None else [to_numpy(w)[r] for r in fit_of]
        self.xp, self.n, self.lambdas = xp, int(problem.n), lambdas
        self.trials = []
        self.threads = _threads.resolve_threads(None) if xp is np else 1  # a GPU: one pair after the other
        self.votes = len(self.pairs) <= SCORED_PAIRS
        # many classes: a seeded sample of the pairs, each scored on the validation rows of its own two classes
        self.scored = (list(range(len(self.pairs))) if self.votes else sorted(
            np.random.default_rng([int(seed), PAIRS_STREAM]).choice(len(self.pairs), SCORED_PAIRS, replace=False)))
        self.rows_of = None if self.votes else {
            q: np.flatnonzero(np.isin(self.y_val, self.pairs[q])) for q in self.scored}
        self.held = {}  # (bandwidth factor, λ index) -> the validation rows' vote scores, where every pair votes
        self.t1 = time.perf_counter()

    def blocks_at(self, factor):
        """The kernel blocks at bandwidth ``factor`` (the clock of its trials starts here)."""
        self.t1 = time.perf_counter()
        kernel = (type(self.kernel)(**{**self.options, "bandwidth": scoring.digits(self.options["bandwidth"] * factor)})
                  if self.has_bw else self.kernel)
        return _Blocks(kernel, self.X_of, self.X_val, self.w_of, self.xp, self.threads, cache_val=self.votes)

    def score(self, factor, idxs, blocks):
        """The validation score at bandwidth ``factor`` of each λ index of ``idxs`` (each pair's kernel block made
        once for all of them): the accuracy of every pair's votes, or, with more pairs than :data:`SCORED_PAIRS`, the
        sampled pairs' accuracy on their own classes' validation rows, pooled."""
        from kopt.models.predictors import vote_scores

        lams = [self.lambdas[i] for i in idxs]
        cols = _threads.parallel_map(
            lambda q: blocks.pair_scores(*self.pairs[q], lams, None if self.votes else self.rows_of[q]), self.scored,
            self.threads)
        out = {}
        for j, i in enumerate(idxs):
            F = [c[:, j] for c in cols]
            if any(np.isnan(f).any() for f in F):  # a pair whose system did not factor at this λ: no choice
                acc = -np.inf
            elif self.votes:
                self.held[(factor, i)] = vote_scores(np.stack(F, axis=1), self.pairs, self.C)
                acc = float(np.mean(np.argmax(self.held[(factor, i)], axis=1) == self.y_val))
            else:
                right = sum(int(np.sum((f > 0) == (self.y_val[self.rows_of[q]] == self.pairs[q][0])))
                            for q, f in zip(self.scored, F))
                acc = right / sum(len(self.rows_of[q]) for q in self.scored)
            self.trials.append(self._trial(factor, i, acc, len(idxs)))
            out[i] = acc
        return out

    def _trial(self, factor, i, acc, count):
        bandwidth = (scoring.digits(self.options["bandwidth"] * factor) if self.has_bw
                     else self.options.get("bandwidth"))
        return dict(route="krr_pairs", centers=self.n, bandwidth_factor=factor, bandwidth=bandwidth,
                    lam=self.lambdas[i], lam_index=i, score=acc, pairs=len(self.pairs), scored_pairs=len(self.scored),
                    score_is="votes" if self.votes else "the sampled pairs' accuracy on their classes' rows",
                    seconds=(time.perf_counter() - self.t1) / count)


def _factors(best_lambda, has_bw):
    """``{bandwidth factor: (λ index, score)}`` of ``best_lambda(factor)``: 1x, then √2 longer and on while that scores
    higher, else once √2 shorter (:data:`FACTOR_STEPS` at most)."""
    results = {1.0: best_lambda(1.0)}
    if has_bw:
        f = scoring.digits(math.sqrt(2))
        results[f] = best_lambda(f)
        if results[f][1] > results[1.0][1]:
            while len(results) < FACTOR_STEPS:
                g = scoring.digits(f * math.sqrt(2))
                results[g] = best_lambda(g)
                if results[g][1] <= results[f][1]:
                    break
                f = g
        else:
            f = scoring.digits(1 / math.sqrt(2))
            results[f] = best_lambda(f)
    return results


class _Blocks:
    """One bandwidth's kernel values: each class's fit rows against themselves and against the validation rows
    (kept), and a pair's cross block (made when the pair is solved)."""

    def __init__(self, kernel, X_of, X_val, w_of, xp, threads, cache_val=True):
        self.kernel, self.X_of, self.w_of, self.xp = kernel, X_of, w_of, xp
        self.X_val = X_val
        # in the kernel's dtype (float32 by default): a pair's matrix is made in float64 from them.  The validation
        # blocks against every validation row are kept where every pair scores every row (the votes)
        self.own = _threads.parallel_map(lambda c: kernel.exact(X_of[c], X_of[c]), range(len(X_of)), threads)
        self.val = (_threads.parallel_map(lambda c: kernel.exact(X_val, X_of[c]), range(len(X_of)), threads)
                    if cache_val else None)

    def pair_scores(self, a, b, lams, rows=None):
        """Pair (a, b) solved exactly on its fit rows at each λ of ``lams`` (targets ±1 less their mean), scored on the
        validation rows (``rows`` of them: their kernel values made here): ``(rows, len(lams))``, NaN where the
        system did not factor."""
        from kopt.numerics.backend import to_numpy
        from kopt.numerics.linalg import ridge_solve
        from kopt.nystrom.system import target_offset

        xp = self.xp
        na, nb = self.X_of[a].shape[0], self.X_of[b].shape[0]
        n = na + nb
        cross = self.kernel.exact(self.X_of[b], self.X_of[a])  # the lower triangle's off-diagonal block
        y = np.r_[np.ones(na), -np.ones(nb)]
        wt = None if self.w_of is None else np.r_[self.w_of[a], self.w_of[b]]
        wt = None if wt is None else wt / wt.mean()
        mu = float(target_offset(y[:, None], wt)[0])  # krr_pairs' intercept (pair_problem's)
        t = xp.asarray(y - mu)
        d = None if wt is None else xp.sqrt(xp.asarray(wt))
        if rows is None:
            Va, Vb = self.val[a], self.val[b]
        else:
            Xv = self.X_val[xp.asarray(rows)]
            Va, Vb = self.kernel.exact(Xv, self.X_of[a]), self.kernel.exact(Xv, self.X_of[b])
        out = np.full((Va.shape[0], len(lams)), np.nan)
        for j, lam in enumerate(lams):
            A = xp.empty((n, n), dtype=np.float64)  # the lower triangle, from the float32 blocks (one n² array held)
            A[:na, :na] = self.own[a]
            A[na:, na:] = self.own[b]
            A[na:, :na] = cross
            try:
                alpha = ridge_solve(A, t, n * lam, d, released=True)  # on a worker thread: the GIL released
            except np.linalg.LinAlgError:
                continue
            s = Va @ alpha[:na].astype(Va.dtype) + Vb @ alpha[na:].astype(Vb.dtype)
            out[:, j] = to_numpy(s).astype(np.float64) + mu
        return out
