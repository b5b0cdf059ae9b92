"""A small cache of Nyström systems, keyed by everything that makes one: fits that differ only in λ share it.

scikit-learn's ``GridSearchCV`` clones an estimator and fits every grid point on every fold
separately.  On the square loss's Nyström route a fit's cost is its system
(:class:`kopt.nystrom.system.NystromSystem`: A = Σ k_i k_iᵀ, n M² flops, and k(X, C), n M d)
plus one M³/3 Cholesky for its λ; points that differ only in λ build the same system.  This cache
keeps the last few systems so those fits build it once:

* **never stale** -- the key is the *content* of every input the system is a function of: the rows X
  (dense bytes, or a CSR matrix's data, indices and pointers), the targets Y, the centers C, the kernel's
  class and options (its bandwidth a number), the dtype of the kernel values, the row weights and the
  array module.  An array changed in place, another bandwidth, other weights: another key.  The arrays
  of a cached system are made read-only, so no caller can change what a later fit reads;
* **bounded and scoped** -- off unless asked for: ``with kopt.nystrom.cache.sharing(): search.fit(X, y)``
  keeps at most :data:`MAX_ENTRIES` systems and :data:`MAX_BYTES` of their arrays (least recently used
  out first; a system larger than the budget is built and returned, never kept) and drops them all
  when the block ends, so a plain fit never holds memory after it returns.  The key costs one hash of
  the inputs (BLAKE2b: one pass over their bytes) against n M² flops for the system
  (docs/design/nystrom-system.md).

Why 16 entries: ``GridSearchCV`` fits every fold of one point before the next point (scikit-learn's
order), so a hit needs the systems of every fold kept -- and a ``solver: auto`` fit builds one per
center count it tries (256, 512, 1024, ...) plus the final one: 3 folds x 5 systems.  The processes of
``n_jobs > 1`` each have their own cache (and none is shared with them: run the search with n_jobs=1,
kopt's BLAS uses the cores).

Use :func:`system` where a system is built: ``system(kernel, X, Y, C, dtype=..., weights=...)`` takes
:class:`NystromSystem`'s arguments and returns a kept one, or a new one.
"""
from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict

import numpy as np

from ..numerics.backend import get_namespace
from ..numerics.identity import fingerprint, kernel_identity

#: systems kept at most inside :func:`sharing` (least recently used out first)
MAX_ENTRIES = 16
#: bytes of kept systems at most inside :func:`sharing` (A/n, the factor U and, once solved, the whitened T: 3 M²
#: float64 each; 512 MiB holds 16 systems of 1,024 centers, or one of 2,048 and smaller ones)
MAX_BYTES = 1 << 29
#: the arrays a system makes for itself (made read-only once kept; the centers C are the caller's)
OWNED = ("An", "Bn", "U")


def key(kernel, X, Y, C, dtype, weights) -> tuple:
    """What a Nyström system is a function of, by content."""
    return (*kernel_identity(kernel), np.dtype(dtype).str,
            get_namespace(C).__name__, fingerprint(X), fingerprint(Y), fingerprint(C), fingerprint(weights))


def system_bytes(s) -> int:
    """The bytes a kept system holds (its arrays, the centers and the whitened system once made, included)."""
    values = [a for v in vars(s).values() for a in (v if isinstance(v, tuple) else (v,))]
    return sum(int(getattr(a, "nbytes", 0)) for a in values)


class SystemCache:
    """A keyed, bounded, thread-safe LRU of Nyström systems (:func:`system` uses one per process)."""

    def __init__(self, max_entries=MAX_ENTRIES, max_bytes=MAX_BYTES):
        self.max_entries, self.max_bytes = int(max_entries), int(max_bytes)
        self.entries = OrderedDict()
        self.hits = self.misses = 0
        self.lock = threading.Lock()

    def get(self, kernel, X, Y, C, dtype=np.float32, weights=None, build=None, own_centers=False):
        """The system of these inputs: kept, or built (and kept when it fits the budget); ``build``: the class
        that builds one (default :class:`NystromSystem`)."""
        if build is None:
            from .system import NystromSystem as build
        if self.max_entries < 1:  # off: no key to compute
            return build(kernel, X, Y, C, dtype=dtype, weights=weights, own_centers=own_centers)
        k = key(kernel, X, Y, C, dtype, weights)
        with self.lock:
            if k in self.entries:
                self.entries.move_to_end(k)
                self.hits += 1
                return self.entries[k]
            self.misses += 1
        built = build(kernel, X, Y, C, dtype=dtype, weights=weights, own_centers=own_centers)
        size = system_bytes(built)
        if size > self.max_bytes:
            return built
        for name in OWNED:  # what a later fit reads cannot be changed by this one
            a = getattr(built, name, None)
            if isinstance(a, np.ndarray):
                a.flags.writeable = False
        with self.lock:
            self.entries[k] = built
            while len(self.entries) > self.max_entries or sum(map(system_bytes, self.entries.values())) > self.max_bytes:
                self.entries.popitem(last=False)
        return built

    def clear(self):
        """Drop every entry and reset the hit and miss counts."""
        with self.lock:
            self.entries.clear()
            self.hits = self.misses = 0


#: the process's cache: off (no entries) outside :func:`sharing`
CACHE = SystemCache(max_entries=0)


@contextlib.contextmanager
def sharing(max_entries=MAX_ENTRIES, max_bytes=MAX_BYTES):
    """Keep Nyström systems for the block (a grid search's fits): ``with sharing(): search.fit(X, y)``.

    Yields the cache (``.hits``, ``.misses``); every kept system is dropped when the block ends.
    Blocks nest: an inner block runs with the outer block's systems and limits."""
    if CACHE.max_entries > 0:
        yield CACHE
        return
    if not (isinstance(max_entries, int) and max_entries >= 1 and max_bytes > 0):
        raise ValueError(f"sharing() needs max_entries >= 1 and max_bytes > 0, got {max_entries!r} and {max_bytes!r}")
    CACHE.max_entries, CACHE.max_bytes = max_entries, int(max_bytes)
    try:
        yield CACHE
    finally:
        CACHE.max_entries = 0
        CACHE.clear()


def system(kernel, X, Y, C, dtype=np.float32, weights=None, own_centers=False):
    """:class:`NystromSystem` ``(kernel, X, Y, C, dtype, weights, own_centers)``: a kept one inside :func:`sharing`
    when these inputs built one there, else a new one (``own_centers``: it may reorder C in place and keep it)."""
    return CACHE.get(kernel, X, Y, C, dtype=dtype, weights=weights, own_centers=own_centers)
