"""ADSG building blocks: blocks, designs, smoothness constants, parameters, and Shen et al. (2017) Prop. 1.

Prop. 1: ADSG II (the O(Ω + nnz) form) produces exactly ADSG I's iterates.
Both epoch kernels are fed the same draws and compared on small random
problems over every loss/regularizer/setting combination the solver accepts.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from kopt.contract.registry import registry
from kopt_plugins.adsg import design as dz
from kopt_plugins.adsg import epochs as ep
from kopt_plugins.adsg import schedule as sc

LOSSES = {"square": {}, "logistic": {}, "squared_hinge": {}, "huber": {}}
PENALTIES = {"l2": {"lambda": 0.05}, "l1": {"lambda": 0.01}, "elastic_net": {"lambda": 0.05, "l1_ratio": 0.5}}


def _component(kind, name, params):
    reg = registry()
    if name not in reg.names(kind):
        pytest.skip(f"{kind} {name!r} is not registered")
    return reg.get(kind, name)(**params)


def _labels(loss, rng, n):
    y = rng.standard_normal(n)
    return np.where(y > 0, 1.0, -1.0) if loss.target == "binary" else y


# -- blocks, rows, smoothness ------------------------------------------------------------------------

@settings(max_examples=40)
@given(st.integers(1, 300), st.data())
def test_block_edges_partition_into_nonempty_near_equal_blocks(dim, data):
    B = data.draw(st.integers(1, dim))
    e = dz.block_edges(dim, B)
    sizes = np.diff(e)
    assert e[0] == 0 and e[-1] == dim and len(sizes) == B
    assert sizes.min() >= 1 and sizes.max() - sizes.min() <= 1


def test_block_edges_refuse_more_blocks_than_coordinates():
    with pytest.raises(ValueError, match="blocks"):
        dz.block_edges(5, 6)


@settings(max_examples=25)
@given(st.integers(1, 40), st.integers(1, 30), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_sparse_rows_match_dense_algebra(n, dim, b, seed):
    rng = np.random.default_rng(seed)
    A = sp.random(n, dim, density=0.3, random_state=seed, format="csr")
    Ad = A.toarray()
    D = dz.SparseDesign(A, min(dim, 3))
    I = rng.integers(0, n, size=b)  # with repeats
    R = D.rows(I)
    v, c = rng.standard_normal(dim), rng.standard_normal(b)
    np.testing.assert_allclose(R.dot(v), Ad[I] @ v, atol=1e-12)
    np.testing.assert_allclose(R.tdot(c, dim), Ad[I].T @ c, atol=1e-12)
    for lo, hi in zip(D.edges[:-1], D.edges[1:]):
        np.testing.assert_allclose(R.block_tdot(c, lo, hi), Ad[I][:, lo:hi].T @ c, atol=1e-12)
    np.testing.assert_allclose(D.row_norms_sq(), (Ad**2).sum(1), atol=1e-12)


@pytest.mark.parametrize("kind", ["sparse", "dense"])
def test_block_smoothness_is_the_largest_block_eigenvalue(kind):
    rng = np.random.default_rng(3)
    A = sp.random(80, 30, density=0.25, random_state=4, format="csr")
    A = A + sp.csr_matrix(np.outer(rng.random(80) < 0.5, np.ones(30)) * 0.1)  # correlated columns
    design = dz.SparseDesign(A, 4) if kind == "sparse" else dz.DenseDesign(A.toarray(), 4)
    LB, per_block = dz.block_smoothness(design, np.random.default_rng(0), iterations=200)
    Ad = A.toarray()
    exact = [np.linalg.eigvalsh(Ad[:, lo:hi].T @ Ad[:, lo:hi] / 80).max() for lo, hi in
             zip(design.edges[:-1], design.edges[1:])]
    np.testing.assert_allclose(per_block, exact, rtol=1e-6)
    assert LB == pytest.approx(max(exact), rel=1e-6)


# -- parameters and the snapshot rule ----------------------------------------------------------------

@settings(max_examples=40)
@given(st.sampled_from(list(sc.SETTINGS)), st.integers(0, 50), st.integers(1, 64),
       st.floats(1e-3, 1e3), st.floats(0, 1e3), st.floats(1e-9, 1.0), st.integers(1, 10**6))
def test_epoch_params_follow_the_theorems(setting, s, B, L, L_B, mu, n):
    p = sc.epoch_params(setting, s, B=B, L=L, L_B=L_B, mu=mu, n=n)
    if setting == "strongly_convex":
        kappa = (L + L_B) / mu
        assert p.alpha2 == pytest.approx(min(1, math.sqrt(n / kappa)) / (2 * B))
        assert p.alpha3 == pytest.approx(1 / (2 * B))
        assert p.theta == pytest.approx(1 + mu / (p.Lbar * B * B * p.alpha2 + (B - 1) * mu)) and p.theta > 1
    elif setting == "general_convex":
        assert (p.alpha2, p.alpha3, p.theta) == (pytest.approx(2 / (s + 4 * B)), pytest.approx(1 / (2 * B)), 1.0)
    else:
        assert (p.alpha2, p.alpha3, p.theta) == (pytest.approx(2 / (s + 4)), 0.5, 1.0)
    assert p.alpha1 == pytest.approx(1 - p.alpha2 - p.alpha3, abs=1e-15) and p.alpha1 >= 0
    assert p.Lbar == pytest.approx(L / (B * p.alpha3) + L_B)
    assert p.eta == pytest.approx(1 / (p.Lbar * p.alpha2 * B))


def test_strongly_convex_setting_needs_positive_mu():
    with pytest.raises(ValueError, match="mu > 0"):
        sc.epoch_params("strongly_convex", 0, B=2, L=1, L_B=1, mu=0.0, n=10)


@pytest.mark.slow
@pytest.mark.parametrize("theta,m", [(1.0, 7), (1.3, 7), (1.0 + 1e-9, 5), (50.0, 4)])
def test_sample_sigma_has_geometric_weights(theta, m):
    rng = np.random.default_rng(0)
    draws = np.array([sc.sample_sigma(rng, theta, m) for _ in range(40000)])
    assert draws.min() >= 1 and draws.max() <= m
    w = theta ** np.arange(m, dtype=float)
    expected = w / w.sum()
    freq = np.bincount(draws, minlength=m + 1)[1:] / draws.size
    tol = 4 * np.sqrt(expected * (1 - expected) / draws.size) + 1e-4
    assert np.all(np.abs(freq - expected) <= tol), (freq, expected)


def test_steps_depend_only_on_seed_epoch_and_chunk():
    make = lambda: list(sc.steps(lambda c: np.random.default_rng([5, c]), 10, 7, 3, 4, chunk=4))  # noqa: E731
    a, b = make(), make()
    assert len(a) == 10 and all(np.array_equal(i, j) and l == k for (i, l), (j, k) in zip(a, b))
    assert all(0 <= l < 4 and i.shape == (3,) and i.max() < 7 for i, l in a)


# -- Shen et al. (2017) Prop. 1: ADSG II's iterates are ADSG I's ---------------------------------------------

def _run_both(design, loss, y, pen, setting, s0, epochs_, B, b, mu, seed, x0, z0):
    rng = np.random.default_rng(seed)
    L = loss.smoothness() * float(design.row_norms_sq().max())
    L_B = loss.smoothness() * dz.block_smoothness(design, rng)[0]
    it1 = it2 = ep.Iterates(x0, z0, x0)
    history = []
    for s in range(s0, s0 + epochs_):
        p = sc.epoch_params(setting, s, B=B, L=L, L_B=L_B, mu=mu, n=design.n)
        m = int(rng.integers(1, 3 * B * design.n // b + 2))
        sigma = sc.sample_sigma(rng, p.theta, m)
        draws = lambda: sc.steps(lambda c: np.random.default_rng([seed, s, c]), m, design.n, b, B)  # noqa: E731
        snap1 = ep.snapshot(design, loss, y, it1.x_tilde)
        snap2 = ep.snapshot(design, loss, y, it2.x_tilde)
        it1 = ep.adsg1_epoch(design, loss, y, pen, it1, snap1, p, draws(), sigma)
        it2 = ep.adsg2_epoch(design, loss, y, pen, it2, snap2, p, draws(), sigma)
        history.append((it1, it2))
    return history


@pytest.mark.slow
@settings(max_examples=40)
@given(st.sampled_from(sorted(LOSSES)), st.sampled_from(sorted(PENALTIES)), st.sampled_from(["sparse", "dense"]),
       st.integers(2, 30), st.integers(1, 25), st.data())
def test_adsg2_iterates_equal_adsg1(loss_name, pen_name, kind, n, dim, data):
    loss = _component("loss", loss_name, LOSSES[loss_name])
    pen = _component("regularizer", pen_name, PENALTIES[pen_name])
    B = data.draw(st.integers(1, min(dim, 6)), label="B")
    b = data.draw(st.integers(1, 4), label="b")
    seed = data.draw(st.integers(0, 2**31 - 1), label="seed")
    mu = pen.strong_convexity()
    setting = data.draw(st.sampled_from(["strongly_convex", "general_convex"] if mu > 0 else ["general_convex"]))
    rng = np.random.default_rng(seed)
    A = sp.random(n, dim, density=0.4, random_state=seed % 2**32, format="csr") * 3.0
    design = dz.SparseDesign(A, B) if kind == "sparse" else dz.DenseDesign(A.toarray(), B)
    y = _labels(loss, rng, n)
    x0, z0 = rng.standard_normal(dim), rng.standard_normal(dim)  # a mid-run state: u ≠ 0 from the start
    for it1, it2 in _run_both(design, loss, y, pen, setting, data.draw(st.integers(0, 5)), 3, B, b, mu, seed, x0, z0):
        for a, c in ((it1.x, it2.x), (it1.z, it2.z), (it1.x_tilde, it2.x_tilde)):
            np.testing.assert_allclose(c, a, rtol=1e-8, atol=1e-9 * (1 + np.abs(a).max()))


def test_adsg2_equals_adsg1_when_beta_vanishes():
    """Thm. 3's first epoch has α₁ = 0 (β₀ = 0) and B = 1 makes β underflow fast: the rescaling path."""
    loss = _component("loss", "square", {})
    pen = _component("regularizer", "l2", {"lambda": 0.0})
    rng = np.random.default_rng(1)
    A = rng.standard_normal((40, 6))
    design = dz.DenseDesign(A, 1)
    y = rng.standard_normal(40)
    x0 = np.zeros(6)
    hist = _run_both(design, loss, y, pen, "unregularized", 0, 4, 1, 1, 0.0, 2, x0, x0)
    assert sc.epoch_params("unregularized", 0, B=1, L=1, L_B=1, mu=0, n=40).alpha1 == 0.0
    for it1, it2 in hist:
        np.testing.assert_allclose(it2.x, it1.x, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(it2.x_tilde, it1.x_tilde, rtol=1e-9, atol=1e-12)


def test_dense_epochs_run_on_every_backend(xp):
    """The dense design and both epoch kernels are namespace-generic (CuPy under @gpu)."""
    loss = _component("loss", "logistic", {})
    pen = _component("regularizer", "elastic_net", {"lambda": 0.05, "l1_ratio": 0.5})
    rng = np.random.default_rng(7)
    A = rng.standard_normal((30, 10))
    y = np.where(rng.standard_normal(30) > 0, 1.0, -1.0)
    results = []
    for mod in (np, xp):
        design = dz.DenseDesign(mod.asarray(A), 3, xp=mod)
        it = ep.Iterates(mod.zeros(10), mod.zeros(10), mod.zeros(10))
        p = sc.epoch_params("strongly_convex", 0, B=3, L=5.0, L_B=1.0, mu=pen.strong_convexity(), n=30)
        draws = list(sc.steps(lambda c: np.random.default_rng([1, c]), 40, 30, 2, 3))
        snap = ep.snapshot(design, loss, mod.asarray(y), it.x_tilde)
        out = ep.adsg2_epoch(design, loss, mod.asarray(y), pen, it, snap, p, iter(draws), 17)
        results.append([np.asarray(v.get() if hasattr(v, "get") else v) for v in (out.x, out.z, out.x_tilde)])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sigma", [0.0, 0.3])
def test_katyusha_epoch_follows_allen_zhu_alg1(sigma):
    """The epoch against a literal transcription of Katyusha's Alg. 1 (Option I, weighted snapshot)."""
    from kopt_plugins.adsg.katyusha import katyusha_params

    rng = np.random.default_rng(7)
    n, dim, b, m = 30, 6, 2, 25
    A = rng.standard_normal((n, dim))
    y = rng.standard_normal(n)
    design = dz.DenseDesign(A, 1)
    loss = _component("loss", "square", {})
    pen = _component("regularizer", "elastic_net", {"lambda": 0.05, "l1_ratio": 0.5})
    p = katyusha_params(1, L=2.0, sigma=sigma, m=m, b=b)
    x0, z0, xt = (rng.standard_normal(dim) for _ in range(3))
    snap = ep.snapshot(design, loss, y, xt)
    draws = [(rng.integers(0, n, size=b), 0) for _ in range(m)]
    out = ep.katyusha_epoch(design, loss, y, pen, ep.Iterates(x0, z0, xt), snap, p, iter(draws))
    yk, z, ys = x0.copy(), z0.copy(), []
    for I, _ in draws:
        x = p.tau1 * z + p.tau2 * xt + (1 - p.tau1 - p.tau2) * yk
        g = A.T @ (A @ xt - y) / n + A[I].T @ (A[I] @ x - A[I] @ xt) / b
        z = pen.prox(z - p.alpha * g, p.alpha)
        yk = pen.prox(x - g * p.eta_y, p.eta_y)
        ys.append(yk)
    w = (1 + p.alpha * sigma) ** np.arange(m)
    np.testing.assert_allclose(out.x, yk, rtol=1e-12)
    np.testing.assert_allclose(out.z, z, rtol=1e-12)
    np.testing.assert_allclose(out.x_tilde, (w[:, None] * np.array(ys)).sum(0) / w.sum(), rtol=1e-10)
    assert p.tau2 == 1 / (2 * b) and (p.tau1 == 2 / 5 if sigma == 0 else p.tau1 == 0.5)
