"""krr_pcg: Nystrom KRR by preconditioned conjugate gradients (plugins/krr_pcg) against the direct solve, and
solver: auto's route past its sample size (plugins/auto/large.py)."""
from __future__ import annotations

import math
import re
import tracemalloc

import numpy as np
import pytest

import kopt
from kopt.contract.iterative import Check
from kopt.nystrom.cg import REFRESH_EVERY, NystromCG
from kopt.nystrom.passes import RowPass
from kopt_plugins.kernels.shift_invariant import GaussianKernel


def _data(n=1500, d=5, seed=0, classes=None, n_test=300):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + n_test, d)).astype(np.float32)
    f = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]
    if classes:
        y = np.digitize(f, np.quantile(f, np.linspace(0, 1, classes + 1)[1:-1]))
    else:
        y = np.where(f + 0.3 * rng.standard_normal(len(f)) > 0, 1, -1)
    return X[:n], y[:n], X[n:], y[n:]


def _spec(solver, count=200, lam=1e-4, target="binary", **options):
    return {"name": "pcg", "seed": 3,
            "model": {"loss": {"name": "square", "target": target}, "kernel": {"name": "gaussian", "bandwidth": 1.5},
                      "regularizer": {"name": "l2", "lambda": lam}, "features": {"kind": "nystrom", "count": count}},
            "solver": {"name": solver, **options}}


def _scores(result, X):
    return np.asarray(result.model.decision_function(X))


@pytest.mark.slow
@pytest.mark.parametrize("weighted", [False, True])
def test_it_reaches_the_direct_solve_and_certifies_it(weighted):
    X, y, Xt, yt = _data()
    w = np.random.default_rng(1).random(len(y)) + 0.5 if weighted else None
    direct = kopt.solve(_spec("krr_nystrom"), data=(X, y, Xt, yt), sample_weight=w)
    cg = kopt.solve(_spec("krr_pcg", tol=1e-6), data=(X, y, Xt, yt), sample_weight=w)
    assert cg.status == "converged" and cg.success
    assert 0 <= cg.info["rel_gap"] <= 1e-6  # the refreshed gap: float64 products, as the direct solve's
    assert abs(cg.objective - direct.objective) <= 1e-6 * abs(direct.objective)
    np.testing.assert_allclose(_scores(cg, Xt), _scores(direct, Xt), atol=2e-3)  # the gap bounds P, not each score
    # b's pass, one a step, the refreshes (at most one in REFRESH_EVERY steps, and the last)
    assert cg.n_iter + 2 <= cg.info["passes"] <= cg.n_iter + 2 + cg.n_iter // REFRESH_EVERY + 1


def test_only_a_refreshed_certificate_stops_the_solve(monkeypatch):
    """The carried certificate (float32 passes' scores and T v) says when to confirm, never that the solve is done: at
    10⁶ rows and λ 1e-7 the carried gap met 1e-2 on the step after a refresh whose own gap was 1.05, and the solve
    stopped on it.  Here the carried certificate lies (a gap of 0 at every step): the solve still runs until the
    refreshed one meets tol, and reaches the direct solve."""
    X, y, Xt, yt = _data()
    direct = kopt.solve(_spec("krr_nystrom"), data=(X, y, Xt, yt))
    honest, refresh = NystromCG.certificate, NystromCG.refresh
    fresh = []  # the state a pass just refreshed (CG's own, or a copy of it)

    def refreshing(self, s):
        fresh.append(refresh(self, s))
        return fresh[-1]

    def lying(self, s, loss, Y):
        P, D, scale = honest(self, s, loss, Y)
        return (P, D, scale) if fresh and fresh.pop() is s else (P, P, scale)

    monkeypatch.setattr(NystromCG, "refresh", refreshing)
    monkeypatch.setattr(NystromCG, "certificate", lying)
    cg = kopt.solve(_spec("krr_pcg", tol=1e-6), data=(X, y, Xt, yt))
    assert cg.status == "converged"
    assert 0 < cg.info["rel_gap"] <= 1e-6  # a refreshed gap, not the carried 0
    assert abs(cg.objective - direct.objective) <= 1e-6 * abs(direct.objective)


def test_cg_continues_from_the_refreshed_residual():
    """Each step's float32 products round, so the carried residual drifts from the true one, and CG's recurrences
    drive the carried one down while the true one stalls: here (400 centers, λ 1e-5) the refreshed gap stalled at
    4.1e-5 through step 200 and P stayed 9e-7 above the direct solve's.  CG replaces its carried residual by the
    refreshed one at each confirmation and reaches tol."""
    X, y, Xt, yt = _data()
    spec = dict(count=400, lam=1e-5)
    direct = kopt.solve(_spec("krr_nystrom", **spec), data=(X, y, Xt, yt))
    cg = kopt.solve(_spec("krr_pcg", tol=1e-6, iterations=120, **spec), data=(X, y, Xt, yt))
    assert cg.status == "converged", (cg.status, cg.info["rel_gap"])
    assert 0 < cg.info["rel_gap"] <= 1e-6
    assert abs(cg.objective - direct.objective) <= 1e-7 * abs(direct.objective)


def test_a_replaced_residual_restarts_the_direction(monkeypatch):
    """After a residual replacement the last direction is not conjugate to the new residual, and steps along it can
    raise P (at 10⁶ rows, warm from the search's λ, P rose from 0.2743 to 0.352 in 64 steps).  Here every step's
    products are 10% off (the scores by 1.1, T v by 1.1²; the confirming pass is exact): without the restart CG ran to
    its cap at a relative gap of 1.1; with it, CG reaches the direct solve."""
    X, y, Xt, yt = _data()
    spec = dict(count=400, lam=1e-5)
    direct = kopt.solve(_spec("krr_nystrom", **spec), data=(X, y, Xt, yt))
    exact = NystromCG.apply_T

    def biased(self, v):
        S, Tv = exact(self, v)
        return 1.1 * S, 1.21 * Tv

    monkeypatch.setattr(NystromCG, "apply_T", biased)
    cg = kopt.solve(_spec("krr_pcg", tol=1e-7, iterations=150, **spec), data=(X, y, Xt, yt))
    assert cg.status == "converged", (cg.status, cg.info["rel_gap"])
    assert cg.info["replacements"] >= 2
    assert abs(cg.objective - direct.objective) <= 1e-7 * abs(direct.objective)


def test_every_class_at_once_matches_the_direct_solve():
    X, y, Xt, yt = _data(classes=4)
    spec = dict(target="binary", count=150)
    direct = kopt.solve(_spec("krr_nystrom", **spec), data=(X, y, Xt, yt))
    cg = kopt.solve(_spec("krr_pcg", tol=1e-6, **spec), data=(X, y, Xt, yt))
    assert _scores(cg, Xt).shape == (len(yt), 4)
    np.testing.assert_allclose(_scores(cg, Xt), _scores(direct, Xt), atol=2e-3)
    assert cg.metrics["accuracy"] == pytest.approx(direct.metrics["accuracy"], abs=0.01)


