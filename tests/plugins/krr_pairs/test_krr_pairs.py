"""krr_pairs: one-vs-one kernel ridge regression on Nystrom centers -- each pair's model against a float64 solve of
its own problem, the summed certificate, the votes, the model file, and the errors users get."""
from __future__ import annotations

import numpy as np
import pytest

import kopt
from kopt.errors import KoptError, SpecError
from kopt.models.predictors import vote_scores
from kopt.numerics.objectives import primal

BANDWIDTH, LAM = 1.5, 1e-3


def _classes(n=480, k=4, d=3, seed=0):
    """``k`` classes on curved, overlapping clusters (ids 0..k-1)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    angle = 2 * np.pi * y / k + 0.4 * rng.standard_normal(n)
    X = np.c_[np.cos(angle) * (1 + 0.3 * y), np.sin(angle), 0.5 * rng.standard_normal((n, d - 2))]
    return X, y


def _spec(count=60, lam=LAM, **solver):
    return {"seed": 3, "data": {"standardize": False},
            "model": {"loss": {"name": "square", "target": "binary"},
                      "kernel": {"name": "gaussian", "bandwidth": BANDWIDTH},
                      "regularizer": {"name": "l2", "lambda": lam}, "form": "primal",
                      "features": {"kind": "nystrom", "count": count, "dtype": "float64"}},
            "solver": {"name": "krr_pairs", **solver}, "output": {"model": False, "report": False}}


def _gauss(A, B):
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-np.maximum(d2, 0) / (2 * BANDWIDTH**2))


def _pair_reference(X, y, S, a, b, weights=None):
    """Pair (a, b)'s minimiser of λ/2 wᵀRw + mean_i w_i ½(k_iᵀw + μ − y_i)² on the centers S, in float64."""
    m = np.isin(y, (a, b))
    t = np.where(y[m] == a, 1.0, -1.0)
    w = np.ones(m.sum()) if weights is None else weights[m] / weights[m].mean()
    mu = float((w * t).sum() / w.sum())
    K, R = _gauss(X[m], S), _gauss(S, S)
    n = m.sum()
    coef = np.linalg.solve((K * w[:, None]).T @ K / n + LAM * R, (K * w[:, None]).T @ (t - mu) / n)
    return coef, mu, K, R, t, w


@pytest.mark.parametrize("weighted", [False, True])
def test_each_pair_is_its_own_ridge_problem_solved_and_the_certificate_sums_them(weighted):
    X, y = _classes()
    Xt, _ = _classes(120, seed=1)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, len(y)) if weighted else None
    r = kopt.solve(_spec(), data=(X, y), sample_weight=weights)
    a = r.model.predictor.arrays
    assert len(a["pairs"]) == 6 and r.info["pairs"] == 6
    S = a["support"]
    P = 0.0
    for p, (c1, c2) in enumerate(a["pairs"]):
        cols = a["columns"][a["offsets"][p]:a["offsets"][p + 1]]
        coef = a["coef"][a["offsets"][p]:a["offsets"][p + 1]]
        ref, mu, K, R, t, w = _pair_reference(X, y, S[cols], c1, c2, weights)
        f_model = _gauss(Xt, S[cols]) @ coef + a["intercepts"][p]
        f_ref = _gauss(Xt, S[cols]) @ ref + mu
        np.testing.assert_allclose(f_model, f_ref, atol=1e-6 * np.abs(f_ref).max())
        assert a["intercepts"][p] == pytest.approx(mu)
        P += primal(_square(), t - mu, K @ ref, LAM, float(ref @ R @ ref), None if weights is None else w)
    assert r.objective == pytest.approx(P, rel=1e-8)
    assert abs(r.info["rel_gap"]) < 1e-10


def _square():
    from kopt.contract.registry import registry

    return registry().get("loss", "square")()


def test_the_votes_decide_and_the_confidence_only_breaks_ties():
    pairs = np.array([(0, 1), (0, 2), (1, 2)])
    # row 0: 0 beats 1 and 2 (two votes); row 1: a three-way tie of one vote each, broken by the summed confidence
    F = np.array([[0.1, 0.2, -5.0], [1.0, -0.5, 2.0]])
    s = vote_scores(F, pairs, 3)
    assert np.argmax(s[0]) == 0 and s[0, 0] == pytest.approx(2 + 0.3 / (3 * 1.3))
    assert sorted(np.floor(s[1] + 0.5)) == [1, 1, 1]
    conf = np.array([1.0 - 0.5, -1.0 + 2.0, 0.5 - 2.0])  # class 0: +F01 +F02; class 1: −F01 +F12; class 2: −F02 −F12
    assert np.argmax(s[1]) == np.argmax(conf)
    assert np.all(np.abs(s - np.round(s)) < 1 / 3)


