"""Values a reader may hand on: every finite cell fits float32 (features are stored as float32).

A float64 cell above float32's range would become ``inf`` in the cast, after
the readers' non-finite scan: a NaN model with exit status 0.  Readers check
each float64 block before the cast; NaN and inf cells are left to
``data.nonfinite`` (:mod:`kopt.data.nonfinite`).
"""
from __future__ import annotations

import numpy as np

FLOAT32_MAX = float(np.finfo(np.float32).max)
_STEP = 1 << 16


def first_out_of_range(A):
    """``(row, column)`` (or ``(index,)`` for 1-D) of the first finite cell of ``A`` beyond float32's range, else None."""
    A = np.asarray(A)
    if A.dtype.kind != "f" or A.dtype.itemsize <= 4:
        return None
    for i in range(0, A.shape[0], _STEP):
        block = A[i : i + _STEP]
        with np.errstate(invalid="ignore"):
            big = (np.abs(block) > FLOAT32_MAX) & np.isfinite(block)
        if big.any():
            where = tuple(int(k) for k in np.argwhere(big)[0])
            return (where[0] + i, *where[1:])
    return None


def out_of_range_message(value) -> str:
    return (f"value {float(value):.6g} is outside the float32 range (magnitude at most {FLOAT32_MAX:.4g}); "
            "rescale the column")