@pytest.mark.slow
def test_the_preconditioner_keeps_the_step_count_small():
    """Unpreconditioned CG on T + λI needs about √κ steps (κ of T + λI: 235 here at λ = 1e-3);
    with the centers' preconditioner, a few dozen."""
    X, y, Xt, yt = _data(n=3000)
    for lam in (1e-3, 1e-4):
        r = kopt.solve(_spec("krr_pcg", count=300, lam=lam, tol=1e-4), data=(X, y, Xt, yt))
        assert r.status == "converged" and r.n_iter <= 40, (lam, r.n_iter)


def test_a_lambda_path_by_warm_starts_needs_fewer_steps():
    X, y, Xt, yt = _data()
    first = kopt.solve(_spec("krr_pcg", lam=1e-3, tol=1e-6), data=(X, y, Xt, yt), keep_state=True)
    cold = kopt.solve(_spec("krr_pcg", lam=5e-4, tol=1e-6), data=(X, y, Xt, yt))
    warm = kopt.solve(_spec("krr_pcg", lam=5e-4, tol=1e-6), data=(X, y, Xt, yt), start_from=first.snapshot)
    assert warm.status == cold.status == "converged"
    assert warm.n_iter < cold.n_iter
    np.testing.assert_allclose(_scores(warm, Xt), _scores(cold, Xt), atol=2e-3)


def test_a_warm_start_already_solved_ends_after_0_iterations_with_no_factor(monkeypatch, tmp_path):
    """A run started from its own solution is checked before any step: its certificate (the start's float64 pass)
    meets tol, so it ends after 0 iterations with the same model, reported at iteration 0, and factors no
    preconditioner; a checkpoint written there resumes to the same end."""
    from kopt.nystrom.factors import CenterFactors

    X, y, Xt, yt = _data()
    spec = _spec("krr_pcg", lam=1e-3, tol=1e-6)
    first = kopt.solve(spec, data=(X, y, Xt, yt), keep_state=True)
    made = []
    factor = CenterFactors.factor
    monkeypatch.setattr(CenterFactors, "factor", lambda self, *a, **k: made.append(1) or factor(self, *a, **k))
    spec["output"] = {"dir": str(tmp_path), "checkpoint_every": 1}
    again = kopt.solve(spec, data=(X, y, Xt, yt), start_from=first.snapshot, calibrate=False)  # its own solve
    # the start's float64 pass, b's riding in it: no step, no confirmation
    assert again.status == "converged" and again.n_iter == 0 and again.info["passes"] == 1 and not made
    assert again.info["rel_gap"] <= 1e-6 and [p["iteration"] for p in again.trace] == [0]
    np.testing.assert_allclose(_scores(again, Xt), _scores(first, Xt), rtol=0, atol=1e-12)
    assert list(tmp_path.glob("*checkpoint*"))  # the checkpoint of iteration 0
    resumed = kopt.solve(spec, data=(X, y, Xt, yt), resume=True)
    assert resumed.n_iter == 0 and np.array_equal(_scores(resumed, Xt), _scores(again, Xt))


def test_a_warm_start_not_yet_solved_steps_from_its_check():
    """Where the start's check does not meet tol, the run steps on: the direction and the factor are made by the
    first step, and the run ends where a start that made them at once ends (the same bits)."""
    from kopt.nystrom import NystromCG

    X, y, Xt, yt = _data()
    first = kopt.solve(_spec("krr_pcg", lam=1e-3, tol=1e-6), data=(X, y, Xt, yt), keep_state=True)
    warm = kopt.solve(_spec("krr_pcg", lam=5e-4, tol=1e-6), data=(X, y, Xt, yt), start_from=first.snapshot)
    assert warm.status == "converged" and warm.n_iter >= 1 and warm.trace[0]["iteration"] == 1
    original = NystromCG.start
    try:  # the direction made at the start, as before the check at the start
        NystromCG.start = lambda self, lam, v=None, direction=True: original(self, lam, v)
        eager = kopt.solve(_spec("krr_pcg", lam=5e-4, tol=1e-6), data=(X, y, Xt, yt), start_from=first.snapshot)
    finally:
        NystromCG.start = original
    assert eager.n_iter == warm.n_iter and np.array_equal(_scores(eager, Xt), _scores(warm, Xt))


@pytest.mark.parametrize("direction", [True, False])
def test_a_start_from_a_refreshed_state_at_another_lambda_makes_no_pass_and_the_same_bits(direction):
    """A λ path's next λ from the last one's refreshed state (a solved λ's, refreshed at its confirmation): T v and
    the scores are v's at any λ, so the start takes them with no pass and is the state a start from v makes (its
    float64 pass) bit for bit; CG steps on from it to the same bits."""
    X, y, _, _ = _data()
    kernel = GaussianKernel(bandwidth=1.5)
    Y = y[:, None].astype(np.float64)
    cg = NystromCG(kernel, X, Y, X[:200], dtype="float32")
    s = cg.start(1e-3)
    for _ in range(6):
        s = cg.step(s)
    at = cg.refresh(s)  # as a confirmation leaves it
    v = at["v"].copy()
    passes = cg.passes
    taken = cg.start(1e-4, refreshed=at, direction=direction)
    assert cg.passes == passes
    made = cg.start(1e-4, v, direction=direction)
    assert cg.passes == passes + 1
    assert sorted(taken) == sorted(made)
    for key in made:
        assert np.array_equal(taken[key], made[key]), key
    for state in (taken, made):
        for _ in range(3):
            state = cg.step(state)
    assert np.array_equal(taken["v"], made["v"]) and np.array_equal(taken["scores"], made["scores"])


def test_a_start_that_takes_a_refreshed_state_holds_its_arrays_once():
    """``take=True`` (krr_pcg's start from the search's state): the start holds the handed-over arrays themselves,
    with the same bits as a start that copies them, and empties the dict, so no second start can read it."""
    X, y, _, _ = _data()
    Y = np.column_stack([y, -0.5 * y]).astype(np.float64)
    cg = NystromCG(GaussianKernel(bandwidth=1.5), X, Y, X[:200], dtype="float32")
    s = cg.start(1e-3)
    for _ in range(6):
        s = cg.step(s)
    at = cg.refresh(s)
    copied = cg.start(1e-4, refreshed=at, direction=False)
    scores = at["scores"]
    taken = cg.start(1e-4, refreshed=at, direction=False, take=True)
    assert taken["scores"] is scores and at == {}
    assert not cg.refreshed_here(at)
    assert sorted(taken) == sorted(copied)
    for key in copied:
        assert np.array_equal(taken[key], copied[key]), key


