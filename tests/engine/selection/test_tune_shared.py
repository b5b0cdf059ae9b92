"""kopt tune's shared path on Nyström centers (kopt.selection.nystrom_folds): every λ of a fold from one system.

The scores are checked against a dense float64 solve of the same grid point on the same fold, with
the centers the refit draws (the refit is a normal kopt.solve), and the tolerance is shown to be
far below what a wrong system (held-out rows in A, the wrong λ) would change.
"""
from __future__ import annotations

import numpy as np
import pytest

import kopt
from kopt.errors import NonFiniteModelError
from kopt.running.validation import LAMBDA, make_splits
from kopt.selection.nystrom_folds import parts_of
from kopt.selection.tune import tune

pytestmark = pytest.mark.filterwarnings("ignore::kopt.errors.ConvergenceWarning")

BW = "model.kernel.bandwidth"
#: relative tolerance of a fold's RMSE against the dense float64 solve
TOL = 1e-4


def _data(n=240, task="binary", seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    f = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1]
    if task == "binary":
        return X, np.where(f > 0, 1, -1)
    if task == "multiclass":
        return X, np.digitize(f, [-0.4, 0.4])  # classes 0, 1, 2
    return X, 3.0 + 2.0 * f + 0.1 * rng.standard_normal(n)


def _spec(task="binary", solver="krr_nystrom", count=40, standardize_target=False):
    loss = {"name": "square"} if task == "real" else {"name": "square", "target": "binary"}
    spec = {"name": "s", "seed": 5, "backend": "numpy",
            "data": {"standardize": False, "standardize_target": standardize_target},
            "model": {"loss": loss, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                      "regularizer": {"name": "l2", "lambda": 1e-3}},
            "solver": {"name": solver}}
    if solver == "krr_nystrom":
        spec["model"]["features"] = {"kind": "nystrom", "count": count}
        spec["model"]["form"] = "primal"
    elif count:
        spec["model"]["features"] = {"count": count}
    return spec


def _not_centers(model, X, va):
    """The held-out rows ``va`` that are not among the model's centers (kopt tune scores a fold on those)."""
    support = {row.tobytes() for row in np.asarray(model.predictor.arrays["support"], dtype=np.float32)}
    return np.asarray([i for i in va if X[i].astype(np.float32).tobytes() not in support])


def _reference(model, X, y, tr, va, lam, task, standardize_target=False):
    """The validation metric of the full float64 solve of fold (tr, va) on the refit's centers."""
    C = np.asarray(model.predictor.arrays["support"], dtype=np.float64)
    kernel = model.kernel
    K, Kv = kernel.exact(X[tr], C), kernel.exact(X[va], C)
    R = kernel.exact(C, C)  # the support is the well-conditioned basis krr_nystrom kept
    n = len(tr)
    if task == "real":
        mu, s = (y[tr].mean(), y[tr].std()) if standardize_target else (0.0, 1.0)
        T = ((y[tr] - mu) / s)[:, None]
    else:
        classes = np.unique(y)
        cols = classes if classes.size > 2 else classes[1:]
        T = np.where(y[tr][:, None] == cols[None, :], 1.0, -1.0)
    offset = T.mean(axis=0)  # krr_nystrom's fixed intercept: the fold's targets' mean
    w = np.linalg.solve(K.T @ K / n + lam * R, K.T @ (T - offset) / n)
    S = Kv @ w + offset
    if task == "real":
        return float(np.sqrt(np.mean((S[:, 0] * s + mu - y[va]) ** 2)))
    pred = classes[np.argmax(S, axis=1)] if classes.size > 2 else np.where(S[:, 0] > 0, classes[1], classes[0])
    return float(np.mean(pred == y[va]))


def _fold_scores(result, params):
    row = next(r for r in result.rows if r["params"] == params)
    return row["scores"]


