"""solver: auto's smooth losses past its sample size (plugins/auto/smooth.py): a named loss gets its own λ on the
sample and newton_pcg on every row; the loss left to auto scores the logistic loss and the squared hinge beside the
square loss on the held-out rows."""
from __future__ import annotations

import numpy as np
import pytest

import kopt
from kopt_plugins.auto import smooth


@pytest.fixture
def small_sample(monkeypatch):
    """auto's large-data route at test size: the direct search on 1,500 rows, 400 validation rows."""
    from kopt_plugins.auto import large

    monkeypatch.setattr(large, "SEARCH_ROWS", 1500)
    monkeypatch.setattr(large, "VALIDATION_ROWS", 400)
    monkeypatch.setattr(large, "MAX_GROWN_CENTERS", 512)
    return large


def _data(n=4000, n_test=1000, seed=4, flip=0.05):
    """A boundary with label noise: the sign of sin(3 x0) sin(3 x1) on two columns, 5% of the labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n + n_test, 2)).astype(np.float32)
    y = np.where(np.sin(3 * X[:, 0]) * np.sin(3 * X[:, 1]) > 0, 1, -1) * np.where(rng.random(n + n_test) < flip, -1, 1)
    return X[:n], y[:n], X[n:], y[n:]


def _spec(loss, **solver):
    return {"name": "smooth-large", "seed": 5, "model": {"loss": loss, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 64, **solver}, "output": {"model": False, "report": False}}


@pytest.mark.slow
@pytest.mark.parametrize("loss", [{"name": "logistic"}, {"name": "huber", "target": "binary"}, {"name": "squared_hinge"}])
def test_a_named_smooth_loss_gets_its_own_lambda_and_newton_pcg_on_every_row(small_sample, loss):
    X, y, Xt, yt = _data()
    r = kopt.solve(_spec(loss), data=(X, y, Xt, yt))
    auto = r.auto
    assert auto["route"] == "newton_pcg" and r.report["spec"]["solver"]["name"] == "newton_pcg"
    path = [t for t in auto["trials"] if t.get("loss") == loss["name"] and "passes" in t]
    assert len(path) == 1 and path[0]["lam"] == auto["lambda"] and len(path[0]["path"]) >= 2  # the walk took steps
    assert "warm from the sample's model" in auto["why"]
    assert r.status == "converged" and r.info["rel_gap"] <= smooth.FINAL_TOL
    assert r.metrics["accuracy"] > 0.85


@pytest.mark.slow
def test_a_given_lambda_is_the_path_s_only_lambda(small_sample):
    X, y, Xt, yt = _data()
    spec = _spec({"name": "logistic"})
    spec["model"]["regularizer"] = {"name": "l2", "lambda": 1e-4}
    r = kopt.solve(spec, data=(X, y, Xt, yt))
    path = [t for t in r.auto["trials"] if "passes" in t]
    assert r.auto["lambda"] == 1e-4 and list(path[0]["path"]) == ["0.0001"]


@pytest.mark.slow
def test_the_loss_left_to_auto_scores_the_logistic_loss_and_the_squared_hinge(small_sample):
    X, y, Xt, yt = _data()
    r = kopt.solve(_spec({"name": "auto"}), data=(X, y, Xt, yt))
    record = r.auto["loss"]
    assert {"square_score", "logistic_score", "squared_hinge_score", "logistic_standard_error"} <= set(record)
    assert record["chosen"] in ("square", "logistic", "squared_hinge") and "held-out rows" in record["why"]
    solver = r.report["spec"]["solver"]["name"]
    assert (solver == "newton_pcg") == (record["chosen"] != "square")
    if record["chosen"] != "square":
        assert r.report["spec"]["model"]["loss"]["name"] == record["chosen"]


def test_the_screen_s_two_paths_factor_the_centers_once_and_score_as_with_their_own(small_sample, monkeypatch):
    """The logistic loss's and the squared hinge's paths run on the same sample rows, centers and kernel: the second
    takes the first's kept centers and U (no second pivoted Cholesky of the centers), and its path, λ and held-out
    scores are bit for bit those of a path that factors the centers itself."""
    from kopt.nystrom import cg as cg_mod
    from kopt_plugins.auto import smooth as smooth_mod

    X, y, Xt, yt = _data()
    made = []
    center_factors = cg_mod.center_factors
    monkeypatch.setattr(cg_mod, "center_factors", lambda *a, **k: made.append(1) or center_factors(*a, **k))
    paths = []
    loss_path = smooth_mod.loss_path
    monkeypatch.setattr(smooth_mod, "loss_path", lambda *a, **k: paths.append(loss_path(*a, **k)) or paths[-1])
    shared = kopt.solve(_spec({"name": "auto"}), data=(X, y, Xt, yt))
    screens = len(made)
    monkeypatch.setattr(smooth_mod, "loss_path", lambda *a, shared=None, **k: paths.append(loss_path(*a, **k))
                        or paths[-1])
    made.clear()
    own = kopt.solve(_spec({"name": "auto"}), data=(X, y, Xt, yt))
    assert screens == len(made) - 1  # one factor of the centers fewer: the second path's
    assert len(paths) == 4 and all(p is not None for p in paths)
    first, second = paths[:2], paths[2:]
    for a, b in zip(first, second):
        assert a.loss == b.loss and a.lam == b.lam and a.path == b.path and a.passes == b.passes
        np.testing.assert_array_equal(a.scores, b.scores)
    assert shared.auto["loss"]["chosen"] == own.auto["loss"]["chosen"]


def test_another_loss_is_chosen_only_past_two_standard_errors():
    rng = np.random.default_rng(0)
    square = (rng.random(2000) < 0.85).astype(float)

    def path(name, won, lost):
        rows = square.copy()
        rows[np.flatnonzero(rows == 0)[:won]] = 1.0  # rows the square loss had wrong and this one right
        rows[np.flatnonzero(square == 1)[:lost]] = 0.0  # and the other way
        return smooth.LossPath(loss=name, lam=1e-5, score=float(rows.mean()), rows=rows, scores=None, model=None,
                               path={}, passes=1, seconds=0.0)

    # 0.3 points within two standard errors (0.29 points each), and 3 points
    small, large = path("logistic", 20, 14), path("squared_hinge", 60, 0)
    picked, record = smooth.choose_loss(None, float(square.mean()), square, [small, None], "accuracy")
    assert picked is None and record["chosen"] == "square" and "square loss stands" in record["why"]
    picked, record = smooth.choose_loss(None, float(square.mean()), square, [small, large], "accuracy")
    assert picked is large and record["chosen"] == "squared_hinge"
    assert record["squared_hinge_gain"] == pytest.approx(0.03)


@pytest.mark.slow
def test_the_screen_leaves_the_square_loss_s_search_as_it_was(small_sample, monkeypatch):
    """Where the square loss stands, the loss left to auto grows the same centers at the same λ as the square loss
    named: the screen counts its work in a budget of its own."""
    X, y, Xt, yt = _data()
    named = kopt.solve(_spec({"name": "square", "target": "binary"}), data=(X, y, Xt, yt))
    monkeypatch.setattr(smooth, "choose_loss", lambda problem, score, rows, paths, metric: (
        None, {"chosen": "square", "why": "the square loss stands (test)"}))
    left = kopt.solve(_spec({"name": "auto"}), data=(X, y, Xt, yt))
    assert left.auto["loss"]["work_flops"] > 0
    for key in ("route", "centers", "lambda", "bandwidth"):
        assert left.auto[key] == named.auto[key], key
    assert left.auto["budget"]["spent_flops"] == pytest.approx(named.auto["budget"]["spent_flops"], rel=1e-12)


@pytest.mark.slow
def test_a_named_smooth_loss_walks_its_own_lambda_on_the_direct_route_too():
    """Up to the sample size the logistic loss's λ is walked from the square loss's on the search's own split (the
    square loss's λ is often far larger than the logistic loss's best), and newton_pcg starts from that model."""
    X, y, Xt, yt = _data(n=1500, n_test=500)
    r = kopt.solve(_spec({"name": "logistic"}), data=(X, y, Xt, yt))
    auto = r.auto
    path = [t for t in auto["trials"] if t.get("loss") == "logistic" and "passes" in t]
    assert auto["route"] == "newton_pcg" and len(path) == 1 and path[0]["lam"] == auto["lambda"]
    assert "the logistic loss's own lambda on the same split" in auto["why"] and "warm from that model" in auto["why"]
    assert r.status == "converged" and r.metrics["accuracy"] > 0.85


def _grown_for_rows(monkeypatch, gain, noise, work=2.4e13, sample_n=50_000, n=1_000_000):
    """``AutoSolver._centers_for_rows`` on a logistic choice of 512 centers and λ 1e-6 on a sample of ``sample_n``
    rows, whose rows gained ``gain`` over half of them (held to ``noise``): the chosen centers, λ and the log."""
    import types

    from kopt.contract.registry import registry
    from kopt_plugins.auto import large, records, solver
    from kopt_plugins.auto import work as auto_work

    monkeypatch.setattr(large, "memory_centers", lambda problem, available: 32_768)
    problem = types.SimpleNamespace(n=n, d=12, label_matrix=lambda: np.zeros((1, 1)))
    best = records.Trial(centers=512, bandwidth_factor=1.0, bandwidth=3.0, lam=1e-6, score=0.87, lam_index=0, path={})
    chosen = solver.LargeChoice(best=best, trials=[], metric="accuracy", split="", sample_n=sample_n, loss="logistic")
    first = large.SampleModel(centers=512, lam=3e-6, rows_gain=large.RowsGain(gain, noise))
    lines = []
    registry().get("solver", "auto")()._centers_for_rows(problem, chosen, first, n - 20_000, sample_n,
                                                           auto_work.Budget(work, None), lines.append)
    return chosen, lines


def test_where_the_sample_s_rows_still_gained_the_chosen_loss_s_centers_grow_with_the_rows(monkeypatch):
    """The rows gained 0.31 points (noise 0.11): on 980,000 fit rows the centers grow by √(980,000 / 50,000) = 4.43
    to the power of two below (2,048), λ falls by the same factor; newton_pcg's counted work bounds the count."""
    chosen, lines = _grown_for_rows(monkeypatch, 0.0031, 0.0011)
    factor = (980_000 / 50_000) ** 0.5
    assert chosen.best.centers == 2048 and chosen.grown == 2048
    assert chosen.best.lam == pytest.approx(1e-6 / factor, rel=1e-5)
    assert "takes 2048 centers" in lines[-1]
    small, _ = _grown_for_rows(monkeypatch, 0.0031, 0.0011, work=smooth.final_work(1_000_000, 1024, 12) * 1.01)
    assert small.best.centers == 1024  # the work left affords 1,024 centers' solve, not 2,048's