def test_the_vote_scores_are_votes_plus_squashed_confidence_pair_by_pair():
    rng = np.random.default_rng(0)
    C = 7
    pairs = np.array([(a, b) for a in range(C) for b in range(a + 1, C)])
    F = rng.standard_normal((50, len(pairs)))
    votes, conf = np.zeros((50, C)), np.zeros((50, C))
    for p, (a, b) in enumerate(pairs):
        votes[:, a] += F[:, p] > 0
        votes[:, b] += F[:, p] <= 0
        conf[:, a] += F[:, p]
        conf[:, b] -= F[:, p]
    np.testing.assert_allclose(vote_scores(F, pairs, C), votes + conf / (3 * (np.abs(conf) + 1)), rtol=0, atol=1e-15)


def test_predictions_are_the_vote_and_the_model_file_round_trips(tmp_path):
    X, y = _classes()
    Xt, yt = _classes(200, seed=5)
    r = kopt.solve(_spec(), data=(X, y))
    scores = r.model.decision_function(Xt)
    assert scores.shape == (200, 4)
    np.testing.assert_array_equal(r.model.predict(Xt), np.argmax(scores, axis=1))
    assert np.mean(r.model.predict(Xt) == yt) > 0.8
    path = r.model.save(tmp_path / "pairs")
    np.testing.assert_array_equal(kopt.load_model(path).decision_function(Xt), scores)


@pytest.mark.parametrize("count", [60, 480])
def test_the_scores_group_the_support_by_the_pairs_it_serves_and_equal_each_pair_s_own_expansion(count):
    """pairwise_scores takes the support rows in groups serving the same pairs (one a class where every row is a
    center); its scores are every pair's expansion on its own columns, voted (float64 products)."""
    from kopt.models.predictors import pair_groups

    X, y = _classes()
    Xt, _ = _classes(150, seed=5)
    r = kopt.solve(_spec(count=count), data=(X, y))
    a = r.model.predictor.arrays
    order, bounds, members, blocks = pair_groups(a["coef"], a["columns"], a["offsets"], len(a["pairs"]))
    assert sorted(order) == sorted(np.unique(a["columns"]))  # every support row a pair uses, once
    if count == 480:  # every row a center: a group per class, each serving that class's 3 pairs
        assert len(bounds) == 4 and all(len(m) == 3 for m in members)
    # each pair's scores from its own columns, in float64
    K = _gauss(Xt, a["support"].astype(np.float64))
    F = np.stack([K[:, a["columns"][lo:hi]] @ a["coef"][lo:hi] + a["intercepts"][p]
                  for p, (lo, hi) in enumerate(zip(a["offsets"][:-1], a["offsets"][1:]))], axis=1)
    np.testing.assert_allclose(r.model.decision_function(Xt), vote_scores(F, a["pairs"], 4), rtol=0, atol=1e-9)
    # the groups are made once a model and kept beside it, not pickled with it
    import pickle

    again = pickle.loads(pickle.dumps(r.model.predictor))
    assert hasattr(r.model.predictor, "_groups") and not hasattr(again, "_groups")
    np.testing.assert_array_equal(again.decision_function(Xt, r.model._context()), r.model.predictor.decision_function(
        Xt, r.model._context()))


def test_the_groups_add_a_row_listed_twice_and_skip_rows_no_pair_uses():
    from kopt.models.predictors import pair_groups

    # pair 0 uses rows 0, 2, 2 (row 2 twice); pair 1 uses rows 2, 3; row 1 is in no pair
    order, bounds, members, blocks = pair_groups(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([0, 2, 2, 2, 3]),
                                                 np.array([0, 3, 5]), 2)
    by_row = {int(order[i]): (g, i - lo) for g, (lo, hi) in enumerate(bounds) for i in range(lo, hi)}
    assert set(by_row) == {0, 2, 3}

    def coef(row, pair):
        g, i = by_row[row]
        where = np.flatnonzero(members[g] == pair)
        return float(blocks[g][i, where[0]]) if len(where) else 0.0

    assert coef(0, 0) == 1.0 and coef(2, 0) == 5.0 and coef(2, 1) == 4.0 and coef(3, 1) == 5.0 and coef(3, 0) == 0.0


def test_string_labels_are_classes_too():
    X, y = _classes()
    names = np.array(["ant", "bee", "cat", "dog"])[y]
    r = kopt.solve(_spec(), data=(X, names))
    assert set(r.model.predict(X[:50])) <= set(names)
    assert np.mean(r.model.predict(X) == names) > 0.8