@pytest.mark.slow
@pytest.mark.parametrize("task,standardize_target", [("real", False), ("real", True)])
def test_scores_equal_the_full_solve_of_each_fold_and_a_wrong_system_would_not(task, standardize_target):
    X, y = _data(task=task)
    grid = [f"{LAMBDA}=1e-4,1e-3,1e-2", f"{BW}=0.7,1.4"]
    r = tune(_spec(task, standardize_target=standardize_target), grid, folds=3, data=(X, y), refit=True)
    assert r.info["shared"]["systems"] == 3 * 2  # one per held-out part and bandwidth
    splits = make_splits(X.shape[0], 5, folds=3)
    for bw in (0.7, 1.4):
        refit = kopt.solve(r.best_spec, data=(X, y), overrides=[f"{BW}={bw}"])  # its centers: the shared ones
        # the centers' rows lie in some fold's held-out part, and are not what that fold is scored on
        assert any(len(_not_centers(refit.model, X, va)) < len(va) for _, va in splits)
        for lam in (1e-4, 1e-2):
            got = _fold_scores(r, {BW: bw, LAMBDA: lam})
            for f, (tr, va) in enumerate(splits):
                scored = _not_centers(refit.model, X, va)
                assert 0 < len(scored) <= len(va)
                want = _reference(refit.model, X, y, tr, scored, lam, task, standardize_target)
                # float32 kernel values against float64: measured at most 5.0e-5 relative here (40 scored rows)
                assert got[f] == pytest.approx(want, rel=TOL)
                # what the tolerance guards against: A with the held-out rows in it, or λ x 100 (a scale the
                # scores tell apart wherever λ sits on this data; x 3 did not at the optimum)
                leaked = _reference(refit.model, X, y, np.arange(X.shape[0]), scored, lam, task, standardize_target)
                other = _reference(refit.model, X, y, tr, scored, lam * 100, task, standardize_target)
                assert abs(leaked - want) > 10 * TOL * want and abs(other - want) > 10 * TOL * want


@pytest.mark.slow
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_classification_scores_equal_the_full_solve(task):
    X, y = _data(task=task)
    r = tune(_spec(task), [f"{LAMBDA}=1e-4,1e-2", f"{BW}=0.8,1.6"], folds=3, data=(X, y), refit=True)
    splits = make_splits(X.shape[0], 5, folds=3)
    for bw in (0.8, 1.6):
        refit = kopt.solve(r.best_spec, data=(X, y), overrides=[f"{BW}={bw}"])
        for lam in (1e-4, 1e-2):
            got = _fold_scores(r, {BW: bw, LAMBDA: lam})
            want = [_reference(refit.model, X, y, tr, _not_centers(refit.model, X, va), lam, task) for tr, va in splits]
            # float32 kernel values against float64: at most one held-out row's sign may differ
            assert np.allclose(got, want, atol=1.0 / 80 + 1e-12)
    best = r.rows.index(next(x for x in r.rows if x["params"] == r.best_params))
    assert r.best_score == max(x["score"] for x in r.rows) and r.rows[best]["converged"]


def test_a_fold_system_is_the_sum_of_its_parts():
    from kopt.nystrom.centers import choose_centers
    from kopt.nystrom.system import NystromSystem
    from kopt.running.assemble import assemble
    from kopt.spec import load_spec

    X, y = _data(task="multiclass")
    problem = assemble(load_spec(_spec("multiclass"), check_files=False), (X, y))
    C = problem.X[choose_centers(problem, 40)]
    Y = problem.label_matrix()
    splits = make_splits(X.shape[0], 5, folds=3)
    parts, held = parts_of(splits, X.shape[0])
    systems = [NystromSystem(problem.kernel, problem.X[p], Y[p], C) for p in parts]
    for f, (tr, _) in enumerate(splits):
        direct = NystromSystem(problem.kernel, problem.X[tr], Y[tr], C)
        summed = NystromSystem.total([s for j, s in enumerate(systems) if j != held[f]])
        assert summed.n == len(tr)
        assert np.allclose(summed.An, direct.An, rtol=1e-10, atol=1e-12)
        assert np.allclose(summed.Bn, direct.Bn, rtol=1e-10, atol=1e-12)
        assert not np.allclose(systems[held[f]].An, direct.An, rtol=1e-3)  # the held-out part is not in it


