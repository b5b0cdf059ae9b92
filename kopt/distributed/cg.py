"""Nyström kernel ridge regression by conjugate gradients over partitions: one map-reduce round per CG step.

:class:`PartitionCG` is :class:`kopt.nystrom.NystromCG` whose rows live on a Dask cluster (``problem.partitions``).
The client holds what is O(M²) or O(M C): the centers, U (R = K_CC = UᵀU) with the preconditioner in its buffer, CG's
vectors v, T v, r, p.  Partition k's worker holds its rows, its labels, its row weights and its share of the scores
f = K w (O(n_k C)); every kernel block is made and dropped there (:class:`kopt.nystrom.RowPass`, one thread per
worker).  ``krr_pcg`` solves on it, and ``solver: auto`` grows its centers on every row with it.

* **Row weights**: every row weighs 1, or the rows ``held_out`` (sorted global positions: ``data.held_out``'s, or
  ``solver: auto``'s validation rows) weigh 0 and the others n/(n − m), mean 1 over the n rows -- the weights one
  machine gives the same rows (:meth:`kopt.running.assemble.LocalRows.fit_weights`).  Each worker makes its own from
  the positions.
* **The start** (one round): every partition returns Kᵀ[W Y, W 1] and Σ w y, Σ w y², from which the client forms the
  labels' weighted mean μ (the fixed intercept, :func:`kopt.nystrom.target_offset`; or the ``offset`` given) and
  B = Kᵀ W (Y − μ) = KᵀWY − (KᵀW1)μᵀ.
* **A CG iteration** (one round): the client sends the direction's coefficients P = U⁻¹p and the last step's sizes a;
  worker k first adds a ⊙ u to its scores (u = K P of the last round, kept there), then makes u = K P and returns
  Kᵀ(W u) (M × C, float64) and five weighted sums per output over its rows: Σ w r², Σ w r u, Σ w u², Σ w r y and
  Σ w u y with r = f − y (y the centered labels).  The client adds the pieces in partition order (one machine's T p,
  up to the order of the sums), takes the CG step, and has the certificate of the new iterate without another
  round: for the square loss the loss and its conjugate at f + a u are quadratics in a.
* **The confirming pass** (at most every few steps and at the end): one round with float64 products.  Mid-solve
  (:meth:`PartitionCG.replace_residual`) its scores become the workers' and CG continues from its residual; at the
  iteration cap (:meth:`PartitionCG.refresh`) the workers' scores are untouched.
* **Scores of chosen rows** (:meth:`PartitionCG.scores_at`, one round, no kernel values): the current scores of a
  few rows (``solver: auto``'s validation rows) gathered to the client.

A round's tasks never change their inputs: each returns the partition's new state (its scores and u), which stays
on the worker as an input of the next round.  When a worker dies, Dask reads its partition again elsewhere and
recomputes that partition's rounds from their inputs: the run goes on with the same bits.  Nothing is ``scatter``'ed:
the centers and a resumed run's scores travel inside tasks (:meth:`kopt.distributed.partitions.Partitions.put`).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import KoptError
from ..numerics import rows as _rows
from ..numerics.linalg import solve_triangular
from ..nystrom.cg import NystromCG, center_factors
from ..nystrom.factors import upper_times
from ..nystrom.passes import RowPass
from .partitions import Held, local_problem, worker_template


def local_positions(offsets, rows) -> list:
    """Sorted global row positions ``rows`` cut into each partition's local positions (``offsets``: the partitions'
    first rows and the total, :attr:`kopt.distributed.partitions.Partitions.offsets`).

    Parameters
    ----------
    offsets : array of int, shape (K + 1,)
        Where each partition's rows begin, and n.
    rows : array of int
        Sorted global positions.

    Returns
    -------
    list of ndarray
        Partition k's positions among its own rows.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.distributed.cg import local_positions
    >>> [p.tolist() for p in local_positions(np.array([0, 3, 6]), np.array([1, 3, 5]))]
    [[1], [0, 2]]
    """
    rows = np.asarray(rows, dtype=np.int64)
    cut = np.searchsorted(rows, offsets)
    return [rows[cut[k]:cut[k + 1]] - offsets[k] for k in range(len(offsets) - 1)]


def held_out_weights(n_k, local, scale):
    """A partition's row weights: ``scale`` on every row, 0 on its ``local`` positions (None: no held-out rows at all,
    so no weights)."""
    if scale is None:
        return None
    w = np.full(int(n_k), float(scale))
    w[np.asarray(local, dtype=np.int64)] = 0.0
    return w


class Rows(Held):
    """What partition ``k``'s worker keeps for the whole run: its rows' pass against the centers, its labels (n_k × C)
    and its row weights.  Nothing in it changes: the scores travel from round to round as the rounds' own results."""

    def __init__(self, part, k, template, C, held, scale):
        self.hold(part, k, template, C, held, scale)
        self.Y = local_problem(template, part, k).label_matrix()
        self.w = held_out_weights(self.Y.shape[0], held, scale)
        self.rows = RowPass(template.kernel, part["X"], C, template.dtype, self.w, threads=1)


