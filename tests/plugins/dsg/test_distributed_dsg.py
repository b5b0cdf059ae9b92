"""The DSG family on a Dask LocalCluster (two worker processes): the same model as on one machine.

Data-parallel mini-batches (kopt_plugins.dsg.distributed, docs/scale.md): iteration t draws the same
batch rows as on one machine, every partition sums its share, the client adds the pieces in partition
order and takes the single-machine step.  The model equals the single-machine one up to the order of
floating-point addition; the decisions (which block, UDSG's schedule, CDSG's checking rule) are the
same, so the block lists are equal.  higgs-12k's first 3,000 training rows (all 5,000 test rows).
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")

from helpers import KillWorker  # noqa: E402

import kopt  # noqa: E402
from kopt.errors import SpecError  # noqa: E402

RTOL = 1.0e-4  # float32 features; measured: 2e-7 of the largest coefficient


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        yield c


def _spec(solver, **options):
    return {"name": f"{solver}_higgs", "seed": 1, "data": {"source": "higgs-12k", "max_rows": 3000},
            "model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": 1.0e-4}, "features": {"block_size": 64}},
            "solver": {"name": solver, "iterations": 40, "batch_size": 128, "check_every": 10, "check_rows": 500,
                       **options},
            "backend": "numpy", "output": {"dir": "/nonexistent/kopt-dsg-dask"}}


def _on(client, spec, partitions=None):
    spec = {**spec, "execution": {"engine": "dask", "partitions": partitions}}
    return kopt.solve(spec, scheduler=client)


def _same_model(one, many):
    a, b = one.model.predictor.arrays, many.model.predictor.arrays
    np.testing.assert_array_equal(a["blocks"], b["blocks"])
    scale = np.abs(a["coef"]).max()
    np.testing.assert_allclose(b["coef"], a["coef"], rtol=RTOL, atol=RTOL * scale)
    for key in ("new_steps", "reuse_steps", "n_blocks"):
        assert many.info[key] == one.info[key], key
    checks = [(r["iteration"], r["objective"]) for r in one.trace if "train_loss" in r]
    assert len(checks) == 4
    assert [i for i, _ in checks] == [r["iteration"] for r in many.trace if "train_loss" in r]
    np.testing.assert_allclose([r["objective"] for r in many.trace if "train_loss" in r], [o for _, o in checks],
                               rtol=1e-6)
    assert many.objective == pytest.approx(one.objective, rel=1e-6)
    for key in ("accuracy", "auc"):
        assert many.metrics[key] == pytest.approx(one.metrics[key], abs=1e-4), key
    # the holdout metrics of the trace: scored on the workers (2,048 seeded test rows of the 5,000)
    held = [{k: v for k, v in r.items() if k.startswith("test_")} for r in one.trace if "train_loss" in r]
    assert all("test_auc" in h for h in held)
    for h, r in zip(held, [r for r in many.trace if "train_loss" in r]):
        for k, v in h.items():
            assert r[k] == pytest.approx(v, abs=1e-4), k


@pytest.mark.slow
@pytest.mark.parametrize("solver, options", [("dsg", {}), ("udsg", {"sampling": "shuffle"}),
                                             ("cdsg", {"candidates": 8}), ("cdsg", {"candidates": 0})])
def test_same_model_as_one_machine(client, solver, options):
    one = kopt.solve(_spec(solver, **options))
    many = _on(client, _spec(solver, **options))
    _same_model(one, many)
    assert many.report["execution"] == {"engine": "dask", "workers": 2, "partitions": 2}
    assert many.info["partitions"] == 2
    if solver != "dsg":
        assert many.info["reuse_steps"] > 0  # the re-use paths ran
    # one round trip a step, one a check and one a holdout evaluation; a step sends each worker O(F) floats
    # (the last step's block coefficients and a few scalars): not the expansion, not the 128 batch rows
    assert many.info["round_trips"] == 40 + 4 + 4
    assert many.info["bytes_per_step"] <= 2 * (64 * 8 + (8 + 1) * 8 + 100)


@pytest.mark.slow
def test_partition_count_does_not_change_the_model(client):
    """Five partitions on two workers, batches of 4 rows: most partitions hold none of a batch's rows."""
    spec = _spec("udsg", batch_size=4, iterations=30, check_every=15)
    one = kopt.solve(spec)
    many = _on(client, spec, partitions=5)
    assert many.info["partitions"] == 5
    a, b = one.model.predictor.arrays, many.model.predictor.arrays
    np.testing.assert_array_equal(a["blocks"], b["blocks"])
    np.testing.assert_allclose(b["coef"], a["coef"], rtol=RTOL, atol=RTOL * np.abs(a["coef"]).max())
    assert many.objective == pytest.approx(one.objective, rel=1e-6)


