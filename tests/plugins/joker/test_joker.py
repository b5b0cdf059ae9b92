"""The joker solver (DBCD-TR, Zhang & Lai 2025) on small synthetic problems.

λ conversion, the trust-region pieces, every loss's dual terms, closed forms (exact KRR,
KRR on the random-feature kernel), scikit-learn peers, one-vs-rest, resume, spec errors.
Real-data checks (HIGGS rows, cal_housing) are in test_joker_data.py.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from helpers import smooth_rows
from hypothesis import given, settings
from hypothesis import strategies as st

import kopt
from kopt.contract.registry import registry
from kopt.errors import SpecError
from kopt.numerics import objectives
from kopt.testing import StopAt as _StopAt
from kopt_plugins.joker.dualterms import DualTerms
from kopt_plugins.joker.solver import joker_lambda, kopt_lambda
from kopt_plugins.joker.trust_region import solve_block, steihaug

SIGMA = 1.5


def _data(n=240, d=3, seed=0, task="real"):
    return smooth_rows(n, d, seed, task)


def _spec(loss, *, lam=1e-3, out=None, features=None, **solver):
    s = {"data": {"standardize": False},
         "model": {"loss": loss, "kernel": {"name": "gaussian", "bandwidth": SIGMA},
                   "regularizer": {"name": "l2", "lambda": lam}, "form": "dual",
                   "features": {"dtype": "float64", **(features or {})}},
         "solver": {"name": "joker", "mode": "exact", "batch_size": 64, "iterations": 3000, "tol": 1e-9, **solver},
         "backend": "numpy", "output": {"model": False, "report": False}}
    if out is not None:
        s["output"] = {"dir": str(out)}
    return s


def _solve(spec, data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kopt.solve(spec, data=data, **kw)


def _gram(X, Y=None):
    return registry().get("kernel", "gaussian")(bandwidth=SIGMA).exact(X, X if Y is None else Y)


def _alpha(result, X):
    """α on every training row, read back from the model (support rows are copies of training rows)."""
    arr = result.model.predictor.arrays
    where = {row.tobytes(): i for i, row in enumerate(np.asarray(X, dtype=arr["support"].dtype))}
    alpha = np.zeros(X.shape[0])
    for row, c in zip(arr["support"], arr["coef"]):
        alpha[where[row.tobytes()]] = c
    return alpha


def _certified_gap(loss, X, y, alpha, lam):
    """kopt.numerics.objectives' duality gap of α (computed by the core, not by the solver)."""
    K = _gram(X)
    scores = K @ alpha
    P = objectives.primal(loss, y, scores, lam, alpha @ scores)
    return P, objectives.gap(loss, y, alpha, scores, lam, alpha @ scores)


# -- λ convention -----------------------------------------------------------------------------------


def test_lambda_conversion_gives_the_same_solution_both_ways():
    """kopt's λ/2‖f‖² + mean ℓ and Zhang & Lai's ½‖θ‖² + (1/λ_J)Σℓ with λ_J = λn: one minimiser."""
    X, y = _data(n=150)
    n, lam = X.shape[0], 2e-3
    assert joker_lambda(lam, n) == pytest.approx(lam * n)
    assert kopt_lambda(joker_lambda(lam, n), n) == pytest.approx(lam)
    r = _solve(_spec({"name": "square"}, lam=lam, tol=1e-12, batch_size=150), (X, y))
    a = _alpha(r, X)
    lam_j = lam * n
    K = _gram(X)
    # Zhang & Lai (2025) Table A.2: Joker-KRR's dual is ½αᵀ(K + λ_J I)α − yᵀα, minimised at (K + λ_J I)⁻¹y
    np.testing.assert_allclose(a, np.linalg.solve(K + lam_j * np.eye(n), y), rtol=1e-8, atol=1e-10)
    # objectives: Zhang & Lai's primal is kopt's divided by λ; kopt's dual is −λ J(α)
    f = K @ a
    primal_joker = 0.5 * a @ f + 0.5 * ((f - y) ** 2).sum() / lam_j
    J = 0.5 * a @ f + (0.5 * lam_j * a * a - a * y).sum()
    assert r.objective == pytest.approx(lam * primal_joker, rel=1e-10)
    assert r.dual == pytest.approx(-lam * J, rel=1e-10)
    assert r.info["lambda_joker"] == pytest.approx(lam_j)


