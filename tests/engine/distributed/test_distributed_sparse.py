"""Sparse (LIBSVM CSR) rows on a Dask LocalCluster: the partitions stay CSR, the statistics, Joker's
certified answer and DSG's model are the single-machine ones (a9a's first 3,000 training rows, 123
binary columns)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")

import kopt  # noqa: E402

TOL = 1.0e-5


pytestmark = pytest.mark.slow  # every test here: out of the fast loop, pytest -m "not slow"


def a9a_spec(standardize):
    return {"name": "a9a_features", "seed": 0,
            "data": {"source": "a9a", "max_rows": 3000, "standardize": standardize},
            "model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": 1.0e-2}, "form": "dual",
                      "features": {"count": 128, "block_size": 128}},
            "solver": {"name": "joker", "mode": "features", "batch_size": 256, "tol": TOL, "iterations": 3000},
            "backend": "numpy"}


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        yield c


def test_sparse_partitions_scale_like_one_machine(client, seeded_data):
    from kopt.distributed import assemble as distributed
    from kopt.numerics.backend import resolve
    from kopt.running.assemble import assemble

    spec = kopt.load_spec(a9a_spec(True))
    one = assemble(spec, None, resolve("numpy"))
    many = distributed.assemble(spec, None, resolve("numpy"), client, 3)
    assert hasattr(one.X, "tocsr")
    parts = many.partitions
    assert client.gather(client.submit(lambda p: hasattr(p["X"], "tocsr"), parts.train[1])) is True
    np.testing.assert_array_equal(many.preprocessor.mean, np.zeros(one.d))  # scaled, not centered
    np.testing.assert_array_equal(one.preprocessor.mean, np.zeros(one.d))
    np.testing.assert_allclose(many.preprocessor.scale, one.preprocessor.scale, rtol=1e-10)
    assert not np.allclose(one.preprocessor.scale, 1.0)  # the check would see a wrong scale
    assert many.kernel.options.bandwidth == pytest.approx(one.kernel.options.bandwidth, rel=1e-12)


def test_sparse_a9a_same_certified_answer(client, seeded_data):
    spec = a9a_spec("auto")  # auto leaves sparse rows alone
    one = kopt.solve(spec)
    many = kopt.solve(spec, overrides=["solver.iterations=300"], scheduler=client)
    for r in (one, many):
        assert r.success and r.info["rel_gap"] <= TOL
    assert many.info["partitions"] == 2
    assert abs(many.objective - one.objective) <= TOL * abs(one.objective)
    for key in ("accuracy", "auc"):
        assert abs(many.metrics[key] - one.metrics[key]) <= 1e-3, (key, many.metrics, one.metrics)


def test_sparse_a9a_dsg_same_model(client, seeded_data):
    """The packaged dsg_a9a spec (sparse binary rows, raw 0/1 features) on 3,000 rows: the data-parallel
    steps read CSR partitions and give the single-machine model to float tolerance."""
    cut = ["data.max_rows=3000", "solver.iterations=40", "output.dir=runs/sparse_dsg"]
    one = kopt.solve("dsg_a9a", overrides=cut)
    many = kopt.solve("dsg_a9a", overrides=cut, scheduler=client)
    a, b = one.model.predictor.arrays, many.model.predictor.arrays
    np.testing.assert_array_equal(b["blocks"], a["blocks"])
    scale = np.abs(a["coef"]).max()
    np.testing.assert_allclose(b["coef"], a["coef"], rtol=1e-4, atol=1e-4 * scale)
    assert abs(many.metrics["accuracy"] - one.metrics["accuracy"]) <= 1e-3