def _new(part, k, template, C, held, scale):
    return Rows(part, k, template, C, held, scale)


def _sums(rows, scores, u, yc):
    """The five weighted sums per output of the module docstring: Σ w r², Σ w r u, Σ w u², Σ w r y, Σ w u y
    (r = f − y)."""
    r = scores - yc
    wr = r if rows.w is None else r * rows.w[:, None]
    out = np.zeros((5, yc.shape[1]))
    out[0], out[3] = np.sum(wr * r, axis=0), np.sum(wr * yc, axis=0)
    if u is not None:
        wu = u if rows.w is None else u * rows.w[:, None]
        out[1], out[2], out[4] = np.sum(wr * u, axis=0), np.sum(wu * u, axis=0), np.sum(wu * yc, axis=0)
    return out


# A round's task returns ``(state, answer)``: the state (the scores f and the last u = K P, or None) stays on the
# worker as the input of the next round's task, the answer comes back.  Tasks never change their inputs, so a round
# run twice (a worker lost, its partition's rounds recomputed from their inputs) gives the same bits.

def _start(rows):
    """The start round: the scores are zero (v = 0); ``(Kᵀ W [Y, 1], Σ w Y, Σ w Y²)``."""
    Y = rows.Y
    R = np.concatenate([Y, np.ones((Y.shape[0], 1))], axis=1)
    if rows.w is not None:
        R = R * rows.w[:, None]
    G = rows.rows.adjoint(R)
    return (np.zeros_like(Y), None), (G, np.sum(R[:, :-1], axis=0), np.sum(R[:, :-1] * Y, axis=0))


def _iterate(rows, last, a, P, mu):
    """A CG round: f + a ⊙ u, then u = K P; ``(Kᵀ W u, the sums at (f, u))``."""
    scores, u = last[0]
    if u is not None:
        scores = scores + a * u
    u, G = rows.rows.products(P)
    return (scores, u), (G, _sums(rows, scores, u, rows.Y - mu))


def _answer(out):
    return out[1]


def _precise(rows, P, mu):
    """The confirming pass: ``(Kᵀ W f, the sums at f)`` for f = K P with float64 products; no state."""
    S, G = rows.rows.products(P, precise=True)
    return G, _sums(rows, S, None, rows.Y - mu)


def _replaced(rows, P, mu):
    """Residual replacement's round (:meth:`PartitionCG.replace_residual`): f = K P with float64 products becomes the
    partition's scores; ``(Kᵀ W f, the sums at f)``."""
    S, G = rows.rows.products(P, precise=True)
    return (S, None), (G, _sums(rows, S, None, rows.Y - mu))


def _current(last, a):
    """The scores of the last iterate (the checkpoint's): f + a ⊙ u, as the next round makes them."""
    scores, u = last[0]
    return scores if u is None else scores + a * u


def _current_at(last, a, local):
    """The scores of the last iterate at the partition's rows ``local``."""
    scores, u = last[0]
    local = np.asarray(local, dtype=np.int64)
    return scores[local] if u is None else scores[local] + a * u[local]


def _restored(rows, scores, mu):
    """A resumed run's scores as the state; the sums at them."""
    scores = np.array(scores, dtype=np.float64)
    return (scores, None), _sums(rows, scores, None, rows.Y - mu)


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


