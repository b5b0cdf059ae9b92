"""Holdout metrics computed without SciPy's stats module (its import alone took ~0.9 s of a fit's predict time)."""
import numpy as np
import pytest

from kopt.numerics.metrics import auc, average_ranks


@pytest.mark.parametrize("x", [np.array([3.0, 1, 2, 1, 3]), np.zeros(7), np.arange(5.0)[::-1],
                               np.random.default_rng(0).integers(0, 5, 200).astype(float),
                               np.random.default_rng(1).standard_normal(500)])
def test_average_ranks_match_scipy(x):
    rankdata = pytest.importorskip("scipy.stats").rankdata
    assert np.array_equal(average_ranks(x), rankdata(x))


def test_auc_counts_ties_as_half():
    assert auc([True, False], [1.0, 0.0]) == 1.0
    assert auc([True, False], [0.0, 1.0]) == 0.0
    assert auc([True, False, True, False], [0.5, 0.5, 0.5, 0.5]) == 0.5
    assert np.isnan(auc([True, True], [0.1, 0.2]))