# -- dual terms ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,params,task", [
    ("square", {}, "real"), ("huber", {"delta": 0.5}, "real"), ("absolute", {}, "real"), ("lp", {"p": 1.5}, "real"),
    ("lp", {"p": 3.0}, "real"), ("epsilon_insensitive", {"epsilon": 0.2}, "real"), ("quantile", {"tau": 0.3}, "real"),
    ("hinge", {}, "binary"), ("squared_hinge", {}, "binary"), ("logistic", {}, "binary")])
def test_dual_terms_match_finite_differences_and_the_box(name, params, task):
    loss = registry().get("loss", name)(**params)
    _, y = _data(n=40, task=task)
    lam_j = 0.7
    t = DualTerms(loss, y, lam_j, np.float64)
    idx = np.arange(40)
    lo, hi = t.box(idx)
    assert np.all(lo < hi)
    assert np.all(np.isfinite(t.values(np.clip(0.0, lo, hi), idx)))  # the start point is feasible
    # interior points away from the kink at 0
    rng = np.random.default_rng(1)
    w = rng.uniform(0.2, 0.8, 40)
    with np.errstate(invalid="ignore"):  # inf - inf in the branches np.where discards
        a = np.where(np.isfinite(lo) & np.isfinite(hi), lo + w * (hi - lo), np.where(np.isfinite(lo), lo + w, np.where(
            np.isfinite(hi), hi - w, w - 0.5)))
    a = np.where(np.abs(a) < 1e-3, 0.05, a)
    h = 1e-6
    fd = (t.values(a + h, idx) - t.values(a - h, idx)) / (2 * h)
    kink = t.kink * np.sign(a)
    np.testing.assert_allclose(t.grad(a, idx) + kink, fd, rtol=1e-5, atol=1e-6)
    if not np.isfinite(t.hess_cap):
        fd2 = (t.grad(a + h, idx) - t.grad(a - h, idx)) / (2 * h)
        np.testing.assert_allclose(t.hess(a, idx), fd2, rtol=1e-4, atol=1e-5)


def test_klr_box_margin_and_hessian_cap_follow_papers_004():
    """α̂ = yα ∈ [ε, 1/λ_J − ε], ε the float spacing at 1/λ_J; the Hessian diagonal capped at ε^(−1/2)."""
    loss = registry().get("loss", "logistic")()
    y = np.array([1.0, -1.0, 1.0])
    lam_j = 2.0 ** -7
    for dtype in (np.float32, np.float64):
        t = DualTerms(loss, y, lam_j, dtype)
        eps = float(dtype(128.0) - np.nextafter(dtype(128.0), dtype(0)))
        assert t.margin == eps and t.margin_needed
        lo, hi = t.box(np.arange(3))
        np.testing.assert_allclose(y * np.where(y > 0, lo, hi), eps, rtol=1e-6)
        np.testing.assert_allclose(y * np.where(y > 0, hi, lo), 128.0 - eps, rtol=1e-12)
        assert t.hess(y * eps, np.arange(3)).max() == pytest.approx(eps ** -0.5)
    # no margin for the losses whose conjugate slope stays finite
    assert not DualTerms(registry().get("loss", "hinge")(), y, lam_j).margin_needed


def test_svr_kink_is_read_off_the_conjugate():
    loss = registry().get("loss", "epsilon_insensitive")(epsilon=0.25)
    t = DualTerms(loss, np.array([0.3, -1.0, 2.0]), 0.5)
    assert t.kink == pytest.approx(0.25, rel=1e-6)
    assert DualTerms(registry().get("loss", "square")(), np.array([0.3, 1.0]), 0.5).kink == 0.0


