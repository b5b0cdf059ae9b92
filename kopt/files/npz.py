"""``.npz`` files kopt did not write (or cannot trust): every member's header checked before its array is built.

``np.load`` allocates an array from the header's shape and dtype before it
reads the data, so a crafted header (``"(100000000,)f8"``, a shape of 10^12
rows) costs that memory first.  :func:`read_npz` reads each member's header,
accepts only plain numeric or fixed-width text dtypes (no object, structured
or sub-array dtypes) and a shape whose bytes the member really holds, and only
then loads the array (``allow_pickle=False`` throughout).  Callers check that
the arrays they use are numeric (:data:`NUMERIC_KINDS`).
"""
from __future__ import annotations

import math
import zipfile

import numpy as np

from ..numerics.memory import check_allocation

NUMERIC_KINDS = "biuf"
_SAFE_KINDS = NUMERIC_KINDS + "SU"  # scipy's save_npz stores its format name as bytes


class BadArrayFile(ValueError):
    """A member of an ``.npz`` with an unsafe or inconsistent header; the message says which and why."""


def check_array_header(name, shape, dtype, available):
    """Raise :class:`BadArrayFile` unless ``dtype`` is plain (numeric or text) and ``shape`` fits ``available`` bytes."""
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None or dtype.kind not in _SAFE_KINDS:
        raise BadArrayFile(f"array {name!r} has dtype {dtype}; "
                           "expected a plain numeric dtype (bool, integer or float)")
    if any(not isinstance(s, int) or s < 0 for s in shape):
        raise BadArrayFile(f"array {name!r} has an invalid shape {shape}")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > available:
        raise BadArrayFile(f"array {name!r} claims shape {shape} ({nbytes:,} bytes) but the file holds "
                           f"{available:,} bytes for it")


def _header(fh):
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(fh)
    return np.lib.format.read_array_header_2_0(fh)


def read_npz(source, names=None) -> dict:
    """``{name: array}`` of an ``.npz`` (a path or a binary file object), each header checked first.

    ``names``: load only these members (others are still checked).  Raises :class:`BadArrayFile`
    for a bad member, ``zipfile.BadZipFile``/``OSError``/``ValueError`` for a broken file.
    """
    out = {}
    with zipfile.ZipFile(source) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            name = info.filename[:-4]
            with zf.open(info) as fh:
                try:
                    shape, _, dtype = _header(fh)
                except ValueError as exc:
                    raise BadArrayFile(f"array {name!r}: bad header ({exc})") from None
                check_array_header(name, shape, dtype, info.file_size)
            if names is None or name in names:
                check_allocation(math.prod(shape) * dtype.itemsize, f"array {name!r} of shape {shape}",
                                 "is this the right file?")
                with zf.open(info) as fh:
                    out[name] = np.lib.format.read_array(fh, allow_pickle=False)
    return out
