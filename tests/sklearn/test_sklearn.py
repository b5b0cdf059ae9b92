"""kopt.sklearn: the estimators' contract, the spec round trip, the peers they replace."""
from __future__ import annotations

import pickle
import pickletools
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn", minversion="1.6")

import scipy.sparse as sp  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import kopt  # noqa: E402
from kopt.sklearn import GPRegressor, KernelClassifier, KernelRegressor, from_spec  # noqa: E402

SIGMA = 1.5


def _data(n=120, d=3, task="binary", seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    f = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]
    if task == "binary":
        return X, np.where(f + 0.2 * rng.standard_normal(n) > 0, 1, 0)
    if task == "multiclass":
        return X, np.argmax(X @ rng.standard_normal((d, 3)) + 0.2 * rng.standard_normal((n, 3)), axis=1)
    return X, f + 0.1 * rng.standard_normal(n)


# -- parameters and validation ------------------------------------------------------------------

def test_init_stores_and_fit_validates_with_the_spec_engines_message():
    est = KernelClassifier(lam=-1.0, backend="numpy")  # __init__ only stores
    assert est.get_params()["lam"] == -1.0
    X, y = _data()
    with pytest.raises(kopt.SpecError) as exc:
        est.fit(X, y)
    spec = est._spec_dict(output={"model": False, "report": False, "plot": False, "checkpoint_every": 0})
    with pytest.raises(kopt.SpecError) as cli:
        kopt.load_spec(spec, check_files=False)
    assert exc.value.detail == cli.value.detail  # the spec engine's sentence, in the estimator's words:
    assert str(exc.value).startswith("KernelClassifier: lam: ")  # the parameter, not the spec key
    assert "$.model.regularizer.lambda" in str(cli.value) and "$." not in str(exc.value)


def test_unknown_names_get_the_registered_names():
    X, y = _data()
    with pytest.raises(kopt.SpecError, match="registered kernels"):
        KernelClassifier(kernel="gausian", backend="numpy").fit(X, y)
    with pytest.raises(kopt.SpecError, match="classification loss"):
        KernelClassifier(loss="huber", loss_options={"target": "real"}, backend="numpy").fit(X, y)
    with pytest.raises(kopt.SpecError, match="regression loss"):
        KernelRegressor(loss="hinge", backend="numpy").fit(X, y.astype(float))


def test_get_set_params_clone_and_numpy_values_from_a_grid():
    est = KernelClassifier(lam=np.float64(1e-3), bandwidth=np.float32(2.0), random_state=np.int64(3), solver="joker",
                           solver_options={"iterations": np.int64(50)}, backend="numpy")
    twin = clone(est)
    assert twin.get_params() == est.get_params() and twin is not est
    X, y = _data()
    twin.set_params(lam=1e-2).fit(X, y)
    assert twin.spec_["model"]["regularizer"]["lambda"] == 1e-2 and twin.spec_["seed"] == 3
    assert est.fit(X, y).spec_["solver"]["iterations"] == 50  # NumPy scalars become plain values


def test_random_state_is_the_spec_seed():
    est = KernelClassifier(random_state=7)
    assert "seed: 7" in est.to_spec()
    assert "seed: 0" in KernelClassifier().to_spec()  # None: kopt's default seed
    a = KernelClassifier(random_state=np.random.RandomState(0))._spec_dict()["seed"]
    assert a == np.random.RandomState(0).randint(np.iinfo(np.int32).max)


# -- classification ---------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("labels", [["no", "yes"], [0, 1], [-1, 1], [2.0, 5.0], [True, False]])
def test_classes_are_the_users_labels(labels):
    X, y01 = _data()
    y = np.asarray(labels, dtype=object if isinstance(labels[0], str) else None)[y01]
    est = KernelClassifier(lam=1e-3, backend="numpy").fit(X, y)
    assert list(est.classes_) == sorted(set(labels))
    pred = est.predict(X)
    assert set(pred) <= set(labels) and est.score(X, y) > 0.85
    d = est.decision_function(X)
    assert d.shape == (len(X),)
    np.testing.assert_array_equal(pred, est.classes_[(d > 0).astype(int)])


