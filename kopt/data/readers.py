"""File readers: CSV/TSV, LIBSVM/svmlight, IDX (all optionally gzip/xz/bzip2), .npy/.npz.

:func:`read_table` returns ``(X, y, meta)`` with ``X`` float32 (a dense
ndarray or a scipy CSR matrix) and ``y`` float64 (None when the file has no
label column).  Parsed text files are cached as ``.npy`` (see
:mod:`kopt.data.cache`) and memory-mapped on later reads.

Parse options (the ``data`` spec keys of the same names): ``format``,
``label`` (int index, negative from the end | header name | False; default:
the one header name label/target/class/y, else the first column), ``header``
(auto/True/False), ``n_features``, ``zero_based``, ``sparse``, ``max_rows``,
``cache``, ``progress``, ``text_labels`` (read a CSV label column as class names
even where its first rows are numbers).  A CSV/TSV label column of class names
gives ``y`` as a NumPy string array.
"""
from __future__ import annotations

import os
import zipfile

import numpy as np

from ..errors import DataError
from ..files.npz import NUMERIC_KINDS, BadArrayFile, read_npz
from . import cache
from .csvstream import label_index, read_csv
from .idx import is_idx, labels_path, read_idx
from .libsvm import read_libsvm
from .ranges import first_out_of_range, out_of_range_message
from .stream import check_exists, compression_of, open_raw, read_head, strip_compression_suffix

FORMATS = ("auto", "csv", "tsv", "libsvm", "idx", "npy", "npz")


def detect_format(path) -> str:
    """The format of ``path`` from its name (compression suffix ignored), else its first line."""
    check_exists(path)
    name = strip_compression_suffix(os.path.basename(path).lower())
    if name.endswith(".npy"):
        return "npy"
    if name.endswith(".npz"):
        return "npz"
    if is_idx(name):
        return "idx"
    if name.endswith(".tsv"):
        return "tsv"
    if name.endswith((".csv", ".data")):
        return "csv"
    if name.endswith((".libsvm", ".svm", ".svmlight")) or "libsvm" in name:
        return "libsvm"
    if compression_of(path) is None:
        with open_raw(path) as fh:
            if fh.read(6) == b"\x93NUMPY":
                return "npy"
    first = read_head(path, 1 << 14).split(b"\n", 1)[0]
    if b":" in first:
        return "libsvm"
    return "tsv" if b"\t" in first else "csv"


def parse_options(path, opts: dict) -> dict:
    """The options that decide a file's parsed arrays (the cache key), format resolved."""
    fmt = opts.get("format") or "auto"
    if fmt == "auto":
        fmt = detect_format(path)
    out = {"format": fmt, "max_rows": opts.get("max_rows")}
    if fmt in ("csv", "tsv", "npy"):
        label = opts.get("label")
        out.update(label=label, header=opts.get("header", "auto"))  # None: by header name, else the first column
        if fmt != "npy":
            out["index_column"] = "pandas"  # a header's empty first name is a row index, skipped (csvstream)
            if opts.get("text_labels"):
                out["text_labels"] = True
    elif fmt == "libsvm":
        out.update(n_features=opts.get("n_features"), zero_based=opts.get("zero_based", "auto"),
                   sparse=opts.get("sparse", "auto"))
    elif fmt == "idx":
        out.update(label=opts.get("label") is not False)
    return out


def read_table(path, opts: dict):
    """``(X, y, meta)`` of one file; ``meta`` has ``format``, ``cached`` and the reader's details."""
    path = os.fspath(path)
    check_exists(path)
    po = parse_options(path, opts)
    fmt = po["format"]
    if fmt in ("npy", "npz"):
        X, y, meta = read_numpy(path, opts, fmt)
        _check_shape(path, X)
        return X, y, {**meta, "format": fmt, "cached": False}
    sources = [path]
    if fmt == "idx" and po["label"] and labels_path(path):
        sources.append(labels_path(path))
    use_cache = opts.get("cache", True)
    before = cache.source_state(sources)  # the cache key is what the file was when the read began
    if use_cache:
        hit = cache.load(sources, po, before)
        if hit is not None:
            return hit[0], hit[1], {**hit[2], "format": fmt}
    try:
        X, y, meta = _parse(path, po, opts.get("progress"))
    except DataError:
        cache.check_unchanged(sources, before)  # a ragged row torn by a writer is that writer's doing
        raise
    cache.check_unchanged(sources, before)  # a torn read is refused, neither used nor cached
    _check_shape(path, X)
    meta = {**meta, "format": fmt, "cached": False}
    if use_cache and cache.worth_caching(X):
        where = cache.store(sources, po, before, X, y, meta)
        meta["cache"] = str(where) if where else None
    return X, y, meta


def _check_shape(path, X):
    if X.shape[0] == 0:
        raise DataError(f"{path}: the file holds no data rows")
    if X.shape[1] == 0:
        raise DataError(f"{path}: the file holds no feature columns (only labels?)")


def _parse(path, po, progress):
    fmt = po["format"]
    if fmt in ("csv", "tsv"):
        return read_csv(path, fmt=fmt, label=po["label"], header=po["header"], max_rows=po["max_rows"],
                        progress=progress, text_labels=po.get("text_labels", False))
    if fmt == "libsvm":
        return read_libsvm(path, n_features=po["n_features"], zero_based=po["zero_based"], max_rows=po["max_rows"],
                           sparse=po["sparse"], progress=progress)
    if fmt == "idx":
        return read_idx(path, label=None if po["label"] else False, max_rows=po["max_rows"])
    raise DataError(f"{path}: unknown format {fmt!r}; known: {', '.join(FORMATS)}")


