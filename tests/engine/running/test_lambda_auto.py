"""``model.regularizer.lambda: auto`` (the default) and ``standardize: auto``'s common-range rule (issue 19)."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import kopt
from kopt.cli import main
from kopt.data.preprocess import Preprocessor, merge_range_stats, needs_scaling, range_stats, scaling_rule
from kopt.errors import NonFiniteModelError, SpecError
from kopt.running import validation as selection  # the λ path: a service of kopt.api and kopt tune
from kopt.selection import tune as tuning
from kopt.spec import LAMBDA_FALLBACK


def _joker(lam="auto", **solver):
    model = {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian"}, "form": "dual"}
    if lam is not None:
        model["regularizer"] = {"name": "l2", "lambda": lam}
    return {"seed": 3, "model": model,
            "solver": {"name": "joker", "mode": "exact", "batch_size": 512, "tol": 1e-4, **solver},
            "backend": "numpy", "output": {"model": False, "report": False}}


def _clean(n=240, seed=0):
    """A noiseless, wiggly boundary: small λ wins."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2))
    y = np.sign(np.sin(4 * X[:, 0]) + np.sin(4 * X[:, 1]) + 1e-9)
    return X, y


def _noisy(n=240, seed=0):
    """A linear boundary under 25% label noise: large λ wins."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.sign(X[:, 0] + 1e-9)
    flip = rng.random(n) < 0.25
    y[flip] = -y[flip]
    return X, y


def _solve(spec, data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kopt.solve(spec, data=data, **kw)


def _cold_scores(spec, data, lams):
    """Each λ solved cold on auto's own validation split: the score auto must have seen."""
    X, y = data
    (tr, va), = selection.make_splits(len(y), spec["seed"], validation=selection.AUTO_VALIDATION)
    out = {}
    for lam in lams:
        r = _solve({**spec, "model": {**spec["model"], "regularizer": {"name": "l2", "lambda": lam}}},
                   (X[tr], y[tr], X[va], y[va]))
        out[lam] = r.metrics["accuracy"]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("make, small", [(_clean, True), (_noisy, False)])
def test_auto_picks_the_validation_best_lambda(make, small):
    X, y = make()
    r = _solve(_joker(lam=None), (X, y))  # left out: the default is auto
    auto = r.lambda_auto
    assert auto["chosen"] and auto["metric"] == "accuracy"
    path = {p["lambda"]: p["score"] for p in auto["path"]}
    best = max(path.values())
    assert path[auto["lambda"]] == best
    assert auto["lambda"] == max(lam for lam, s in path.items() if s == best)  # ties: the larger λ
    # the known answer: a clean wiggly boundary wants little regularisation, label noise wants a lot
    assert (auto["lambda"] <= 3.2e-4) if small else (auto["lambda"] >= 1e-2)
    # the scores are those of cold solves on the same seeded split (the warm path reaches the same solutions)
    cold = _cold_scores(_joker(), (X, y), list(path))
    for lam, score in path.items():
        assert score == pytest.approx(cold[lam], abs=2.5 / (0.2 * len(y)))
    # the model is the refit on all rows at the chosen λ
    assert r.report["spec"]["model"]["regularizer"]["lambda"] == auto["lambda"]
    assert r.report["data"]["n_train"] == len(y)


def test_path_walks_down_stops_early_and_refines_once():
    X, y = _noisy()
    auto = _solve(_joker(), (X, y)).lambda_auto
    main_path = [p for p in auto["path"] if not p["refine"]]
    lams = [p["lambda"] for p in main_path]
    assert lams == list(tuning.AUTO_PATH[:len(lams)])  # decreasing, from 1e-2
    assert auto["stopped_early"] and len(lams) < len(tuning.AUTO_PATH)
    scores = [p["score"] for p in main_path]
    assert scores[-1] <= max(scores[:-1])  # stopped at the first point without improvement
    refine = [p["lambda"] for p in auto["path"] if p["refine"]]
    top = max(main_path, key=lambda p: (p["score"], p["lambda"]))["lambda"]
    assert refine == pytest.approx([top * 10 ** 0.5, top / 10 ** 0.5], rel=1e-5)
    assert all(p["warm"] for p in auto["path"][1:]) and not auto["path"][0]["warm"]
    assert auto["warm_path"] and auto["select_s"] > 0


