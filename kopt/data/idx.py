"""IDX files (the MNIST format): ``*-images-idx3-ubyte[.gz]`` + ``*-labels-idx1-ubyte[.gz]``.

An images file of shape ``(n, 28, 28)`` becomes ``X`` of shape ``(n, 784)``
(float32 pixel values 0..255, row-major); the labels come from the sibling
``labels-idx1`` file when it exists.
"""
from __future__ import annotations

import os
import re

import numpy as np

from ..errors import DataError
from .stream import open_binary

_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def is_idx(path) -> bool:
    """True when the file name says IDX (``...-idx3-ubyte``, ``...idx1...``)."""
    name = os.path.basename(path).lower()
    return bool(re.search(r"idx\d", name))


def read_idx_array(path) -> np.ndarray:
    """The array stored in an IDX file."""
    raw, stream = open_binary(path)
    try:
        head = stream.read(4)
        if len(head) < 4 or head[0] != 0 or head[1] != 0 or head[2] not in _DTYPES:
            raise DataError(f"{path}: not an IDX file (bad magic number {head.hex()})")
        ndim = head[3]
        dims = np.frombuffer(stream.read(4 * ndim), dtype=">u4").astype(np.int64)
        dtype = np.dtype(_DTYPES[head[2]])
        count = int(np.prod(dims))
        body = stream.read(count * dtype.itemsize)
    finally:
        stream.close()
        raw.close()
    if len(body) != count * dtype.itemsize:
        raise DataError(f"{path}: truncated IDX file: header says {tuple(dims)} "
                        f"({count * dtype.itemsize} bytes), found {len(body)} bytes")
    return np.frombuffer(body, dtype=dtype).reshape(tuple(dims))


def labels_path(images_path):
    """The sibling labels file of an images file, or None."""
    d, name = os.path.split(images_path)
    base = re.sub(r"images([-_.])idx3", r"labels\1idx1", name)
    if base == name:
        return None
    stem = base[:-3] if base.endswith(".gz") else base
    for cand in (base, stem, stem + ".gz"):
        if os.path.exists(os.path.join(d, cand)):
            return os.path.join(d, cand)
    return None


def read_idx(path, *, label=None, max_rows=None):
    """``(X, y, meta)`` from an IDX images (or any ``n x ...``) file.

    ``label=False`` skips the labels; otherwise the sibling ``labels-idx1``
    file is read when the name allows finding it.
    """
    A = read_idx_array(path)
    if A.ndim == 1:
        raise DataError(f"{path}: a 1-D IDX file holds labels, not features; give the images file")
    X = A.reshape(A.shape[0], -1)
    if max_rows is not None:
        X = X[:max_rows]
    X = X.astype(np.float32)
    y = None
    lp = labels_path(path) if label is not False else None
    if lp is not None:
        y = read_idx_array(lp).astype(np.float64).ravel()
        if max_rows is not None:
            y = y[:max_rows]
        if y.size != X.shape[0]:
            raise DataError(f"{lp}: {y.size} labels for the {X.shape[0]} images of {path}")
    elif label is not False and label is not None:
        raise DataError(f"{path}: no labels file found next to it (expected a '*-labels-idx1-ubyte' file)")
    meta = {"shape": list(A.shape[1:]), "labels_file": lp, "nonfinite": 0, "first_nonfinite": None}
    return X, y, meta
