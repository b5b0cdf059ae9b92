"""The feature map of the DSG family: the spec's map with no fixed count (blocks grow with t)."""
from __future__ import annotations


def feature_map(problem):
    """The spec's feature map (seed, block size, dtype, backend); the engine's cache keeps the first blocks met."""
    return problem.feature_map(count=False)