@pytest.mark.slow
def test_multiclass_one_vs_rest_and_softmax():
    X, y = _data(n=150, task="multiclass")
    names = np.array(["ant", "bee", "cat"])[y]
    ovr = KernelClassifier(lam=1e-3, solver="joker", backend="numpy").fit(X, names)
    assert list(ovr.classes_) == ["ant", "bee", "cat"] and ovr.decision_function(X).shape == (150, 3)
    assert ovr.score(X, names) > 0.9 and ovr.solver_info_["one_vs_rest"]
    # the default on few rows: one-vs-one, each pair of classes its rows' exact KRR (plugins/auto/pairs.py); the
    # scores are the votes, one column per class
    default = KernelClassifier(backend="numpy").fit(X, names)
    assert default.route_ == "krr_pairs" and default.decision_function(X).shape == (150, 3)
    assert default.n_features_ == 150
    assert default.score(X, names) > 0.85 and list(default.classes_) == ["ant", "bee", "cat"]
    soft = KernelClassifier(loss="softmax", solver="dsg", lam=1e-3, features={"block_size": 64},
                            solver_options={"iterations": 300, "batch_size": 32, "step_size": 5.0},
                            backend="numpy").fit(X, names)
    P = soft.predict_proba(X)
    assert P.shape == (150, 3) and np.allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(soft.classes_[P.argmax(axis=1)], soft.predict(X))
    assert soft.score(X, names) > 0.7


def test_binary_only_solver_refuses_three_classes():
    X, y = _data(task="multiclass")
    with pytest.raises(ValueError, match="Only binary classification"):
        KernelClassifier(loss="logistic", solver="dsg", solver_options={"iterations": 5}).fit(X, y)


def test_predict_proba_logistic():
    X, y = _data()
    est = KernelClassifier(loss="logistic", lam=1e-3, backend="numpy").fit(X, y)
    P = est.predict_proba(X)
    f = est.decision_function(X)
    np.testing.assert_allclose(P[:, 1], 1 / (1 + np.exp(-f)), rtol=1e-12)
    np.testing.assert_allclose(np.log(P), est.predict_log_proba(X), rtol=1e-10)
    X3, y3 = _data(n=150, task="multiclass")
    P3 = KernelClassifier(loss="logistic", lam=1e-3, backend="numpy").fit(X3, y3).predict_proba(X3)
    assert np.allclose(P3.sum(axis=1), 1.0)
    assert hasattr(KernelClassifier(loss="hinge"), "predict_proba")  # every classification loss: calibrated margins


def test_one_class_is_refused():
    X, _ = _data()
    with pytest.raises(ValueError, match="two classes"):
        KernelClassifier().fit(X, np.ones(len(X)))


@pytest.mark.slow
def test_sparse_input_matches_dense_for_a_shift_invariant_kernel():
    X, y = _data(n=100, d=6)
    X[np.abs(X) < 0.8] = 0.0
    kw = dict(lam=1e-3, bandwidth=SIGMA, standardize=False, features={"dtype": "float64"}, backend="numpy")
    dense = KernelClassifier(**kw).fit(X, y)
    sparse = KernelClassifier(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X)), dense.decision_function(X), atol=1e-9)
    gp = GPRegressor(iterations=20, batch_size=8, backend="numpy").fit(sp.csr_matrix(X), y.astype(float))
    assert gp.predict(sp.csr_matrix(X), return_std=True)[1].shape == (100,)


# -- regression and the peers --------------------------------------------------------------------

def test_krr_exact_equals_kernel_ridge_alpha_lambda_n():
    from sklearn.kernel_ridge import KernelRidge

    X, y = _data(task="real")
    lam = 1e-2
    est = KernelRegressor(solver="krr_exact", lam=lam, bandwidth=SIGMA, standardize=False,
                          features={"dtype": "float64"}, backend="numpy").fit(X, y)
    kr = KernelRidge(alpha=lam * len(X), kernel="rbf", gamma=1 / (2 * SIGMA**2)).fit(X, y)
    Xt = np.random.default_rng(1).standard_normal((30, 3))
    np.testing.assert_allclose(est.predict(Xt), kr.predict(Xt), rtol=1e-9, atol=1e-10)
    # with sample weights: KernelRidge's alpha is λ Σw (kopt normalises the weights to mean 1)
    w = np.random.default_rng(2).uniform(0.2, 3.0, len(X))
    est.fit(X, y, sample_weight=w)
    kr = KernelRidge(alpha=lam * w.sum(), kernel="rbf", gamma=1 / (2 * SIGMA**2)).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(est.predict(Xt), kr.predict(Xt), rtol=1e-8, atol=1e-10)


