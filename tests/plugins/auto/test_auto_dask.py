"""solver: auto on a Dask LocalCluster of two worker processes: the same choices as one machine, the same model to the
solve's tolerance (plugins/auto/cluster.py, docs/scale.md).

The search runs on the client -- every row fetched up to the sample size, else the rows it reads fetched where it
reads them -- and the centers grown on every row run on the cluster (kopt.distributed.cg.PartitionCG, the held-out
rows of weight 0 there); the solve on every row is krr_pcg's or newton_pcg's on the cluster.  The sample size is
shrunk (1,500 rows, 400 held out) so that both routes run at test size.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")

from helpers import curved_classes  # noqa: E402

import kopt  # noqa: E402
from kopt_plugins.auto import cluster  # noqa: E402


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as c, \
            Client(c) as cl:
        yield cl


@pytest.fixture
def small_sample(monkeypatch):
    """auto's large route at test size: the direct search on 1,500 rows, 400 validation rows, at most 256 grown
    centers; the column search's model on 1,000 rows and 64 centers."""
    from kopt_plugins.auto import columns, large

    monkeypatch.setattr(large, "SEARCH_ROWS", 1500)
    monkeypatch.setattr(large, "VALIDATION_ROWS", 400)
    monkeypatch.setattr(large, "MAX_GROWN_CENTERS", 256)
    monkeypatch.setattr(columns, "CENTERS", 64)
    monkeypatch.setattr(columns, "FIT_ROWS", 1000)
    monkeypatch.setattr(columns, "VALIDATION_ROWS", 400)
    return large


