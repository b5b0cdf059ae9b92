"""Streaming LIBSVM/svmlight parser (optionally compressed) -> CSR or dense.

Each newline-aligned block is parsed without a Python loop over tokens: the
``:`` are turned into spaces and NumPy's C parser reads every number of the
block at once (``np.fromstring``); the per-line count of ``:`` gives the row
structure.  A block whose number count does not match that structure, or
whose indices are not integers, is re-read line by line to report the file
and line of the first bad token.  ``qid:`` tokens and ``#`` comments are
ignored; duplicate indices in a row are summed and explicit zeros dropped.
"""
from __future__ import annotations

import re
import warnings

import numpy as np

from ..errors import DataError
from ..numerics.memory import check_allocation
from .progress import ByteProgress
from .ranges import FLOAT32_MAX, first_out_of_range, out_of_range_message
from .stream import file_size, iter_blocks

#: ``sparse: auto`` keeps CSR below this fraction of non-zeros (dense float32
#: costs 4 bytes a cell, CSR about 8 bytes a non-zero: dense wins above ~1/2;
#: a quarter leaves room for the denser arithmetic of sparse products).
DENSE_ABOVE = 0.25

_QID = re.compile(rb"qid:\S*")


def _clean(data: bytes) -> bytes:
    if b"#" in data:
        data = b"\n".join(line.split(b"#", 1)[0] for line in data.split(b"\n"))
    if b"qid:" in data:
        data = _QID.sub(b"", data)
    return data


def _fast_block(data: bytes):
    """``(y, idx, val, nnz_per_row)`` or None when the block needs the slow path."""
    lines = [ln for ln in data.split(b"\n") if ln.strip()]
    if not lines:
        return np.empty(0), np.empty(0, np.int64), np.empty(0, np.float32), np.empty(0, np.int64)
    k = np.fromiter((ln.count(b":") for ln in lines), dtype=np.int64, count=len(lines))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            nums = np.fromstring(data.replace(b":", b" "), dtype=np.float64, sep=" ")
    except (ValueError, DeprecationWarning):
        return None
    width = 1 + 2 * k
    if nums.size != int(width.sum()):
        return None
    starts = np.cumsum(width) - width
    y = nums[starts]
    mask = np.ones(nums.size, dtype=bool)
    mask[starts] = False
    pairs = nums[mask].reshape(-1, 2)
    idx = pairs[:, 0]
    if idx.size and not np.all((idx == np.floor(idx)) & (idx >= 0) & (idx < 2**62)):
        return None
    if first_out_of_range(nums) is not None:
        return None  # the slow path names the line
    return y, idx.astype(np.int64), pairs[:, 1].astype(np.float32), k


