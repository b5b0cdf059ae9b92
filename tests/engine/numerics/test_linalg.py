"""Dense linear algebra: the blocked Cholesky, including the size that crashed OpenBLAS here."""
from __future__ import annotations

import numpy as np
import pytest

from kopt.numerics.linalg import cho_solve, cholesky, solve_triangular


def _spd(n, seed=0, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    sq = (X * X).sum(1)
    K = np.exp(-0.5 * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0) / d)
    K[np.diag_indices(n)] += 1e-2
    return K


@pytest.mark.parametrize("n,block,direct_max", [(300, 64, 0), (300, 64, 10**6), (1000, 256, 0)])
def test_cholesky_direct_and_blocked(n, block, direct_max):
    A = _spd(n)
    L = cholesky(A, block=block, direct_max=direct_max)
    assert np.all(np.triu(L, 1) == 0)
    np.testing.assert_allclose(L @ L.T, A, atol=1e-10)
    b = np.arange(n, dtype=float)
    np.testing.assert_allclose(A @ cho_solve(L, b), b, rtol=1e-8, atol=1e-8)


def test_solve_triangular_both_ways():
    A = _spd(40, seed=1)
    L = cholesky(A)
    B = np.random.default_rng(2).standard_normal((40, 3))
    np.testing.assert_allclose(L @ solve_triangular(L, B), B, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(L.T @ solve_triangular(L, B, trans="T"), B, rtol=1e-10, atol=1e-10)


def test_not_positive_definite():
    A = -np.eye(50)
    with pytest.raises(np.linalg.LinAlgError):
        cholesky(A, direct_max=0, block=16)
    with pytest.raises(np.linalg.LinAlgError):
        cholesky(A)


@pytest.mark.slow
def test_the_size_that_crashed_openblas():
    """n = 16,512 (cal_housing's training split): blocked path, must not crash."""
    n = 16512
    X = np.random.default_rng(0).standard_normal((n, 64))
    A = X @ X.T / 64
    A[np.diag_indices(n)] += 1.0
    rows = [0, 4095, 4096, 9000, n - 1]
    expected = A[rows][:, rows].copy()
    L = cholesky(A, overwrite=True)
    np.testing.assert_allclose(L[rows] @ L[rows].T, expected, rtol=1e-8, atol=1e-8)


# -- the factor and the triangular solves with the GIL released (NumPy's LAPACKE / CBLAS through ctypes) -----------
def _needs_released():
    from kopt.numerics.linalg import _numpy_blas_entry

    if _numpy_blas_entry("potrf", np.float64) is None or _numpy_blas_entry("trsm", np.float64) is None:
        pytest.skip("NumPy's BLAS has no LAPACKE ?potrf / CBLAS ?trsm entry here (the SciPy route is used)")


@pytest.mark.parametrize("zero_upper", [True, False])
def test_the_released_factor_and_solves_are_the_scipy_ones(zero_upper):
    _needs_released()
    A = _spd(300, seed=3)
    L = cholesky(A, zero_upper=zero_upper, released=True)
    reference = cholesky(A)
    np.testing.assert_allclose(np.tril(L), reference, rtol=1e-12, atol=1e-12)
    if not zero_upper:  # the strict upper triangle is left as A's
        np.testing.assert_array_equal(np.triu(L, 1), np.triu(A, 1))
    b = np.random.default_rng(4).standard_normal(300)
    B = np.random.default_rng(5).standard_normal((300, 3))
    x = cho_solve(L, b, released=True)
    assert x.shape == (300,)
    np.testing.assert_allclose(A @ x, b, rtol=1e-9, atol=1e-9)
    X = cho_solve(L, B, released=True)
    assert X.shape == (300, 3)
    np.testing.assert_allclose(A @ X, B, rtol=1e-9, atol=1e-9)
    with pytest.raises(np.linalg.LinAlgError):
        cholesky(-np.eye(20), released=True)


def test_the_released_route_falls_back_to_scipy_without_the_entries(monkeypatch):
    from kopt.numerics import linalg

    monkeypatch.setattr(linalg, "_numpy_blas_entry", lambda kind, dtype: None)
    A = _spd(120, seed=6)
    L = linalg.cholesky(A, released=True)
    np.testing.assert_allclose(L @ L.T, A, atol=1e-10)
    b = np.arange(120.0)
    np.testing.assert_allclose(A @ linalg.cho_solve(L, b, released=True), b, rtol=1e-8, atol=1e-8)
    assert linalg.released_trsm(L, np.asfortranarray(np.ones((120, 2)))) is False


@pytest.mark.parametrize("order", ["F", "C"])
def test_released_trsm_solves_either_side_for_either_order_of_u(order):
    _needs_released()
    from kopt.numerics.linalg import released_trsm

    rng = np.random.default_rng(7)
    U = np.triu(rng.random((80, 80))) + 80 * np.eye(80)
    U = np.asfortranarray(U) if order == "F" else np.ascontiguousarray(U)
    K = rng.standard_normal((30, 80))
    Z = K.copy()  # left: Zᵀ = U⁻ᵀ Kᵀ, Kᵀ of the C-order K in Fortran order
    assert released_trsm(U, Z.T, side="left", trans=True)
    np.testing.assert_allclose(U.T @ Z.T, K.T, rtol=1e-12, atol=1e-12)
    W = np.asfortranarray(K)  # right: W U⁻¹
    assert released_trsm(U, W, side="right", trans=False)
    np.testing.assert_allclose(W @ U, K, rtol=1e-12, atol=1e-12)
    # a C-order B is refused (untouched): the solves work on Fortran-order blocks only
    C = np.ascontiguousarray(rng.standard_normal((80, 5)))
    before = C.copy()
    assert released_trsm(U, C) is False and np.array_equal(C, before)


def test_the_systems_triangular_solves_are_the_same_bits_on_one_or_two_threads(monkeypatch):
    """solve_upper_transposed cuts the rows (columns) into fixed parts whatever the thread count."""
    from kopt.numerics import threads
    from kopt.nystrom import system as system_mod

    rng = np.random.default_rng(8)
    M = 300
    U = np.asfortranarray(np.triu(rng.random((M, M))) + M * np.eye(M))
    K = rng.standard_normal((700, M))
    out = {}
    for count in (1, 2):
        monkeypatch.setattr(threads, "resolve_threads", lambda requested=None, c=count: c)
        left = system_mod.solve_upper_transposed(U, K.copy().T).T
        right = system_mod.solve_upper_transposed(U, np.asfortranarray(K), side="right")
        out[count] = (left, right)
    np.testing.assert_array_equal(out[1][0], out[2][0])
    np.testing.assert_array_equal(out[1][1], out[2][1])
    np.testing.assert_allclose(out[1][0] @ U, K, rtol=1e-11, atol=1e-11)  # Z = K U⁻¹
    np.testing.assert_allclose(out[1][1] @ U, K, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n, block", [(700, 256), (513, 128), (64, 256)])
def test_the_parted_factor_is_the_same_bits_on_one_or_two_threads(n, block, order):
    """parted_cholesky cuts the work by tiles of the matrix, not by threads: 1 and 2 worker threads (and BLAS held to
    one thread or not) give the same bits, in C order or in Fortran order (the Nystrom preconditioner's buffer); the
    factor is L with A = LLᵀ, and the strict upper triangle is kept."""
    _needs_released()
    from threadpoolctl import threadpool_limits

    from kopt.numerics.linalg import parted_cholesky

    A = _spd(n, seed=9)
    A[np.triu_indices(n, 1)] = -3.0  # not read, and left as it was
    A = np.asarray(A, order=order)
    out = {}
    for count in (1, 2):
        with threadpool_limits(count):
            out[count] = parted_cholesky(A.copy(order=order), threads=count, block=block)
            assert out[count].flags[f"{order}_CONTIGUOUS"]
    np.testing.assert_array_equal(out[1], out[2])
    L = np.tril(out[1])
    full = np.tril(A) + np.tril(A, -1).T
    np.testing.assert_allclose(L @ L.T, full, rtol=1e-12, atol=1e-10)
    assert np.all(out[1][np.triu_indices(n, 1)] == -3.0)
    B = full.copy()
    B[n // 2, n // 2] = -1.0  # not positive definite: said, as cholesky says it
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        parted_cholesky(B, threads=2, block=block)
    assert parted_cholesky(full[::2, ::2], threads=2) is None  # neither order: the caller factors another way


def test_the_systems_few_column_products_are_the_same_bits_on_one_or_two_blas_threads():
    """kopt.nystrom.system.product holds BLAS to one thread: OpenBLAS's threaded float64 GEMM of two or more columns
    gave other bits on 1 and 2 threads (1,024 x 1,500 by 1,500 x 2), and these products are the search's validation
    scores and the systems' right-hand sides."""
    from threadpoolctl import threadpool_limits

    from kopt.nystrom.system import product

    rng = np.random.default_rng(10)
    K, W = rng.standard_normal((1024, 1500)), rng.standard_normal((1500, 6))
    out = {}
    for count in (1, 2):
        with threadpool_limits(count):
            out[count] = (product(K, W), product(K.T, W[:1024]))
    np.testing.assert_array_equal(out[1][0], out[2][0])
    np.testing.assert_array_equal(out[1][1], out[2][1])
    np.testing.assert_allclose(out[1][0], K @ W, rtol=1e-12, atol=1e-10)
