"""The gp solver: λ correspondence, closed form, track = regenerate, model outputs, CLI, specs, resume."""
from __future__ import annotations

import numpy as np
import pytest

import kopt
from kopt.errors import DataError, KoptError, SpecError
from kopt.testing import StopAt as _StopAt
from kopt_plugins.gp.exact import exact_posterior, gp_lambda


def _data(n=96, m=24, seed=0, scale=1.0, shift=0.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n + m, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n + m)
    y = scale * y + shift
    return X[:n], y[:n], X[n:], y[n:]


def _spec(tmp_path, *, variance="test_points", T=12, B=8, F=32, out="run", **solver):
    return {
        "data": {"standardize_target": True},
        "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.5}, "form": "gp",
                  "features": {"block_size": F}},
        "solver": {"name": "gp", "iterations": T, "batch_size": B, "noise_variance": 0.2, "variance": variance,
                   "step_size": 0.5, **solver},
        "backend": "numpy",
        "output": {"dir": str(tmp_path / out)},
    }


# -- the λ of the posterior mean ------------------------------------------------------------


def test_posterior_mean_is_krr_with_lambda_sigma2_over_n(tmp_path):
    """kopt's λ/2‖f‖² + (1/n)Σ(y−f)²/2 has minimiser k(·)ᵀ(K + nλI)⁻¹y: the GP mean iff λ = σ²/n."""
    X, y, Xs, _ = _data()
    s2, n = 0.3, X.shape[0]
    kernel = kopt.contract.registry.registry().get("kernel", "gaussian")(bandwidth=1.5)

    def krr(lam):
        spec = {"data": {"standardize": False}, "model": {"loss": {"name": "square"},
                "kernel": {"name": "gaussian", "bandwidth": 1.5}, "regularizer": {"name": "l2", "lambda": lam},
                "form": "dual", "features": {"dtype": "float64"}},
                "solver": {"name": "krr_exact"}, "backend": "numpy", "output": {"dir": str(tmp_path / "krr")}}
        return kopt.solve(spec, data=(X, y)).model.predict(Xs)

    mean, _ = exact_posterior(kernel, X, y, Xs, s2, variance=False)
    assert gp_lambda(s2, n) == pytest.approx(s2 / n)
    np.testing.assert_allclose(krr(gp_lambda(s2, n)), mean, rtol=1e-8, atol=1e-10)
    # Dai et al.'s "ν = 2σ²" read as kopt's λ is a different (much smoother) fit
    assert np.linalg.norm(krr(2 * s2) - mean) > 0.1 * np.linalg.norm(mean)


def test_exact_posterior_is_the_textbook_formula():
    X, y, Xs, _ = _data(n=30, m=7)
    kernel = kopt.contract.registry.registry().get("kernel", "gaussian")(bandwidth=0.9)
    K, Ks = kernel.exact(X, X), kernel.exact(Xs, X)
    inv = np.linalg.inv(K + 0.1 * np.eye(30))
    mean, var = exact_posterior(kernel, X, y, Xs, 0.1)
    np.testing.assert_allclose(mean, Ks @ inv @ y, rtol=1e-8)
    np.testing.assert_allclose(var, 1.0 - np.einsum("ij,jk,ik->i", Ks, inv, Ks), rtol=1e-7, atol=1e-10)
    assert (var > 0).all() and (var < 1).all()


# -- the two evaluation strategies give the same iterates -------------------------------------


