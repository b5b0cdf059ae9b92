"""newton_pcg on a Dask LocalCluster (two worker processes): the same model as on one machine to the solve's
tolerance, one round a CG step (plugins/newton_pcg/distributed.py).  higgs-12k's first 3,000 training rows."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")

import kopt  # noqa: E402
from kopt.distributed.partitions import Partitions  # noqa: E402
from kopt.nystrom import SmoothNewton  # noqa: E402

TOL = 1e-6


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        yield c


def _spec(loss="logistic", **options):
    return {"name": "newton_higgs", "seed": 1, "data": {"source": "higgs-12k", "max_rows": 3000},
            "model": {"loss": {"name": loss}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": 1.0e-4}, "features": {"kind": "nystrom", "count": 300}},
            "solver": {"name": "newton_pcg", "tol": TOL, **options},
            "backend": "numpy", "output": {"dir": "/nonexistent/kopt-newton-dask"}}


def _on(client, spec):
    return kopt.solve({**spec, "execution": {"engine": "dask"}}, scheduler=client)


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_the_same_model_as_one_machine_to_the_tolerance(client, loss):
    one = kopt.solve(_spec(loss))
    many = _on(client, _spec(loss))
    assert one.status == many.status == "converged"
    assert many.info["partitions"] == 2 and 0 <= many.info["rel_gap"] <= TOL
    a, b = one.model.predictor.arrays, many.model.predictor.arrays
    np.testing.assert_array_equal(a["support"], b["support"])  # the same centers, gathered from the partitions
    assert one.model.predictor.meta["intercept"] == pytest.approx(many.model.predictor.meta["intercept"], abs=1e-10)
    # both within TOL of the optimum: their objectives within 2 TOL, their scores close
    assert many.objective == pytest.approx(one.objective, rel=2 * TOL)
    from kopt.data import load_data

    X = load_data(kopt.load_spec(_spec())["data"]).X_test[:1000]
    np.testing.assert_allclose(many.model.decision_function(X), one.model.decision_function(X), atol=5e-3)
    assert many.metrics["accuracy"] == pytest.approx(one.metrics["accuracy"], abs=2e-3)


@pytest.mark.slow
def test_one_round_per_pass(client, monkeypatch):
    """Every pass (a Newton step's gradient, each CG step) is one round: one gather of one answer per partition; the
    line search is one round without kernel values."""
    gathers, per_step = [], []
    gather, step = Partitions.gather, SmoothNewton.step

    def counting_gather(self, futures):
        gathers.append(len(futures))
        return gather(self, futures)

    def counting_step(self, state):
        before = len(gathers)
        out = step(self, state)
        per_step.append((gathers[before:], out["cg_steps"]))
        return out

    monkeypatch.setattr(Partitions, "gather", counting_gather)
    monkeypatch.setattr(SmoothNewton, "step", counting_step)
    r = _on(client, _spec(iterations=3, tol=0))
    assert r.n_iter == len(per_step) == 3
    for rounds, cg_steps in per_step:
        assert set(rounds) == {2}  # each round: one answer from each of the two partitions
        # a round a CG step, the line search's (one where the full step holds, two where it backtracks), the gradient
        assert cg_steps + 2 <= len(rounds) <= cg_steps + 3
    assert r.info["passes"] == 1 + sum(c + 1 for _, c in per_step)


@pytest.mark.parametrize("weights", ["sample_weight", "class_weight"])
def test_weights_are_refused_on_a_cluster_with_what_to_do(client, weights):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3)).astype(np.float32)
    y = np.where(X[:, 0] > 0, 1, -1)
    spec = _spec()
    del spec["data"]
    kw = {}
    if weights == "class_weight":
        spec["data"] = {"class_weight": "balanced"}
    else:
        kw["sample_weight"] = np.ones(200)
    with pytest.raises(kopt.KoptError, match="Dask cluster.*(one machine|without a scheduler)"):
        kopt.solve({**spec, "execution": {"engine": "dask"}}, scheduler=client, data=(X, y), **kw)


@pytest.mark.slow
def test_three_partitions_every_class_one_vs_rest(client):
    """Class ids one-vs-rest (every class its own Newton on the same rounds) from dask arrays in three partitions."""
    import dask.array as da

    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 4)).astype(np.float32)
    f = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]
    y = np.digitize(f, np.quantile(f, [0.33, 0.66]))
    Xt, yt, X, y = X[1200:], y[1200:], X[:1200], y[:1200]
    spec = _spec()
    del spec["data"]
    spec["model"]["kernel"]["bandwidth"] = 1.5
    spec["model"]["features"]["count"] = 150
    one = kopt.solve(spec, data=(X, y, Xt, yt))
    many = kopt.solve({**spec, "execution": {"engine": "dask", "partitions": 3}}, scheduler=client,
                      data=(da.from_array(X, chunks=400), da.from_array(y, chunks=400),
                            da.from_array(Xt, chunks=100), da.from_array(yt, chunks=100)))
    assert one.status == many.status == "converged" and many.info["partitions"] == 3
    assert one.model.decision_function(Xt).shape == (300, 3)
    # the certificate holds each objective within tol of the optimum, not each score: large log-odds differ most
    np.testing.assert_allclose(many.model.decision_function(Xt), one.model.decision_function(Xt), rtol=2e-3,
                               atol=5e-3)
    assert many.objective == pytest.approx(one.objective, rel=2 * TOL)
    assert many.metrics["accuracy"] == pytest.approx(one.metrics["accuracy"], abs=0.01)


@pytest.mark.slow
def test_column_scales_apply_on_the_partitions_as_on_one_machine(client):
    """data.column_scales (solver: auto's per-column length scales) multiply the standardized columns on the workers
    too, and a column of scale 0 is left out there as on one machine: the same centers and model."""
    spec = _spec()
    spec["data"]["column_scales"] = [1.0, 0.5, 0.0] + [1.0] * 25
    one = kopt.solve(spec)
    many = _on(client, spec)
    a, b = one.model.predictor.arrays["support"], many.model.predictor.arrays["support"]
    assert a.shape == b.shape == (a.shape[0], 27)
    np.testing.assert_array_equal(a, b)
    assert many.objective == pytest.approx(one.objective, rel=2 * TOL)
