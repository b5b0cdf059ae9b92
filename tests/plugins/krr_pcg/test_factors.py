"""U and the CG preconditioner's factor in one M x M buffer (kopt/nystrom/factors.py): the preconditioner is P⁻¹, U is
untouched, every reader of U sees its upper triangle only, and krr_pcg's memory holds one M x M matrix."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from kopt.numerics.threads import blas_threads
from kopt.nystrom import CenterFactors, NystromCG, certificate, upper_times
from kopt.nystrom.factors import product_block
from kopt.nystrom.passes import CHUNK_ENTRIES
from kopt_plugins.kernels.shift_invariant import GaussianKernel
from kopt_plugins.losses.regression import SquareLoss


def _upper(M, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, M))
    R = A @ A.T / M + 1e-3 * np.eye(M)
    return np.asfortranarray(np.linalg.cholesky(R).T)


@pytest.mark.parametrize("M", [5, 512, 1100])  # below, at and across the product's blocks of 512 rows
def test_the_preconditioner_is_p_inverse_and_u_is_kept(M):
    U0 = _upper(M)
    f = CenterFactors(U0.copy(order="F"))
    rng = np.random.default_rng(1)
    for scale, lam in ((1.0 / M, 1e-7), (3.0 / M, 1e-2)):  # a λ path re-factors in the same buffer
        f.factor(scale, lam)
        P = scale * U0 @ U0.T + lam * np.eye(M)
        r = rng.standard_normal((M, 2))
        z = f.precondition(r)
        assert np.abs(P @ z - r).max() <= 1e-8 * np.abs(r).max() * np.linalg.cond(P) ** 0.5 + 1e-10
        np.testing.assert_allclose(f.precondition(r[:, 0]), z[:, 0], rtol=1e-9)
        assert np.array_equal(np.triu(f.U), U0)  # U's triangle and diagonal exactly as given
        assert np.any(np.tril(f.U, -1) != 0) or M == 1  # the factor lives below it


def test_every_reader_of_u_sees_its_upper_triangle_only():
    M = 700
    U0 = _upper(M, seed=3)
    f = CenterFactors(U0.copy(order="F"))
    f.factor(1.0 / M, 1e-4)
    x = np.random.default_rng(4).standard_normal((M, 3))
    np.testing.assert_allclose(upper_times(f.U, x), U0 @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(upper_times(f.U, x, trans=True), U0.T @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(upper_times(f.U, x[:, 0]), U0 @ x[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f.coef(x), np.linalg.solve(U0, x), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(f.whiten(x), np.linalg.solve(U0.T, x), rtol=1e-9, atol=1e-12)
    # the certificate's ‖Uw‖² reads the same U from the shared buffer as from a clean one
    rng = np.random.default_rng(5)
    n = 50
    y, scores, Ktr, w = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(M), x[:, 0]
    loss = SquareLoss()
    assert certificate(loss, 1e-3, y, scores, Ktr, w, f.U) == pytest.approx(
        certificate(loss, 1e-3, y, scores, Ktr, w, U0), rel=1e-12)


def test_a_preconditioner_that_does_not_factor_is_an_error_and_leaves_u():
    M = 600
    U0 = _upper(M, seed=6)
    f = CenterFactors(U0.copy(order="F"))
    with pytest.raises(np.linalg.LinAlgError):
        f.factor(1.0 / M, -10.0)  # negative definite
    assert not f.factored and np.array_equal(np.triu(f.U), U0)
    f.factor(1.0 / M, 1e-3)  # and it factors again afterwards
    assert f.factored


def test_the_factor_has_the_same_bits_on_one_and_two_blas_threads():
    M = 1100
    out = []
    for threads in (1, 2):  # kopt's workers, and BLAS's own threads
        f = CenterFactors(_upper(M, seed=7))
        with blas_threads(threads):
            f.factor(1.0 / M, 1e-6, threads=threads)
        out.append((f.U.copy(), f.l_diag.copy()))
    assert np.array_equal(out[0][0], out[1][0]) and np.array_equal(out[0][1], out[1][1])


def test_cg_holds_one_m_by_m_matrix():
    rng = np.random.default_rng(8)
    M, n = 1024, 3000
    X = rng.standard_normal((n, 10)).astype(np.float32)
    Y = np.sin(X[:, :1]).astype(np.float64)
    kernel = GaussianKernel(bandwidth=2.0)
    NystromCG(kernel, X[:200], Y[:200], X[:64], dtype=np.float32).start(1e-3)  # imports and pools: not traced
    tracemalloc.start()
    try:
        cg = NystromCG(kernel, X, Y, X[:M], dtype=np.float32, threads=1)
        s = cg.start(1e-6)
        cg.step(s)
        cg.start(1e-7, s["v"])  # a second λ: factored in the same buffer
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    mm = M * M * 8
    assert current < 1.3 * mm, (current, mm)  # held after the solve: U's buffer and O(M) vectors
    # above U's buffer: one chunk of kernel values (float32 and its float64 copy, a fixed number of entries), the
    # product's three blocks of rows, the centers' kernel R before it became U (U is made in R's buffer)
    chunk = CHUNK_ENTRIES * (4 + 8)
    assert peak < 1.5 * mm + chunk + 3 * product_block(M) * M * 8, (peak, mm)
    assert cg.M > 0.9 * M


def test_the_krr_pcg_plan_holds_one_m_by_m_buffer():
    from kopt.contract.registry import registry
    from kopt.numerics import memory

    solver = registry().get("solver", "krr_pcg")()
    plan = memory.plan_of(solver, memory.Sizes(n=10**6, d=10, count=8192, kind="nystrom"))
    square = [b for what, b in plan if "8,192 x 8,192" in what]
    assert square == [8192 * 8192 * 8], plan
    assert memory.total(plan) < 1.0e9  # the issue's bound at 8,192 centers, the rows' own bytes apart


def test_a_cg_and_its_buffer_go_without_the_garbage_collector():
    """The factors refer back to the CG that factored them weakly: a CG dropped frees its M x M buffer at once (a
    cycle kept three bandwidth probes' buffers alive until a collection)."""
    import gc
    import weakref

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3)).astype(np.float32)
    Y = rng.standard_normal((300, 1))
    gc.disable()
    try:
        cg = NystromCG(GaussianKernel(bandwidth=1.0), X, Y, np.asfortranarray(X[:64]), dtype=np.float32)
        s = cg.start(1e-3)
        cg.step(s)
        assert cg.factors.owner is cg
        gone = weakref.ref(cg.factors)
        del cg, s
        assert gone() is None
    finally:
        gc.enable()