@pytest.mark.parametrize("gain, noise", [(0.0008, 0.0002), (0.0031, 0.0040)])
def test_a_flat_learning_curve_keeps_the_sample_s_centers(monkeypatch, gain, noise):
    """Less than 0.10 points, or within the noise: the sample's 512 centers and λ stand."""
    chosen, lines = _grown_for_rows(monkeypatch, gain, noise)
    assert chosen.best.centers == 512 and chosen.best.lam == 1e-6 and chosen.grown is None and not lines


@pytest.mark.slow
@pytest.mark.parametrize("loss, asked", [({"name": "logistic"}, True), ({"name": "squared_hinge"}, False)])
def test_a_named_smooth_loss_asks_whether_its_centers_grow_with_the_rows(small_sample, monkeypatch, loss, asked):
    """A named logistic loss past the sample size goes through the same rule as the loss the screen chose, with the
    square loss's sample model as the learning curve; the squared hinge's search keeps no square-loss system."""
    from kopt_plugins.auto import solver

    calls = []
    monkeypatch.setattr(solver.AutoSolver, "_centers_for_rows",
                        lambda self, problem, chosen, first, n_fit, sample_n, budget, log: calls.append(first))
    X, y, Xt, yt = _data()
    r = kopt.solve(_spec(loss), data=(X, y, Xt, yt))
    assert r.auto["route"] == "newton_pcg"
    assert len(calls) == int(asked)
    if asked:
        assert calls[0].full_score is not None and calls[0].centers == r.auto["centers"]
