"""Training and test rows held by the workers as partitions; tasks run next to them.

A partition is a dict ``{"X": rows, "y": labels or None}`` living on a worker (a Dask future); the
client knows only its row count.  Partitions come from

* a spec's ``data`` section (files, a glob's files, a preset): partition ``k`` of ``K`` is read by a
  worker -- the parsed-array cache (:mod:`kopt.data.cache`) memory-maps the file, so a worker keeps
  only its contiguous range of rows -- after the same split as on one machine; sparse (LIBSVM) rows
  stay SciPy CSR, as on one machine;
* a ``dask.array`` / ``dask.dataframe`` given from Python: its row chunks (``execution.partitions``
  equal row ranges when set), computed on the workers.

Training partitions are contiguous row ranges in order, so row ``i`` of the single-machine problem
is row ``i - offset[k]`` of partition ``k``, and every per-row quantity a distributed solver sums
across partitions (in partition order) is the single-machine one up to summation order.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..contract.problem import Problem
from ..errors import ClusterError, DataError


@dataclass
class PartitionProblem(Problem):
    """The problem a worker sees: its partition's rows, the components and seeds of the whole run.

    ``rng(stream, *counters)`` is keyed by (spec seed, stream, partition index, counters): every
    random choice made on a worker comes from the spec's seed and its partition's index.
    ``n_total`` is the whole training set's row count (λ scalings that use n need it).
    """

    part: int = 0
    n_total: int = 0

    def rng(self, stream: str, *counters) -> np.random.Generator:
        return super().rng(stream, self.part, *counters)


def local_problem(template: Problem, part: dict, k: int) -> PartitionProblem:
    """The :class:`PartitionProblem` of partition ``k`` (runs on the worker holding ``part``)."""
    base = {f.name: getattr(template, f.name) for f in fields(Problem)}
    base.update(X=part["X"], y=part["y"], partitions=None, X_test=None, y_test_raw=None, info={})
    return PartitionProblem(**base, part=k, n_total=template.n)


def _value(value):
    """A task that returns its argument (:meth:`Partitions.put`)."""
    return value


def _lost_work(exc) -> bool:
    """Whether ``exc`` is Dask giving up on work it lost with a worker (cancelled, killed, its data gone)."""
    try:
        from distributed import CancelledError
        from distributed.client import FutureCancelledError
        from distributed.scheduler import KilledWorker
    except ImportError:  # pragma: no cover - older distributed
        return False
    return isinstance(exc, (CancelledError, FutureCancelledError, KilledWorker))


class PartitionsShape:
    """Stands in for :class:`Partitions` in the problem sent to the workers: the whole training set's shape
    only (``n``, ``d``: what ``Problem.n`` and ``Problem.d`` read), no futures and no client."""

    def __init__(self, n, d):
        self.n, self.d = n, d


class Held:
    """The base of what a worker keeps next to partition ``k`` from task to task (a solver's per-partition state).

    A subclass calls :meth:`hold` with its constructor's arguments, the partition first: pickled, it travels as
    those arguments and is rebuilt from them wherever it lands (a lost worker's state is made again from its
    partition), and the scheduler weighs moving it like moving its partition's rows.
    """

    def hold(self, part, *args):
        self.args = (part, *args)
        self.nbytes = nbytes(part["X"])

    def __reduce__(self):
        return type(self), self.args

    def __sizeof__(self):
        return self.nbytes


def worker_template(problem: Problem) -> Problem:
    """``problem`` without its partitions, spec and info: what every worker's :class:`PartitionProblem` starts
    from (:func:`local_problem`), light to send."""
    return replace(problem, spec=None, partitions=PartitionsShape(problem.n, problem.d), info={})


@dataclass
class Partitions:
    """The run's partitions: ``train`` and ``test`` futures with their row counts (in row order)."""

    client: object
    train: list
    rows: list
    d: int
    test: list = field(default_factory=list)
    test_rows: list = field(default_factory=list)
    _homes: list = None
    #: sorted global positions of the training rows ``data.held_out`` gives weight 0 (None: none); a solver that
    #: declares ``distributed_held_out`` weighs them so (:class:`kopt.distributed.cg.PartitionCG`)
    held_out: object = None

    @property
    def n(self) -> int:
        return int(sum(self.rows))

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.rows)]).astype(np.int64)

    def homes(self, futures):
        """The worker holding each of ``futures`` (None where none does yet)."""
        from distributed import wait

        wait(futures)
        who = self.client.who_has(futures)
        return [(who.get(f.key) or [None])[0] for f in futures]

    def submit(self, k, fn, *args):
        """A future of ``fn(*args)`` run on the worker of training partition ``k`` (elsewhere only when
        that worker is gone: its partition is then read again where the task runs)."""
        if self._homes is None:
            self._homes = self.homes(self.train)
        home = self._homes[k]
        return self.client.submit(fn, *args, pure=False, workers=[home] if home else None, allow_other_workers=True)

    def map(self, fn, *args, test=False):
        """Futures of ``fn(part, *args)``, one per partition, each run where its partition is."""
        if test:
            return [self.client.submit(fn, p, *args, pure=False) for p in self.test]
        return [self.submit(k, fn, p, *args) for k, p in enumerate(self.train)]

    def map_indexed(self, fn, *args):
        """Futures of ``fn(part, k, *args)`` over the training partitions (``k``: the partition index)."""
        return [self.submit(k, fn, p, k, *args) for k, p in enumerate(self.train)]

    def put(self, k, value):
        """A future of ``value`` (the centers, a resumed run's per-partition state) that Dask can make again: the
        value travels inside a task, so the scheduler holds it and reruns the task when the worker keeping its
        result is lost.  (A ``client.scatter``'ed value has no task to rerun: losing its last copy cancelled every
        task that read it, ``FutureCancelledError``.)  ``k``: run next to training partition ``k`` (None: anywhere)."""
        import warnings

        with warnings.catch_warnings():  # the value is in the graph on purpose: that is what makes it recomputable
            warnings.filterwarnings("ignore", message=".*[Ll]arge object.*")
            if k is None:
                return self.client.submit(_value, value, pure=False)
            return self.submit(k, _value, value)

    def gather(self, futures):
        """The results of ``futures``.  Where Dask cannot make one again after losing workers (a task that kept
        killing its workers, a value it could not recompute), a :class:`~kopt.errors.ClusterError` (exit status 2)
        names the lost workers, never a Dask traceback."""
        try:
            return self.client.gather(futures)
        except Exception as exc:
            if not _lost_work(exc):
                raise
            raise ClusterError(self._lost_message(exc)) from None

    def _lost_message(self, exc) -> str:
        try:
            now = set(self.client.nthreads())
        except Exception:  # the scheduler itself is gone
            now = set()
        lost = sorted({h for h in (self._homes or []) if h and h not in now})
        last = getattr(exc, "last_worker", None)
        if last is not None:
            lost = sorted({*lost, getattr(last, "address", str(last))})
        who = ", ".join(lost) if lost else "a worker of the cluster"
        return (f"lost {who} during the solve, and Dask could not make its work again "
                f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); run again (or resume from the "
                "checkpoint, output.checkpoint_every) once the cluster is stable")

    def split(self, array):
        """A host array of per-row values cut into the partitions' pieces."""
        off = self.offsets
        return [array[off[k]:off[k + 1]] for k in range(len(self.rows))]

    def take(self, rows):
        """Training rows ``rows`` (sorted global indices) fetched from their partitions (a small subset only)."""
        rows = np.asarray(rows, dtype=np.int64)
        off = self.offsets
        futures = []
        for k in range(len(self.rows)):
            local = rows[(rows >= off[k]) & (rows < off[k + 1])] - off[k]
            if local.size:
                futures.append(self.client.submit(_take_rows, self.train[k], local, pure=False))
        pieces = self.gather(futures)
        if pieces and hasattr(pieces[0], "tocsr"):
            import scipy.sparse as sp

            return sp.vstack(pieces, format="csr")
        return np.concatenate(pieces, axis=0) if pieces else np.empty((0, self.d))

    def take_labels(self, rows):
        """The training labels of rows ``rows`` (sorted global indices), as the partitions hold them (encoded for the
        loss after assembly), fetched from their partitions; None where the partitions hold no labels."""
        rows = np.asarray(rows, dtype=np.int64)
        off = self.offsets
        futures = []
        for k in range(len(self.rows)):
            local = rows[(rows >= off[k]) & (rows < off[k + 1])] - off[k]
            if local.size:
                futures.append(self.client.submit(_take_labels, self.train[k], local, pure=False))
        pieces = self.gather(futures)
        if any(p is None for p in pieces):
            return None
        return np.concatenate(pieces) if pieces else np.empty(0)

    def labels(self):
        """Every training label, in row order, gathered (one value a row: what ``solver: auto``'s search reads on
        the client); None where the partitions hold no labels."""
        pieces = self.gather([self.submit(k, _labels, p) for k, p in enumerate(self.train)])
        if any(p is None for p in pieces):
            return None
        return np.concatenate(pieces)

    def replace_train(self, futures):
        """These partitions with new training futures (the same rows)."""
        return replace(self, train=list(futures), _homes=None)


