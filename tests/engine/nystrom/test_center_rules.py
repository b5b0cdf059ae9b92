"""``model.features.centers``: randomly pivoted Cholesky's centers (kopt.nystrom.centers.rpcholesky_order) against the
seeded uniform ones -- seeded, distinct training rows, never a held-out row of the default split, the same on any
thread count, explaining more of the kernel at equal M, solved by every Nyström solver from the spec alone."""
import warnings
from collections import OrderedDict

import numpy as np
import pytest
from helpers import clustered_rows as _clustered

import kopt
from kopt.nystrom import NystromCG, centers
from kopt.nystrom.centers import (
    RPC_MEMO_ENTRIES,
    RPC_ROWS,
    RPC_ROWS_SHARE,
    center_order,
    rpcholesky_order,
    rpcholesky_pool,
)
from kopt.running.assemble import assemble


def _spec(rule="uniform", count=64, solver="krr_nystrom", lam=1e-7, seed=0):
    loss = {"name": "squared_hinge"} if solver == "svm_nystrom" else {"name": "square"}
    return {"seed": seed, "backend": "numpy",
            "model": {"loss": loss, "kernel": {"name": "gaussian", "bandwidth": 0.5},
                      "regularizer": {"name": "l2", "lambda": lam},
                      "features": {"kind": "nystrom", "count": count, "centers": rule}},
            "solver": {"name": solver}, "output": {"model": False, "report": False}}


def _problem(X, y, **kw):
    spec = kopt.load_spec(_spec(**kw), check_files=False)
    return assemble(spec, (X, y))


def _residual_trace(problem, centers):
    """Σ_i k(x_i, x_i) − k_iᵀ K_CC⁻¹ k_i over every training row: what the centers leave of the kernel."""
    K = problem.kernel.exact(problem.X.astype(np.float64), problem.X[centers].astype(np.float64))
    R = K[centers]
    return float(len(K) - np.einsum("ij,ij->", K, np.linalg.solve(R + 1e-10 * np.eye(len(R)), K.T).T))


def test_the_centers_are_seeded_distinct_rows_and_never_the_held_out_ones():
    X, y = _clustered(3000)
    problem = _problem(X, y)
    a, b = rpcholesky_order(problem, 100), rpcholesky_order(problem, 100)
    np.testing.assert_array_equal(a, b)
    assert len(a) == 100 and len(set(a.tolist())) == 100
    held_out = center_order(problem, problem.n)[int(RPC_ROWS_SHARE * problem.n):]
    assert not set(a.tolist()) & set(held_out.tolist())
    other = rpcholesky_order(_problem(X, y, seed=1), 100)
    assert set(other.tolist()) != set(a.tolist())
    assert rpcholesky_pool(10_000, 256, 4) == 8000 and rpcholesky_pool(10**6, 4096, 4) == 8192


def test_the_centers_are_the_same_on_one_and_two_threads(monkeypatch):
    """Drawn again on each thread count (the memo emptied), with the candidates' rows in more than one of the
    worker threads' blocks (2,400 candidates, blocks of RPC_ROWS)."""
    X, y = _clustered(3000)
    assert rpcholesky_pool(3000, 150, 2) > RPC_ROWS
    out = []
    for threads in ("1", "2"):
        monkeypatch.setenv("KOPT_THREADS", threads)
        monkeypatch.setattr(centers, "_rpc_memo", OrderedDict())
        out.append(rpcholesky_order(_problem(X, y), 150))
    np.testing.assert_array_equal(*out)


def test_a_second_draw_of_the_same_candidates_kernel_count_and_seed_is_the_first_ones_not_drawn_again(monkeypatch):
    """The memo: the same problem, or another problem of the same rows, takes the drawn centers; another count,
    bandwidth, seed or a changed row draws again, and the memo keeps RPC_MEMO_ENTRIES draws at most."""
    X, y = _clustered(3000)
    monkeypatch.setattr(centers, "_rpc_memo", OrderedDict())
    draws = []
    real = centers._rpcholesky
    monkeypatch.setattr(centers, "_rpcholesky", lambda *a, **k: draws.append(a[2]) or real(*a, **k))
    first = rpcholesky_order(_problem(X, y), 100)
    np.testing.assert_array_equal(rpcholesky_order(_problem(X.copy(), y), 100), first)
    assert draws == [100]
    rpcholesky_order(_problem(X, y), 120)
    rpcholesky_order(_problem(X, y, seed=1), 100)
    problem = _problem(X, y)
    rpcholesky_order(problem, 100, type(problem.kernel)(**{**problem.kernel.options.as_dict(), "bandwidth": 0.25}))
    changed = X.copy()
    changed[0, 0] += 1.0
    rpcholesky_order(_problem(changed, y), 100)
    assert draws == [100, 120, 100, 100, 100]
    for count in range(10, 10 + RPC_MEMO_ENTRIES):
        rpcholesky_order(_problem(X, y), count)
    assert len(centers._rpc_memo) == RPC_MEMO_ENTRIES


