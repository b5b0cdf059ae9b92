"""The feature map of the DSG family: the engine's FeatureMap with a cache that pins blocks.

Every DSG iteration sweeps over all m blocks of the model.  Under the engine's LRU cache a
cache smaller than the model misses on every block once m exceeds it (each sweep evicts the
blocks the next sweep needs first).  Keeping the first ``model.features.cache_blocks`` blocks
met instead gives cache/m hits per sweep, the most any cache of that size gets on a cyclic scan.
"""
from __future__ import annotations

import threading

from kopt.features import FeatureMap


class PinnedFeatureMap(FeatureMap):
    """:class:`kopt.features.FeatureMap` whose ``cache_blocks`` cache never evicts (block 0 excluded)."""

    def __init__(self, *args, cache_blocks=0, **kwargs):
        super().__init__(*args, cache_blocks=0, **kwargs)
        self.pin_capacity = int(cache_blocks)
        self._pinned = {}
        self._pin_lock = threading.Lock()

    def block_params(self, j):
        j = int(j)
        p = self._pinned.get(j)
        if p is not None:
            return p
        p = super().block_params(j)
        if j > 0 and len(self._pinned) < self.pin_capacity:
            with self._pin_lock:
                if len(self._pinned) < self.pin_capacity:
                    self._pinned.setdefault(j, p)
        return p


def feature_map(problem):
    """The spec's feature map (seed, block size, dtype, backend) with a pinning cache."""
    f = problem.features
    return PinnedFeatureMap(problem.kernel, problem.d, seed=f["seed"], block_size=f["block_size"], dtype=f["dtype"],
                            xp=problem.xp, cache_blocks=f.get("cache_blocks", 0))
