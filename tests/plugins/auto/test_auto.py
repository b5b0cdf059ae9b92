"""solver: auto and krr_nystrom: the defaults that choose by measurement (issue 24)."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from helpers import curved_classes

import kopt
from kopt.cli import main
from kopt.errors import SpecError


def _data(n=600, d=3, seed=0, classes=2):
    return curved_classes(n, d, seed, classes, noise=0.3)


def _nystrom(count, lam=1e-3, bandwidth=1.5, dtype="float64", loss=None):
    return {"seed": 1, "backend": "numpy", "output": {"model": False, "report": False},
            "data": {"standardize": False},
            "model": {"loss": loss or {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": bandwidth},
                      "regularizer": {"name": "l2", "lambda": lam},
                      "features": {"kind": "nystrom", "count": count, "dtype": dtype}},
            "solver": {"name": "krr_nystrom"}}


def _solve(spec, data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kopt.solve(spec, data=data, **kw)


@pytest.mark.parametrize("bandwidth, dropped, tol", [(0.5, False, 1e-6), (1.5, True, 1e-3)])
def test_krr_nystrom_on_every_row_is_exact_kernel_ridge(bandwidth, dropped, tol):
    """Every row a center: exact kernel ridge regression.  At bandwidth 1.5 a quarter of 200 Gaussian rows in 3-d
    lie within 1e-6 (residual variance) of the others' span and are dropped (kopt.nystrom.center_basis): the
    predictions then stay within 1e-3 of the exact ones (measured 5e-5); at 0.5 none is dropped and they agree."""
    from sklearn.kernel_ridge import KernelRidge

    X, y = _data(n=200)
    y = y.astype(float) + 0.1 * X[:, 2]
    lam = 1e-3
    r = _solve(_nystrom(200, lam, bandwidth=bandwidth), (X, y))
    assert (r.info["centers_dropped"] > 0) == dropped and r.info["n_centers"] + r.info["centers_dropped"] == 200
    # krr_nystrom's model is k(x, C) w + μ, μ the targets' mean (fixed, unpenalised): KernelRidge on y − μ, plus μ
    mu = y.mean()
    kr = KernelRidge(alpha=lam * len(X), kernel="rbf", gamma=1 / (2 * bandwidth**2)).fit(X, y - mu)
    Xt = np.random.default_rng(5).standard_normal((50, 3))
    assert r.model.predictor.meta["intercept"] == pytest.approx(mu, rel=1e-12)
    np.testing.assert_allclose(r.model.decision_function(Xt), kr.predict(Xt) + mu, rtol=tol, atol=tol)
    assert abs(r.info["rel_gap"]) < 1e-10  # its certificate: the solve's rounding only


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_krr_nystrom_minimises_the_restricted_objective(dtype):
    """The normal equations of the M-center problem, solved densely, give the same coefficients; the gap closes
    at a small λ too (float32 kernel values, float64 products and refinement)."""
    X, y = _data(n=500)
    for lam in (1e-2, 1e-7):
        r = _solve(_nystrom(60, lam, dtype=dtype), (X, y.astype(float)))
        assert r.gap is not None and abs(r.info["rel_gap"]) < 1e-7, (lam, r.info)
        S, w = r.model.predictor.arrays["support"].astype(np.float64), r.model.predictor.arrays["coef"]
        K = np.exp(-((X[:, None, :] - S[None]) ** 2).sum(-1) / (2 * 1.5**2))
        R = np.exp(-((S[:, None, :] - S[None]) ** 2).sum(-1) / (2 * 1.5**2))
        mu = y.mean()  # the model's fixed intercept
        ref = np.linalg.solve(K.T @ K / len(X) + lam * R, K.T @ (y - mu) / len(X))
        tol = 1e-6 if dtype == "float64" else 2e-3
        np.testing.assert_allclose(K @ w, K @ ref, rtol=tol, atol=tol)


def test_multiclass_shares_one_factorisation_and_equals_one_solve_per_class():
    X, y = _data(n=400, classes=3)
    spec = _nystrom(50, loss={"name": "square", "target": "binary"})
    r = _solve(spec, (X, y))
    scores = r.model.decision_function(X)
    assert scores.shape == (400, 3)
    for c in range(3):
        one = _solve(spec, (X, np.where(y == c, 1, -1)))
        np.testing.assert_allclose(scores[:, c], one.model.decision_function(X), rtol=1e-8, atol=1e-8)


def test_krr_nystrom_weights_are_repeated_rows():
    X, y = _data(n=150)
    spec = _nystrom(150)
    w = np.random.default_rng(3).integers(1, 4, len(X)).astype(float)
    a = _solve(spec, (X, y.astype(float)), sample_weight=w)
    S = a.model.predictor.arrays["support"]
    # the same centers and the rows repeated: the same model
    rep = np.repeat(np.arange(len(X)), w.astype(int))
    spec_b = _nystrom(150)
    b = _solve(spec_b, (X[rep], y[rep].astype(float)))
    # every distinct row is a center (repeated rows are skipped as centers): both hold the same centers, in the
    # same order; then the models agree
    np.testing.assert_array_equal(np.sort(S, axis=0), np.sort(b.model.predictor.arrays["support"], axis=0))
    np.testing.assert_allclose(a.model.decision_function(X), b.model.decision_function(X), rtol=1e-8, atol=1e-8)
    assert abs(a.info["rel_gap"]) < 1e-8


@pytest.mark.slow
def test_a_spec_naming_only_loss_and_kernel_chooses_and_says_why(tmp_path):
    X, y = _data(n=1500)
    spec = {"model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "output": {"model": False, "report": False}}
    r = _solve(spec, (X[:1200], y[:1200], X[1200:], y[1200:]))
    auto = r.auto
    assert auto["route"] == "krr_nystrom" and auto["metric"] == "accuracy"
    assert auto["centers"] in {t["centers"] for t in auto["trials"]}
    from kopt_plugins.auto.scoring import MIN_GAIN

    # the best score, except that more centers must gain MIN_GAIN to win
    chosen = [t for t in auto["trials"] if t["centers"] == auto["centers"] and t["lam"] == auto["lambda"]
              and t["bandwidth"] == auto["bandwidth"]]
    assert len(chosen) == 1 and auto["validation_score"] == pytest.approx(chosen[0]["score"])
    for t in auto["trials"]:
        assert t["score"] <= chosen[0]["score"] + (MIN_GAIN["accuracy"] if t["centers"] > auto["centers"] else 0)
    assert r.report["spec"]["solver"] == {"name": "krr_nystrom"}  # the concrete spec: kopt solve reproduces it
    assert r.report["spec"]["model"]["regularizer"]["lambda"] == auto["lambda"]
    assert r.metrics["accuracy"] > 0.85 and "auto_s" in r.timings and r.report["auto"]["why"].startswith(f"{auto['centers']}")
    again = _solve({**r.report["spec"], "output": {"model": False, "report": False}}, (X[:1200], y[:1200], X[1200:], y[1200:]))
    # the same model to the solves' certified tolerance: the chosen run reused the search's system (its sums
    # added in another order), the reproduction builds it from scratch.  The objective is λ-strongly convex, so
    # a solve with duality gap g is within √(2g/λ) of the optimum in the RKHS norm, and pointwise too
    # (k(x, x) = 1); the same auto spec again gives the same bits
    assert r.info["reused_search_system"] and "reused_search_system" not in again.info
    lam = auto["lambda"]
    certified = sum(np.sqrt(2 * max(res.report["gap"], 0.0) / lam) for res in (r, again))
    assert certified < 0.5  # a certificate that says something at this λ (scores of ±1 labels)
    f_again, f = again.model.decision_function(X), r.model.decision_function(X)
    # (+ the rounding of two systems summed in other orders: 1.5e-9 seen with OpenBLAS's SkylakeX kernels)
    np.testing.assert_allclose(f_again, f, rtol=0, atol=certified + 1e-8)
    assert np.mean(np.sign(f_again) == np.sign(f)) > 0.995
    twice = _solve(spec, (X[:1200], y[:1200], X[1200:], y[1200:]))
    np.testing.assert_array_equal(twice.model.decision_function(X), r.model.decision_function(X))


def test_numbers_given_are_taken_as_given():
    X, y = _data(n=800)
    spec = {"seed": 2, "model": {"loss": {"name": "square", "target": "binary"},
                                 "kernel": {"name": "gaussian", "bandwidth": 0.7},
                                 "regularizer": {"name": "l2", "lambda": 3e-3}, "features": {"kind": "nystrom", "count": 64}},
            "output": {"model": False, "report": False}}
    r = _solve(spec, (X, y))
    assert r.auto["lambda"] == 3e-3 and r.auto["centers"] == 64 and r.auto["bandwidth"] == 0.7
    assert {t["centers"] for t in r.auto["trials"]} == {64} and len(r.auto["trials"]) == 1


def test_the_search_stops_at_its_budget():
    X, y = _data(n=3000)
    spec = {"model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "budget": 1e-3}, "output": {"model": False, "report": False}}
    r = _solve(spec, (X, y))
    assert {t["centers"] for t in r.auto["trials"]} == {256}  # the first size only: the next would pass the budget


@pytest.mark.slow
@pytest.mark.parametrize("loss, route", [("logistic", "newton_pcg"), ("hinge", "joker (auto)")])
def test_other_losses_are_solved_at_the_chosen_settings(loss, route):
    """A smooth loss with a bounded curvature by Newton-CG on the chosen centers; a nonsmooth one by joker."""
    X, y = _data(n=800)
    spec = {"model": {"loss": {"name": loss}, "kernel": {"name": "gaussian"}}, "output": {"model": False, "report": False}}
    r = _solve(spec, (X[:600], y[:600], X[600:], y[600:]))
    assert r.auto["route"] == route and r.report["spec"]["solver"]["name"] == route.split()[0]
    assert r.metrics["accuracy"] > 0.8


def test_the_form_follows_the_solver_and_auto_is_the_default_solver():
    spec = kopt.load_spec({"model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian"}},
                           "solver": {"name": "joker"}}, check_files=False)
    assert spec["model"]["form"] == "dual"  # joker solves the dual: no model.form needed
    spec = kopt.load_spec({"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"}}}, check_files=False)
    assert spec["solver"]["name"] == "auto" and spec["model"]["kernel"]["bandwidth"] == "auto"
    with pytest.raises(SpecError, match="solver joker solves form dual, not 'primal'|solves form dual"):
        kopt.load_spec({"model": {"loss": {"name": "squared_hinge"}, "kernel": {"name": "gaussian"}, "form": "primal"},
                        "solver": {"name": "joker"}}, check_files=False)


def test_auto_refuses_what_it_cannot_choose_for():
    with pytest.raises(SpecError, match="solver 'auto' handles real, binary targets"):
        kopt.load_spec({"model": {"loss": {"name": "kl_density_ratio"}, "kernel": {"name": "gaussian"}}},
                       check_files=False)
    with pytest.raises(SpecError, match="chooses the spec before a fresh solve"):
        X, y = _data(n=100)
        kopt.solve({"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"}}}, data=(X, y), resume=True)


def test_cli_summary_and_report(tmp_path):
    X, y = _data(n=600)
    np.savez(tmp_path / "train.npz", X=X.astype(np.float32), y=y)
    (tmp_path / "s.yaml").write_text(f"data: {{train: {tmp_path / 'train.npz'}}}\n"
                                     "model: {loss: {name: square, target: binary}, kernel: {name: gaussian}}\n")
    assert main(["solve", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["auto"]["route"] == "krr_nystrom" and report["spec"]["solver"]["name"] == "krr_nystrom"
    assert report["timings"]["auto_s"] > 0


def test_gain_error_is_the_paired_standard_error():
    from kopt_plugins.auto.scoring import gain, gain_error, score

    rng = np.random.default_rng(0)
    old = (rng.random(4000) < 0.8).astype(float)
    new = old.copy()
    flip = rng.choice(4000, 200, replace=False)  # 200 rows change outcome: 100 each way would be no gain
    new[flip[:130]] = 1.0
    new[flip[130:]] = 0.0
    d = new - old
    assert gain_error("accuracy", old, new) == pytest.approx(d.std(ddof=1) / np.sqrt(4000))
    assert gain_error("accuracy", old, old) == 0.0  # the same model: nothing to tell apart
    # RMSE: the relative cut's error by the delta method, against the spread of many resampled validation sets
    e_old = rng.gamma(2.0, 1.0, 3000)
    e_new = e_old * rng.uniform(0.8, 1.15, 3000)
    boots = []
    for _ in range(400):
        i = rng.integers(0, 3000, 3000)
        boots.append(gain("rmse", score("rmse", e_old[i]), score("rmse", e_new[i])))
    assert gain_error("rmse", e_old, e_new) == pytest.approx(np.std(boots), rel=0.15)


@pytest.mark.slow
def test_the_ladder_stops_where_the_validation_rows_cannot_tell_two_doublings_gained(monkeypatch):
    """On few, noisy validation rows a doubling's gain is within its standard error: the ladder goes one size
    further (PATIENCE), then stops, though the gains pass MIN_GAIN; with the noise rule off it reaches the top."""
    from kopt_plugins.auto import scoring

    rng = np.random.default_rng(3)
    X = rng.standard_normal((1500, 4))
    y = np.where(X[:, 0] + 1.5 * rng.standard_normal(1500) > 0, 1, -1)  # mostly label noise
    spec = {"model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 2048}, "output": {"model": False, "report": False}}
    monkeypatch.setattr(scoring, "MIN_GAIN", {"accuracy": -1.0, "rmse": -1.0})  # only the noise rule can stop it
    r = _solve(spec, (X, y))
    sizes = sorted({t["centers"] for t in r.auto["trials"]})
    monkeypatch.setattr(scoring, "GAIN_ERRORS", 0.0)
    off = sorted({t["centers"] for t in _solve(spec, (X, y)).auto["trials"]})
    assert sizes == off[:len(sizes)] and len(sizes) >= 3 and len(off) > len(sizes)


def _level(M, correct):
    """A ladder size whose best model got the validation rows in ``correct`` right (accuracy outcomes)."""
    from kopt_plugins.auto.planner import Level
    from kopt_plugins.auto.records import Trial

    rows = np.asarray(correct, dtype=float)
    best = Trial(centers=M, bandwidth_factor=1.0, bandwidth=1.0, lam=1e-3, score=float(rows.mean()), lam_index=4,
                 path={}, seconds=0.0)
    return Level(M, (1.0,), np.arange(M), best=best, rows=rows)


def _setting(n_val, counts=None):
    from types import SimpleNamespace

    logs = []
    return SimpleNamespace(rows=SimpleNamespace(metric="accuracy", n_val=n_val), counts=counts, has_bw=True,
                           bandwidth_rule=True, log=logs.append, logs=logs)


def _three_sizes(n):
    """256, 512 and 1,024 centers on ``n`` validation rows: 512 get 10 rows right that 256 got wrong and 8 wrong
    that it got right (2 rows: within the paired standard error of √18 rows), 1,024 get 20 right and the same 8
    wrong (12 rows: past its √28)."""
    base = np.zeros(n)
    base[:n * 3 // 4] = 1
    plus2, plus12 = base.copy(), base.copy()
    plus2[n * 3 // 4:n * 3 // 4 + 10] = plus12[n * 3 // 4:n * 3 // 4 + 20] = 1
    plus2[:8] = plus12[:8] = 0
    return _level(256, base), _level(512, plus2), _level(1024, plus12)


def test_two_doublings_that_gain_together_what_one_cannot_resolve_keep_the_ladder_growing(monkeypatch):
    """1,200 validation rows (they resolve MIN_GAIN): 512 centers gain 2 rows over 256, within the noise, 1,024
    gain 12, past it.  Measured against the last size that gained (256), the ladder goes on after 512 with 1/√2 of
    the bandwidth to try, and 1,024 becomes the size the next ones answer to; with PATIENCE 0 it stops at 512."""
    from kopt_plugins.auto import planner

    s = _setting(1200)
    state = planner.Ladder(trials=[], hinge=False)
    first, second, third = _three_sizes(1200)
    assert planner._measured(s, state, first) == 0 and state.anchor.level is first
    assert planner._measured(s, state, second) == 1 and state.anchor.level is first and state.shorten
    assert any("one more size" in line for line in s.logs)
    assert planner._measured(s, state, third) == 0 and state.anchor.level is third

    monkeypatch.setattr(planner, "PATIENCE", 0)
    state = planner.Ladder(trials=[], hinge=False)
    planner._measured(s, state, first)
    assert planner._measured(s, state, second) > planner._patience(s)


def test_no_size_of_patience_where_the_validation_rows_cannot_resolve_the_gain():
    """On fewer than 1/MIN_GAIN validation rows (one row moves the score by more than MIN_GAIN) the extra size's
    models would win by a row or two of noise: the first doubling that does not gain stops the ladder."""
    from kopt_plugins.auto import planner, scoring

    few = int(np.ceil(1.0 / scoring.MIN_GAIN["accuracy"])) - 1
    s = _setting(few)
    state = planner.Ladder(trials=[], hinge=False)
    first, second, _ = _three_sizes(few)
    planner._measured(s, state, first)
    assert planner._patience(s) == 0 and planner._measured(s, state, second) == 1 > planner._patience(s)
    assert planner._patience(_setting(few + 1)) == planner.PATIENCE == 1


def test_a_second_doubling_without_gain_stops_the_ladder():
    """After one size that did not gain, a second that does not gain over the anchor either stops the ladder; the
    user's own center counts are never stopped by the noise rule."""
    from kopt_plugins.auto import planner

    flat = np.r_[np.ones(900), np.zeros(300)]
    s = _setting(1200)
    state = planner.Ladder(trials=[], hinge=False)
    levels = [_level(M, flat) for M in (256, 512, 1024)]
    assert [planner._measured(s, state, lv) for lv in levels] == [0, 1, 2]
    assert state.anchor.level is levels[0] and 2 > planner._patience(s)

    s = _setting(1200, counts=[256, 512, 1024])
    state = planner.Ladder(trials=[], hinge=False)
    assert [planner._measured(s, state, lv) for lv in levels] == [0, 0, 0]