@pytest.mark.slow
def test_auto_is_deterministic_from_the_seed():
    X, y = _clean(300)
    a, b = _solve(_joker(), (X, y)), _solve(_joker(), (X, y))
    strip = lambda auto: [(p["lambda"], p["score"], p["iterations"]) for p in auto["path"]]  # noqa: E731
    assert strip(a.lambda_auto) == strip(b.lambda_auto) and a.lambda_auto["lambda"] == b.lambda_auto["lambda"]
    assert a.report["model_sha256"] == b.report["model_sha256"]
    other = _solve({**_joker(), "seed": 4}, (X, y))
    assert other.lambda_auto["split"] != a.lambda_auto["split"] or strip(other.lambda_auto) != strip(a.lambda_auto)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["exact", "features"])
def test_refit_starts_warm_and_ends_where_a_cold_solve_ends(mode):
    X, y = _clean(400)
    extra = {"mode": mode, **({"iterations": 4000} if mode == "features" else {})}
    spec = _joker(**extra)
    if mode == "features":
        spec["model"]["features"] = {"count": 256, "block_size": 64, "dtype": "float64"}
    r = _solve(spec, (X, y))
    assert r.lambda_auto["refit_warm"]
    fixed = {**spec, "model": {**spec["model"], "regularizer": {"name": "l2", "lambda": r.lambda_auto["lambda"]}}}
    cold = _solve(fixed, (X, y))
    assert cold.lambda_auto is None and "lambda_auto" not in cold.report
    assert r.success and cold.success
    assert r.objective == pytest.approx(cold.objective, rel=1e-4)
    np.testing.assert_allclose(r.model.decision_function(X), cold.model.decision_function(X), atol=5e-3)


def test_primal_routes_refit_as_usual():
    X, y = _clean(400)
    spec = _joker(mode="primal")
    spec["model"]["features"] = {"kind": "nystrom", "count": 64, "dtype": "float64"}
    r = _solve(spec, (X, y))
    assert r.lambda_auto["refit_warm"] is False and r.success


def test_solvers_without_warm_starts_walk_the_path_cold():
    X, y = _clean(300)
    spec = {"seed": 1, "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "krr_exact"}, "backend": "numpy"}
    r = _solve(spec, (X, y.astype(float)))
    auto = r.lambda_auto
    assert auto["metric"] == "rmse" and not auto["warm_path"] and not auto["refit_warm"]
    path = {p["lambda"]: p["score"] for p in auto["path"]}
    assert path[auto["lambda"]] == min(path.values())


def test_a_fixed_lambda_runs_no_selection(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("select_lambda ran for a fixed lambda")

    monkeypatch.setattr(selection, "select_lambda", boom)
    X, y = _clean(200)
    r = _solve(_joker(lam=1e-3), (X, y))
    assert r.lambda_auto is None and "lambda_auto" not in r.report and "lambda_auto_s" not in r.timings
    assert r.report["spec"]["model"]["regularizer"]["lambda"] == 1e-3


@pytest.mark.slow
def test_report_cli_summary_and_timings(tmp_path):
    X, y = _clean(300)
    data = tmp_path / "train.csv"
    np.savetxt(data, np.column_stack([y, X]), delimiter=",")
    spec = tmp_path / "s.yaml"
    spec.write_text("data: {train: train.csv, label: 0, test_fraction: 0.25}\n"
                    "model:\n  loss: {name: squared_hinge}\n  kernel: {name: gaussian}\n  form: dual\n"
                    f"solver: {{name: joker, mode: exact, tol: 1.0e-6}}\nbackend: numpy\noutput: {{dir: {tmp_path / 'out'}}}\n")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["solve", str(spec)]) == 0
    text = buf.getvalue()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    auto = report["lambda_auto"]
    assert auto["chosen"] is True and auto["lambda"] == report["spec"]["model"]["regularizer"]["lambda"]
    assert {"lambda", "score", "fit_s", "iterations", "converged", "warm", "refine"} <= set(auto["path"][0])
    assert auto["select_s"] == report["timings"]["lambda_auto_s"] > 0
    assert report["timings"]["wall_s"] >= auto["select_s"] + report["timings"]["fit_s"]
    assert f"lambda auto: chose {auto['lambda']:g} by validation accuracy" in text
    assert f"{auto['path'][0]['lambda']:g}: " in text


@pytest.mark.parametrize("value, phrase", [(-1, "expected a number >= 0, got -1 (or 'auto')"),
                                           ("autox", "got 'autox'; allowed: auto (did you mean 'auto'?)"),
                                           ("Auto", "got 'Auto'")])
def test_bad_lambda_values_exit_2_naming_the_key(tmp_path, capsys, value, phrase):
    spec = tmp_path / "s.yaml"
    spec.write_text("model:\n  loss: {name: square}\n  kernel: {name: gaussian}\n"
                    f"  regularizer: {{name: l2, lambda: {value}}}\nsolver: {{name: krr_exact}}\n")
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "$.model.regularizer.lambda" in err and phrase in err


@pytest.mark.parametrize("model, solver, phrase", [
    ({"loss": {"name": "novelty"}}, {"name": "dsg"}, "loss 'novelty' (target unlabeled) has none; give a number"),
    ({"loss": {"name": "square"}, "form": "gp"}, {"name": "gp"}, "the gp form does not use model.regularizer.lambda"),
])
def test_explicit_auto_is_refused_where_it_cannot_work(model, solver, phrase):
    spec = {"model": {"kernel": {"name": "gaussian"}, **model, "regularizer": {"name": "l2", "lambda": "auto"}},
            "solver": solver, "backend": "numpy"}
    with pytest.raises(SpecError) as exc:
        kopt.load_spec(spec, check_files=False)
    assert exc.value.path == "$.model.regularizer.lambda" and phrase in str(exc.value)
    del spec["model"]["regularizer"]  # left out: the fixed fallback, no error
    assert kopt.load_spec(spec, check_files=False)["model"]["regularizer"]["lambda"] == LAMBDA_FALLBACK


def test_explicit_auto_is_refused_on_a_dask_cluster():
    spec = {"model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian"}, "form": "dual",
                      "regularizer": {"name": "l2", "lambda": "auto"}},
            "solver": {"name": "joker"}, "execution": {"engine": "dask", "scheduler": "local:2"}}
    with pytest.raises(SpecError, match="not available on a Dask cluster"):
        kopt.load_spec(spec, check_files=False)
    del spec["model"]["regularizer"]
    with pytest.warns(kopt.SpecWarning, match=r"regularizer.lambda.*cannot use: λ = 0.0001 instead"):
        assert kopt.load_spec(spec, check_files=False)["model"]["regularizer"]["lambda"] == LAMBDA_FALLBACK


