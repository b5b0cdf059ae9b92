"""The batch evaluation of one DSG step, on the rows one process holds.

A step of the family (:meth:`kopt_plugins.dsg.solver.DoublyStochastic.step`) needs, of its B batch
rows, sums only: Σ ℓ(f_t(x_b)), Σ ℓ'², Σ ℓ'·f_t(x_b), Σ ∂ℓ/∂τ and the adjoints Φ_ωᵀℓ' of a few
feature blocks (the new block, a re-used one, CDSG's checked ones).  Sums split over row sets, so
the step reads them from a :class:`BatchSums`, whoever computed it:

* on one machine, :class:`LocalRows` evaluates the whole batch on ``problem.X``;
* on a Dask cluster, every partition's worker runs the same :class:`LocalRows` on the batch rows it
  holds, against its copy of the expansion, and the client adds the pieces in partition order
  (:class:`kopt_plugins.dsg.distributed.PartitionedRows`).

The step itself -- the choice of block, the step size, the update -- is one code path either way.
The same holds for the checks: the summed training loss of the seeded check rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from kopt.numerics import rows as _rows

from .tracking import ScoreTracker


@dataclass
class BatchRequest:
    """What one step asks of the batch.

    ``rows``: sorted row indices (global on one machine, the partition's own on a worker);
    ``fused``: predict and take the adjoint of *every* block in one feature evaluation (CDSG checking
    all blocks; ``checked`` is then not read); ``checked``: block indices whose adjoint the policy
    needs before it chooses (None: none); ``extra``: further blocks whose adjoint the step needs;
    ``prefetch``: blocks whose adjoint the step *may* need after choosing -- a partitioned
    evaluation computes them at once (one round trip a step), one machine computes them when asked;
    ``tau``: the offset of a novelty loss (its label); ``t``: the iteration (a worker draws the batch rows of
    iteration t itself when ``rows`` is None, from the same seeded generator as the client).
    """

    rows: np.ndarray | None
    fused: bool = False
    checked: list | None = None
    extra: list = field(default_factory=list)
    prefetch: list = field(default_factory=list)
    tau: float = 0.0
    t: int = 0

    def within(self, lo, hi):
        """This request restricted to rows ``lo:hi``, renumbered from 0 (a partition's share)."""
        a, b = np.searchsorted(self.rows, [lo, hi])
        return replace(self, rows=self.rows[a:b] - lo)


@dataclass
class BatchSums:
    """Sums over the batch rows of one process (or, added, of all of them).

    ``loss`` Σ w ℓ(f(x_b)); ``grad_sq`` Σ ℓ'²; ``cross`` Σ ℓ'·f(x_b); ``offset`` Σ ∂ℓ/∂τ;
    ``G`` the adjoints of the checked blocks ``(nb, F[, C])`` (None: none); ``A`` {block: adjoint}.
    """

    loss: float = 0.0
    grad_sq: float = 0.0
    cross: float = 0.0
    offset: float = 0.0
    G: object = None
    A: dict = field(default_factory=dict)

    def __add__(self, other):
        def add(a, b):
            return b if a is None else a if b is None else a + b

        return BatchSums(self.loss + other.loss, self.grad_sq + other.grad_sq, self.cross + other.cross,
                         self.offset + other.offset, add(self.G, other.G),
                         {b: add(self.A.get(b), other.A.get(b)) for b in {**self.A, **other.A}})


def total(pieces):
    """The sum of per-partition :class:`BatchSums`, added in partition order."""
    out = pieces[0]
    for p in pieces[1:]:
        out = out + p
    return out


class LocalRows:
    """The training rows this process holds and the evaluations a run makes on them.

    Parameters
    ----------
    problem : kopt.contract.problem.Problem
        Its ``X`` are the rows (the whole training set, or one partition's rows on a worker).
    fmap : kopt.numerics.features.FeatureMap
        The run's feature map (no fixed count: the blocks are named).
    expansion : BlockExpansion
        The model (a worker's copy on a cluster).
    terms : LossTerms
        Labels, weights and τ of these rows.
    """

    def __init__(self, problem, fmap, expansion, terms):
        self.X = problem.X
        self.xp = problem.xp
        self.dtype = problem.dtype
        self.fmap = fmap
        self.expansion = expansion
        self.terms = terms
        self.F = fmap.block_size
        self.out = expansion.out
        self.check_rows = None      # the skeleton's check rows (None: all) and their tracker, made at the first check
        self.check_tracker = None
        self._last = None           # (X_b, ℓ') of the last batch: adjoints asked after the step chose its block

    # -- the step ------------------------------------------------------------------------------
    def evaluate(self, req: BatchRequest) -> BatchSums:
        """The sums of the batch rows ``req.rows`` at the current expansion (see :class:`BatchSums`)."""
        exp, fmap, xp, terms = self.expansion, self.fmap, self.xp, self.terms
        rows = req.rows
        terms.tau = req.tau
        nb = exp.m if req.fused else None if req.checked is None else len(req.checked)
        if rows.shape[0] == 0:  # a partition holding none of this batch's rows
            self._last = None
            shape = (self.F,) + self.out
            return BatchSums(G=None if nb is None else xp.zeros((nb,) + shape, dtype=np.float64),
                             A={int(b): xp.zeros(shape, dtype=np.float64) for b in req.extra})
        Xb = _rows.dense(self.X, xp.asarray(rows), xp, self.dtype)
        G = None
        if req.fused:
            # f_t(x_b) and Φ_kᵀℓ'(f_t(x_b)) of every block k in one feature evaluation
            pred, G = fmap.predict_adjoint(
                Xb, exp.coef[: exp.m], lambda f, lo, hi: terms.grad(exp.scale * f, rows[lo:hi]),
                blocks=exp.blocks[: exp.m].tolist())
            u = exp.scale * pred
        else:
            u = exp.predict(fmap, Xb)
        loss, g = terms.sum_and_grad(u, rows)
        if req.checked is not None and not req.fused:
            G = fmap.adjoint(Xb, g, blocks=list(req.checked))
        self._last = (Xb, g)
        sums = BatchSums(loss=loss, grad_sq=float((g * g).sum()), cross=float((g * u).sum()),
                         offset=terms.offset_sum(u, rows), G=G)
        sums.A = {int(b): self.adjoint(b) for b in req.extra}
        return sums

    def adjoint(self, block):
        """Φ_ωᵀℓ' of block ``block`` on the last batch's rows: ``(F[, C])``."""
        if self._last is None:
            return self.xp.zeros((self.F,) + self.out, dtype=np.float64)
        Xb, g = self._last
        return self.fmap.adjoint(Xb, g, blocks=[int(block)])[0]

    def late_adjoint(self, sums, block):
        """The adjoint of ``block`` the step needs after choosing, when ``sums`` does not hold it."""
        a = sums.A.get(int(block))
        return self.adjoint(block) if a is None else a

    # -- scores of fixed row sets --------------------------------------------------------------
    def tracker(self, X):
        """A :class:`ScoreTracker` of the rows ``X``, following the expansion from now on."""
        exp = self.expansion
        tr = ScoreTracker(X, self.xp, self.dtype, self.out[0] if self.out else None)
        if not exp.averaging:  # the averaged iterate changes every block: it is evaluated from scratch
            tr.pending = {j: exp.coef[j].copy() for j in range(exp.m)}
            exp.listeners.append(tr)
        return tr

    def scores(self, tracker):
        """f(X) of the tracker's rows: the current iterate, or the averaged one with ``averaging``."""
        exp = self.expansion
        if not exp.averaging:
            return tracker.sync(self.fmap, exp)
        if exp.m == 0:
            return tracker.scores
        return self.fmap.predict(tracker.X, exp.averaged_coefficients(), blocks=exp.blocks[: exp.m].tolist())

    def training_scores(self, rows):
        """f at the training rows ``rows`` (sorted indices, or None: all), tracked incrementally.

        The skeleton passes the same seeded rows to every check, so one tracker serves the run.
        """
        if self.check_tracker is None:
            X = self.X if rows is None else _rows.take(self.X, self.xp.asarray(rows))
            self.check_rows, self.check_tracker = rows, self.tracker(X)
        elif not _same_rows(rows, self.check_rows):
            raise ValueError("the check rows changed during the run")
        return self.scores(self.check_tracker)

    def check_sums(self, rows, tau):
        """``(Σ w ℓ(f(x_i)), count)`` over the check rows ``rows`` (None: all rows)."""
        self.terms.tau = tau
        count = self.X.shape[0] if rows is None else int(rows.shape[0])
        if count == 0:
            return 0.0, 0
        return self.terms.sum_value(self.training_scores(rows), rows), count

    def restored(self):
        """The run's expansion was restored from a checkpoint (nothing to do for this process's rows)."""

    def forget_trackers(self):
        """Drop the trackers (the expansion was replaced wholesale: they would follow the old one)."""
        self.expansion.listeners = []
        self.check_rows = self.check_tracker = None


def _same_rows(a, b):
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b))
