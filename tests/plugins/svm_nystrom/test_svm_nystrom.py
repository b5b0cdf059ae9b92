"""solver: svm_nystrom -- the squared hinge on Nyström centers by active-set Newton (plugins/svm_nystrom)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import curved_classes
from scipy.optimize import minimize

import kopt
from kopt.errors import SpecError
from kopt.nystrom.newton import HingeNewton, hinge_objective, line_search
from kopt.nystrom.system import NystromSystem
from kopt_plugins.kernels.shift_invariant import GaussianKernel


def _data(n=600, d=3, seed=0, classes=2):
    return curved_classes(n, d, seed, classes, noise=0.4)


def _spec(count=80, lam=1e-3, bandwidth=1.0, **solver):
    return {"seed": 3, "backend": "numpy", "output": {"model": False, "report": False},
            "data": {"standardize": False},
            "model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian", "bandwidth": bandwidth},
                      "regularizer": {"name": "l2", "lambda": lam},
                      "features": {"kind": "nystrom", "count": count, "dtype": "float64"}},
            "solver": {"name": "svm_nystrom", **solver}}


def _solve(spec, data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kopt.solve(spec, data=data, **kw)


def _reference(Z, y, lam, weights=None):
    """The L2-SVM on explicit features Z (whitened) with a bias, by L-BFGS to high precision: (v, b, J)."""
    n, M = Z.shape
    w = np.ones(n) if weights is None else weights

    def fun(p):
        v, b = p[:M], p[M]
        slack = np.maximum(0.0, 1.0 - y * (Z @ v + b))
        J = 0.5 * lam * v @ v + np.mean(w * 0.5 * slack ** 2)
        r = -(w * y * slack) / n
        return J, np.concatenate([lam * v + Z.T @ r, [r.sum()]])

    res = minimize(fun, np.zeros(M + 1), jac=True, method="L-BFGS-B", options={"maxiter": 20000, "gtol": 1e-13,
                                                                              "ftol": 1e-16})
    return res.x[:M], res.x[M], res.fun


def _features(system, X):
    K = system.kernel.exact(X, system.C)
    return np.linalg.solve(system.U.T, K.T).T  # z = U⁻ᵀ k


@pytest.mark.parametrize("weighted", [False, True])
def test_newton_reaches_the_l2_svm_minimiser_with_its_bias(weighted):
    X, y = _data()
    y = y.astype(float)
    w = np.random.default_rng(5).random(len(y)) + 0.5 if weighted else None
    kernel = GaussianKernel(bandwidth=1.0)
    system = NystromSystem(kernel, X, y[:, None], X[:60], dtype=np.float64, weights=w)
    system.whitened()
    h = HingeNewton(system, X, y, 1e-3, w)
    while not h.converged:
        h.step()
        assert h.steps < 30
    v, b, J = _reference(_features(system, X), y, 1e-3, w)
    assert h.objective == pytest.approx(J, rel=1e-9)
    np.testing.assert_allclose(h.v, v, atol=1e-5)
    assert h.b == pytest.approx(b, abs=1e-5)
    # T is the system of the rows inside the margin: the same as one built from those rows alone
    S = y * h.f < 1
    alone = NystromSystem(kernel, X[S], y[S][:, None], X[:60], dtype=np.float64, weights=None if w is None else w[S])
    T_alone = alone.whitened()[0] * (S.sum() / len(y))
    np.testing.assert_allclose(system.whitened()[0], T_alone, atol=1e-12)


def test_any_start_and_any_rows_in_T_reach_the_same_minimiser():
    X, y = _data(seed=2)
    y = y.astype(float)
    kernel = GaussianKernel(bandwidth=0.8)
    results = []
    for start in (None, "random", "given rows"):
        system = NystromSystem(kernel, X, y[:, None], X[:50], dtype=np.float64)
        system.whitened()
        rng = np.random.default_rng(0)
        v = None if start is None else rng.standard_normal(system.M)
        in_T = given = None
        if start == "random":  # T of an arbitrary set of rows, said so
            in_T = rng.random(len(y)) < 0.3
            system.clear_rows()
            system.update_rows(X[in_T], 1.0)
        if start == "given rows":  # the first step on a given set of margin rows (the search's start per size)
            v, given = None, rng.random(len(y)) < 0.5
        h = HingeNewton(system, X, y, 1e-2, v=v, b=0.5 if start == "random" else 0.0, in_T=in_T,
                        start_inside=given)
        while not h.converged:
            h.step()
            assert h.steps < 40
        J = h.objective
        h.polish()  # one direct solve on the margin rows: the same bits whatever path the steps took
        assert h.objective == pytest.approx(J, rel=1e-12) and (h.y * h.f < 1).sum() == h.in_T.sum()
        results.append((h.objective, h.v, h.b))
    for other in results[1:]:
        assert results[0][0] == pytest.approx(other[0], rel=1e-10)
        np.testing.assert_allclose(results[0][1], other[1], atol=1e-6)
        assert np.array_equal(results[0][1], other[1]) and results[0][2] == other[2]


def test_update_rows_adds_and_takes_out_rows_and_rescale_recounts():
    X, y = _data(n=300)
    kernel = GaussianKernel(bandwidth=1.0)
    s = NystromSystem(kernel, X, y[:, None].astype(float), X[:40], dtype=np.float64)
    T = s.whitened()[0].copy()
    s.update_rows(X[:100], -1.0)
    part = NystromSystem(kernel, X[100:], y[100:, None].astype(float), X[:40], dtype=np.float64)
    np.testing.assert_allclose(s.whitened()[0], part.whitened()[0] * (200 / 300), atol=1e-13)
    s.update_rows(X[:100], 1.0)
    np.testing.assert_allclose(s.whitened()[0], T, atol=1e-13)
    assert np.array_equal(s.whitened()[0], s.whitened()[0].T)
    s.rescale(600)
    np.testing.assert_allclose(s.whitened()[0], T / 2, atol=1e-13)
    with pytest.raises(RuntimeError, match="update_rows"):
        s.solve(1e-3)  # b is not kept once rows moved


@pytest.mark.slow
def test_line_search_finds_the_segment_minimum():
    rng = np.random.default_rng(4)
    n, M = 400, 10
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    v, d = rng.standard_normal(M), rng.standard_normal(M)
    f0, f1 = rng.standard_normal(n), 3 * rng.standard_normal(n)
    t = line_search(0.1, v, d, f0, f1, y)
    grid = np.linspace(0, 1, 20001)
    J = [hinge_objective(0.1, v + s * d, f0 + s * (f1 - f0), y) for s in grid]
    assert t == pytest.approx(grid[int(np.argmin(J))], abs=1e-4)


def test_the_solver_reports_a_closed_gap_and_predicts():
    X, y = _data(n=700)
    data = (X[:500], y[:500], X[500:], y[500:])
    r = _solve(_spec(), data)
    assert r.status == "converged" and 0 <= r.gap and r.info["rel_gap"] < 1e-6
    assert r.info["newton_steps"][0] < 30 and r.info["n_centers"] == 80
    assert r.metrics["accuracy"] > 0.85


def test_multiclass_is_one_vs_rest_one_class_after_another():
    X, y = _data(n=600, classes=3)
    r = _solve(_spec(count=60), (X[:450], y[:450], X[450:], y[450:]))
    assert r.status == "converged" and len(r.info["newton_steps"]) == 3 and min(r.info["newton_steps"]) > 0
    assert r.metrics["accuracy"] > 0.6
    # class 1 against the rest: the binary solve's objective is that column's share
    yb = np.where(y[:450] == 1, 1, -1)
    binary = _solve(_spec(count=60), (X[:450], yb))
    assert binary.status == "converged" and binary.objective < r.objective


def test_wrong_loss_or_features_are_refused_with_the_key():
    X, y = _data(n=100)
    spec = _spec()
    spec["model"]["loss"] = {"name": "logistic"}
    with pytest.raises(SpecError, match="squared hinge only"):
        _solve(spec, (X, y))
    spec = _spec()
    spec["model"]["features"] = {"kind": "random", "count": 64}
    with pytest.raises(SpecError, match="nystrom"):
        _solve(spec, (X, y))


@pytest.mark.slow
def test_auto_routes_the_squared_hinge_to_svm_nystrom_on_its_own_search():
    X, y = _data(n=1500)
    spec = {"model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian"}},
            "output": {"model": False, "report": False}}
    r = _solve(spec, (X[:1200], y[:1200], X[1200:], y[1200:]))
    assert r.auto["route"] == "svm_nystrom" and r.report["spec"]["solver"]["name"] == "svm_nystrom"
    assert r.info["reused_search_system"] is True and r.status == "converged"
    trials = [t for t in r.auto["trials"] if "skipped" not in t]
    assert all(t["newton_steps"] > 0 and "square_path" in t for t in trials)
    assert r.metrics["accuracy"] > 0.85
    # the chosen spec, solved again from scratch, is the same model (the search's system and start only save work)
    again = _solve(r.report["spec"], (X[:1200], y[:1200], X[1200:], y[1200:]))
    assert again.objective == pytest.approx(r.objective, rel=1e-6)
    assert again.metrics["accuracy"] == pytest.approx(r.metrics["accuracy"], abs=2 / 300)


@pytest.mark.slow
def test_the_estimator_with_the_squared_hinge_takes_this_route():
    from kopt.sklearn import KernelClassifier

    X, y = _data(n=900)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = KernelClassifier(loss="squared_hinge").fit(X[:700], y[:700])
    assert est.route_ == "svm_nystrom" and est.lam_ > 0 and est.n_features_ >= 256
    assert est.score(X[700:], y[700:]) > 0.85
    assert set(est.predict(X[700:])) <= {-1, 1}


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_search_tries_no_hinge_lambda_below_the_kernel_rounding(dtype):
    """The hinge's λ path skips λ < eps/2 · trace(T): float32 kernel values resolve no λ of 1e-9, float64 ones do."""
    from kopt_plugins.auto.planner import LAMBDAS, hinge_path

    X, y = _data(n=600)
    y = y.astype(float)
    system = NystromSystem(GaussianKernel(bandwidth=1.0), X[:500], y[:500, None], X[:60].astype(dtype), dtype=dtype)
    system.whitened()
    floor = 0.5 * float(np.finfo(dtype).eps) * float(np.trace(system.whitened()[0]))
    k, scores, outcomes, start = hinge_path(system, X[:500].astype(dtype), y[:500], None, X[500:].astype(dtype),
                                             y[500:, None], LAMBDAS, len(LAMBDAS) - 1)
    tried = [LAMBDAS[i] for i in scores]
    assert min(tried) >= floor and LAMBDAS[k] in tried and start.steps > 0
    assert (min(tried) < 1e-8) == (dtype == np.float64)  # the window widened down to the path's end in float64


