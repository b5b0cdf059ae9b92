"""DSG / UDSG / CDSG (plugins/dsg): the algorithm against a plain re-implementation of
Dai et al. (2014) Alg. 1, the UDSG schedule, the CDSG checking rule (Li & Póczos 2016, eq. 9), block counts,
bad options, checkpoint/resume and the evaluation machinery."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kopt
from kopt.errors import DataError, SpecError
from kopt.running.assemble import assemble
from kopt.spec import load_spec
from kopt.testing import StopAt as _StopAt
from kopt_plugins.dsg.checking import checking_steps
from kopt_plugins.dsg.expansion import BlockExpansion
from kopt_plugins.dsg.tracking import ScoreTracker

SOLVERS = ["dsg", "udsg", "cdsg"]


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(n)
    return X, y


def _spec(tmp_path=None, solver="dsg", loss="square", block_size=32, lam=1e-4, **options):
    opts = {"iterations": 30, "batch_size": 32, "step_size": 1.0, "step_schedule": "constant", **options}
    return {
        "name": "t",
        "seed": 3,
        "model": {"loss": {"name": loss}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                  "features": {"block_size": block_size, "cache_blocks": 64},
                  "regularizer": {"name": "l2", "lambda": lam}},
        "solver": {"name": solver, **opts},
        "backend": "numpy",
        "output": {"dir": str(tmp_path / "out") if tmp_path else "/nonexistent/kopt-dsg-test", "model": False,
                   "report": False},
    }


class _Capture:
    """A RunContext stand-in that keeps the solver state at chosen iterations (and can stop)."""

    def __init__(self, keep=(), stop_at=None, resume_state=None, start_iteration=0):
        self.keep, self.stop_at = set(keep), stop_at
        self.resume_state, self.start_iteration = resume_state, start_iteration
        self.states, self.records = {}, []

    def report(self, t, state=None, **kw):
        self.records.append((t, kw))
        if t in self.keep or t == self.stop_at:
            self.states[t] = state()
        return t != self.stop_at


def _problem_and_solver(spec, data):
    s = load_spec(spec)
    problem = assemble(s, data)
    solver = s.component(("solver",))
    return problem, solver


# -- the algorithm -------------------------------------------------------------------


def _plain_dsg(problem, T, B, gamma):
    """Dai et al. (2014) Alg. 1 with mini-batches, written the slow way: explicit α_j, explicit shrink loop."""
    fmap = problem.feature_map()
    F = fmap.block_size
    X = np.asarray(problem.X, dtype=np.float64)
    y = np.asarray(problem.y, dtype=np.float64)
    alphas = []
    for t in range(1, T + 1):
        rows = np.sort(problem.rng("batch", t).integers(0, problem.n, size=B))
        Phi = [fmap.block(X[rows], j + 1).astype(np.float64) for j in range(len(alphas))]
        u = sum((P @ a for P, a in zip(Phi, alphas)), np.zeros(B))
        g = u - y[rows]                                              # ℓ' of the square loss
        new = -gamma / (B * F) * fmap.block(X[rows], t).astype(np.float64).T @ g
        alphas = [(1 - gamma * problem.lam) * a for a in alphas] + [new]
    return np.array(alphas)


def test_dsg_is_papers_algorithm_1():
    X, y = _data()
    spec = _spec(iterations=12, batch_size=16, step_size=0.7, lam=0.05)
    problem, solver = _problem_and_solver(spec, (X, y))
    out = solver.run(problem, _Capture())
    expected = _plain_dsg(problem, 12, 16, 0.7)
    assert out.predictor.arrays["coef"].shape == expected.shape == (12, 32)
    assert list(out.predictor.arrays["blocks"]) == list(range(1, 13))  # block t has FeatureMap index t
    np.testing.assert_allclose(out.predictor.arrays["coef"], expected, rtol=2e-4, atol=1e-9)
    assert out.info["n_blocks"] == 12


def test_step_schedules_offset_and_cap():
    from kopt_plugins.dsg.options import schedule, step_cap
    from kopt_plugins.dsg.solver import CDSG

    def o(**kw):
        return CDSG(**kw).options

    assert step_cap(o(step_size=3.0)) == 6.0                                   # θ' = 2θ while steps decay
    assert step_cap(o(step_size=3.0, step_schedule="constant")) == 3.0         # no headroom at a constant step
    assert step_cap(o(step_size=3.0, step_cap=None)) is None
    assert step_cap(o(step_size=3.0, step_cap=4.5)) == 4.5

    assert schedule(o(step_schedule="inverse"), 4) == 0.25
    assert schedule(o(step_schedule="inverse", step_offset=6), 4) == 0.1
    assert schedule(o(step_schedule="inverse_sqrt"), 4) == 0.5
    assert schedule(o(step_schedule="constant"), 4) == 1.0


def test_scale_folding_keeps_the_function():
    """Many shrinks fold the scale into the coefficients without changing f or a tracker."""
    from kopt.numerics.features import FeatureMap
    from kopt_plugins.kernels import GaussianKernel

    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 2)).astype(np.float32)
    fmap = FeatureMap(GaussianKernel(bandwidth=1.0), 2, seed=1, block_size=8)
    exp = BlockExpansion(np, 8)
    tr = ScoreTracker(X, np, np.float32)
    exp.listeners.append(tr)
    plain, total = [], 1.0
    for j in range(1, 6):
        a = rng.standard_normal(8) * total
        exp.add_block(j, a)
        plain.append(a.copy())
        for _ in range(50):  # 0.7^50 ≈ 2e-8: folds at least once per block
            exp.shrink(0.7)
            plain = [p * 0.7 for p in plain]
            total *= 0.7
        stored = np.abs(exp.coef[: exp.m]).max() / np.abs(np.array(plain)).max()
        assert 1e-7 < stored < 1e7  # float32-safe magnitudes
    want = total * fmap.predict(X, np.array(plain) / total, blocks=range(1, 6))
    np.testing.assert_allclose(exp.predict(fmap, X), want, rtol=1e-5, atol=0)
    np.testing.assert_allclose(tr.sync(fmap, exp), want, rtol=1e-5, atol=0)
    np.testing.assert_allclose(exp.coefficients(), np.array(plain), rtol=1e-12, atol=0)


def test_udsg_period_and_block_count():
    X, y = _data()
    spec = _spec(solver="udsg", iterations=30, grow=2, reuse=1)
    out = kopt.solve(spec, data=(X, y))
    # periods of 3: iterations 1, 2 add blocks, 3 re-uses one -> 20 new, 10 re-use steps
    assert (out.info["new_steps"], out.info["reuse_steps"], out.info["n_blocks"]) == (20, 10, 20)
    steps = [r["n_blocks"] for r in out.trace]
    assert steps[:6] == [1, 2, 2, 3, 4, 4]


@pytest.mark.slow
def test_udsg_and_cdsg_end_with_fewer_blocks_than_dsg():
    X, y = _data(n=600)
    counts, losses = {}, {}
    for s in SOLVERS:
        out = kopt.solve(_spec(solver=s, iterations=60, step_size=20.0, step_schedule="inverse", step_offset=10,
                               check_rows=600), data=(X, y))
        counts[s] = out.info["n_blocks"]
        losses[s] = out.objective
    assert counts["dsg"] == 60
    assert counts["udsg"] == 30
    assert counts["cdsg"] < counts["dsg"]
    # re-using blocks does not cost accuracy on this problem
    assert losses["cdsg"] < 1.1 * losses["dsg"] and losses["udsg"] < 1.1 * losses["dsg"]


# -- CDSG's checking rule -----------------------------------------------------------------


def _lhs_rhs(s, f, z, gamma, v):
    """Both sides of eq. 9 in H: 2‖f_k − sζ‖² + 2s²v ≤ ‖f_k‖² + γ²‖ζ‖² (f, z: coordinates of f_k, ζ)."""
    s = np.asarray(s, dtype=np.float64)
    lhs = 2 * (f @ f - 2 * s * (f @ z) + s * s * (z @ z)) + 2 * s * s * v
    return lhs, f @ f + gamma**2 * (z @ z)


_NUM = st.one_of(st.just(0.0), st.floats(-3, -1e-3), st.floats(1e-3, 3))
_VEC = st.lists(_NUM, min_size=3, max_size=3)


@pytest.mark.slow
@settings(derandomize=True, max_examples=100, deadline=None)
@given(_VEC, _VEC, st.floats(1e-3, 5), st.one_of(st.just(0.0), st.floats(1e-3, 2)))
def test_checking_step_is_the_largest_root_of_eq9(f, z, gamma, v):
    f, z = np.array(f), np.array(z)
    s = checking_steps(np.array([f @ f]), np.array([f @ z]), z @ z, gamma, v)[0]
    if not (z @ z or v):  # a zero gradient without variance: nothing to step along, no re-use
        assert s == -np.inf
        return
    grid = np.linspace(0, 20, 4001)
    lhs, rhs = _lhs_rhs(grid, f, z, gamma, v)
    feasible = grid[lhs - rhs <= 1e-12 * rhs]
    if s == -np.inf:
        assert feasible.size == 0
        return
    assert s >= 0
    lhs, rhs = _lhs_rhs(s, f, z, gamma, v)
    assert lhs == pytest.approx(rhs, rel=1e-7, abs=1e-9)        # on the boundary of eq. 9
    lhs2, rhs2 = _lhs_rhs(s * 1.001 + 1e-6, f, z, gamma, v)
    assert lhs2 > rhs2                                           # and the largest admissible step
    assert feasible.size == 0 or feasible.max() <= s + 1e-2
    if s > gamma:                                                # re-use needs cos(f_k, ζ) > 1/2
        assert f @ z > 0.5 * np.sqrt((f @ f) * (z @ z))


def test_checking_rule_is_eq9_for_one_point():
    # B = 1, both at one point x (k(x, x) = 1): ‖f_k‖² = β², ⟨f_k, ζ⟩ = βg, ‖ζ‖² = g².  A block whose
    # step pointed the other way (βg > 0) admits the long step β/g + √((β² + γ²g²)/2)/|g| of eq. 9;
    # one that pointed the same way, or is orthogonal to ζ, admits none above γ.
    g, gamma = 0.5, 0.1
    beta = np.array([-0.2 * g, 0.2 * g, 0.2 * g])
    cross = np.array([beta[0] * g, beta[1] * g, 0.0])
    s = checking_steps(beta**2, cross, g * g, gamma, 0.0)
    assert s[0] < gamma and s[2] < gamma
    np.testing.assert_allclose(s[1], 0.2 + np.sqrt((0.2**2 + gamma**2) / 2), rtol=1e-12)


@pytest.mark.slow
def test_cdsg_step_cap_and_reuse_steps():
    X, y = _data(n=600)
    base = dict(solver="cdsg", iterations=60, step_size=20.0, step_schedule="inverse", step_offset=10)
    free = _Capture()
    problem, solver = _problem_and_solver(_spec(**base, step_cap=None), (X, y))
    solver.run(problem, free)
    capped = _Capture()
    problem, solver = _problem_and_solver(_spec(**base, step_cap=25.0), (X, y))
    out = solver.run(problem, capped)
    gammas = {t: 20.0 / (10 + t) for t, _ in capped.records}
    reuse = [(t, kw["step"]) for t, kw in capped.records if kw["step"] > gammas[t] * (1 + 1e-12)]
    assert reuse and out.info["reuse_steps"] >= len(reuse)
    assert all(step <= 25.0 / (10 + t) * (1 + 1e-12) for t, step in reuse)
    assert max(kw["step"] / gammas[t] for t, kw in free.records) > 25.0 / 20.0  # the cap did bind


# -- options ----------------------------------------------------------------------------


@pytest.mark.parametrize("solver, options, phrases", [
    ("udsg", {"grow": 0, "reuse": 0}, ["$.solver.grow", "G + U = 0"]),
    ("udsg", {"grow": 0, "reuse": 3}, ["$.solver.grow", "never adds a feature block"]),
    ("dsg", {"step_size": -1.0}, ["$.solver.step_size", "> 0", "got -1"]),
    ("cdsg", {"step_size": 2.0, "step_cap": 1.0}, ["$.solver.step_cap", "θ ≤ θ'"]),
    ("dsg", {"batch_size": 0}, ["$.solver.batch_size", ">= 1"]),
    ("dsg", {"step_schedule": "exp"}, ["$.solver.step_schedule", "inverse"]),
    ("cdsg", {"grow": 1}, ["$.solver.grow", "unknown key"]),
])
def test_bad_options_are_spec_errors(solver, options, phrases):
    with pytest.raises(SpecError) as err:
        load_spec(_spec(solver=solver, **options))
    for p in phrases:
        assert p in str(err.value)


def test_batch_larger_than_n_is_a_data_error():
    X, y = _data(n=20)
    with pytest.raises(DataError, match="batch_size = 32 is larger than the 20 training rows"):
        kopt.solve(_spec(), data=(X, y))


def test_specs_in_the_repository_validate(shared_data):
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "specs"
    files = sorted(root.glob("dsg_*.yaml")) + sorted(root.glob("udsg_*.yaml")) + sorted(root.glob("cdsg_*.yaml"))
    files.append(root / "krr_synthetic.yaml")
    names = {load_spec(str(f))["solver"]["name"] for f in files}
    assert names == set(SOLVERS)


# -- checkpoints --------------------------------------------------------------------------



@pytest.mark.slow
@pytest.mark.parametrize("solver", SOLVERS)
def test_resume_is_bit_identical(tmp_path, solver):
    X, y = _data()
    extra = {"sampling": "shuffle", "averaging": True} if solver == "udsg" else {}
    spec = _spec(tmp_path, solver=solver, iterations=24, step_size=20.0, step_schedule="inverse", step_offset=10,
                 **extra)
    spec["output"]["checkpoint_every"] = 5
    full = kopt.solve({**spec, "output": {**spec["output"], "dir": str(tmp_path / "full")}}, data=(X, y))
    reg = kopt.contract.registry.registry()
    reg.pm.register(_StopAt(13), name="dsg-stopper")
    try:
        with pytest.raises(KeyboardInterrupt):
            kopt.solve(spec, data=(X, y))
    finally:
        reg.pm.unregister(name="dsg-stopper")
    assert json.loads((tmp_path / "out" / "checkpoint.json").read_text())["iteration"] == 13
    resumed = kopt.solve(spec, data=(X, y), resume=True)
    a, b = full.model.predictor.arrays, resumed.model.predictor.arrays
    assert np.array_equal(a["coef"], b["coef"]) and np.array_equal(a["blocks"], b["blocks"])
    assert resumed.info["n_blocks"] == full.info["n_blocks"]
    assert resumed.objective == full.objective


@pytest.mark.slow
@pytest.mark.parametrize("solver", SOLVERS)
def test_check_resume_with_checks_and_holdout(tmp_path, solver):
    """kopt.testing.check_resume, with checks and holdout metrics (their trackers rebuilt on resume)."""
    from kopt.testing import check_resume

    X, y = _data(n=400)
    spec = _spec(solver=solver, iterations=20, step_size=20.0, step_schedule="inverse", step_offset=10,
                 check_every=4, check_rows=64, holdout_rows=50)
    full, resumed = check_resume(spec, (X[:300], y[:300], X[300:], y[300:]), stop_at=9, out_dir=tmp_path)
    assert resumed.info["status"] == full.info["status"] == "iteration_cap" and resumed.success
    assert [r["iteration"] for r in resumed.trace if "test_rmse" in r] == [4, 8, 12, 16, 20]


# -- evaluation -------------------------------------------------------------------------


def test_holdout_metrics_every_k_iterations_match_the_model():
    X, y = _data(n=500)
    yb = np.where(y > np.median(y), 1, -1)
    spec = _spec(solver="udsg", loss="logistic", iterations=40, check_every=10, step_size=5.0)
    out = kopt.solve(spec, data=(X[:400], yb[:400], X[400:], yb[400:]))
    evals = [r for r in out.trace if "test_accuracy" in r]
    assert [r["iteration"] for r in evals] == [10, 20, 30, 40]
    # checks: the exact training objective (``objective``, with its loss part) next to the running estimate
    assert all("train_loss" in r and "objective_estimate" in r and "n_blocks" in r for r in evals)
    # the incrementally tracked scores give the metrics of the final model itself
    assert evals[-1]["test_accuracy"] == pytest.approx(out.metrics["accuracy"])
    assert evals[-1]["test_auc"] == pytest.approx(out.metrics["auc"], abs=1e-6)
    assert evals[-1]["test_accuracy"] > 0.7
    assert all(np.isfinite(r["objective"]) for r in out.trace)


def test_averaging_returns_the_mean_of_the_iterates():
    X, y = _data()
    spec = _spec(solver="udsg", iterations=10, averaging=True)
    problem, solver = _problem_and_solver(spec, (X, y))
    cap = _Capture(keep=range(1, 11))
    out = solver.run(problem, cap)
    m = out.info["n_blocks"]
    iterates = []
    for t in range(1, 11):
        s = cap.states[t]
        c = np.zeros((m, 32))
        c[: s["n_blocks"]] = s["scale"] * s["coef"]
        iterates.append(c)
    np.testing.assert_allclose(out.predictor.arrays["coef"], np.mean(iterates, axis=0), rtol=1e-10, atol=1e-14)


def test_norm_estimate_tracks_the_rkhs_norm():
    """‖f‖² by the reproducing property vs the exact ‖h_t‖² of the kernel expansion with the same steps."""
    X, y = _data(n=200)
    spec = _spec(iterations=15, batch_size=50, block_size=2048, step_size=2.0, lam=1e-3)
    problem, solver = _problem_and_solver(spec, (X, y))
    out = solver.run(problem, _Capture())
    # h_t = Σ_i Σ_b w_ib k(x_ib, ·) with w = −γ ℓ'_b / B, shrunk by (1 − γλ) afterwards
    fmap = problem.feature_map()
    Xp = np.asarray(problem.X, dtype=np.float64)
    yp = np.asarray(problem.y, dtype=np.float64)
    pts, w = [], np.zeros(0)
    coefs = []
    for t in range(1, 16):
        rows = np.sort(problem.rng("batch", t).integers(0, problem.n, size=50))
        u = sum((fmap.block(Xp[rows], j + 1).astype(np.float64) @ c for j, c in enumerate(coefs)), np.zeros(50))
        g = u - yp[rows]
        coefs = [(1 - 2.0 * 1e-3) * c for c in coefs] + [-2.0 / (50 * 2048) * fmap.block(Xp[rows], t).T @ g]
        w = np.concatenate([(1 - 2.0 * 1e-3) * w, -2.0 * g / 50])
        pts.append(Xp[rows])
    P = np.concatenate(pts)
    exact = w @ problem.kernel.exact(P, P) @ w
    assert out.info["norm_sq_estimate"] == pytest.approx(exact, rel=0.1)


def test_holdout_rows_subsamples_the_holdout():
    X, y = _data(n=500)
    yb = np.where(y > np.median(y), 1, -1)
    spec = _spec(loss="hinge", iterations=20, check_every=10, holdout_rows=40, check_rows=64)
    out = kopt.solve(spec, data=(X[:400], yb[:400], X[400:], yb[400:]))
    assert out.info["holdout_rows"] == 40
    accs = [r["test_accuracy"] for r in out.trace if "test_accuracy" in r]
    assert len(accs) == 2 and all(a * 40 == pytest.approx(round(a * 40)) for a in accs)  # counts out of 40 rows


@pytest.mark.gpu
@pytest.mark.parametrize("solver", SOLVERS)
def test_cupy_matches_numpy(xp, solver):
    X, y = _data()
    spec = _spec(solver=solver, iterations=15, step_size=20.0, step_schedule="inverse", step_offset=10,
                 check_every=5)
    data = (X, y, X[:60], y[:60])
    ref = kopt.solve(spec, data=data)
    out = kopt.solve({**spec, "backend": "cupy" if xp is not np else "numpy"}, data=data)
    assert np.isfinite(out.objective)
    if solver != "cdsg":  # CDSG's block choice may flip on float32 rounding; the others must agree
        np.testing.assert_allclose(out.model.predictor.arrays["coef"], ref.model.predictor.arrays["coef"],
                                   rtol=1e-3, atol=1e-6)
        assert out.metrics["rmse"] == pytest.approx(ref.metrics["rmse"], rel=1e-3)


def test_block_cache_pins_the_first_blocks():
    from kopt.numerics.features import FeatureMap
    from kopt_plugins.kernels import GaussianKernel

    fm = FeatureMap(GaussianKernel(bandwidth=1.0), 3, seed=2, block_size=8, cache_blocks=3)
    X = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    for _ in range(2):  # a DSG sweep over its 10 blocks (1..10), twice: an LRU cache of 3 would hold 8, 9, 10
        for j in range(1, 11):
            fm.block(X, j)
    assert sorted(fm._cache) == [1, 2, 3]
    fresh = FeatureMap(GaussianKernel(bandwidth=1.0), 3, seed=2, block_size=8)
    np.testing.assert_array_equal(fm.block(X, 2), fresh.block(X, 2))
    np.testing.assert_array_equal(fm.predict(X, np.ones((3, 8)), blocks=[1, 5, 9]),
                                  fresh.predict(X, np.ones((3, 8)), blocks=[1, 5, 9]))