def test_two_classes_or_a_real_target_are_refused_with_the_route_to_take():
    X, y = _classes(k=2)
    with pytest.raises(KoptError, match="at least 3 classes.*krr_nystrom"):
        kopt.solve(_spec(), data=(X, y))
    spec = _spec()
    spec["model"]["loss"] = {"name": "logistic"}
    with pytest.raises(SpecError, match="square loss only"):
        kopt.solve(spec, data=_classes())


# -- every row a center: each pair's exact KRR -------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_with_every_row_a_center_each_pair_is_its_rows_exact_ridge_regression(weighted):
    X, y = _classes(240)
    Xt, _ = _classes(60, seed=1)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, len(y)) if weighted else None
    r = kopt.solve(_spec(count=240), data=(X, y), sample_weight=weights)
    a = r.model.predictor.arrays
    assert a["support"].shape[0] == 240 and a["coef"].shape[0] == 3 * 240  # each row in C - 1 = 3 pairs
    for p, (c1, c2) in enumerate(a["pairs"]):
        cols = a["columns"][a["offsets"][p]:a["offsets"][p + 1]]
        # the pair's rows (the calibration's fit rows first: the factor's leading block is theirs)
        np.testing.assert_array_equal(np.sort(cols), np.flatnonzero(np.isin(y, (c1, c2))))
        m = np.isin(y, (c1, c2))
        t = np.where(y[m] == c1, 1.0, -1.0)
        w = np.ones(m.sum()) if weights is None else weights[m] / weights[m].mean()
        mu = (w * t).sum() / w.sum()
        n = m.sum()
        alpha = np.linalg.solve(_gauss(X[m], X[m]) + n * LAM * np.diag(1 / w), t - mu)  # (K + nλW⁻¹)α = y − μ
        f_ref = _gauss(Xt, X[m]) @ alpha + mu
        f_model = _gauss(Xt, a["support"][cols]) @ a["coef"][a["offsets"][p]:a["offsets"][p + 1]] + a["intercepts"][p]
        np.testing.assert_allclose(f_model, f_ref, atol=1e-7 * np.abs(f_ref).max())
    assert abs(r.info["rel_gap"]) < 1e-10


@pytest.mark.parametrize("weighted", [False, True])
def test_exact_pairs_calibrate_on_their_fit_rows_models_from_the_factors_leading_block(weighted):
    """With every row a center the solve makes the calibration's held-out scores itself: each pair's rows ordered with
    the calibration's fit rows first, the leading block of its factor is their system's (K_FF + n_ab λ W⁻¹), so its
    model of the fit rows alone scores the held-out rows -- no second solve.  The sigmoids are those of that model."""
    from kopt.models import calibration
    from kopt.models.predictors import vote_scores as votes

    X, y = _classes(240)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, len(y)) if weighted else None
    r = kopt.solve(_spec(count=240), data=(X, y), sample_weight=weights)
    cal = r.model.calibration
    fit_rows, held = calibration.held_out_rows(240, 3)  # the spec's seed
    assert cal["rows"] == len(held) and "leading block" in cal["source"] and "internal split" not in cal["source"]
    F = []
    for c1, c2 in r.model.predictor.arrays["pairs"]:
        m = np.flatnonzero(np.isin(y, (c1, c2)))
        w = np.ones(len(m)) if weights is None else weights[m] / weights[m].mean()  # normalised over the pair
        f = np.isin(m, fit_rows)
        t = np.where(y[m][f] == c1, 1.0, -1.0)
        mu = (w[f] * t).sum() / w[f].sum()
        alpha = np.linalg.solve(_gauss(X[m][f], X[m][f]) + len(m) * LAM * np.diag(1 / w[f]), t - mu)
        F.append(_gauss(X[held], X[m][f]) @ alpha + mu)
    expected = calibration.fit(votes(np.stack(F, axis=1), r.model.predictor.arrays["pairs"], 4), y[held], 4,
                               None if weights is None else (weights / weights.mean())[held])  # kopt.solve's mean-1 weights
    np.testing.assert_allclose(cal["a"], expected["a"], rtol=1e-6)
    np.testing.assert_allclose(cal["b"], expected["b"], rtol=1e-6, atol=1e-9)


def test_exact_pairs_are_the_same_bits_on_one_or_two_threads():
    X, y = _classes(240)
    one = kopt.solve(_spec(count=240, threads=1), data=(X, y))
    two = kopt.solve(_spec(count=240, threads=2), data=(X, y))
    for key in ("coef", "columns", "intercepts"):
        np.testing.assert_array_equal(one.model.predictor.arrays[key], two.model.predictor.arrays[key])


