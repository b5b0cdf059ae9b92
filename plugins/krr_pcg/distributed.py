"""krr_pcg on a Dask cluster: one map-reduce round over the partitions per CG iteration (docs/scale.md).

The client holds what is O(M²) or O(M C): the centers, U (R = K_CC = UᵀU) with the preconditioner in its buffer, CG's
vectors v, T v, r, p.  Partition k's worker holds its rows, its labels and its share of the scores f = K w
(O(n_k C)); every kernel block is made and dropped there (:class:`.passes.RowPass`, one thread per worker).

* **Centers**: the same rows as on one machine (:func:`kopt.nystrom.choose_centers`: the seeded order, repeated
  rows skipped), read from their partitions a block at a time (``Partitions.take``), gathered once.
* **The start** (one round): every partition returns Kᵀ[Y, 1] and Σ Y, from which the client forms the labels' mean
  μ (the fixed intercept, :func:`kopt.nystrom.system.target_offset`) and B = Kᵀ(Y − μ) = KᵀY − (Kᵀ1)μᵀ.
* **A CG iteration** (one round): the client sends the direction's coefficients P = U⁻¹p and the last step's
  sizes a; worker k first adds a ⊙ u to its scores (u = K P of the last round, kept there), then makes u = K P and
  returns Kᵀu (M × C, float64) and five sums per output over its rows: Σ r², Σ r u, Σ u², Σ r y and Σ u y with
  r = f − y (y the centered labels).  The client adds the pieces in partition order (one machine's T p, up to the
  order of the sums), takes the CG step, and has the certificate of the new iterate without another round: for
  the square loss the loss and its conjugate at f + a u are quadratics in a, Σ (r + a u)² = Σ r² + 2a Σ r u +
  a² Σ u² and Σ (r + a u) y = Σ r y + a Σ u y.  Kᵀr = n Uᵀ(T v − b) is carried by CG on the client.
* **The confirming pass** (at most every few steps and at the end): one round with float64 products.  Mid-solve
  (:meth:`PartitionCG.replace_residual`) its scores become the workers' and CG continues from its residual; at the
  iteration cap (:meth:`PartitionCG.refresh`) the workers' scores are untouched.

A checkpoint gathers the scores (8 bytes per row and output, like Joker's α); a resumed run sends them back
(one round): the run continues with the same bits.  A round's tasks never change their inputs: each returns the
partition's new state (its scores and u), which stays on the worker as an input of the next round.  When a worker
dies, Dask reads its partition again elsewhere and recomputes that partition's rounds from their inputs: the run
goes on with the same bits (Joker's rounds do the same, docs/scale.md).  Nothing is ``scatter``'ed: the centers
and a resumed run's scores travel inside tasks (:meth:`kopt.distributed.partitions.Partitions.put`), which the
scheduler can run again; a scattered copy lost with its worker could not be made again, and every task reading
it was cancelled (``FutureCancelledError``, an internal error).  Work Dask gives up on is a ClusterError naming
the lost worker (exit status 2).
"""
from __future__ import annotations

import numpy as np

from kopt.distributed.partitions import Held, local_problem, worker_template
from kopt.errors import KoptError
from kopt.numerics import rows as _rows
from kopt.numerics.linalg import solve_triangular
from kopt.nystrom.centers import choose_centers
from kopt.nystrom.cg import NystromCG, center_factors
from kopt.nystrom.factors import upper_times
from kopt.nystrom.passes import RowPass


class Rows(Held):
    """What partition ``k``'s worker keeps for the whole run: its rows' pass against the centers and its labels
    (n_k × C).  Nothing in it changes: the scores travel from round to round as the rounds' own results."""

    def __init__(self, part, k, template, C):
        self.hold(part, k, template, C)
        self.Y = local_problem(template, part, k).label_matrix()
        self.rows = RowPass(template.kernel, part["X"], C, template.dtype, threads=1)


def _new(part, k, template, C):
    return Rows(part, k, template, C)