def test_u_of_few_kept_centers_does_not_hold_the_drawn_buffer():
    """Where the pivoted basis keeps far fewer centers than were drawn, U is a buffer of its own: R's M x M buffer
    (the drawn count's) is freed with the basis made."""
    from kopt.nystrom.centers import COMPACT_SHARE, center_basis

    rng = np.random.default_rng(1)
    base = rng.standard_normal((40, 2)).astype(np.float32)
    C = np.asfortranarray(np.repeat(base, 10, axis=0))  # 400 centers, 40 distinct: the basis keeps at most 40
    kept, U = center_basis(GaussianKernel(bandwidth=1.0), C)
    r = len(kept)
    assert 10 <= r <= 40 and U.shape == (r, r)
    assert r * r <= COMPACT_SHARE * 400 * 400
    owner = U if U.base is None else U.base
    assert owner.nbytes == U.nbytes  # not a view of the 400 x 400 buffer
    np.testing.assert_allclose(U.T @ U, GaussianKernel(bandwidth=1.0).exact(C[kept].astype(np.float64),
                                                                             C[kept].astype(np.float64)), atol=1e-10)


def test_the_drawn_centers_estimate_is_their_mean_and_the_same_bits_on_any_thread_count():
    """drawn_gram: U⁻ᵀ K(kept, drawn) K(drawn, kept) U⁻¹ / D, made a block of drawn centers at a time on kopt's
    workers -- the same bits on 1 and 2 threads."""
    from kopt.nystrom import drawn_gram
    from kopt.nystrom.centers import center_basis

    rng = np.random.default_rng(3)
    base = rng.standard_normal((300, 3)).astype(np.float32)
    C = np.asfortranarray(np.concatenate([base, base + 1e-4 * rng.standard_normal(base.shape).astype(np.float32)]))
    kernel = GaussianKernel(bandwidth=1.0)
    kept, U = center_basis(kernel, C)
    Ck = np.asfortranarray(C[kept])
    one = drawn_gram(kernel, Ck, C, U, threads=1, block=128)
    two = drawn_gram(kernel, Ck, C, U, threads=2, block=128)
    assert np.array_equal(np.tril(one), np.tril(two))
    K = kernel.exact(Ck.astype(np.float64), C.astype(np.float64))
    W = np.linalg.solve(np.triu(U).T, K)
    np.testing.assert_allclose(np.tril(one), np.tril(W @ W.T / C.shape[0]), rtol=1e-9, atol=1e-12)
