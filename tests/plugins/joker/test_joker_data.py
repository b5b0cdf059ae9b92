"""The joker solver on the real rows in ../shared/data: HIGGS (LightGBM's 7,000 rows) and cal_housing.

Exact mode against the closed-form KRR oracle (solver krr_exact), and the duality gap reaching
``tol`` for every loss with a conjugate.  Subsets keep the file fast; full runs are benchmarks.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kopt

pytestmark = pytest.mark.slow  # every test here: out of the fast loop, pytest -m "not slow"


def _higgs(shared_data, n, **data):
    return {"train": str(shared_data / "higgs_lightgbm_train.tsv.xz"), "label": 0, "max_rows": n, **data}


def _cal(shared_data, n):
    return {"train": str(shared_data / "cal_housing.data.xz"), "label": -1, "max_rows": n, "test_fraction": 0.2,
            "split_seed": 0, "standardize_target": True}


def _solve(data, loss, solver, *, lam, dtype="float32", kernel=None):
    spec = {"data": data,
            "model": {"loss": loss, "kernel": kernel or {"name": "gaussian", "bandwidth": "median"},
                      "regularizer": {"name": "l2", "lambda": lam}, "form": "dual", "features": {"dtype": dtype}},
            "solver": solver, "backend": "numpy", "output": {"model": False, "report": False}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kopt.solve(spec)


def test_exact_mode_matches_closed_form_krr_on_higgs_rows(shared_data):
    """2,000 HIGGS rows, float64: the dual's α and the test decision values within 1e-6 of the Cholesky solve."""
    data = _higgs(shared_data, 2000, test=str(shared_data / "higgs_lightgbm_test.tsv.xz"))
    loss = {"name": "square", "target": "binary"}
    ref = _solve(data, loss, {"name": "krr_exact"}, lam=1e-2, dtype="float64")
    r = _solve(data, loss, {"name": "joker", "mode": "exact", "batch_size": 512, "iterations": 1500, "tol": 1e-14},
               lam=1e-2, dtype="float64")
    a, b = ref.model.predictor.arrays["coef"], r.model.predictor.arrays["coef"]
    assert np.linalg.norm(b - a) / np.linalg.norm(a) <= 1e-6
    Xt = np.loadtxt(shared_data / "higgs_lightgbm_test.tsv.xz", delimiter="\t")[:, 1:]
    f_ref, f = ref.model.decision_function(Xt), r.model.decision_function(Xt)
    assert np.linalg.norm(f - f_ref) / np.linalg.norm(f_ref) <= 1e-6
    assert r.metrics["accuracy"] == pytest.approx(ref.metrics["accuracy"], abs=2e-3)
    assert r.objective == pytest.approx(ref.objective, rel=1e-10)


@pytest.mark.parametrize("loss", [
    {"name": "square", "target": "binary"}, {"name": "huber", "target": "binary", "delta": 1.0},
    {"name": "squared_hinge"}, {"name": "hinge"}, {"name": "logistic"}], ids=lambda l: l["name"])
def test_gap_reaches_tol_on_higgs_rows(shared_data, loss):
    r = _solve(_higgs(shared_data, 600), loss,
               {"name": "joker", "mode": "exact", "batch_size": 256, "iterations": 600, "tol": 1e-3}, lam=1e-3)
    assert r.success, r.message
    assert r.info["rel_gap"] <= 1e-3 and r.gap >= -1e-9 * abs(r.objective)


@pytest.mark.parametrize("loss", [
    {"name": "square"}, {"name": "huber", "delta": 0.5}, {"name": "absolute"}, {"name": "lp", "p": 1.5},
    {"name": "lp", "p": 3.0}, {"name": "epsilon_insensitive", "epsilon": 0.1}, {"name": "quantile", "tau": 0.5}],
    ids=lambda l: l["name"] + str(l.get("p", "")))
def test_gap_reaches_tol_on_cal_housing(shared_data, loss):
    lam = 1e-2 if loss["name"] == "epsilon_insensitive" else 1e-3  # SVR's dual converges slowest
    r = _solve(_cal(shared_data, 750), loss,
               {"name": "joker", "mode": "exact", "batch_size": 200, "iterations": 800, "tol": 1e-3}, lam=lam)
    assert r.success, r.message
    assert r.info["rel_gap"] <= 1e-3
    assert 0 < r.metrics["rmse"] < 2e5  # reported in dollars (the target is standardized inside)


def test_features_mode_on_higgs_rows_reaches_tol(shared_data):
    """Inexact Joker (random features, float32) on HIGGS rows: Huber with the Laplacian kernel (the main job's model)."""
    data = _higgs(shared_data, 1000, test=str(shared_data / "higgs_lightgbm_test.tsv.xz"))
    r = _solve(data, {"name": "huber", "target": "binary", "delta": 1.0},
               {"name": "joker", "mode": "features", "batch_size": 256, "iterations": 400, "tol": 1e-3},
               lam=1e-3, kernel={"name": "laplacian", "bandwidth": "median"})
    assert r.success, r.message
    assert r.info["mode"] == "features" and r.info["n_features"] == 4096
    assert r.metrics["accuracy"] > 0.6 and r.metrics["auc"] > 0.65