# -- trust region -------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(0, 10_000), st.floats(0.05, 5.0))
def test_steihaug_stays_in_the_region_and_box_and_decreases_the_model(seed, radius):
    rng = np.random.default_rng(seed)
    m = 12
    A = rng.standard_normal((m, m))
    Q = A @ A.T / m + 0.01 * np.eye(m)
    g = rng.standard_normal(m)
    lo, hi = -rng.uniform(0, 1, m), rng.uniform(0, 1, m)
    s, _, _ = steihaug(Q, g, lo, hi, radius, 50, 1e-10, np)
    assert np.linalg.norm(s) <= radius * (1 + 1e-12)
    assert np.all(s >= lo) and np.all(s <= hi)
    assert g @ s + 0.5 * s @ Q @ s <= 0


@settings(max_examples=15, deadline=None, derandomize=True)
@given(st.integers(0, 10_000))
def test_block_solve_meets_the_kkt_conditions_of_a_box_qp(seed):
    """Huber's block problem is a box QP: at the answer the projected gradient vanishes."""
    rng = np.random.default_rng(seed)
    m = 30
    X = rng.standard_normal((m, 2))
    K = _gram(X)
    y = rng.standard_normal(m)
    t = DualTerms(registry().get("loss", "huber")(delta=0.3), y, 0.5, np.float64)
    idx = np.arange(m)
    gbar = rng.standard_normal(m)
    r = solve_block(K, gbar, np.zeros(m), t, idx, inner_tol=1e-12, max_steps=200)
    lo, hi = t.box(idx)
    G = gbar + K @ r.a + t.grad(r.a, idx)
    pg = np.where((r.a <= lo) & (G > 0), 0, np.where((r.a >= hi) & (G < 0), 0, G))
    assert np.abs(pg).max() <= 1e-7 * max(1.0, np.abs(gbar).max())
    assert r.decrease > 0


# -- closed forms and peers ---------------------------------------------------------------------------


@pytest.mark.slow
def test_features_mode_solves_krr_on_the_random_feature_kernel():
    """Inexact Joker: θ = Σ α_i ψ(x_i) with ψ = φ/√M; the answer is KRR with K = ψψᵀ."""
    X, y = _data(n=200)
    lam = 2e-2
    spec = _spec({"name": "square"}, lam=lam, mode="features", batch_size=100, tol=1e-12,
                 features={"count": 512, "block_size": 256})
    r = _solve(spec, (X, y))
    from kopt.running.assemble import assemble

    problem = assemble(kopt.load_spec(spec, check_files=False), (X, y))
    fmap = problem.feature_map(512)
    Psi = fmap.transform(problem.X) / np.sqrt(fmap.count)
    a = np.linalg.solve(Psi @ Psi.T + lam * X.shape[0] * np.eye(X.shape[0]), y)
    f = Psi @ (Psi.T @ a)
    assert r.info["mode"] == "features" and r.info["n_features"] == 512
    np.testing.assert_allclose(r.model.decision_function(X), f, rtol=1e-6, atol=1e-6 * np.abs(f).max())


