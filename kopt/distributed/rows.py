"""The training rows of a Dask cluster seen from the client: fetched where they are read, never all at once.

A planning solver (``solver: auto``) searches on a seeded sample of the rows and scores held-out rows on the client,
with the code it runs on one machine.  :func:`on_client` gives it a :class:`kopt.contract.problem.Problem` whose
``X`` is a :class:`FetchedRows`: an array of the whole training set's shape whose rows are fetched from their
partitions when they are indexed (``X[rows]``, :func:`kopt.numerics.rows.take`) and kept for the next read, so the
client holds only the rows the search reads.  Its labels (one value a row) are gathered whole: the search's split and
sample read them.

The view carries the column scales the search chooses as one machine applies them (``X[:, keep] * scales``: the
same float32 products on the same standardized rows), and :meth:`FetchedRows.partitions` makes the same columns on
the workers, for a stage that runs on every row there (:class:`kopt.distributed.cg.PartitionCG`).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import KoptError


class _Store:
    """The rows fetched so far (sorted global positions and their rows as the partitions hold them), shared by every
    view of the same partitions."""

    def __init__(self, parts):
        self.parts = parts
        self.have = np.empty(0, dtype=np.int64)
        self.rows = None
        self.fetches = 0

    def get(self, idx):
        """Rows ``idx`` (global positions, any order, repeats allowed), fetching the ones not held yet."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        want = np.unique(idx)
        missing = np.setdiff1d(want, self.have, assume_unique=True)
        if missing.size:
            got = self.parts.take(missing)
            self.fetches += 1
            if self.rows is None:
                self.have, self.rows = missing, got
            else:
                have = np.concatenate([self.have, missing])
                order = np.argsort(have, kind="stable")
                self.have = have[order]
                if hasattr(got, "tocsr"):
                    import scipy.sparse as sp

                    self.rows = sp.vstack([self.rows, got], format="csr")[order]
                else:
                    self.rows = np.concatenate([self.rows, got], axis=0)[order]
        at = np.searchsorted(self.have, idx)
        return self.rows[at]


class FetchedRows:
    """The training rows on a Dask cluster as a client-side array of shape (n, d): ``X[rows]`` fetches rows from their
    partitions (and keeps them), ``X[:, keep]`` and ``X * scales`` are views of the same rows with columns kept and
    scaled as one machine's NumPy would.

    Parameters
    ----------
    parts : kopt.distributed.partitions.Partitions
        The assembled training partitions (standardized rows).
    dtype : dtype
        The rows' dtype (the features' precision).
    keep : ndarray of bool, optional
        The columns kept (None: all).
    scales : ndarray, optional
        Each kept column's multiplier, in ``dtype`` (None: none).

    Attributes
    ----------
    shape : tuple of int
        ``(n, d)``: every training row, the kept columns.
    dtype : numpy.dtype
        The rows' dtype.
    ndim : int
        2.
    fetches : int
        Requests made to the partitions so far.
    rows_fetched : int
        The rows fetched so far.

    Examples
    --------
    On a cluster (``problem.partitions``): ``X = FetchedRows(problem.partitions, problem.dtype)``, then
    ``X[np.array([5, 0, 9])]`` is those three rows, ``(X[:, keep] * s)[rows]`` the same rows' kept columns, scaled.
    """

    ndim = 2

    def __init__(self, parts, dtype, keep=None, scales=None, _store=None):
        self.parts = parts
        self.dtype = np.dtype(dtype)
        self.keep = None if keep is None else np.asarray(keep, dtype=bool)
        self.scales = None if scales is None else np.asarray(scales)
        self._store = _store if _store is not None else _Store(parts)
        self._on_workers = None
        d = parts.d if self.keep is None else int(self.keep.sum())
        self.shape = (int(parts.n), int(d))

    @property
    def fetches(self) -> int:
        """Requests made to the partitions so far (shared by every view of the same rows)."""
        return self._store.fetches

    @property
    def rows_fetched(self) -> int:
        """The rows fetched so far, each counted once (shared by every view of the same rows)."""
        return int(len(self._store.have))

    def _transform(self, R):
        if self.keep is not None:
            R = R[:, self.keep]
        if self.scales is not None:
            R = R * self.scales if not hasattr(R, "tocsr") else R.multiply(self.scales[None, :]).tocsr()
        return R

    def __getitem__(self, key):
        if isinstance(key, tuple):
            rows, cols = key
            if isinstance(rows, slice) and rows == slice(None):
                if self.scales is not None:
                    raise KoptError("internal: columns chosen from scaled fetched rows")
                keep = np.zeros(self.shape[1], dtype=bool)
                keep[cols] = True
                if self.keep is not None:
                    full = np.zeros(self.parts.d, dtype=bool)
                    full[np.flatnonzero(self.keep)[keep]] = True
                    keep = full
                return FetchedRows(self.parts, self.dtype, keep, None, self._store)
            return self[rows][:, cols]
        if isinstance(key, slice):
            key = np.arange(self.shape[0])[key]
        key = np.asarray(key)
        if key.dtype == bool:
            key = np.flatnonzero(key)
        if key.ndim == 0:
            return self._transform(self._store.get(key.reshape(1)))[0]
        return self._transform(self._store.get(key))

    def __mul__(self, other):
        other = np.asarray(other)
        if other.ndim != 1 or other.shape[0] != self.shape[1]:
            raise KoptError("internal: fetched rows are scaled by one multiplier a column")
        scales = other if self.scales is None else self.scales * other
        return FetchedRows(self.parts, self.dtype, self.keep, scales, self._store)

    def __array__(self, dtype=None, copy=None):
        raise KoptError("internal: every training row of a Dask cluster asked for on the client; a stage that reads "
                        "every row runs on the workers (kopt.distributed.cg.PartitionCG)")

    def partitions(self):
        """These rows on the workers: the partitions with the view's columns kept and scaled there (made once).

        Returns
        -------
        kopt.distributed.partitions.Partitions
            The same partitions where the view has no column scales; else partitions of the scaled rows, each made on
            its worker.
        """
        if self.keep is None and self.scales is None:
            return self.parts
        if self._on_workers is None:
            futures = self.parts.map(_columns, self.keep, self.scales)
            self._on_workers = dataclasses.replace(self.parts.replace_train(futures), d=self.shape[1])
        return self._on_workers


