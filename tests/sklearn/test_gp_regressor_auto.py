"""GPRegressor's ``iterations="auto"`` (issue 28 item 7): about 8 passes over the rows, within [50, 200], so
tiny inputs (scikit-learn's estimator checks) fit in a fraction of a second; the value used is ``iterations_``."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

pytest.importorskip("sklearn", minversion="1.6")

from kopt.sklearn import GPRegressor  # noqa: E402


def _xy(n):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 2))
    return X, X[:, 0] + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("n,batch,expect", [(30, 32, 50), (400, 32, 100), (1000, 32, 200), (100, 4, 200)])
def test_auto_iterations_follow_the_rows(n, batch, expect):
    est = GPRegressor(batch_size=batch, variance="none", backend="numpy")
    assert est._iterations(n) == expect


@pytest.mark.slow
def test_fit_records_and_uses_the_resolved_count():
    X, y = _xy(40)
    est = GPRegressor(backend="numpy").fit(X, y)
    assert est.iterations == "auto" and est.iterations_ == 50
    assert est.n_iter_ == 50 and yaml.safe_load(est.to_spec())["solver"]["iterations"] == 50
    assert yaml.safe_load(GPRegressor().to_spec())["solver"]["iterations"] == 200  # unfitted: the cap
    fixed = GPRegressor(iterations=20, batch_size=8, backend="numpy").fit(X, y)
    assert fixed.iterations_ == 20 and fixed.n_iter_ == 20
