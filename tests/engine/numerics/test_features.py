"""The feature engine: seeded blocks, fused blocked products on threads, sparse rows, the bench command."""
from __future__ import annotations

import argparse
import contextlib
import json

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import kopt.numerics.features as features
from kopt.contract.components import Kernel
from kopt.contract.registry import registry
from kopt.numerics.features import FeatureMap, block_rng
from kopt.testing.kernels import check_engine, check_regeneration, kernel_instance, sample_inputs

REG = registry()
PROPS = settings(derandomize=True, deadline=None, max_examples=15)


def gauss(bw=1.5):
    return REG.get("kernel", "gaussian")(bandwidth=bw)


@contextlib.contextmanager
def tiny_chunks(chunk_bytes=256, fused_bytes=2048):
    """Force many row chunks and the threaded path on small data."""
    names = ("CHUNK_BYTES", "FUSED_BYTES", "FUSED_MIN_ROWS", "MIN_PARALLEL")
    saved = [getattr(features, k) for k in names]
    for k, v in zip(names, (chunk_bytes, fused_bytes, 4, 0)):
        setattr(features, k, v)
    try:
        yield
    finally:
        for k, v in zip(names, saved):
            setattr(features, k, v)


# -- seeded blocks --------------------------------------------------------------
@PROPS
@given(st.integers(0, 2**63 - 1), st.permutations(list(range(6))), st.sampled_from(["gaussian", "chi2", "polynomial"]))
def test_blocks_regenerate_bit_identically_in_any_order(seed, order, name):
    kernel = kernel_instance(REG.get("kernel", name))
    a = FeatureMap(kernel, 3, seed=seed, block_size=16)
    b = FeatureMap(kernel, 3, seed=seed, block_size=16)
    ref = {j: a.host_params(j) for j in range(6)}
    for j in order:
        got = b.block_params(j)
        for k, v in ref[j].items():
            assert np.array_equal(np.asarray(got[k]), np.asarray(v, dtype=np.float32) if v.dtype.kind == "f" else v)
    other = FeatureMap(kernel, 3, seed=seed ^ 1, block_size=16).host_params(0)
    assert any(not np.array_equal(other[k], ref[0][k]) for k in other)


def test_block_rng_is_keyed_by_seed_and_block_only():
    x = block_rng(11, 4).standard_normal(5)
    block_rng(11, 3).standard_normal(100)  # other draws in between change nothing
    assert np.array_equal(block_rng(11, 4).standard_normal(5), x)
    assert not np.array_equal(block_rng(11, 5).standard_normal(5), x)
    assert not np.array_equal(block_rng(12, 4).standard_normal(5), x)


@pytest.mark.parametrize("name", ["gaussian", "laplacian", "chi2", "polynomial", "arccos", "exponential_semigroup"])
def test_regeneration_suite(name):
    check_regeneration(kernel_instance(REG.get("kernel", name)), 4)


# -- fused products equal the dense transform -----------------------------------
@PROPS
@given(n=st.integers(1, 90), d=st.integers(1, 5), F=st.integers(1, 33), nb=st.integers(1, 4),
       C=st.sampled_from([None, 1, 3]), threads=st.integers(1, 3), dtype=st.sampled_from(["float64", "float32"]),
       blocks_from=st.integers(0, 5))
def test_products_match_dense_on_threads(n, d, F, nb, C, threads, dtype, blocks_from):
    rng = np.random.default_rng(n * 131 + d)
    X = rng.standard_normal((n, d))
    fm = FeatureMap(gauss(), d, seed=5, block_size=F, dtype=dtype, threads=threads)
    blocks = list(range(blocks_from, blocks_from + nb))
    tail = () if C is None else (C,)
    coef = rng.standard_normal((nb, F) + tail)
    v = rng.standard_normal((n,) + tail)
    with tiny_chunks():
        Z = fm.transform(X, blocks).astype(np.float64)
        p = fm.predict(X, coef, blocks)
        a = fm.adjoint(X, v, blocks)
        pp, g = fm.predict_adjoint(X, coef, lambda f, lo, hi: v[lo:hi], blocks)
    tol = 1e-11 if dtype == "float64" else 2e-5
    sp_, sa = np.abs(coef).sum() * 1.5 + 1, np.abs(v).sum() * 1.5 + 1
    assert p.dtype == np.float64 and a.dtype == np.float64
    np.testing.assert_allclose(p, Z @ coef.reshape((nb * F,) + tail), atol=tol * sp_)
    np.testing.assert_allclose(a, (Z.T @ v).reshape(coef.shape), atol=tol * sa)
    np.testing.assert_allclose(pp, p, atol=tol * sp_)
    np.testing.assert_allclose(g, a, atol=tol * sa)


