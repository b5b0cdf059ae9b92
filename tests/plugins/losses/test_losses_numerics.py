"""Float32 behaviour of the logistic conjugate near its box edges (Zhang & Lai 2025, Sec. 3.2) and of the primal tails."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import xlog1py, xlogy

from kopt.contract.registry import registry

LOGISTIC = registry().get("loss", "logistic")()

K = np.arange(1, 60)
# a = −vy: distances 2^-k from both edges, and the tiniest normal float32 values
A32 = np.unique(np.concatenate([2.0 ** -K, 1 - 2.0 ** -K[:24], [1e-30, 1e-38, 0.5]]).astype(np.float32))
A32 = A32[(A32 > 0) & (A32 < 1)]


def reference(a):
    """bEnt(a) and its derivatives in float64 with SciPy's xlogy / xlog1py (a is float32-exact, so 1 − a is exact)."""
    a = a.astype(np.float64)
    return xlogy(a, a) + xlog1py(1 - a, -a), np.log(a) - np.log1p(-a), 1 / (a * (1 - a))


@pytest.mark.parametrize("y", [1.0, -1.0])
def test_conjugate_float32_relative_accuracy_near_edges(y):
    v = (-A32 * np.float32(y)).astype(np.float32)
    ys = np.full_like(v, y)
    c, g, h = LOGISTIC.conj(v, ys), LOGISTIC.conj_grad(v, ys), LOGISTIC.conj_curvature(v, ys)
    assert c.dtype == g.dtype == h.dtype == np.float32
    assert np.all(np.isfinite(c)) and np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    rc, rg, rh = reference(A32)
    # relative error within 8 float32 ulps for the value, 16 for the derivatives (ξ*' = −y·logit(a))
    eps = np.finfo(np.float32).eps
    assert np.max(np.abs(c - rc) / np.abs(rc)) < 8 * eps
    assert np.max(np.abs(g - (-y) * rg) / np.maximum(np.abs(rg), 1)) < 16 * eps  # logit(½) = 0
    assert np.max(np.abs(h - rh) / rh) < 16 * eps


def test_exact_edges_and_outside():
    y = np.array([1.0, 1.0, -1.0, -1.0], dtype=np.float32)
    v = np.array([0.0, -1.0, 0.0, 1.0], dtype=np.float32)  # a = 0, 1, 0, 1; ξ*' = −y logit(a)
    assert np.all(LOGISTIC.conj(v, y) == 0)
    assert np.array_equal(LOGISTIC.conj_grad(v, y), np.array([np.inf, -np.inf, -np.inf, np.inf], dtype=np.float32))
    assert np.all(np.isposinf(LOGISTIC.conj_curvature(v, y)))
    outside = np.array([1e-7, -1.0000001, -1e-7, 1.0000001], dtype=np.float32)
    assert np.all(np.isposinf(LOGISTIC.conj(outside, y)))
    assert np.all(np.isnan(LOGISTIC.conj_grad(outside, y)))


def test_primal_tails_in_float32():
    """log(1 + e^{−yu}) neither overflows nor loses its small tail; gradient and curvature stay in range."""
    u = np.array([-200.0, -30.0, 0.0, 30.0, 200.0], dtype=np.float32)
    y = np.ones_like(u)
    val = LOGISTIC.value(u, y)
    assert val.dtype == np.float32
    assert np.allclose(val[[0, 1]], [200.0, 30.0])
    assert val[3] == pytest.approx(np.exp(-30.0), rel=1e-5)  # the tail is kept, not rounded to 0
    g, h = LOGISTIC.grad(u, y), LOGISTIC.curvature(u, y)
    assert np.all(np.isfinite(g)) and np.all((h >= 0) & (h <= 0.25))
    assert g[0] == -1.0 and h[2] == 0.25


def test_the_fenchel_young_pair_is_tight_in_float32():
    """At v = ℓ'(u) the float32 gap ℓ(u) + ℓ*(v) − uv is at rounding level, even deep in the tails."""
    u = np.linspace(-15, 15, 301).astype(np.float32)
    y = np.where(np.arange(u.size) % 2, 1.0, -1.0).astype(np.float32)
    v = LOGISTIC.grad(u, y)
    gap = LOGISTIC.value(u, y).astype(np.float64) + LOGISTIC.conj(v, y) - u.astype(np.float64) * v
    assert np.max(np.abs(gap)) < 64 * np.finfo(np.float32).eps * (1 + np.max(np.abs(u)))