@pytest.mark.parametrize("case", ["plain", "weighted", "forced", "none inside", "all inside"])
def test_a_margin_pass_sums_the_rows_inside_the_margin(case):
    """The pass's scores and sums [Kᵀ r, Kᵀ a] are the dense formula's (r = a (f − y), a the weight of a row inside
    the margin, else 0), whichever rows are inside: its product runs over those rows only."""
    from kopt.nystrom.newton import margin_pass

    X, y = _data(n=900)
    y = y.astype(float)
    X32 = X.astype(np.float32)
    kernel = GaussianKernel(bandwidth=1.0)
    C = X32[:60]
    w, b = np.random.default_rng(3).standard_normal(60), 0.2
    weights = np.random.default_rng(4).uniform(0.5, 2.0, 900) if case == "weighted" else None
    forced = (np.arange(900) % 7 == 0) if case == "forced" else None
    if case == "none inside":
        w, b, y = np.zeros(60), 2.0, np.ones(900)  # y f = 2 on every row
    elif case == "all inside":
        w, b = np.zeros(60), 0.0  # y f = 0 on every row
    f, sums = margin_pass(kernel, C, np.float32, w, b, X32, y, weights, threads=2, inside=forced)
    K = kernel.exact(X32, C).astype(np.float64)
    np.testing.assert_allclose(f, K @ w + b, rtol=1e-6, atol=1e-6)
    inside = forced if forced is not None else y * f < 1.0
    assert {"none inside": not inside.any(), "all inside": inside.all()}.get(case, 0 < inside.sum() < 900)
    a = inside * (1.0 if weights is None else weights)
    np.testing.assert_allclose(sums, K.T @ np.stack([a * (f - y), a], axis=1), rtol=1e-10, atol=1e-10)


