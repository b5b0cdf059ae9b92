"""Every primal loss the loss plugins register trains with DSG-family solvers: real, binary,
multiclass (C outputs), novelty detection (with its offset τ) and KL density-ratio estimation
(two samples).  Losses added later are picked up from the registry automatically."""
from __future__ import annotations

import numpy as np
import pytest

import kopt
from kopt.contract.registry import registry


def _spec(loss, solver="dsg", iterations=120, lam=1e-4, **options):
    return {
        "seed": 1,
        "model": {"loss": loss, "kernel": {"name": "gaussian", "bandwidth": "median"},
                  "features": {"block_size": 64, "cache_blocks": 512},
                  "regularizer": {"name": "l2", "lambda": lam}},
        "solver": {"name": solver, "iterations": iterations, "batch_size": 64, "step_size": 2.0,
                   "step_schedule": "constant", **options},
        "backend": "numpy",
        "output": {"dir": "/nonexistent/kopt-dsg-losses", "model": False, "report": False},
    }


def _losses(target):
    reg = registry()
    return [n for n in reg.names("loss") if reg.get("loss", n).target == target]


def test_every_registered_loss_has_a_target_the_family_handles():
    from kopt_plugins.dsg import DSG

    reg = registry()
    assert {reg.get("loss", n).target for n in reg.names("loss")} <= set(DSG.targets)


@pytest.mark.slow
@pytest.mark.parametrize("loss", _losses("real"))
def test_regression_losses(loss):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(500)
    out = kopt.solve(_spec({"name": loss}, solver="cdsg"), data=(X[:400], y[:400], X[400:], y[400:]))
    assert out.metrics["r2"] > 0.5, out.metrics


@pytest.mark.slow
@pytest.mark.parametrize("loss", _losses("binary"))
def test_binary_losses(loss):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)  # XOR: needs the kernel
    out = kopt.solve(_spec({"name": loss}, solver="udsg"), data=(X[:400], y[:400], X[400:], y[400:]))
    assert out.metrics["accuracy"] > 0.85, out.metrics


@pytest.mark.slow
@pytest.mark.parametrize("loss", _losses("multiclass"))
def test_multiclass_losses_have_C_outputs(loss):
    rng = np.random.default_rng(2)
    C, n = 3, 600
    y = rng.integers(0, C, n)
    X = rng.standard_normal((n, 2)) + 2.5 * np.stack([np.cos(2 * np.pi * y / C), np.sin(2 * np.pi * y / C)], 1)
    for solver in ("dsg", "cdsg"):
        out = kopt.solve(_spec({"name": loss}, solver=solver, iterations=60, check_every=20),
                         data=(X[:450], y[:450], X[450:], y[450:]))
        coef = out.model.predictor.arrays["coef"]
        assert coef.shape == (out.info["n_blocks"], 64, C)
        assert out.metrics["accuracy"] > 0.9, out.metrics
        assert [r["iteration"] for r in out.trace if "test_accuracy" in r] == [20, 40, 60]


@pytest.mark.slow
@pytest.mark.parametrize("loss", _losses("unlabeled"))
def test_novelty_detection_learns_its_offset(loss):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((800, 2))
    nu = 0.1
    out = kopt.solve(_spec({"name": loss, "nu": nu}, iterations=200, step_schedule="inverse", step_size=20.0,
                           step_offset=10), data=(X, None))
    tau = out.info["offset"]
    scores = out.model.decision_function(X)  # f(x) − τ
    assert out.model.predictor.meta["intercept"] == -tau != 0.0
    flagged = np.mean(scores < 0)
    assert 0.5 * nu < flagged < 2 * nu                       # ν bounds the fraction flagged
    far = out.model.decision_function(np.array([[4.0, 4.0], [-4.0, 3.0]]))
    near = out.model.decision_function(np.array([[0.0, 0.0], [0.3, -0.2]]))
    assert far.max() < 0 < near.min()                        # outliers far out, the center is normal


@pytest.mark.slow
@pytest.mark.parametrize("loss", _losses("two_sample"))
def test_kl_density_ratio_estimates_the_log_ratio(loss):
    # label 0 ~ N(0, 1), label 1 ~ N(0.6, 1): log p0/p1 = −0.6 x + 0.18; unequal sample sizes
    rng = np.random.default_rng(4)
    X0, X1 = rng.standard_normal((500, 1)), rng.standard_normal((1000, 1)) + 0.6
    X, z = np.vstack([X0, X1]), np.r_[np.zeros(500), np.ones(1000)]
    out = kopt.solve(_spec({"name": loss}, iterations=300, step_size=0.5, step_schedule="inverse_sqrt"),
                     data=(X, z))
    grid = np.linspace(-1.2, 1.5, 10)[:, None]
    est = out.model.decision_function(grid)
    truth = -0.6 * grid[:, 0] + 0.18
    assert np.corrcoef(est, truth)[0, 1] > 0.95
    assert np.mean(np.abs(est - truth)) < 0.25, (est, truth)


def _feature_kernels():
    reg = registry()
    return [n for n in reg.names("kernel") if reg.get("kernel", n).has_features]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", _feature_kernels())
def test_every_kernel_with_features(kernel):
    # nonnegative inputs (histogram kernels), no z-scoring: every sampler the kernel plugins register
    rng = np.random.default_rng(5)
    X = rng.uniform(0.05, 1.0, (300, 3))
    y = np.sin(3 * X[:, 0]) + X[:, 1]
    spec = _spec({"name": "square"}, iterations=25, step_size=0.5)
    spec["model"]["kernel"] = {"name": kernel}
    spec["data"] = {"standardize": False}
    out = kopt.solve(spec, data=(X, y))
    assert np.isfinite(out.objective)
    assert out.objective < 0.5 * np.mean(y**2)        # better than f = 0
    assert out.info["n_blocks"] == 25


def test_model_files_round_trip_with_offset_and_outputs(tmp_path):
    rng = np.random.default_rng(6)
    X = rng.standard_normal((300, 2))
    for loss, y in (({"name": "novelty", "nu": 0.2}, None), ({"name": "softmax"}, rng.integers(0, 3, 300))):
        if loss["name"] not in registry().names("loss"):
            continue
        spec = _spec(loss, solver="cdsg", iterations=20)
        spec["output"] = {"dir": str(tmp_path / loss["name"]), "model": True, "report": True}
        out = kopt.solve(spec, data=(X, y), write=True)
        back = kopt.load_model(tmp_path / loss["name"] / "model.json")
        np.testing.assert_allclose(back.decision_function(X), out.model.decision_function(X), rtol=1e-6, atol=1e-9)
