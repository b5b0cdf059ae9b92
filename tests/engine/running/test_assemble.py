"""Problem assembly: data checks that happen before a solver starts."""
from __future__ import annotations

import numpy as np
import pytest

import kopt


def test_kernel_input_domain_checked_before_the_solve():
    rng = np.random.default_rng(0)
    X = rng.random((50, 3))
    y = X.sum(1)
    spec = {"data": {"standardize": True}, "model": {"loss": {"name": "square"}, "kernel": {"name": "chi2"}},
            "solver": {"name": "dsg"}, "backend": "numpy"}
    with pytest.raises(kopt.DataError, match="standardize"):
        kopt.solve(spec, data=(X, y))  # z-scoring makes the inputs negative (the default, auto, leaves [0, 1] alone)


def test_median_bandwidth_is_resolved_and_recorded():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 2))
    y = X[:, 0]
    spec = {"model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": "median",
                                                              "bandwidth_factor": 0.5},
                      "features": {"dtype": "float64"}},
            "solver": {"name": "krr_exact"}, "backend": "numpy"}
    result = kopt.solve(spec, data=(X, y))
    sigma = result.model.kernel.options.bandwidth
    Z = (X - X.mean(0)) / X.std(0)
    d = np.sqrt(((Z[:, None] - Z[None]) ** 2).sum(-1))[np.triu_indices(200, 1)]
    assert sigma == pytest.approx(0.5 * np.median(d), rel=1e-3)
