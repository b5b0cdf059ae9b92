"""File readers: CSV/TSV (optionally compressed), LIBSVM/svmlight, .npy/.npz.

Every reader returns ``(X, y)`` with ``X`` float32 (dense ndarray or scipy CSR)
and ``y`` float64 (or None when the file has no label column).
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os

import numpy as np

from ..errors import DataError

_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}


def open_text(path):
    ext = os.path.splitext(path)[1].lower()
    opener = _OPENERS.get(ext)
    if not os.path.exists(path):
        raise DataError(f"{path}: file not found")
    if opener is None:
        return open(path, encoding="utf-8", newline="")
    return io.TextIOWrapper(opener(path, "rb"), encoding="utf-8", newline="")


def detect_format(path) -> str:
    name = path.lower()
    for ext in _OPENERS:
        if name.endswith(ext):
            name = name[: -len(ext)]
    if name.endswith(".npy"):
        return "npy"
    if name.endswith(".npz"):
        return "npz"
    if name.endswith(".tsv"):
        return "tsv"
    if name.endswith(".csv") or name.endswith(".data") or name.endswith(".txt"):
        return "csv"
    if name.endswith((".libsvm", ".svm", ".svmlight", ".t")) or "libsvm" in os.path.basename(name):
        return "libsvm"
    # sniff the first line
    with open_text(path) as fh:
        first = fh.readline()
    if ":" in first:
        return "libsvm"
    return "tsv" if "\t" in first else "csv"


def read_file(path, opts: dict):
    fmt = opts.get("format", "auto")
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt in ("csv", "tsv"):
        return read_delimited(path, "\t" if fmt == "tsv" else ",", opts)
    if fmt == "libsvm":
        return read_libsvm(path, opts)
    if fmt in ("npy", "npz"):
        return read_numpy(path, opts)
    raise DataError(f"{path}: unknown format {fmt!r}")


def _label_index(label, header, ncols, path):
    """Column index of the label; None when ``label`` is False (no label column)."""
    if label is False:
        return None
    if label is None:
        return 0
    if isinstance(label, str):
        if header is None or label not in header:
            raise DataError(f"{path}: label column {label!r} not found" + (f"; columns: {', '.join(header)}" if header else " (the file has no header)"))
        return header.index(label)
    idx = label if label >= 0 else ncols + label
    if not 0 <= idx < ncols:
        raise DataError(f"{path}: label column {label} is out of range for {ncols} columns")
    return idx


def read_delimited(path, delim, opts):
    rows = []
    header = None
    ncols = None
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.strip()
            if not line:
                continue
            cells = line.split(delim)
            if ncols is None:
                ncols = len(cells)
                hdr = opts.get("header", "auto")
                looks_header = any(not _is_number(c) for c in cells)
                if hdr is True or (hdr == "auto" and looks_header):
                    header = [c.strip().strip('"') for c in cells]
                    continue
            if len(cells) != ncols:
                raise DataError(f"{path}:{lineno}: expected {ncols} columns, found {len(cells)} (ragged row)")
            try:
                rows.append([float(c) if c.strip() else np.nan for c in cells])
            except ValueError:
                bad = next(c for c in cells if c.strip() and not _is_number(c))
                raise DataError(f"{path}:{lineno}: non-numeric cell {bad.strip()!r}") from None
    if not rows:
        raise DataError(f"{path}: the file holds no data rows")
    A = np.asarray(rows, dtype=np.float64)
    li = _label_index(opts.get("label"), header, ncols, path)
    if li is None:
        return A.astype(np.float32), None
    y = A[:, li].copy()
    X = np.delete(A, li, axis=1).astype(np.float32)
    return X, y


def _is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def read_libsvm(path, opts):
    from scipy import sparse

    labels, indptr, indices, values = [], [0], [], []
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            try:
                labels.append(float(parts[0]))
                for tok in parts[1:]:
                    k, _, v = tok.partition(":")
                    indices.append(int(k))
                    values.append(float(v))
            except ValueError:
                raise DataError(f"{path}:{lineno}: cannot parse LIBSVM line (expected 'label index:value ...')") from None
            indptr.append(len(indices))
    if not labels:
        raise DataError(f"{path}: the file holds no data rows")
    idx = np.asarray(indices, dtype=np.int64)
    zb = opts.get("zero_based", "auto")
    zero_based = (idx.size and idx.min() == 0) if zb == "auto" else bool(zb)
    if not zero_based:
        idx = idx - 1
    n_features = opts.get("n_features") or (int(idx.max()) + 1 if idx.size else 0)
    if idx.size and idx.max() >= n_features:
        raise DataError(f"{path}: feature index {int(idx.max()) + (0 if zero_based else 1)} exceeds n_features={n_features}")
    X = sparse.csr_matrix(
        (np.asarray(values, dtype=np.float32), idx, np.asarray(indptr, dtype=np.int64)), shape=(len(labels), n_features)
    )
    X.sum_duplicates()
    return X, np.asarray(labels, dtype=np.float64)


def read_numpy(path, opts):
    try:
        obj = np.load(path, allow_pickle=False)
    except Exception as exc:
        raise DataError(f"{path}: cannot read NumPy file: {exc}") from None
    if isinstance(obj, np.ndarray):
        if obj.ndim != 2:
            raise DataError(f"{path}: expected a 2-D array, got shape {obj.shape}")
        li = _label_index(opts.get("label"), None, obj.shape[1], path)
        if li is None:
            return obj.astype(np.float32), None
        return np.delete(obj, li, axis=1).astype(np.float32), obj[:, li].astype(np.float64)
    with obj:
        if "X" not in obj:
            raise DataError(f"{path}: an .npz file must hold arrays 'X' and 'y'; found {', '.join(obj.files)}")
        X = np.asarray(obj["X"], dtype=np.float32)
        y = np.asarray(obj["y"], dtype=np.float64) if "y" in obj else None
    return X, y
