"""kopt.distributed.rows: the training rows of a Dask cluster seen from the client, fetched where they are read.

FetchedRows is what solver: auto's search reads on a cluster: rows indexed by position come from their partitions
(and stay), columns kept and scaled as one machine's NumPy keeps and scales them, and the same columns made on the
workers for a stage on every row."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")

import kopt  # noqa: E402
from kopt.distributed.rows import FetchedRows, on_client  # noqa: E402


@pytest.fixture(scope="module")
def problem():
    import dask.array as da
    from distributed import Client, LocalCluster

    from kopt.distributed.assemble import assemble
    from kopt.numerics.backend import resolve
    from kopt.running.assemble import assemble as assemble_here

    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 4)).astype(np.float32)
    y = np.where(X[:, 0] > 0, 1, -1)
    spec = kopt.load_spec({"model": {"loss": {"name": "square", "target": "binary"},
                                     "kernel": {"name": "gaussian", "bandwidth": 1.0},
                                     "regularizer": {"name": "l2", "lambda": 1e-3},
                                     "features": {"kind": "nystrom", "count": 50}},
                           "solver": {"name": "krr_pcg"}, "execution": {"engine": "dask", "partitions": 3}})
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        on = assemble(spec, (da.from_array(X, chunks=400), da.from_array(y, chunks=400)), resolve("numpy"), client, 3)
        local = assemble_here(spec, (X, y))
        yield on, local


@pytest.mark.slow
def test_rows_are_fetched_where_read_and_kept(problem):
    on, local = problem
    X = FetchedRows(on.partitions, on.dtype)
    assert X.shape == (1000, 4) and X.rows_fetched == 0
    rows = np.array([999, 3, 400, 3, 0])
    np.testing.assert_allclose(X[rows], local.X[rows], rtol=1e-6, atol=1e-6)  # merged moments: float tolerance
    assert X.rows_fetched == 4 and X.fetches == 1
    X[np.array([0, 999])]
    assert X.fetches == 1  # held: no second request
    X[np.array([0, 1])]
    assert X.rows_fetched == 5 and X.fetches == 2
    with pytest.raises(kopt.KoptError, match="every training row"):
        np.asarray(X)


@pytest.mark.slow
def test_columns_kept_and_scaled_as_numpy_does_here_and_on_the_workers(problem):
    on, _ = problem
    X = FetchedRows(on.partitions, on.dtype)
    raw = X[np.arange(1000)]
    keep = np.array([True, False, True, True])
    scales = np.array([0.5, 2.0, 3.0], dtype=np.float32)
    view = X[:, keep] * scales
    assert view.shape == (1000, 3)
    rows = np.array([7, 512, 998])
    np.testing.assert_array_equal(view[rows], raw[:, keep][rows] * scales)  # the same float32 products
    parts = view.partitions()
    assert parts.d == 3 and parts is view.partitions()  # made once
    np.testing.assert_array_equal(parts.take(np.arange(1000)), raw[:, keep] * scales)


@pytest.mark.slow
def test_on_client_gathers_the_labels_and_fetches_every_row_only_when_asked(problem):
    on, local = problem
    lazy = on_client(on)
    assert isinstance(lazy.X, FetchedRows) and lazy.partitions is on.partitions
    np.testing.assert_array_equal(lazy.y, local.y)
    whole = on_client(on, every_row=True)
    assert whole.partitions is None and whole.n == 1000
    np.testing.assert_allclose(whole.X, local.X, rtol=1e-6, atol=1e-6)