def test_auto_is_the_schema_default_for_labelled_losses():
    spec = kopt.load_spec({"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"}},
                           "solver": {"name": "dsg"}}, check_files=False)
    assert spec["model"]["regularizer"] == {"name": "l2", "lambda": "auto"}
    assert spec.lambda_auto and spec.regularizer.strong_convexity() > 0  # checks see a λ > 0


def test_tune_searches_auto_s_path_by_default():
    spec = kopt.load_spec(_joker(), check_files=False)
    assert tuning.default_axes(spec)[0] == tuning.Axis(tuning.LAMBDA, tuning.AUTO_PATH)


@pytest.mark.slow
def test_sample_weights_go_into_the_path_and_the_refit():
    X, y = _noisy(300)
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    r = _solve(_joker(), (X, y), sample_weight=w)
    assert r.lambda_auto["lambda"] in tuning.AUTO_PATH or r.lambda_auto["path"][-1]["refine"]
    assert r.report["data"]["sample_weight"] and not r.lambda_auto["refit_warm"]


def test_resuming_a_snapshot_continues_at_its_lambda():
    X, y = _clean(200)
    first = _solve(_joker(lam=1e-3, iterations=2, tol=0.0), (X, y), keep_state=True)
    spec = _joker(iterations=4, tol=0.0)  # lambda: auto
    r = _solve(spec, (X, y), resume=first.snapshot)
    assert r.lambda_auto is None and r.report["spec"]["model"]["regularizer"]["lambda"] == 1e-3
    with pytest.raises(SpecError, match="needs that run's λ"):
        _solve(spec, (X, y), start_from=first.snapshot)


# -- standardize: auto ------------------------------------------------------------------------------
def _pixels(n=400, seed=0):
    """28 x 28 8-bit images: a constant zero border, rarely lit edge pixels, a busy center."""
    rng = np.random.default_rng(seed)
    img = np.zeros((n, 28, 28))
    img[:, 6:22, 6:22] = rng.integers(0, 256, (n, 16, 16)) * (rng.random((n, 16, 16)) < 0.5)
    img[:5, 4, 4:24] = rng.integers(1, 40, (5, 20))  # an edge row lit dimly in a few images
    img[:, 6, 6] = 255
    return img.reshape(n, -1).astype(np.float32)


