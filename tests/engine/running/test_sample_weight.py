"""Sample weights in the core: validation, the solver capability, krr_exact's closed form, DSG's terms."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import kopt
from kopt.contract.registry import registry
from kopt.data.preprocess import Preprocessor, column_stats, weighted_column_stats
from kopt.errors import DataError, SpecError
from kopt.numerics.objectives import dual, primal
from kopt.running.assemble import assemble, check_sample_weight

SIGMA = 1.3


def _data(n=50, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(n)


def _krr(lam=1e-2, standardize=False, **extra):
    return {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": SIGMA},
                      "regularizer": {"name": "l2", "lambda": lam}, "features": {"dtype": "float64"}},
            "solver": {"name": "krr_exact"}, "backend": "numpy", "data": {"standardize": standardize, **extra}}


def _gram(X, Y):
    d2 = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * SIGMA**2))


# -- validation and the capability -----------------------------------------------------------------

@pytest.mark.parametrize("w,match", [
    ([1.0, -1.0, 1.0], "must be >= 0; row 1 has -1.0"), ([1.0, np.nan, 1.0], "1 non-finite values"),
    ([0.0, 0.0, 0.0], "zero for every row"), ([1.0, 1.0], r"shape \(2,\); it needs one weight per training row"),
    ([[1.0, 1.0, 1.0]], r"shape \(1, 3\)"), (["a", "b", "c"], "must be numbers"),
])
def test_weights_are_validated(w, match):
    with pytest.raises(DataError, match=match):
        check_sample_weight(np.asarray(w), 3)


def test_solvers_without_the_capability_refuse_weights_naming_those_that_take_them():
    X, y = _data()
    spec = {**_krr(), "solver": {"name": "gp"}, "model": {**_krr()["model"], "form": "gp"}}
    with pytest.raises(SpecError) as exc:
        kopt.solve(spec, data=(X, y), sample_weight=np.ones(len(X)))
    assert exc.value.path == "$.solver.name"
    ok = [n for n in registry().names("solver") if registry().get("solver", n).sample_weight]
    assert ok == ["auto", "cdsg", "dsg", "joker", "krr_exact", "krr_nystrom", "krr_pairs", "krr_pcg", "newton_pcg", "svm_nystrom",
                  "udsg"]
    assert f"solvers that do: {', '.join(ok)}" in str(exc.value)
    assert not registry().get("solver", "gp").sample_weight


def test_weights_need_arrays():
    with pytest.raises(DataError, match="data=\\(X, y, ...\\)"):
        assemble(kopt.load_spec({**_krr(), "data": {"train": "x.csv"}}, check_files=False), None,
                 sample_weight=np.ones(3))


# -- krr_exact: the weighted closed form ------------------------------------------------------------

def test_weighted_krr_is_the_closed_form():
    X, y = _data()
    n, lam = len(X), 1e-2
    w = np.random.default_rng(1).uniform(0.2, 3.0, n)
    r = kopt.solve(_krr(lam), data=(X, y), sample_weight=w)
    wn = w * n / w.sum()  # normalised to mean 1
    alpha = np.linalg.solve(_gram(X, X) + n * lam * np.diag(1 / wn), y)  # (K + nλW⁻¹)α = y
    Xt = np.random.default_rng(2).standard_normal((20, 3))
    np.testing.assert_allclose(r.model.predict(Xt), _gram(Xt, X) @ alpha, rtol=1e-9, atol=1e-11)
    assert abs(r.gap) <= 1e-10 * abs(r.objective)  # the weighted primal and dual agree at the optimum
    # the reported objective is λ/2‖f‖² + Σ w ℓ / Σ w
    f = _gram(X, X) @ alpha
    P = 0.5 * lam * alpha @ f + np.sum(w * 0.5 * (y - f) ** 2) / w.sum()
    assert r.objective == pytest.approx(P, rel=1e-10)
    assert r.report["data"]["sample_weight"] is True


def test_integer_weights_repeat_rows_and_zero_weights_drop_them():
    X, y = _data()
    w = np.random.default_rng(3).integers(0, 4, len(X)).astype(float)
    spec = _krr(standardize=True, standardize_target=True)  # weighted statistics: the same standardisation
    r = kopt.solve(spec, data=(X, y), sample_weight=w)
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    r_rep = kopt.solve(spec, data=(X[rep], y[rep]))
    Xt = np.random.default_rng(4).standard_normal((15, 3))
    np.testing.assert_allclose(r.model.predict(Xt), r_rep.model.predict(Xt), rtol=1e-9, atol=1e-12)
    assert r.objective == pytest.approx(r_rep.objective, rel=1e-9)
    assert r.report["data"]["n_train"] == int((w > 0).sum())  # rows of weight 0 are left out


def test_weighted_dual_is_below_the_primal_and_a_zero_weight_row_needs_alpha_zero():
    loss = registry().get("loss", "square")()
    rng = np.random.default_rng(5)
    X, y = _data(n=30)
    K = _gram(X, X)
    w = rng.uniform(0.0, 2.0, 30)
    w[3] = 0.0
    for _ in range(20):
        a = rng.standard_normal(30) * 0.1
        a[3] = 0.0
        f = K @ a
        assert primal(loss, y, f, 0.1, a @ f, w) >= dual(loss, y, a, 0.1, a @ f, w) - 1e-12
    a[3] = 0.5
    assert dual(loss, y, a, 0.1, a @ K @ a, w) == -np.inf


# -- the DSG family ------------------------------------------------------------------------------

def _dsg_spec(solver="dsg", loss="square", iterations=40, **options):
    return {"model": {"loss": {"name": loss}, "kernel": {"name": "gaussian", "bandwidth": SIGMA},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "features": {"block_size": 32}},
            "solver": {"name": solver, "iterations": iterations, "batch_size": 8, "check_rows": 0, **options},
            "backend": "numpy"}


def test_dsg_terms_multiply_loss_and_gradient_by_the_weight():
    from kopt_plugins.dsg.objective import LossTerms

    X, y = _data()
    w = np.random.default_rng(6).uniform(0.5, 2.0, len(X))
    p = assemble(kopt.load_spec(_dsg_spec(), check_files=False), (X, y), sample_weight=w)
    terms = LossTerms(p)
    wn = w * len(w) / w.sum()
    rows = np.array([1, 4, 9, 16])
    u = np.linspace(-1, 1, 4)
    val, g = terms.value_and_grad(u, rows)
    yy = np.asarray(p.y)[rows]
    assert val == pytest.approx(np.mean(wn[rows] * 0.5 * (u - yy) ** 2), rel=1e-12)
    np.testing.assert_allclose(g, wn[rows] * (u - yy), rtol=1e-12)
    np.testing.assert_allclose(terms.grad(u, rows), g, rtol=0)
    assert terms.mean_value(u, rows) == pytest.approx(val, rel=1e-12)


def test_dsg_weights_multiply_the_two_sample_balance_weights():
    from kopt_plugins.dsg.objective import LossTerms

    X, _ = _data(n=40)
    z = np.r_[np.zeros(10), np.ones(30)]
    w = np.random.default_rng(7).uniform(0.5, 2.0, 40)
    p = assemble(kopt.load_spec(_dsg_spec(loss="kl_density_ratio"), check_files=False), (X, z), sample_weight=w)
    terms = LossTerms(p)
    balance = np.asarray(p.loss.balance_weights(p.y))
    np.testing.assert_allclose(terms.weights, balance * w * 40 / w.sum(), rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["dsg", "udsg", "cdsg"])
def test_dsg_check_objective_is_weighted(solver):
    X, y = _data()
    w = np.random.default_rng(8).uniform(0.2, 3.0, len(X))
    r = kopt.solve(_dsg_spec(solver), data=(X, y), sample_weight=w)
    # the check's objective: λ/2 N_t + Σ w ℓ / Σ w on every row (check_rows 0), N_t the solver's ‖f‖² estimate
    f = r.model.decision_function(X)
    P = 0.5 * 1e-3 * r.info["norm_sq_estimate"] + np.sum(w * 0.5 * (f - y) ** 2) / w.sum()
    assert r.objective == pytest.approx(P, rel=1e-6)


@pytest.mark.slow
def test_dsg_unit_weights_change_nothing():
    X, y = _data()
    a = kopt.solve(_dsg_spec(), data=(X, y))
    b = kopt.solve(_dsg_spec(), data=(X, y), sample_weight=np.full(len(X), 2.5))
    np.testing.assert_array_equal(a.model.decision_function(X), b.model.decision_function(X))


def test_dsg_weighted_novelty_offset_steps_with_weights():
    from kopt_plugins.dsg.objective import LossTerms

    X, _ = _data(n=20)
    spec = _dsg_spec(loss="novelty")
    w = np.r_[np.full(10, 3.0), np.ones(10)]
    p = assemble(kopt.load_spec(spec, check_files=False), (X, None), sample_weight=w)
    terms = LossTerms(p)
    u = np.r_[-np.ones(10), np.ones(10)]  # the first ten rows score below τ = 0
    rows = np.arange(20)
    g = np.asarray(p.loss.offset_grad(u, 0.0))
    terms.step_offset(u, 0.1, rows)
    assert terms.tau == pytest.approx(-0.1 * np.mean(g * w * 20 / w.sum()))


# -- weighted standardisation --------------------------------------------------------------------

@pytest.mark.parametrize("sparse", [False, True])
def test_weighted_statistics_equal_repeated_rows(sparse):
    rng = np.random.default_rng(9)
    X = rng.standard_normal((40, 5)) * [1, 2, 3, 4, 5] + [0, 1, 0, -1, 2]
    X[X < 0.3] = 0.0
    w = rng.integers(1, 4, 40)
    rep = np.repeat(np.arange(40), w)
    A = sp.csr_matrix(X) if sparse else X
    mean, std = weighted_column_stats(A, w.astype(float))
    m_ref, s_ref = column_stats(sp.csr_matrix(X[rep]) if sparse else X[rep])
    np.testing.assert_allclose(mean, m_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(std, s_ref, rtol=1e-10)
    y = rng.standard_normal(40)
    pre = Preprocessor.fit(X, y, "real", standardize_target=True, sample_weight=w.astype(float))
    ref = Preprocessor.fit(X[rep], y[rep], "real", standardize_target=True)
    assert pre.y_mean == pytest.approx(ref.y_mean, rel=1e-12) and pre.y_scale == pytest.approx(ref.y_scale, rel=1e-12)


# -- joker: row i gets its own λ_i = λ_J / w_i -------------------------------------------------------

def _joker(lam=1e-2, loss="square", **solver):
    spec = _krr(lam)
    spec["model"] = {**spec["model"], "loss": {"name": loss}, "form": "dual",
                     "features": {"count": 256, "block_size": 128, "dtype": "float64"}}
    spec["solver"] = {"name": "joker", "mode": "exact", "batch_size": 40, "iterations": 4000, "tol": 1e-12, **solver}
    return spec


@pytest.mark.slow
def test_weighted_joker_exact_is_the_weighted_krr_closed_form():
    X, y = _data()
    n, lam = len(X), 1e-2
    w = np.random.default_rng(1).uniform(0.2, 3.0, n)
    r = kopt.solve(_joker(lam), data=(X, y), sample_weight=w)
    wn = w * n / w.sum()
    alpha = np.linalg.solve(_gram(X, X) + n * lam * np.diag(1 / wn), y)
    Xt = np.random.default_rng(2).standard_normal((20, 3))
    f = _gram(X, X) @ alpha
    P = 0.5 * lam * alpha @ f + np.sum(wn * 0.5 * (y - f) ** 2) / n
    assert r.success and r.info["rel_gap"] <= 1e-12
    assert r.objective == pytest.approx(P, rel=1e-11)  # the weighted optimum, certified
    # the objective is flat near its optimum: a 1e-12 gap pins the predictions to ~1e-5
    np.testing.assert_allclose(r.model.predict(Xt), _gram(Xt, X) @ alpha, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["huber", "squared_hinge", "logistic"])
def test_weighted_joker_routes_agree(loss):
    """The dual blocks (per-row λ_i in the conjugate terms) and the primal Newton route (w_i on ℓ, ℓ', ℓ'')
    reach the same certified weighted optimum."""
    X, y = _data(n=300)
    if loss != "huber":
        y = np.where(y > np.median(y), 1.0, -1.0)
    w = np.random.default_rng(6).uniform(0.1, 4.0, len(X))
    spec = _joker(lam=3e-3, loss=loss)
    dual = kopt.solve({**spec, "solver": {**spec["solver"], "mode": "features", "tol": 1e-9}}, data=(X, y),
                      sample_weight=w)
    primal = kopt.solve({**spec, "solver": {**spec["solver"], "mode": "primal", "iterations": 50, "tol": 1e-10}},
                        data=(X, y), sample_weight=w)
    assert dual.success and primal.success and primal.gap >= -1e-10
    assert primal.objective == pytest.approx(dual.objective, rel=1e-7)
    np.testing.assert_allclose(primal.model.decision_function(X), dual.model.decision_function(X), rtol=1e-4,
                               atol=1e-4)


# -- data.held_out: seeded rows of weight 0, left in place ------------------------------------------

def _held(held, solver="krr_pcg", **extra):
    return {"name": "held", "seed": 2, "model": {"loss": {"name": "square", "target": "binary"},
                                                "kernel": {"name": "gaussian", "bandwidth": 1.0},
                                                "regularizer": {"name": "l2", "lambda": 1e-4},
                                                "features": {"kind": "nystrom", "count": 100}},
            "solver": {"name": solver, "tol": 1e-8, "iterations": 300}, "data": {"held_out": held, **extra},
            "output": {"model": False, "report": False, "plot": False}}


def _binary(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.sign(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n))
    return X, y, X[:200], y[:200]


def test_held_out_rows_have_no_say_in_the_model_and_are_the_seeded_split():
    """data.held_out gives make_splits(n, seed)'s held-out rows weight 0: flipping their labels changes no bit of the
    model, and the report counts them; the standardization still reads every row (they stay in place)."""
    from kopt.running.validation import make_splits

    X, y, Xt, yt = _binary()
    (_, held), = make_splits(len(y), 7, validation=300 / len(y))
    flipped = y.copy()
    flipped[held] = -flipped[held]
    a = kopt.solve(_held({"rows": 300, "seed": 7}), data=(X, y, Xt, yt))
    b = kopt.solve(_held({"rows": 300, "seed": 7}), data=(X, flipped, Xt, yt))
    everything = kopt.solve(_held(None), data=(X, y, Xt, yt))
    assert a.success and a.report["data"]["held_out_rows"] == 300 and everything.report["data"]["held_out_rows"] == 0
    np.testing.assert_array_equal(a.model.decision_function(Xt), b.model.decision_function(Xt))
    assert not np.allclose(a.model.decision_function(Xt), everything.model.decision_function(Xt))
    problem = assemble(kopt.load_spec(_held({"rows": 300})), data=(X, y, Xt, yt))
    w = np.asarray(problem.sample_weight)
    (_, seeded), = make_splits(len(y), 2, validation=300 / len(y))  # the seed defaults to the spec's
    assert np.all(w[seeded] == 0) and np.count_nonzero(w) == len(y) - 300 and w.mean() == pytest.approx(1.0)
    assert problem.preprocessor.mean == pytest.approx(X.mean(axis=0))


@pytest.mark.parametrize("held, solver, match", [
    ({"rows": 1200}, "krr_pcg", "holds out 1200 of the 1200 training rows and leaves 0 to fit; at least 2 must"),
    ({"rows": 1199}, "krr_pcg", "holds out 1199 of the 1200 training rows and leaves 1 to fit; at least 2 must"),
    ({"rows": 100}, "auto", "solver 'auto' holds out its own validation rows"),
    ({"rows": 100}, "gp", "data.held_out gives its rows weight 0, and solver 'gp' takes no row weights; solvers "
                          "that take data.held_out: cdsg, dsg, joker, krr_exact, krr_nystrom, krr_pairs, krr_pcg, "
                          "newton_pcg, svm_nystrom, udsg"),
])
def test_held_out_refuses_what_it_cannot_do_naming_the_key(held, solver, match):
    X, y, Xt, yt = _binary()
    spec = _held(held, solver)
    if solver == "gp":
        spec = {**_krr(), "solver": {"name": "gp"}, "data": {"held_out": held},
                "model": {**_krr()["model"], "form": "gp"}}
        y = X[:, 0]
    if solver == "auto":
        spec["solver"] = {"name": "auto"}
    with pytest.raises(SpecError, match=match) as exc:
        kopt.solve(spec, data=(X, y, Xt, yt))
    assert "held_out" in str(exc.value)
