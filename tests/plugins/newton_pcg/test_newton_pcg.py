"""newton_pcg: smooth losses on Nystrom centers by Newton steps, each solved by preconditioned CG (plugins/newton_pcg,
kopt/nystrom/smooth.py) -- against a dense Newton solve on the same centers, and its engine pieces."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import cho_factor, cho_solve

import kopt
from kopt.nystrom import CenterFactors, NystromCG, RowPass, drawn_gram
from kopt.nystrom.smooth import best_offset, next_forcing
from kopt_plugins.kernels.shift_invariant import GaussianKernel
from kopt_plugins.losses.classification import LogisticLoss, SquaredHingeLoss
from kopt_plugins.losses.regression import HuberLoss, SquareLoss


def _data(n=1500, d=5, seed=0, classes=None, n_test=300, flip=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + n_test, d)).astype(np.float32)
    f = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]
    if classes:
        y = np.digitize(f, np.quantile(f, np.linspace(0, 1, classes + 1)[1:-1]))
    else:
        y = np.where(f + 0.2 > 0, 1, -1) * np.where(rng.random(len(f)) < flip, -1, 1)
    return X[:n], y[:n], X[n:], y[n:]


def _spec(loss="logistic", count=150, lam=1e-4, dtype="float32", **options):
    section = {"name": loss} if loss in ("logistic", "squared_hinge") else {"name": loss, "target": "binary"}
    return {"name": "newton", "seed": 3,
            "model": {"loss": section, "kernel": {"name": "gaussian", "bandwidth": 1.5},
                      "regularizer": {"name": "l2", "lambda": lam},
                      "features": {"kind": "nystrom", "count": count, "dtype": dtype}},
            "solver": {"name": "newton_pcg", **options}}


def _dense_newton(loss, K, R, y, lam, b0, weights=None, steps=100):
    """The minimiser of λ/2 wᵀRw + mean w_i ℓ(y_i, (Kw)_i + b0) by dense Newton steps (generalized Hessian) with a
    backtracking line search: the reference."""
    n, M = K.shape
    wts = np.ones(n) if weights is None else weights
    w = np.zeros(M)

    def J(w):
        return 0.5 * lam * w @ R @ w + np.mean(wts * loss.value(K @ w + b0, y))

    for _ in range(steps):
        f = K @ w + b0
        g = lam * R @ w + K.T @ (wts * loss.grad(f, y)) / n
        H = lam * R + (K.T * (wts * loss.curvature(f, y))) @ K / n + 1e-14 * np.eye(M)
        d = -cho_solve(cho_factor(H), g)
        a, J0 = 1.0, J(w)
        while J(w + a * d) > J0 + 1e-4 * a * (g @ d) and a > 1e-12:
            a *= 0.5
        w = w + a * d
        if abs(g @ d) < 1e-26:
            break
    return w, J(w)


@pytest.mark.parametrize("name", ["logistic", "squared_hinge", "huber"])
def test_each_smooth_loss_reaches_the_dense_newton_minimiser(name):
    X, y, Xt, yt = _data()
    res = kopt.solve(_spec(name, dtype="float64", tol=1e-10), data=(X, y, Xt, yt))
    assert res.status == "converged" and res.success and 0 <= res.info["rel_gap"] <= 1e-10
    model = res.model
    C = model.predictor.arrays["support"]
    b0 = float(model.predictor.meta["intercept"])
    Z = np.asarray(model.preprocessor.transform(X, dtype=np.float64))
    kernel = model.kernel
    K, R = kernel.exact(Z, C), kernel.exact(C, C)
    loss = model.loss
    yy = np.asarray(model.preprocessor.encode(y), dtype=np.float64)
    w, J = _dense_newton(loss, K, R, yy, 1e-4, b0)
    assert b0 == pytest.approx(best_offset(loss, yy[:, None])[0], rel=1e-12, abs=1e-14)
    assert res.objective == pytest.approx(J, rel=1e-9)
    np.testing.assert_allclose(model.decision_function(Xt), kernel.exact(
        np.asarray(model.preprocessor.transform(Xt, dtype=np.float64)), C) @ w + b0, atol=1e-5)


def test_the_square_loss_is_krr_nystroms_model():
    X, y, Xt, yt = _data()
    direct = kopt.solve({**_spec("square"), "solver": {"name": "krr_nystrom"}}, data=(X, y, Xt, yt))
    newton = kopt.solve(_spec("square", tol=1e-9), data=(X, y, Xt, yt))
    assert newton.status == "converged"
    assert newton.objective == pytest.approx(direct.objective, rel=1e-7)
    np.testing.assert_allclose(newton.model.decision_function(Xt), direct.model.decision_function(Xt), atol=1e-3)


def test_row_weights_weigh_the_loss_and_the_offset():
    X, y, Xt, yt = _data(n=800)
    w = np.random.default_rng(5).random(len(y)) + 0.25
    res = kopt.solve(_spec("logistic", dtype="float64", tol=1e-10), data=(X, y, Xt, yt), sample_weight=w)
    model = res.model
    C, b0 = model.predictor.arrays["support"], float(model.predictor.meta["intercept"])
    Z = np.asarray(model.preprocessor.transform(X, dtype=np.float64))
    K, R = model.kernel.exact(Z, C), model.kernel.exact(C, C)
    wn = w / w.mean()
    p = np.sum(wn * (y > 0)) / np.sum(wn)
    assert b0 == pytest.approx(np.log(p / (1 - p)), rel=1e-10)
    _, J = _dense_newton(model.loss, K, R, y.astype(np.float64), 1e-4, b0, weights=wn)
    assert res.objective == pytest.approx(J, rel=1e-9)


def test_one_vs_rest_classes_are_their_binary_solves():
    X, y, Xt, yt = _data(classes=3)
    multi = kopt.solve(_spec("logistic", tol=1e-9), data=(X, y, Xt, yt))
    assert multi.status == "converged" and multi.model.decision_function(Xt).shape == (len(Xt), 3)
    for c in range(3):
        one = kopt.solve(_spec("logistic", tol=1e-9), data=(X, np.where(y == c, 1, -1), Xt, np.where(yt == c, 1, -1)))
        np.testing.assert_allclose(multi.model.decision_function(Xt)[:, c], one.model.decision_function(Xt), atol=2e-4)


def test_the_bits_do_not_depend_on_the_thread_count():
    X, y, Xt, yt = _data(n=2000)
    out = [kopt.solve(_spec("logistic", tol=1e-8, threads=t), data=(X, y, Xt, yt)).model.decision_function(Xt)
           for t in (1, 2)]
    assert np.array_equal(out[0], out[1])


# a new preconditioner costs about a pass at 150 centers (kept for a step or two, then made again) and six at 400
# (kept throughout): a checkpoint between them carries the kept one's weights
@pytest.mark.parametrize("count", [150, 400])
@pytest.mark.parametrize("half_way", [2, 3])
def test_a_checkpointed_run_resumes_to_the_same_bits(half_way, count):
    X, y, Xt, yt = _data()
    spec = _spec("logistic", count=count, tol=1e-12, iterations=6)
    full = kopt.solve(spec, data=(X, y, Xt, yt), keep_state=True)
    half = kopt.solve(_spec("logistic", count=count, tol=1e-12, iterations=half_way), data=(X, y, Xt, yt),
                      keep_state=True)
    resumed = kopt.solve(spec, data=(X, y, Xt, yt), resume=half.snapshot)
    assert resumed.n_iter == full.n_iter == 6
    assert np.array_equal(resumed.model.decision_function(Xt), full.model.decision_function(Xt))


def test_a_warm_start_along_lambda_needs_fewer_passes():
    X, y, Xt, yt = _data()
    first = kopt.solve(_spec("logistic", lam=1e-3, tol=1e-8), data=(X, y, Xt, yt), keep_state=True)
    cold = kopt.solve(_spec("logistic", lam=3e-4, tol=1e-8), data=(X, y, Xt, yt))
    warm = kopt.solve(_spec("logistic", lam=3e-4, tol=1e-8), data=(X, y, Xt, yt), start_from=first.snapshot)
    assert warm.status == cold.status == "converged"
    assert warm.objective == pytest.approx(cold.objective, rel=1e-7)
    assert warm.info["passes"] < cold.info["passes"]


@pytest.mark.parametrize("loss", ["hinge", "lp"])
def test_a_loss_without_bounded_curvature_is_refused_naming_the_key(loss):
    X, y, Xt, yt = _data(n=100)
    spec = _spec("logistic")
    spec["model"]["loss"] = {"name": loss}
    with pytest.raises(kopt.KoptError, match=r"model\.loss\.name.*newton_pcg.*smooth loss"):
        kopt.solve(spec, data=(X, y, Xt, yt))


# -- the engine's pieces ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", [LogisticLoss(), SquaredHingeLoss(), HuberLoss(delta=0.5), SquareLoss()])
def test_the_best_offset_is_the_best_constant(loss):
    rng = np.random.default_rng(0)
    y = np.where(rng.random(500) < 0.3, 1.0, -1.0) if loss.target == "binary" else np.where(
        rng.random(500) < 0.3, 1.0, -1.0) + 0.3 * rng.standard_normal(500)
    w = rng.random(500) + 0.5
    c = best_offset(loss, y[:, None], w)[0]
    grid = np.linspace(c - 1e-3, c + 1e-3, 2001)
    values = [np.sum(w * loss.value(np.full(500, t), y)) for t in grid]
    assert abs(grid[int(np.argmin(values))] - c) <= 2e-6
    if loss.name == "logistic":
        p = np.sum(w * (y > 0)) / np.sum(w)
        assert c == pytest.approx(np.log(p / (1 - p)), rel=1e-12)
    if loss.name in ("square", "squared_hinge"):
        assert c == pytest.approx(np.sum(w * y) / np.sum(w), rel=1e-12)


def test_the_forcing_follows_how_far_the_linear_model_missed():
    # the square loss: the model is exact, so the forcing falls to 0 once the safeguard lets it
    assert next_forcing(np.array([0.05]), np.array([1.0]), np.array([1.0]), np.array([3.0]))[0] == 0.0
    # a miss of a third of the last gradient's size, kept at least η^φ while that is above 0.1
    assert next_forcing(np.array([0.01]), np.array([2.0]), np.array([1.0]), np.array([3.0]))[0] == pytest.approx(1 / 3)
    assert next_forcing(np.array([0.5]), np.array([1.0]), np.array([1.0]), np.array([3.0]))[0] == pytest.approx(
        0.5 ** ((1 + 5 ** 0.5) / 2))
    assert next_forcing(np.array([0.5]), np.array([9.0]), np.array([1.0]), np.array([3.0]))[0] == 0.5  # at most ½


def _upper(M, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, M))
    return np.asfortranarray(np.linalg.cholesky(A @ A.T / M + 1e-3 * np.eye(M)).T)


def test_the_weighted_preconditioner_is_the_weighted_estimate():
    rng = np.random.default_rng(1)
    kernel = GaussianKernel(bandwidth=1.2)
    C = rng.standard_normal((120, 3))
    cg = NystromCG(kernel, C, None, C, dtype=np.float64)
    kept = cg.C
    U0 = np.triu(cg.U).copy()
    weights = rng.random(120)
    lam = 1e-3
    r = rng.standard_normal((cg.M, 2))
    order = cg.factors.source[3]  # the kept centers' positions among the drawn
    # nothing dropped: U diag(w_kept) Uᵀ / M
    cg.factors.factor(1.0, lam, weights=weights)
    P = (U0 * weights[np.asarray(order)]) @ U0.T / cg.M + lam * np.eye(cg.M)
    np.testing.assert_allclose(P @ cg.factors.precondition(r), r, rtol=1e-8, atol=1e-8)
    # more rows: the weighted mean of z zᵀ over them
    rows = rng.standard_normal((300, 3))
    w_rows = rng.random(300)
    cg.factors.factor(1.0, lam, weights=w_rows, rows=rows)
    Z = np.linalg.solve(U0.T, kernel.exact(kept, rows))
    P = (Z * w_rows) @ Z.T / 300 + lam * np.eye(cg.M)
    np.testing.assert_allclose(P @ cg.factors.precondition(r), r, rtol=1e-7, atol=1e-7)
    assert np.array_equal(np.triu(cg.U), U0)
    np.testing.assert_allclose(np.tril(drawn_gram(kernel, kept, rows, cg.U, weights=w_rows)),
                               np.tril((Z * w_rows) @ Z.T / 300), rtol=1e-9, atol=1e-12)  # its lower triangle
    with pytest.raises(ValueError, match="without their centers' rows"):
        CenterFactors(_upper(10)).factor(1.0, lam, weights=np.ones(10))


def test_a_pass_weighs_each_column_by_its_own_weights():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((700, 4)).astype(np.float32)
    C = X[:50]
    kernel = GaussianKernel(bandwidth=1.1)
    W = rng.random((700, 2))
    rows = RowPass(kernel, X, C, np.float32, weights=W, threads=2, chunk_entries=1000)
    P = rng.standard_normal((50, 2))
    S, G = rows.products(P)
    K = kernel.exact(X.astype(np.float64), C.astype(np.float64))
    np.testing.assert_allclose(G, K.T @ (W * (K @ P)), rtol=1e-3, atol=1e-3)


@pytest.mark.slow
def test_the_memory_is_planned_and_never_n_by_m(monkeypatch):
    """The traced peak of a solve stays far below the n × M kernel matrix, and within the solver's memory plan."""
    import tracemalloc

    from kopt.contract.registry import registry
    from kopt.numerics import memory
    from kopt.nystrom import passes

    monkeypatch.setattr(passes, "CHUNK_ENTRIES", 1 << 16)
    X, y, Xt, yt = _data(n=30000, d=3, n_test=100)
    M = 256
    kopt.solve(_spec(count=M, iterations=1, tol=0), data=(X, y, Xt, yt))  # imports, pools: not traced
    tracemalloc.start()
    try:
        kopt.solve(_spec(count=M, iterations=3, tol=0), data=(X, y, Xt, yt))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 0.5 * X.shape[0] * M * 4, peak
    solver = registry().get("solver", "newton_pcg")()
    planned = memory.total(solver.memory_plan(memory.Sizes(n=30000, d=3, count=M, dtype=np.dtype("float32"),
                                                           kind="nystrom")))
    assert peak <= planned + X.nbytes + Xt.nbytes + (8 << 20), (peak, planned)  # the rows' copies, small temporaries


