"""Novelty detection and KL density-ratio losses (Dai et al. 2014, Sec. 4): what a solver does with them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.optimize import minimize_scalar

from kopt.contract.registry import registry

REG = registry()


def novelty(nu):
    return REG.get("loss", "novelty")(nu=nu)


@pytest.mark.slow
@settings(derandomize=True, deadline=None, max_examples=20)
@given(u=hnp.arrays(np.float64, st.integers(1, 40), elements=st.floats(-5, 5, width=32)), nu=st.floats(0.05, 1.0))
def test_best_offset_is_the_nu_quantile_and_minimises_the_mean_loss(u, nu):
    loss = novelty(nu)
    tau = loss.best_offset(u)
    obj = lambda t: float(loss.value(u, t).mean())  # noqa: E731
    grid = np.concatenate([u, np.linspace(-6, 6, 241)])
    assert obj(tau) <= min(obj(t) for t in grid) + 1e-12
    # ν-property: at most a fraction ν strictly below τ, at least ν at or below it
    assert np.mean(u < tau) <= nu + 1e-12 <= np.mean(u <= tau) + 2e-12


def test_offset_grad_is_the_tau_derivative():
    loss = novelty(0.3)
    rng = np.random.default_rng(0)
    u, tau, h = rng.standard_normal(200), 0.2, 1e-6
    fd = (loss.value(u, tau + h) - loss.value(u, tau - h)) / (2 * h)
    away = np.abs(u - tau) > 1e-3
    assert np.allclose(loss.offset_grad(u, tau)[away], fd[away], atol=1e-6)
    assert np.allclose(loss.offset_grad(u, tau), np.where(u < tau, 0.7, -0.3))


@pytest.mark.slow
def test_papers_offset_update_converges_to_the_quantile():
    """Dai et al.'s τ step (τ + γν if f ≥ τ, τ − γ(1 − ν) else) is SGD on offset_grad; it finds the ν-quantile."""
    loss = novelty(0.2)
    rng = np.random.default_rng(1)
    u = rng.standard_normal(4000)
    tau = 0.0
    for t in range(1, 8001):
        b = rng.integers(0, u.size, 128)
        tau -= (2.0 / (t + 100) ** 0.6) * float(loss.offset_grad(u[b], tau).mean())
    assert abs(np.mean(u < tau) - 0.2) < 0.02
    assert abs(tau - loss.best_offset(u)) < 0.05


def kl():
    return REG.get("loss", "kl_density_ratio")()


def test_kl_minimiser_is_log_ratio_label0_over_label1():
    """Two locations a, b; sample P (label 0) and Q (label 1) with different sizes.

    With balance_weights the per-location minimiser is log p₀/p₁ (Dai et al. (2014) writes log q/p
    with its samples' roles swapped; re-derived: q e^f = p).  Unweighted it is off by log n₀/n₁.
    """
    loss = kl()
    p0, p1 = np.array([0.7, 0.3]), np.array([0.2, 0.8])
    n0, n1 = 300, 100
    loc = np.concatenate([np.repeat([0, 1], (p0 * n0).astype(int)), np.repeat([0, 1], (p1 * n1).astype(int))])
    z = np.concatenate([np.zeros(n0), np.ones(n1)])
    w = loss.balance_weights(z)
    for where in (0, 1):
        rows = loc == where
        for weights, shift in ((w, 0.0), (np.ones_like(w), np.log(n0 / n1))):
            obj = lambda f: float(np.sum(weights[rows] * loss.value(np.full(rows.sum(), f), z[rows])))  # noqa: E731
            f_star = minimize_scalar(obj, bounds=(-10, 10), method="bounded", options={"xatol": 1e-10}).x
            assert f_star == pytest.approx(np.log(p0[where] / p1[where]) + shift, abs=1e-6)


def test_kl_balanced_mean_is_the_papers_objective():
    """mean(w ℓ) = E_Q[e^f] − E_P[f] (Dai et al. 2014, eq. 8 with r_KL, before the ν/2‖f‖² term)."""
    loss = kl()
    rng = np.random.default_rng(2)
    z = (rng.uniform(size=70) < 0.3).astype(float)
    f = rng.standard_normal(70)
    want = np.mean(np.exp(f[z == 1])) - np.mean(f[z == 0])
    assert np.isclose(np.mean(loss.balance_weights(z) * loss.value(f, z)), want)
    with pytest.raises(ValueError, match="both samples"):
        loss.balance_weights(np.zeros(5))