# -- solver: auto's multiclass route -----------------------------------------------------------------------------
def _auto_spec(**solver):
    return {"seed": 4, "data": {"standardize": False},
            "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", **solver}, "output": {"model": False, "report": False}}


def test_auto_takes_one_vs_one_on_every_row_and_its_score_is_the_model_s_on_the_validation_rows():
    from kopt.running.validation import make_splits

    X, y = _classes(400)
    r = kopt.solve(_auto_spec(), data=(X, y))
    auto = r.auto
    assert auto["route"] == "krr_pairs" and auto["centers"] == 400 and "one-vs-one" in auto["why"]
    trials = auto["trials"]
    assert {t["route"] for t in trials} == {"krr_pairs"} and all(t["pairs"] == 6 for t in trials)
    factors = sorted({t["bandwidth_factor"] for t in trials})
    assert 1.0 in factors and 2 <= len(factors) <= 3
    best = max(trials, key=lambda t: t["score"])
    assert auto["validation_score"] == best["score"] and auto["lambda"] == best["lam"]
    # the search's score of the chosen point is the model's accuracy on the validation rows, fit on the other rows
    (tr, va), = make_splits(400, 4, validation=0.2)
    spec = _spec(count=len(tr), lam=auto["lambda"])
    spec["model"]["kernel"]["bandwidth"] = auto["bandwidth"]
    spec["model"]["features"]["dtype"] = "float32"
    fit = kopt.solve(spec, data=(X[tr], y[tr]))
    assert abs(np.mean(fit.model.predict(X[va]) == y[va]) - auto["validation_score"]) <= 1.0 / len(va)


def test_auto_hands_the_pairs_validation_votes_to_the_calibration_instead_of_a_second_solve():
    """Every pair voting in the search: the probabilities are calibrated on the chosen settings' vote scores of the
    validation rows (pairs fitted on the other rows), and no model is solved on a seeded internal split."""
    from kopt.models import calibration
    from kopt.running.validation import make_splits

    X, y = _classes(400)
    r = kopt.solve(_auto_spec(), data=(X, y))
    cal = r.model.calibration
    (tr, va), = make_splits(400, 4, validation=0.2)
    assert cal["rows"] == len(va) and "solver auto's validation rows" in cal["source"]
    assert "internal split" not in cal["source"]
    # the same sigmoids as from the vote scores of a model of the chosen settings fitted on the fit rows
    spec = _spec(count=len(tr), lam=r.auto["lambda"])
    spec["model"]["kernel"]["bandwidth"] = r.auto["bandwidth"]
    spec["model"]["features"]["dtype"] = "float32"
    fit = kopt.solve(spec, data=(X[tr], y[tr]))
    expected = calibration.fit(fit.model.decision_function(X[va]), y[va], 4)
    np.testing.assert_allclose(cal["a"], expected["a"], rtol=1e-3)
    np.testing.assert_allclose(cal["b"], expected["b"], rtol=1e-3, atol=1e-4)


def test_auto_keeps_one_vs_rest_where_the_pairs_cost_more_and_for_two_classes():
    X, y = _classes(400)
    # 16 centers at most: one-vs-rest's top system (400 x 16²) costs less than the pairs' Choleskys
    r = kopt.solve(_auto_spec(max_centers=16), data=(X, y))
    assert r.auto["route"] == "krr_nystrom"
    X2, y2 = _classes(300, k=2)
    assert kopt.solve(_auto_spec(), data=(X2, y2)).auto["route"] == "krr_nystrom"


@pytest.mark.slow
def test_with_many_classes_the_search_solves_a_seeded_sample_of_the_pairs():
    """12 classes: 66 pairs; the search solves 45 of them (the same 45 for the same seed), each scored on its own
    classes' validation rows; the final model has every pair."""
    X, y = _classes(720, k=12, d=4)
    r = kopt.solve(_auto_spec(), data=(X, y))
    trials = r.auto["trials"]
    assert r.auto["route"] == "krr_pairs"
    assert all(t["pairs"] == 66 and t["scored_pairs"] == 45 and t["score_is"] != "votes" for t in trials)
    assert len(r.model.predictor.arrays["pairs"]) == 66
    again = kopt.solve(_auto_spec(), data=(X, y))
    assert [t["score"] for t in again.auto["trials"]] == [t["score"] for t in trials]
    assert np.mean(r.model.predict(X) == y) > 1.5 / 12  # well above chance on overlapping classes