def test_joker_krr_equals_kernel_ridge():
    from sklearn.kernel_ridge import KernelRidge

    X, y = _data(task="real")
    lam = 1e-2
    est = KernelRegressor(lam=lam, bandwidth=SIGMA, standardize=False, features={"dtype": "float64"}, solver="joker",
                          solver_options={"tol": 1e-12}, backend="numpy").fit(X, y)
    kr = KernelRidge(alpha=lam * len(X), kernel="rbf", gamma=1 / (2 * SIGMA**2)).fit(X, y)
    np.testing.assert_allclose(est.predict(X), kr.predict(X), rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_hinge_equals_svc_c_one_over_lambda_n():
    """SVC has an intercept; on data closed under (x, y) -> (-x, -y) its optimum is 0 and the problems coincide."""
    from sklearn.svm import SVC

    X, y = _data(n=60, seed=4)
    X, y = np.vstack([X, -X]), np.concatenate([y, 1 - y])
    lam = 2e-3
    est = KernelClassifier(loss="hinge", lam=lam, bandwidth=SIGMA, standardize=False, features={"dtype": "float64"},
                           solver="joker", solver_options={"tol": 1e-8, "iterations": 6000, "batch_size": 40},
                           backend="numpy")
    est.fit(X, y)
    svc = SVC(C=1 / (lam * len(X)), kernel="rbf", gamma=1 / (2 * SIGMA**2), tol=1e-10).fit(X, y)
    Xt = np.random.default_rng(5).standard_normal((40, 3))
    np.testing.assert_allclose(est.decision_function(Xt), svc.decision_function(Xt), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_gp_regressor_mean_and_std():
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF

    X, y = _data(n=80, task="real", seed=3)
    gp = GPRegressor(bandwidth=SIGMA, noise_variance=0.5, standardize=False, standardize_target=False,
                     iterations=150, batch_size=16, features={"block_size": 256}, backend="numpy").fit(X, y)
    mean, std = gp.predict(X[:20], return_std=True)
    assert mean.shape == std.shape == (20,) and np.all(std >= 0) and np.all(np.isfinite(std))
    np.testing.assert_array_equal(mean, gp.predict(X[:20]))
    peer = GaussianProcessRegressor(RBF(SIGMA), alpha=0.5, optimizer=None).fit(X, y)
    m_ref, s_ref = peer.predict(X[:20], return_std=True)
    assert np.linalg.norm(mean - m_ref) / np.linalg.norm(m_ref) < 0.2
    assert np.all(std <= 1.0 + 1e-6)  # the prior variance k(x, x) = 1 bounds the posterior's
    with pytest.raises(NotImplementedError, match="covariance"):
        gp.predict(X[:2], return_cov=True)
    mean_only = GPRegressor(variance="none", iterations=20, batch_size=8, backend="numpy").fit(X, y)
    with pytest.raises(ValueError, match="variance='none'"):
        mean_only.predict(X[:2], return_std=True)
    with pytest.raises(kopt.SpecError, match="test_points"):
        GPRegressor(variance="test_points").fit(X, y)


# -- sample weights --------------------------------------------------------------------------------

def test_sample_weight_refused_by_a_solver_without_them_naming_those_that_take_them():
    X, y = _data()
    with pytest.raises(kopt.SpecError, match="solvers that do: auto, cdsg, dsg, joker, krr_exact, krr_nystrom, krr_pairs, krr_pcg, newton_pcg, svm_nystrom, udsg"):
        KernelClassifier(solver="adsg", loss="logistic", kernel="linear", backend="numpy").fit(
            X, y, sample_weight=np.ones(len(X)))


def test_sample_weight_taken_by_joker():
    X, y = _data()
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(X))
    est = KernelClassifier(solver="joker", backend="numpy").fit(X, y, sample_weight=w)
    assert est.status_ == "converged"


@pytest.mark.slow
def test_sample_weight_zero_drops_rows_and_is_checked():
    X, y = _data(task="real")
    kw = dict(solver="dsg", lam=1e-3, features={"block_size": 32}, solver_options={"iterations": 30, "batch_size": 8},
              backend="numpy")
    w = np.ones(len(X))
    w[::3] = 0.0
    a = KernelRegressor(**kw).fit(X, y, sample_weight=w)
    b = KernelRegressor(**kw).fit(X[w > 0], y[w > 0])
    np.testing.assert_array_equal(a.predict(X), b.predict(X))  # bit for bit: the rows are left out
    c = KernelRegressor(**kw).fit(X[w > 0], y[w > 0], sample_weight=np.full(int(w.sum()), 4.0))
    np.testing.assert_array_equal(c.predict(X), b.predict(X))  # scaling every weight changes nothing
    for bad, match in [(-w, ">= 0"), (np.zeros(len(X)), "zero for every row"), (w[:5], r"shape \(5,\)"),
                       (np.full(len(X), np.nan), "non-finite")]:
        with pytest.raises(ValueError, match=match):
            KernelRegressor(**kw).fit(X, y, sample_weight=bad)


# -- warm start, convergence warnings ------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("solver,options", [("dsg", {"batch_size": 16}), ("joker", {"tol": 1e-12, "batch_size": 32}),
                                            ("joker", {"mode": "features", "tol": 1e-12, "batch_size": 32})])