def test_pixels_are_left_alone_and_unlike_columns_are_z_scored():
    P = _pixels()
    assert scaling_rule(range_stats(P)) == (False, "non-negative columns sharing one range [0, 255]")
    assert not needs_scaling(P / 255.0)  # [0, 1]: as before
    rng = np.random.default_rng(1)
    unlike = np.column_stack([rng.random(300), 1000 * rng.random(300), rng.integers(0, 5, 300)])  # >= 0, unlike ranges
    assert scaling_rule(range_stats(unlike)) == (True, "non-negative columns on unlike scales")
    signed = rng.standard_normal((300, 4))
    assert scaling_rule(range_stats(signed)) == (True, "signed values")
    assert needs_scaling(P - 1.0)  # one value below 0: signed
    assert scaling_rule(range_stats(sp.csr_matrix(P))) == (False, "sparse")
    pre = Preprocessor.fit(P, None, "real", standardize="auto")
    assert pre.scale is None and pre.auto_rule.startswith("non-negative")
    assert Preprocessor.fit(unlike, None, "real", standardize="auto").scale is not None
    assert Preprocessor.fit(P, None, "real", standardize=True).scale is not None  # an explicit true still z-scores


def test_range_stats_merge_like_the_whole():
    P = _pixels(300)
    merged = merge_range_stats(merge_range_stats(range_stats(P[:100]), range_stats(P[100:250])), range_stats(P[250:]))
    whole = range_stats(P)
    np.testing.assert_array_equal(merged[0], whole[0])
    np.testing.assert_array_equal(merged[1], whole[1])
    assert merge_range_stats(None, whole) is None  # a sparse piece: sparse


def test_report_says_which_rule_standardize_auto_took():
    rng = np.random.default_rng(0)
    P = _pixels(200)
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    r = _solve(_joker(lam=1e-3, iterations=50), (P, y))
    assert r.report["data"]["standardized"] is False
    assert r.report["data"]["standardize_auto"] == "non-negative columns sharing one range [0, 255]"


def test_solver_checks_see_a_positive_lambda_under_auto():
    base = {"model": {"loss": {"name": "logistic"}, "kernel": {"name": "gaussian"}}}
    ok = kopt.load_spec({**base, "solver": {"name": "adsg", "setting": "strongly_convex"}}, check_files=False)
    assert ok["model"]["regularizer"]["lambda"] == "auto"  # μ = λ > 0 for whatever auto picks
    with pytest.raises(SpecError) as exc:
        kopt.load_spec({**base, "solver": {"name": "adsg", "setting": "unregularized"}}, check_files=False)
    assert exc.value.path == "$.model.regularizer.lambda" and "lambda: auto picks λ > 0" in str(exc.value)


@pytest.mark.slow
@pytest.mark.parametrize("solver, loss", [
    ({"name": "dsg", "iterations": 30, "batch_size": 64}, "logistic"),
    ({"name": "udsg", "iterations": 30, "batch_size": 64}, "logistic"),
    ({"name": "cdsg", "iterations": 30, "batch_size": 64}, "logistic"),
    ({"name": "adsg", "iterations": 2, "batch_size": 32}, "logistic"),
    ({"name": "katyusha", "iterations": 2}, "logistic"),
    ({"name": "svrg", "iterations": 2}, "logistic"),
    ({"name": "mrbcd", "iterations": 2}, "logistic"),
    ({"name": "krr_exact"}, "square"),
])
def test_every_solver_with_a_lambda_runs_auto(solver, loss):
    X, y = _noisy(160)
    spec = {"seed": 2, "model": {"loss": {"name": loss, **({"target": "binary"} if loss == "square" else {})},
                                 "kernel": {"name": "gaussian"},
                                 "features": {"count": 64, "block_size": 32}},
            "solver": solver, "backend": "numpy"}
    r = _solve(spec, (X, y))
    auto = r.lambda_auto
    assert auto["chosen"] and auto["lambda"] == r.report["spec"]["model"]["regularizer"]["lambda"]
    assert auto["lambda"] == max(p["lambda"] for p in auto["path"]
                                 if p["score"] == max(q["score"] for q in auto["path"]))
    assert not auto["warm_path"] and not auto["refit_warm"]  # only Joker warm-starts along λ


@pytest.mark.slow
def test_a_diverged_path_point_never_wins(monkeypatch):
    """A NaN validation score (a diverged solve) is never an improvement; all NaN is a clear error."""
    X, y = _clean(160)
    real = selection.solve_point

    def flaky(solve, base, fold, params, metric, start_from, **kw):
        r = real(solve, base, fold, params, metric, start_from, **kw)
        if params[tuning.LAMBDA] in bad:
            r.metrics[metric] = float("nan")
        return r

    monkeypatch.setattr(selection, "solve_point", flaky)
    bad = {1e-2}
    auto = _solve(_joker(), (X, y)).lambda_auto
    assert auto["lambda"] != 1e-2 and len([p for p in auto["path"] if not p["refine"]]) >= 3
    bad = set(tuning.AUTO_PATH)
    with pytest.raises(NonFiniteModelError, match="every λ of the path gave a non-finite"):
        _solve(_joker(), (X, y))