def test_held_kernel_values_give_the_same_bits_as_computing_them():
    """A Newton solve that holds its rows' kernel values (small enough) takes the same passes bit for bit, and
    reaches the same minimiser as one that computes them each pass (its T_S updates read the held values)."""
    from kopt.nystrom.newton import kernel_parts, margin_pass

    X, y = _data(n=700)
    y = y.astype(float)
    kernel = GaussianKernel(bandwidth=1.0)
    system = NystromSystem(kernel, X.astype(np.float32), y[:, None], X[:70].astype(np.float32))
    w = np.random.default_rng(2).standard_normal(system.M)
    X32 = X.astype(np.float32)
    f0, s0 = margin_pass(kernel, system.C, np.float32, w, 0.3, X32, y, threads=2)
    f1, s1 = margin_pass(kernel, system.C, np.float32, w, 0.3, X32, y, threads=1,
                         cached=kernel_parts(kernel, system.C, np.float32, X32, threads=2))
    assert np.array_equal(f0, f1) and np.array_equal(s0, s1)
    out = []
    for cache_bytes in (0, 1 << 30):
        s = NystromSystem(kernel, X32, y[:, None], X[:70].astype(np.float32))
        s.whitened()
        h = HingeNewton(s, X32, y, 1e-3, cache_bytes=cache_bytes)
        while not h.converged:
            h.step()
            assert h.steps < 30
        assert (h._cache is None) == (cache_bytes == 0)
        out.append(h)
    assert out[0].objective == pytest.approx(out[1].objective, rel=1e-9)
    np.testing.assert_allclose(out[0].v, out[1].v, atol=1e-5)


