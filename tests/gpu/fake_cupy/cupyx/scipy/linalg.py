"""A stand-in ``cupyx.scipy.linalg``: SciPy's functions as fake-CuPy device functions (host arrays refused)."""
import cupy as _cp
import scipy.linalg as _sl


def __getattr__(name):
    f = getattr(_sl, name)
    return _cp.device_function("cupyx.scipy.linalg." + name, f) if callable(f) else f