def _sums(scores, u, yc):
    """The five sums per output of the module docstring: rows Σ r², Σ r u, Σ u², Σ r y, Σ u y (r = f − y)."""
    r = scores - yc
    out = np.zeros((5, yc.shape[1]))
    out[0], out[3] = np.sum(r * r, axis=0), np.sum(r * yc, axis=0)
    if u is not None:
        out[1], out[2], out[4] = np.sum(r * u, axis=0), np.sum(u * u, axis=0), np.sum(u * yc, axis=0)
    return out


# A round's task returns ``(state, answer)``: the state (the scores f and the last u = K P, or None) stays on the
# worker as the input of the next round's task, the answer comes back.  Tasks never change their inputs, so a round
# run twice (a worker lost, its partition's rounds recomputed from their inputs) gives the same bits.

def _start(rows):
    """The start round: the scores are zero (v = 0); ``(Kᵀ[Y, 1], Σ Y, Σ Y²)``."""
    Y = rows.Y
    G = rows.rows.adjoint(np.concatenate([Y, np.ones((Y.shape[0], 1))], axis=1))
    return (np.zeros_like(Y), None), (G, np.sum(Y, axis=0), np.sum(Y * Y, axis=0))


def _iterate(rows, last, a, P, mu):
    """A CG round: f + a ⊙ u, then u = K P; ``(Kᵀu, the sums at (f, u))``."""
    scores, u = last[0]
    if u is not None:
        scores = scores + a * u
    u, G = rows.rows.products(P)
    return (scores, u), (G, _sums(scores, u, rows.Y - mu))


def _answer(out):
    return out[1]


def _precise(rows, P, mu):
    """The confirming pass: ``(Kᵀ f, the sums at f)`` for f = K P with float64 products; no state."""
    S, G = rows.rows.products(P, precise=True)
    return G, _sums(S, None, rows.Y - mu)


def _replaced(rows, P, mu):
    """Residual replacement's round (:meth:`PartitionCG.replace_residual`): f = K P with float64 products becomes the
    partition's scores; ``(Kᵀ f, the sums at f)``."""
    S, G = rows.rows.products(P, precise=True)
    return (S, None), (G, _sums(S, None, rows.Y - mu))


def _current(last, a):
    """The scores of the last iterate (the checkpoint's): f + a ⊙ u, as the next round makes them."""
    scores, u = last[0]
    return scores if u is None else scores + a * u


def _restored(rows, scores, mu):
    """A resumed run's scores as the state; the sums at them."""
    scores = np.array(scores, dtype=np.float64)
    return (scores, None), _sums(scores, None, rows.Y - mu)


