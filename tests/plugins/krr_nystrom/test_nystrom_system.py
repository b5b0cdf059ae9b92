"""The square loss's Nyström system (kopt/nystrom/system.py) and the centers' basis (kopt.nystrom)."""
from __future__ import annotations

import numpy as np
import pytest

from kopt.nystrom.centers import center_basis
from kopt.nystrom.system import NystromSystem
from kopt_plugins.kernels.shift_invariant import GaussianKernel


def _rows(n=900, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    return X, rng.standard_normal((n, 2)), rng.random(n) + 0.5


def test_center_basis_drops_repeated_and_nearly_repeated_centers():
    rng = np.random.default_rng(1)
    C = rng.standard_normal((60, 3))
    C = np.vstack([C, C[:10], C[10:20] + 1e-6])  # 10 exact repeats, 10 within 1e-6
    kernel = GaussianKernel(bandwidth=0.7)
    kept, U = center_basis(kernel, C)
    assert len(kept) == 60 and len(set(kept.tolist())) == 60
    assert np.array_equal(np.tril(U, -1), np.zeros_like(U))  # upper triangular, LAPACK's workspace zeroed
    R = kernel.exact(C[kept], C[kept])
    np.testing.assert_allclose(U.T @ U, R, atol=1e-12)
    assert np.linalg.cond(R) < 1e8


def test_whitened_system_equals_the_normal_equations_and_resolves_small_lambda():
    """(T + λI) v = b with w = U⁻¹v solves (A/n + λR) w = B/n; at a long bandwidth, where A/n + λR is conditioned
    beyond float64 at λ = 1e-9, the whitened path still scores every λ."""
    X, Y, _ = _rows()
    kernel = GaussianKernel(bandwidth=1.0)
    s = NystromSystem(kernel, X, Y, X[:150])
    K = kernel.exact(X.astype(np.float64), s.C.astype(np.float64))
    R = kernel.exact(s.C.astype(np.float64), s.C.astype(np.float64))
    for lam in (1e-2, 1e-4):
        w = s.coef(s.solve(lam))
        ref = np.linalg.solve(K.T @ K / len(X) + lam * R, K.T @ Y / len(X))
        np.testing.assert_allclose(K @ w, K @ ref, rtol=1e-4, atol=1e-4)
    wide = NystromSystem(GaussianKernel(bandwidth=6.0), X, Y, X[:300])
    assert wide.M < 300  # the long bandwidth leaves centers the kernel cannot tell apart
    scores = wide.path([1e-3, 1e-6, 1e-9], X[:100])
    assert all(S is not None and np.isfinite(S).all() for S in scores)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("whitened_first", [False, True])
def test_plus_adds_rows_without_changing_the_system(weighted, whitened_first):
    X, Y, w = _rows()
    w = w if weighted else None
    kernel = GaussianKernel(bandwidth=1.0)
    a = NystromSystem(kernel, X[:700], Y[:700], X[:120], weights=None if w is None else w[:700])
    if whitened_first:
        T = a.whitened()[0].copy()  # plus() then updates T by the new rows' whitened features; A/n is released
        assert a.An is None
        with pytest.raises(RuntimeError, match="through plus"):
            a.add_rows(X[700:], Y[700:])
    An, Bn, n = None if a.An is None else a.An.copy(), a.Bn.copy(), a.n
    b = a.plus(X[700:], Y[700:], None if w is None else w[700:])
    # a is unchanged (the cache may share it)
    assert a.n == n and np.array_equal(a.Bn, Bn) and (An is None or np.array_equal(a.An, An))
    if whitened_first:
        assert np.array_equal(a.whitened()[0], T)
    full = NystromSystem(kernel, X, Y, X[:120], weights=w, basis=(a.kept, a.U))
    assert b.n == full.n == 900
    np.testing.assert_allclose(b.Bn, full.Bn, rtol=1e-10, atol=1e-13)
    if not whitened_first:
        np.testing.assert_allclose(np.tril(b.An), np.tril(full.An), rtol=1e-10, atol=1e-13)
    for got, want in zip(b.whitened(), full.whitened()):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_total_of_parts_is_the_system_of_their_rows():
    X, Y, _ = _rows()
    kernel = GaussianKernel(bandwidth=1.0)
    first = NystromSystem(kernel, X[:300], Y[:300], X[:80])
    parts = [first] + [NystromSystem(kernel, X[lo:lo + 300], Y[lo:lo + 300], X[:80], basis=(first.kept, first.U))
                       for lo in (300, 600)]
    total = NystromSystem.total(parts)
    direct = NystromSystem(kernel, X, Y, X[:80], basis=(first.kept, first.U))
    np.testing.assert_allclose(np.tril(total.An), np.tril(direct.An), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(total.Bn, direct.Bn, rtol=1e-10, atol=1e-13)
    with pytest.raises(ValueError, match="do not add"):
        NystromSystem.total([first, NystromSystem(kernel, X[:300], Y[:300], X[:40])])


def test_factors_made_in_T_s_buffer_leave_T_as_it_was_and_match_a_copy():
    """path() and refine() factor T + λI in T's own buffer (no M × M copy per λ): T is bit-identical afterwards,
    also after a λ that does not factor, and the scores are those of a system whose factor is made in a copy (a
    read-only T: the shared systems' case)."""
    X, Y, w = _rows()
    kernel = GaussianKernel(bandwidth=1.0)
    s = NystromSystem(kernel, X[:700], Y[:700], X[:150], weights=w[:700])
    frozen = NystromSystem(kernel, X[:700], Y[:700], X[:150], weights=w[:700])
    T0 = s.whitened()[0].copy()
    frozen.whitened()[0].flags.writeable = False
    lams = [1e-2, -10.0, 1e-5]  # -10: T - 10 I is not positive definite (a failed factor mid-path)
    got, want = s.path(lams, X[700:]), frozen.path(lams, X[700:])
    assert got[1] is None and want[1] is None
    for a, b in zip(got[::2], want[::2]):
        assert np.array_equal(a, b)
    assert np.array_equal(s.whitened()[0], T0)
    r1, r2 = s.refine(1e-4, X[:700], Y[:700], w[:700]), frozen.refine(1e-4, X[:700], Y[:700], w[:700])
    assert np.array_equal(r1[0], r2[0])
    assert np.array_equal(s.whitened()[0], T0)
    assert np.array_equal(s.factor(1e-3), frozen.factor(1e-3)) and np.array_equal(s.whitened()[0], T0)


@pytest.mark.parametrize("whitened_first", [False, True])
def test_plus_consume_takes_the_buffer_and_gives_the_same_system(whitened_first):
    X, Y, _ = _rows()
    kernel = GaussianKernel(bandwidth=1.0)
    a = NystromSystem(kernel, X[:600], Y[:600], X[:120])
    b = NystromSystem(kernel, X[:600], Y[:600], X[:120])
    if whitened_first:
        a.whitened(), b.whitened()
    kept = a.plus(X[600:], Y[600:])
    took = b.plus(X[600:], Y[600:], consume=True)
    assert np.array_equal(kept.whitened()[0], took.whitened()[0])
    assert np.array_equal(kept.solve(1e-3), took.solve(1e-3))
    with pytest.raises(RuntimeError, match="consumed"):
        b.whitened()
    a.whitened()  # not consumed: still usable


def test_handed_over_centers_with_some_dropped_give_the_same_system():
    """own_centers: C reordered and compacted in its own buffer, where the basis drops repeated centers, is the
    system of a copy."""
    X, Y, _ = _rows(n=500)
    C = np.vstack([X[:80], X[:20]])  # 20 repeats: the basis keeps 80
    kernel = GaussianKernel(bandwidth=1.0)
    copy_ = NystromSystem(kernel, X, Y, C.copy())
    owned = NystromSystem(kernel, X, Y, np.asfortranarray(C), own_centers=True)
    assert owned.M == copy_.M == 80
    assert owned.C.flags.f_contiguous and np.array_equal(owned.C, copy_.C)
    assert np.array_equal(owned.An, copy_.An) and np.array_equal(owned.U, copy_.U)


def test_leading_rows_compacts_in_place():
    from kopt.nystrom.centers import leading_rows

    A = np.asfortranarray(np.arange(35.0).reshape(7, 5))
    want = A[:4].copy()
    got = leading_rows(A, 4)
    assert np.shares_memory(got, A) and got.flags.f_contiguous and np.array_equal(got, want)


def test_shed_and_restore_give_the_same_system():
    X, Y, _ = _rows()
    kernel = GaussianKernel(bandwidth=1.0)
    C = X[:120].copy()
    s = NystromSystem(kernel, X[:600], Y[:600], C)
    want = s.path([1e-3], X[600:])[0]
    U, Cs = s.U.copy(), s.C.copy()
    s.shed()
    assert s.shed_state and s.U is None and s.C is None
    s.restore(np.asfortranarray(C))
    assert not s.shed_state and np.array_equal(s.U, U) and np.array_equal(s.C, Cs)
    assert np.array_equal(s.path([1e-3], X[600:])[0], want)
    s.shed()
    with pytest.raises(ValueError, match="other centers"):
        s.restore(X[200:320].copy())
    unsolved = NystromSystem(kernel, X[:600], Y[:600], C)
    unsolved.shed()  # T not made yet: nothing is dropped
    assert not unsolved.shed_state


@pytest.mark.parametrize("sparse", [False, True])
def test_a_bound_kernel_gives_exact_s_bits(sparse):
    """Kernel.bind(C) makes C's side of the kernel once per pass (the Gaussian's augmented centers): every chunk's
    values are exact(X, C)'s, bit for bit, for dense and CSR rows, float32 and float64."""
    import scipy.sparse as sp

    from kopt.contract.registry import registry

    rng = np.random.default_rng(2)
    C = np.asfortranarray(rng.standard_normal((30, 6)).astype(np.float32))
    X = rng.standard_normal((40, 6)).astype(np.float32)
    if sparse:
        X = sp.csr_matrix(np.where(rng.random(X.shape) < 0.3, X, 0))
    for name in ("gaussian", "laplacian"):
        kernel = registry().get("kernel", name)(bandwidth=1.3)
        if sparse and not kernel.sparse_rows:
            continue
        k = kernel.bind(C)
        for rows in (X, X.astype(np.float64)):
            assert np.array_equal(k(rows), kernel.exact(rows, C))


@pytest.mark.parametrize("n", [1, 31, 32, 33, 100])
@pytest.mark.parametrize("order", ["C", "F"])
def test_a_triangle_is_mirrored_in_place_whatever_the_layout(n, order):
    from kopt.nystrom.system import _mirror_upper, symmetric_from_lower

    A = np.asarray(np.random.default_rng(n).standard_normal((n, n)), order=order)
    given, B = A.copy(), A.copy(order=order)
    assert symmetric_from_lower(A) is A
    np.testing.assert_array_equal(A, np.tril(given) + np.tril(given, -1).T)
    _mirror_upper(B)
    np.testing.assert_array_equal(B, np.triu(given) + np.triu(given, 1).T)