def test_results_do_not_depend_on_timing_or_thread_count():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((700, 6)).astype(np.float32)
    coef, v = rng.standard_normal((3, 64)), rng.standard_normal(700)
    with tiny_chunks(chunk_bytes=4096):
        two = FeatureMap(gauss(), 6, seed=1, block_size=64, count=192, threads=2)
        one = FeatureMap(gauss(), 6, seed=1, block_size=64, count=192, threads=1)
        a1, a2 = two.adjoint(X, v), two.adjoint(X, v)
        p1, p2 = two.predict(X, coef), two.predict(X, coef)
        assert np.array_equal(a1, a2) and np.array_equal(p1, p2)  # static chunk ownership: bitwise
        np.testing.assert_allclose(one.adjoint(X, v), a1, rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(one.predict(X, coef), p1)  # rows never cross threads


def test_minibatch_against_many_blocks_splits_blocks_over_threads():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((12, 5))
    coef, v = rng.standard_normal((7, 32, 2)), rng.standard_normal((12, 2))
    fm = FeatureMap(gauss(), 5, seed=2, block_size=32, count=7 * 32, dtype="float64", threads=2)
    with tiny_chunks(chunk_bytes=1 << 20):  # one row chunk, seven blocks: split by blocks
        Z = fm.transform(X)
        p, a = fm.predict(X, coef), fm.adjoint(X, v)
        pp, g = fm.predict_adjoint(X, coef, lambda f, lo, hi: v[lo:hi])
        assert np.array_equal(fm.predict(X, coef), p) and np.array_equal(fm.adjoint(X, v), a)
    np.testing.assert_allclose(p, Z @ coef.reshape(-1, 2), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a, (Z.T @ v).reshape(coef.shape), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(pp, p, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["laplacian", "matern", "jensen_shannon", "skewed_chi2", "hellinger",
                                  "reciprocal_semigroup", "polynomial", "arccos"])
def test_engine_suite_per_kernel(name):
    kernel = kernel_instance(REG.get("kernel", name))
    with tiny_chunks(chunk_bytes=2048, fused_bytes=4096):
        check_engine(kernel, sample_inputs(kernel, 37, 3, np.random.default_rng(1)))


def test_sparse_rows_equal_dense_rows():
    rng = np.random.default_rng(2)
    D = rng.exponential(size=(50, 7)) * (rng.uniform(size=(50, 7)) < 0.4)
    S = sp.csr_matrix(D)
    for name in ("gaussian", "chi2"):
        fm = FeatureMap(kernel_instance(REG.get("kernel", name)), 7, seed=3, block_size=16, count=48,
                        dtype="float64")
        coef, v = rng.standard_normal((3, 16)), rng.standard_normal(50)
        with tiny_chunks():
            np.testing.assert_allclose(fm.predict(S, coef), fm.predict(D, coef), rtol=1e-12)
            np.testing.assert_allclose(fm.adjoint(S, v), fm.adjoint(D, v), rtol=1e-12)
        np.testing.assert_allclose(fm.transform(S), fm.transform(D), rtol=1e-12)
        np.testing.assert_allclose(fm.block(S, 1), fm.block(D, 1), rtol=1e-12)


def test_defaults_dtypes_and_cache():
    X = np.random.default_rng(0).standard_normal((10, 3))
    fm = FeatureMap(gauss(), 3, seed=0, block_size=8, count=20, cache_blocks=2)
    assert fm.count == 24 and fm.n_blocks == 3 and fm.dtype == np.float32
    assert fm.transform(X).dtype == np.float32 and fm.transform(X).shape == (10, 24)
    assert fm.predict(X, np.ones((3, 8))).dtype == np.float64
    p0 = fm.block_params(0)
    fm.block_params(1)
    assert fm.block_params(0) is p0  # cached
    p2 = fm.block_params(2)  # the cache is full: the first two blocks met stay (cyclic sweeps hit them)
    assert set(fm._cache) == {0, 1} and fm.block_params(2) is not p2
    assert np.array_equal(fm.block_params(1)["Wb"], fm.host_params(1)["Wb"].astype(np.float32))
    assert np.array_equal(p2["Wb"], fm.host_params(2)["Wb"].astype(np.float32))


def test_empty_inputs():
    fm = FeatureMap(gauss(), 3, seed=0, block_size=8, count=16)
    X = np.zeros((0, 3))
    assert fm.predict(X, np.ones((2, 8))).shape == (0,)
    assert np.array_equal(fm.adjoint(X, np.zeros(0)), np.zeros((2, 8)))
    p, g = fm.predict_adjoint(X, np.ones((2, 8, 3)), lambda f, lo, hi: np.zeros((hi - lo, 3)))
    assert p.shape == (0, 3) and g.shape == (2, 8, 3) and not g.any()


def test_errors():
    X = np.zeros((4, 3))
    fm = FeatureMap(gauss(), 3, seed=0, block_size=8)
    with pytest.raises(ValueError, match="no fixed count"):
        fm.predict(X, np.ones((1, 8)))
    with pytest.raises(ValueError, match="coef must be"):
        fm.predict(X, np.ones((2, 8)), blocks=[0])
    with pytest.raises(ValueError, match="rows"):
        fm.adjoint(X, np.ones(5), blocks=[0])
    from kopt.errors import DataError

    chi2 = FeatureMap(REG.get("kernel", "chi2")(), 3, seed=0, block_size=8, count=8)
    with pytest.raises(DataError):
        chi2.adjoint(-np.ones((4, 3)), np.ones(4))


class PlainCosKernel(Kernel):
    """A third-party style kernel: only ``features`` (no fast path), Gaussian of bandwidth 1."""

    name = "test_plain_cos"

    def exact(self, X, Y):
        d2 = ((X[:, None, :] - Y[None]) ** 2).sum(-1)
        return np.exp(-0.5 * d2)

    def diag(self, X):
        return np.ones(X.shape[0])

    def sample(self, rng, n_in, count):
        return {"W": rng.standard_normal((n_in, count)), "b": rng.uniform(0, 2 * np.pi, count)}

    def features(self, X, params, out=None):
        return np.sqrt(2.0) * np.cos(X @ params["W"] + params["b"])  # ignores out on purpose


def test_kernel_without_fast_path():
    from kopt.testing.kernels import check_kernel

    with tiny_chunks(chunk_bytes=1024, fused_bytes=4096):
        assert "engine" in check_kernel(PlainCosKernel(), d=2, n=5)


# -- GPU: the same checks on CuPy (skipped without a device) --------------------
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["gaussian", "chi2", "polynomial", "arccos", "exponential_semigroup"])
def test_gpu_regeneration_and_engine(xp, name):
    kernel = kernel_instance(REG.get("kernel", name))
    check_regeneration(kernel, 4, xp=xp)
    check_engine(kernel, sample_inputs(kernel, 300, 4, np.random.default_rng(0)), xp=xp)


# -- kopt bench features (figures only; timings are never asserted) --------------
def test_bench_features_writes_json(tmp_path, capsys):
    from kopt.cli.bench.features import features as bench_features

    out = tmp_path / "bench.json"
    args = argparse.Namespace(rows=600, dim=5, features=[64, 128], repeat=1, json=str(out))
    assert bench_features(args) == 0
    res = json.loads(out.read_text())
    assert [r["M"] for r in res["runs"]] == [512, 512]  # whole blocks of 512
    for key in ("predict", "theta_update", "fused_predict_adjoint"):
        assert all(r[key] > 0 for r in res["runs"])
    assert res["roofline"]["cos_1_thread"] > 0 and res["threads"] >= 1
    text = capsys.readouterr().out
    assert "roofline" in text and "predict" in text


def test_bench_cli_is_wired():
    from kopt.cli import build_parser

    args = build_parser().parse_args(["bench", "features", "--rows", "10", "--features", "4096", "32768"])
    assert args.features == [4096, 32768] and args.rows == 10 and callable(args.func)
