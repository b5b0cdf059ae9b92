"""kopt.nystrom.cache: fits that differ only in λ share a Nyström system; anything else misses."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kopt.contract.registry import registry
from kopt.nystrom.cache import SystemCache
from kopt.nystrom.system import NystromSystem


def _inputs(n=120, M=16, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)).astype(np.float32)
    Y = np.where(X[:, :1] > 0, 1.0, -1.0)
    return X, Y, X[:M].copy()


def _kernel(bw=1.0):
    return registry().get("kernel", "gaussian")(bandwidth=bw)


def test_the_same_inputs_hit_and_equal_a_fresh_system():
    X, Y, C = _inputs()
    cache = SystemCache()
    first = cache.get(_kernel(), X, Y, C)
    again = cache.get(_kernel(), X.copy(), Y.copy(), C.copy())  # equal content, other objects
    assert again is first and (cache.hits, cache.misses) == (1, 1)
    fresh = NystromSystem(_kernel(), X, Y, C)
    assert np.array_equal(again.An, fresh.An) and np.array_equal(again.Bn, fresh.Bn)
    for a, b in zip(again.path([1e-2, 1e-4], X), fresh.path([1e-2, 1e-4], X)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("change", ["X in place", "bandwidth", "weights", "Y", "C", "dtype", "sparse X", "kernel"])
def test_anything_that_changes_the_system_misses(change):
    X, Y, C = _inputs()
    w = np.ones(X.shape[0])
    cache = SystemCache()
    base = cache.get(_kernel(), X, Y, C, weights=w)
    kernel, dtype = _kernel(), np.float32
    if change == "X in place":
        X[5, 0] += 1.0  # the same array object, changed
    elif change == "bandwidth":
        kernel = _kernel(1.5)
    elif change == "weights":
        w = w.copy()
        w[3] = 2.0
    elif change == "Y":
        Y = -Y
    elif change == "C":
        C = C[::-1].copy()
    elif change == "dtype":
        dtype = np.float64
    elif change == "sparse X":
        X = sp.csr_matrix(X)
    elif change == "kernel":
        kernel = registry().get("kernel", "laplacian")(bandwidth=1.0)
    other = cache.get(kernel, X, Y, C, dtype=dtype, weights=w)
    assert other is not base and cache.misses == 2 and cache.hits == 0
    fresh = NystromSystem(kernel, X, Y, C, dtype=dtype, weights=w)
    assert np.allclose(other.An, fresh.An, rtol=1e-12, atol=0) and np.allclose(other.Bn, fresh.Bn, rtol=1e-12, atol=0)


def test_bounded_by_entries_and_bytes_and_kept_arrays_are_read_only():
    cache = SystemCache(max_entries=2)
    systems = [cache.get(_kernel(), *_inputs(seed=s)) for s in range(3)]
    assert len(cache.entries) == 2
    cache.get(_kernel(), *_inputs(seed=0))  # the oldest was evicted: built again
    assert cache.misses == 4 and cache.hits == 0
    with pytest.raises(ValueError):
        systems[2].An[0, 0] = 1.0
    tiny = SystemCache(max_bytes=1000)  # a 16-center system holds more than 1,000 bytes: built, not kept
    s = tiny.get(_kernel(), *_inputs())
    assert not tiny.entries and s.An.flags.writeable
    X, Y, C = _inputs()
    cache.get(_kernel(), X, Y, C)
    assert C.flags.writeable  # the caller's centers are left alone


def test_sharing_is_scoped_and_off_outside():
    from kopt.nystrom import cache as nystrom_cache

    X, Y, C = _inputs()
    a, b = nystrom_cache.system(_kernel(), X, Y, C), nystrom_cache.system(_kernel(), X, Y, C)
    assert a is not b and not nystrom_cache.CACHE.entries  # off: nothing kept, nothing hashed
    with nystrom_cache.sharing() as cache:
        a = nystrom_cache.system(_kernel(), X, Y, C)
        with nystrom_cache.sharing():  # nested: the same systems
            assert nystrom_cache.system(_kernel(), X, Y, C) is a
        assert cache.hits == 1
    assert not nystrom_cache.CACHE.entries and nystrom_cache.CACHE.max_entries == 0
    with pytest.raises(ValueError, match="max_entries"):
        with nystrom_cache.sharing(max_entries=0):
            pass


def test_gridsearch_with_the_wiring_gives_the_same_results_and_reuses_systems():
    """krr_nystrom's step builds through the cache: inside sharing() the fits that differ only in λ share one system."""
    import warnings

    from sklearn.model_selection import GridSearchCV

    from kopt.nystrom import cache as nystrom_cache
    from kopt.sklearn import KernelClassifier

    rng = np.random.default_rng(1)
    X = rng.standard_normal((150, 3))
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] > 0, 1, 0)
    est = KernelClassifier(solver="krr_nystrom", features={"kind": "nystrom", "count": 16}, form="primal")
    grid = {"lam": [1e-4, 1e-2], "bandwidth": [1.0]}

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return GridSearchCV(est, grid, cv=2).fit(X, y)

    plain = run()
    with nystrom_cache.sharing() as cache:
        shared = run()
        # 2 folds x 2 λ, each fit's system and its calibration split's (80% of its rows, kopt.models.calibration):
        # 4 built, 4 reused; the refit's two: built
        assert cache.hits == 4 and cache.misses == 6
    assert shared.best_params_ == plain.best_params_
    assert np.array_equal(shared.cv_results_["mean_test_score"], plain.cv_results_["mean_test_score"])
    assert np.array_equal(shared.predict(X), plain.predict(X))