class PartitionCG(NystromCG):
    """:class:`.cg.NystromCG` over ``problem.partitions``: the same CG on the client, each pass one round.

    The state's ``sums`` (5 × C) and ``a`` (C) stand for the scores: the certificate's loss sums at f + a u
    (module docstring)."""

    #: the client's preconditioner product runs on one thread (the workers hold the cores)
    factor_threads = 1

    def __init__(self, problem, C):
        if problem.sample_weight is not None:
            raise KoptError("solver 'krr_pcg' on a Dask cluster takes no sample weights; run it on one machine")
        self.xp, self.n, self.dtype, self.kernel = np, problem.n, np.dtype(problem.dtype), problem.kernel
        # as on one machine: the same kept centers, bits of U and preconditioner (U and its factor in one buffer)
        self.C, self.factors = center_factors(problem.kernel, C, threads=1)
        self.M = self.C.shape[0]
        self.weights, self.lam = None, None
        self.scale = self.factors.scale_for(1.0)
        self.parts, self.preprocessor = problem.partitions, problem.preprocessor
        self.K = len(self.parts.rows)
        self.rounds = self.kernel_passes = 0
        self.pending = None  # the step sizes a of the last round's u, once CG has taken that step
        template = worker_template(problem)
        # the centers, sent once inside a task (not scattered): a lost worker's copy is made again from it
        self.on_workers = self.parts.put(None, self.C)
        self.held = [self.parts.submit(k, _new, p, k, template, self.on_workers) for k, p in enumerate(self.parts.train)]
        pieces = self._step(_start, [()] * self.K)
        G, sum_y, sum_yy = (_total([p[i] for p in pieces]) for i in range(3))
        self.mu = sum_y / self.n  # the labels' mean: the model's fixed intercept
        self.zero_sums = np.zeros((5, self.mu.shape[0]))  # the sums at f = 0: Σ r² = Σ (y − μ)² = −Σ r y
        self.zero_sums[0] = sum_yy - self.n * self.mu * self.mu
        self.zero_sums[3] = -self.zero_sums[0]
        B = G[:, :-1] - G[:, -1:] * self.mu[None, :]
        self.b = solve_triangular(self.U, B / self.n, lower=False, trans="T")

    @property
    def passes(self):
        return self.kernel_passes

    def _round(self, futures):
        """Gather one answer per partition: one round, in partition order."""
        out = self.parts.gather(futures)
        self.rounds += 1
        return out

    def _step(self, fn, per_part):
        """A round whose tasks ``fn(rows_k, *per_part[k])`` leave each partition's new state on its worker (kept for
        the next round) and send their answers back."""
        outs = [self.parts.submit(k, fn, r, *per_part[k]) for k, r in enumerate(self.held)]
        self.last = outs
        self.kernel_passes += fn is not _restored
        return self._round([self.parts.submit(k, _answer, o) for k, o in enumerate(outs)])

    def _pass(self, P):
        """One CG round at coefficients P: ``(T U P, the sums at (the scores, K P))``; the last step's a goes along."""
        a = np.zeros(P.shape[1]) if self.pending is None else self.pending
        pieces = self._step(_iterate, [(last, a, P, self.mu) for last in self.last])
        G, sums = _total([g for g, _ in pieces]), _total([s for _, s in pieces])
        self.last_sums = sums
        return solve_triangular(self.U, G / self.n, lower=False, trans="T"), sums

    def apply_T(self, v):
        Tv, _ = self._pass(self.coef(v))
        return None, Tv

    def advance_scores(self, s, alpha, Kp):
        """The scores' update f += α K p happens on the workers at the next round; here the sums at f + α K p."""
        self.pending = alpha
        s["sums"], s["a"] = self.last_sums, alpha

    def _zero_state(self):
        """CG's state at v = 0 (no round: the start round zeroed the scores; a warm start is
        :meth:`replace_residual`'s round, as :meth:`.cg.NystromCG.start`); no n-long array on the client."""
        v = np.zeros_like(self.b)
        z = self.precondition(self.b)
        return {"v": v, "Tv": np.zeros_like(v), "sums": self.zero_sums, "a": np.zeros(v.shape[1]), "r": self.b.copy(),
                "p": z, "rz": np.sum(self.b * z, axis=0)}

    def refresh(self, s):
        """T v and the sums at ``s["v"]`` from one round with float64 products (in place); the iterates untouched."""
        P = self.coef(s["v"])
        pieces = self._round([self.parts.submit(k, _precise, r, P, self.mu) for k, r in enumerate(self.held)])
        self.kernel_passes += 1
        return self._refreshed(s, pieces)

    def _refreshed(self, s, pieces):
        """T v, r and the sums of ``s`` from a float64 round's pieces ``(Kᵀ f, the sums at f)``, in place."""
        G = _total([g for g, _ in pieces])
        s["sums"], s["a"] = _total([sums for _, sums in pieces]), np.zeros(self.b.shape[1])
        s["Tv"] = solve_triangular(self.U, G / self.n, lower=False, trans="T")
        s["r"] = self.b - s["Tv"] - self.lam * s["v"]
        return s

    def replace_residual(self, s):
        """Residual replacement (:meth:`.cg.NystromCG.replace_residual`): one round with float64 products whose scores
        become every partition's (the workers' carried ones are dropped); T v, r and the sums of CG's own state ``s``
        from it."""
        pieces = self._step(_replaced, [(self.coef(s["v"]), self.mu)] * self.K)
        self.pending = None  # the new scores already hold every step taken
        return self.restart(self._refreshed(s, pieces))

    def certificate(self, s, loss, Y=None):
        """``(P, D, scale)`` summed over the outputs at state ``s``, from its sums (the square loss's P and D of
        :func:`kopt.nystrom.certificate`: ½ mean r², −mean(½ r² + r y) with r = f − y)."""
        if loss.name != "square":  # pragma: no cover - check_spec refuses the others
            raise KoptError(f"solver 'krr_pcg' solves the square loss only, not {loss.name!r}")
        m, a, lam, n = s["sums"], s["a"], self.lam, self.n
        rr = m[0] + 2.0 * a * m[1] + a * a * m[2]
        ry = m[3] + a * m[4]
        w = self.coef(s["v"])
        norm_p = np.sum(upper_times(self.U, w) ** 2, axis=0)
        z = solve_triangular(self.U, -self.Ktr(s) / (lam * n), lower=False, trans="T")
        norm_d = np.sum(z * z, axis=0)
        P = 0.5 * lam * norm_p + 0.5 * rr / n
        D = -(0.5 * rr + ry) / n - 0.5 * lam * norm_d
        scale = lam * (norm_p + norm_d) + rr / n
        return float(np.sum(P)), float(np.sum(D)), float(np.sum(scale))

    def scores(self, s):
        """Every row's scores f (n × C, gathered: the checkpoint's)."""
        a = np.zeros(self.b.shape[1]) if self.pending is None else self.pending
        return np.concatenate(self._round([self.parts.submit(k, _current, o, a) for k, o in enumerate(self.last)]),
                              axis=0)

    def restore(self, s, scores):
        """A resumed run: the checkpoint's scores back to the workers (one round); the sums at them."""
        # each partition's scores inside a task next to it (not scattered): recomputable when its worker is lost
        pieces = [self.parts.put(k, p) for k, p in enumerate(self.parts.split(np.asarray(scores, dtype=np.float64)))]
        pieces = self._step(_restored, [(p, self.mu) for p in pieces])
        self.pending = None
        s["sums"], s["a"] = _total(pieces), np.zeros(self.b.shape[1])

    def scorer(self, rows, intercept):
        """A callable giving ``(scores, raw labels)`` of the test rows ``rows`` (sorted global indices of the test
        partitions; None: all) at the coefficients it is given, scored on the workers."""
        parts = self.parts
        off = np.concatenate([[0], np.cumsum(parts.test_rows)]).astype(np.int64)
        J = len(parts.test)
        local = [None] * J if rows is None else \
            [rows[lo:hi] - off[j] for j, (lo, hi) in enumerate(zip(np.searchsorted(rows, off[:-1]),
                                                                     np.searchsorted(rows, off[1:])))]
        kernel, pre, dtype = self.kernel, self.preprocessor, self.dtype

        def score(w):
            futures = [parts.client.submit(_score_test, parts.test[j], local[j], pre, kernel, self.on_workers, w,
                                           dtype, pure=False) for j in range(J)]
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


def init(problem, start=None):
    """The solver's state on ``problem.partitions``: the centers gathered once, CG at v = 0 or from ``start``."""
    centers = choose_centers(problem, problem.features.count)
    C = _rows.dense(problem.partitions.take(centers), None, np, problem.dtype)
    cg = PartitionCG(problem, C)
    state = {"problem": problem, "centers": centers, "Y": None, "intercept": cg.mu, "weights": None,
             "system": None, "cg": cg, "C": cg.C, "U": cg.U, **cg.start(problem.lam, start)}
    state["w"] = cg.coef(state["v"])
    return state