@pytest.mark.parametrize("weighted", [False, True])
def test_b_rides_in_the_first_refresh_pass_to_the_same_bits(weighted):
    """A new CG makes b with its first warm start's float64 pass (one pass for both), the same bits as b made by its
    own pass first; read before any start, b makes its own pass."""
    X, y, _, _ = _data()
    Y = np.column_stack([y, -0.5 * y]).astype(np.float64)
    w = np.random.default_rng(2).uniform(0.5, 1.5, len(X)) if weighted else None
    make = lambda: NystromCG(GaussianKernel(bandwidth=1.5), X, Y, X[:120], dtype="float32", weights=w)  # noqa: E731
    v = np.random.default_rng(3).standard_normal((120, 2)) * 1e-2
    fused, apart = make(), make()
    assert fused.passes == apart.passes == 0 and fused.outputs == 2
    b = apart.b.copy()  # its own pass
    assert apart.passes == 1
    one = fused.start(1e-4, v)
    two = apart.start(1e-4, v)
    assert fused.passes == 1 and apart.passes == 2
    assert np.array_equal(fused.b, b)
    assert sorted(one) == sorted(two)
    for key in ("v", "Tv", "scores", "r", "p", "rz"):
        assert np.array_equal(one[key], two[key]), key


def test_a_start_from_a_state_not_refreshed_here_or_beside_v_is_refused():
    """A refreshed state is its rows', targets' and weights': a CG reweighted on the same ones takes it, one on other
    targets or weights does not; a state stepped since its refresh is no one's."""
    X, y, _, _ = _data(n=300)
    Y = y[:, None].astype(np.float64)
    cg = NystromCG(GaussianKernel(bandwidth=1.5), X, Y, X[:40], dtype="float64")
    s = cg.step(cg.start(1e-3))  # stepped: its products are the steps', not a refresh's
    assert not cg.refreshed_here(s)
    with pytest.raises(ValueError, match="refreshed"):
        cg.start(1e-4, refreshed=s)
    at = cg.refresh(s)
    with pytest.raises(ValueError, match="without v"):
        cg.start(1e-4, s["v"], refreshed=at)
    assert cg.refreshed_here(at) and cg.reweighted(X, Y.copy(), None).refreshed_here(at)
    assert not cg.reweighted(X, 2 * Y, None).refreshed_here(at)
    assert not cg.reweighted(X, Y, np.full(len(X), 2.0)).refreshed_here(at)
    assert not cg.weighted_system(np.ones(len(X)), cg.b).refreshed_here(at)


def test_the_grown_path_starts_each_next_lambda_from_the_solved_one_with_no_pass(small_sample):
    """solve_lambda from the state it returned solved at the λ before: no start pass, and the same λ solved to the
    same bits, steps and gap as from that state's coefficients (the pass it saves); start_pass counts it."""
    large = small_sample
    problem = _wiggly_problem("refreshed-walk")
    Y = problem.label_matrix() - problem.label_matrix().mean(axis=0)
    cg = NystromCG(problem.kernel, problem.X, Y, np.asarray(problem.X[:128]), dtype=problem.dtype)
    first, _, _, solved = large.solve_lambda(cg, 1e-3, None, problem.loss, Y)
    assert solved and first.get("precise")
    v = first["v"].copy()
    passes = cg.passes
    taken = large.solve_lambda(cg, 10 ** -3.5, first, problem.loss, Y)
    saved = cg.passes - passes
    passes = cg.passes
    made = large.solve_lambda(cg, 10 ** -3.5, v, problem.loss, Y)
    assert cg.passes - passes == saved + 1
    assert taken[1:] == made[1:] and np.array_equal(taken[0]["v"], made[0]["v"])
    assert (large.start_pass(cg, None), large.start_pass(cg, v), large.start_pass(cg, first)) == (0, 1, 0)


def test_the_grown_walk_hands_each_solved_lambda_on_as_its_state(small_sample, monkeypatch):
    """The grown path's walk down: every λ after a solved one starts from that λ's refreshed state (no pass)."""
    from kopt.nystrom.centers import center_order
    from kopt_plugins.auto import work

    large = small_sample
    starts, real = [], large.solve_lambda

    def recording(cg, lam, start, *args, **kwargs):
        out = real(cg, lam, start, *args, **kwargs)
        starts.append((large.start_pass(cg, start), out[3]))
        return out

    monkeypatch.setattr(large, "solve_lambda", recording)
    monkeypatch.setattr(large.scoring, "gain", lambda metric, before, after: 1.0)  # every smaller λ gains: walk on
    problem = _wiggly_problem("walk-states")
    fit, va = large.split(problem.n, 5)
    grown = large.grown_path(problem, problem.kernel, center_order(problem, 256), 256, 1e-3, fit=fit, validation=va,
                             metric="accuracy", log=lambda line: None, threads=None, budget=work.Budget(1e13, None))
    assert grown is not None and len(starts) >= 3
    assert all(made == 0 for (made, _), (_, solved) in zip(starts[1:], starts) if solved)


@pytest.mark.slow
def test_the_passes_hold_one_block_per_part_never_n_by_m(monkeypatch):
    """Memory O(M² + chunk · M + n C): the traced peak of a solve stays far below the n × M kernel matrix."""
    from kopt.nystrom import passes

    monkeypatch.setattr(passes, "CHUNK_ENTRIES", 1 << 16)
    X, y, Xt, yt = _data(n=30000, d=3, n_test=100)
    M = 256
    kopt.solve(_spec("krr_pcg", count=M, iterations=2, tol=0), data=(X, y, Xt, yt))  # imports, pools: not traced
    tracemalloc.start()
    try:
        kopt.solve(_spec("krr_pcg", count=M, iterations=3, tol=0), data=(X, y, Xt, yt))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    n_by_m = X.shape[0] * M * 4
    assert peak < 0.5 * n_by_m, (peak, n_by_m)


def test_the_bits_do_not_depend_on_the_thread_count():
    X, y, _, _ = _data(n=2000)
    kernel = GaussianKernel(bandwidth=1.3)
    C = X[:100]
    Y = y[:, None].astype(np.float64)
    out = []
    for threads in (1, 2):
        cg = NystromCG(kernel, X, Y, C, dtype=np.float32, threads=threads)
        s = cg.start(1e-4)
        for _ in range(3):
            cg.step(s)
        out.append(s["v"])
    assert np.array_equal(out[0], out[1])