def test_they_explain_more_of_the_kernel_than_uniform_centers_at_equal_count():
    X, y = _clustered(3000)
    problem = _problem(X, y)
    uniform = np.sort(center_order(problem, 40))
    rpc = np.sort(rpcholesky_order(problem, 40))
    assert _residual_trace(problem, rpc) < 0.75 * _residual_trace(problem, uniform)  # 96 against 161 when written


def test_a_pool_the_centers_explain_stops_the_draws():
    X = np.repeat(np.random.default_rng(0).standard_normal((12, 3)), 50, axis=0)  # 12 distinct rows
    y = X[:, 0]
    assert len(rpcholesky_order(_problem(X, y), 40)) <= 12


@pytest.mark.parametrize("solver", ["krr_nystrom", "krr_pcg", "svm_nystrom"])
def test_every_nystrom_solver_draws_them_from_the_spec_alone(solver):
    X, y = _clustered(2400)
    if solver == "svm_nystrom":
        y = np.where(y > 0, 1, -1)
    data = (X[:2000], y[:2000], X[2000:], y[2000:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = kopt.solve(_spec("rpcholesky", solver=solver, lam=1e-4), data=data)
    problem = _problem(X[:2000], y[:2000], rule="rpcholesky", solver=solver, lam=1e-4)
    want = np.sort(problem.X[np.sort(rpcholesky_order(problem, 64))], axis=0)
    got = np.sort(np.asarray(r.model.predictor.arrays["support"]), axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-6)  # the model's centers are rpcholesky_order's (kept by the basis)
    assert r.success


def test_krr_pcg_on_them_is_krr_nystroms_model_and_its_preconditioner_takes_an_estimate_from_uniform_rows():
    X, y = _clustered(3000)
    data = (X[:2500], y[:2500], X[2500:], y[2500:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = kopt.solve(_spec("rpcholesky", lam=1e-5), data=data)
        cg = kopt.solve({**_spec("rpcholesky", solver="krr_pcg", lam=1e-5),
                         "solver": {"name": "krr_pcg", "tol": 1e-8, "iterations": 300}}, data=data)
    np.testing.assert_allclose(cg.model.decision_function(X[2500:]), direct.model.decision_function(X[2500:]),
                               atol=1e-3)
    problem = _problem(X[:2500], y[:2500], rule="rpcholesky")
    C = np.asfortranarray(problem.X[np.sort(rpcholesky_order(problem, 64))])
    Y = problem.label_matrix() - problem.label_matrix().mean(axis=0)
    plain = NystromCG(problem.kernel, problem.X, Y, C, dtype=np.float64)
    estimated = NystromCG(problem.kernel, problem.X, Y, C, dtype=np.float64,
                          estimate=np.asfortranarray(problem.X[np.sort(center_order(problem, 256))]))
    assert plain.factors.per_center and not estimated.factors.per_center
    # the estimate from uniform rows is an estimate of T = U⁻ᵀ (A/n) U⁻¹: its trace is close to T's, which the rows give
    W = np.linalg.solve(np.triu(estimated.U).T, problem.kernel.exact(estimated.C, problem.X.astype(np.float64)))
    assert estimated.factors.trace() == pytest.approx(float(np.sum(W * W)) / problem.n, rel=0.2)


def test_rpcholesky_centers_on_a_cluster_are_one_machines_centers():
    """On a Dask cluster (no rows on the client) the candidates are fetched from the partitions: the same centers."""
    from types import SimpleNamespace

    X, y = _clustered(500)
    problem = _problem(X, y, rule="rpcholesky")
    here = rpcholesky_order(problem, 10)
    rows, fetched = np.asarray(problem.X), []

    def take(index):
        fetched.append(np.asarray(index))
        return rows[np.asarray(index)]

    problem.partitions = SimpleNamespace(n=rows.shape[0], d=rows.shape[1], take=take)
    problem.X = None
    np.testing.assert_array_equal(rpcholesky_order(problem, 10), here)
    assert fetched and np.all(np.diff(fetched[0]) > 0)  # sorted global rows, as Partitions.take asks