@pytest.mark.slow
def test_kernel_ridge_peer():
    """scikit-learn KernelRidge(alpha = λn) solves the same problem (no intercept on either side)."""
    KernelRidge = pytest.importorskip("sklearn.kernel_ridge").KernelRidge
    X, y = _data(n=200, seed=3)
    lam = 2e-2
    r = _solve(_spec({"name": "square"}, lam=lam, batch_size=100, tol=1e-12), (X, y))
    kr = KernelRidge(alpha=lam * X.shape[0], kernel="rbf", gamma=0.5 / SIGMA**2).fit(X, y)
    Xt = np.random.default_rng(9).standard_normal((50, 3))
    np.testing.assert_allclose(r.model.decision_function(Xt), kr.predict(Xt), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_hinge_matches_svc_when_the_intercept_vanishes():
    """L1-SVC: C = 1/(λn).  SVC adds an intercept b (and Σ y_i α_i = 0); on data closed under
    (x, y) → (−x, −y) with an even kernel the optimal b is 0, so both problems coincide."""
    SVC = pytest.importorskip("sklearn.svm").SVC
    X, y = _data(n=60, seed=4, task="binary")
    X, y = np.vstack([X, -X]), np.concatenate([y, -y])
    lam = 2e-3
    r = _solve(_spec({"name": "hinge"}, lam=lam, batch_size=40, tol=1e-7, iterations=6000), (X, y))
    svc = SVC(C=1.0 / (lam * X.shape[0]), kernel="rbf", gamma=0.5 / SIGMA**2, tol=1e-10).fit(X, y)
    assert abs(svc.intercept_[0]) < 1e-5
    Xt = np.random.default_rng(5).standard_normal((40, 3))
    np.testing.assert_allclose(r.model.decision_function(Xt), svc.decision_function(Xt), rtol=1e-4, atol=1e-4)
    assert r.success and r.info["rel_gap"] <= 1e-7


@pytest.mark.slow
@pytest.mark.parametrize("name,params,task,tol", [
    ("huber", {"delta": 0.3}, "real", 1e-8), ("squared_hinge", {}, "binary", 1e-8), ("logistic", {}, "binary", 1e-8),
    ("epsilon_insensitive", {"epsilon": 0.2}, "real", 1e-5), ("lp", {"p": 3.0}, "real", 1e-8),
    ("absolute", {}, "real", 1e-5)])
def test_gap_is_certified_by_the_core_objectives(name, params, task, tol):
    """The solver's gap agrees with kopt.numerics.objectives on the model it returns, and meets tol."""
    X, y = _data(n=160, task=task, seed=6)
    lam = 2e-3
    r = _solve(_spec({"name": name, **params}, lam=lam, tol=tol, iterations=4000), (X, y))
    loss = registry().get("loss", name)(**params)
    P, gap = _certified_gap(loss, X, y, _alpha(r, X), lam)
    assert r.success and r.info["rel_gap"] <= tol
    assert gap / abs(P) <= 1.5 * tol
    assert gap == pytest.approx(r.gap, rel=1e-3, abs=1e-12 * abs(P))


@pytest.mark.slow
def test_one_vs_rest_equals_separate_binary_problems():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((150, 3))
    cls = np.argmax(X @ rng.standard_normal((3, 3)) + 0.3 * rng.standard_normal((150, 3)), axis=1)
    labels = np.array([10, 20, 30])[cls]
    spec = _spec({"name": "squared_hinge"}, tol=0.0, iterations=40, selection="random")
    r = _solve(spec, (X, labels, X[:50], labels[:50]))
    assert r.info["one_vs_rest"] and set(r.model.predict(X[:20])) <= {10, 20, 30}
    assert r.metrics["accuracy"] > 0.8
    S = r.model.decision_function(X)
    for c, v in enumerate([10, 20, 30]):
        rb = _solve(spec, (X, np.where(labels == v, 1.0, -1.0)))
        np.testing.assert_allclose(S[:, c], rb.model.decision_function(X), rtol=1e-9, atol=1e-9)


# -- run machinery --------------------------------------------------------------------------------------



@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exact", "features"])
def test_resume_is_bit_identical(tmp_path, mode):
    X, y = _data(n=200, task="binary")
    solver = {"mode": mode, "batch_size": 32, "iterations": 17, "tol": 0.0, "check_every": 4,
              "selection": "random"}
    loss = {"name": "logistic"}
    full = _solve(_spec(loss, out=tmp_path / "full", features={"count": 256}, **solver), (X, y))
    spec = _spec(loss, out=tmp_path / "cut", features={"count": 256}, **solver)
    spec["output"]["checkpoint_every"] = 5
    reg = registry()
    reg.pm.register(_StopAt(11), name="joker-stopper")
    try:
        with pytest.raises(KeyboardInterrupt):
            _solve(spec, (X, y))
    finally:
        reg.pm.unregister(name="joker-stopper")
    assert json.loads((tmp_path / "cut" / "checkpoint.json").read_text())["iteration"] == 11
    resumed = _solve(spec, (X, y), resume=True)
    a, b = full.model.predictor.arrays, resumed.model.predictor.arrays
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert resumed.objective == full.objective and resumed.gap == full.gap and resumed.n_iter == 17
    assert [t.get("dual") for t in resumed.trace] == [t.get("dual") for t in full.trace]


def test_reports_dual_every_iteration_and_gap_at_checks():
    X, y = _data(n=128)
    r = _solve(_spec({"name": "huber"}, batch_size=32, iterations=12, tol=0.0, check_every=5, holdout_every=0), (X, y))
    assert [t["iteration"] for t in r.trace] == list(range(1, 13))
    assert all("dual" in t for t in r.trace)
    assert [t["iteration"] for t in r.trace if "gap" in t] == [5, 10, 12]
    duals = [t["dual"] for t in r.trace]
    assert all(b >= a - 1e-12 * abs(a) for a, b in zip(duals, duals[1:]))  # block steps never lower the dual


def test_check_rows_estimate_the_gap(tmp_path):
    X, y = _data(n=400)
    spec = _spec({"name": "square"}, batch_size=100, iterations=6, tol=0.0)
    full = _solve(spec, (X, y))
    est = _solve({**spec, "solver": {**spec["solver"], "check_rows": 100}}, (X, y))
    assert est.info["check_rows"] == 100 and full.info["check_rows"] == 400
    assert est.dual == full.dual
    assert est.gap == pytest.approx(full.gap, rel=0.3)


@pytest.mark.parametrize("solver,model,match", [
    ({"mode": "features", "selection": "greedy"}, {}, "greedy"),
    ({"mode": "features"}, {"kernel": {"name": "linear"}}, "random-feature"),
    ({}, {"regularizer": {"name": "l1", "lambda": 0.1}}, "l2"),
    ({}, {"regularizer": {"name": "l2", "lambda": 0.0}}, "lambda > 0"),
    ({}, {"form": "primal"}, "dual"),
    ({}, {"loss": {"name": "softmax"}}, "multiclass"),
])
def test_spec_errors(solver, model, match):
    spec = _spec({"name": "square"}, **solver)
    spec["model"].update(model)
    with pytest.raises(SpecError, match=match):
        kopt.load_spec(spec, check_files=False)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exact", "features"])
def test_backends_agree(xp, mode):
    """The same spec on NumPy and (with a GPU) CuPy: the same dual, gap and predictions."""
    X, y = _data(n=160, task="binary")
    base = _spec({"name": "logistic"}, mode=mode, batch_size=40, iterations=20, tol=0.0, selection="random",
                 features={"count": 256})
    ref = _solve(base, (X, y))
    other = _solve({**base, "backend": "cupy" if xp is not np else "numpy"}, (X, y))
    if xp is np:  # the same backend: the same numbers
        assert other.dual == pytest.approx(ref.dual, rel=1e-9)
        assert other.gap == pytest.approx(ref.gap, rel=1e-6, abs=1e-12)
        np.testing.assert_allclose(other.model.decision_function(X), ref.model.decision_function(X), rtol=1e-7,
                                   atol=1e-9)
    else:  # float32 features and kernels summed in another order (cuBLAS, CUDA's cos): float32 rounding
        assert other.dual == pytest.approx(ref.dual, rel=2.0 ** -16)
        assert other.gap == pytest.approx(ref.gap, rel=1e-2, abs=1e-6)
        np.testing.assert_allclose(other.model.decision_function(X), ref.model.decision_function(X), rtol=1e-4,
                                   atol=1e-5)


@pytest.mark.slow
def test_exact_model_kernel_reaches_the_random_feature_solution():
    """model_kernel: exact changes the trust-region model only: the answer is the features problem's."""
    X, y = _data(n=150, task="binary")
    base = _spec({"name": "squared_hinge"}, lam=1e-2, mode="features", batch_size=50, tol=1e-10, iterations=2000,
                 selection="random", features={"count": 512})
    a = _solve(base, (X, y))
    b = _solve({**base, "solver": {**base["solver"], "model_kernel": "exact"}}, (X, y))
    assert a.success and b.success
    np.testing.assert_allclose(b.model.decision_function(X), a.model.decision_function(X), rtol=1e-4, atol=1e-4)