def test_a_pass_is_the_products_it_names():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((700, 4)).astype(np.float32)
    C = X[:50]
    kernel = GaussianKernel(bandwidth=1.1)
    w = rng.random(700)
    rows = RowPass(kernel, X, C, np.float32, weights=w, threads=2, chunk_entries=1000)
    assert len(rows.chunks) > 8  # many chunks over the parts
    P = rng.standard_normal((50, 2))
    S, G = rows.products(P)
    K = kernel.exact(X.astype(np.float64), C.astype(np.float64))
    np.testing.assert_allclose(S, K @ P, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(G, K.T @ (w[:, None] * (K @ P)), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(rows.adjoint(S), K.T @ S, rtol=1e-3, atol=1e-3)


def test_a_checkpointed_run_resumes_to_the_same_bits(tmp_path):
    X, y, Xt, yt = _data()
    spec = _spec("krr_pcg", tol=1e-12, iterations=12)
    full = kopt.solve(spec, data=(X, y, Xt, yt), keep_state=True)
    half = kopt.solve(_spec("krr_pcg", tol=1e-12, iterations=6), data=(X, y, Xt, yt), keep_state=True)
    resumed = kopt.solve(spec, data=(X, y, Xt, yt), resume=half.snapshot)
    assert resumed.n_iter == full.n_iter
    assert np.array_equal(_scores(resumed, Xt), _scores(full, Xt))


def test_the_square_loss_only_with_a_message_naming_the_key():
    X, y, Xt, yt = _data(n=200)
    spec = _spec("krr_pcg")
    spec["model"]["loss"] = {"name": "logistic"}
    with pytest.raises(kopt.KoptError, match=r"krr_pcg.*square loss only"):
        kopt.solve(spec, data=(X, y, Xt, yt))


# -- solver: auto past its sample size ------------------------------------------------------------------------------


@pytest.fixture
def small_sample(monkeypatch):
    """auto's large-data route at test size: the direct search on 1,500 rows, 400 validation rows."""
    from kopt_plugins.auto import large

    monkeypatch.setattr(large, "SEARCH_ROWS", 1500)
    monkeypatch.setattr(large, "VALIDATION_ROWS", 400)
    monkeypatch.setattr(large, "MAX_GROWN_CENTERS", 512)
    return large


def _wiggly(n=4000, n_test=1000, seed=4):
    """A boundary 32 centers cannot draw: the sign of sin(3 x0) sin(3 x1) on two columns."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n + n_test, 2)).astype(np.float32)
    y = np.where(np.sin(3 * X[:, 0]) * np.sin(3 * X[:, 1]) > 0, 1, -1)
    return X[:n], y[:n], X[n:], y[n:]


def _wiggly_problem(name, n=4000):
    """_wiggly's rows assembled as auto's large route sees them (bandwidth 0.5, seed 5)."""
    from kopt.numerics.backend import resolve
    from kopt.running.assemble import assemble

    X, y, Xt, yt = _wiggly(n=n)
    spec = kopt.load_spec({"name": name, "seed": 5, "model": {"loss": {"name": "square", "target": "binary"},
                                                              "kernel": {"name": "gaussian", "bandwidth": 0.5}},
                           "backend": "numpy"})
    return assemble(spec, (X, y, Xt, yt), resolve("numpy"))


@pytest.mark.slow
def test_auto_grows_the_centers_on_every_row_and_solves_warm_on_its_factors(small_sample):
    X, y, Xt, yt = _wiggly()
    spec = {"name": "auto-large", "seed": 5, "model": {"loss": {"name": "square", "target": "binary"},
                                                       "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "budget": 60, "max_centers": 32}}  # the sample's ladder stops at 32 centers
    r = kopt.solve(spec, data=(X, y, Xt, yt))
    auto = r.auto
    assert auto["route"] == "krr_pcg"
    assert "direct search on 1500 seeded rows" in auto["split"] and "validation 400 of 4000" in auto["split"]
    grown = [t for t in auto["trials"] if t.get("rows")]
    assert grown and grown[0]["rows"] == 3600 and grown[0]["centers"] == 512
    assert r.success and r.info["rel_gap"] <= 1e-2
    assert r.info["reused_search_factors"]  # the search's U and UU^T on the same centers: no M^3 work again
    # 400 held-out rows on 3,600 could still gain what the search can tell: the solve is on every row
    assert auto["held_out"] is None and r.report["data"]["held_out_rows"] == 0
    # the chosen spec, solved from scratch, is the same model to the solve's tolerance
    again = kopt.solve(r.report["spec"], data=(X, y, Xt, yt))
    assert again.metrics["accuracy"] == pytest.approx(r.metrics["accuracy"], abs=0.01)


@pytest.mark.slow
def test_auto_keeps_the_fit_rows_model_where_the_held_out_rows_could_not_change_it(small_sample):
    """400 held-out rows beside 19,600 fit rows: the learning curve the search measured bounds what they could gain
    below what it calls a gain, so the model is the grown path's of the fit rows (data.held_out in the chosen spec),
    certified at its start with no step (the search solved its λ on the same rows), and the chosen spec alone
    reproduces it -- the held-out rows' labels changing nothing."""
    from kopt.running.validation import make_splits

    X, y, Xt, yt = _wiggly(n=20000)
    spec = {"name": "auto-held", "seed": 5, "model": {"loss": {"name": "square", "target": "binary"},
                                                      "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "budget": 60, "max_centers": 32}}
    r = kopt.solve(spec, data=(X, y, Xt, yt))
    auto = r.auto
    assert auto["route"] == "krr_pcg" and auto["held_out"] == {"rows": 400, "seed": 5}
    assert r.report["spec"]["data"]["held_out"] == {"rows": 400, "seed": 5}
    assert r.report["data"]["held_out_rows"] == 400 and "on the 19,600 fit rows" in auto["why"]
    assert r.success and r.info["rel_gap"] <= 1e-2 and r.info["reused_search_factors"]
    # no pass at all, its certificate a confirmed one: no step, no confirmation, no preconditioner (b, and the
    # products at the chosen λ's solution -- the rows, targets and weights -- are the search's)
    assert r.n_iter == 0 and r.info["passes"] == 0 and r.info["replacements"] == 0
    (_, held), = make_splits(len(y), 5, validation=400 / len(y))
    flipped = y.copy()
    flipped[held] = -flipped[held]
    again = kopt.solve(r.report["spec"], data=(X, y, Xt, yt))
    moved = kopt.solve(r.report["spec"], data=(X, flipped, Xt, yt))
    assert again.metrics["accuracy"] == pytest.approx(r.metrics["accuracy"], abs=0.01)
    np.testing.assert_array_equal(again.model.decision_function(Xt), moved.model.decision_function(Xt))


@pytest.mark.slow
def test_auto_hands_a_regression_its_targets_bit_for_bit_so_the_solve_makes_no_pass(small_sample):
    """A regression's fit-rows model: the grown path centers its targets with the intercept krr_pcg's solve makes on
    the same weights (their weighted mean, to the last bit), so the solve takes the search's b and the chosen λ's
    refreshed products as they are: no pass."""
    X, _, Xt, _ = _wiggly(n=20000)
    f = np.sin(3 * X[:, 0]) * np.sin(3 * X[:, 1]) + 0.1 * np.random.default_rng(1).standard_normal(len(X))
    f_t = np.sin(3 * Xt[:, 0]) * np.sin(3 * Xt[:, 1])
    spec = {"name": "auto-held-real", "seed": 5, "model": {"loss": {"name": "square"},
                                                           "kernel": {"name": "gaussian"}},
            "solver": {"name": "auto", "budget": 60, "max_centers": 32}}
    r = kopt.solve(spec, data=(X, 3.0 + f, Xt, 3.0 + f_t))
    assert r.auto["route"] == "krr_pcg" and r.auto["held_out"] is not None
    assert r.success and r.n_iter == 0 and r.info["reused_search_factors"]
    assert r.info["passes"] == 0 and r.info["replacements"] == 0


def test_what_the_held_out_rows_could_gain_is_the_learning_curve_per_doubling():
    from kopt_plugins.auto.large import rows_could_gain

    assert rows_could_gain(0.0067, 10**6, 980_000, 50_000) == pytest.approx(0.0067 * math.log2(1 / 0.98)
                                                                             / math.log2(19.6))
    assert rows_could_gain(-0.01, 10**6, 980_000, 50_000) == 0.0  # a loss is no gain
    assert rows_could_gain(0.01, 60_000, 48_000, 50_000) == math.inf  # fit rows no more than the sample's
    # 100,000 rows (80,000 fit): a quarter more rows on a curve that gained 0.36 points from 50,000
    assert rows_could_gain(0.0036, 100_000, 80_000, 50_000) > 0.001


def test_the_default_budget_is_a_rule_of_the_rows():
    from kopt_plugins.auto.work import default_work

    assert default_work(10_000) == 1.2e13
    assert default_work(500_000) == 1.2e13
    assert default_work(1_000_000) == 2.4e13
    assert default_work(10_000_000) == 2.4e14


@pytest.mark.slow
@pytest.mark.parametrize("screen", [True, False])
def test_the_column_search_is_not_cut_by_a_share_and_never_revisits_a_dropped_column(monkeypatch, screen):
    """One length scale per column: the trials are bounded by the columns (the screen's d + 2, then at most 3 a kept
    column a sweep, the second sweep only where the first gained what the validation rows can tell), whatever the budget's size; the noise
    columns go, with and without the screen."""
    from kopt.nystrom import system
    from kopt_plugins.auto import columns

    rng = np.random.default_rng(2)
    n, d = 3000, 6
    X = rng.standard_normal((n, d)).astype(np.float32)
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] > 0, 1, -1)
    from kopt.numerics.backend import resolve
    from kopt.running.assemble import assemble

    spec = kopt.load_spec({"name": "cols", "seed": 0, "model": {"loss": {"name": "square", "target": "binary"},
                                                              "kernel": {"name": "gaussian", "bandwidth": 2.0}},
                           "backend": "numpy"})
    problem = assemble(spec, (X, y, X[:10], y[:10]), resolve("numpy"))
    built = []
    real = system.NystromSystem

    def counting(*args, **kwargs):
        built.append(args[1].shape[1])  # the columns the trial kept
        return real(*args, **kwargs)

    monkeypatch.setattr(system, "NystromSystem", counting)
    monkeypatch.setattr(columns, "CENTERS", 128)
    monkeypatch.setattr(columns, "SCREEN", screen)
    lines = []
    found = columns.choose(problem, fit=np.arange(2400), validation=np.arange(2400, n), metric="accuracy",
                           budget_s=1e9, log=lines.append, seed=0)
    assert found is not None
    scales, _ = found
    assert scales[0] > 0 and scales[1] > 0 and (scales[2:] == 0).sum() >= 3  # the noise columns dropped
    import re

    kept = [int(m.group(1)) for m in (re.search(r"sweep \d: .*, (\d+) of 6 columns kept", x) for x in lines) if m]
    assert 1 <= len(kept) <= columns.SWEEPS
    screened = any("column scales, screen" in line for line in lines)
    assert screened == columns.SCREEN
    # 3 shared-bandwidth trials; the screen: each column alone and the block at 2 bandwidths; a sweep: at most 3 trials
    # a column kept when it began, and 2 bandwidth factors
    start = int(re.search(r"(\d+) kept", next(x for x in lines if "screen" in x)).group(1)) if screened else d
    assert len(built) <= 3 + (d + 2 if screened else 0) + sum(3 * k + 2 for k in [start] + kept[:-1])
    assert not any("stopped at their budget" in line for line in lines)


@pytest.mark.slow
@pytest.mark.parametrize("tried, probed", [(0, True), (512, False)])
def test_the_bandwidth_is_probed_only_past_the_sizes_the_sample_tried(small_sample, monkeypatch, tried, probed):
    """The grown size's bandwidth probe runs at half the grown size on the sample: where the sample's ladder reached
    that size itself it chose the bandwidth there, and the probe is not run again."""

    large = small_sample
    calls = []
    monkeypatch.setattr(large, "probe_bandwidth", lambda *a, **k: calls.append(1) or (1.0, 1e-4))
    problem = _wiggly_problem("probe")
    fit, va = large.split(problem.n, 5)
    # full_score 0: any rung gains (where the sample tried more centers, 128 on every row are tried first)
    first = large.SampleModel(centers=64, lam=1e-4, tried_centers=tried, full_score=0.0)
    grown = large.grow(problem, first, kernel=problem.kernel, fit=fit, validation=va, budget_s=600, max_centers=512,
                       metric="accuracy", log=lambda line: None, sample=large.sample_rows(problem, fit))
    assert grown is not None and grown.centers == 512
    assert bool(calls) == probed


@pytest.mark.parametrize("tried, rows_gain, grown_to, made_sizes", [(128, None, None, [128]),
                                                                    (128, (0.0, 0.002), None, []),
                                                                    (0, (0.0, 0.002), 512, [512])])
def test_more_centers_are_grown_only_while_the_validation_rows_tell_a_gain(small_sample, monkeypatch, tried, rows_gain,
                                                                          grown_to, made_sizes):
    """Where the sample's ladder found no gain past its choice (it tried 128 centers and kept 64), the grown size is
    tried only after 2 x 64 centers on every row beat the sample's model by what the validation rows can tell: against
    a sample's model no rung can beat (accuracy 1.0) no larger system is made.  Where the ladder was still gaining
    (it tried no more), the grown size is tried at once."""
    from kopt.nystrom import cg as cg_module

    large = small_sample
    monkeypatch.setattr(large, "probe_bandwidth", lambda *a, **k: (1.0, 1e-4))
    made = []
    real = cg_module.NystromCG

    def counting(kernel, X, Y, C, **kw):
        made.append(C.shape[0])
        return real(kernel, X, Y, C, **kw)

    monkeypatch.setattr(cg_module, "NystromCG", counting)
    problem = _wiggly_problem("rung")
    fit, va = large.split(problem.n, 5)
    first = large.SampleModel(centers=64, lam=1e-4, tried_centers=tried, full_score=1.0,
                              full_rows=np.ones(len(va)), rows_gain=rows_gain)
    lines = []
    grown = large.grow(problem, first, kernel=problem.kernel, fit=fit, validation=va, budget_s=600, max_centers=512,
                       metric="accuracy", log=lines.append, sample=large.sample_rows(problem, fit))
    assert made == made_sizes
    if grown_to is None:
        assert grown is None
        said = "more rows and centers do not pay" if rows_gain else "more centers do not pay"
        assert any(said in line for line in lines), lines
    else:  # the ladder was still gaining: the rows' gain is not asked
        assert grown is not None and grown.centers == grown_to


def test_the_rows_gain_is_the_sample_against_half_of_it(small_sample):
    """rows_gain: the chosen system on a seeded half of the sample, scored on the held-out rows against the whole
    sample's model -- on a boundary that needs its rows, the whole sample gains by more than its standard error."""
    from kopt.numerics.backend import to_numpy
    from kopt_plugins.auto import planner, scoring, work

    large = small_sample
    problem = _wiggly_problem("rows", n=6000)
    fit, va = large.split(problem.n, 5)
    sample = large.sample_problem(problem, large.sample_rows(problem, fit))
    found = planner.search(sample, bandwidth_rule=False, lambdas=(1e-4,), counts=[256], max_centers=256, seed=5,
                           validation=0.2, log=lambda line: None, budget=work.Budget(1e13, None))
    X_va = problem.X[va]
    Y_va = to_numpy(problem.label_matrix()[va])
    S = to_numpy(found.system.scores(X_va, found.system.coef(found.system.solve(1e-4)))) + found.intercept
    full_rows = scoring.outcomes("accuracy", S, Y_va, 1.0)
    budget = work.Budget(1e13, None)
    gain, noise = large.rows_gain(sample, found, problem.kernel, 1e-4, X_va, Y_va, full_rows, "accuracy", 1.0, budget)
    assert gain > noise > 0 and budget.spent > 0


def test_the_lambda_floor_is_what_the_kernel_values_resolve():
    """Half the dtype's epsilon times trace(T) as the preconditioner estimates it: for a Gaussian kernel (k(c, c) = 1)
    and unit weights, eps/2 for float32 values (6e-8) and for float64 ones (1e-16); the drawn centers' estimate where
    the basis kept far fewer than were drawn, of the same size."""
    from kopt.nystrom import NystromCG
    from kopt_plugins.kernels.shift_invariant import GaussianKernel

    X, y, _, _ = _wiggly(n=2000)
    Y = y[:, None].astype(np.float64)
    for dtype, eps in ((np.float32, 2.0 ** -23), (np.float64, 2.0 ** -52)):
        cg = NystromCG(GaussianKernel(bandwidth=0.5), X, Y, np.asfortranarray(X[:200]), dtype=dtype)
        assert cg.factors.per_center  # 200 distinct centers a bandwidth apart: all kept
        assert cg.lambda_floor() == pytest.approx(0.5 * eps, rel=1e-6)
    many = np.asfortranarray(np.repeat(X[:50], 8, axis=0))  # 400 drawn, at most 50 distinct: the drawn estimate
    cg = NystromCG(GaussianKernel(bandwidth=0.5), X, Y, many, dtype=np.float32)
    assert not cg.factors.per_center
    assert 0.1 * 2.0 ** -24 < cg.lambda_floor() < 10 * 2.0 ** -24


@pytest.mark.parametrize("lam_start", [1e-9, 1e-4])
def test_the_grown_path_tries_no_lambda_below_the_floor(small_sample, lam_start):
    """The grown λ path starts at the sample's λ, or at the first λ of the grid above the floor where the sample's
    lies below it, and walks down no further than the floor."""
    from kopt.nystrom.centers import center_order
    from kopt_plugins.auto import work

    large = small_sample
    problem = _wiggly_problem("floor")
    fit, va = large.split(problem.n, 5)
    lines = []
    order = center_order(problem, 256)
    grown = large.grown_path(problem, problem.kernel, order, 256, lam_start, fit=fit, validation=va,
                              metric="accuracy", log=lines.append, threads=None,
                              budget=work.Budget(1e13, None))
    assert grown is not None
    tried = [float(lam) for lam in grown.path]
    assert tried and min(tried) >= grown.cg.lambda_floor()
    if lam_start < grown.cg.lambda_floor():
        assert any("below what the float32 kernel values resolve" in line and "the path starts at" in line
                   for line in lines), lines
    else:
        assert max(tried) == pytest.approx(lam_start, rel=0.01)


def test_the_grown_path_starts_no_lambda_the_work_left_cannot_solve(small_sample):
    """Walking down, a λ needs at least the CG steps the last one took from its warm start: where the work left affords
    fewer, it is not started (its steps would choose nothing), and the path keeps what it solved."""
    from kopt.nystrom.centers import center_order
    from kopt_plugins.auto import work

    large = small_sample
    problem = _wiggly_problem("afford")
    fit, va = large.split(problem.n, 5)
    order = center_order(problem, 256)
    step = work.cg_step(problem.n, 256, int(problem.d))

    def path(budget, lines):
        return large.grown_path(problem, problem.kernel, order, 256, 1e-1, fit=fit, validation=va,
                                 metric="accuracy", log=lines.append, threads=None, budget=budget)

    class Counted(work.Budget):  # the work counted after each call: the factors, then one call a λ
        def count(self, flops):
            super().count(flops)
            spent.append(self.spent)

    lines, spent = [], []
    free = path(Counted(1e13, None), lines)
    lams = list(free.path)
    taken = [int(re.search(r"\((\d+) CG steps so far", line).group(1)) for line in lines if "CG steps so far" in line]
    assert len(lams) >= 4 and len(taken) == len(lams)
    # the work of the first three λs, one more λ's preconditioner, and one step fewer than the third took warm (a
    # step's share of the confirmations' passes with it)
    warm = taken[2] - taken[1]
    assert warm >= 2
    budget = work.Budget(spent[3] + work.cg_lambda(256) + (warm - 1 + 0.5) * step * (1 + 1 / REFRESH_EVERY), None)
    lines = []
    cut = path(budget, lines)
    assert list(cut.path) == lams[:3]
    assert any(f"affords {warm - 1} CG steps, fewer than the {warm}" in line and "not started" in line
               for line in lines), lines


def test_the_grown_path_starts_half_a_decade_up_where_the_work_cannot_see_a_lambda_to_its_cap(small_sample):
    """Where the work left affords fewer CG steps than a λ may take (MAX_STEPS), the path's first λ is half a decade
    above the sample's (a smaller λ needs more steps, and one cut unsolved chooses nothing) and the walk comes down
    from there; with the work to spare, or from a model CG solved at that λ on every row (the rung's), it starts at the
    sample's λ."""
    from kopt.nystrom.centers import center_order
    from kopt_plugins.auto import work
    from kopt_plugins.auto.planner import LAMBDAS

    large = small_sample
    problem = _wiggly_problem("start-above")
    fit, va = large.split(problem.n, 5)
    order = center_order(problem, 256)
    step = work.cg_step(problem.n, 256, int(problem.d)) * (1 + 1 / REFRESH_EVERY)
    at = LAMBDAS.index(1e-3)

    def path(budget, start_solved=False):
        lines = []
        return large.grown_path(problem, problem.kernel, order, 256, 1e-3, fit=fit, validation=va, metric="accuracy",
                                log=lines.append, threads=None, budget=budget, start_solved=start_solved), lines

    free, lines = path(work.Budget(1e13, None))
    assert list(free.path)[0] == "0.001" and not any("starts half a decade above" in line for line in lines), lines
    factors = work.cg_factors(256) + work.cg_lambda(256)
    for affords in (large.MAX_STEPS - 1, 12):
        tight, lines = path(work.Budget(factors + (affords + 0.5) * step, None))
        assert list(tight.path)[0] == f"{LAMBDAS[at - 1]:g}", (affords, lines)
        assert any(f"affords {affords} CG steps, fewer than the {large.MAX_STEPS}" in line
                   and "starts half a decade above lambda 0.001, at 0.00316228" in line for line in lines), lines
    enough, lines = path(work.Budget(factors + (large.MAX_STEPS + 0.5) * step, None))
    assert list(enough.path)[0] == "0.001", lines
    solved, lines = path(work.Budget(factors + 12.5 * step, None), start_solved=True)
    assert list(solved.path)[0] == "0.001" and not any("half a decade above" in line for line in lines), lines


def test_a_lambda_below_one_started_from_a_smaller_model_needs_the_steps_that_one_took(small_sample, monkeypatch):
    """Walking down from a first λ solved from a smaller model's projection (not from zero), the next λ is started
    only where the work left affords the steps the first took: fewer would choose nothing."""
    from kopt.nystrom.centers import center_order
    from kopt_plugins.auto import work

    large = small_sample
    problem = _wiggly_problem("afford-projected")
    fit, va = large.split(problem.n, 5)
    order = center_order(problem, 256)
    common = dict(fit=fit, validation=va, metric="accuracy", threads=None)
    small = large.grown_path(problem, problem.kernel, order, 64, 1e-3, walk=False, log=lambda line: None,
                             budget=work.Budget(1e13, None), **common)
    start = (small.cg.C, small.cg.coef(small.v))

    class Counted(work.Budget):  # the work counted after each call
        def count(self, flops):
            super().count(flops)
            spent.append(self.spent)

    lines, spent = [], []
    free = large.grown_path(problem, problem.kernel, order, 256, 1e-3, start=start, log=lines.append,
                            budget=Counted(1e13, None), **common)
    first = int(re.search(r"\((\d+) CG steps so far", next(line for line in lines if "CG steps so far" in line)).group(1))
    assert len(free.path) >= 2 and first >= 2, lines
    # a λ may take one step more than the first took: the work below affords every step of the first λ
    monkeypatch.setattr(large, "MAX_STEPS", first + 1)
    step = work.cg_step(problem.n, 256, int(problem.d)) * (1 + 1 / REFRESH_EVERY)
    # the factors, the projection and the first λ's work (spent[2]), then one step fewer than it took for the next
    lines = []
    cut = large.grown_path(problem, problem.kernel, order, 256, 1e-3, start=start, log=lines.append,
                           budget=work.Budget(spent[2] + work.cg_lambda(256) + (first - 1 + 0.5) * step, None),
                           **common)
    assert list(cut.path) == list(free.path)[:1], lines
    assert any(f"affords {first - 1} CG steps, fewer than the {first} lambda 0.001 took from its start" in line
               and "not started" in line for line in lines), lines


def test_the_bandwidth_probe_spends_no_more_than_its_share(small_sample):
    """The probe runs within the work its plan counted, a third of it to each bandwidth factor: with less than it
    used freely, every factor is still probed (the first does not starve the others) and what it counted stays within
    the share (a step's confirmations aside); a share that affords no factor's factors probes none."""
    from kopt_plugins.auto import work

    large = small_sample
    problem = _wiggly_problem("probe-share")
    fit, va = large.split(problem.n, 5)
    sample = large.sample_rows(problem, fit)
    centers = np.sort(sample[:128])
    args = (problem, problem.kernel, 1e-3, sample, va, centers, "accuracy")
    free, lines = work.Budget(1e13, None), []
    large.probe_bandwidth(*args, lines.append, budget=free)
    step = work.cg_step(len(sample), 128, int(problem.d))
    for part in (2, 4):
        share, lines = work.Budget(free.spent / part, None), []
        large.probe_bandwidth(*args, lines.append, budget=share)
        assert share.spent <= share.work + step, part
        assert all(f"x{f:.3g}:" in lines[-1] for f in large.PROBE_FACTORS) and "not probed" not in lines[-1], lines
    share, lines = work.Budget(work.cg_factors(128), None), []
    assert large.probe_bandwidth(*args, lines.append, budget=share) == (1.0, 1e-3) and share.spent == 0


def test_the_probe_takes_the_shortest_length_scale_the_validation_rows_cannot_tell_from_the_best(small_sample,
                                                                                                 monkeypatch):
    """Among the factors whose best score the best factor's beats by less than the validation rows can tell, the
    probe takes the shortest length scale (the grown model's centers and rows resolve it); a real gain still wins."""
    from kopt_plugins.auto import scoring, work

    large = small_sample
    problem = _wiggly_problem("probe-ties")
    fit, va = large.split(problem.n, 5)
    sample = large.sample_rows(problem, fit)
    args = (problem, problem.kernel, 1e-3, sample, va, np.sort(sample[:128]), "accuracy")
    real = scoring.outcomes
    for perfect, expect in ((False, 0.5), (True, 1.0)):  # x1's outcomes as they are, then every row right
        def outcomes(metric, S, Y, y_scale, _perfect=perfect):
            rows = real(metric, S, Y, y_scale)
            return np.ones_like(rows) if _perfect and _bandwidth[0] == 1.0 else rows

        _bandwidth = [None]
        solve = large.solve_lambda

        def tracking(cg, *a, _solve=solve, **k):
            _bandwidth[0] = round(cg.kernel.options.as_dict()["bandwidth"] / problem.kernel.options.as_dict()[
                "bandwidth"], 3)
            return _solve(cg, *a, **k)

        monkeypatch.setattr(scoring, "outcomes", outcomes)
        monkeypatch.setattr(large, "solve_lambda", tracking)
        lines = []
        factor, _ = large.probe_bandwidth(*args, lines.append, budget=work.Budget(1e13, None))
        monkeypatch.setattr(large, "solve_lambda", solve)
        assert factor == expect, lines


def test_the_bandwidth_probe_starts_above_the_floor(small_sample, monkeypatch):
    """A sample's λ below what the float32 kernel values resolve: each probe factor's walk starts at the first of its
    λs above its CG's floor, never solves a λ below it, and solves no λ twice."""
    from kopt_plugins.auto import work

    large = small_sample
    tried = []
    real = large.solve_lambda

    def recording(cg, lam, *args, **kwargs):
        tried.append((cg.kernel.options.as_dict()["bandwidth"], lam, cg.lambda_floor()))  # one CG a bandwidth
        return real(cg, lam, *args, **kwargs)

    monkeypatch.setattr(large, "solve_lambda", recording)
    problem = _wiggly_problem("probe-floor")
    fit, va = large.split(problem.n, 5)
    sample = large.sample_rows(problem, fit)
    for lam0 in (1e-11, 1e-4):  # below the floor (about 6e-8 here), and above it
        tried.clear()
        large.probe_bandwidth(problem, problem.kernel, lam0, sample, va, np.sort(sample[:128]), "accuracy",
                              lambda line: None, budget=work.Budget(1e13, None))
        assert tried and all(lam >= floor for _, lam, floor in tried)
        assert len({(cg, lam) for cg, lam, _ in tried}) == len(tried)
        if lam0 < 1e-9:  # the first λ of each factor is the first probe λ above the floor
            firsts = {}
            for cg, lam, floor in tried:
                firsts.setdefault(cg, (lam, floor))
            assert all(floor <= lam < 10 * floor for lam, floor in firsts.values())


def test_a_start_projected_from_another_model_is_that_model_where_its_centers_are_kept():
    """NystromCG.projected: a model on some of the kept centers is the same function on all of them (its scores, to
    float64 rounding); a model on other centers is its closest in their span -- and CG from it needs fewer steps to
    its certificate than from zero."""
    from kopt_plugins.losses.regression import SquareLoss

    X, y, _, _ = _wiggly(n=3000)
    Y = y[:, None].astype(np.float64)
    kernel = GaussianKernel(bandwidth=0.5)
    cg = NystromCG(kernel, X, Y, np.asfortranarray(X[:300]), dtype=np.float64)
    sub = np.asarray(cg.C)[::3]  # a third of the kept centers, a model on them
    w = np.random.default_rng(0).standard_normal((sub.shape[0], 1))
    s = cg.start(1e-3, cg.projected(sub, w))
    np.testing.assert_allclose(s["scores"], kernel.exact(X.astype(np.float64), sub) @ w, rtol=0, atol=1e-8)
    # a model solved on other rows' centers (the sample's), as a start at the same λ
    small = NystromCG(kernel, X[:1500], Y[:1500], np.asfortranarray(X[2000:2150]), dtype=np.float64)
    t = small.start(1e-3)
    for _ in range(60):
        small.step(t)

    def steps(v):
        s, taken = cg.start(1e-3, v), 0
        while taken < 200:
            cg.step(s)
            taken += 1
            P, D, _, _, confirmed = cg.confirm(s, taken, 1e-3, SquareLoss(), Y)
            if confirmed and Check(objective=P, dual=D).rel_gap <= 1e-3:
                return taken
        return taken

    assert steps(cg.projected(small.C, small.coef(t["v"]))) < steps(None)  # 4 against 9 when written


def test_the_rung_solves_its_first_lambda_and_walks_no_further(small_sample):
    """``walk=False`` (the rung: do more centers pay?): the first λ solved is the whole path, the same model as the
    walked path's first; a start from a smaller model counts its kernel values and its pass in the work."""
    from kopt.nystrom.centers import center_order
    from kopt_plugins.auto import work

    large = small_sample
    problem = _wiggly_problem("rung-walk")
    fit, va = large.split(problem.n, 5)
    order = center_order(problem, 256)

    def path(**kw):
        budget = work.Budget(1e13, None)
        out = large.grown_path(problem, problem.kernel, order, 256, 1e-1, fit=fit, validation=va, metric="accuracy",
                                log=lambda line: None, threads=None, budget=budget, **kw)
        return out, budget.spent

    walked, _ = path()
    once, spent = path(walk=False)
    assert len(walked.path) >= 2 and list(once.path) == list(walked.path)[:1]
    assert once.score == pytest.approx(walked.path[next(iter(walked.path))], abs=1e-6)  # the path rounds
    small = once.cg
    started, spent_started = path(walk=False, start=(small.C[::2], small.coef(once.v)[::2]))
    assert spent_started > spent  # the projection's kernel values and the start's pass are counted
    assert started.path.keys() == once.path.keys()


def test_the_rung_ends_once_its_gain_is_decided_and_its_score_settled(small_sample):
    """The rung given the sample's model's held-out score (``reference``): its CG ends at the first step where it has
    gained over that score what the search calls a gain and its own held-out score did not move, before its λ is
    solved; against a score it cannot beat it runs to the solve, as with no reference."""
    from kopt.nystrom.centers import center_order
    from kopt_plugins.auto import work

    large = small_sample
    problem = _wiggly_problem("rung-test")
    fit, va = large.split(problem.n, 5)
    order = center_order(problem, 256)

    def rung(**kw):
        return large.grown_path(problem, problem.kernel, order, 256, 1e-4, fit=fit, validation=va, metric="accuracy",
                                log=lambda line: None, threads=None, budget=work.Budget(1e13, None), walk=False, **kw)

    solved = rung()
    beaten = rung(reference=(0.5, None))  # a coin's accuracy: every step gains over it
    unbeaten = rung(reference=(1.0, None))  # no model gains over a perfect one
    assert solved.state is not None and 2 <= beaten.steps < solved.steps  # 7 against 12 when written
    assert beaten.state is None  # not solved: no refreshed state to start from without a pass
    assert beaten.score >= 0.5 + large.scoring.MIN_GAIN["accuracy"]
    assert list(beaten.path) == list(solved.path)
    assert (unbeaten.steps, unbeaten.score) == (solved.steps, solved.score)


def test_a_gap_met_after_a_confirmation_the_residual_triggered_is_confirmed_at_once():
    """After a confirmation the residual's tenfold fall triggered, a carried gap meeting tol is confirmed at the step
    it meets it (it waited REFRESH_EVERY steps before, each a step the solve did not need), on four seeded problems
    where that case occurs."""
    from kopt_plugins.kernels.shift_invariant import GaussianKernel
    from kopt_plugins.losses.regression import SquareLoss

    X, y, _, _ = _wiggly(n=3000)
    Y = y[:, None].astype(np.float64)
    square = SquareLoss()
    seen = 0
    for bandwidth, lam, tol in ((0.5, 1e-3, 1e-2), (0.5, 1e-4, 1e-3), (1.0, 1e-5, 1e-2), (1.0, 1e-6, 1e-3)):
        cg = NystromCG(GaussianKernel(bandwidth=bandwidth), X, Y, np.asfortranarray(X[:256]), dtype=np.float32)
        s, last = cg.start(lam), None  # the last confirmation's step and whether the gap triggered it
        for t in range(1, 60):
            cg.step(s)
            before = s.get("refreshed_at")
            P, D, _, carried, confirmed = cg.confirm(s, t, tol, square, Y)
            if carried <= tol and last is not None and not last[1] and t - last[0] < REFRESH_EVERY:
                seen += 1
                assert confirmed, (lam, tol, t, last)
            if s.get("refreshed_at") != before:  # a confirmation: the gap triggered it where it met tol
                last = (t, carried <= tol)
            if confirmed and Check(objective=P, dual=D).rel_gap <= tol:
                break
    assert seen >= 3  # the case the rule is for occurred
