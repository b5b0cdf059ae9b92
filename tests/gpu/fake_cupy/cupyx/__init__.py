"""A stand-in ``cupyx`` (see ``cupy/__init__.py`` beside it): ``scatter_add`` and ``cupyx.scipy.linalg``."""
import cupy as _cp
import numpy as _np


def scatter_add(a, slices, value):
    if not isinstance(a, _cp.ndarray):
        raise TypeError(f"fake cupyx.scatter_add: the target must be a device array, got {type(a).__name__}")
    _np.add.at(a.view(_np.ndarray), _cp._host_all(slices), _cp._host_all(value))
