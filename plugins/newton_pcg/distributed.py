"""newton_pcg on a Dask cluster: the same Newton steps on the client, each pass one round over the partitions.

The client holds what is O(M²) or O(M C): the centers, U with the preconditioner in its buffer, Newton's and CG's
vectors.  Partition k's worker holds its rows and labels and, from round to round, its rows' scores F = f + b₀, their
curvature weights D, and CG's direction scores K d (O(n_k C) each); every kernel block is made and dropped there
(:class:`kopt.nystrom.RowPass`, one thread per worker).  The rounds (:class:`PartitionNewtonRows`):

* **the offset** b₀ (:func:`kopt.nystrom.best_offset`): one round per bracketing or Newton step, Σ w ℓ'(y, c) and
  Σ w ℓ''(y, c) of each partition's labels -- no kernel values;
* **the gradient** (one round a Newton step, float64 products): each partition's Kᵀ(ℓ'(F)), its four certificate
  sums and the curvature of its rows that are centers (the preconditioner's weights); F and D stay on the worker;
* **a CG step** (one round): the client sends P = U⁻¹p and the last step's sizes a; the worker adds a ⊙ u to its
  direction scores (u = K P of the last round, kept there), makes u = K P and returns Kᵀ(D ⊙ u);
* **the line search** (one round, no kernel values): Σ ℓ(F + a K d) for each step length the client asks.

The partitions' pieces are added in partition order: one machine's sums up to their order, so the model is one
machine's to the solve's tolerance (its certificate holds it there).  A round's tasks never change their inputs: each
returns the partition's new state, which stays on the worker as the next round's input, so a worker lost is made
again from its partition and the rounds' inputs (krr_pcg's rounds do the same, docs/scale.md).
"""
from __future__ import annotations

import numpy as np

from kopt.distributed.partitions import Held, local_problem, worker_template
from kopt.errors import KoptError
from kopt.numerics import rows as _rows
from kopt.nystrom import NystromCG, RowPass, best_offset, estimate_positions
from kopt.nystrom.centers import choose_centers
from kopt.nystrom.cg import center_factors


class Rows(Held):
    """What partition ``k``'s worker keeps for the whole run: its rows' pass against the centers, its labels (n_k × C,
    as the loss reads them) and the positions of its rows that are centers."""

    def __init__(self, part, k, template, C, centers):
        self.hold(part, k, template, C, centers)
        self.Y = local_problem(template, part, k).label_matrix()
        self.loss = template.loss
        self.rows = RowPass(template.kernel, part["X"], C, template.dtype, threads=1)
        self.centers = np.asarray(centers, dtype=np.int64)


def _new(part, k, template, C, centers):
    return Rows(part, k, template, C, centers)


def _answer(out):
    return out[1]


def _offset_sums(rows, c):
    """Σ ℓ'(y, c) and Σ ℓ''(y, c) per column over the partition's labels (:func:`kopt.nystrom.best_offset`)."""
    c = np.asarray(c)[None, :] + np.zeros_like(rows.Y)
    return np.sum(rows.loss.grad(c, rows.Y), axis=0), np.sum(rows.loss.curvature(c, rows.Y), axis=0)


def _span(rows):
    return np.max(np.abs(rows.Y), axis=0) if rows.Y.shape[0] else np.zeros(rows.Y.shape[1])


def _gradient(rows, W, offset):
    """The gradient round: ``(state, (Kᵀℓ'(F), the four sums, the centers' curvature))``, F = K W + b₀."""
    loss, Y = rows.loss, rows.Y
    b0 = np.asarray(offset, dtype=np.float64)[None, :]
    S, G = rows.rows.predict_adjoint(W, lambda f, lo, hi: loss.grad(f + b0, Y[lo:hi]))
    F = S + b0
    lp = loss.grad(F, Y)
    values = loss.value(F, Y)
    sums = np.stack([values.sum(axis=0), loss.conj(lp, Y).sum(axis=0), lp.sum(axis=0), np.abs(values).sum(axis=0)])
    D = loss.curvature(F, Y).astype(np.float64, copy=False)
    return {"F": F, "D": D, "Kd": np.zeros_like(F), "u": None}, (G, sums, D[rows.centers])


def _step(rows, last, a, P):
    """A CG round: K d += a ⊙ u, then u = K P; ``(state, Kᵀ(D ⊙ u))``."""
    state = dict(last[0])
    Kd = state["Kd"] if state["u"] is None else state["Kd"] + a[None, :] * state["u"]
    u, G = rows.rows.products(P, weights=state["D"])
    state.update(Kd=Kd, u=u)
    return state, G