def _slow_block(data: bytes, path, first_line):
    """Line-by-line parse of a block; DataError naming the first bad line."""
    y, idx, val, counts = [], [], [], []
    for off, raw in enumerate(data.split(b"\n")):
        line = raw.split(b"#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{first_line + off}"
        parts = [p for p in line.split() if not p.startswith(b"qid:")]
        try:
            y.append(float(parts[0]))
        except ValueError:
            raise DataError(f"{where}: label {parts[0].decode(errors='replace')!r} is not a number "
                            "(a LIBSVM line is 'label index:value index:value ...')") from None
        if abs(y[-1]) > FLOAT32_MAX and np.isfinite(y[-1]):
            raise DataError(f"{where}: label: {out_of_range_message(y[-1])}")
        for tok in parts[1:]:
            key, sep, value = tok.partition(b":")
            try:
                if not sep:
                    raise ValueError
                i = int(key)
                v = float(value)
                if i < 0:
                    raise ValueError
            except ValueError:
                raise DataError(f"{where}: bad token {tok.decode(errors='replace')!r} "
                                "(expected index:value with a non-negative integer index)") from None
            if abs(v) > FLOAT32_MAX and np.isfinite(v):
                raise DataError(f"{where}: feature {i}: {out_of_range_message(v)}")
            idx.append(i)
            val.append(v)
        counts.append(len(parts) - 1)
    return (np.asarray(y, np.float64), np.asarray(idx, np.int64), np.asarray(val, np.float32),
            np.asarray(counts, np.int64))


def _line_of_row(path, row):
    """1-based file line of data row ``row`` (0-based); used for error messages only."""
    seen = 0
    for block in iter_blocks(path):
        for off, raw in enumerate(block.data.split(b"\n")):
            if raw.split(b"#", 1)[0].strip():
                if seen == row:
                    return block.first_line + off
                seen += 1
    return None


def _stream(path, max_rows, progress):
    ys, idxs, vals, counts = [], [], [], []
    n = 0
    bar = ByteProgress(file_size(path), path.rsplit("/", 1)[-1], enabled=progress)
    try:
        for block in iter_blocks(path):
            data = _clean(block.data)
            parsed = _fast_block(data) or _slow_block(block.data, path, block.first_line)
            y, idx, val, k = parsed
            if max_rows is not None and n + y.size > max_rows:
                keep = max_rows - n
                y, k = y[:keep], k[:keep]
                idx, val = idx[: int(k.sum())], val[: int(k.sum())]
            ys.append(y)
            idxs.append(idx)
            vals.append(val)
            counts.append(k)
            n += y.size
            bar.update(block.raw_pos, n)
            if max_rows is not None and n >= max_rows:
                break
    finally:
        bar.close()
    return np.concatenate(ys), np.concatenate(idxs), np.concatenate(vals), np.concatenate(counts)


def read_libsvm(path, *, n_features=None, zero_based="auto", max_rows=None, sparse="auto", progress=None):
    """Parse a LIBSVM/svmlight file.

    Parameters
    ----------
    path : str
    n_features : int, optional
        Feature count (default: the largest index in the file); a test file
        whose highest features never occur needs the training count.
    zero_based : {"auto", True, False}
        Whether indices start at 0; ``auto``: 0-based when an index 0 occurs.
    max_rows : int, optional
    sparse : {"auto", True, False}
        CSR output, dense output, or CSR below ``DENSE_ABOVE`` non-zeros.
    progress : bool, optional

    Returns
    -------
    X : scipy.sparse.csr_matrix or ndarray, float32
    y : ndarray float64
    meta : dict
        ``n_features``, ``zero_based``, ``nnz``, ``sparse``, ``nonfinite``,
        ``first_nonfinite`` (``[line, column]`` or None).
    """
    from scipy import sparse as sp

    y, idx, val, k = _stream(path, max_rows, progress)
    if y.size == 0:
        raise DataError(f"{path}: the file holds no data rows")
    zb = bool(idx.size and idx.min() == 0) if zero_based == "auto" else bool(zero_based)
    if not zb:
        if idx.size and idx.min() == 0:
            row = int(np.searchsorted(np.cumsum(k), int(np.argmin(idx)), side="right"))
            raise DataError(f"{path}:{_line_of_row(path, row)}: feature index 0 in a file read as 1-based; "
                            "set data.zero_based: true")
        idx = idx - 1
    d = int(n_features) if n_features else (int(idx.max()) + 1 if idx.size else 0)
    if idx.size and idx.max() >= d:
        first = int(np.argmax(idx >= d))
        row = int(np.searchsorted(np.cumsum(k), first, side="right"))
        raise DataError(f"{path}:{_line_of_row(path, row)}: feature index {int(idx[first]) + (0 if zb else 1)} "
                        f"exceeds n_features={d}")
    _check_width(path, d, y.size, n_features)
    indptr = np.zeros(y.size + 1, dtype=np.int64)
    np.cumsum(k, out=indptr[1:])
    X = sp.csr_matrix((val, idx, indptr), shape=(y.size, d))
    X.sum_duplicates()
    X.eliminate_zeros()
    meta = {"n_features": d, "zero_based": zb, "nnz": int(X.nnz), "nonfinite": 0, "first_nonfinite": None}
    _scan_nonfinite(path, X, y, meta)
    dense = sparse is False or (sparse == "auto" and X.nnz >= DENSE_ABOVE * max(1, y.size * d))
    meta["sparse"] = not dense
    if dense:
        check_allocation(4 * y.size * d, f"{path}: a dense {y.size:,} x {d:,} float32 matrix",
                         "set data.sparse: true (or auto)")
        X = X.toarray()
    return X, y, meta


def _check_width(path, d, n, given):
    """The per-feature arrays d implies (column statistics, float64: about 4 of them) fit in memory."""
    source = "data.n_features" if given else "its largest feature index"
    lower = ("set data.n_features lower" if given else
             "check the file's feature indices (a typo?) or give data.n_features")
    check_allocation(32 * d, f"{path}: {d:,} features (from {source}): the per-feature statistics", lower)


def _scan_nonfinite(path, X, y, meta):
    bad_x = ~np.isfinite(X.data)
    bad_y = ~np.isfinite(y)
    count = int(bad_x.sum() + bad_y.sum())
    if not count:
        return
    rows = []
    if bad_x.any():
        pos = int(np.argmax(bad_x))
        r = int(np.searchsorted(X.indptr, pos, side="right") - 1)
        rows.append((r, int(X.indices[pos]) + (0 if meta["zero_based"] else 1)))
    if bad_y.any():
        rows.append((int(np.argmax(bad_y)), "label"))
    r, col = min(rows, key=lambda t: t[0])
    meta["nonfinite"] = count
    meta["first_nonfinite"] = [_line_of_row(path, r), col]