def nbytes(X) -> int:
    """The bytes of a partition's rows, dense or SciPy CSR (what the scheduler weighs moving it by)."""
    if hasattr(X, "tocsr"):
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(X.nbytes)


def _take_rows(part, local):
    X = part["X"]
    return X.tocsr()[local] if hasattr(X, "tocsr") else np.asarray(X[local])


def _take_labels(part, local):
    return None if part["y"] is None else np.asarray(part["y"])[local]


def _labels(part):
    return None if part["y"] is None else np.asarray(part["y"])


def _shape(part):
    return int(part["X"].shape[0]), int(part["X"].shape[1])


def _field(pair, i):
    return pair[i]


def from_spec(client, data_spec: dict, n_parts: int) -> Partitions:
    """Partitions of a spec's ``data`` section, read by the workers (see the module docstring)."""
    workers = sorted(client.nthreads())
    both = [client.submit(_read_partition, data_spec, k, n_parts, pure=False, allow_other_workers=True,
                          workers=[workers[k % len(workers)]] if workers else None) for k in range(n_parts)]
    train = [client.submit(_field, f, 0, pure=False) for f in both]
    test = [client.submit(_field, f, 1, pure=False) for f in both]
    shapes = client.gather([client.submit(_shape, f, pure=False) for f in train])
    test_shapes = client.gather([client.submit(_shape_or_none, f, pure=False) for f in test])
    del both
    if any(s is None for s in test_shapes):
        test, test_rows = [], []
    else:
        test_rows = [s[0] for s in test_shapes]
    return Partitions(client, train, [s[0] for s in shapes], shapes[0][1], test, test_rows)


