"""kopt.threads: how many cores kopt uses, and BLAS held so the two never oversubscribe."""
import os

import numpy as np
import pytest

from kopt import threads
from kopt.errors import KoptError


def test_threads_follow_the_option_then_kopt_threads_then_the_affinity(monkeypatch):
    monkeypatch.delenv("KOPT_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert threads.available_cpus() == 3
    assert threads.resolve_threads(None) == 3  # the CPUs this process may use, not the machine's
    monkeypatch.setenv("KOPT_THREADS", "2")
    assert threads.resolve_threads(None) == 2
    assert threads.resolve_threads(5) == 5  # a solver's threads option wins


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_a_bad_kopt_threads_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv("KOPT_THREADS", value)
    with pytest.raises(KoptError, match="KOPT_THREADS"):
        threads.resolve_threads(None)


def test_blas_hold_nests_and_restores():
    import scipy.linalg  # noqa: F401  (load every BLAS first: the hold controls SciPy's too)
    from threadpoolctl import threadpool_info

    def counts():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = counts()
    with threads.blas_threads(1):
        assert set(counts()) == {1}
        with threads.blas_threads(2):
            assert set(counts()) == {2}
        assert set(counts()) == {1}
    assert counts() == before


def test_the_hold_reaches_scipys_blas_too():
    """SciPy's LAPACK brings its own OpenBLAS; a hold that missed it left Cholesky on every core."""
    import scipy.linalg  # noqa: F401

    libs = {c.filepath for c in threads._BLAS._controllers()}
    from threadpoolctl import threadpool_info

    loaded = {i["filepath"] for i in threadpool_info() if i["user_api"] == "blas"}
    assert loaded <= libs


def test_parallel_map_keeps_order_and_runs_nested_work_inline():
    out = threads.parallel_map(lambda i: threads.parallel_map(lambda j: (i, j), range(3), 2), range(4), 2)
    assert out == [[(i, j) for j in range(3)] for i in range(4)]
    assert threads.split(10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert np.all(np.diff([a for a, _ in threads.split(1000, 8)]) > 0)
