"""kopt.numerics.threads: how many cores kopt uses, and BLAS held so the two never oversubscribe."""
import os

import numpy as np
import pytest

from kopt.errors import KoptError
from kopt.numerics import threads


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


def test_numpys_own_blas_can_be_held_apart_from_scipys():
    """Where NumPy and SciPy each bring their own OpenBLAS, ``numpy=1`` holds NumPy's to one thread and gives the
    others the limit (the two libraries' spinning idle threads otherwise share the cores); with one BLAS in the
    process both are the same library and it gets the limit."""
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    numpy_dir = os.path.dirname(np.__file__)
    assert threads.numpy_owns(os.path.join(numpy_dir + ".libs", "libscipy_openblas64_.so"))
    assert threads.numpy_owns(os.path.join(numpy_dir, ".dylibs", "libscipy_openblas64_.dylib"))
    assert not threads.numpy_owns(os.path.join(os.path.dirname(numpy_dir), "scipy.libs", "libscipy_openblas.so"))
    assert not threads.numpy_owns(None)

    def counts():
        return {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    before = counts()
    with threads.blas_threads(2, numpy=1):
        inside = counts()
    assert counts() == before
    with threads.scipy_blas(2):  # the hold the Nystrom solvers, auto's search and kopt tune take
        assert counts() == inside
    assert counts() == before
    own = {p for p in inside if threads.numpy_owns(p)} if len(inside) > 1 else set()
    assert all(k == (1 if p in own else 2) for p, k in inside.items())
    if not own:
        pytest.skip("one BLAS library in this process: nothing to hold apart")


def test_parallel_map_keeps_order_and_runs_nested_work_inline():
    out = threads.parallel_map(lambda i: threads.parallel_map(lambda j: (i, j), range(3), 2), range(4), 2)
    assert out == [[(i, j) for j in range(3)] for i in range(4)]
    assert threads.split(10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert np.all(np.diff([a for a, _ in threads.split(1000, 8)]) > 0)


def _spec(solver, loss, form="dual", features=None):
    return {"data": {"standardize": False},
            "model": {"loss": loss, "kernel": {"name": "gaussian", "bandwidth": 1.5},
                      "regularizer": {"name": "l2", "lambda": 1e-3}, "form": form,
                      "features": {"count": 2048, "block_size": 256, **(features or {})}},
            "solver": solver, "backend": "numpy", "output": {"model": False, "report": False}}


@pytest.mark.slow
@pytest.mark.parametrize("name, spec", [
    ("joker exact", _spec({"name": "joker", "mode": "exact", "batch_size": 100, "iterations": 12, "tol": 0.0},
                          {"name": "squared_hinge"})),
    ("joker features", _spec({"name": "joker", "mode": "features", "batch_size": 100, "iterations": 6, "tol": 0.0},
                             {"name": "logistic"})),
    ("joker primal", _spec({"name": "joker", "mode": "primal", "iterations": 3, "tol": 0.0}, {"name": "squared_hinge"})),
    ("joker nystrom", _spec({"name": "joker", "mode": "primal", "iterations": 3, "tol": 0.0}, {"name": "logistic"},
                            features={"kind": "nystrom", "count": 300})),
    ("dsg", _spec({"name": "dsg", "iterations": 20, "batch_size": 64}, {"name": "logistic"}, form="primal")),
])
def test_models_are_bit_identical_on_one_or_two_threads(monkeypatch, name, spec):
    """The work is cut into fixed parts summed in order: the thread count cannot change a bit."""
    import warnings

    import kopt

    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 6))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(1500) > 0, 1.0, -1.0)
    arrays = []
    for count in ("1", "2"):
        monkeypatch.setenv("KOPT_THREADS", count)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = kopt.solve(spec, data=(X, y))
        arrays.append(r.model.predictor.arrays)
    one, two = arrays
    assert one.keys() == two.keys()
    for key in one:
        assert np.array_equal(np.asarray(one[key]), np.asarray(two[key])), f"{name}: {key} differs between 1 and 2 threads"
