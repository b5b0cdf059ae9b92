"""Issue 29: the features route's cheaper iteration -- K_BB by a symmetric rank-k update, feature blocks
generated in groups for small |B| -- gives the same matrices and models, bit-identically on 1 or 2
threads; and ``kopt bench joker``'s certificate and projection arithmetic."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import kopt
from kopt.api import assemble
from kopt.cli.bench import joker as bench
from kopt.numerics import threads as _threads
from kopt.numerics.linalg import cblas_syrk, syrk_lower
from kopt_plugins.joker.engines import FeatureEngine, gram_method

needs_syrk = pytest.mark.skipif(cblas_syrk(np.float32) is None, reason="NumPy's BLAS has no CBLAS ?syrk here")


def _spec(M=8192, F=256, B=50, gram="auto", iterations=6, dtype="float32", loss="huber", lam=1e-4):
    return {"data": {"standardize": False},
            "model": {"loss": {"name": loss, "target": "binary"} if loss != "square" else {"name": "square"},
                      "kernel": {"name": "laplacian", "bandwidth": 2.0},
                      "regularizer": {"name": "l2", "lambda": lam}, "form": "dual",
                      "features": {"count": M, "block_size": F, "dtype": dtype}},
            "solver": {"name": "joker", "mode": "features", "batch_size": B, "iterations": iterations, "tol": 0.0,
                       "gram": gram},
            "backend": "numpy", "output": {"model": False, "report": False}}


def _data(n=1200, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n) > 0, 1.0, 0.0)
    return X, y


def _solve(spec, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kopt.solve(spec, data=data)


@needs_syrk
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_syrk_lower_is_the_lower_triangle_of_z_zt_and_leaves_the_upper_alone(dtype):
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((70, 130)).astype(dtype)
    out = np.full((70, 70), 7.0, dtype=dtype)
    syrk_lower(Z, out)
    ref = Z.astype(np.float64) @ Z.T.astype(np.float64)
    lower = np.tril_indices(70)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out[lower], ref[lower], rtol=tol, atol=tol * np.abs(ref).max())
    assert np.all(out[np.triu_indices(70, 1)] == 7.0)  # the strict upper triangle is not written
    syrk_lower(Z, out, accumulate=True)
    np.testing.assert_allclose(out[lower], 2 * ref[lower], rtol=tol, atol=tol * np.abs(ref).max())
    with pytest.raises(ValueError):
        syrk_lower(Z, np.zeros((70, 70), dtype=np.float16 if dtype == np.float32 else np.float32))


def _engine(spec, data, gram, grouped):
    problem = assemble(kopt.load_spec(spec, check_files=False), data)
    e = FeatureEngine(problem, 1, 256, 2, "features", gram)
    if not grouped:
        e._groupable_flag = False
    return e


@pytest.mark.slow
@pytest.mark.parametrize("B", [40, 300])
def test_syrk_and_grouped_blocks_give_the_gram_and_update_of_the_dense_features(B):
    """K_BB = φ(X_B)φ(X_B)ᵀ/M, (Kα)_B and θ̃ += φ(X_B)ᵀδ against the dense feature matrix, for every way
    of forming them (a mismatched θ̃ layout in the grouped path would be off by O(1))."""
    X, y = _data()
    spec = _spec(B=B)
    rng = np.random.default_rng(1)
    idx = np.sort(rng.choice(X.shape[0], B, replace=False))
    delta = rng.standard_normal((B, 1))
    theta0 = None
    for gram in ("gemm", "syrk"):
        for grouped in (False, True):
            e = _engine(spec, (X, y), gram, grouped)
            if theta0 is None:
                theta0 = rng.standard_normal(e.theta.shape)
                Phi = e.fmap.transform(e.X[idx]).astype(np.float64)  # unscaled φ(X_B), (B, M)
                K_ref = Phi @ Phi.T / e.M
                g_ref = Phi @ theta0.reshape(e.M, 1) / e.M
                th_ref = theta0 + (Phi.T @ delta).reshape(theta0.shape)
            e.theta[...] = theta0
            assert e._group(B) >= (2 if grouped and B == 40 else 1)
            with _threads.blas_threads(1):
                K, g = e.prepare(idx)
                e.update(delta)
            assert np.array_equal(K, K.T)
            np.testing.assert_allclose(K, K_ref, atol=2e-5)
            np.testing.assert_allclose(g, g_ref, atol=1e-3 * np.abs(g_ref).max())
            np.testing.assert_allclose(e.theta, th_ref, atol=1e-3 * np.abs(th_ref).max())


def test_feature_blocks_go_in_device_sized_groups_on_each_backend(xp):
    """A CPU groups feature blocks into ~1 MB (cache), a GPU into ~64 MB: there each array call is a kernel
    launch, and one call per block of features made Zhang & Lai's HIGGS iteration 86x its floor on an H200.
    The grouped matrices are those of the dense features on either backend."""
    from kopt.numerics.backend import to_numpy

    X, y = _data()
    B = 300
    spec = _spec(B=B)
    spec["backend"] = "numpy" if xp is np else "cupy"
    e = _engine(spec, (X, y), "gemm", True)
    assert e._group(B) == (3 if xp is np else (1 << 24) // (B * e.F))
    rng = np.random.default_rng(1)
    idx = np.sort(rng.choice(X.shape[0], B, replace=False))
    delta = rng.standard_normal((B, 1))
    theta0 = rng.standard_normal(e.theta.shape)
    Phi = to_numpy(e.fmap.transform(e.X[xp.asarray(idx)])).astype(np.float64)
    e.theta[...] = xp.asarray(theta0)
    K, g = e.prepare(xp.asarray(idx))
    e.update(xp.asarray(delta))
    np.testing.assert_allclose(to_numpy(K), Phi @ Phi.T / e.M, atol=2e-5)
    g_ref = Phi @ theta0.reshape(e.M, 1) / e.M
    np.testing.assert_allclose(to_numpy(g), g_ref, atol=1e-3 * np.abs(g_ref).max())
    th_ref = theta0 + (Phi.T @ delta).reshape(theta0.shape)
    np.testing.assert_allclose(to_numpy(e.theta), th_ref, atol=1e-3 * np.abs(th_ref).max())


def test_gram_auto_takes_syrk_on_numpy_where_the_blas_has_it():
    assert gram_method("gemm", np, np.float32) == "gemm"
    expected = "syrk" if cblas_syrk(np.float32) is not None else "gemm"
    assert gram_method("auto", np, np.float32) == expected
    r = _solve(_spec(iterations=2), _data(300))
    assert r.info["gram"] == expected


@pytest.mark.slow
@pytest.mark.parametrize("B, gram", [(50, "syrk"), (50, "gemm"), (300, "syrk")])
def test_models_are_bit_identical_on_one_or_two_threads(monkeypatch, B, gram):
    """Groups of feature blocks lie inside the fixed parts, and every syrk is a single-threaded BLAS call."""
    data = _data()
    out = []
    for count in ("1", "2"):
        monkeypatch.setenv("KOPT_THREADS", count)
        r = _solve(_spec(B=B, gram=gram), data)
        out.append((r.model.predictor.arrays["coef"], [t["dual"] for t in r.trace]))
    assert np.array_equal(out[0][0], out[1][0]) and out[0][1] == out[1][1]


@pytest.mark.slow
def test_every_variant_reaches_the_random_feature_krr_solution():
    """Square loss: the answer is KRR on ψψᵀ in closed form, whatever |B| and however K_BB is formed."""
    X, y = _data(240, 3)
    lam = 2e-2
    ref = None
    for B, gram in ((120, "gemm"), (120, "syrk"), (30, "syrk")):
        spec = _spec(M=2048, F=128, B=B, gram=gram, iterations=4000, dtype="float64", loss="square", lam=lam)
        spec["solver"]["tol"] = 1e-11
        r = _solve(spec, (X, y))
        if ref is None:
            problem = assemble(kopt.load_spec(spec, check_files=False), (X, y))
            fmap = problem.feature_map(2048)
            Psi = fmap.transform(problem.X) / np.sqrt(fmap.count)
            a = np.linalg.solve(Psi @ Psi.T + lam * X.shape[0] * np.eye(X.shape[0]), y)
            ref = Psi @ (Psi.T @ a)
        np.testing.assert_allclose(r.model.decision_function(X), ref, atol=1e-5 * np.abs(ref).max())


# -- the bench's arithmetic ----------------------------------------------------------------------------

def _curve(gaps, B, rows):
    return [{"iteration": k, "epochs": k * B / rows, "rel_gap": g} for k, g in gaps]


def test_epochs_to_and_gap_at_interpolate_between_checks():
    c = _curve([(10, 0.9), (20, 0.8), (30, 0.7)], B=100, rows=1000)  # checks at 1, 2, 3 epochs
    assert bench.epochs_to(c, 0.85) == pytest.approx(1.5)
    assert bench.epochs_to(c, 0.95) == pytest.approx(1.0)  # already below at the first check
    assert bench.epochs_to(c, 0.6) is None
    assert bench.gap_at(c, 2.5) == pytest.approx(0.75)
    assert bench.gap_at(c, 3.5) is None


def test_projection_combines_cost_and_certificate_lines():
    rows = 1000
    cost = {"kind": "cost", "by_M": [
        {"M": 100, "variant": "today", "batch_size": 512, "seconds_per_row": 4e-4, "seconds_per_scored_row": 5e-5},
        {"M": 100, "variant": "syrk-128", "batch_size": 128, "seconds_per_row": 1e-4, "seconds_per_scored_row": 5e-5}]}
    today = {"kind": "certificate", "variant": "today", "batch_size": 512, "gram": "gemm", "rows": rows, "M": 10,
             "curve": [{"iteration": i, "epochs": e, "rel_gap": 1 - 0.03 * e} for i, e in enumerate([1, 2, 3, 4], 1)]}
    small = {"kind": "certificate", "variant": "syrk-128", "batch_size": 128, "gram": "syrk", "rows": rows, "M": 10,
             "curve": [{"iteration": i, "epochs": e, "rel_gap": 1 - 0.02 * e}
                       for i, e in enumerate([1, 2, 3, 4, 5], 1)]}
    out = {p["variant"]: p for p in bench.project([cost, today, small], M=100, rows=rows, log=lambda *a: None)}
    assert out["today"]["epochs_to_1_epoch"] == pytest.approx(1.0)
    assert out["syrk-128"]["epochs_to_1_epoch"] == pytest.approx(1.5)
    assert out["syrk-128"]["epochs_to_3_epochs"] == pytest.approx(4.5)
    assert out["syrk-128"]["seconds_to_3_epochs_at_1000_rows"] == pytest.approx(4.5 * rows * 1e-4)
    paper = out["today"]["paper_run"]
    assert paper["rows_processed"] == pytest.approx(50_000 * 512)
    assert paper["iterations"] == pytest.approx(50_000)
    assert out["syrk-128"]["paper_run"]["iterations_s"] == pytest.approx(1.5 * 50_000 * 512 * 1e-4)


@pytest.mark.slow
def test_bench_parts_run_small_and_name_the_blas_kernel():
    lines = []
    cost = bench.run_joker(rows=2000, features=(512,), iterations=5, score_rows=300, variants=("today", "syrk-128"),
                           log=lines.append)
    assert "BLAS" in lines[0] and "CPU flags" in lines[0]
    assert [e["variant"] for e in cost["by_M"]] == ["today", "syrk-128"]
    assert all(e["seconds_per_row"] > 0 and e["floor_s"] > e["syrk_floor_s"] for e in cost["by_M"])
    assert cost["blas"] and all("kernel" in b for b in cost["blas"])
    certs = bench.certificate(rows=2000, features=256, variants=("today", "syrk-128"), epochs=2, checks=2,
                              check_rows=500, log=lambda *a: None)
    assert [len(c["curve"]) for c in certs] == [4, 4] and certs[0]["curve"][-1]["epochs"] >= 2
    proj = bench.project([cost, *certs], M=512, rows=2000, log=lambda *a: None)
    assert {p["variant"] for p in proj} == {"today", "syrk-128"}
    assert proj[0]["epochs_to_1_epoch"] == pytest.approx(1.0, abs=0.3)


def test_product_solve_counts_cg_products_for_each_preconditioner():
    res = bench.product_solve(rows=3000, M=1024, batch_size=128, ranks=(16,), log=lambda *a: None)
    assert set(res["products"]) == {"none", "block_jacobi_64", "nystrom_16"}
    assert all(isinstance(v, int) and v > 0 for v in res["products"].values())
    assert res["gram_s"] > 0 and res["product_s"] > 0 and res["condition"] > 1
    assert res["seconds"]["form K_BB (syrk)"] == res["gram_s"]