def test_warm_start_continues_to_where_a_fresh_fit_ends(solver, options):
    X, y = _data()
    kw = dict(solver=solver, lam=1e-3, features={"block_size": 32, "count": 128}, backend="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm = KernelClassifier(warm_start=True, solver_options={**options, "iterations": 8}, **kw).fit(X, y)
        assert warm.n_iter_ == 8
        warm.set_params(solver_options={**options, "iterations": 20}).fit(X, y)
        fresh = KernelClassifier(solver_options={**options, "iterations": 20}, **kw).fit(X, y)
    assert warm.n_iter_ == fresh.n_iter_ == 20
    np.testing.assert_array_equal(warm.decision_function(X), fresh.decision_function(X))
    with pytest.raises(ValueError, match="same data"):
        warm.fit(X[:-1], y[:-1])
    with pytest.raises(ValueError, match="different problem"):
        warm.set_params(lam=1e-2).fit(X, y)


def test_warm_start_refused_where_a_continuation_would_not_be_honest():
    X, y = _data(task="real")
    with pytest.raises(ValueError, match="krr_exact.*cannot continue"):
        KernelRegressor(solver="krr_exact", warm_start=True, backend="numpy").fit(X, y)


def test_convergence_warning_is_scikit_learns():
    X, y = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = KernelClassifier(solver="joker", solver_options={"iterations": 1, "tol": 1e-12, "batch_size": 16},
                               backend="numpy").fit(X, y)
    kinds = [type(w.message) for w in caught]
    assert ConvergenceWarning in kinds and kopt.ConvergenceWarning not in kinds
    assert est.status_ == "iteration_cap"


# -- composition: Pipeline, GridSearchCV, cross_val_score, pickle -----------------------------------

@pytest.mark.slow
def test_pipeline_gridsearch_n_jobs_2_and_cross_val_score():
    X, y = _data(n=150)
    pipe = make_pipeline(StandardScaler(), KernelClassifier(lam=1e-3, backend="numpy"))
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and scores.mean() > 0.8
    grid = GridSearchCV(KernelClassifier(backend="numpy"), {"lam": [1e-4, 1e-2], "bandwidth": [0.5, "median"]},
                        cv=3, n_jobs=2).fit(X, y)
    assert set(grid.best_params_) == {"lam", "bandwidth"} and grid.best_score_ > 0.8
    assert grid.predict(X).shape == (150,)


@pytest.mark.slow
@pytest.mark.parametrize("make", [
    lambda: KernelClassifier(loss="logistic", lam=1e-3, backend="numpy"),
    lambda: KernelRegressor(solver="dsg", features={"block_size": 32}, solver_options={"iterations": 20, "batch_size": 16},
                            backend="numpy"),
    lambda: GPRegressor(iterations=20, batch_size=8, backend="numpy"),
])
def test_fitted_estimators_pickle_without_kopt_objects(make):
    X, y = _data()
    est = make()
    est.fit(X, y if isinstance(est, KernelClassifier) else y.astype(float))
    blob = pickle.dumps(est)
    globals_ = {arg for op, arg, _ in pickletools.genops(blob) if op.name in ("GLOBAL", "STACK_GLOBAL")}
    named = {str(a) for a in globals_ if a}
    assert not any("kopt_plugins" in a or "kopt.contract.options" in a for a in named)
    again = pickle.loads(blob)
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    assert again.get_params() == est.get_params()


# -- the CLI and the estimators: one thing seen two ways ----------------------------------------

def test_to_spec_and_the_cli_give_identical_predictions(tmp_path):
    from kopt.cli import main

    X, y = _data(n=150, task="multiclass")
    X = X.astype(np.float32)  # kopt's readers hold features as float32: give the estimator the same rows
    labels = np.array([10, 20, 30])[y]
    np.savez(tmp_path / "train.npz", X=X, y=labels)
    est = KernelClassifier(loss="logistic", lam=1e-3, kernel="laplacian", random_state=4, backend="numpy",
                           solver="joker", solver_options={"tol": 1e-4})
    spec_path = tmp_path / "spec.yaml"
    est.to_spec(spec_path, data={"train": str(tmp_path / "train.npz")})
    assert main(["solve", str(spec_path), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    model = kopt.load_model(tmp_path / "run" / "model.json")
    est.fit(X, labels)
    np.testing.assert_array_equal(model.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(model.predict(X), est.predict(X))
    again = from_spec(spec_path)
    assert type(again) is KernelClassifier and again.to_spec() == est.to_spec()


@pytest.mark.parametrize("est", [
    KernelClassifier(loss="square", lam=1e-3, solver="krr_exact"),
    KernelRegressor(loss="epsilon_insensitive", loss_options={"epsilon": 0.2}, kernel="matern",
                    features={"count": 256}, regularizer_options=None, standardize_target=True, random_state=2),
    GPRegressor(noise_variance=0.2, iterations=30, batch_size=8, kernel_options={"bandwidth_factor": 0.5}),
])
def test_from_spec_inverts_to_spec(est):
    """The same problem both ways (the spec makes defaults explicit: seed 0 for random_state=None, the form)."""
    import yaml

    again = from_spec(yaml.safe_load(est.to_spec()))
    assert type(again) is type(est) and again.to_spec() == est.to_spec()
    assert from_spec(yaml.safe_load(again.to_spec())).get_params() == again.get_params()


@pytest.mark.slow
def test_from_spec_reads_the_repository_specs():
    from pathlib import Path

    specs = sorted(Path(__file__).resolve().parents[2].glob("specs/*.yaml"))
    built = {type(from_spec(p)).__name__ for p in specs if "novelty" not in p.name and "density" not in p.name}
    assert {"KernelClassifier", "KernelRegressor", "GPRegressor"} <= built


@pytest.mark.slow
def test_import_kopt_does_not_import_scikit_learn():
    import subprocess
    import sys

    code = ("import sys, kopt, kopt.cli; from kopt.contract.registry import registry; registry(); "
            "assert not any(m == 'sklearn' or m.startswith('sklearn.') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_feature_names_from_a_dataframe():
    pd = pytest.importorskip("pandas")
    X, y = _data(task="real")
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    est = KernelRegressor(lam=1e-3, backend="numpy").fit(frame, y)
    assert list(est.feature_names_in_) == ["a", "b", "c"] and est.n_features_in_ == 3
    with pytest.raises(ValueError, match="feature names"):
        est.predict(frame[["a", "c", "b"]])
