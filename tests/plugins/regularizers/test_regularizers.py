"""Regularizers: prox = argmin (scalar minimisation), Moreau identities, strong convexity."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kopt.contract.registry import registry
from kopt.testing import (
    check_moreau_decomposition,
    check_moreau_envelope,
    check_prox_argmin,
    check_regularizer,
    check_strong_convexity,
)

REG = registry()
NAMES = REG.names("regularizer")
FAST = settings(derandomize=True, deadline=None, max_examples=10)
blocks = hnp.arrays(np.float64, st.integers(1, 12), elements=st.floats(-5, 5, width=32))
lams = st.floats(0.0, 3.0)
steps = st.sampled_from([1e-3, 0.1, 1.0, 5.0])


def make(name, lam, l1_ratio=0.5):
    params = {"lambda": lam}
    if name == "elastic_net":
        params["l1_ratio"] = l1_ratio
    return REG.get("regularizer", name)(**params)


def conj_prox(name, lam, r=0.5):
    """prox_{tP*} from the closed-form conjugates (l2: ‖z‖²/2λ; l1: box ‖z‖∞ ≤ λ; elastic net: Huber-like)."""
    a, b = {"l2": (0.0, lam), "l1": (lam, 0.0), "elastic_net": (lam * r, lam * (1 - r))}[name]

    def prox(x, t):
        # P* per coordinate: 0 on |z| ≤ a, then (|z| − a)²/(2b) (b = 0: +inf)
        mag = np.abs(x)
        out = a + (mag - a) / (1 + t / b) if b > 0 else np.full_like(x, a)
        return np.sign(x) * np.where(mag <= a, mag, out)

    return prox


def test_builtins_registered():
    assert {"l1", "l2", "elastic_net"} <= set(NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("lam", [0.0, 0.7])
def test_public_suite(name, lam):
    assert "moreau_envelope" in check_regularizer(make(name, lam))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@FAST
@given(w=blocks, lam=lams, step=steps, r=st.floats(0.0, 1.0))
def test_prox_is_the_argmin(name, w, lam, step, r):
    check_prox_argmin(make(name, lam, r), w, step)


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(w=blocks, lam=st.floats(0.01, 3.0), step=steps, r=st.floats(0.0, 0.99))
def test_moreau_decomposition(name, w, lam, step, r):
    """w = prox_{sP}(w) + s prox_{P*/s}(w/s) with the analytic conjugates."""
    check_moreau_decomposition(make(name, lam, r), w, step, conj_prox(name, lam, r))


@pytest.mark.parametrize("name", NAMES)
@FAST
@given(w=hnp.arrays(np.float64, st.integers(1, 5), elements=st.floats(-5, 5, width=32)), lam=lams, step=steps)
def test_moreau_envelope_gradient(name, w, lam, step):
    check_moreau_envelope(make(name, lam), w, step)


def test_closed_forms():
    w = np.array([3.0, -0.5, 0.2, -2.0])
    assert np.allclose(make("l1", 1.0).prox(w, 0.5), [2.5, 0.0, 0.0, -1.5])
    assert np.allclose(make("l2", 1.0).prox(w, 1.0), w / 2)
    en = make("elastic_net", 2.0, 0.25)  # λr = 0.5, λ(1 − r) = 1.5
    assert np.allclose(en.prox(w, 1.0), np.array([2.5, 0.0, 0.0, -1.5]) / 2.5)
    assert np.isclose(en.value(w), 2.0 * (0.25 * 5.7 + 0.375 * (9 + 0.25 + 0.04 + 4)))
    assert en.strong_convexity() == pytest.approx(1.5)
    assert make("l1", 1.0).strong_convexity() == 0.0


def test_elastic_net_matches_sklearn_coordinate_update():
    """One-feature ElasticNet with an orthonormal design: sklearn's solution is our prox."""
    from sklearn.linear_model import ElasticNet as SkEN

    rng = np.random.default_rng(0)
    n = 50
    x = rng.standard_normal(n)
    x *= np.sqrt(n) / np.linalg.norm(x)  # (1/n) xᵀx = 1
    for beta, alpha, r in [(1.3, 0.4, 0.3), (-0.2, 0.5, 0.8), (2.0, 0.1, 0.0)]:
        y = beta * x + 0.1 * rng.standard_normal(n)
        sk = SkEN(alpha=alpha, l1_ratio=r, fit_intercept=False, tol=1e-12, max_iter=10000).fit(x[:, None], y)
        # (1/2n)‖y − xw‖² + P(w) has minimiser prox_P(xᵀy / n) when (1/n)xᵀx = 1
        ours = make("elastic_net", alpha, r).prox(np.array([x @ y / n]), 1.0)
        assert np.allclose(ours, sk.coef_, atol=1e-8)


def test_strong_convexity_constants_are_tight():
    """P − μ'/2‖w‖² stops being convex for μ' slightly above the declared μ."""
    rng = np.random.default_rng(1)
    for name in NAMES:
        reg = make(name, 0.8)
        mu = reg.strong_convexity()
        cheat = type("Cheat", (type(reg),), {"strong_convexity": lambda self, mu=mu: mu + 0.05})(**reg.options.as_dict())
        # same orthant: the ℓ1 part is linear between a and b, so only the quadratic part is tested
        a, b = np.abs(rng.standard_normal(20)), np.abs(rng.standard_normal(20))
        check_strong_convexity(reg, a, b)
        with pytest.raises(AssertionError, match="not convex"):
            check_strong_convexity(cheat, a, b)


def test_checks_catch_a_wrong_prox():
    wrong = type("WrongL1", (REG.get("regularizer", "l1"),), {"prox": lambda self, w, s: w - s * self.lam * np.sign(w)})
    with pytest.raises(AssertionError, match="argmin"):
        check_prox_argmin(wrong(**{"lambda": 1.0}), np.array([0.3, -2.0]), 1.0)


def test_spec_validates_l1_ratio():
    from kopt.errors import SpecError
    from kopt.spec import load_spec

    spec = {"name": "t", "data": {"source": "dai_synthetic"},
            "model": {"loss": {"name": "square"}, "kernel": {"name": "gaussian", "bandwidth": "median"},
                      "regularizer": {"name": "elastic_net", "lambda": 0.1, "l1_ratio": 1.5}},
            "solver": {"name": "krr_exact"}}
    with pytest.raises(SpecError, match="l1_ratio"):
        load_spec(spec)


@pytest.mark.parametrize("name", NAMES)
def test_backend_generic(name, xp):
    """prox and value on the backend match NumPy (the cupy case needs a GPU)."""
    from kopt.numerics.backend import to_numpy

    reg = make(name, 0.6, 0.3)
    w = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    z = reg.prox(xp.asarray(w), 0.8)
    assert isinstance(z, xp.ndarray) and z.dtype == np.float32
    assert np.allclose(to_numpy(z), reg.prox(w, 0.8), rtol=1e-6)
    assert reg.value(xp.asarray(w)) == pytest.approx(reg.value(w), rel=1e-6)
