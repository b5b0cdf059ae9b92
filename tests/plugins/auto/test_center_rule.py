"""Solver auto's center rule: randomly pivoted Cholesky's centers are measured beside the uniform ones at the first
size and taken only where they gain what the validation rows can tell; the chosen spec names them and alone gives
the same model, on one thread or two."""
import warnings
from collections import OrderedDict

import numpy as np
from helpers import clustered_rows as _clustered

import kopt
from kopt.nystrom import centers


def _spec(**solver):
    return {"seed": 0, "backend": "numpy", "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "max_centers": 512, **solver}, "output": {"model": False, "report": False}}


def _solve(spec, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kopt.solve(spec, data=data)


def _fresh_draws(monkeypatch):
    """An empty memo of randomly pivoted Cholesky's draws, and the counts drawn from here on."""
    monkeypatch.setattr(centers, "_rpc_memo", OrderedDict())
    draws, real = [], centers._rpcholesky
    monkeypatch.setattr(centers, "_rpcholesky", lambda *a, **k: draws.append(a[2]) or real(*a, **k))
    return draws


def test_they_are_taken_where_they_pay_and_the_chosen_spec_reproduces_the_model(monkeypatch):
    X, y = _clustered(6000)
    data = (X[:5000], y[:5000], X[5000:], y[5000:])
    draws = _fresh_draws(monkeypatch)
    r = _solve(_spec(), data)
    rule = r.auto["centers_rule"]
    assert rule["chosen"] == "rpcholesky" and rule["gain"] > 2 * rule["standard_error"]
    assert r.report["spec"]["model"]["features"]["centers"] == "rpcholesky"
    assert all(t.get("center_rule") == "rpcholesky" for t in r.auto["trials"][3:])  # the screen's trial, then the ladder's
    # the solve after the search takes the search's draw of its centers: each (count, bandwidth) drawn once
    assert draws.count(r.auto["centers"]) == sum(t["centers"] == r.auto["centers"] and t.get("center_rule") is not None
                                                 for t in r.auto["trials"])
    _fresh_draws(monkeypatch)  # the chosen spec alone, its centers drawn again
    again = _solve(r.report["spec"], data)
    np.testing.assert_allclose(again.model.decision_function(X[5000:]), r.model.decision_function(X[5000:]), atol=1e-5)
    monkeypatch.setenv("KOPT_THREADS", "1")
    _fresh_draws(monkeypatch)
    one = _solve(_spec(), data)
    assert one.model.content_hash() == r.model.content_hash()


def test_uniform_centers_stand_where_the_other_rule_gains_nothing_the_rows_can_tell():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((3000, 6))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.standard_normal(3000) > 0.5, 1, -1)  # noisy labels
    r = _solve({**_spec(), "model": {"loss": {"name": "square", "target": "binary"}, "kernel": {"name": "gaussian"}}},
               (X[:2500], y[:2500], X[2500:], y[2500:]))
    assert r.auto["centers_rule"]["chosen"] == "uniform"
    assert r.report["spec"]["model"]["features"]["centers"] == "uniform"
    assert not any(t.get("center_rule") for t in r.auto["trials"] if t is not r.auto["trials"][3])


def test_a_given_count_or_rule_is_not_screened():
    X, y = _clustered(3000)
    data = (X[:2500], y[:2500], X[2500:], y[2500:])
    given = {**_spec(), "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"},
                                  "features": {"count": 128}}}
    assert "centers_rule" not in _solve(given, data).auto
    named = {**_spec(), "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian"},
                                  "features": {"centers": "uniform"}}}
    assert "centers_rule" not in _solve(named, data).auto
