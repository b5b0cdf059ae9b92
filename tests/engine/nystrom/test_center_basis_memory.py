"""center_basis where it keeps fewer centers than were drawn: U without the drawn centers' M x M buffer, and no
second matrix at the peak (the buffer is cut to U in place)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from kopt.contract.registry import registry
from kopt.nystrom.centers import center_basis

M = 3000


@pytest.mark.parametrize("distinct", [1800, 2400])
def test_dropped_centers_leave_u_in_a_buffer_of_its_own_with_no_copy_at_the_peak(distinct):
    """``distinct`` well-separated rows and repeats of them: the repeats are dropped, U is distinct x distinct and
    holds no more than its own entries; the peak is R's M x M (no copy of U beside it)."""
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(distinct, 12))
    C = np.vstack([rows, rows[rng.integers(0, distinct, M - distinct)]])
    kernel = registry().get("kernel", "gaussian")(bandwidth=1.0)
    square = M * M * 8
    tracemalloc.start()
    try:
        kept, U = center_basis(kernel, C)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(kept) == distinct and U.shape == (distinct, distinct)
    held = U.nbytes if U.base is None else U.base.nbytes
    assert held == distinct * distinct * 8
    assert current < 1.1 * held, (current, held)
    zeroing = 1024 * 1023 * 8  # the index arrays of one 1,024-wide diagonal block's strict lower triangle, zeroed
    assert peak < 1.05 * square + zeroing, (peak, square)  # R, and no copy of U beside it
    Ck = C[kept]
    assert np.allclose(U.T @ U, kernel.exact(Ck, Ck), atol=1e-10)
    assert not np.tril(U, -1).any()
