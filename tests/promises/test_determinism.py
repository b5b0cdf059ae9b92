"""The same spec and seed give the same model bits on 1 or 2 worker threads, for every solver route.

(docs/benchmarks/determinism.py checks the same at the higgs-12k size in processes pinned to 1 and 2 CPUs.)
"""
from __future__ import annotations

import numpy as np
import pytest

import kopt

CASES = {
    "krr_exact": {"solver": {"name": "krr_exact"}},
    "joker-exact": {"model": {"form": "dual"}, "solver": {"name": "joker", "mode": "exact", "batch_size": 64,
                                                          "iterations": 6}},
    "joker-features": {"model": {"form": "dual"}, "solver": {"name": "joker", "mode": "features", "batch_size": 64,
                                                             "iterations": 6}},
    "joker-primal": {"model": {"form": "dual"}, "solver": {"name": "joker", "mode": "primal", "iterations": 3}},
    "joker-nystrom": {"model": {"form": "dual", "features": {"kind": "nystrom", "count": 64}},
                      "solver": {"name": "joker", "batch_size": 64, "iterations": 6}},
    "dsg": {"solver": {"name": "dsg", "batch_size": 64, "iterations": 10}},
    "adsg": {"solver": {"name": "adsg", "batch_size": 32, "iterations": 3}},
    "gp": {"model": {"form": "gp"}, "solver": {"name": "gp", "batch_size": 32, "iterations": 10}},
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((700, 6))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2]
    return X[:600], y[:600], X[600:], y[600:]


@pytest.mark.filterwarnings("ignore::kopt.errors.ConvergenceWarning")
@pytest.mark.parametrize("name", list(CASES))
def test_one_or_two_threads_give_the_same_model(name, data, monkeypatch):
    case = CASES[name]
    spec = {"seed": 2, "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                                 "regularizer": {"name": "l2", "lambda": 1e-3},
                                 "features": {"count": 512, "block_size": 128}, **case.get("model", {})},
            "solver": case["solver"], "backend": "numpy"}
    hashes = []
    for threads in ("1", "2"):
        monkeypatch.setenv("KOPT_THREADS", threads)
        hashes.append(kopt.solve(spec, data=data).model.content_hash())
    assert hashes[0] == hashes[1]