@pytest.mark.slow
def test_auto_with_the_squared_hinge_on_multiclass_ids_starts_from_the_square_loss_system():
    X, y = _data(n=900, classes=3)
    spec = {"model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 256}, "output": {"model": False, "report": False}}
    r = _solve(spec, (X[:700], y[:700], X[700:], y[700:]))
    assert r.auto["route"] == "svm_nystrom" and r.info["reused_search_system"] is True
    assert all("newton_steps" not in t for t in r.auto["trials"])  # the square loss's search (one system for all)
    assert r.status == "converged" and len(r.info["newton_steps"]) == 3
    assert r.metrics["accuracy"] > 0.6


def test_the_weighted_solve_is_the_weighted_l2_svm_on_its_centers():
    """Through kopt.solve with sample weights: the objective is the weighted L2-SVM's minimum on the model's centers
    (L-BFGS on explicit features; kopt's weights have mean 1)."""
    X, y = _data(n=300, seed=4)
    w = np.ones(len(y))
    w[:60] = 3.0
    r = _solve(_spec(count=50, lam=1e-2), (X, y), sample_weight=w)
    assert r.status == "converged"
    C = np.asarray(r.model.predictor.arrays["support"])
    kernel = GaussianKernel(bandwidth=1.0)
    L = np.linalg.cholesky(kernel.exact(C, C))
    Z = np.linalg.solve(L, kernel.exact(X, C).T).T  # any factor of R spans the same functions
    _, _, J = _reference(Z, y.astype(float), 1e-2, w / w.mean())
    assert r.objective == pytest.approx(J, rel=1e-7)


@pytest.mark.slow
def test_a_lambda_the_spec_gives_is_taken_as_given_below_the_floor():
    X, y = _data(n=700)
    spec = {"model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian"},
                      "regularizer": {"name": "l2", "lambda": 1e-9}},
            "solver": {"name": "auto", "max_centers": 256}, "output": {"model": False, "report": False}}
    r = _solve(spec, (X[:500], y[:500], X[500:], y[500:]))
    assert r.auto["lambda"] == 1e-9 and r.auto["route"] == "svm_nystrom"
    assert all(set(t["path"]) <= {"1e-09"} for t in r.auto["trials"])