def _line(rows, last, a, A):
    """The line search's sums: Σ ℓ(F + t K d) per column for each row t of ``A``, with K d's pending ``a`` ⊙ u."""
    state = last[0]
    Kd = state["Kd"] if state["u"] is None else state["Kd"] + a[None, :] * state["u"]
    return np.stack([rows.loss.value(state["F"] + t[None, :] * Kd, rows.Y).sum(axis=0) for t in A])


class _ClientCG(NystromCG):
    """The client's factors: the kept centers, U and the preconditioner's buffer, and the whitening; no rows."""

    factor_threads = 1  # the workers hold the cores

    def __init__(self, problem, C):
        self.xp, self.n, self.dtype, self.kernel = np, problem.n, np.dtype(problem.dtype), problem.kernel
        self.C, self.factors = center_factors(problem.kernel, C, threads=1)
        self.M = self.C.shape[0]
        self.weights, self.Y, self.b, self.lam = None, None, None, None
        self.scale = self.factors.scale_for(1.0)


class PartitionSystem(_ClientCG):
    """A Newton step's system on the partitions: :class:`kopt.nystrom.NystromCG`'s CG on the client, its passes the
    rows' CG rounds (the curvature weights are the workers' own)."""

    def __init__(self, owner, b, estimate_weights):
        base = owner.cg
        self.xp, self.n, self.dtype, self.kernel = np, base.n, base.dtype, base.kernel
        self.C, self.factors, self.M = base.C, base.factors, base.M
        self.weights, self.Y, self.b, self.lam = None, None, b, None
        self.estimate_weights, self.estimate_rows = estimate_weights, None
        self.scale = 1.0 if estimate_weights is not None else base.scale
        self.owner = owner

    def apply_T(self, v):
        G = self.owner.cg_round(self.coef(v))
        return None, self.factors.whiten(G / self.n)

    def advance_scores(self, s, alpha, Kp):
        """K d += α u happens on the workers at the next round (or the line search's)."""
        self.owner.pending = alpha

    def _zero_state(self):
        v = np.zeros_like(self.b)
        z = self.precondition(self.b)
        return {"v": v, "Tv": np.zeros_like(v), "scores": None, "r": self.b.copy(), "p": z,
                "rz": np.sum(self.b * z, axis=0)}