@pytest.mark.parametrize("averaging", ["tail", "none"])
def test_track_equals_regenerate(tmp_path, averaging):
    data = _data(n=48, m=10)
    res = {}
    for mode in ("track", "regenerate"):
        spec = _spec(tmp_path, T=10, evaluation=mode, averaging=averaging, out=mode)
        res[mode] = kopt.solve(spec, data=data).model.predictor.arrays
    np.testing.assert_allclose(res["track"]["coef"], res["regenerate"]["coef"], rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(res["track"]["point_variance"], res["regenerate"]["point_variance"], rtol=1e-4)


# -- the model: mean, variance, interval in target units; the CLI writes them ----------------


def test_predict_extra_in_target_units(tmp_path):
    X, y, Xs, ys = _data(scale=1000.0, shift=5e4)
    res = kopt.solve(_spec(tmp_path, variance="operator", T=8, interval_level=0.9), data=(X, y, Xs, ys))
    model = res.model
    pre = model.preprocessor
    assert pre.y_scale > 100  # the target was standardized
    extra = model.predict_extra(Xs)
    mean = model.predict(Xs)
    latent = model.predictor.latent_variance(model._prepare(Xs), model._context())
    np.testing.assert_allclose(extra["variance"], np.maximum(latent, 0) * pre.y_scale**2, rtol=1e-10)
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.95)
    half = z * np.sqrt(np.maximum(latent, 0) + 0.2) * pre.y_scale  # observation interval: + σ²
    np.testing.assert_allclose(extra["lower"], mean - half, rtol=1e-9)
    np.testing.assert_allclose(extra["upper"], mean + half, rtol=1e-9)
    assert res.info["test_coverage"] == pytest.approx(np.mean(np.abs(ys - mean) <= half))
    # an operator model predicts anywhere
    far = model.predict_extra(X[:5] + 0.01)
    assert np.isfinite(far["variance"]).all()


def test_test_points_model_refuses_other_points(tmp_path):
    X, y, Xs, ys = _data()
    model = kopt.solve(_spec(tmp_path), data=(X, y, Xs, ys)).model
    extra = model.predict_extra(Xs[::-1])  # the same points, any order
    np.testing.assert_allclose(extra["variance"][::-1], model.predict_extra(Xs)["variance"])
    rounded = np.array([[float(f"{v:.8g}") for v in row] for row in Xs])  # e.g. read back from a CSV
    np.testing.assert_array_equal(model.predict_extra(rounded)["variance"], model.predict_extra(Xs)["variance"])
    with pytest.raises(DataError, match="variance: operator"):
        model.predict_extra(np.vstack([Xs[:3], X[:2]]))
    loose = kopt.solve(_spec(tmp_path, unknown_points="nan", out="nan"), data=(X, y, Xs, ys)).model
    out = loose.predict_extra(np.vstack([Xs[:3], X[:2]]))
    assert np.isfinite(out["variance"][:3]).all() and np.isnan(out["variance"][3:]).all()
    assert np.isnan(out["lower"][3:]).all()
    assert np.isfinite(loose.predict(X[:2])).all()  # the mean is still available


def test_cli_predict_writes_variance_and_interval(tmp_path):
    from kopt.cli import main

    X, y, Xs, ys = _data()
    res = kopt.solve(_spec(tmp_path, variance="operator", T=6), data=(X, y, Xs, ys), write=True)
    csv = tmp_path / "test.csv"
    np.savetxt(csv, np.column_stack([ys, Xs]), delimiter=",")  # label first (the default)
    out = tmp_path / "pred.csv"
    assert main(["predict", res.report["model_file"], str(csv), "--out", str(out)]) == 0
    header = out.read_text().splitlines()[0].split(",")
    assert header == ["prediction", "decision", "variance", "lower", "upper"]
    table = np.loadtxt(out, delimiter=",", skiprows=1)
    assert (table[:, 3] < table[:, 0]).all() and (table[:, 0] < table[:, 4]).all()
    np.testing.assert_allclose(table[:, 2], res.model.predict_extra(Xs)["variance"], rtol=1e-8)


# -- spec checks -----------------------------------------------------------------------------