def _solved(system, X, y, lam, stale_rows, weights=None):
    h = HingeNewton(system, X, y, lam, weights)
    h.stale_rows = stale_rows
    while not h.converged:
        h.step()
        assert h.steps < 40
    return h


@pytest.mark.parametrize("weighted", [False, True])
def test_steps_on_a_held_factor_reach_the_same_model_with_fewer_factors(weighted):
    X, y = _data(n=800, seed=4)
    y = y.astype(float)
    w = np.random.default_rng(1).random(len(y)) + 0.5 if weighted else None
    kernel = GaussianKernel(bandwidth=0.7)
    out = {}
    for stale_rows in (0, 10_000):  # a factor at every step whose rows moved; one per λ (Woodbury's identity after)
        system = NystromSystem(kernel, X, y[:, None], X[:120], dtype=np.float64, weights=w)
        system.whitened()
        h = _solved(system, X, y, 1e-4, stale_rows, w)
        J = h.objective
        # the rows inside the margin: T read through the system is theirs, the held factor given back first
        S = h.in_T
        alone = NystromSystem(kernel, X[S], y[S][:, None], X[:120], dtype=np.float64,
                              weights=None if w is None else w[S])
        np.testing.assert_allclose(system.whitened()[0], alone.whitened()[0] * (S.sum() / len(y)), atol=1e-12)
        h.polish()  # one direct solve on the margin rows: the same bits whatever factors the steps used
        out[stale_rows] = (h.steps, h.factors, J, h.objective, h.v, h.b, S)
    (steps0, factors0, J0, P0, v0, b0, S0), (steps1, factors1, J1, P1, v1, b1, S1) = out[0], out[10_000]
    assert factors0 >= steps0 - 1 > 3 and factors1 == 2  # one for the steps, one for the polish
    assert abs(steps1 - steps0) <= 1  # the same steps to rounding: Woodbury's solve is the new factor's
    assert np.array_equal(S0, S1) and J1 == pytest.approx(J0, rel=1e-10)
    assert np.array_equal(v0, v1) and b0 == b1 and P0 == P1


@pytest.mark.parametrize("lam", [1e-4, 1e-6])
def test_a_step_on_a_held_factor_solves_the_new_margin_rows_system(lam):
    X, y = _data(n=2000, seed=6)
    y = y.astype(float)
    kernel = GaussianKernel(bandwidth=0.9)
    system = NystromSystem(kernel, X, y[:, None], X[:400], dtype=np.float64)
    system.whitened()
    h = HingeNewton(system, X, y, lam)
    while True:  # to a step whose rows moved by fewer than stale_rows: the next solve is on the held factor
        h.step()
        assert not h.converged and h.steps < 20
        changed = int(np.sum(h.in_T != h._T_rows))
        if 0 < changed <= h.stale_rows:
            break
    factors = h.factors
    R = np.random.default_rng(2).standard_normal((system.M, 2))
    got = h._solve(R)  # Woodbury's identity on the held factor
    assert h.factors == factors
    h.settle()  # T the margin rows' system: the changed rows added and taken out by rank-k updates
    S = h.in_T
    assert np.array_equal(S, h._T_rows) and h._factor_lam is None
    T = system.whitened()[0]
    np.testing.assert_allclose(got, np.linalg.solve(T + lam * np.eye(system.M), R), rtol=1e-9, atol=1e-9 * np.abs(got).max())
    # and T is the margin rows' own system (to the whitening's rounding, which routes through U differently)
    alone = NystromSystem(kernel, X[S], y[S][:, None], X[:400], dtype=np.float64)
    np.testing.assert_allclose(T, alone.whitened()[0] * (S.sum() / len(y)), atol=1e-8)
    assert np.array_equal(T, T.T)