def read_file(path, opts: dict):
    """``(X, y)`` of one file (see :func:`read_table`)."""
    X, y, _ = read_table(path, opts)
    return X, y


def numpy_load_error(path, exc) -> DataError:
    """The error for a ``.npy`` file NumPy cannot load without pickle: a file that is not ``.npy`` at all (NumPy
    then speaks of pickled data, and of loading it unsafely, which kopt never does), or one of Python objects."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except OSError:
        magic = b""
    if magic != b"\x93NUMPY":
        return DataError(f"{path}: not a NumPy .npy file (it does not begin with NumPy's header); is the format "
                         "right (--format, data.format)?")
    if "pickle" in str(exc):
        return DataError(f"{path}: the array holds Python objects; kopt reads numeric arrays only (no pickle)")
    return DataError(f"{path}: cannot read NumPy file: {exc}")


def read_numpy(path, opts, fmt):
    """A 2-D ``.npy`` (label column per ``opts['label']``) or an ``.npz`` with ``X`` (and ``y``),
    or a scipy ``save_npz`` sparse matrix (no labels).  Headers are checked before any array is
    built (:mod:`kopt.files.npz`); values must be numeric and, when finite, fit float32."""
    max_rows = opts.get("max_rows")
    if fmt == "npy":
        try:
            obj = np.load(path, mmap_mode="r", allow_pickle=False)
        except Exception as exc:
            raise numpy_load_error(path, exc) from None
        if not isinstance(obj, np.ndarray) or obj.ndim != 2:
            raise DataError(f"{path}: expected a 2-D array (rows x columns), got shape {np.shape(obj)}")
        _check_numeric(path, "the array", obj)
        obj = obj[:max_rows]
        li = label_index(opts.get("label"), None, obj.shape[1], path)
        if li is None:
            X, y = _as_float32(obj, path, "the array"), None
        else:
            keep = [j for j in range(obj.shape[1]) if j != li]
            X, y = _as_float32(obj[:, keep], path, "the array"), _labels(obj[:, li], path)
        return X, y, _finite_meta(X, y)
    try:
        arrays = read_npz(path)
    except (BadArrayFile, OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"{path}: cannot read .npz file: {exc}") from None
    if {"data", "indices", "indptr", "shape"} <= set(arrays):
        X = _sparse(path, arrays)[:max_rows].astype(np.float32)
        return X, None, _finite_meta(X, None)
    if "X" not in arrays:
        raise DataError(f"{path}: an .npz file must hold arrays 'X' (and 'y'); found {', '.join(sorted(arrays))}")
    if arrays["X"].ndim != 2:
        raise DataError(f"{path}: 'X' must be 2-D (rows x features), got shape {arrays['X'].shape}")
    X = _as_float32(arrays["X"][:max_rows], path, "'X'")
    y = _labels(arrays["y"][:max_rows], path) if "y" in arrays else None
    if y is not None and y.shape != (X.shape[0],):
        raise DataError(f"{path}: 'y' has shape {y.shape}, expected ({X.shape[0]},) to match 'X'")
    return X, y, _finite_meta(X, y)


def _sparse(path, arrays):
    from scipy import sparse

    try:
        shape = tuple(int(v) for v in np.asarray(arrays["shape"]).ravel())
        _check_numeric(path, "'data'", arrays["data"])
        X = sparse.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape)
        X.check_format(full_check=True)
    except (ValueError, TypeError, OverflowError) as exc:
        raise DataError(f"{path}: not a valid sparse (CSR) matrix: {exc}") from None
    if first_out_of_range(X.data) is not None:
        raise DataError(f"{path}: 'data': {out_of_range_message(X.data[first_out_of_range(X.data)])}")
    return X


def _check_numeric(path, what, A):
    if A.dtype.kind not in NUMERIC_KINDS:
        raise DataError(f"{path}: {what} has dtype {A.dtype}; expected numbers (bool, integer or float)")


def _labels(y, path):
    _check_numeric(path, "the labels", y)
    y = np.asarray(y, dtype=np.float64)
    at = first_out_of_range(y)
    if at is not None:
        raise DataError(f"{path}: label of row {at[0] + 1}: {out_of_range_message(y[at])}")
    return y


def _as_float32(A, path, what):
    _check_numeric(path, what, A)
    if A.dtype == np.float32:
        return A  # a read-only memory map for .npy: no copy
    at = first_out_of_range(A)
    if at is not None:
        raise DataError(f"{path}: {what}, row {at[0] + 1}, column {at[1] + 1}: {out_of_range_message(A[at])}")
    return np.ascontiguousarray(A, dtype=np.float32)


def _finite_meta(X, y):
    data = X.data if hasattr(X, "tocsr") else X
    count = 0
    for block in range(0, data.shape[0], 1 << 16):
        count += int(np.count_nonzero(~np.isfinite(data[block : block + (1 << 16)])))
    if y is not None:
        count += int(np.count_nonzero(~np.isfinite(y)))
    return {"nonfinite": count, "first_nonfinite": None}
