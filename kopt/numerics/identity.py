"""What a computation is a function of, by content: a hash of an array's values and a kernel's class and options.

Caches that must never be stale key their entries by these (:mod:`kopt.nystrom.cache`'s systems, randomly pivoted
Cholesky's draws in :mod:`kopt.nystrom.centers`): an array changed in place, another bandwidth, another key.
"""
from __future__ import annotations

import hashlib

import numpy as np

from . import rows as _rows
from .backend import to_numpy


def fingerprint(a) -> str:
    """A content hash of an array (NumPy, CuPy or CSR) or None: its kind, dtype, shape and bytes.

    Parameters
    ----------
    a : array, sparse matrix or None
        The values.

    Returns
    -------
    str
        A BLAKE2b digest (hex); equal for equal values of the same kind, dtype and shape.

    Examples
    --------
    >>> import numpy as np
    >>> from kopt.numerics.identity import fingerprint
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> fingerprint(a) == fingerprint(a.copy()), fingerprint(a) == fingerprint(a.T)
    (True, False)
    """
    h = hashlib.blake2b(digest_size=20)
    if a is None:
        return "none"
    if _rows.is_sparse(a):
        a = a.tocsr()
        h.update(f"csr{a.shape}{a.dtype}".encode())
        for part in (a.data, a.indices, a.indptr):
            h.update(np.ascontiguousarray(part).view(np.uint8))
        return h.hexdigest()
    a = to_numpy(a)
    h.update(f"{type(a).__name__}{a.shape}{a.dtype}".encode())
    h.update(np.ascontiguousarray(a).view(np.uint8))
    return h.hexdigest()


def kernel_identity(kernel) -> tuple:
    """A kernel's class and options (its bandwidth a number), as a hashable tuple.

    Parameters
    ----------
    kernel : kopt.contract.components.Kernel
        The kernel.

    Returns
    -------
    tuple
        ``(module, class name, ((option, repr(value)), ...))``.

    Examples
    --------
    >>> from kopt.contract.registry import registry
    >>> from kopt.numerics.identity import kernel_identity
    >>> gaussian = registry().get("kernel", "gaussian")
    >>> kernel_identity(gaussian(bandwidth=1.0)) == kernel_identity(gaussian(bandwidth=1.0))
    True
    >>> kernel_identity(gaussian(bandwidth=1.0)) == kernel_identity(gaussian(bandwidth=2.0))
    False
    """
    options = tuple(sorted((k, repr(v)) for k, v in kernel.options.as_dict().items()))
    return type(kernel).__module__, type(kernel).__qualname__, options
