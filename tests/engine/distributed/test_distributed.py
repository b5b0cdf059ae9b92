"""kopt on a Dask LocalCluster (two worker processes): the distributed run certifies the single-machine answer.

One cluster for the module.  The problems are cut to keep the module at about 40 seconds: higgs-12k's
first 3,000 training rows (all 5,000 test rows, 256 random features) and ijcnn1's first 3,000 training
rows (all 91,701 test rows, 128 features), λ = 1e-2, both runs certified to a relative duality gap of 1e-5
(at 1e-4 two certified answers may still differ by more than 0.1 points of test accuracy).
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("distributed")

from helpers import KillWorker  # noqa: E402

import kopt  # noqa: E402
from kopt.errors import SpecError  # noqa: E402

TOL = 1.0e-5
HIGGS = ["data.max_rows=3000", "model.features.count=256", "model.regularizer.lambda=1.0e-2",
         "solver.tol=1.0e-5", "solver.iterations=3000"]


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        yield c


def _dist(spec, overrides, client, **kw):
    return kopt.solve(spec, overrides=[*overrides, "solver.iterations=300"], scheduler=client, **kw)


@pytest.mark.slow
def test_import_kopt_does_not_import_dask():
    code = ("import sys, kopt, kopt.cli; kopt.load_spec('quickstart'); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("overrides, path, words", [
    (["solver.name=adsg", "model.form=primal", "solver.mode=null"], "$.execution.engine",
     "solvers that run this spec there: auto, cdsg, dsg, udsg"),
    (["solver.mode=exact"], "$.solver.mode", "features mode"),
    (["execution.scheduler=somewhere"], "$.execution.scheduler", "tcp://HOST:8786"),
])
def test_validate_refuses_what_cannot_run_distributed(overrides, path, words):
    doc = kopt.load_spec("quickstart").data
    doc["execution"] = {"engine": "dask", "scheduler": "local:2"}
    if "solver.mode=null" in overrides:
        overrides = [o for o in overrides if o != "solver.mode=null"]
        doc["solver"] = {"name": "adsg"}
    with pytest.raises(SpecError) as err:
        kopt.load_spec(doc, overrides)
    assert err.value.path == path and words in str(err.value)


@pytest.mark.slow
def test_preprocessing_and_bandwidth_match_one_machine(client):
    from kopt.distributed import assemble as distributed
    from kopt.numerics.backend import resolve
    from kopt.running.assemble import assemble

    spec = kopt.load_spec("quickstart", ["model.kernel.bandwidth_subsample=500"])
    one = assemble(spec, None, resolve("numpy"))
    many = distributed.assemble(spec, None, resolve("numpy"), client, 3)
    assert many.n == one.n and many.d == one.d and many.partitions.rows == [2500, 2500, 2500]
    np.testing.assert_allclose(many.preprocessor.mean, one.preprocessor.mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(many.preprocessor.scale, one.preprocessor.scale, rtol=1e-12)
    np.testing.assert_array_equal(many.preprocessor.classes, one.preprocessor.classes)
    assert many.kernel.options.bandwidth == pytest.approx(one.kernel.options.bandwidth, rel=1e-12)


def _same_answer(one, many):
    """Both certified to TOL; objectives within TOL of each other; test metrics within 0.1 points."""
    for r in (one, many):
        assert r.success and r.info["rel_gap"] <= TOL
    assert abs(many.objective - one.objective) <= TOL * abs(one.objective)
    for key in ("accuracy", "auc"):
        assert abs(many.metrics[key] - one.metrics[key]) <= 1e-3, (key, many.metrics, one.metrics)


@pytest.mark.slow
def test_joker_higgs_same_certified_answer_and_identical_prediction(client):
    one = kopt.solve("quickstart", overrides=HIGGS)
    many = _dist("quickstart", HIGGS, client)
    _same_answer(one, many)
    assert many.report["execution"] == {"engine": "dask", "workers": 2, "partitions": 2}
    assert many.info["partitions"] == 2 and many.n_iter < 300
    # the final metrics scored on the test partitions equal the model's scores of the whole test set here
    from kopt.data import load_data
    from kopt.numerics.metrics import evaluate

    ds = load_data(kopt.load_spec("quickstart", HIGGS)["data"])
    here = evaluate("binary", ds.y_test, many.model.decision_function(ds.X_test), many.model.preprocessor)
    assert here == many.metrics


@pytest.mark.slow
def test_joker_ijcnn1_same_certified_answer(client, seeded_data):
    spec = {"name": "ijcnn1_features", "seed": 0, "data": {"source": "ijcnn1", "max_rows": 3000},
            "model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian", "bandwidth_factor": 0.5},
                      "regularizer": {"name": "l2", "lambda": 1.0e-2}, "form": "dual",
                      "features": {"count": 128, "block_size": 128}},
            "solver": {"name": "joker", "mode": "features", "batch_size": 256, "tol": TOL, "iterations": 3000},
            "backend": "numpy"}
    one = kopt.solve(spec)
    many = _dist(spec, [], client)
    _same_answer(one, many)


@pytest.mark.slow
def test_worker_killed_mid_solve_recomputes_the_round(client):
    overrides = [*HIGGS, "solver.tol=1.0e-4"]
    full = _dist("quickstart", overrides, client)
    before = set(client.nthreads())
    hit = _dist("quickstart", overrides, client, progress=[KillWorker(client, 1)])
    assert set(client.nthreads()) != before  # a worker process was replaced
    assert hit.n_iter == full.n_iter > 1
    np.testing.assert_array_equal(hit.model.predictor.arrays["coef"], full.model.predictor.arrays["coef"])
    assert hit.objective == full.objective


@pytest.mark.slow
def test_predict_on_partitioned_files_writes_one_output_each(client, tmp_path):
    from kopt.cli import main
    from kopt.data import load_data

    small = ["data.max_rows=500", "model.features.count=64", "model.features.block_size=64", "solver.iterations=20"]
    kopt.solve("quickstart", overrides=[*small, f"output.dir={tmp_path / 'run'}"], write=True)
    ds = load_data(kopt.load_spec("quickstart", small)["data"])
    rows = np.column_stack([ds.y_test, ds.X_test])
    for k, part in enumerate(np.array_split(rows[:900], 3)):
        np.savetxt(tmp_path / f"part-{k}.csv", part, delimiter=",", fmt="%.9g")
    model = str(tmp_path / "run" / "model.json")
    assert main(["predict", model, str(tmp_path / "part-*.csv"), "--scheduler", client.scheduler.address,
                 "--out", str(tmp_path / "pred")]) == 0
    for k in range(3):
        assert main(["predict", model, str(tmp_path / f"part-{k}.csv"), "--out", str(tmp_path / f"one-{k}.csv")]) == 0
        assert (tmp_path / "pred" / f"part-{k}.csv").read_text() == (tmp_path / f"one-{k}.csv").read_text()
