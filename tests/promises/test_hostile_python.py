"""Hostile arguments from Python (kopt.solve, kopt.tune, the estimators): a kopt error, or Python's own exception
type for an argument of the wrong type, whose one-line message names the parameter -- never an internal error
from deep inside."""
from __future__ import annotations

import numpy as np
import pytest

import kopt

SPEC = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": 1.0},
                  "regularizer": {"name": "l2", "lambda": 1e-3}}, "solver": {"name": "krr_exact"}, "backend": "numpy"}
RNG = np.random.default_rng(0)
X = RNG.standard_normal((30, 3))
Y = X[:, 0]


def _estimators():
    from kopt.sklearn import GPRegressor, KernelClassifier

    return KernelClassifier, GPRegressor


# (id, call, exception type, phrases of its one-line message)
CASES = [
    ("overrides-a-string", lambda: kopt.solve(SPEC, data=(X, Y), overrides="seed=1"), kopt.SpecError,
     ["overrides='seed=1'", "a list of 'KEY.PATH=VALUE' items"]),
    ("progress-a-number", lambda: kopt.solve(SPEC, data=(X, Y), progress=5), TypeError,
     ["progress=5", "True, False or a list"]),
    ("tune-grid-key-without-section", lambda: kopt.tune(SPEC, grid=["lam=1,2"], data=(X, Y)), kopt.SpecError,
     ["grid='lam'", "unknown key 'lam'"]),
    ("tune-folds-not-whole", lambda: kopt.tune(SPEC, folds=2.5, data=(X, Y)), kopt.SpecError,
     ["folds=2.5", "an integer from 2"]),
    ("tune-metric", lambda: kopt.tune(SPEC, metric="f1", data=(X, Y)), kopt.SpecError,
     ["metric='f1'", "accuracy"]),
    ("random-state-a-word", lambda: _estimators()[0](random_state="x").fit(X, Y > 0), ValueError,
     ["random_state='x'", "an int"]),
    ("solver-options-a-list", lambda: _estimators()[0](solver_options=[1]).fit(X, Y > 0), kopt.SpecError,
     ["KernelClassifier: solver_options: expected a mapping"]),
    ("gp-solver-options-a-list", lambda: _estimators()[1](solver_options=[1]).fit(X, Y), kopt.SpecError,
     ["GPRegressor: solver_options: expected a mapping"]),
    ("loss-options-a-number", lambda: _estimators()[0](loss_options=3).fit(X, Y > 0), kopt.SpecError,
     ["KernelClassifier: loss_options: expected a mapping", "got 3"]),
    ("features-a-word", lambda: _estimators()[0](features="many").fit(X, Y > 0), kopt.SpecError,
     ["KernelClassifier: features: ", "'many'"]),
    ("backend-gpu", lambda: _estimators()[0](backend="gpu").fit(X, Y > 0), kopt.SpecError,
     ["KernelClassifier: backend: ", "allowed: auto, numpy, cupy"]),
    ("kernel-option-unknown", lambda: _estimators()[0](kernel_options={"foo": 1}).fit(X, Y > 0), kopt.SpecError,
     ["KernelClassifier: kernel_options['foo']: unknown key 'foo'"]),
]


@pytest.mark.parametrize("case_id,call,exc_type,phrases", CASES, ids=[c[0] for c in CASES])
def test_hostile_python_arguments(case_id, call, exc_type, phrases, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(exc_type) as caught:
        call()
    text = str(caught.value)
    assert "\n" not in text, text
    for phrase in phrases:
        assert phrase in text, (phrase, text)