class FetchedSparseRows(FetchedRows):
    """:class:`FetchedRows` of sparse (SciPy CSR) partitions: the rows fetched stay CSR, and kopt's row helpers
    (:func:`kopt.numerics.rows.is_sparse`) see a sparse matrix.

    Parameters
    ----------
    parts, dtype, keep, scales
        As :class:`FetchedRows`'.

    Attributes
    ----------
    nnz : None
        Unknown on the client (the rows stay on the workers).

    Examples
    --------
    >>> from kopt.distributed.rows import FetchedSparseRows
    >>> FetchedSparseRows.nnz is None
    True
    """

    nnz = None

    def tocsr(self):
        """Refused: every training row is never brought to the client."""
        raise KoptError("internal: every training row of a Dask cluster asked for on the client as one CSR matrix")


def _columns(part, keep, scales):
    """Runs on a worker: the partition's rows with the columns kept and scaled as :class:`FetchedRows` makes them."""
    X = part["X"]
    if keep is not None:
        X = X[:, keep]
    if scales is not None:
        X = X * scales if not hasattr(X, "tocsr") else X.multiply(scales[None, :]).tocsr()
    return {"X": X, "y": part["y"]}


def _is_sparse(parts):
    """Whether the partitions hold SciPy sparse rows (read from their first row)."""
    return hasattr(parts.take(np.zeros(1, dtype=np.int64)), "tocsr") if sum(parts.rows) else False


def on_client(problem, every_row=False):
    """The problem of a Dask run as the client's search reads it: its labels gathered (one value a row), and its rows
    a :class:`FetchedRows` (fetched where read), or with ``every_row`` every row fetched (a set small enough to search
    on whole, ``solver: auto``'s direct route).

    Parameters
    ----------
    problem : kopt.contract.problem.Problem
        A problem whose rows are on a Dask cluster (``problem.partitions``).
    every_row : bool, optional
        Fetch every training row now; the problem then holds them as one machine would and has no partitions.

    Returns
    -------
    kopt.contract.problem.Problem
        The same problem with ``X`` and ``y`` on the client.

    Raises
    ------
    KoptError
        The partitions hold no labels.
    """
    parts = problem.partitions
    y = parts.labels()
    if y is None:
        raise KoptError("the training partitions hold no labels")
    if every_row:
        X = parts.take(np.arange(parts.n))
        return dataclasses.replace(problem, X=X, y=y, partitions=None)
    cls = FetchedSparseRows if _is_sparse(parts) else FetchedRows
    return dataclasses.replace(problem, X=cls(parts, problem.dtype), y=y)


__all__ = ["FetchedRows", "FetchedSparseRows", "on_client"]