def test_more_estimate_rows_take_passes_off(monkeypatch):
    """The preconditioner's estimate of T_D from more rows than the drawn centers (where the rows are many against the
    centers: kopt.nystrom.estimate_positions) takes CG steps off every Newton step; the model is the same."""
    from kopt.nystrom import smooth

    X, y, Xt, yt = _data(n=6000, flip=0.02)
    spec = _spec(count=300, lam=1e-5, tol=1e-6)
    monkeypatch.setattr(smooth, "ESTIMATE_PASSES", 0.0)  # the drawn centers alone
    centers = kopt.solve(spec, data=(X, y, Xt, yt))
    monkeypatch.setattr(smooth, "ESTIMATE_PASSES", 5.0)  # 5 x 6000 x (2 x 5 + 36) / (2 x 300): 2,300 rows
    more = kopt.solve(spec, data=(X, y, Xt, yt))
    assert centers.status == more.status == "converged"
    assert more.objective == pytest.approx(centers.objective, rel=1e-5)
    assert more.info["passes"] < 0.8 * centers.info["passes"], (more.info["passes"], centers.info["passes"])


def test_rpcholesky_centers_take_a_uniform_estimate():
    """Centers drawn by randomly pivoted Cholesky are no sample of the rows: the preconditioner's estimate rows are a
    uniform seeded sample instead, and the solve reaches its certificate."""
    from kopt.nystrom import estimate_positions

    positions, more = estimate_positions(np.random.default_rng(0), 1000, 3, np.arange(0, 1000, 10), 100, uniform=False)
    assert more and len(positions) >= 100 and len(set(positions.tolist())) == len(positions)
    X, y, Xt, yt = _data(n=3000)
    spec = _spec(count=200, tol=1e-8)
    spec["model"]["features"]["centers"] = "rpcholesky"
    r = kopt.solve(spec, data=(X, y, Xt, yt))
    assert r.status == "converged" and r.info["rel_gap"] <= 1e-8