@pytest.mark.slow
def test_multiclass_averaging_and_dask_arrays(client):
    """Softmax (C = 3 outputs), the averaged iterate, and rows given as dask arrays (three partitions)."""
    import dask.array as da

    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 5))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1] * X[:, 2], [-0.5, 0.5])
    spec = _spec("cdsg", averaging=True, iterations=20, check_every=5, batch_size=64)
    spec["model"]["loss"] = {"name": "softmax"}
    del spec["data"]
    one = kopt.solve(spec, data=(X[:1200], y[:1200], X[1200:], y[1200:]))
    chunks = ((500, 300, 400),)
    many = kopt.solve({**spec, "execution": {"engine": "dask", "partitions": 3}}, scheduler=client,
                      data=(da.from_array(X[:1200], chunks=chunks + ((5,),)), da.from_array(y[:1200], chunks=chunks),
                            da.from_array(X[1200:], chunks=(150, 5)), da.from_array(y[1200:], chunks=150)))
    assert many.info["partitions"] == 3
    a, b = one.model.predictor.arrays, many.model.predictor.arrays
    assert a["coef"].shape[-1] == 3
    np.testing.assert_array_equal(a["blocks"], b["blocks"])
    np.testing.assert_allclose(b["coef"], a["coef"], rtol=RTOL, atol=RTOL * np.abs(a["coef"]).max())
    assert many.metrics["accuracy"] == pytest.approx(one.metrics["accuracy"], abs=1e-4)


@pytest.mark.slow
def test_novelty_offset_travels_with_the_batch(client):
    """A loss with an offset τ (novelty detection, no labels): τ is the client's, sent with every request."""
    import dask.array as da

    X = np.random.default_rng(1).standard_normal((1000, 4))
    spec = _spec("udsg", iterations=20, check_every=10, batch_size=64)
    spec["model"]["loss"] = {"name": "novelty"}
    del spec["data"]
    one = kopt.solve(spec, data=(X, None))
    many = kopt.solve({**spec, "execution": {"engine": "dask"}}, scheduler=client, data=(da.from_array(X, chunks=500), None))
    assert one.info["offset"] != 0.0
    assert many.info["offset"] == pytest.approx(one.info["offset"], rel=1e-9)
    np.testing.assert_allclose(many.model.predictor.arrays["coef"], one.model.predictor.arrays["coef"], rtol=RTOL,
                               atol=RTOL * np.abs(one.model.predictor.arrays["coef"]).max())


@pytest.mark.slow
def test_worker_killed_mid_solve_gives_the_identical_model(client):
    spec = _spec("udsg", iterations=20, check_every=5)
    full = _on(client, spec)
    before = set(client.nthreads())
    hit = kopt.solve({**spec, "execution": {"engine": "dask"}}, scheduler=client,
                     progress=[KillWorker(client, 7)])
    assert set(client.nthreads()) != before  # a worker process was replaced
    assert hit.info["copies_replaced"] >= 1 and full.info["copies_replaced"] == 0
    np.testing.assert_array_equal(hit.model.predictor.arrays["coef"], full.model.predictor.arrays["coef"])
    # the replaced copy's check tracker scores every block at once instead of block by block: rounding only
    assert hit.objective == pytest.approx(full.objective, rel=1e-9)
    client.wait_for_workers(2, timeout=60)  # the nanny's new worker, for the tests after this one


@pytest.mark.slow
def test_checkpoint_resume_on_the_cluster(client, tmp_path):
    from kopt.testing import check_resume

    spec = _spec("cdsg", iterations=20, check_every=5)
    spec["execution"] = {"engine": "dask", "scheduler": client.scheduler.address, "partitions": 2}
    spec["output"] = {"checkpoint_every": 4, "model": False, "report": False}
    full, resumed = check_resume(spec, stop_at=9, out_dir=tmp_path)
    assert resumed.info["partitions"] == 2 and resumed.objective == full.objective
    assert resumed.info["copies_replaced"] == 2  # the resumed run sent the restored expansion to both copies


def test_journal_replay_gives_the_same_bits():
    """A copy replaying the journal holds the client's bits: shrinks that fold the scale, growth past the
    capacity, block updates, averaging (no cluster needed)."""
    from kopt_plugins.dsg.expansion import BlockExpansion

    rng = np.random.default_rng(0)
    exp = BlockExpansion(np, 8, 3, capacity=4, averaging=True)
    exp.journal = []
    copy = BlockExpansion(np, 8, 3, capacity=64, averaging=True)
    for t in range(150):
        exp.shrink(0.8 if t % 3 else 1e-3)  # the scale leaves [1e-6, 1e6] every few steps: folded
        if t % 4 == 3:
            exp.update_block(int(rng.integers(exp.m)), rng.standard_normal((8, 3)), dnorm=0.5)
        else:
            exp.add_block(t + 1, rng.standard_normal((8, 3)), norm=float(t))
        exp.accumulate()
        if t % 7 == 0:
            copy.replay(exp.journal)
            exp.journal = []
    copy.replay(exp.journal)
    a, b = exp.state(), copy.state()
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(np.asarray(a[key]), np.asarray(b[key])), key


def test_validate_accepts_the_family_and_refuses_balance_weights():
    for name in ("dsg", "udsg", "cdsg"):
        spec = kopt.load_spec({**_spec(name), "execution": {"engine": "dask", "scheduler": "local:2"}})
        assert spec["execution"]["engine"] == "dask"
    doc = {**_spec("dsg"), "execution": {"engine": "dask", "scheduler": "local:2"}}
    doc["model"] = {**doc["model"], "loss": {"name": "kl_density_ratio"}}
    with pytest.raises(SpecError) as err:
        kopt.load_spec(doc)
    assert err.value.path == "$.model.loss.name" and "one machine" in str(err.value)
