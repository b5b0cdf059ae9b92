"""The DSG family on a Dask cluster: data-parallel mini-batches (docs/scale.md, "The DSG family").

Iteration t draws the same B rows as on one machine (``problem.rng("batch", t)`` over the global
row indices, :class:`kopt_plugins.dsg.sampling.BatchSampler`): the client draws them, and so does every
worker, from the same seeded generator, so no request carries them.  The training partitions are
contiguous row ranges in order, so partition k's share of the batch is the sorted batch rows in
its range.  Every partition's worker keeps

* its rows and labels, the feature map (the same seeded blocks: a block is regenerated from its
  index), and
* a **copy of the expansion**, kept identical to the client's bit for bit by replaying the client's
  writes (:attr:`kopt_plugins.dsg.expansion.BlockExpansion.journal`): a step's writes are the shrink
  factor ρ, one block's coefficients (F[·C] floats) and its ‖f_j‖², so a step sends O(F·C) floats to
  each worker, never the expansion.

One step is one round trip: the client sends each partition the last step's writes and the batch
request (:class:`kopt_plugins.dsg.batch.BatchRequest`: t, τ, the blocks to differentiate); the worker
replays the writes, draws iteration t's rows, keeps its share and evaluates them with the same :class:`~kopt_plugins.dsg.batch.LocalRows` as one machine uses,
returning the partial sums Σ ℓ, Σ ℓ'², Σ ℓ'f and the adjoints Φ_ωᵀℓ' of the requested blocks (the
new block -- and, for CDSG, of its checked blocks); the client adds them in partition order and takes
the single-machine step with them (:meth:`kopt_plugins.dsg.solver.DoublyStochastic.step`).  Sums are
exact up to the order of floating-point addition, so the model equals the single-machine one to
float tolerance.  A CDSG step does not know before the sums whether it adds a block, so it asks for
the new block's adjoint too (one extra F-block adjoint on B/K rows: still one round trip).

Checks (the training loss on the seeded check rows) run on the workers against their copies,
with the score trackers next to the rows.

**Lost state.** Every task carries the version (the count of writes) its records start from; a
copy at another version -- a worker that died and whose partition Dask re-read elsewhere, or a
copy moved between workers (rebuilt from its partition, empty) -- answers ``STALE`` and the client
replaces it with the whole expansion (:func:`_sync`), then repeats the task.  The run goes on with
the same model.  A run resumed from a checkpoint (``--resume``) starts with every copy replaced.
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from kopt.distributed.partitions import Held, local_problem, worker_template
from kopt.errors import KoptError

from .batch import LocalRows, total
from .expansion import BlockExpansion
from .objective import LossTerms
from .sampling import BatchSampler

#: what a task answers when its partition's copy of the expansion is not at the version it was sent for
STALE = "stale"


class Replica(Held):
    """What partition ``k``'s worker keeps: its rows (a :class:`LocalRows`), its copy of the expansion, and the
    batch sampler of the whole training set (it draws iteration t's rows as the client does: global row
    indices from ``problem.rng("batch", t)`` of the spec's seed, then keeps those in its range ``lo:hi``).
    Rebuilt from its partition wherever it lands, it is empty: its first task answers STALE and is re-sent."""

    def __init__(self, part, k, template, block_size, n_outputs, averaging, lo, batch_size, sampling):
        self.hold(part, k, template, block_size, n_outputs, averaging, lo, batch_size, sampling)
        self.lo, self.hi = int(lo), int(lo) + int(part["X"].shape[0])
        self.sampler = BatchSampler(template, batch_size, sampling)  # the template's n and rng are the whole set's
        problem = local_problem(template, part, k)
        # one thread: kopt expects one thread per worker process (docs/scale.md); the bits do not depend on it
        fmap = problem.feature_map(count=False, threads=1)
        expansion = BlockExpansion(np, block_size, n_outputs, averaging=averaging)
        self.rows = LocalRows(problem, fmap, expansion, LossTerms(problem))
        self.pre = problem.preprocessor
        self.holdout = {}  # test partition j -> (tracker of its holdout rows, their raw labels)
        self.version = 0

    def catch_up(self, version, records):
        """Replay ``records`` (the writes from ``version`` on); False when this copy is not at ``version``."""
        if self.version != version:
            return False
        self.rows.expansion.replay(records)
        self.version += len(records)
        return True


def _start(part, k, template, *args):
    return Replica(part, k, template, *args)


def _evaluate(rep, version, records, req):
    if not rep.catch_up(version, records):
        return STALE
    if req.rows is None:  # iteration t's batch, drawn here as on the client, and this partition's share of it
        req = replace(req, rows=rep.sampler.rows(req.t, rep.sampler.generator(req.t))).within(rep.lo, rep.hi)
    return rep.rows.evaluate(replace(req, extra=[*req.extra, *req.prefetch], prefetch=[]))


def _adjoint(rep, version, block):
    if rep.version != version or rep.rows._last is None:
        return STALE
    return rep.rows.adjoint(block)


def _check(rep, version, records, rows, tau):
    if not rep.catch_up(version, records):
        return STALE
    return rep.rows.check_sums(rows, tau)


def _holdout(rep, version, records, tests):
    """Scores and raw labels of the holdout rows of the test partitions ``tests`` ``[(j, part, local rows)]``:
    the rows standardized here (as one machine does), their scores tracked block by block."""
    if not rep.catch_up(version, records):
        return STALE
    out = []
    for j, part, local in tests:
        held = rep.holdout.get(j)
        if held is None:
            X = part["X"] if local is None else part["X"][local]
            y = part["y"] if local is None or part["y"] is None else np.asarray(part["y"])[local]
            X = X if hasattr(X, "tocsr") else np.asarray(X)  # CSR rows stay sparse, as on one machine
            held = rep.holdout[j] = (rep.rows.tracker(rep.pre.transform(X, dtype=rep.rows.dtype)), y)
        out.append((j, rep.rows.scores(held[0]), held[1]))
    return out


def _sync(rep, state, version):
    """Replace the copy wholesale with the client's expansion ``state`` (at ``version``)."""
    rep.rows.expansion.restore(state)
    rep.rows.forget_trackers()
    rep.holdout = {}
    rep.rows._last = None
    rep.version = version
    return True


class PartitionedRows:
    """The client's side: the same interface as :class:`LocalRows`, its sums added over the partitions.

    Parameters
    ----------
    problem : kopt.contract.problem.Problem
        A distributed problem (``problem.partitions``).
    solver : DoublyStochastic
        The solver (its options).
    expansion : BlockExpansion
        The client's expansion, the model; its ``journal`` is switched on here.
    terms : LossTerms
        The client's τ (the labels stay on the workers).
    """

    def __init__(self, problem, solver, expansion, terms):
        self.parts = problem.partitions
        self.expansion = expansion
        self.terms = terms
        self.K = len(self.parts.rows)
        self.offsets = self.parts.offsets
        template = worker_template(problem)
        o = solver.options
        self.replicas = [self.parts.submit(k, _start, p, k, template, expansion.F,
                                           expansion.out[0] if expansion.out else None, expansion.averaging,
                                           int(self.offsets[k]), o.batch_size, o.sampling)
                         for k, p in enumerate(self.parts.train)]
        expansion.journal = []
        self.version = 0            # writes sent to the workers' copies so far
        self.stale = set()          # partitions whose copy is replaced wholesale before their next task
        self.round_trips = 0
        self.bytes_out = 0          # payload sent to the workers (records and requests), for the report
        self.wait_s = 0.0           # seconds the client waited for the workers
        self.replaced = 0           # copies replaced wholesale (a lost worker, a resumed run)
        self.steps = 0              # batch evaluations (one per step) and their payload
        self.step_bytes = 0

    # -- tasks on every partition -------------------------------------------------------------------
    def _flush(self):
        """The writes since the last task and the version they start from."""
        records = self.expansion.journal
        self.expansion.journal = []
        version = self.version
        self.version += len(records)
        return version, records

    def _run(self, fn, per_part, records=True):
        """``fn(replica_k, version, [records,] *per_part[k])`` on every partition, in partition order."""
        version, recs = self._flush() if records else (self.version, None)
        t0 = time.perf_counter()
        head = (lambda v, r: (v, r)) if records else (lambda v, r: (v,))
        sent = [(version, recs)] * self.K
        if self.stale:  # these get the whole expansion as it is now, and no records
            for k in self.stale:
                sent[k] = (self.version, [])
            self._sync(sorted(self.stale))
        futures = [self.parts.submit(k, fn, self.replicas[k], *head(*sent[k]), *per_part[k]) for k in range(self.K)]
        out = self.parts.gather(futures)
        self.bytes_out += sum(_nbytes(r) for _, r in sent) + sum(_nbytes(a) for a in per_part)
        for attempt in range(4):
            lost = [k for k, o in enumerate(out) if isinstance(o, str) and o == STALE]
            if not lost:
                break
            if not records:
                raise KoptError("a worker lost its copy of the DSG expansion between the batch and its late adjoint; "
                                "run again (or resume from the checkpoint)")
            if attempt == 3:
                raise KoptError(f"the workers of partitions {lost} keep losing their copy of the DSG expansion; "
                                "resume from the checkpoint (output.checkpoint_every) once the cluster is stable")
            self._sync(lost)
            again = self.parts.gather([self.parts.submit(k, fn, self.replicas[k], *head(self.version, []),
                                                         *per_part[k]) for k in lost])
            for k, o in zip(lost, again):
                out[k] = o
        self.round_trips += 1
        self.wait_s += time.perf_counter() - t0
        return out

    def _sync(self, ks):
        state = self.expansion.state()
        self.parts.gather([self.parts.submit(k, _sync, self.replicas[k], state, self.version) for k in ks])
        self.bytes_out += len(ks) * _nbytes(state)
        self.replaced += len(ks)
        self.stale.difference_update(ks)

    def _local(self, rows):
        """Each partition's share of the sorted global ``rows`` (None: all of its rows)."""
        if rows is None:
            return [None] * self.K
        off = self.offsets
        cut = np.searchsorted(rows, off)
        return [rows[cut[k]:cut[k + 1]] - off[k] for k in range(self.K)]

    # -- what the step and the checks ask --------------------------------------------------------
    def evaluate(self, req):
        # the workers draw the batch rows themselves (the same seeded generator): the request is O(1) in B
        drawn = replace(req, rows=None, checked=None if req.fused else req.checked)  # fused: every block
        before = self.bytes_out
        sums = total(self._run(_evaluate, [(drawn,)] * self.K))
        self.steps += 1
        self.step_bytes += self.bytes_out - before
        return sums

    def late_adjoint(self, sums, block):
        a = sums.A.get(int(block))
        if a is not None:
            return a
        return total(self._run(_adjoint, [(int(block),)] * self.K, records=False))

    def check_sums(self, rows, tau):
        pieces = self._run(_check, [(r, tau) for r in self._local(rows)])
        return sum(p[0] for p in pieces), sum(p[1] for p in pieces)

    def holdout_scorer(self, rows):
        """A callable giving ``(scores, raw labels)`` of the test rows ``rows`` (sorted global indices of the
        test partitions; None: all), scored on the workers: test partition j goes with training partition
        j mod K (the same worker when the spec's files were read; else its rows move there once)."""
        parts = self.parts
        off = np.concatenate([[0], np.cumsum(parts.test_rows)]).astype(np.int64)
        J = len(parts.test)
        if rows is None:
            local = [None] * J
        else:
            cut = np.searchsorted(rows, off)
            local = [rows[cut[j]:cut[j + 1]] - off[j] for j in range(J)]
        tests = [[(j, parts.test[j], local[j]) for j in range(J) if j % self.K == k] for k in range(self.K)]

        def score():
            got = dict((j, (sc, y)) for piece in self._run(_holdout, [(t,) for t in tests]) for j, sc, y in piece)
            scores = np.concatenate([got[j][0] for j in range(J)], axis=0)
            labels = [got[j][1] for j in range(J)]
            y = None if any(v is None for v in labels) else np.concatenate([np.asarray(v) for v in labels])
            return scores, y

        return score

    def restored(self):
        """The client's expansion was restored from a checkpoint: every copy is replaced before its next task."""
        self.expansion.journal = []
        self.stale = set(range(self.K))

    # -- scores of rows this process holds: none -------------------------------------------------
    def tracker(self, X):
        raise KoptError("on a Dask cluster the DSG family scores the rows on the workers; no rows are held here")

    scores = training_scores = tracker

    def summary(self) -> dict:
        """Facts for the report: partitions, round trips, payload sent (in all, and per step to all the
        workers) and time spent waiting."""
        return {"partitions": self.K, "round_trips": self.round_trips, "bytes_to_workers": int(self.bytes_out),
                "worker_wait_s": round(self.wait_s, 3), "copies_replaced": self.replaced,
                "bytes_per_step": int(self.step_bytes / max(1, self.steps))}


def _nbytes(obj) -> int:
    """Bytes of the arrays and numbers in a (nested) task argument (the payload, without pickling)."""
    if obj is None:
        return 0
    if hasattr(obj, "nbytes"):
        return int(obj.nbytes)
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    if hasattr(obj, "__dataclass_fields__"):
        return sum(_nbytes(getattr(obj, f)) for f in obj.__dataclass_fields__)
    return 8 if isinstance(obj, (int, float)) else 0
