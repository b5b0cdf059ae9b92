"""The variance operator Â of Dai et al. (2014) App. D: the packed β form against the literal θ_ij updates."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopt.contract.registry import registry
from kopt.numerics.features import FeatureMap
from kopt_plugins.gp.operator import VarianceOperator
from kopt_plugins.gp.options import max_operator_iterations, operator_bytes


def _maps(F, d=2, bandwidth=0.8):
    kernel = registry().get("kernel", "gaussian")(bandwidth=bandwidth)
    fp = FeatureMap(kernel, d, seed=3, block_size=F, dtype="float64")
    fo = FeatureMap(kernel, d, seed=11, block_size=F, dtype="float64")
    return kernel, fp, fo


def literal_theta(fp, fo, batches, gammas, lam):
    """θ_ij (F × F) by the App. D recursion, mini-batch/block form (B = F = 1: the paper's scalars).

    θ_ij ← (1 − γλ) θ_ij;  θ_it = −γ/(BF) Σ_b (Σ_{j≥i} θ_ij ψ'_j(x_b)) ψ'_t(x_b)ᵀ;
    θ_tt = γ/(BF²) Σ_b ψ_t(x_b) ψ'_t(x_b)ᵀ.
    """
    F = fp.block_size
    theta = {}
    for k, (Xb, g) in enumerate(zip(batches, gammas)):
        B = Xb.shape[0]
        Pk = fp.block(Xb, k)  # ψ'_t(X_b), B × F
        new = {}
        for i in range(k):
            u = sum(fp.block(Xb, j) @ theta[i, j].T for j in range(i, k))  # B × F: rows Σ_j θ_ij ψ'_j(x_b)
            new[i, k] = -g / (B * F) * (u.T @ Pk)
        new[k, k] = g / (B * F * F) * (fo.block(Xb, k).T @ Pk)
        for key in theta:
            theta[key] = (1 - g * lam) * theta[key]
        theta.update(new)
    return theta


def literal_diag(fp, fo, theta, X):
    return sum(((fo.block(X, i) @ th) * fp.block(X, j)).sum(axis=1) for (i, j), th in theta.items())


@settings(max_examples=5, deadline=None, derandomize=True)
@given(F=st.integers(1, 4), B=st.integers(1, 3), T=st.integers(1, 5), lam=st.sampled_from([0.0, 0.05]))
def test_packed_beta_equals_theta_recursion(F, B, T, lam):
    _, fp, fo = _maps(F)
    rng = np.random.default_rng(F * 100 + B * 10 + T)
    batches = [rng.normal(size=(B, 2)) for _ in range(T)]
    gammas = [0.7 / (1 + 0.3 * k) for k in range(T)]
    op = VarianceOperator(fp, fo, T, B, lam, np, 2)
    for t, (Xb, g) in enumerate(zip(batches, gammas), start=1):
        op.step(t, Xb, g, fp.block(Xb, t - 1))
    X = rng.normal(size=(7, 2))
    want = literal_diag(fp, fo, literal_theta(fp, fo, batches, gammas, lam), X)
    np.testing.assert_allclose(op.diag(X), want, rtol=1e-9, atol=1e-12)


def test_scalar_case_is_the_papers_update():
    """B = F = 1: θ_it = −γ Σ_j θ_ij φ'_j(x_t) φ'_t(x_t), θ_tt = γ φ_t(x_t) φ'_t(x_t) (Dai et al. 2014, Sec. 4)."""
    _, fp, fo = _maps(1)
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(1, 2)) for _ in range(4)]
    gam, lam = [0.5, 0.4, 0.3, 0.25], 0.1
    th = {}
    for t, (x, g) in enumerate(zip(xs, gam)):
        phi_p = [fp.block(x, j)[0, 0] for j in range(t + 1)]
        new = {(i, t): -g * sum(th[i, j] * phi_p[j] for j in range(i, t)) * phi_p[t] for i in range(t)}
        new[t, t] = g * fo.block(x, t)[0, 0] * phi_p[t]
        th = {key: (1 - g * lam) * v for key, v in th.items()}
        th.update(new)
    op = VarianceOperator(fp, fo, 4, 1, lam, np, 2)
    for t, (x, g) in enumerate(zip(xs, gam), start=1):
        op.step(t, x, g, fp.block(x, t - 1))
    z = rng.normal(size=(5, 2))
    want = sum(v * fo.block(z, i)[:, 0] * fp.block(z, j)[:, 0] for (i, j), v in th.items())
    np.testing.assert_allclose(op.diag(z), want, rtol=1e-10)


def test_operator_tends_to_exact_posterior_variance():
    """Many small steps with many features: Â(x, x) approaches k*ᵀ(K + σ²I)⁻¹k* (fails if the signs are off)."""
    from kopt_plugins.gp.exact import exact_posterior

    kernel, fp, fo = _maps(128, bandwidth=1.0)
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(8, 2))
    Xs = rng.uniform(-1, 1, size=(5, 2))
    s2, T, B = 0.5, 40, 8
    lam = s2 / X.shape[0]
    op = VarianceOperator(fp, fo, T, B, lam, np, 2)
    errs = []
    _, var = exact_posterior(kernel, X, np.zeros(8), Xs, s2)
    for t in range(1, T + 1):
        rows = np.random.default_rng([7, t]).integers(0, 8, size=B)
        op.step(t, X[rows], 1.0, fp.block(X[rows], t - 1))
        if t in (5, T):
            errs.append(np.linalg.norm((1 - op.diag(Xs)) - var) / np.linalg.norm(var))
    assert errs[1] < errs[0]
    assert errs[1] < 0.1, errs  # 0.068 measured; the exact variances are 0.19..0.38


def test_operator_memory_sizing():
    assert operator_bytes(1, 64, 512) == 8 * 64 * 64 + 4 * 64 * 512
    T = max_operator_iterations(64, 512, 100)
    assert operator_bytes(T, 64, 512) <= 100 * 2**20 < operator_bytes(T + 1, 64, 512)


def test_operator_refuses_wrong_batch():
    _, fp, fo = _maps(2)
    op = VarianceOperator(fp, fo, 3, 4, 0.1, np, 2)
    with pytest.raises(ValueError, match="batches of 4"):
        op.step(1, np.zeros((3, 2)), 0.1, fp.block(np.zeros((3, 2)), 0))