def test_the_ladder_stops_at_the_fit_rows_so_no_center_is_a_validation_row(monkeypatch):
    """On 600 training rows (480 fit, 120 held out) and a ladder that never stops on its own, the sizes are 256 and
    480, not 256 and 600: a validation row that is a center is scored by a coefficient fitted without its label."""
    from kopt_plugins.auto import planner

    seen = []
    tried = planner._try_bandwidth

    def watch(s, state, level, factor):
        seen.append((level.M, len(np.intersect1d(level.centers, s.rows.validation))))
        return tried(s, state, level, factor)

    monkeypatch.setattr(planner, "_try_bandwidth", watch)
    monkeypatch.setattr(planner, "_stops", lambda *a: False)
    spec = {"seed": 0, "backend": "numpy", "output": {"model": False, "report": False},
            "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"}}, "solver": {"name": "auto"}}
    r = _solve(spec, _data(600))
    assert sorted({M for M, _ in seen}) == [256, 480] and all(held == 0 for _, held in seen)
    assert r.auto["centers"] in (256, 480)


@pytest.mark.slow
def test_a_shorter_bandwidth_is_tried_again_while_it_wins_resolvably(monkeypatch):
    """A checkerboard of short period: 1/√2 of the bandwidth wins at 512 centers by far more than its standard
    error, so the next size tries 1/√2 of that again (and it wins there); without the rule the bandwidth is fixed
    from the third size on."""
    from kopt_plugins.auto import planner

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (9000, 2))
    y = np.where(np.sin(9 * X[:, 0]) * np.sin(9 * X[:, 1]) > 0, 1, -1)
    spec = {"model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 1024}, "output": {"model": False, "report": False}}
    data = (X[:8000], y[:8000], X[8000:], y[8000:])
    r = _solve(spec, data)
    at_1024 = {t["bandwidth_factor"]: t["score"] for t in r.auto["trials"] if t["centers"] == 1024}
    assert len(at_1024) == 2 and r.auto["bandwidth_factor"] == min(at_1024)
    monkeypatch.setattr(planner, "SHORTEN_WHILE_RESOLVED", False)
    fixed = _solve(spec, data)
    assert len([t for t in fixed.auto["trials"] if t["centers"] == 1024]) == 1
    assert r.metrics["accuracy"] > fixed.metrics["accuracy"]


@pytest.mark.parametrize("loss", ["square", "squared_hinge"])
def test_the_plan_hands_on_its_validation_rows_and_scores_for_the_calibration(loss):
    """The held-out scores a margin classifier is calibrated on are the search's, on its seeded 20%: the
    validation rows of make_splits(n, seed), scored by the chosen trial's model (fitted on the other rows)."""
    from kopt.running.assemble import assemble
    from kopt.running.validation import make_splits
    from kopt.spec import load_spec

    X, y = _data(n=400)
    target = {"target": "binary"} if loss == "square" else {}
    spec = load_spec({"seed": 3, "backend": "numpy", "model": {"loss": {"name": loss, **target},
                                                               "kernel": {"name": "gaussian"}},
                      "output": {"model": False, "report": False}}, check_files=False)
    problem = assemble(spec, (X, y))
    plan = spec.component(("solver",)).plan(problem, spec.given, None)
    (_, va), = make_splits(400, 3, validation=0.2)
    np.testing.assert_array_equal(plan.held_out["rows"], va)
    S = plan.held_out["scores"]
    assert S.shape == (80, 1) and np.isfinite(S).all()
    # the scores are the chosen trial's: their accuracy is the validation score auto recorded
    right = np.mean(np.sign(S[:, 0]) == np.asarray(problem.y)[va])
    assert right == pytest.approx(plan.record["validation_score"], abs=1e-12)
    result = _solve(spec, (X, y))
    assert result.model.calibration["rows"] == 80 and "validation rows" in result.model.calibration["source"]
    assert result.report["calibration"]["a"] == result.model.calibration["a"]