@pytest.mark.parametrize("kept_passes, made", [(1e9, "once"), (-1.0, "every step")])
def test_a_newton_step_keeps_its_preconditioner_while_it_costs_fewer_passes_than_a_new_one(monkeypatch, kept_passes,
                                                                                            made):
    """The rule of kopt.nystrom.smooth.factor_passes at its two ends: a preconditioner cheap against the passes it
    saves is made once for every Newton step at a λ; one dearer than any pass is made again at every step.  Both
    reach the same minimiser (the dense Newton's); keeping takes no more steps of Newton."""
    from kopt.nystrom import smooth

    calls = []
    factor = CenterFactors.factor
    monkeypatch.setattr(CenterFactors, "factor", lambda self, *a, **k: (calls.append(1), factor(self, *a, **k))[1])
    monkeypatch.setattr(smooth, "factor_passes", lambda *a: kept_passes)
    X, y, Xt, yt = _data()
    res = kopt.solve(_spec("logistic", dtype="float64", tol=1e-10), data=(X, y, Xt, yt))
    assert res.status == "converged" and 0 <= res.info["rel_gap"] <= 1e-10
    steps = res.n_iter
    assert steps >= 3
    # the centers' own factor is not a CenterFactors.factor call: each call is one Newton step's preconditioner
    assert len(calls) == (1 if made == "once" else steps)
    model = res.model
    C, b0 = model.predictor.arrays["support"], float(model.predictor.meta["intercept"])
    Z = np.asarray(model.preprocessor.transform(X, dtype=np.float64))
    K, R = model.kernel.exact(Z, C), model.kernel.exact(C, C)
    _, J = _dense_newton(model.loss, K, R, np.asarray(model.preprocessor.encode(y), dtype=np.float64), 1e-4, b0)
    assert res.objective == pytest.approx(J, rel=1e-9)


def test_the_buffer_holds_the_factor_its_arguments_made():
    """CenterFactors.holds: the same scale and λ, and the very weights and rows objects (equal values in another array
    are not taken on trust); a factor that failed, or another λ, holds nothing."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    from kopt.nystrom import center_factors

    C, factors = center_factors(GaussianKernel(bandwidth=1.0), X[:40], threads=1)
    w = np.full(len(C), 0.25)
    factors.factor(1.0, 1e-3, weights=w)
    assert factors.holds(1.0, 1e-3, w) and not factors.holds(1.0, 1e-3, w.copy())
    assert not factors.holds(1.0, 1e-2, w) and not factors.holds(2.0, 1e-3, w) and not factors.holds(1.0, 1e-3)
    with pytest.raises(np.linalg.LinAlgError):
        factors.factor(1.0, -10.0, weights=w)
    assert not factors.holds(1.0, -10.0, w) and not factors.holds(1.0, 1e-3, w)
