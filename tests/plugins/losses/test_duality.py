"""Weak and strong duality of every loss with a conjugate, on exact Gaussian Gram matrices."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopt.contract.registry import registry
from kopt.numerics import objectives
from kopt.testing import (
    check_strong_duality,
    check_weak_duality,
    default_instance,
    gaussian_gram,
    sample_duals,
    sample_labels,
)
from kopt_plugins.joker.solver import joker_lambda, kopt_lambda

REG = registry()
CONJ = [n for n in REG.names("loss") if REG.get("loss", n).has_conjugate]
SMOOTH = [n for n in CONJ if REG.get("loss", n).smooth]


def problem(loss, n, d, bandwidth, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return gaussian_gram(X, bandwidth), sample_labels(loss, n, rng), rng


@pytest.mark.slow
@pytest.mark.parametrize("name", CONJ)
@settings(derandomize=True, deadline=None, max_examples=10)
@given(n=st.integers(2, 20), d=st.integers(1, 4), bandwidth=st.floats(0.2, 5.0),
       lam=st.floats(1e-4, 10.0), seed=st.integers(0, 2**16))
def test_weak_duality(name, n, d, bandwidth, lam, seed):
    """primal(f_α) ≥ dual(α) for random feasible α, box edges included."""
    loss = default_instance(REG.get("loss", name))
    K, y, rng = problem(loss, n, d, bandwidth, seed)
    assert check_weak_duality(loss, K, y, lam, rng, trials=3)


@pytest.mark.parametrize("name", SMOOTH)
@pytest.mark.parametrize("lam", [0.01, 1.0])
def test_gap_closes_at_the_optimum_smooth(name, lam):
    loss = default_instance(REG.get("loss", name))
    K, y, _ = problem(loss, 14, 3, 1.5, 7)
    assert check_strong_duality(loss, K, y, lam)


@pytest.mark.parametrize("name", ["hinge", "absolute", "quantile"])
def test_gap_closes_at_the_optimum_nonsmooth(name):
    """Box-constrained dual maximised by L-BFGS-B; the primal at f = Kα* matches it."""
    loss = default_instance(REG.get("loss", name))
    K, y, _ = problem(loss, 10, 2, 1.0, 3)
    assert check_strong_duality(loss, K, y, 0.2)


def test_krr_closed_form_has_zero_gap_and_beats_perturbations():
    """KRR: α* = (K + nλI)⁻¹ y; gap ≈ 0, and any other α has a positive gap."""
    loss = REG.get("loss", "square")()
    rng = np.random.default_rng(0)
    n, lam = 25, 0.05
    K, y, _ = problem(loss, n, 3, 1.0, 1)
    alpha = np.linalg.solve(K + n * lam * np.eye(n), y)
    f = K @ alpha
    assert abs(objectives.gap(loss, y, alpha, f, lam, alpha @ f)) < 1e-10
    for _ in range(5):
        a = alpha + 0.01 * rng.standard_normal(n)
        assert objectives.gap(loss, y, a, K @ a, lam, a @ K @ a) > 1e-8


@pytest.mark.parametrize("name", CONJ)
def test_dual_is_jokers_objective_rescaled(name):
    """kopt's D(α) = −λ · [½αᵀKα + (1/λ_J) Σ ℓ*(−λ_J α_i)] with λ_J = joker_lambda(λ, n) (Zhang & Lai 2025, eq. 4)."""
    loss = default_instance(REG.get("loss", name))
    n, lam = 12, 0.03
    K, y, rng = problem(loss, n, 2, 1.0, 5)
    lam_j = joker_lambda(lam, n)
    alpha = -sample_duals(loss, y, rng) / lam_j
    q = float(np.sum(alpha * (K @ alpha)))
    joker = 0.5 * q + np.sum(loss.conj(-lam_j * alpha, y)) / lam_j
    assert np.isclose(objectives.dual(loss, y, alpha, lam, q), -lam * joker, rtol=1e-12, atol=1e-12)
    assert np.isclose(kopt_lambda(lam_j, n), lam)


def test_infeasible_alpha_has_minus_infinite_dual():
    loss = REG.get("loss", "hinge")()
    K, y, _ = problem(loss, 6, 2, 1.0, 2)
    alpha = -y * 0.5  # −λnα y > 0: outside −1 ≤ vy ≤ 0
    assert objectives.dual(loss, y, alpha, 0.1, float(alpha @ K @ alpha)) == -np.inf


def test_weak_duality_check_catches_a_wrong_conjugate():
    """A conjugate that is too small by a constant (here log 2, as if bEnt lost its shift) breaks P ≥ D."""
    base = REG.get("loss", "logistic")
    low = type("LowLogistic", (base,), {"conj": lambda self, v, y: base.conj(self, v, y) - np.log(2.0)})()
    K, y, rng = problem(low, 12, 2, 1.0, 0)
    with pytest.raises(AssertionError, match="weak duality fails"):
        check_weak_duality(low, K, y, 1.0, rng)
    check_weak_duality(base(), K, y, 1.0, rng)
