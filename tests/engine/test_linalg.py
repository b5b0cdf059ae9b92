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
    """n = 16,512 (cal_housing's training split): blocked path, must not crash (DESIGN.md)."""
    n = 16512
    X = np.random.default_rng(0).standard_normal((n, 64))
    A = X @ X.T / 64
    A[np.diag_indices(n)] += 1.0
    rows = [0, 4095, 4096, 9000, n - 1]
    expected = A[rows][:, rows].copy()
    L = cholesky(A, overwrite=True)
    np.testing.assert_allclose(L[rows] @ L[rows].T, expected, rtol=1e-8, atol=1e-8)
