"""kopt tune: grid syntax, splits, warm starts along λ, the command line; bandwidth: scale; standardize: auto."""
from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

import kopt
from kopt.cli import main
from kopt.data.preprocess import Preprocessor
from kopt.errors import CheckpointError, SpecError
from kopt.running.validation import LAMBDA, make_splits
from kopt.selection.tune import parse_axis

pytestmark = pytest.mark.filterwarnings("ignore::kopt.errors.ConvergenceWarning")


def _data(n=160, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    return X, np.where(np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] > 0, 1, -1)


def _spec(lam=1e-2, mode="exact", tol=1e-3):
    return {"name": "t", "seed": 3,
            "model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian"},
                      "regularizer": {"name": "l2", "lambda": lam}, "form": "dual",
                      "features": {"count": 128, "block_size": 32}},
            "solver": {"name": "joker", "mode": mode, "iterations": 5000, "batch_size": 32, "tol": tol},
            "backend": "numpy"}


# -- grid syntax ------------------------------------------------------------------------------------
def test_parse_axis_ranges_and_lists():
    ax = parse_axis("model.regularizer.lambda=1e-6:1e-2:log:5")
    assert ax.key == LAMBDA and np.allclose(ax.values, [1e-6, 1e-5, 1e-4, 1e-3, 1e-2])
    assert parse_axis("model.kernel.bandwidth_factor=0.5:2:lin:4").values == (0.5, 1.0, 1.5, 2.0)
    assert parse_axis("solver.batch_size=16,32").values == (16, 32)


@pytest.mark.parametrize("item,words", [
    ("model.regularizer.lambda", "KEY.PATH"),
    ("model.regularizer.lambda=1e-6:1e-2:log", "lo:hi:log:n"),
    ("model.regularizer.lambda=0:1:log:3", "lo > 0"),
    ("model.regularizer.lambda=1:0.1:lin:3", "ends below"),
    ("model.regularizer.lambda=1:2:lin:0", ">= 1"),
    ("model.kernel.bandwidth_factor=1,big", "numbers"),
    ("model.kernel.bandwidth_factor=1,1", "repeats"),
])
def test_bad_grid_items_name_the_key(item, words):
    with pytest.raises(SpecError) as err:
        parse_axis(item)
    assert words in str(err.value)


def test_splits_are_seeded_and_cover_the_rows():
    folds = make_splits(50, seed=1, folds=5)
    again = make_splits(50, seed=1, folds=5)
    assert len(folds) == 5 and all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again))
    held = np.sort(np.concatenate([va for _, va in folds]))
    assert np.array_equal(held, np.arange(50))
    assert all(np.intersect1d(tr, va).size == 0 and tr.size + va.size == 50 for tr, va in folds)
    (tr, va), = make_splits(50, seed=1, validation=0.2)
    assert va.size == 10 and tr.size == 40
    with pytest.raises(SpecError):
        make_splits(50, seed=1, folds=1)


# -- warm starts along λ ----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exact", "features"])
def test_a_warm_start_at_another_lambda_reaches_the_cold_answer(mode):
    X, y = _data()
    first = kopt.solve(_spec(1e-1, mode), data=(X, y), keep_state=True)
    cold = kopt.solve(_spec(1e-2, mode), data=(X, y))
    warm = kopt.solve(_spec(1e-2, mode), data=(X, y), start_from=first.snapshot)
    assert warm.success and cold.success
    assert warm.objective == pytest.approx(cold.objective, rel=2e-3)
    assert warm.gap <= 1e-3 * abs(warm.objective)
    # exact: the gap is checked every block; features: once an epoch (5 blocks here), so counts are coarse
    assert warm.n_iter < cold.n_iter if mode == "exact" else warm.n_iter <= cold.n_iter


def test_a_warm_start_refuses_another_problem():
    X, y = _data()
    first = kopt.solve(_spec(1e-2), data=(X, y), keep_state=True)
    other = _spec(1e-3)
    other["model"]["kernel"]["bandwidth"] = 2.0
    with pytest.raises(CheckpointError, match="different problem"):
        kopt.solve(other, data=(X, y), start_from=first.snapshot)


@pytest.mark.slow
def test_tune_finds_the_best_row_and_warm_starts_match_cold():
    X, y = _data()
    grid = ["model.regularizer.lambda=1e-2,1e-1", "model.kernel.bandwidth_factor=0.5,2"]
    cold = kopt.tune(_spec(), grid, folds=2, warm_start=False, data=(X, y))
    warm = kopt.tune(_spec(), grid, folds=2, data=(X, y))
    assert warm.warm_start and not cold.warm_start and len(warm.rows) == 4
    for a, b in zip(warm.rows, cold.rows):
        assert a["params"] == b["params"]
        assert a["score"] == pytest.approx(b["score"], abs=0.03)  # the same problems, solved to tol 1e-3
    assert sum(r["iterations"] for r in warm.rows) < sum(r["iterations"] for r in cold.rows)
    best = max(warm.rows, key=lambda r: r["score"])
    assert warm.best_score == best["score"]
    assert all(warm.best_spec.get(*k.split(".")) == v for k, v in warm.best_params.items())