class PartitionNewtonRows:
    """The rows' side of :class:`kopt.nystrom.SmoothNewton` on ``problem.partitions`` (:class:`kopt.nystrom.NewtonRows`'
    methods, each pass one round).  ``C``: the drawn centers' dense rows, ``centers`` their global row positions."""

    def __init__(self, problem, C, centers):
        if problem.sample_weight is not None:
            raise KoptError("solver 'newton_pcg' on a Dask cluster takes no sample weights (nor data.class_weight): "
                            "run it on one machine, or leave the weights out")
        self.parts = problem.partitions
        self.cg = _ClientCG(problem, C)
        self.xp, self.n, self.M, self.loss = np, problem.n, self.cg.M, problem.loss
        self.K = len(self.parts.rows)
        self.rounds = self.passes = 0
        self.pending = None
        self.estimate, more = estimate_positions(problem.rng("newton_estimate"), problem.n, problem.d, centers,
                                                 self.cg.M, problem.features.centers == "uniform")
        self.estimate_rows = _rows.dense(self.parts.take(self.estimate), None, np, problem.dtype) if more else None
        centers = self.estimate  # the rows whose curvature each gradient round sends back
        off = self.parts.offsets
        on_workers = self.parts.put(None, self.cg.C)  # the kept centers, sent once inside a task (recomputable)
        template = worker_template(problem)
        local = [centers[(centers >= off[k]) & (centers < off[k + 1])] - off[k] for k in range(self.K)]
        self.held = [self.parts.submit(k, _new, p, k, template, on_workers, local[k])
                     for k, p in enumerate(self.parts.train)]
        self.last = None
        span = np.max(np.stack(self._round([self.parts.submit(k, _span, r) for k, r in enumerate(self.held)])), axis=0)
        self.offset = best_offset(problem.loss, None, sums=self._offset_sums, span=span)

    def _round(self, futures):
        out = self.parts.gather(futures)
        self.rounds += 1
        return out

    def _offset_sums(self, c):
        pieces = self._round([self.parts.submit(k, _offset_sums, r, c) for k, r in enumerate(self.held)])
        return _total([g for g, _ in pieces]), _total([h for _, h in pieces])

    def gradient(self, W):
        """The gradient round (one float64 pass): ``(G, sums, curvature at the centers)``."""
        outs = [self.parts.submit(k, _gradient, r, W, self.offset) for k, r in enumerate(self.held)]
        pieces = self._round([self.parts.submit(k, _answer, o) for k, o in enumerate(outs)])
        self.last, self.pending = outs, None
        self.passes += 1
        G = _total([p[0] for p in pieces])
        sums = _total([p[1] for p in pieces])
        return G, sums, np.concatenate([p[2] for p in pieces], axis=0)

    def cg_round(self, P):
        """One CG round at coefficients P: Kᵀ(D ⊙ K P) over every partition."""
        a = np.zeros(P.shape[1]) if self.pending is None else np.asarray(self.pending, dtype=np.float64)
        outs = [self.parts.submit(k, _step, r, last, a, P) for k, (r, last) in enumerate(zip(self.held, self.last))]
        G = _total(self._round([self.parts.submit(k, _answer, o) for k, o in enumerate(outs)]))
        self.last = outs
        self.passes += 1
        return G

    def system(self, b, estimate_weights, estimate_rows=None):
        self.pending = None
        return PartitionSystem(self, b, estimate_weights)

    def step_pass(self, system, s):
        system.step(s)

    def line(self, s, A):
        a = np.zeros(A.shape[1]) if self.pending is None else np.asarray(self.pending, dtype=np.float64)
        A = np.asarray(A, dtype=np.float64)
        return _total(self._round([self.parts.submit(k, _line, r, last, a, A)
                                   for k, (r, last) in enumerate(zip(self.held, self.last))]))

    def scorer(self, rows, intercept, dtype):
        """A callable giving ``(scores, raw labels)`` of the test rows ``rows`` (sorted global indices of the test
        partitions; None: all) at the coefficients it is given, scored on the workers."""
        parts, kernel, pre = self.parts, self.cg.kernel, None
        off = np.concatenate([[0], np.cumsum(parts.test_rows)]).astype(np.int64)
        J = len(parts.test)
        local = [None] * J if rows is None else \
            [rows[lo:hi] - off[j] for j, (lo, hi) in enumerate(zip(np.searchsorted(rows, off[:-1]),
                                                                     np.searchsorted(rows, off[1:])))]
        C = self.parts.put(None, self.cg.C)
        pre = self.preprocessor

        def score(w):
            futures = [parts.client.submit(_score_test, parts.test[j], local[j], pre, kernel, C, w, dtype, pure=False)
                       for j in range(J)]
            pieces = parts.gather(futures)
            scores = np.concatenate([p[0] for p in pieces], axis=0) + intercept
            y = None if any(p[1] is None for p in pieces) else np.concatenate([np.asarray(p[1]) for p in pieces])
            return scores, y

        return score

    def summary(self):
        return {"partitions": self.K, "rounds": self.rounds}


def _score_test(part, local, pre, kernel, C, w, dtype):
    """Runs on a worker: the scores of a test partition's rows ``local`` (None: all), standardized here."""
    X = part["X"] if local is None else _rows.take(part["X"], local)
    y = part["y"] if local is None or part["y"] is None else np.asarray(part["y"])[local]
    X = pre.transform(X if hasattr(X, "tocsr") else np.asarray(X), dtype=dtype)
    return RowPass(kernel, X, C, dtype, threads=1).scores_pass(w), y


def _total(pieces):
    """The partitions' pieces added in partition order."""
    out = np.array(pieces[0], dtype=np.float64)
    for p in pieces[1:]:
        out += p
    return out


def rows_of(problem):
    """``(rows' side, centers)`` on ``problem.partitions``: the seeded centers (one machine's), gathered once, and the
    preconditioner's estimate rows (one machine's: :func:`kopt.nystrom.estimate_positions`), gathered where they are
    more than the centers."""
    centers = np.asarray(choose_centers(problem, problem.features.count), dtype=np.int64)
    C = _rows.dense(problem.partitions.take(centers), None, np, problem.dtype)
    rows = PartitionNewtonRows(problem, C, centers)
    rows.preprocessor = problem.preprocessor
    return rows, centers
