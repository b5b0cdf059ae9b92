"""NaN / inf / missing cells: an error by default, or ``drop``, ``zero``, ``mean`` (``data.nonfinite``).

Readers count non-finite cells while parsing and remember the first one's
file line, so clean data (the usual case) costs nothing here and an error
names the file and line.  ``mean`` fills a feature with its training mean
over the finite cells; the test set gets the training means.  A missing
label can only be dropped.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError
from .ranges import first_out_of_range, out_of_range_message

POLICIES = ("error", "drop", "zero", "mean")
_STEP = 1 << 16


def _values(X):
    return X.data if hasattr(X, "tocsr") else X


def bad_rows(X, y=None):
    """Boolean mask of rows holding a non-finite feature or label (blockwise, no full-size temporaries)."""
    n = X.shape[0]
    mask = np.zeros(n, dtype=bool)
    if hasattr(X, "tocsr"):
        X = X.tocsr()
        bad = ~np.isfinite(X.data)
        if bad.any():
            rows = np.repeat(np.arange(n), np.diff(X.indptr))
            mask[rows[bad]] = True
    else:
        for i in range(0, n, _STEP):
            mask[i : i + _STEP] = ~np.isfinite(X[i : i + _STEP]).all(axis=1)
    if y is not None:
        mask |= missing_labels(y)
    return mask


def missing_labels(y):
    """Boolean mask of missing labels: non-finite numbers, or empty class names (a missing cell of a CSV label
    column of class names reads as ``""``)."""
    y = np.asarray(y)
    if y.dtype.kind in "US":
        return y == y.dtype.type()
    return ~np.isfinite(np.asarray(y, dtype=np.float64))


def _message(metas, sources, X, y):
    for meta in metas:
        first = meta.get("first_nonfinite")
        if meta.get("nonfinite") and first and first[0] is not None:
            line, column = first
            col = "the label" if column == "label" else f"column {column}"
            return (f"{meta.get('path', sources[0])}:{line}: a NaN, inf or missing cell in {col} "
                    f"({meta['nonfinite']} non-finite cells in the file)")
    rows = np.flatnonzero(bad_rows(X, y))
    return f"{', '.join(map(str, sources))}: {rows.size} rows hold NaN/inf values (first: data row {int(rows[0]) + 1})"


def apply_nonfinite(X, y, policy, metas, sources, fill=None):
    """``(X, y, fill)`` with the policy applied; ``fill`` is the column means ``mean`` used
    (pass the training ones when treating the test set)."""
    if policy not in POLICIES:
        raise DataError(f"data.nonfinite must be one of {', '.join(POLICIES)}, got {policy!r}")
    if not any(m.get("nonfinite") for m in metas):
        return X, y, fill
    rows = bad_rows(X, y)
    if not rows.any():
        return X, y, fill
    if policy == "error":
        raise DataError(_message(metas, sources, X, y) + "; set data.nonfinite to drop (drop those rows), "
                        "zero or mean (fill with the training column mean) to accept them")
    if y is not None and missing_labels(y).any() and policy != "drop":
        first = int(np.flatnonzero(missing_labels(y))[0])
        raise DataError(f"{', '.join(map(str, sources))}: missing or non-finite label (data row {first + 1}); "
                        "a label cannot be filled: set data.nonfinite: drop")
    if policy == "drop":
        keep = ~rows
        if not keep.any():
            raise DataError(f"{', '.join(map(str, sources))}: every row holds a non-finite value; nothing left")
        return X[keep], None if y is None else y[keep], fill
    X = X.copy() if hasattr(X, "tocsr") else np.array(X)  # never write into a memory map or the caller's array
    vals = _values(X)
    if policy == "zero":
        vals[~np.isfinite(vals)] = 0
        return X, y, fill
    if fill is None:
        fill = finite_means(X)
    _fill_means(X, fill)
    return X, y, fill


def finite_means(X):
    """Column means over the finite cells (implicit zeros of a sparse matrix count as zeros)."""
    d = X.shape[1]
    total = np.zeros(d)
    count = np.zeros(d)
    if hasattr(X, "tocsr"):
        X = X.tocsr()
        ok = np.isfinite(X.data)
        np.add.at(total, X.indices[ok], X.data[ok])
        count[:] = X.shape[0]
        np.subtract.at(count, X.indices[~ok], 1)
    else:
        for i in range(0, X.shape[0], _STEP):
            blk = np.asarray(X[i : i + _STEP], dtype=np.float64)
            ok = np.isfinite(blk)
            total += np.where(ok, blk, 0.0).sum(axis=0)
            count += ok.sum(axis=0)
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def _fill_means(X, fill):
    if hasattr(X, "tocsr"):
        bad = ~np.isfinite(X.data)
        X.data[bad] = fill[X.indices[bad]]
        return
    for i in range(0, X.shape[0], _STEP):
        blk = X[i : i + _STEP]
        r, c = np.nonzero(~np.isfinite(blk))
        blk[r, c] = fill[c]


def check_arrays(X, y=None, X_test=None, y_test=None, nonfinite="error"):
    """Validate arrays given through the Python API (shapes, numbers, finite values)."""
    X = _matrix(X, "X")
    y = _labels(y, X, "y")
    if X_test is not None:
        X_test = _matrix(X_test, "X_test")
        if X_test.shape[1] != X.shape[1]:
            raise DataError(f"X_test has {X_test.shape[1]} features, X has {X.shape[1]}")
        y_test = _labels(y_test, X_test, "y_test")
    meta = [{"nonfinite": 1}]
    X, y, fill = apply_nonfinite(X, y, nonfinite, meta, ["X, y (arrays)"])
    if X_test is not None:
        X_test, y_test, _ = apply_nonfinite(X_test, y_test, nonfinite, meta, ["X_test, y_test (arrays)"], fill)
    return X, y, X_test, y_test


def _matrix(X, name):
    if hasattr(X, "tocsr"):
        return X.tocsr()
    if type(X).__module__.split(".")[0] == "cupy":
        X = X.get()
    X = np.asarray(X)
    if X.ndim != 2:
        raise DataError(f"{name} must be 2-D (rows x features), got shape {X.shape}")
    if X.shape[0] == 0:
        raise DataError(f"{name} has no rows")
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise DataError(f"{name} must hold numbers, got dtype {X.dtype}")
    if X.shape[1] == 0:
        raise DataError(f"{name} has no feature columns")
    _check_range(X, name)
    return X


def _check_range(A, name):
    at = first_out_of_range(A)
    if at is not None:
        raise DataError(f"{name}{list(at)}: {out_of_range_message(A[at])}")


def _labels(y, X, name):
    if y is None:
        return None
    if type(y).__module__.split(".")[0] == "cupy":
        y = y.get()
    y = np.asarray(y)
    if y.ndim == 2 and 1 in y.shape:
        y = y.ravel()
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise DataError(f"{name} has shape {y.shape}; expected ({X.shape[0]},), one label per row")
    if not np.issubdtype(y.dtype, np.number) and y.dtype != bool and y.dtype.kind not in "US":
        raise DataError(f"{name} must hold numbers or strings (class names), got dtype {y.dtype}")
    _check_range(y, name)
    return y