class PartitionCG(NystromCG):
    """:class:`kopt.nystrom.NystromCG` over ``problem.partitions``: the same CG on the client, each pass one round.

    The state's ``sums`` (5 × C) and ``a`` (C) stand for the scores: the certificate's loss sums at f + a u (module
    docstring).  :meth:`start`, :meth:`step`, :meth:`confirm`, :meth:`coef` and :meth:`projected` are NystromCG's.

    Parameters
    ----------
    problem : kopt.contract.problem.Problem
        A problem whose rows are on a Dask cluster (``problem.partitions``; its ``X`` and ``y`` are not read), its
        kernel's bandwidth a number; no ``sample_weight``.
    C : ndarray of shape (m, d)
        The drawn centers, dense (gathered from the partitions).
    held_out : ndarray of int, optional
        Sorted global positions of the rows of weight 0; the others weigh n/(n − m).  None: the partitions' own
        (``data.held_out``'s, :attr:`kopt.distributed.partitions.Partitions.held_out`), or none.
    offset : ndarray of shape (k,), optional
        The intercept μ the targets are centered by (None: their weighted mean, from the start round).

    Attributes
    ----------
    C, M, n, U, b, lam
        As :class:`kopt.nystrom.NystromCG`'s.
    mu : ndarray of shape (k,)
        The intercept μ.
    K : int
        The partitions.
    rounds : int
        Rounds so far (each one gather of one answer per partition).
    held_out : ndarray of int or None
        The rows of weight 0.

    Examples
    --------
    On a LocalCluster (docs/scale.md): ``cg = PartitionCG(problem, C)``, ``s = cg.start(lam)``, then ``cg.step(s)``
    one round at a time; ``cg.scores_at(s, rows)`` gathers the scores of a few rows.

    >>> from kopt.distributed.cg import PartitionCG
    >>> PartitionCG.factor_threads
    1
    """

    #: the client's preconditioner product runs on one thread (the workers hold the cores)
    factor_threads = 1

    def __init__(self, problem, C, held_out=None, offset=None):
        if problem.sample_weight is not None:
            raise KoptError("Nystrom CG on a Dask cluster takes no sample weights; run it on one machine")
        self.xp, self.n, self.dtype, self.kernel = np, problem.n, np.dtype(problem.dtype), problem.kernel
        # as on one machine: the same kept centers, bits of U and preconditioner (U and its factor in one buffer)
        self.C, self.factors = center_factors(problem.kernel, C, threads=1)
        self.M = self.C.shape[0]
        self.parts, self.preprocessor = problem.partitions, problem.preprocessor
        if held_out is None:
            held_out = getattr(self.parts, "held_out", None)
        self.held_out = None if held_out is None or not len(held_out) else np.asarray(held_out, dtype=np.int64)
        m = 0 if self.held_out is None else len(self.held_out)
        if m >= self.n:
            raise KoptError("the held-out rows leave no row of positive weight to fit")
        scale = None if m == 0 else self.n / (self.n - m)  # mean 1 over the n rows, as LocalRows.fit_weights
        self.weights, self.lam = None, None
        self.scale = self.factors.scale_for(1.0)
        self.K = len(self.parts.rows)
        self.rounds = self.kernel_passes = 0
        self.pending = None  # the step sizes a of the last round's u, once CG has taken that step
        template = worker_template(dataclasses.replace(problem, X=None, y=None, X_test=None, y_test_raw=None))
        # the centers, sent once inside a task (not scattered): a lost worker's copy is made again from it
        self.on_workers = self.parts.put(None, self.C)
        local = [None] * self.K if self.held_out is None else local_positions(self.parts.offsets, self.held_out)
        self.held = [self.parts.submit(k, _new, p, k, template, self.on_workers, local[k], scale)
                     for k, p in enumerate(self.parts.train)]
        pieces = self._step(_start, [()] * self.K)
        G, sum_y, sum_yy = (_total([p[i] for p in pieces]) for i in range(3))
        # the labels' weighted mean (the weights' sum is n), or the intercept given: the model's fixed intercept
        self.mu = sum_y / self.n if offset is None else np.asarray(offset, dtype=np.float64).reshape(-1)
        self.zero_sums = np.zeros((5, self.mu.shape[0]))  # the sums at f = 0: Σ w (y − μ)², −Σ w (y − μ)²
        self.zero_sums[0] = (sum_yy - self.n * self.mu * self.mu if offset is None
                             else sum_yy - 2.0 * self.mu * sum_y + self.n * self.mu * self.mu)
        self.zero_sums[3] = -self.zero_sums[0]
        B = G[:, :-1] - G[:, -1:] * self.mu[None, :]
        self.b = solve_triangular(self.U, B / self.n, lower=False, trans="T")

    @property
    def passes(self) -> int:
        """The passes over the rows so far (each a round; a resumed run's restoring round is not one)."""
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

    def apply_T(self, v: np.ndarray) -> tuple[None, np.ndarray]:
        """T v in one round; the scores stay on the workers (None in their place).

        Parameters
        ----------
        v : ndarray of shape (M, k)
            Whitened coefficients.

        Returns
        -------
        None, ndarray of shape (M, k)
            No scores on the client, and T v.
        """
        Tv, _ = self._pass(self.coef(v))
        return None, Tv

    def advance_scores(self, s: dict, alpha: np.ndarray, Kp: None) -> None:
        """The scores' update f += α K p happens on the workers at the next round; here the sums at f + α K p.

        Parameters
        ----------
        s : dict
            CG's state.
        alpha : ndarray of shape (k,)
            The step's sizes.
        Kp : None
            No scores on the client.
        """
        self.pending = alpha
        s["sums"], s["a"] = self.last_sums, alpha

    def start(self, lam: float, v: np.ndarray | None = None, *, direction: bool = True) -> dict:
        """:meth:`kopt.nystrom.NystromCG.start` with the direction always made: a warm start's round replaces the
        workers' carried scores (:meth:`replace_residual`), which a refresh alone would leave.

        Parameters
        ----------
        lam : float
            λ.
        v : array of shape (M, k), optional
            The whitened coefficients to start from; None starts from zero.
        direction : bool, optional
            Read as True on a cluster.

        Returns
        -------
        dict
            CG's state, with ``p`` and ``rz``.
        """
        return super().start(lam, v)

    def _zero_state(self):
        """CG's state at v = 0 (no round: the start round zeroed the scores; a warm start is
        :meth:`replace_residual`'s round, as :meth:`kopt.nystrom.NystromCG.start`); no n-long array on the client."""
        v = np.zeros_like(self.b)
        z = self.precondition(self.b)
        return {"v": v, "Tv": np.zeros_like(v), "sums": self.zero_sums, "a": np.zeros(v.shape[1]), "r": self.b.copy(),
                "p": z, "rz": np.sum(self.b * z, axis=0)}

    def refresh(self, s: dict) -> dict:
        """T v and the sums at ``s["v"]`` from one round with float64 products (in place); the iterates untouched.

        Parameters
        ----------
        s : dict
            CG's state (at least ``v``).

        Returns
        -------
        dict
            ``s`` with ``Tv``, ``r``, ``sums`` and ``a`` recomputed.
        """
        P = self.coef(s["v"])
        pieces = self._round([self.parts.submit(k, _precise, r, P, self.mu) for k, r in enumerate(self.held)])
        self.kernel_passes += 1
        return self._refreshed(s, pieces)

    def _refreshed(self, s, pieces):
        """T v, r and the sums of ``s`` from a float64 round's pieces ``(Kᵀ W f, the sums at f)``, in place."""
        G = _total([g for g, _ in pieces])
        s["sums"], s["a"] = _total([sums for _, sums in pieces]), np.zeros(self.b.shape[1])
        s["Tv"] = solve_triangular(self.U, G / self.n, lower=False, trans="T")
        s["r"] = self.b - s["Tv"] - self.lam * s["v"]
        return s

    def replace_residual(self, s: dict) -> dict:
        """Residual replacement: one round with float64 products whose scores become every partition's (the workers'
        carried ones are dropped); T v, r and the sums of CG's own state ``s`` from it, and its direction restarted.

        Parameters
        ----------
        s : dict
            CG's state (at least ``v``).

        Returns
        -------
        dict
            ``s`` refreshed, with ``p`` and ``rz`` from its residual.
        """
        pieces = self._step(_replaced, [(self.coef(s["v"]), self.mu)] * self.K)
        self.pending = None  # the new scores already hold every step taken
        return self.restart(self._refreshed(s, pieces))

    def certificate(self, s: dict, loss, Y=None) -> tuple[float, float, float]:
        """``(P, D, scale)`` summed over the outputs at state ``s``, from its sums: the square loss's P and D of
        :func:`kopt.nystrom.certificate` (½ mean w r², −mean w (½ r² + r y) with r = f − y), no round.

        Parameters
        ----------
        s : dict
            CG's state.
        loss : Loss
            The square loss.
        Y : None
            Not read (the labels are the workers').

        Returns
        -------
        P, D, scale : float
            The primal and dual values and the certificate's scale.

        Raises
        ------
        KoptError
            ``loss`` is not the square loss.
        """
        if loss.name != "square":
            raise KoptError(f"Nystrom CG on a Dask cluster solves the square loss only, not {loss.name!r}")
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

    def _pending(self):
        return np.zeros(self.b.shape[1]) if self.pending is None else self.pending

    def scores(self, s: dict) -> np.ndarray:
        """Every row's scores f (n × C, gathered: the checkpoint's), one round.

        Parameters
        ----------
        s : dict
            CG's state.

        Returns
        -------
        ndarray of shape (n, k)
            K w at the state's iterate, without the intercept.
        """
        a = self._pending()
        return np.concatenate(self._round([self.parts.submit(k, _current, o, a) for k, o in enumerate(self.last)]),
                              axis=0)

    def scores_at(self, s: dict, rows) -> np.ndarray:
        """The scores f = K w of training rows ``rows`` at state ``s``, gathered from their partitions (one round, no
        kernel values).

        Parameters
        ----------
        s : dict
            CG's state.
        rows : array of int
            Global row positions, in any order.

        Returns
        -------
        ndarray of shape (len(rows), k)
            Their scores, in the order of ``rows``, without the intercept.
        """
        rows = np.asarray(rows, dtype=np.int64)
        order = np.argsort(rows, kind="stable")
        local = local_positions(self.parts.offsets, rows[order])
        a = self._pending()
        pieces = self._round([self.parts.submit(k, _current_at, o, a, local[k]) for k, o in enumerate(self.last)])
        out = np.empty((len(rows), self.b.shape[1]))
        out[order] = np.concatenate(pieces, axis=0)
        return out

    def restore(self, s: dict, scores) -> None:
        """A resumed run: the checkpoint's scores back to the workers (one round); the sums at them.

        Parameters
        ----------
        s : dict
            CG's state, its ``sums`` and ``a`` set here.
        scores : array of shape (n, k)
            The checkpoint's scores.
        """
        # each partition's scores inside a task next to it (not scattered): recomputable when its worker is lost
        pieces = [self.parts.put(k, p) for k, p in enumerate(self.parts.split(np.asarray(scores, dtype=np.float64)))]
        pieces = self._step(_restored, [(p, self.mu) for p in pieces])
        self.pending = None
        s["sums"], s["a"] = _total(pieces), np.zeros(self.b.shape[1])

    def scorer(self, rows, intercept):
        """A callable giving ``(scores, raw labels)`` of the test rows ``rows`` at the coefficients it is given, scored
        on the workers.

        Parameters
        ----------
        rows : array of int or None
            Sorted global positions among the test partitions' rows (None: all).
        intercept : ndarray of shape (k,)
            Added to the scores.

        Returns
        -------
        callable
            ``score(w)``: the scores (with the intercept) and the raw labels (None without test labels).
        """
        parts = self.parts
        off = np.concatenate([[0], np.cumsum(parts.test_rows)]).astype(np.int64)
        J = len(parts.test)
        local = [None] * J if rows is None else local_positions(off, rows)
        kernel, pre, dtype = self.kernel, self.preprocessor, self.dtype

        def score(w):
            futures = [parts.client.submit(_score_test, parts.test[j], local[j], pre, kernel, self.on_workers, w,
                                           dtype, pure=False) for j in range(J)]
            pieces = parts.gather(futures)
            scores = np.concatenate([p[0] for p in pieces], axis=0) + intercept
            y = None if any(p[1] is None for p in pieces) else np.concatenate([np.asarray(p[1]) for p in pieces])
            return scores, y

        return score

    def summary(self) -> dict:
        """``{"partitions": K, "rounds": rounds}``: what a solver's report says of the rounds.

        Returns
        -------
        dict
            The counts.
        """
        return {"partitions": self.K, "rounds": self.rounds}


__all__ = ["PartitionCG", "local_positions"]