def test_spec_errors(tmp_path):
    spec = _spec(tmp_path)
    spec["model"]["loss"]["name"] = "absolute"
    with pytest.raises(SpecError, match="loss.name"):
        kopt.load_spec(spec)
    spec = _spec(tmp_path, variance="operator", T=5000, B=64)
    with pytest.raises(SpecError, match=r"max_memory_mb.*at most \d+ fit|at most \d+ fit.*max_memory_mb"):
        kopt.load_spec(spec)
    (tmp_path / "x.csv").write_text("1,2\n3,4\n")
    spec = _spec(tmp_path)
    spec["data"] = {"train": str(tmp_path / "x.csv")}
    with pytest.raises(SpecError, match="test split"):
        kopt.load_spec(spec)
    spec = _spec(tmp_path)
    spec["model"]["form"] = "primal"
    with pytest.raises(SpecError, match="form"):
        kopt.load_spec(spec)


def test_run_time_errors(tmp_path):
    X, y, Xs, ys = _data()
    with pytest.raises(DataError, match="test split"):
        kopt.solve(_spec(tmp_path), data=(X, y))
    with pytest.raises(KoptError, match="max_memory_mb"):
        kopt.solve(_spec(tmp_path, max_memory_mb=0.01), data=(X, y, Xs, ys))
    with pytest.raises(DataError, match="exact_max_rows"):
        kopt.solve(_spec(tmp_path, compare_exact=True, exact_max_rows=10), data=(X, y, Xs, ys))


def test_divergence_is_reported_not_raised(tmp_path):
    """A step size past the mini-batch's stability: the run stops at the first non-finite residual and says so."""
    X, y, Xs, ys = _data()
    with np.errstate(all="ignore"), pytest.warns(kopt.errors.ConvergenceWarning):
        res = kopt.solve(_spec(tmp_path, T=40, step_size=1e30), data=(X, y, Xs, ys))
    assert not res.success and res.status == "diverged"
    assert res.message.startswith(f"diverged at iteration {res.n_iter}: non-finite residuals") and res.n_iter < 40
    assert "solver.step_size" in res.message


# -- checkpoint / resume ---------------------------------------------------------------------


@pytest.mark.parametrize("variance", ["operator", "test_points"])
def test_resume_is_bit_identical(tmp_path, variance):
    data = _data(n=40, m=6)
    full = kopt.solve(_spec(tmp_path, variance=variance, T=9, out="full"), data=data)
    spec = _spec(tmp_path, variance=variance, T=9, out="cut")
    spec["output"]["checkpoint_every"] = 4
    reg = kopt.contract.registry.registry()
    reg.pm.register(_StopAt(6), name="gp_stopper")
    try:
        with pytest.raises(KeyboardInterrupt):
            kopt.solve(spec, data=data)
    finally:
        reg.pm.unregister(name="gp_stopper")
    resumed = kopt.solve(spec, data=data, resume=True)
    a, b = full.model.predictor.arrays, resumed.model.predictor.arrays
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    assert resumed.n_iter == 9


def test_shipped_specs_validate():
    from pathlib import Path

    specs = sorted((Path(__file__).resolve().parents[3] / "specs").glob("gp_*.yaml"))
    assert len(specs) >= 3
    for path in specs:
        s = kopt.load_spec(str(path))
        assert s["solver"]["name"] == "gp" and s["model"]["form"] == "gp"


@pytest.mark.gpu
@pytest.mark.parametrize("variance", ["operator", "test_points"])
def test_backends_agree(xp, tmp_path, variance):
    """The same run on NumPy and on CuPy (the xp fixture) gives the same model."""
    data = _data(n=48, m=8)
    ref = kopt.solve(_spec(tmp_path, variance=variance, T=6, out="np"), data=data).model
    spec = _spec(tmp_path, variance=variance, T=6, out="xp")
    spec["backend"] = "numpy" if xp is np else "cupy"
    got = kopt.solve(spec, data=data).model
    for k, v in ref.predictor.arrays.items():
        np.testing.assert_allclose(np.asarray(got.predictor.arrays[k]), v, rtol=2e-3, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(got.predict_extra(data[2])["variance"], ref.predict_extra(data[2])["variance"],
                               rtol=2e-3, atol=1e-6)