def test_a_validation_split_and_an_unresolved_lambda(monkeypatch):
    from kopt.nystrom.system import NystromSystem

    X, y = _data(task="binary")
    # the whitened system resolves every λ the grids use (down to 1e-9 at a long bandwidth) ...
    r = tune(_spec("binary"), [f"{LAMBDA}=1e-9,1e-3", f"{BW}=3"], validation=0.25, data=(X, y))
    assert all(np.isfinite(x["score"]) and x["unresolved"] == 0 for x in r.rows)
    assert r.info["shared"]["parts"] == 2 and r.info["shared"]["systems"] == 2
    # ... and a λ the system does not resolve (path gives None) scores NaN and is never the best
    path = NystromSystem.path
    monkeypatch.setattr(NystromSystem, "path", lambda self, lams, K: [None if lam < 1e-6 else S for lam, S in
                                                                      zip(lams, path(self, lams, K))])
    r = tune(_spec("binary"), [f"{LAMBDA}=1e-9,1e-3", f"{BW}=3"], validation=0.25, data=(X, y))
    tiny = next(x for x in r.rows if x["params"][LAMBDA] == 1e-9)
    assert np.isnan(tiny["score"]) and not tiny["converged"] and tiny["unresolved"] == 1
    assert r.best_params[LAMBDA] == 1e-3
    with pytest.raises(NonFiniteModelError, match="no lambda of the grid is resolved"):
        tune(_spec("binary"), [f"{LAMBDA}=1e-9", f"{BW}=30"], validation=0.25, data=(X, y))


def test_solver_auto_runs_its_route_on_the_shared_path_and_refits_it():
    X, y = _data(task="binary")
    r = tune(_spec("binary", solver="auto", count=32), [f"{LAMBDA}=1e-3,1e-2", f"{BW}=1.0"], folds=2,
             data=(X, y), refit=True)
    assert "krr_nystrom on the 32 centers given" in r.info["shared"]["note"]
    assert r.best_spec["solver"]["name"] == "krr_nystrom" and r.best_spec["model"]["features"]["count"] == 32
    assert r.refit.info["n_centers"] == 32
    # without a count: the centers auto's own search chooses, once
    r2 = tune(_spec("binary", solver="auto", count=None), [f"{LAMBDA}=1e-3,1e-2"], folds=2, data=(X, y))
    assert "its search chose" in r2.info["shared"]["note"] and r2.best_spec["solver"]["name"] == "krr_nystrom"


def test_other_solvers_and_losses_keep_the_general_path():
    X, y = _data(task="binary")
    spec = _spec("binary")
    spec["model"]["loss"] = {"name": "squared_hinge"}
    spec["solver"] = {"name": "joker", "mode": "primal"}
    spec["model"]["form"] = "dual"
    r = tune(spec, [f"{LAMBDA}=1e-2,1e-3"], folds=2, data=(X, y))
    assert "shared" not in r.info and r.info["solver"] == "joker"


def test_parts_of_refuses_overlapping_held_out_rows():
    idx = np.arange(10)
    with pytest.raises(ValueError, match="overlap"):
        parts_of([(idx[5:], idx[:5]), (idx[3:], idx[:3])], 10)


@pytest.mark.slow
def test_cli_tune_on_the_shared_path_says_so_and_refits(seeded_data, tmp_path, capsys):
    import json

    from kopt.cli import main

    out = tmp_path / "t"
    rc = main(["tune", "auto_higgs12k", "--set", "data.max_rows=1200", "--set", "model.features.count=64",
               "--grid", "model.regularizer.lambda=1e-4,1e-2", "--grid", "model.kernel.bandwidth_factor=0.5,1",
               "--folds", "3", "--refit", "--quiet", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "λ path shared: 6 Nystrom systems on 64 centers" in text and "refit on all training rows: test accuracy" in text
    record = json.loads((out / "tune.json").read_text())
    assert record["shared"]["systems"] == 6 and len(record["rows"]) == 4
    assert kopt.load_spec(str(out / "best.yaml"))["solver"]["name"] == "krr_nystrom"