def _dask(*arrays):
    import dask.array as da

    return tuple(da.from_array(a, chunks=(len(a) + 1) // 2) for a in arrays)


def _split(X, y, n_test=1000):
    return X[:-n_test].astype(np.float32), y[:-n_test], X[-n_test:].astype(np.float32), y[-n_test:]


def _same_choices(one, many, route):
    a, b = one.auto, many.auto
    assert b["route"] == route
    for key in ("centers", "bandwidth", "bandwidth_factor", "lambda", "column_scales", "held_out", "metric", "split"):
        assert b.get(key) == a.get(key), key
    assert b["validation_score"] == pytest.approx(a["validation_score"], abs=1e-12)
    assert [(t["centers"], t.get("lam"), t.get("rows")) for t in b["trials"]] == \
        [(t["centers"], t.get("lam"), t.get("rows")) for t in a["trials"]]
    # the grown path's sums are added in another order on the cluster, so a λ's certificate may be confirmed a CG step
    # apart: the same λs solved and chosen, the work counted within a few steps
    steps = [(t.get("cg_steps") or 0, u.get("cg_steps") or 0) for t, u in zip(a["trials"], b["trials"])]
    assert all(abs(x - y) <= 2 for x, y in steps), steps
    assert b["budget"]["spent_flops"] == pytest.approx(a["budget"]["spent_flops"], rel=0.05)
    assert (b.get("loss") or {}).get("chosen") == (a.get("loss") or {}).get("chosen")
    assert b["cluster"]["partitions"] == 2 and many.report["execution"]["engine"] == "dask"


@pytest.mark.slow
def test_the_large_route_on_a_cluster_chooses_what_one_machine_chooses(client, small_sample):
    """Past the sample size: the column scales, the sample's ladder and the centers grown on every row (on the
    cluster: every CG step one round, the held-out rows' scores gathered) choose what one machine chooses; krr_pcg
    then solves on the cluster, warm from the grown path, the same model to its tolerance; the calibration is fitted
    on the same held-out rows' scores."""
    X, y, Xt, yt = _split(*curved_classes(5000, 4, 1, 2, noise=0.3))  # columns 2 and 3 are noise
    spec = {"name": "auto-dask", "seed": 4,
            "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 32, "work": 6e10},
            "output": {"model": False, "report": False}}
    one = kopt.solve(spec, data=(X, y, Xt, yt))
    many = kopt.solve(spec, data=_dask(X, y, Xt, yt), scheduler=client)
    assert one.auto["route"] == "krr_pcg" and any(t.get("rows") for t in one.auto["trials"])  # the centers grew
    assert one.auto["column_scales"] is not None
    _same_choices(one, many, "krr_pcg")
    assert many.auto["cluster"]["rows_fetched"] <= len(X) and many.auto["cluster"]["fetches"] >= 3
    tol = one.report["spec"]["solver"]["tol"]
    assert many.report["spec"]["solver"] == one.report["spec"]["solver"]
    assert one.success and many.success and many.info["rel_gap"] <= tol
    assert many.objective == pytest.approx(one.objective, rel=2 * tol)
    assert np.mean(np.sign(many.model.decision_function(Xt)) == np.sign(one.model.decision_function(Xt))) > 0.99
    assert many.metrics["accuracy"] == pytest.approx(one.metrics["accuracy"], abs=0.01)
    a, b = one.report["calibration"], many.report["calibration"]
    assert (b["source"], b["rows"]) == (a["source"], a["rows"])


@pytest.mark.slow
def test_the_direct_route_on_a_cluster_solves_krr_nystrom_s_system_by_krr_pcg(client):
    """Up to the sample size every row is fetched and searched on as on one machine (randomly pivoted Cholesky's
    centers measured too); krr_pcg solves krr_nystrom's system on the cluster, warm from its solution."""
    X, y, Xt, yt = _split(*curved_classes(3000, 3, 2, 2, noise=0.3))
    spec = {"name": "auto-dask-direct", "seed": 3,
            "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 128, "work": 2e10},
            "output": {"model": False, "report": False}}
    one = kopt.solve(spec, data=(X, y, Xt, yt))
    many = kopt.solve(spec, data=_dask(X, y, Xt, yt), scheduler=client)
    assert one.auto["route"] == "krr_nystrom"
    _same_choices(one, many, "krr_pcg")
    assert many.report["spec"]["solver"] == {**many.report["spec"]["solver"], "name": "krr_pcg",
                                             "tol": cluster.DIRECT_TOL}
    assert many.report["spec"]["model"]["features"].get("centers") == one.report["spec"]["model"]["features"].get(
        "centers")
    assert many.info["rel_gap"] <= cluster.DIRECT_TOL
    assert many.objective == pytest.approx(one.objective, rel=cluster.DIRECT_TOL)
    assert many.n_iter <= 3  # warm from the search's solution of the same system
    assert many.metrics["accuracy"] == pytest.approx(one.metrics["accuracy"], abs=0.005)
    assert many.report["calibration"]["rows"] == one.report["calibration"]["rows"]


@pytest.mark.slow
def test_a_named_smooth_loss_walks_its_own_lambda_on_the_client_and_solves_on_the_cluster(client, small_sample):
    X, y, Xt, yt = _split(*curved_classes(5000, 2, 3, 2, noise=0.5))
    spec = {"name": "auto-dask-logistic", "seed": 5, "model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 64, "work": 4e10},
            "output": {"model": False, "report": False}}
    one = kopt.solve(spec, data=(X, y, Xt, yt))
    many = kopt.solve(spec, data=_dask(X, y, Xt, yt), scheduler=client)
    _same_choices(one, many, "newton_pcg")
    tol = one.report["spec"]["solver"]["tol"]
    assert many.status == "converged" and many.info["rel_gap"] <= tol
    assert many.objective == pytest.approx(one.objective, rel=2 * tol)
    assert "calibration" not in many.report  # the logistic loss's probabilities are its own


def test_class_weights_are_refused_on_a_cluster_with_what_to_do():
    spec = {"data": {"source": "higgs-12k", "class_weight": "balanced"},
            "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "execution": {"engine": "dask", "scheduler": "local:2"}}
    with pytest.raises(kopt.SpecError, match=r"data\.class_weight.*Dask cluster: run without a scheduler"):
        kopt.load_spec(spec)


def test_a_loss_no_cluster_route_solves_is_refused_naming_what_runs_there():
    spec = {"data": {"source": "higgs-12k"}, "model": {"loss": {"name": "hinge"}, "kernel": {"name": "gaussian"}},
            "execution": {"engine": "dask", "scheduler": "local:2"}}
    with pytest.raises(kopt.SpecError) as caught:
        kopt.load_spec(spec)
    text = str(caught.value)
    assert caught.value.path == "$.model.loss.name" and "on a Dask cluster" in text and "joker" in text
    assert kopt.load_spec({**spec, "model": {**spec["model"], "loss": {"name": "logistic"}}})["solver"]["name"] == "auto"