def _shape_or_none(part):
    return None if part is None else _shape(part)


def _read_partition(data_spec, k, n_parts):
    """Runs on a worker: rows ``k`` of ``n_parts`` of the training and of the test split."""
    from ..data import load_data

    ds = load_data(data_spec)
    train = _slice(ds.X, ds.y, k, n_parts)
    test = None if ds.X_test is None else _slice(ds.X_test, ds.y_test, k, n_parts)
    return train, test


def _slice(X, y, k, n_parts):
    n = X.shape[0]
    lo, hi = k * n // n_parts, (k + 1) * n // n_parts
    rows = X.tocsr()[lo:hi].copy() if hasattr(X, "tocsr") else np.array(X[lo:hi])  # CSR rows stay sparse
    return {"X": rows, "y": None if y is None else np.array(y[lo:hi])}


def from_arrays(client, data, n_parts) -> Partitions:
    """Partitions of ``(X, y[, X_test, y_test])`` given as ``dask.array``/``dask.dataframe`` objects."""
    X, y, X_test, y_test = tuple(data) + (None,) * (4 - len(data)) if isinstance(data, (tuple, list)) else \
        (data.get("X"), data.get("y"), data.get("X_test"), data.get("y_test"))
    train, rows, d = _array_parts(client, X, y, n_parts, "X")
    test, test_rows = [], []
    if X_test is not None:
        test, test_rows, _ = _array_parts(client, X_test, y_test, n_parts, "X_test")
    return Partitions(client, train, rows, d, test, test_rows)


def _array_parts(client, X, y, n_parts, what):
    X = _as_dask_array(X, what)
    if X.ndim != 2:
        raise DataError(f"{what} must be 2-D (rows, features); got shape {X.shape}")
    if n_parts:
        n = X.shape[0]
        X = X.rechunk((tuple((k + 1) * n // n_parts - k * n // n_parts for k in range(n_parts)), -1))
    else:
        X = X.rechunk({1: -1})
    chunks = X.chunks[0]
    ys = [None] * len(chunks)
    if y is not None:
        y = _as_dask_array(y, what.replace("X", "y")).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise DataError(f"{what} has {X.shape[0]} rows and its labels {y.shape[0]}")
        ys = y.rechunk((chunks,)).to_delayed().ravel().tolist()
    xs = X.to_delayed().ravel().tolist()
    futures = client.compute([_pair(xd, yd) for xd, yd in zip(xs, ys)])
    return futures, [int(c) for c in chunks], int(X.shape[1])


def _pair(xd, yd):
    import dask

    return dask.delayed(_as_partition)(xd, yd)


def _as_partition(X, y):
    return {"X": np.asarray(X), "y": None if y is None else np.asarray(y)}


def _as_dask_array(obj, what):
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(obj, (dd.DataFrame, dd.Series)):
        obj = obj.to_dask_array(lengths=True)
    if not isinstance(obj, da.Array):
        raise DataError(f"on a Dask cluster {what} is a dask.array or dask.dataframe (or give the data in the "
                        f"spec's data section); got {type(obj).__name__}")
    return obj


def is_dask_collection(data) -> bool:
    """Whether ``data`` (what ``kopt.solve`` got as ``data``) holds dask collections."""
    items = data.values() if isinstance(data, dict) else data if isinstance(data, (tuple, list)) else [data]
    return any(type(v).__module__.split(".")[0] == "dask" for v in items if v is not None)


__all__ = ["Partitions", "PartitionProblem", "PartitionsShape", "Held", "from_arrays", "from_spec", "local_problem",
           "is_dask_collection", "nbytes", "worker_template"]
