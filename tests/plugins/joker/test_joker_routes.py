"""Joker's routes (docs/joker.md, 'Routes'): the primal Newton route on random features, mode auto,
the certificate's sign check, and the trust-region radius rule."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import smooth_rows

import kopt
from kopt.contract.hookspecs import hookimpl
from kopt.contract.registry import registry
from kopt.errors import KoptError, SpecError
from kopt.running.assemble import assemble
from kopt.testing import check_resume
from kopt_plugins.joker.trust_region import solve_block, update_radius
from kopt_plugins.losses.regression import SquareLoss

SIGMA = 1.5


def _data(n=400, d=3, seed=0, task="binary"):
    return smooth_rows(n, d, seed, task)


def _spec(loss, *, lam=1e-3, count=128, **solver):
    return {"data": {"standardize": False},
            "model": {"loss": loss, "kernel": {"name": "gaussian", "bandwidth": SIGMA},
                      "regularizer": {"name": "l2", "lambda": lam}, "form": "dual",
                      "features": {"count": count, "block_size": 64, "dtype": "float64"}},
            "solver": {"name": "joker", "mode": "primal", "iterations": 50, "tol": 1e-10, **solver},
            "backend": "numpy", "output": {"model": False, "report": False}}


def _solve(spec, data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kopt.solve(spec, data=data, **kw)


def test_primal_route_solves_krr_on_the_random_features_in_one_step():
    X, y = _data(task="real")
    lam = 2e-2
    spec = _spec({"name": "square"}, lam=lam)
    r = _solve(spec, (X, y))
    problem = assemble(kopt.load_spec(spec, check_files=False), (X, y))
    fmap = problem.feature_map()
    Psi = fmap.transform(problem.X) / np.sqrt(fmap.count)
    theta = np.linalg.solve(Psi.T @ Psi + lam * X.shape[0] * np.eye(fmap.count), Psi.T @ y)
    assert r.info["mode"] == "primal" and r.success
    assert r.n_iter <= 2  # Newton on a quadratic: the first step is the solution
    np.testing.assert_allclose(r.model.decision_function(X), Psi @ theta, rtol=1e-7, atol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("loss", [{"name": "huber", "target": "binary"}, {"name": "squared_hinge"},
                                  {"name": "logistic"}])
def test_primal_and_dual_routes_reach_the_same_certified_answer(loss):
    X, y = _data()
    primal = _solve(_spec(loss), (X, y))
    dual = _solve(_spec(loss, mode="features", batch_size=100, iterations=4000, tol=1e-9), (X, y))
    assert primal.info["mode"] == "primal" and dual.info["mode"] == "features"
    assert primal.success and primal.info["rel_gap"] <= 1e-10 and primal.gap >= -1e-12
    assert primal.objective == pytest.approx(dual.objective, rel=1e-7)
    f_p, f_d = primal.model.decision_function(X), dual.model.decision_function(X)
    np.testing.assert_allclose(f_p, f_d, rtol=1e-4, atol=1e-4 * np.abs(f_d).max())


def test_primal_route_on_one_vs_rest_labels():
    X, _ = _data(n=300)
    y = np.digitize(X[:, 0], [-0.5, 0.5])  # three classes
    r = _solve(_spec({"name": "squared_hinge"}), (X, y))
    assert r.info["mode"] == "primal" and r.info["one_vs_rest"] and r.success
    assert r.model.decision_function(X).shape == (300, 3)


def test_primal_resume_is_bit_identical(tmp_path):
    X, y = _data()
    spec = _spec({"name": "logistic"}, tol=0.0, iterations=6)
    full, resumed = check_resume(spec, (X, y), stop_at=3, out_dir=tmp_path)
    assert resumed.objective == full.objective and resumed.gap == full.gap


@pytest.mark.slow
def test_mode_auto_picks_the_route_and_says_so():
    X, y = _data(n=600)
    exact = _solve(_spec({"name": "squared_hinge"}, mode="auto", count=128, tol=1e-3), (X, y))
    smooth = _solve(_spec({"name": "squared_hinge"}, mode="auto", count=128, auto_exact_rows=500), (X, y))
    nonsmooth = _solve(_spec({"name": "hinge"}, mode="auto", count=128, tol=1e-3, auto_exact_rows=500), (X, y))
    few_rows = _solve(_spec({"name": "squared_hinge"}, mode="auto", count=512, tol=1e-3, auto_exact_rows=500),
                      (X, y))
    assert exact.info["mode"] == "exact"  # the exact kernel while it is affordable: auto never changes the model
    assert smooth.info["mode"] == "primal"  # random features, n >= 2M and a Lipschitz gradient
    assert nonsmooth.info["mode"] == "features"  # hinge has no Newton route: the dual blocks
    assert few_rows.info["mode"] == "features"  # n < 2M: the dual is the smaller problem


def test_primal_mode_refuses_a_nonsmooth_loss_before_reading_data():
    with pytest.raises(SpecError, match="mode 'primal' needs a loss with a Lipschitz gradient"):
        kopt.load_spec(_spec({"name": "hinge"}), check_files=False)


class _WrongConjugate(SquareLoss):
    """The square loss with a conjugate 1 too low: its dual overshoots the primal."""

    name = "square_wrong_conjugate"

    def conj(self, v, y):
        return super().conj(v, y) - 1.0


class _Plugin:
    @hookimpl
    def kopt_register_losses(self, register):
        register(_WrongConjugate)


def test_a_negative_duality_gap_is_an_error_naming_the_loss():
    reg = registry()
    name = reg.register_plugin(_Plugin(), name="wrong-conjugate")
    try:
        X, y = _data(task="real")
        with pytest.raises(KoptError, match="duality gap is negative.*square_wrong_conjugate"):
            _solve(_spec({"name": "square_wrong_conjugate"}, mode="exact", batch_size=100, tol=1e-3), (X, y))
    finally:
        reg.unregister_plugin(name)


def test_the_radius_rule_of_papers_004():
    assert update_radius(1.0, 0.4, 0.5, False, 8.0) == pytest.approx(0.125)  # ρ < ½: ¼ min(Δ, ‖s‖)
    assert update_radius(1.0, 0.4, 1.0, True, 8.0) == pytest.approx(0.25)
    assert update_radius(1.0, 0.9, 1.0, True, 8.0) == 2.0  # ρ > ¾ on the boundary: doubled
    assert update_radius(4.0, 0.9, 4.0, True, 5.0) == 5.0  # ... up to Δmax
    assert update_radius(1.0, 0.9, 0.5, False, 8.0) == 1.0  # inside the region: unchanged
    assert update_radius(1.0, 0.6, 1.0, True, 8.0) == 1.0  # ½ ≤ ρ ≤ ¾: unchanged


def test_the_block_solver_uses_the_radius_rule(monkeypatch):
    """solve_block takes every radius from update_radius (a spy records what it was told and returned)."""
    from kopt_plugins.joker import trust_region
    from kopt_plugins.joker.dualterms import DualTerms
    from kopt_plugins.losses.classification import LogisticLoss

    rng = np.random.default_rng(0)
    m = 40
    A = rng.standard_normal((m, m))
    K = A @ A.T / m + 0.1 * np.eye(m)
    y = np.where(rng.standard_normal(m) > 0, 1.0, -1.0)
    terms = DualTerms(LogisticLoss(), y, lam_j=5.0, dtype=np.float64)
    idx = np.arange(m)
    a0 = terms.project(np.zeros(m), idx)
    gbar = K @ a0 + 100.0 * rng.standard_normal(m)
    calls = []

    def spy(radius, rho, snorm, on_boundary, max_radius):
        out = update_radius(radius, rho, snorm, on_boundary, max_radius)
        calls.append((radius, rho, out))
        return out

    monkeypatch.setattr(trust_region, "update_radius", spy)
    res = solve_block(K, gbar, a0, terms, idx, max_steps=60, newton=False, max_radius=10.0)
    assert res.accepted < res.tr_steps and len(calls) >= res.tr_steps - 1
    assert any(rho < 0.5 and out < radius for radius, rho, out in calls)  # a poor step shrank the region
    assert calls[0][0] == pytest.approx(2.5)  # Δ0 = Δmax/4 (Zhang & Lai 2025, Alg. 1 line 2)


# -- Nyström features -----------------------------------------------------------------------------------
def _nystrom(loss, **solver):
    spec = _spec(loss, count=60, **solver)
    spec["model"]["features"] = {"kind": "nystrom", "count": 60, "dtype": "float64"}
    return spec


def test_nystrom_krr_is_the_kernel_problem_on_the_span_of_the_centers():
    """f = K_XC w with w minimising ½wᵀK_CC w + (1/2λ_J)‖y − K_XC w‖² (the closed form)."""
    from kopt.nystrom.centers import choose_centers

    X, y = _data(n=300, task="real")
    lam = 1e-2
    spec = _nystrom({"name": "square"}, lam=lam)
    r = _solve(spec, (X, y))
    problem = assemble(kopt.load_spec(spec, check_files=False), (X, y))
    C = problem.X[choose_centers(problem, 60)]
    k = registry().get("kernel", "gaussian")(bandwidth=SIGMA)
    Kxc, Kcc = k.exact(problem.X, C), k.exact(C, C)
    lam_j = lam * X.shape[0]
    w = np.linalg.lstsq(lam_j * Kcc + Kxc.T @ Kxc, Kxc.T @ y, rcond=None)[0]
    assert r.info["mode"] == "primal" and r.info["features"] == "nystrom" and r.success
    assert r.model.predictor.name == "kernel_expansion" and r.model.predictor.arrays["support"].shape == (60, 3)
    np.testing.assert_allclose(r.model.decision_function(X), Kxc @ w, rtol=1e-6, atol=1e-6 * np.abs(Kxc @ w).max())


def test_nystrom_centers_are_distinct_seeded_training_rows():
    from kopt.nystrom.centers import choose_centers

    X, y = _data(n=200)
    X = np.vstack([X, X[:100]])  # repeated rows: a repeated center would make K_CC singular
    y = np.concatenate([y, y[:100]])
    p1 = assemble(kopt.load_spec(_nystrom({"name": "logistic"}), check_files=False), (X, y))
    idx = choose_centers(p1, 150)
    assert len(np.unique(p1.X[idx], axis=0)) == 150 and np.array_equal(idx, choose_centers(p1, 150))
    r = _solve(_nystrom({"name": "logistic"}, tol=1e-9), (X, y))
    assert r.success and r.info["rel_gap"] <= 1e-9


def test_nystrom_needs_the_primal_route_and_a_solver_that_handles_it():
    with pytest.raises(SpecError, match="Nystrom features need the primal route"):
        kopt.load_spec(_nystrom({"name": "hinge"}, mode="auto"), check_files=False)
    with pytest.raises(SpecError, match="does not use them"):
        kopt.load_spec(_nystrom({"name": "square"}, mode="features"), check_files=False)
    dsg = _nystrom({"name": "square"})
    dsg["model"]["form"] = "primal"
    dsg["solver"] = {"name": "dsg"}
    with pytest.raises(SpecError, match="handles features of kind random, not 'nystrom'"):
        kopt.load_spec(dsg, check_files=False)


def test_nystrom_on_sparse_rows_and_one_vs_rest():
    import scipy.sparse as sp

    X, _ = _data(n=300)
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    dense = _solve(_nystrom({"name": "squared_hinge"}, tol=1e-8), (X, y))
    sparse = _solve(_nystrom({"name": "squared_hinge"}, tol=1e-8), (sp.csr_matrix(X), y))
    assert dense.info["one_vs_rest"] and dense.model.decision_function(X).shape == (300, 3)
    np.testing.assert_allclose(sparse.model.decision_function(X), dense.model.decision_function(X), rtol=1e-6, atol=1e-8)


def test_the_warm_start_reaches_the_same_certified_answer_with_a_smaller_gram():
    """Squared hinge, n >= 8M: a seeded fifth of the rows first, then the full problem on its active rows."""
    X, y = _data(n=1600)
    warm = _solve(_spec({"name": "squared_hinge"}, count=128, tol=1e-9), (X, y))
    cold = _solve(_spec({"name": "squared_hinge"}, count=128, tol=1e-9, primal_warm_start=False), (X, y))
    assert warm.info["warm_start_rows"] == max(4 * 128, 1600 // 5) and cold.info["warm_start_rows"] == 0
    assert warm.success and cold.success
    assert warm.objective == pytest.approx(cold.objective, rel=1e-8)
    np.testing.assert_allclose(warm.model.decision_function(X), cold.model.decision_function(X), rtol=1e-5, atol=1e-6)