def test_best_never_picks_a_non_finite_score():
    from kopt.errors import NonFiniteModelError
    from kopt.running.validation import LAMBDA
    from kopt.running.validation import best_row as _best

    rows = [{"params": {LAMBDA: 1e-2}, "score": 0.5}, {"params": {LAMBDA: 1e-3}, "score": float("nan")},
            {"params": {LAMBDA: 1e-4}, "score": 0.4}, {"params": {LAMBDA: 1e-5}, "score": float("inf")}]
    assert _best(rows, False)["params"][LAMBDA] == 1e-4  # rmse: lower is better, NaN and inf skipped
    assert _best(rows, True)["params"][LAMBDA] == 1e-2
    with pytest.raises(NonFiniteModelError, match="every point searched"):
        _best([{"params": {LAMBDA: 1e-2}, "score": float("nan")}], True)


# -- the command line -------------------------------------------------------------------------------
@pytest.mark.slow
def test_cli_tune_writes_table_spec_plot_and_refit(seeded_data, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "t"
    rc = main(["tune", "joker_nystrom_krr_higgs12k", "--set", "data.max_rows=1200", "--set",
               "model.features.count=100", "--grid", "model.regularizer.lambda=1e-4,1e-2", "--grid",
               "model.kernel.bandwidth_factor=1", "--validation", "0.25", "--plot", "--refit", "--quiet",
               "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "accuracy" in text and "*" in text and "refit on all training rows: test accuracy" in text
    best = kopt.load_spec(str(out / "best.yaml"))
    assert (out / "best.yaml").read_text().startswith("# written by kopt tune: the best accuracy")
    assert best["model"]["regularizer"]["lambda"] in (1e-4, 1e-2)
    record = json.loads((out / "tune.json").read_text())
    assert len(record["rows"]) == 2 and record["refit_metrics"]["accuracy"] > 0.55
    assert (out / "tune.png").stat().st_size > 0 and (out / "refit" / "model.json").exists()


@pytest.mark.parametrize("grid,words", [
    ("model.kernel.nothing=1,2", "model.kernel.nothing"),
    ("model.loss.name=1,2", "model.loss.name"),
    ("model.regularizer.lambda=-1,1", "model.regularizer.lambda"),
    ("nosection.lambda=1,2", "nosection"),
])
def test_cli_bad_grids_exit_2_naming_the_key(tmp_path, capsys, grid, words):
    rc = main(["tune", "krr_synthetic", "--grid", grid, "--out", str(tmp_path)])
    assert rc == 2
    assert words in capsys.readouterr().err


# -- the default-rule options -----------------------------------------------------------------------
def test_bandwidth_scale_is_scikit_learns_gamma_scale():
    from sklearn.metrics.pairwise import rbf_kernel

    from kopt.contract.bandwidth import resolve_bandwidth
    from kopt.contract.registry import registry

    X = np.random.default_rng(0).uniform(0, 3, size=(200, 6))
    cls = registry().get("kernel", "gaussian")
    kernel = cls(**resolve_bandwidth(cls, {"bandwidth": "scale"}, X, seed=0))
    assert np.allclose(kernel.exact(X, X), rbf_kernel(X, gamma=1.0 / (X.shape[1] * X.var())), atol=1e-10)
    half = resolve_bandwidth(cls, {"bandwidth": "scale", "bandwidth_factor": 0.5}, X, seed=0)["bandwidth"]
    assert half == pytest.approx(0.5 * kernel.bandwidth)


def test_standardize_auto_leaves_bounded_and_sparse_data_alone():
    rng = np.random.default_rng(0)
    bounded = rng.uniform(0, 1, size=(50, 4))
    assert Preprocessor.fit(bounded, None, "real", standardize="auto").mean is None
    assert Preprocessor.fit(sp.csr_matrix(bounded * 5), None, "real", standardize="auto").scale is None
    for other in (rng.normal(0, 3, size=(50, 4)), rng.uniform(-1, 1, size=(50, 4))):  # not within [0, 1]
        pre = Preprocessor.fit(other, None, "real", standardize="auto")
        assert np.allclose(pre.mean, other.mean(axis=0)) and np.allclose(pre.scale, other.std(axis=0))


def test_default_grid_holds_the_specs_own_bandwidth_factor():
    from kopt.selection.tune import default_axes

    spec = kopt.load_spec("krr_synthetic")  # bandwidth: median, bandwidth_factor: 0.1
    axes = {a.key: a.values for a in default_axes(spec)}
    assert axes["model.kernel.bandwidth_factor"] == (0.025, 0.05, 0.1, 0.2)
    assert 1e-6 in axes["model.regularizer.lambda"]
